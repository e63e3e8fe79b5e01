/* Licensed under the Apache License, Version 2.0; see LICENSE. */

// Allow-lists (contexts=LIST): the parser and its messages, what an
// entry permits (exact contexts, delegations, "/" only when named),
// whole-datagram refusal, and the overlap rule between two balancers,
// the last also against a slow reference that searches for a context
// both lists permit. (Line comments: delegations are written "/x/*".)
#include "test_common.h"

static const char *add(beacon_allow_t *allow, const char *list,
                       beacon_span_t *bad)
{
    return beacon_allow_add(allow, list, strlen(list), bad);
}

static beacon_allow_t parsed(const char *list)
{
    beacon_allow_t allow;

    beacon_allow_init(&allow);
    assert_null(add(&allow, list, NULL));
    return allow;
}

static int permits(const beacon_allow_t *allow, const char *ctx)
{
    return beacon_allow_permits(allow, ctx, strlen(ctx));
}

static void a_list_holds_contexts_and_delegations_once_each(void **state)
{
    beacon_allow_t allow = parsed("/shop,/apps/*,/,/*,/shop");

    (void)state;
    assert_int_equal(allow.n, 4); /* the second /shop counts once */
    assert_string_equal(allow.entry[0].text, "/shop");
    assert_false(allow.entry[0].delegation);
    assert_string_equal(allow.entry[1].text, "/apps/*");
    assert_int_equal(allow.entry[1].len, 7);
    assert_true(allow.entry[1].delegation);
    assert_string_equal(allow.entry[2].text, "/");
    assert_false(allow.entry[2].delegation);
    assert_true(allow.entry[3].delegation);
    /* a second list adds to the first, a repeat across them once too */
    assert_null(add(&allow, "/cart,/apps/*", NULL));
    assert_int_equal(allow.n, 5);
    assert_string_equal(allow.entry[4].text, "/cart");
}

static void every_bad_entry_is_named_with_its_reason(void **state)
{
    static const struct {
        const char *list;
        size_t bad_at, bad_len;
        const char *says; /* a word the message must hold */
    } rows[] = {
        {"", 0, 0, "empty"},
        {",", 0, 0, "empty"},
        {"/shop,", 6, 0, "empty"},
        {"/shop,,/cart", 6, 0, "empty"},
        {"/shop/", 0, 6, "context"},
        {"shop", 0, 4, "context"},
        {"/shop, /cart", 6, 6, "context"},
        {"/a;b", 0, 4, "context"},
        {"/a/../b", 0, 7, "context"},
        {"*", 0, 1, "*"},
        {"/apps*", 0, 6, "*"},
        {"/a/*/b", 0, 6, "*"},
        {"/a/**", 0, 5, "*"},
        {"/*a", 0, 3, "*"},
        {"/ok,/a/*x", 4, 5, "*"},
        {"/a//*", 0, 5, "context"},
        {"/./*", 0, 4, "context"},
        {"//*", 0, 3, "context"}, // "/" is no base: the root's is "/*"
        /* 81 bytes: one past the bound, as an exact entry and as a
         * delegation (whose base then has 79) */
        {"/123456789012345678901234567890123456789012345678901234567890123456789012345678ab",
         0, 81, "80"},
        {"/1234567890123456789012345678901234567890123456789012345678901234567890123456789/*",
         0, 82, "80"},
    };
    beacon_allow_t allow = parsed("/kept");
    beacon_span_t bad;
    const char *msg;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        bad.ptr = NULL;
        msg = add(&allow, rows[i].list, &bad);
        if (msg == NULL || strstr(msg, rows[i].says) == NULL) {
            print_error("list \"%s\": %s\n", rows[i].list, msg ? msg : "accepted");
        }
        assert_non_null(msg);
        assert_non_null(strstr(msg, rows[i].says));
        assert_true(bad.ptr == rows[i].list + rows[i].bad_at);
        assert_int_equal(bad.len, rows[i].bad_len);
        /* nothing half-applied: the list is as it was */
        assert_int_equal(allow.n, 1);
        assert_string_equal(allow.entry[0].text, "/kept");
    }
    /* the longest accepted: an 80-byte entry of either form */
    assert_null(add(&allow,
                    "/123456789012345678901234567890123456789012345678901234567890123456789012345678a",
                    NULL));
    assert_null(add(&allow,
                    "/12345678901234567890123456789012345678901234567890123456789012345678901234567/*",
                    NULL));
    assert_int_equal(allow.n, 3);
    assert_int_equal(allow.entry[2].len, BEACON_CTX_PATH_MAX);
}

static void the_bound_is_named_and_repeats_do_not_count(void **state)
{
    char list[BEACON_ALLOW_MAX_ENTRIES * 8 + 16];
    char want[16];
    beacon_allow_t allow;
    beacon_span_t bad;
    const char *msg;
    size_t off = 0;
    unsigned i;

    (void)state;
    for (i = 0; i < BEACON_ALLOW_MAX_ENTRIES; i++) {
        off += (size_t)snprintf(list + off, sizeof list - off, "%s/c%u",
                                i ? "," : "", i);
    }
    beacon_allow_init(&allow);
    assert_null(beacon_allow_add(&allow, list, off, NULL));
    assert_int_equal(allow.n, BEACON_ALLOW_MAX_ENTRIES);
    /* a repeat of an entry already there is no new entry */
    assert_null(add(&allow, "/c0,/c63", NULL));
    snprintf(want, sizeof want, "%d", BEACON_ALLOW_MAX_ENTRIES);
    msg = add(&allow, "/c1,/one-more", &bad);
    assert_non_null(msg);
    assert_non_null(strstr(msg, want));
    assert_int_equal(bad.len, 9);
    assert_memory_equal(bad.ptr, "/one-more", 9);
    assert_int_equal(allow.n, BEACON_ALLOW_MAX_ENTRIES);
}

static void entries_permit_what_they_name_and_delegations_what_is_under(void **state)
{
    static const struct {
        const char *list, *ctx;
        int want;
    } rows[] = {
        {"/shop", "/shop", 1},
        {"/shop", "/shop/admin", 0},
        {"/shop", "/shopping", 0},
        {"/shop", "/Shop", 0},
        {"/shop", "/", 0},
        {"/apps/*", "/apps/x", 1},
        {"/apps/*", "/apps/x/y/z", 1},
        {"/apps/*", "/apps", 0},
        {"/apps/*", "/appsx", 0},
        {"/apps/*", "/appsx/y", 0},
        {"/apps/*", "/", 0},
        {"/*", "/a", 1},
        {"/*", "/a/b", 1},
        {"/*", "/", 0},
        {"/", "/", 1},
        {"/", "/a", 0},
        {"/,/*", "/", 1},
        {"/a,/b/*", "/b/c", 1},
        /* not contexts at all: never permitted */
        {"/*", "/a/", 0},
        {"/*", "", 0},
        {"/*", "/a;b", 0},
        {"/shop/*", "/shop/..", 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        beacon_allow_t allow = parsed(rows[i].list);

        if (permits(&allow, rows[i].ctx) != rows[i].want) {
            print_error("list %s ctx \"%s\"\n", rows[i].list, rows[i].ctx);
        }
        assert_int_equal(permits(&allow, rows[i].ctx), rows[i].want);
    }
    {
        beacon_allow_t none;

        beacon_allow_init(&none);
        assert_false(permits(&none, "/"));
        assert_false(permits(&none, "/shop"));
    }
}

static void a_datagram_is_refused_by_its_first_path_outside(void **state)
{
    static const char ctx[] = "/shop,/apps/x,/cart,/admin";
    beacon_allow_t allow = parsed("/shop,/apps/*");
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int n = beacon_ctx_parse(ctx, sizeof ctx - 1, paths);

    (void)state;
    assert_int_equal(n, 4);
    assert_int_equal(beacon_allow_refused(&allow, paths, 2), -1);
    assert_int_equal(beacon_allow_refused(&allow, paths, (unsigned)n), 2);
    assert_int_equal(beacon_allow_refused(&allow, paths + 3, 1), 0);
    assert_int_equal(beacon_allow_refused(&allow, paths, 0), -1);
}

static int conflict(const char *a, const char *b, unsigned *ia, unsigned *ib)
{
    beacon_allow_t la = parsed(a), lb = parsed(b);

    return beacon_allow_conflict(&la, &lb, ia, ib);
}

static void two_lists_conflict_where_both_permit_one_context(void **state)
{
    static const struct {
        const char *a, *b;
        int want;
    } rows[] = {
        {"/shop", "/shop", 1},
        {"/shop", "/shop/admin", 0},
        {"/shop/admin", "/shop", 0},
        {"/apps/*", "/apps/x", 1},
        {"/apps/x", "/apps/*", 1},
        {"/apps/*", "/apps", 0},
        {"/apps/*", "/apps/x/*", 1},
        {"/apps/x/*", "/apps/*", 1},
        {"/apps/*", "/apps/*", 1},
        {"/apps/*", "/shop/*", 0},
        {"/apps/*", "/appsx/*", 0},
        {"/apps/*", "/appsx", 0},
        {"/*", "/shop", 1},
        {"/*", "/", 0},
        {"/", "/", 1},
        {"/", "/shop", 0},
        {"/*", "/apps/*", 1},
        {"/*", "/*", 1},
        {"/a,/b,/c", "/d,/e,/c/d", 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        if (conflict(rows[i].a, rows[i].b, NULL, NULL) != rows[i].want) {
            print_error("%s against %s\n", rows[i].a, rows[i].b);
        }
        assert_int_equal(conflict(rows[i].a, rows[i].b, NULL, NULL),
                         rows[i].want);
    }
}

static void a_conflict_names_its_first_pair(void **state)
{
    unsigned ia = 99, ib = 99;

    (void)state;
    assert_true(conflict("/a,/shop,/apps/*", "/b,/apps/x,/shop", &ia, &ib));
    assert_int_equal(ia, 1); /* /shop, the first of a's entries in conflict */
    assert_int_equal(ib, 2);
    assert_true(conflict("/a,/apps/*", "/b,/apps/x", &ia, &ib));
    assert_int_equal(ia, 1);
    assert_int_equal(ib, 1);
    ia = ib = 99;
    assert_false(conflict("/a", "/b", &ia, &ib));
    assert_int_equal(ia, 99); /* untouched without a conflict */
    {
        beacon_allow_t empty, any = parsed("/*,/");

        beacon_allow_init(&empty);
        assert_false(beacon_allow_conflict(&empty, &any, NULL, NULL));
        assert_false(beacon_allow_conflict(&any, &empty, NULL, NULL));
    }
}

/* The rule in its own words, slowly: two lists conflict when some
 * context is permitted by both. Every context that can tell a pair apart
 * is an entry's own base or that base followed by one more segment, so
 * trying those (of both lists) is a complete search. */
static int reference_conflict(const beacon_allow_t *a, const beacon_allow_t *b)
{
    const beacon_allow_t *lists[2] = {a, b};
    char ctx[BEACON_CTX_PATH_MAX + 8];
    unsigned l, i;

    for (l = 0; l < 2; l++) {
        for (i = 0; i < lists[l]->n; i++) {
            const beacon_allow_entry_t *e = &lists[l]->entry[i];
            size_t base = e->delegation ? e->len - 2 : e->len;
            int k;

            for (k = 0; k < 2; k++) {
                snprintf(ctx, sizeof ctx, "%.*s%s", (int)base, e->text,
                         k ? "/zz" : "");
                if (ctx[0] == '\0') {
                    strcpy(ctx, "/");
                }
                if (permits(a, ctx) && permits(b, ctx)) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* Every pair of entries from a small set of forms agrees with the
 * reference, and the rule is symmetric. */
static void conflict_agrees_with_the_reference_on_every_pair(void **state)
{
    static const char *const forms[] = {
        "/", "/*", "/a", "/a/*", "/a/b", "/a/b/*", "/ab", "/ab/*", "/b",
        "/b/*", "/a/zz", "/a/b/zz",
    };
    size_t i, j;

    (void)state;
    for (i = 0; i < ARRAY_LEN(forms); i++) {
        for (j = 0; j < ARRAY_LEN(forms); j++) {
            beacon_allow_t a = parsed(forms[i]), b = parsed(forms[j]);
            int got = beacon_allow_conflict(&a, &b, NULL, NULL);

            if (got != reference_conflict(&a, &b)) {
                print_error("%s against %s: %d\n", forms[i], forms[j], got);
            }
            assert_int_equal(got, reference_conflict(&a, &b));
            assert_int_equal(got, beacon_allow_conflict(&b, &a, NULL, NULL));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_list_holds_contexts_and_delegations_once_each),
        cmocka_unit_test(every_bad_entry_is_named_with_its_reason),
        cmocka_unit_test(the_bound_is_named_and_repeats_do_not_count),
        cmocka_unit_test(entries_permit_what_they_name_and_delegations_what_is_under),
        cmocka_unit_test(a_datagram_is_refused_by_its_first_path_outside),
        cmocka_unit_test(two_lists_conflict_where_both_permit_one_context),
        cmocka_unit_test(a_conflict_names_its_first_pair),
        cmocka_unit_test(conflict_agrees_with_the_reference_on_every_pair),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
