/* Licensed under the Apache License, Version 2.0; see LICENSE. */

// libFuzzer target: allow-lists (contexts=LIST) and the route image. The
// input is up to three lines: list A, list B, a path (missing ones
// empty). (Line comments: delegations are written "/x/*".) Invariants:
//  - beacon_allow_add on A, into a list that holds "/kept": accepted
//    exactly when every ","-separated entry is a context or a delegation
//    by the rule written out again here, and the distinct entries fit
//    BEACON_ALLOW_MAX_ENTRIES; then the list holds each distinct entry
//    once, in order, after "/kept". Refused: a static one-line message
//    not pointing into the input, *bad a span of the input that is an
//    entry (between separators), the list exactly as before;
//  - beacon_allow_permits(A, path) is the rule written out again (a
//    valid context, named exactly or strictly under a delegation's base);
//  - beacon_allow_conflict(A, B) is symmetric, its pair is one where a
//    context both permit exists (and is constructed and checked), and
//    with no conflict no context that could tell two entries apart (each
//    entry's base, and the base with one more segment) is permitted by
//    both;
//  - the exact entries of A as routes: the image checks, every context
//    finds itself, and the lookup of the path finds what
//    beacon_context_best finds in the list, which is what the rule says
//    (the path is the context, or goes on with "/"; "/" matches any
//    path starting with "/").

#include "fuzz_common.h"

// An entry: a context, or BASE/* with BASE a context other than "/", or
// "" (then "/*").
static int ref_entry(const char *s, size_t len)
{
    if (len > BEACON_CTX_PATH_MAX) {
        return 0;
    }
    if (len >= 2 && s[len - 2] == '/' && s[len - 1] == '*') {
        return len == 2 || (len > 3 && fuzz_ref_context(s, len - 2));
    }
    return fuzz_ref_context(s, len);
}

static int ref_permits(const beacon_allow_t *a, const char *ctx, size_t len)
{
    unsigned i;

    if (!fuzz_ref_context(ctx, len)) {
        return 0;
    }
    for (i = 0; i < a->n; i++) {
        const beacon_allow_entry_t *e = &a->entry[i];
        size_t base = e->len - 2;

        if (!e->delegation ? (len == e->len && memcmp(ctx, e->text, len) == 0)
                           : (len > base + 1 && memcmp(ctx, e->text, base) == 0 &&
                              ctx[base] == '/')) {
            return 1;
        }
    }
    return 0;
}

/* The contexts that tell entry e apart: its base ("/" for the root's
 * delegation), and the base with one more segment. */
static size_t witness(const beacon_allow_entry_t *e, int deeper,
                      char out[BEACON_CTX_PATH_MAX + 4])
{
    int base = (int)(e->delegation ? e->len - 2 : e->len);

    /* a base has at most 78 bytes: one more segment still fits */
    if (!deeper && base == 0) {
        return (size_t)snprintf(out, BEACON_CTX_PATH_MAX + 4, "/");
    }
    return (size_t)snprintf(out, BEACON_CTX_PATH_MAX + 4, "%.*s%s", base,
                            e->text, deeper ? "/z" : "");
}

static int both_permit(const beacon_allow_t *a, const beacon_allow_t *b,
                       const char *ctx, size_t len)
{
    return ref_permits(a, ctx, len) && ref_permits(b, ctx, len);
}

/* A context both lists permit, built from their entries, or 0. */
static int ref_conflict(const beacon_allow_t *a, const beacon_allow_t *b)
{
    const beacon_allow_t *lists[2] = {a, b};
    char ctx[BEACON_CTX_PATH_MAX + 4];
    unsigned l, i;
    int k;

    for (l = 0; l < 2; l++) {
        for (i = 0; i < lists[l]->n; i++) {
            for (k = 0; k < 2; k++) {
                size_t n = witness(&lists[l]->entry[i], k, ctx);

                if (both_permit(a, b, ctx, n)) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

static int has_entry(const beacon_allow_t *a, unsigned from, const char *s,
                     size_t len)
{
    unsigned i;

    for (i = from; i < a->n; i++) {
        if (a->entry[i].len == len && memcmp(a->entry[i].text, s, len) == 0) {
            return 1;
        }
    }
    return 0;
}

/* A's entries one by one, as the parser must take them. */
static void check_parse(const char *list, size_t len, const beacon_allow_t *got,
                        const char *msg, const beacon_span_t *bad)
{
    beacon_allow_t want;
    size_t start = 0, i;
    int ok = 1;

    beacon_allow_init(&want);
    (void)beacon_allow_add(&want, "/kept", 5, NULL);
    for (i = 0; i <= len && ok; i++) {
        if (i < len && list[i] != ',') {
            continue;
        }
        if (!ref_entry(list + start, i - start)) {
            ok = 0;
        } else if (!has_entry(&want, 0, list + start, i - start)) {
            if (want.n == BEACON_ALLOW_MAX_ENTRIES) {
                ok = 0;
            } else {
                beacon_allow_entry_t *e = &want.entry[want.n++];

                memcpy(e->text, list + start, i - start);
                e->len = i - start;
            }
        }
        start = i + 1;
    }
    if (!ok) {
        FUZZ_CHECK(msg != NULL, "accepted a list the rule refuses");
        FUZZ_CHECK(msg[0] != '\0' && strchr(msg, '\n') == NULL, "message %s", msg);
        FUZZ_CHECK(msg < list || msg > list + len, "message points into input");
        FUZZ_CHECK(bad->ptr >= list && bad->ptr + bad->len <= list + len &&
                       (bad->ptr == list || bad->ptr[-1] == ',') &&
                       (bad->ptr + bad->len == list + len ||
                        bad->ptr[bad->len] == ','),
                   "bad span is not an entry of the input");
        FUZZ_CHECK(got->n == 1 && strcmp(got->entry[0].text, "/kept") == 0,
                   "a refused list changed the allow-list");
        return;
    }
    FUZZ_CHECK(msg == NULL, "refused (%s) a list the rule accepts", msg);
    FUZZ_CHECK(got->n == want.n, "%u entries, not %u", got->n, want.n);
    for (i = 0; i < want.n; i++) {
        const beacon_allow_entry_t *e = &got->entry[i];

        FUZZ_CHECK(e->len == want.entry[i].len &&
                       memcmp(e->text, want.entry[i].text, e->len) == 0 &&
                       e->text[e->len] == '\0',
                   "entry %zu is not the input's", i);
        FUZZ_CHECK(e->delegation == (e->text[e->len - 1] == '*'),
                   "entry %zu: delegation flag", i);
    }
}

static void check_conflict(const beacon_allow_t *a, const beacon_allow_t *b)
{
    unsigned ia = 0, ib = 0, ja = 0, jb = 0;
    int ab = beacon_allow_conflict(a, b, &ia, &ib);
    int ba = beacon_allow_conflict(b, a, &jb, &ja);

    FUZZ_CHECK(ab == ba, "conflict is not symmetric");
    FUZZ_CHECK(ab == ref_conflict(a, b), "conflict %d, the rule says otherwise",
               ab);
    if (ab) {
        /* the pair named: a context they both permit exists */
        beacon_allow_t one_a, one_b;

        FUZZ_CHECK(ia < a->n && ib < b->n, "pair out of range");
        beacon_allow_init(&one_a);
        beacon_allow_init(&one_b);
        one_a.entry[one_a.n++] = a->entry[ia];
        one_b.entry[one_b.n++] = b->entry[ib];
        FUZZ_CHECK(ref_conflict(&one_a, &one_b), "the pair named does not conflict");
    }
}

static void check_routes(const beacon_allow_t *a, const char *path, size_t plen)
{
    beacon_routes_spec_t specs[BEACON_ALLOW_MAX_ENTRIES];
    beacon_span_t spans[BEACON_ALLOW_MAX_ENTRIES];
    const beacon_routes_entry_t *r;
    unsigned n = 0, i, nbuckets;
    apr_size_t names = 0, size;
    apr_uint32_t *image;
    int best, want = -1;

    for (i = 0; i < a->n; i++) {
        if (!a->entry[i].delegation) {
            specs[n].ctx = spans[n].ptr = a->entry[i].text;
            specs[n].len = spans[n].len = a->entry[i].len;
            specs[n].balancer = (apr_uint16_t)n;
            specs[n].value = i;
            names += specs[n++].len;
        }
    }
    /* a tiny table when the path's first byte is odd: collisions */
    nbuckets = plen > 0 && (path[0] & 1) ? (n + 7) / 8 : 0;
    while (nbuckets & (nbuckets - 1)) {
        nbuckets++;
    }
    size = beacon_routes_image_size(n, names, nbuckets);
    FUZZ_CHECK(size > 0, "no image for %u routes", n);
    image = malloc(size + 4);
    FUZZ_CHECK(image != NULL, "out of memory");
    FUZZ_CHECK(beacon_routes_build(image, size, specs, n, nbuckets, (apr_uint32_t)plen) == NULL,
               "build refused");
    FUZZ_CHECK(beacon_routes_check(image, size) == NULL, "a built image is refused");
    for (i = 0; i < n; i++) {
        r = beacon_routes_lookup(image, specs[i].ctx, specs[i].len, NULL);
        FUZZ_CHECK(r != NULL && r->balancer == i, "route %u does not find itself", i);
        if (fuzz_ref_matches(spans[i].ptr, spans[i].len, path, plen) &&
            (want < 0 || spans[i].len > spans[want].len)) {
            want = (int)i;
        }
    }
    best = beacon_context_best(spans, n, path, plen);
    FUZZ_CHECK(best == want, "beacon_context_best %d, the rule %d", best, want);
    r = beacon_routes_lookup(image, path, plen, NULL);
    FUZZ_CHECK((r ? (int)r->balancer : -1) == want, "lookup %d, the rule %d",
               r ? (int)r->balancer : -1, want);
    free(image);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *parts[3] = {"", "", ""};
    size_t lens[3] = {0, 0, 0}, start = 0, i;
    char *input = fuzz_dup(data, size);
    beacon_allow_t a, b;
    beacon_span_t bad = {NULL, 0};
    const char *msg;
    unsigned k = 0;

    for (i = 0; i <= size && k < 3; i++) {
        if (i == size || (input[i] == '\n' && k < 2)) {
            parts[k] = input + start;
            lens[k++] = i - start;
            start = i + 1;
        }
    }
    beacon_allow_init(&a);
    (void)beacon_allow_add(&a, "/kept", 5, NULL);
    msg = beacon_allow_add(&a, parts[0], lens[0], &bad);
    check_parse(parts[0], lens[0], &a, msg, &bad);
    FUZZ_CHECK(beacon_allow_permits(&a, parts[2], lens[2]) ==
                   ref_permits(&a, parts[2], lens[2]),
               "permits disagrees with the rule");
    beacon_allow_init(&b);
    if (beacon_allow_add(&b, parts[1], lens[1], NULL) != NULL) {
        b.n = 0;
    }
    check_conflict(&a, &b);
    check_routes(&a, parts[2], lens[2]);
    free(input);
    return 0;
}
