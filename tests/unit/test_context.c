/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Contexts (wire format 1.2, ctx=): the path rule, the list parser, the
 * field's check in beacon_verify (bad field ctx), and the matching rule
 * (segment boundary, ";", "/" matches all, the longest wins), the last
 * also against a slow reference written from the rule's words.
 */
#include "test_common.h"

#define TS "1796000000000000"
#define NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)

static int valid(const char *path)
{
    return beacon_context_is_valid(path, strlen(path));
}

static void a_context_is_slash_or_segments_of_the_safe_bytes(void **state)
{
    static const char *const good[] = {
        "/", "/shop", "/shop/cart", "/a", "/A-Z_a.z~0-9", "/.well-known",
        "/...", "/a/b/c/d/e", "/x..", "/..x",
        /* 80 bytes */
        "/123456789012345678901234567890123456789012345678901234567890123456789012345678a",
    };
    static const char *const bad[] = {
        "", "shop", "//", "/shop/", "/shop//cart", "/.", "/..", "/shop/.",
        "/shop/../etc", "/a%2f", "/a;b", "/a,b", "/a b", "/a?b", "/a#b",
        "/a\\b", "/caf\xc3\xa9", "/a\x01", "/a:b", "/a@b", "/a+b", "/a=b",
        /* 81 bytes */
        "/123456789012345678901234567890123456789012345678901234567890123456789012345678ab",
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(good); i++) {
        if (!valid(good[i])) {
            print_error("refused: %s\n", good[i]);
        }
        assert_true(valid(good[i]));
    }
    assert_int_equal(strlen(good[ARRAY_LEN(good) - 1]), BEACON_CTX_PATH_MAX);
    for (i = 0; i < ARRAY_LEN(bad); i++) {
        if (valid(bad[i])) {
            print_error("accepted: %s\n", bad[i]);
        }
        assert_false(valid(bad[i]));
    }
    assert_int_equal(strlen(bad[ARRAY_LEN(bad) - 1]), BEACON_CTX_PATH_MAX + 1);
    /* the length, not a NUL, ends a path */
    assert_true(beacon_context_is_valid("/shop/", 5));
    assert_false(beacon_context_is_valid("/sh\0p", 5));
}

static void ctx_lists_one_to_sixteen_paths_as_spans(void **state)
{
    static const char list[] = "/shop,/cart,/";
    static const char sixteen[] =
        "/a,/b,/c,/d,/e,/f,/g,/h,/i,/j,/k,/l,/m,/n,/o,/p";
    static const char *const bad[] = {
        ",", "/shop,", ",/shop", "/shop,,/cart", "/shop, /cart", "/shop;/cart",
        "/shop,cart", "/a,/b,/c,/d,/e,/f,/g,/h,/i,/j,/k,/l,/m,/n,/o,/p,/q",
    };
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    size_t i;

    (void)state;
    assert_int_equal(beacon_ctx_parse(list, sizeof list - 1, paths), 3);
    assert_true(paths[0].ptr == list && paths[0].len == 5);
    assert_true(paths[1].ptr == list + 6 && paths[1].len == 5);
    assert_true(paths[2].ptr == list + 12 && paths[2].len == 1);
    assert_int_equal(beacon_ctx_parse(sixteen, sizeof sixteen - 1, paths), 16);
    assert_int_equal(beacon_ctx_parse("/shop,/shop", 11, paths), 2); /* repeat */
    for (i = 0; i < ARRAY_LEN(bad); i++) {
        if (beacon_ctx_parse(bad[i], strlen(bad[i]), paths) != -1) {
            print_error("accepted: %s\n", bad[i]);
        }
        assert_int_equal(beacon_ctx_parse(bad[i], strlen(bad[i]), paths), -1);
    }
    assert_int_equal(beacon_ctx_parse(NULL, 0, paths), -1);
    assert_int_equal(beacon_ctx_parse("", 0, paths), -1);
}

static beacon_reason_t verify_body(const char *body, beacon_datagram_t *out,
                                   char *dg, size_t size)
{
    beacon_key_t k = spec_hex_key();
    size_t len = sign_into(dg, size, &k, body, strlen(body));

    return beacon_verify(dg, len, &k, NOW, SKEW, out);
}

static void verify_checks_ctx_and_lists_its_paths(void **state)
{
    char dg[BEACON_MAX_DATAGRAM + 1];
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    beacon_datagram_t out;

    (void)state;
    assert_reason_equal(verify_body("BEACON ts=" TS " ctx=/shop,/cart", &out, dg,
                                    sizeof dg),
                        BEACON_OK, "two paths");
    assert_int_equal(beacon_datagram_contexts(&out, paths), 2);
    assert_int_equal(paths[1].len, 5);
    assert_memory_equal(paths[1].ptr, "/cart", 5);
    assert_reason_equal(verify_body("BEACON ts=" TS, &out, dg, sizeof dg),
                        BEACON_OK, "no ctx");
    assert_int_equal(beacon_datagram_contexts(&out, paths), 0);
    assert_reason_equal(verify_body("BEACON ts=" TS " ctx=/shop/", &out, dg,
                                    sizeof dg),
                        BEACON_DROP_BAD_FIELD, "a trailing slash");
    assert_int_equal(out.bad_field.len, 3);
    assert_memory_equal(out.bad_field.ptr, "ctx", 3);
    /* the order of the bad-field check: svc, ctx, route, lbfactor, state */
    verify_body("BEACON ts=" TS " state=x route=a/b ctx=/a/ svc=a!", &out, dg,
                sizeof dg);
    assert_memory_equal(out.bad_field.ptr, "svc", 3);
    verify_body("BEACON ts=" TS " state=x route=a/b ctx=/a/", &out, dg, sizeof dg);
    assert_memory_equal(out.bad_field.ptr, "ctx", 3);
    verify_body("BEACON ts=" TS " state=x route=a/b ctx=/a", &out, dg, sizeof dg);
    assert_memory_equal(out.bad_field.ptr, "route", 5);
    assert_reason_equal(verify_body("BEACON ts=" TS " ctx=/a ctx=/b", &out, dg,
                                    sizeof dg),
                        BEACON_DROP_DUPLICATE_FIELD, "ctx twice");
}

/* The rule in its own words, slowly: the path is the context, or starts
 * with the context and then "/" or ";"; "/" matches a path starting
 * with "/". */
static int reference_matches(const char *ctx, const char *path)
{
    char with_slash[128], with_semi[128];

    if (strcmp(ctx, "/") == 0) {
        return path[0] == '/';
    }
    snprintf(with_slash, sizeof with_slash, "%s/", ctx);
    snprintf(with_semi, sizeof with_semi, "%s;", ctx);
    return strcmp(path, ctx) == 0 ||
           strncmp(path, with_slash, strlen(with_slash)) == 0 ||
           strncmp(path, with_semi, strlen(with_semi)) == 0;
}

static void a_context_matches_at_a_segment_boundary_or_a_parameter(void **state)
{
    static const struct {
        const char *ctx, *path;
        int want;
    } rows[] = {
        {"/shop", "/shop", 1},
        {"/shop", "/shop/", 1},
        {"/shop", "/shop/cart/x", 1},
        {"/shop", "/shop;jsessionid=1", 1},
        {"/shop", "/shopping", 0},
        {"/shop", "/shop.html", 0},
        {"/shop", "/Shop", 0},
        {"/shop", "/sho", 0},
        {"/shop", "/", 0},
        {"/shop", "", 0},
        {"/shop", "/x/shop", 0},
        {"/shop/admin", "/shop", 0},
        {"/shop/admin", "/shop/admin/x", 1},
        {"/", "/", 1},
        {"/", "/anything;at/all", 1},
        {"/", "", 0},
        {"/", "*", 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        int got = beacon_context_matches(rows[i].ctx, strlen(rows[i].ctx),
                                         rows[i].path, strlen(rows[i].path));

        if (got != rows[i].want) {
            print_error("ctx %s path \"%s\": %d\n", rows[i].ctx, rows[i].path, got);
        }
        assert_int_equal(got, rows[i].want);
        assert_int_equal(reference_matches(rows[i].ctx, rows[i].path),
                         rows[i].want);
    }
}

/* Every path of a small alphabet up to 5 bytes against a few contexts:
 * the function and the reference agree on all of them. */
static void matching_agrees_with_the_reference_on_every_short_path(void **state)
{
    static const char *const ctxs[] = {"/", "/a", "/ab", "/a/b", "/a.b"};
    static const char alphabet[] = "/a;b.";
    char path[8];
    unsigned long n, total = 1, code;
    size_t c, len, i;

    (void)state;
    for (len = 0; len <= 5; len++, total *= sizeof alphabet - 1) {
        for (code = 0; code < total; code++) {
            for (i = 0, n = code; i < len; i++, n /= sizeof alphabet - 1) {
                path[i] = alphabet[n % (sizeof alphabet - 1)];
            }
            path[len] = '\0';
            for (c = 0; c < ARRAY_LEN(ctxs); c++) {
                assert_int_equal(beacon_context_matches(ctxs[c], strlen(ctxs[c]),
                                                        path, len),
                                 reference_matches(ctxs[c], path));
            }
        }
    }
}

static void the_longest_matching_context_wins(void **state)
{
    static const char list[] = "/,/shop,/shop/admin,/cart,/shop";
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int n;

    (void)state;
    n = beacon_ctx_parse(list, sizeof list - 1, paths);
    assert_int_equal(n, 5);
    assert_int_equal(beacon_context_best(paths, (unsigned)n, "/shop/admin/x", 13), 2);
    assert_int_equal(beacon_context_best(paths, (unsigned)n, "/shop/x", 7), 1);
    assert_int_equal(beacon_context_best(paths, (unsigned)n, "/shop;a", 7), 1);
    assert_int_equal(beacon_context_best(paths, (unsigned)n, "/shopping", 9), 0);
    assert_int_equal(beacon_context_best(paths, (unsigned)n, "/cart", 5), 3);
    assert_int_equal(beacon_context_best(paths + 1, (unsigned)n - 1, "/x", 2), -1);
    assert_int_equal(beacon_context_best(paths, 0, "/shop", 5), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_context_is_slash_or_segments_of_the_safe_bytes),
        cmocka_unit_test(ctx_lists_one_to_sixteen_paths_as_spans),
        cmocka_unit_test(verify_checks_ctx_and_lists_its_paths),
        cmocka_unit_test(a_context_matches_at_a_segment_boundary_or_a_parameter),
        cmocka_unit_test(matching_agrees_with_the_reference_on_every_short_path),
        cmocka_unit_test(the_longest_matching_context_wins),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
