/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: the ctx= parser and the route image's matcher, each
 * against the rule of docs/wire-format.md written out again (here and in
 * fuzz_common.h), never against another libbeacon function.
 *
 * Input: a control byte, then lines split at '\n'.
 *   control bits 0-1  how the second image is squeezed (see small_buckets)
 *           bits 2-4  how many contexts to generate beyond the lines
 *           bits 5-7  how many bytes of a copy of that image to flip; the
 *                     last 3 bytes of input per flip say where and how
 *   line 0            a ctx= value
 *   other lines       each a request path; each that is a valid context
 *                     (and is not one already) a route too
 *
 * Invariants:
 *  - beacon_ctx_parse accepts line 0 exactly when it is 1 to 16
 *    ","-separated valid contexts, with those spans; a datagram whose
 *    ctx= is that value is formatted and verified exactly when the rule
 *    accepts it (one of printable bytes without a space is otherwise a
 *    bad field ctx), and beacon_datagram_contexts gives the same paths;
 *  - beacon_context_is_valid is the rule on every line;
 *  - the contexts (the lines', line 0's paths and generated ones, nested
 *    in each other) build, with the default buckets and with few (one
 *    bucket, or full ones: long probes), into images that check, list
 *    their routes as given, refuse a context twice or an invalid one;
 *  - for every path (the lines, and each context as it is, followed by
 *    "/x", ";j=1" or "x", and cut by a byte) the lookup in each image is
 *    the longest context the rule matches, or none, and reads at most
 *    max_probe buckets for each prefix it tries;
 *  - the servlet path of every path (beacon_servlet_path), in an exact
 *    heap block and in place alike, is no longer than the path, starts
 *    with "/", holds no ";", no "//" and no "." or ".." segment, and is
 *    its own servlet path; only a path not starting with "/" or holding
 *    ".." has none;
 *  - an image with bytes flipped is refused, or is still a table the
 *    lookup reads by the rule: the route it finds is the longest of the
 *    image's own routes that matches (never one that does not).
 */

#include "fuzz_common.h"

#define MAX_LINES 64
#define MAX_ROUTES 600 /* lines, line 0's 16 and up to 500 generated */
#define MAX_PATHS 300

typedef struct {
    const char *ptr;
    size_t len;
} span_t;

typedef struct {
    span_t line[MAX_LINES];
    unsigned nlines;
    beacon_routes_spec_t spec[MAX_ROUTES];
    unsigned n;
    char *owned[MAX_ROUTES]; /* generated contexts, freed at the end */
    unsigned nowned;
    char *path[MAX_PATHS];   /* each an exact heap block: ASan sees past it */
    size_t plen[MAX_PATHS];
    unsigned npaths;
} input_t;

/* ---- ctx= ----------------------------------------------------------- */

/* The rule: 1 to BEACON_CTX_MAX_PATHS ","-separated contexts. */
static int ref_ctx_parse(const char *v, size_t len, span_t out[BEACON_CTX_MAX_PATHS])
{
    size_t start = 0;
    int n = 0;

    for (;;) {
        const char *comma = memchr(v + start, ',', len - start);
        size_t end = comma ? (size_t)(comma - v) : len;

        if (n == BEACON_CTX_MAX_PATHS || !fuzz_ref_context(v + start, end - start)) {
            return -1;
        }
        out[n].ptr = v + start;
        out[n++].len = end - start;
        if (comma == NULL) {
            return n;
        }
        start = end + 1;
    }
}

static int printable_no_space(const char *v)
{
    for (; *v; v++) {
        if (*v <= ' ' || *v > '~') {
            return 0;
        }
    }
    return 1;
}

/* "BEACON ts=... ctx=VALUE mac=..." as a sender writes it, or as the
 * rule refuses it (then signed here), through the receiver's parser. */
static void check_ctx_datagram(const char *value, const span_t *want, int nwant)
{
    beacon_key_t key = fuzz_key(FUZZ_HEX_KEY);
    beacon_announcement_t a = {.pid = -1, .seq = -1, .ts = FUZZ_NOW,
                               .ctx = value};
    beacon_span_t got[BEACON_CTX_MAX_PATHS];
    beacon_datagram_t dg;
    char buf[BEACON_MAX_DATAGRAM + 1];
    int len = beacon_format(buf, sizeof buf, &a, &key), i;
    beacon_reason_t r;

    FUZZ_CHECK((len >= 0) == (nwant > 0), "beacon_format %d, the rule %d", len,
               nwant);
    if (len < 0) {
        size_t n = strlen(value), dlen;
        char *part, *dgram;

        if (n == 0 || !printable_no_space(value) || n > 1500) {
            return;
        }
        part = malloc(n + 64);
        FUZZ_CHECK(part != NULL, "out of memory");
        n = (size_t)sprintf(part, "BEACON ts=%" APR_INT64_T_FMT " ctx=%s",
                            (apr_int64_t)FUZZ_NOW, value);
        dgram = fuzz_sign(part, n, &key, 0, &dlen);
        r = beacon_verify(dgram, dlen, &key, FUZZ_NOW, FUZZ_SKEW, &dg);
        FUZZ_CHECK(r == BEACON_DROP_BAD_FIELD && dg.bad_field.len == 3 &&
                       memcmp(dg.bad_field.ptr, "ctx", 3) == 0,
                   "ctx=%s the rule refuses: %s", value, beacon_reason_name(r));
        free(dgram);
        free(part);
        return;
    }
    r = beacon_verify(buf, (apr_size_t)len, &key, FUZZ_NOW, FUZZ_SKEW, &dg);
    FUZZ_CHECK(r == BEACON_OK, "a formatted ctx=%s is dropped: %s", value,
               beacon_reason_name(r));
    FUZZ_CHECK(beacon_datagram_contexts(&dg, got) == (unsigned)nwant,
               "datagram contexts: not %d", nwant);
    for (i = 0; i < nwant; i++) {
        FUZZ_CHECK(got[i].len == want[i].len &&
                       memcmp(got[i].ptr, want[i].ptr, want[i].len) == 0,
                   "datagram context %d is not the value's", i);
    }
}

static void check_ctx(input_t *in)
{
    beacon_span_t got[BEACON_CTX_MAX_PATHS];
    span_t want[BEACON_CTX_MAX_PATHS];
    const span_t *v = &in->line[0];
    char *value = fuzz_dup(v->ptr, v->len), *cstr;
    int n = beacon_ctx_parse(value, v->len, got), nwant, i;

    nwant = ref_ctx_parse(value, v->len, want);
    FUZZ_CHECK(n == nwant, "beacon_ctx_parse %d, the rule %d", n, nwant);
    for (i = 0; i < nwant; i++) {
        FUZZ_CHECK(got[i].ptr == want[i].ptr && got[i].len == want[i].len,
                   "path %d is not the value's", i);
    }
    FUZZ_CHECK(beacon_ctx_parse(NULL, 0, got) == -1, "NULL parsed");
    free(value);
    /* the datagram carries the value up to a NUL, as a string */
    cstr = fuzz_cstr((const uint8_t *)v->ptr, v->len);
    nwant = ref_ctx_parse(cstr, strlen(cstr), want);
    check_ctx_datagram(cstr, want, nwant);
    free(cstr);
}

/* ---- the contexts and the paths ----------------------------------- */

static int has_route(const input_t *in, unsigned upto, const char *s, size_t len)
{
    unsigned i;

    for (i = 0; i < upto; i++) {
        if (in->spec[i].len == len && memcmp(in->spec[i].ctx, s, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static void add_route(input_t *in, const char *s, size_t len)
{
    beacon_routes_spec_t *sp = &in->spec[in->n];

    sp->ctx = s;
    sp->len = len;
    sp->balancer = (apr_uint16_t)(in->n * 7u);
    sp->value = in->n ^ 0x5a5a5a5au;
    in->n++;
}

/* Contexts under those there are, so that many nest: a parent picked by
 * the input, then "/~" and i in base 36 (unique: no other route's last
 * segment is that), or "/~i" at the root when the parent is too long. */
static void generate(input_t *in, unsigned count, uint8_t pick)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned from = in->n, i;

    for (i = 0; i < count && in->n < MAX_ROUTES; i++) {
        char seg[16], *s;
        size_t slen = 0, plen = 0;
        unsigned v = i;
        const beacon_routes_spec_t *parent =
            in->n ? &in->spec[(i * 7u + pick) % in->n] : NULL;

        seg[slen++] = '/';
        seg[slen++] = '~';
        do {
            seg[slen++] = digits[v % 36];
            v /= 36;
        } while (v);
        if (parent && parent->len > 1 && parent->len + slen <= BEACON_CTX_PATH_MAX) {
            plen = parent->len;
        }
        s = malloc(plen + slen);
        FUZZ_CHECK(s != NULL, "out of memory");
        if (plen > 0) {
            memcpy(s, parent->ctx, plen);
        }
        memcpy(s + plen, seg, slen);
        in->owned[in->nowned++] = s;
        /* a line may have named it already */
        if (!has_route(in, from, s, plen + slen)) {
            add_route(in, s, plen + slen);
        }
    }
}

static void add_path(input_t *in, const char *a, size_t alen, const char *b,
                     size_t blen)
{
    char *p;

    if (in->npaths == MAX_PATHS) {
        return;
    }
    p = malloc((alen + blen) ? alen + blen : 1);
    FUZZ_CHECK(p != NULL, "out of memory");
    memcpy(p, a, alen);
    memcpy(p + alen, b, blen);
    in->path[in->npaths] = p;
    in->plen[in->npaths++] = alen + blen;
}

/* Each context at its boundaries: itself, a segment on, a path
 * parameter on (a match no more: the lookup is on servlet paths), a
 * byte more (never a match), a byte less. */
static void boundary_paths(input_t *in)
{
    static const char *const tails[] = {"", "/x", ";j=1", "x", "/"};
    unsigned i, t;

    for (i = 0; i < in->n; i++) {
        const beacon_routes_spec_t *sp = &in->spec[i];

        for (t = 0; t < sizeof tails / sizeof tails[0]; t++) {
            add_path(in, sp->ctx, sp->len, tails[t], strlen(tails[t]));
        }
        add_path(in, sp->ctx, sp->len - 1, "", 0);
    }
}

static void read_input(input_t *in, const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    size_t start = 0, i;
    beacon_span_t ctx[BEACON_CTX_MAX_PATHS];
    int k, nctx;

    for (i = 0; i <= size && in->nlines < MAX_LINES; i++) {
        if (i == size || s[i] == '\n') {
            in->line[in->nlines].ptr = s + start;
            in->line[in->nlines++].len = i - start;
            start = i + 1;
        }
    }
    for (i = 1; i < in->nlines; i++) {
        const span_t *l = &in->line[i];
        int valid = fuzz_ref_context(l->ptr, l->len);

        FUZZ_CHECK(beacon_context_is_valid(l->ptr, l->len) == valid,
                   "beacon_context_is_valid on line %zu is not the rule", i);
        add_path(in, l->ptr, l->len, "", 0);
        if (valid && !has_route(in, in->n, l->ptr, l->len)) {
            add_route(in, l->ptr, l->len);
        }
    }
    nctx = beacon_ctx_parse(in->line[0].ptr, in->line[0].len, ctx);
    for (k = 0; k < nctx; k++) {
        if (!has_route(in, in->n, ctx[k].ptr, ctx[k].len)) {
            add_route(in, ctx[k].ptr, ctx[k].len);
        }
    }
}

/* ---- the images ----------------------------------------------------- */

/* The index of the longest of the n names that the rule matches to the
 * path, or -1; the names are distinct, so there is no tie. */
static int ref_best(const span_t *names, unsigned n, const char *path, size_t plen)
{
    int best = -1;
    unsigned i;

    for (i = 0; i < n; i++) {
        if (fuzz_ref_matches(names[i].ptr, names[i].len, path, plen) &&
            (best < 0 || names[i].len > names[best].len)) {
            best = (int)i;
        }
    }
    return best;
}

/* How many prefixes of the path the lookup may try: one per byte of its
 * first BEACON_CTX_PATH_MAX, at most. */
static unsigned max_prefixes(size_t plen)
{
    return (unsigned)(plen < BEACON_CTX_PATH_MAX ? plen : BEACON_CTX_PATH_MAX);
}

/* Every path, looked up in image, finds the route ref_best names among
 * the image's own routes. want[i] caches ref_best for path i (-2: not
 * yet) between images of the same routes in the same order. */
static void check_lookups(const input_t *in, const void *image, const char *what,
                          int *want)
{
    const beacon_routes_header_t *h = image;
    unsigned n = beacon_routes_count(image), i;
    span_t *names = malloc((n ? n : 1) * sizeof *names);

    FUZZ_CHECK(names != NULL, "out of memory");
    for (i = 0; i < n; i++) {
        const beacon_routes_entry_t *r = beacon_routes_at(image, i);

        names[i].ptr = beacon_routes_name(image, r);
        names[i].len = r->name_len;
    }
    for (i = 0; i < in->npaths; i++) {
        unsigned probes = 0;
        const beacon_routes_entry_t *r =
            beacon_routes_lookup(image, in->path[i], in->plen[i], &probes);
        int got = r ? (int)(r - beacon_routes_at(image, 0)) : -1;

        if (want[i] == -2) {
            want[i] = ref_best(names, n, in->path[i], in->plen[i]);
        }
        FUZZ_CHECK(got == want[i],
                   "%s: path \"%.*s\" finds route %d (%s), the rule route %d",
                   what, (int)in->plen[i], in->path[i], got,
                   r ? beacon_routes_name(image, r) : "none", want[i]);
        FUZZ_CHECK(probes <= max_prefixes(in->plen[i]) * h->max_probe,
                   "%s: %u probes for a path of %zu bytes (max_probe %u)", what,
                   probes, in->plen[i], h->max_probe);
    }
    free(names);
}

/* A fresh cache for check_lookups. */
static void forget(int want[MAX_PATHS])
{
    unsigned i;

    for (i = 0; i < MAX_PATHS; i++) {
        want[i] = -2;
    }
}

/* A built image lists the routes as given. */
static void check_listing(const input_t *in, const void *image)
{
    unsigned i;

    FUZZ_CHECK(beacon_routes_count(image) == in->n, "count %u, not %u",
               beacon_routes_count(image), in->n);
    for (i = 0; i < in->n; i++) {
        const beacon_routes_entry_t *r = beacon_routes_at(image, i);
        const char *name = beacon_routes_name(image, r);

        FUZZ_CHECK(r->name_len == in->spec[i].len &&
                       memcmp(name, in->spec[i].ctx, r->name_len) == 0 &&
                       name[r->name_len] == '\0' &&
                       r->balancer == in->spec[i].balancer &&
                       r->value == in->spec[i].value,
                   "route %u is not as given", i);
    }
}

/* An image in an exact heap block (ASan sees any read past it), built;
 * NULL when build refused. */
static apr_uint32_t *build(const beacon_routes_spec_t *specs, unsigned n,
                           unsigned nbuckets, apr_uint32_t seed, size_t *size,
                           const char **msg)
{
    apr_size_t names = 0;
    apr_uint32_t *image;
    unsigned i;

    for (i = 0; i < n; i++) {
        names += specs[i].len;
    }
    *size = beacon_routes_image_size(n, names, nbuckets);
    FUZZ_CHECK(*size > 0, "image size %zu for %u routes",
               *size, n);
    image = malloc(*size);
    FUZZ_CHECK(image != NULL, "out of memory");
    *msg = beacon_routes_build(image, *size, specs, n, nbuckets, seed);
    if (*msg != NULL) {
        free(image);
        return NULL;
    }
    return image;
}

/* Fewer buckets than the default: mode 0 the fewest that hold n (full
 * buckets, long probes), 1 twice that, 2 one bucket when n fits it, 3 a
 * quarter of the default. */
static unsigned small_buckets(unsigned n, unsigned mode)
{
    unsigned fewest = 1, b;

    while (fewest * BEACON_ROUTES_BUCKET_SLOTS < n) {
        fewest *= 2;
    }
    switch (mode) {
    case 0:
        return fewest;
    case 1:
        return fewest * 2;
    case 2:
        return n <= BEACON_ROUTES_BUCKET_SLOTS ? 1 : fewest;
    default:
        b = beacon_routes_buckets(n) / 4;
        return b > fewest ? b : fewest;
    }
}

/* The same routes and a context twice, or one that is not a context. */
static void check_refusals(const input_t *in, apr_uint32_t seed)
{
    beacon_routes_spec_t *twice;
    const char *msg;
    size_t size;
    unsigned i;

    if (in->n > 0 && in->n < MAX_ROUTES) {
        twice = malloc((in->n + 1) * sizeof *twice);
        FUZZ_CHECK(twice != NULL, "out of memory");
        memcpy(twice, in->spec, in->n * sizeof *twice);
        twice[in->n] = in->spec[seed % in->n];
        FUZZ_CHECK(build(twice, in->n + 1, 0, seed, &size, &msg) == NULL,
                   "a context twice is built");
        free(twice);
    }
    for (i = 1; i < in->nlines; i++) {
        const span_t *l = &in->line[i];
        beacon_routes_spec_t bad = {l->ptr, l->len, 0, 0};

        if (l->len <= BEACON_CTX_PATH_MAX && !fuzz_ref_context(l->ptr, l->len)) {
            FUZZ_CHECK(build(&bad, 1, 0, seed, &size, &msg) == NULL,
                       "\"%.*s\", no context, is built", (int)l->len, l->ptr);
            return; /* one is enough */
        }
    }
}

/* A copy of image with bytes flipped by the input's tail: check refuses
 * it, or its lookups still follow the rule on its own routes. */
static void check_flipped(const input_t *in, const apr_uint32_t *image,
                          size_t isize, const uint8_t *data, size_t dsize,
                          unsigned flips)
{
    apr_uint32_t *copy;
    int want[MAX_PATHS];
    unsigned f;

    if (flips == 0 || dsize < 1 + 3 * flips) {
        return;
    }
    copy = malloc(isize);
    FUZZ_CHECK(copy != NULL, "out of memory");
    memcpy(copy, image, isize);
    for (f = 0; f < flips; f++) {
        const uint8_t *t = data + dsize - (size_t)3 * (f + 1);
        size_t at = ((size_t)t[0] | (size_t)t[1] << 8) % isize;

        ((uint8_t *)copy)[at] ^= t[2] ? t[2] : 1;
    }
    if (beacon_routes_check(copy, isize) == NULL) {
        forget(want);
        check_lookups(in, copy, "flipped image", want);
    }
    free(copy);
}

/* Whether s[0..len) holds a segment "." or ".." (between "/" or ends). */
static int has_dot_segment(const char *s, size_t len)
{
    size_t i = 0, start;

    while (i < len) {
        start = i;
        while (i < len && s[i] != '/') {
            i++;
        }
        if ((i - start == 1 && s[start] == '.') ||
            (i - start == 2 && s[start] == '.' && s[start + 1] == '.')) {
            return 1;
        }
        i++;
    }
    return 0;
}

static int has_dot_dot(const char *s, size_t len)
{
    size_t i;

    for (i = 1; i < len; i++) {
        if (s[i - 1] == '.' && s[i] == '.') {
            return 1;
        }
    }
    return 0;
}

static void check_servlet_paths(const input_t *in)
{
    unsigned i;

    for (i = 0; i < in->npaths; i++) {
        size_t plen = in->plen[i], k;
        char *servlet = malloc(plen + 1), *twice = malloc(plen + 1);
        apr_ssize_t n, m;

        FUZZ_CHECK(servlet != NULL && twice != NULL, "out of memory");
        n = beacon_servlet_path(in->path[i], plen, servlet);
        if (n < 0) {
            FUZZ_CHECK(n == -1 && (plen == 0 || in->path[i][0] != '/' ||
                                   has_dot_dot(in->path[i], plen)),
                       "no servlet path for \"%.*s\"", (int)plen, in->path[i]);
        } else {
            FUZZ_CHECK((size_t)n <= plen && servlet[0] == '/' && servlet[n] == '\0' &&
                           memchr(servlet, ';', (size_t)n) == NULL &&
                           !has_dot_segment(servlet + 1, (size_t)n - 1),
                       "servlet path \"%.*s\" of \"%.*s\"", (int)n, servlet,
                       (int)plen, in->path[i]);
            for (k = 1; k < (size_t)n; k++) {
                FUZZ_CHECK(servlet[k] != '/' || servlet[k - 1] != '/', "\"//\" in \"%.*s\"",
                           (int)n, servlet);
            }
            m = beacon_servlet_path(servlet, (size_t)n, twice);
            FUZZ_CHECK(m == n && memcmp(twice, servlet, (size_t)n) == 0,
                       "servlet path \"%.*s\" is not its own", (int)n, servlet);
        }
        /* in place, as a caller may */
        memcpy(twice, in->path[i], plen);
        m = beacon_servlet_path(twice, plen, twice);
        FUZZ_CHECK(m == n && (n < 0 || memcmp(twice, servlet, (size_t)n + 1) == 0),
                   "in place: \"%.*s\"", (int)plen, in->path[i]);
        free(servlet);
        free(twice);
    }
}

static void check_images(const input_t *in, const uint8_t *data, size_t size)
{
    uint8_t control = data[0];
    apr_uint32_t seed = (apr_uint32_t)size * 2654435761u ^ control;
    unsigned nb[2] = {0, small_buckets(in->n, control & 3)}, k;
    int want[MAX_PATHS];

    forget(want);
    for (k = 0; k < 2; k++) {
        const char *msg;
        size_t isize;
        apr_uint32_t *image = build(in->spec, in->n, nb[k], seed, &isize, &msg);

        FUZZ_CHECK(image != NULL, "%u routes in %u buckets refused: %s", in->n,
                   nb[k], msg);
        msg = beacon_routes_check(image, isize);
        FUZZ_CHECK(msg == NULL, "a built image is refused: %s", msg);
        check_listing(in, image);
        check_lookups(in, image, k ? "few buckets" : "default buckets", want);
        if (k == 1) {
            check_flipped(in, image, isize, data, size, control >> 5);
        }
        free(image);
    }
    check_refusals(in, seed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned generated[8] = {0, 2, 8, 20, 50, 120, 250, 500};
    input_t *in;
    char *copy;
    unsigned i;

    if (size == 0) {
        return 0;
    }
    in = calloc(1, sizeof *in);
    FUZZ_CHECK(in != NULL, "out of memory");
    copy = fuzz_dup(data + 1, size - 1);
    read_input(in, (const uint8_t *)copy, size - 1);
    check_ctx(in);
    generate(in, generated[(data[0] >> 2) & 7], data[size - 1]);
    boundary_paths(in);
    check_servlet_paths(in);
    check_images(in, data, size);
    for (i = 0; i < in->npaths; i++) {
        free(in->path[i]);
    }
    for (i = 0; i < in->nowned; i++) {
        free(in->owned[i]);
    }
    free(in);
    free(copy);
    return 0;
}
