/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The route image: build, check and lookup. The longest matching context
 * wins under beacon_context_matches' rule (boundaries, "/"), checked
 * also against beacon_context_best on every short path; 1,000 contexts;
 * collisions in tiny tables and a real 32-bit hash collision; a lookup
 * whose bucket reads do not grow with the number of contexts; an image
 * that works at another address; and corrupt images refused by the
 * check, every single-byte corruption either refused or harmless.
 */
#include "test_common.h"

#define SEED 0x5eed1234u

typedef struct {
    apr_uint32_t *words; /* 4-byte aligned storage */
    apr_size_t size;
} image_t;

static image_t image_alloc(apr_size_t size)
{
    image_t im;

    im.words = calloc(size / 4 + 1, 4);
    assert_non_null(im.words);
    im.size = size;
    return im;
}

static apr_size_t names_of(const beacon_routes_spec_t *specs, unsigned n)
{
    apr_size_t total = 0;
    unsigned i;

    for (i = 0; i < n; i++) {
        total += specs[i].len;
    }
    return total;
}

/* The image of specs, built in nbuckets buckets (0: the default). */
static image_t built(const beacon_routes_spec_t *specs, unsigned n,
                     unsigned nbuckets)
{
    apr_size_t size = beacon_routes_image_size(n, names_of(specs, n), nbuckets);
    image_t im;
    const char *msg;

    assert_true(size > 0);
    im = image_alloc(size);
    msg = beacon_routes_build(im.words, im.size, specs, n, nbuckets, SEED);
    if (msg != NULL) {
        print_error("build: %s\n", msg);
    }
    assert_null(msg);
    assert_null(beacon_routes_check(im.words, im.size));
    return im;
}

static const beacon_routes_header_t *header(const image_t *im)
{
    return (const beacon_routes_header_t *)im->words;
}

static beacon_routes_spec_t spec(const char *ctx, unsigned balancer)
{
    beacon_routes_spec_t s;

    s.ctx = ctx;
    s.len = strlen(ctx);
    s.balancer = (apr_uint16_t)balancer;
    s.value = 1000u + balancer;
    return s;
}

/* The context a lookup of path finds in im, or NULL; the path as a
 * guarded copy, so that a read past its length crashes. */
static const char *found(const image_t *im, const char *path, unsigned *probes)
{
    guarded_t g = guarded_copy(path, strlen(path));
    const beacon_routes_entry_t *r = beacon_routes_lookup(im->words, g.buf, strlen(path),
                                                  probes);

    guarded_free(&g);
    return r ? beacon_routes_name(im->words, r) : NULL;
}

static void assert_found(const image_t *im, const char *path, const char *want)
{
    const char *got = found(im, path, NULL);

    if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0)) {
        print_error("path \"%s\": %s, not %s\n", path, got ? got : "none",
                    want ? want : "none");
    }
    assert_true((got == NULL) == (want == NULL));
    if (want != NULL) {
        assert_string_equal(got, want);
    }
}

static void the_longest_context_matching_at_a_boundary_wins(void **state)
{
    const beacon_routes_spec_t specs[] = {
        spec("/shop", 0), spec("/shop/admin", 1), spec("/cart", 2),
        spec("/api/v1", 3), spec("/", 4),
    };
    image_t im = built(specs, ARRAY_LEN(specs), 0);
    image_t no_root = built(specs, ARRAY_LEN(specs) - 1, 0);
    const beacon_routes_entry_t *r;

    (void)state;
    assert_found(&im, "/shop", "/shop");
    assert_found(&im, "/shop/", "/shop");
    assert_found(&im, "/shop/x", "/shop");
    /* a parameter is no boundary: the caller looks up the servlet path
     * (beacon_servlet_path), which holds none */
    assert_found(&im, "/shop;jsessionid=1", "/");
    assert_found(&im, "/shop;jsessionid=1/x", "/");
    assert_found(&im, "/shop//x", "/shop");
    assert_found(&im, "/shopping", "/");
    assert_found(&im, "/Shop", "/");
    assert_found(&im, "/shop/admin/x", "/shop/admin");
    assert_found(&im, "/shop/admin;a=b", "/shop");
    assert_found(&im, "/shop/adminx", "/shop");
    assert_found(&im, "/shop/x/admin", "/shop");
    assert_found(&im, "/api/v1/x", "/api/v1");
    assert_found(&im, "/api", "/");
    assert_found(&im, "/api/v2", "/");
    assert_found(&im, "/", "/");
    assert_found(&im, "", NULL);
    assert_found(&im, "*", NULL);
    assert_found(&im, "shop", NULL);
    assert_found(&no_root, "/shopping", NULL);
    assert_found(&no_root, "/", NULL);
    assert_found(&no_root, "/cart", "/cart");
    assert_found(&no_root, "/cart;x", NULL);
    assert_found(&no_root, "/car", NULL);
    assert_found(&no_root, "/cartx", NULL);
    r = beacon_routes_lookup(im.words, "/shop/admin/x", 13, NULL);
    assert_non_null(r);
    assert_int_equal(r->balancer, 1);
    assert_int_equal(r->value, 1001);
    /* the length, not a NUL, ends the path */
    assert_found(&im, "/cart", "/cart");
    r = beacon_routes_lookup(im.words, "/cartx", 5, NULL);
    assert_non_null(r);
    assert_int_equal(r->balancer, 2);
    free(im.words);
    free(no_root.words);
}

static void paths_deeper_than_any_context_still_match(void **state)
{
    static const char ctx80[] =
        "/123456789012345678901234567890123456789012345678901234567890123456789012345678a";
    char path[600];
    const beacon_routes_spec_t specs[] = {spec(ctx80, 0), spec("/s", 1)};
    image_t im = built(specs, 2, 0);
    unsigned probes = 0;
    size_t i;

    (void)state;
    assert_int_equal(strlen(ctx80), BEACON_CTX_PATH_MAX);
    snprintf(path, sizeof path, "%s/and/more/below", ctx80);
    assert_found(&im, path, ctx80);
    snprintf(path, sizeof path, "%s;p", ctx80);
    assert_found(&im, path, NULL);
    snprintf(path, sizeof path, "%sb/x", ctx80);
    assert_found(&im, path, NULL);
    /* 500 bytes of "/s/s/s...": the prefixes up to 80 bytes are tried, no
     * more (40 boundaries and "/"), and the longest that is a context,
     * "/s", wins */
    for (i = 0; i + 2 <= 500; i += 2) {
        memcpy(path + i, "/s", 2);
    }
    path[500] = '\0';
    assert_found(&im, path, "/s");
    assert_null(beacon_routes_lookup(im.words, "/x/x/x/x", 8, &probes) ? "hit" : NULL);
    assert_int_equal(probes, 5); /* "/", "/x", "/x/x", ... */
    beacon_routes_lookup(im.words, path, 500, &probes);
    assert_true(probes <= BEACON_CTX_PATH_MAX / 2 + 1);
    free(im.words);
}

/* Every path of a small alphabet up to 6 bytes finds in the image what
 * beacon_context_best finds in the list. */
static void lookup_agrees_with_context_best_on_every_short_path(void **state)
{
    static const char *const ctxs[] = {"/", "/a", "/ab", "/a/b", "/a.b", "/b/a/b",
                                       "/b"};
    static const char alphabet[] = "/a;b.";
    beacon_routes_spec_t specs[ARRAY_LEN(ctxs)];
    beacon_span_t spans[ARRAY_LEN(ctxs)];
    char path[8];
    unsigned long n, total = 1, code;
    size_t c, len, i;
    image_t im, tiny;

    (void)state;
    for (c = 0; c < ARRAY_LEN(ctxs); c++) {
        specs[c] = spec(ctxs[c], (unsigned)c);
        spans[c].ptr = ctxs[c];
        spans[c].len = strlen(ctxs[c]);
    }
    im = built(specs, ARRAY_LEN(specs), 0);
    tiny = built(specs, ARRAY_LEN(specs), 1); /* all in one bucket */
    for (len = 0; len <= 6; len++, total *= sizeof alphabet - 1) {
        for (code = 0; code < total; code++) {
            const beacon_routes_entry_t *r, *t;
            int best;

            for (i = 0, n = code; i < len; i++, n /= sizeof alphabet - 1) {
                path[i] = alphabet[n % (sizeof alphabet - 1)];
            }
            best = beacon_context_best(spans, ARRAY_LEN(spans), path, len);
            r = beacon_routes_lookup(im.words, path, len, NULL);
            t = beacon_routes_lookup(tiny.words, path, len, NULL);
            assert_int_equal(r ? (int)r->balancer : -1, best);
            assert_int_equal(t ? (int)t->balancer : -1, best);
        }
    }
    free(im.words);
    free(tiny.words);
}

typedef struct {
    char names[1000][24];
    beacon_routes_spec_t specs[1000];
} many_t;

static many_t *many(unsigned n)
{
    many_t *m = calloc(1, sizeof *m);
    unsigned i;

    assert_non_null(m);
    for (i = 0; i < n; i++) {
        snprintf(m->names[i], sizeof m->names[i], "/app%u/v%u", i, i % 7);
        m->specs[i] = spec(m->names[i], i % 300);
        m->specs[i].value = i;
    }
    return m;
}

static void a_thousand_contexts_each_find_their_own(void **state)
{
    many_t *m = many(1000);
    image_t im = built(m->specs, 1000, 0);
    char path[64];
    unsigned i;

    (void)state;
    assert_int_equal(beacon_routes_count(im.words), 1000);
    for (i = 0; i < 1000; i++) {
        const beacon_routes_entry_t *r;

        snprintf(path, sizeof path, "%s/page;s=1", m->names[i]);
        r = beacon_routes_lookup(im.words, path, strlen(path), NULL);
        assert_non_null(r);
        assert_int_equal(r->value, i);
        assert_int_equal(r->balancer, i % 300);
        assert_true(beacon_routes_at(im.words, i) == r);
        assert_string_equal(beacon_routes_name(im.words, r), m->names[i]);
        snprintf(path, sizeof path, "%sx", m->names[i]);
        assert_found(&im, path, NULL);
        snprintf(path, sizeof path, "/app%u", i);
        assert_found(&im, path, NULL);
    }
    free(im.words);
    free(m);
}

/* The same paths cost the same bucket reads in a table of 10 and one of
 * 1,000: one per prefix tried. */
static void the_lookup_cost_does_not_grow_with_the_contexts(void **state)
{
    static const struct {
        const char *path;
        unsigned prefixes; /* tried, longest first, until one matches */
    } rows[] = {
        {"/app3/v3", 1},
        {"/app3/v3/x/y", 3},
        {"/app3/v3;jsessionid=1", 2}, /* "/app3/v3" ends at no boundary */
        {"/nowhere/a/b/c", 5},
        {"/app3", 2},
        {"/", 1},
        {"/a/b/c/d/e/f/g/h", 9},
    };
    many_t *m = many(1000);
    image_t small = built(m->specs, 10, 0), large = built(m->specs, 1000, 0);
    size_t i;

    (void)state;
    /* the premise: every context at home in both */
    assert_int_equal(header(&small)->max_probe, 1);
    assert_int_equal(header(&large)->max_probe, 1);
    assert_true(header(&large)->nbuckets > 10 * header(&small)->nbuckets);
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        unsigned ps = 0, pl = 0;
        size_t len = strlen(rows[i].path);

        beacon_routes_lookup(small.words, rows[i].path, len, &ps);
        beacon_routes_lookup(large.words, rows[i].path, len, &pl);
        if (ps != rows[i].prefixes || pl != rows[i].prefixes) {
            print_error("%s: %u and %u probes\n", rows[i].path, ps, pl);
        }
        assert_int_equal(ps, rows[i].prefixes);
        assert_int_equal(pl, rows[i].prefixes);
    }
    free(small.words);
    free(large.words);
    free(m);
}

static void full_and_overflowing_buckets_still_find_everything(void **state)
{
    many_t *m = many(64);
    const beacon_routes_spec_t nine[9] = {
        spec("/a", 0), spec("/b", 1), spec("/c", 2), spec("/d", 3), spec("/e", 4),
        spec("/f", 5), spec("/g", 6), spec("/h", 7), spec("/i", 8),
    };
    unsigned nbuckets, i, probes;

    (void)state;
    /* 64 contexts in 8, 16 and 32 buckets: full, or chained past home */
    for (nbuckets = 8; nbuckets <= 32; nbuckets *= 2) {
        image_t im = built(m->specs, 64, nbuckets);

        assert_true(header(&im)->max_probe <= nbuckets);
        for (i = 0; i < 64; i++) {
            assert_found(&im, m->names[i], m->names[i]);
        }
        assert_found(&im, "/app1/v2", NULL);
        beacon_routes_lookup(im.words, "/zz", 3, &probes);
        assert_true(probes <= 2 * header(&im)->max_probe);
        free(im.words);
    }
    /* 8 contexts is all one bucket holds; 9 is refused */
    {
        image_t one = built(nine, 8, 1);

        for (i = 0; i < 8; i++) {
            assert_found(&one, nine[i].ctx, nine[i].ctx);
        }
        assert_found(&one, "/i", NULL);
        free(one.words);
    }
    assert_int_equal(beacon_routes_image_size(9, 18, 1), 0);
    assert_int_equal(beacon_routes_image_size(8, 16, 3), 0);
    assert_int_equal(beacon_routes_image_size(BEACON_ROUTES_MAX + 1, 2, 0), 0);
    free(m);
}

static int by_hash(const void *a, const void *b)
{
    apr_uint64_t x = *(const apr_uint64_t *)a, y = *(const apr_uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Context number i of the birthday search: "/" and 12 letters of a
 * xorshift of i (sequential names hardly ever collide under FNV). */
static void nth_name(unsigned i, char out[24])
{
    apr_uint64_t x = 0x9e3779b97f4a7c15u * (i + 1);
    int k;

    out[0] = '/';
    for (k = 1; k <= 12; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out[k] = (char)('a' + x % 26);
    }
    out[13] = '\0';
}

/* Two contexts of one 32-bit hash, by a birthday search. */
static void colliding_pair(char a[24], char b[24])
{
    enum { N = 300000 };
    apr_uint64_t *keys = malloc(N * sizeof *keys);
    unsigned i;

    assert_non_null(keys);
    for (i = 0; i < N; i++) {
        nth_name(i, a);
        keys[i] = (apr_uint64_t)beacon_routes_hash(SEED, a, strlen(a)) << 32 | i;
    }
    qsort(keys, N, sizeof *keys, by_hash);
    for (i = 1; i < N && keys[i] >> 32 != keys[i - 1] >> 32; i++) {
    }
    assert_true(i < N); /* about ten pairs expected in 300,000 */
    nth_name((unsigned)(keys[i - 1] & 0xffffffffu), a);
    nth_name((unsigned)(keys[i] & 0xffffffffu), b);
    free(keys);
}

static void a_hash_collision_is_no_match(void **state)
{
    char a[24], b[24], path[40];
    beacon_routes_spec_t specs[2];
    image_t one, both;

    (void)state;
    colliding_pair(a, b);
    assert_string_not_equal(a, b);
    assert_int_equal(beacon_routes_hash(SEED, a, strlen(a)),
                     beacon_routes_hash(SEED, b, strlen(b)));
    specs[0] = spec(a, 1);
    specs[1] = spec(b, 2);
    one = built(specs, 1, 0);
    assert_int_equal(header(&one)->seed, SEED); /* the pair collides there */
    assert_found(&one, a, a);
    assert_found(&one, b, NULL);
    snprintf(path, sizeof path, "%s/x", b);
    assert_found(&one, path, NULL);
    both = built(specs, 2, 0);
    assert_found(&both, a, a);
    assert_found(&both, b, b);
    free(one.words);
    free(both.words);
}

static void a_build_refuses_what_no_image_holds(void **state)
{
    const beacon_routes_spec_t twice[] = {spec("/a", 0), spec("/b", 1),
                                         spec("/a", 2)};
    const beacon_routes_spec_t bad[] = {spec("/a", 0), spec("/b/", 1)};
    apr_size_t size = beacon_routes_image_size(3, 6, 0);
    apr_size_t two = beacon_routes_image_size(2, 4, 0);
    image_t im = image_alloc(size + 8);

    (void)state;
    assert_non_null(beacon_routes_build(im.words, size, twice, 3, 0, SEED));
    assert_non_null(beacon_routes_build(im.words, size, bad, 2, 0, SEED));
    assert_non_null(beacon_routes_build(im.words, two - 1, twice, 2, 0, SEED));
    assert_null(beacon_routes_build(im.words, two, twice, 2, 0, SEED));
    assert_non_null(beacon_routes_build((char *)im.words + 1, size, twice, 2, 0,
                                       SEED));
    assert_non_null(beacon_routes_build(im.words, size, twice, 2, 3, SEED));
    assert_null(beacon_routes_build(im.words, size, twice, 2, 0, SEED));
    /* an empty table is an image too: it routes nothing */
    assert_null(beacon_routes_build(im.words, size, NULL, 0, 0, SEED));
    assert_null(beacon_routes_check(im.words, size));
    assert_int_equal(beacon_routes_count(im.words), 0);
    assert_null(beacon_routes_lookup(im.words, "/a", 2, NULL));
    free(im.words);
}

/* The image is offsets only: a copy at another address reads the same. */
static void an_image_reads_the_same_at_another_address(void **state)
{
    const beacon_routes_spec_t specs[] = {spec("/shop", 0), spec("/cart", 1)};
    image_t im = built(specs, 2, 0), copy = image_alloc(im.size);

    (void)state;
    memcpy(copy.words, im.words, im.size);
    memset(im.words, 0xa5, im.size);
    free(im.words);
    assert_null(beacon_routes_check(copy.words, copy.size));
    assert_found(&copy, "/cart/x", "/cart");
    assert_found(&copy, "/shop", "/shop");
    free(copy.words);
}

typedef void (*corrupt_fn)(beacon_routes_header_t *h, apr_size_t *size);

static beacon_routes_bucket_t *bucket0(beacon_routes_header_t *h)
{
    return (beacon_routes_bucket_t *)((char *)h + h->buckets_off);
}

static beacon_routes_entry_t *route0(beacon_routes_header_t *h)
{
    return (beacon_routes_entry_t *)((char *)h + h->routes_off);
}

static void bad_magic(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->magic ^= 1; }
static void bad_version(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->version++; }
static void too_big(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->size += 4; }
static void cut_short(beacon_routes_header_t *h, apr_size_t *s) { (void)h; *s -= 1; }
static void no_header(beacon_routes_header_t *h, apr_size_t *s) { (void)h; *s = 8; }
static void more_routes(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->nroutes++; }
static void odd_buckets(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->nbuckets = 3; }
static void no_probe(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->max_probe = 0; }
static void long_probe(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->max_probe = h->nbuckets + 1; }
static void moved_routes(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->routes_off += 4; }
static void moved_names(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->names_off = 0xfffffff0u; }
static void longer_names(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->names_len += 1000; }
static void name_outside(beacon_routes_header_t *h, apr_size_t *s) { (void)s; route0(h)->name_off = h->names_len; }
static void name_empty(beacon_routes_header_t *h, apr_size_t *s) { (void)s; route0(h)->name_len = 0; }
static void name_longer(beacon_routes_header_t *h, apr_size_t *s) { (void)s; route0(h)->name_len++; }
static void name_bytes(beacon_routes_header_t *h, apr_size_t *s) { (void)s; ((char *)h + h->names_off)[1] ^= 1; }
static void name_no_nul(beacon_routes_header_t *h, apr_size_t *s) { (void)s; ((char *)h + h->names_off)[route0(h)->name_len] = 'x'; }
static void route_hash(beacon_routes_header_t *h, apr_size_t *s) { (void)s; route0(h)->hash ^= 1; }
static void bad_seed(beacon_routes_header_t *h, apr_size_t *s) { (void)s; h->seed ^= 1; }
static void ref_outside(beacon_routes_header_t *h, apr_size_t *s) { (void)s; bucket0(h)->ref[0] = h->nroutes + 1; }
static void slot_hash(beacon_routes_header_t *h, apr_size_t *s) { (void)s; bucket0(h)->hash[0] ^= 1; }
static void ref_lost(beacon_routes_header_t *h, apr_size_t *s) { (void)s; bucket0(h)->ref[0] = 0; }
static void ref_twice(beacon_routes_header_t *h, apr_size_t *s)
{
    beacon_routes_bucket_t *b = bucket0(h);

    (void)s;
    b->ref[1] = b->ref[0];
    b->hash[1] = b->hash[0];
}
static void hole(beacon_routes_header_t *h, apr_size_t *s)
{
    beacon_routes_bucket_t *b = bucket0(h);

    (void)s;
    b->ref[3] = b->ref[1];
    b->hash[3] = b->hash[1];
    b->ref[1] = 0;
}

static void a_corrupt_image_is_refused(void **state)
{
    static const struct {
        const char *name;
        corrupt_fn fn;
    } rows[] = {
        {"magic", bad_magic}, {"version", bad_version}, {"size", too_big},
        {"cut short", cut_short}, {"no header", no_header},
        {"nroutes", more_routes}, {"nbuckets", odd_buckets},
        {"max_probe 0", no_probe}, {"max_probe", long_probe},
        {"routes_off", moved_routes}, {"names_off", moved_names},
        {"names_len", longer_names}, {"name_off", name_outside},
        {"name_len 0", name_empty}, {"name_len", name_longer},
        {"name bytes", name_bytes}, {"name NUL", name_no_nul},
        {"route hash", route_hash}, {"seed", bad_seed},
        {"ref", ref_outside}, {"slot hash", slot_hash}, {"ref lost", ref_lost},
        {"ref twice", ref_twice}, {"hole", hole},
    };
    /* four contexts in one bucket, so that bucket 0 holds them all */
    const beacon_routes_spec_t specs[] = {spec("/shop", 0), spec("/cart", 1),
                                         spec("/a/b", 2), spec("/", 3)};
    image_t good = built(specs, 4, 1), bad = image_alloc(good.size);
    size_t i;

    (void)state;
    assert_non_null(beacon_routes_check(NULL, good.size));
    assert_non_null(beacon_routes_check((char *)good.words + 4, good.size - 4));
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        apr_size_t size = good.size;
        const char *msg;

        memcpy(bad.words, good.words, good.size);
        rows[i].fn((beacon_routes_header_t *)bad.words, &size);
        msg = beacon_routes_check(bad.words, size);
        if (msg == NULL) {
            print_error("accepted: %s\n", rows[i].name);
        }
        assert_non_null(msg);
    }
    free(good.words);
    free(bad.words);
}

/* Any one byte changed: the check refuses it, or every lookup on what it
 * accepts stays inside the image (ASan would see a stray read). */
static void every_one_byte_corruption_is_refused_or_harmless(void **state)
{
    static const char *const paths[] = {"/shop/x", "/cart", "/a/b;c", "/zz", "/"};
    const beacon_routes_spec_t specs[] = {spec("/shop", 0), spec("/cart", 1),
                                         spec("/a/b", 2), spec("/", 3)};
    image_t good = built(specs, 4, 2), bad;
    unsigned refused = 0, bit;
    size_t at, p;

    (void)state;
    bad = image_alloc(good.size);
    for (at = 0; at < good.size; at++) {
        for (bit = 0; bit < 8; bit++) {
            memcpy(bad.words, good.words, good.size);
            ((unsigned char *)bad.words)[at] ^= (unsigned char)(1u << bit);
            if (beacon_routes_check(bad.words, bad.size) != NULL) {
                refused++;
                continue;
            }
            for (p = 0; p < ARRAY_LEN(paths); p++) {
                guarded_t g = guarded_copy(paths[p], strlen(paths[p]));

                beacon_routes_lookup(bad.words, g.buf, strlen(paths[p]), NULL);
                guarded_free(&g);
            }
        }
    }
    /* most flips are refused; what passes (values, balancers, free
     * slots' hashes) is data the reader may read */
    assert_true(refused > good.size * 8 / 2);
    free(good.words);
    free(bad.words);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_longest_context_matching_at_a_boundary_wins),
        cmocka_unit_test(paths_deeper_than_any_context_still_match),
        cmocka_unit_test(lookup_agrees_with_context_best_on_every_short_path),
        cmocka_unit_test(a_thousand_contexts_each_find_their_own),
        cmocka_unit_test(the_lookup_cost_does_not_grow_with_the_contexts),
        cmocka_unit_test(full_and_overflowing_buckets_still_find_everything),
        cmocka_unit_test(a_hash_collision_is_no_match),
        cmocka_unit_test(a_build_refuses_what_no_image_holds),
        cmocka_unit_test(an_image_reads_the_same_at_another_address),
        cmocka_unit_test(a_corrupt_image_is_refused),
        cmocka_unit_test(every_one_byte_corruption_is_refused_or_harmless),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
