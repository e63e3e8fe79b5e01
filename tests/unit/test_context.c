/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Contexts (wire format 1.2, ctx=): the path rule, the list parser, the
 * field's check in beacon_verify (bad field ctx), the servlet path
 * (parameters removed, "//" collapsed, dot segments resolved), and the
 * matching rule (segment boundary, "/" matches all, the longest wins),
 * the last also against a slow reference written from the rule's words.
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

/* The path a servlet container serves, by table. */
static void a_servlet_path_has_no_parameters_nor_dot_segments(void **state)
{
    static const struct {
        const char *path, *want; /* want NULL: -1 */
    } rows[] = {
        {"/", "/"},
        {"/shop", "/shop"},
        {"/shop/", "/shop/"},
        {"/shop;jsessionid=1", "/shop"},
        {"/shop/;jsessionid=1", "/shop/"},
        {"/shop/cart;jsessionid=ABC", "/shop/cart"},
        {"/shop/admin;x/users", "/shop/admin/users"},
        {"/shop/admin;x", "/shop/admin"},
        {"/shop;x/admin/users", "/shop/admin/users"},
        {"/shop;a;b=c/admin;/users;", "/shop/admin/users"},
        {"/;x/shop", "/shop"},
        {";x", NULL},
        {"//shop//admin;/users", "/shop/admin/users"},
        {"/shop/x/../admin", "/shop/admin"},
        {"/shop/x/..;/admin/users", "/shop/admin/users"},
        {"/shop/x/..;y=1/admin", "/shop/admin"},
        {"/shop/x;p/..;q/admin", "/shop/admin"},
        {"/shop/./admin", "/shop/admin"},
        {"/shop/.;x/admin", "/shop/admin"},
        {"/shop/.", "/shop/"},
        {"/shop/..", "/"},
        {"/shop/x/..;", "/shop/"},
        {"/shop/...", "/shop/..."},
        {"/shop/..x/.x;y/x.", "/shop/..x/.x/x."},
        {"/shop/a.;x", "/shop/a."},
        {"/..", NULL},
        {"/..;/shop", NULL},
        {"/shop/..;/..;/x", NULL},
        {"/shop/%2e%2e;/x", "/shop/%2e%2e/x"}, /* nothing decoded */
        {"", NULL},
        {"shop", NULL},
    };
    char out[64], inplace[64];
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        size_t len = strlen(rows[i].path);
        apr_ssize_t got = beacon_servlet_path(rows[i].path, len, out);

        if (rows[i].want == NULL ? got != -1
                                 : got < 0 || strcmp(out, rows[i].want) != 0) {
            print_error("\"%s\": %d \"%s\"\n", rows[i].path, (int)got,
                        got < 0 ? "" : out);
        }
        if (rows[i].want == NULL) {
            assert_int_equal(got, -1);
            continue;
        }
        assert_int_equal(got, strlen(rows[i].want));
        assert_string_equal(out, rows[i].want);
        /* in place, as the caller may */
        memcpy(inplace, rows[i].path, len + 1);
        assert_int_equal(beacon_servlet_path(inplace, len, inplace), got);
        assert_string_equal(inplace, rows[i].want);
    }
}

/* Every path of a small alphabet up to 7 bytes: a servlet path is no
 * longer than the path, holds no ";", no "//" and no dot segment, and is
 * its own servlet path. */
static void a_servlet_path_is_a_fixed_point_on_every_short_path(void **state)
{
    static const char alphabet[] = "/a;.";
    char path[8], out[8], again[8];
    unsigned long n, total = 1, code;
    size_t len, i;

    (void)state;
    /* "/" and then len - 1 bytes of the alphabet: 5,461 paths */
    for (len = 1; len <= 7; len++, total *= sizeof alphabet - 1) {
        for (code = 0; code < total; code++) {
            apr_ssize_t got;

            path[0] = '/';
            for (i = 1, n = code; i < len; i++, n /= sizeof alphabet - 1) {
                path[i] = alphabet[n % (sizeof alphabet - 1)];
            }
            path[len] = '\0';
            if ((got = beacon_servlet_path(path, len, out)) < 0) {
                continue;
            }
            assert_true((size_t)got <= len && out[0] == '/');
            assert_null(strchr(out, ';'));
            assert_null(strstr(out, "//"));
            assert_null(strstr(out, "/./"));
            assert_null(strstr(out, "/../"));
            assert_int_equal(beacon_servlet_path(out, (size_t)got, again), got);
            assert_string_equal(again, out);
        }
    }
}

/* The rule in its own words, slowly: the path is the context, or starts
 * with the context and then "/"; "/" matches a path starting with "/". */
static int reference_matches(const char *ctx, const char *path)
{
    char with_slash[128];

    if (strcmp(ctx, "/") == 0) {
        return path[0] == '/';
    }
    snprintf(with_slash, sizeof with_slash, "%s/", ctx);
    return strcmp(path, ctx) == 0 ||
           strncmp(path, with_slash, strlen(with_slash)) == 0;
}

static void a_context_matches_at_a_segment_boundary(void **state)
{
    static const struct {
        const char *ctx, *path;
        int want;
    } rows[] = {
        {"/shop", "/shop", 1},
        {"/shop", "/shop/", 1},
        {"/shop", "/shop/cart/x", 1},
        /* not a servlet path: "/shop;x/admin" must not pass as "/shop/..." */
        {"/shop", "/shop;jsessionid=1", 0},
        {"/shop", "/shop;x/admin", 0},
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
    assert_int_equal(beacon_context_best(paths, (unsigned)n, "/shop;a", 7), 0);
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
        cmocka_unit_test(a_servlet_path_has_no_parameters_nor_dot_segments),
        cmocka_unit_test(a_servlet_path_is_a_fixed_point_on_every_short_path),
        cmocka_unit_test(a_context_matches_at_a_segment_boundary),
        cmocka_unit_test(matching_agrees_with_the_reference_on_every_short_path),
        cmocka_unit_test(the_longest_matching_context_wins),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
