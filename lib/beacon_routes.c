/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The route image (beacon_routes.h has its format): built once into the
 * caller's buffer, checked once by a reader that did not build it, then
 * looked up on every request by bucket reads alone. The matching rule is
 * beacon_context_matches'; the image only makes it fast.
 */

#include <stdint.h>
#include <string.h>

#include "beacon_private.h"

#define SLOTS BEACON_ROUTES_BUCKET_SLOTS
#define CACHE_LINE 64
#define SEED_STEP 0x9e3779b9u /* the golden ratio: seeds far apart */

/* FNV-1a, started from the seed, so that each prefix of a path is one
 * more step of the same state; fmix32 (MurmurHash3's finalizer) then
 * spreads it over the low bits a bucket index keeps. */
static apr_uint32_t hash_start(apr_uint32_t seed)
{
    return 2166136261u ^ seed;
}

static apr_uint32_t hash_step(apr_uint32_t h, char c)
{
    return (h ^ (unsigned char)c) * 16777619u;
}

static apr_uint32_t hash_end(apr_uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

apr_uint32_t beacon_routes_hash(apr_uint32_t seed, const char *s, apr_size_t len)
{
    apr_uint32_t h = hash_start(seed);
    apr_size_t i;

    for (i = 0; i < len; i++) {
        h = hash_step(h, s[i]);
    }
    return hash_end(h);
}

/* Where each part starts, for nroutes routes with names bytes (NULs
 * included) in nbuckets buckets: the one layout an image may have. The
 * buckets start at a cache line, as the image does in shared memory. */
typedef struct {
    apr_size_t buckets_off, routes_off, names_off, size;
} layout_t;

static layout_t layout(apr_size_t nroutes, apr_size_t names, apr_size_t nbuckets)
{
    layout_t l;

    l.buckets_off = (sizeof(beacon_routes_header_t) + CACHE_LINE - 1) /
                    CACHE_LINE * CACHE_LINE;
    l.routes_off = l.buckets_off + nbuckets * sizeof(beacon_routes_bucket_t);
    l.names_off = l.routes_off + nroutes * sizeof(beacon_routes_entry_t);
    l.size = l.names_off + names;
    return l;
}

static int is_power_of_two(apr_size_t n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

unsigned beacon_routes_buckets(unsigned n)
{
    unsigned b = 1;

    /* room for four times n: two contexts a bucket on average */
    while (b < BEACON_ROUTES_MAX && (apr_size_t)b * 2 < n) {
        b *= 2;
    }
    return b;
}

/* Whether n routes fit nbuckets buckets (already defaulted). */
static int counts_fit(apr_size_t n, apr_size_t nbuckets)
{
    return n <= BEACON_ROUTES_MAX && is_power_of_two(nbuckets) &&
           nbuckets <= BEACON_ROUTES_MAX && n <= nbuckets * SLOTS;
}

apr_size_t beacon_routes_image_size(unsigned n, apr_size_t names,
                                   unsigned nbuckets)
{
    if (nbuckets == 0) {
        nbuckets = beacon_routes_buckets(n);
    }
    if (!counts_fit(n, nbuckets) || names > (apr_size_t)n * BEACON_CTX_PATH_MAX) {
        return 0;
    }
    return layout(n, names + n, nbuckets).size;
}

static const beacon_routes_header_t *header_of(const void *image)
{
    return (const beacon_routes_header_t *)image;
}

/* The view of an image whose header needs no check (built here, or
 * checked once): a copy of the header, so that the parts' offsets are
 * read once as the board's readers read them. */
static beacon_routes_view_t view_of(const void *image)
{
    beacon_routes_view_t v;

    v.image = image;
    memcpy(&v.h, image, sizeof v.h);
    return v;
}

static const beacon_routes_bucket_t *buckets_of(const beacon_routes_view_t *v)
{
    return (const beacon_routes_bucket_t *)(v->image + v->h.buckets_off);
}

static const beacon_routes_entry_t *routes_of(const beacon_routes_view_t *v)
{
    return (const beacon_routes_entry_t *)(v->image + v->h.routes_off);
}

static const char *name_of(const beacon_routes_view_t *v,
                           const beacon_routes_entry_t *r)
{
    return v->image + v->h.names_off + r->name_off;
}

/* A word of an image another process may be rewriting (the board's
 * buffers), read exactly once: the compiler may not read it again after
 * it was checked, so a check holds for the value used. */
static apr_uint32_t once32(const apr_uint32_t *p)
{
    return *(const volatile apr_uint32_t *)p;
}

static apr_uint16_t once16(const apr_uint16_t *p)
{
    return *(const volatile apr_uint16_t *)p;
}

/*
 * The index + 1 of the route of the context s[0..len) of hash in v, or 0;
 * *probes counts the buckets read. A probe ends at the key, at a bucket
 * with a free slot (the build fills every bucket on the way before the
 * next), or after max_probe buckets. Every index it takes from the image
 * is checked before use (a ref within the routes, a name within the
 * names), so even a torn image is read only inside v's layout.
 */
static apr_uint32_t probe(const beacon_routes_view_t *v, apr_uint32_t hash,
                          const char *s, apr_size_t len, unsigned *probes)
{
    const beacon_routes_bucket_t *buckets = buckets_of(v);
    const beacon_routes_entry_t *routes = routes_of(v);
    const char *names = v->image + v->h.names_off;
    apr_uint32_t mask = v->h.nbuckets - 1, b = hash & mask, i;
    unsigned slot;

    for (i = 0; i < v->h.max_probe; i++, b = (b + 1) & mask) {
        const beacon_routes_bucket_t *bucket = &buckets[b];

        (*probes)++;
        for (slot = 0; slot < SLOTS; slot++) {
            apr_uint32_t ref = once32(&bucket->ref[slot]), off;
            const beacon_routes_entry_t *r;

            if (ref == 0 || ref > v->h.nroutes) {
                return 0;
            }
            if (once32(&bucket->hash[slot]) != hash) {
                continue;
            }
            r = &routes[ref - 1];
            off = once32(&r->name_off);
            if (once16(&r->name_len) == len &&
                (apr_size_t)off + len <= v->h.names_len &&
                memcmp(names + off, s, len) == 0) {
                return ref;
            }
        }
    }
    return 0;
}

/* Places route index ref - 1 (hash) in the first free slot of its probe
 * sequence; returns the number of buckets that took (there is a free
 * slot: counts_fit). */
static apr_uint32_t place(beacon_routes_header_t *h, apr_uint32_t hash,
                          apr_uint32_t ref)
{
    beacon_routes_bucket_t *buckets =
        (beacon_routes_bucket_t *)((char *)h + h->buckets_off);
    apr_uint32_t mask = h->nbuckets - 1, b = hash & mask, n;
    unsigned slot;

    for (n = 1;; n++, b = (b + 1) & mask) {
        for (slot = 0; slot < SLOTS; slot++) {
            if (buckets[b].ref[slot] == 0) {
                buckets[b].ref[slot] = ref;
                buckets[b].hash[slot] = hash;
                return n;
            }
        }
    }
}

/* Fills the buckets under seed; returns the longest probe, or 0 when a
 * context is there twice. */
static apr_uint32_t fill(beacon_routes_header_t *h, apr_uint32_t seed)
{
    beacon_routes_entry_t *routes = (beacon_routes_entry_t *)((char *)h + h->routes_off);
    beacon_routes_view_t v;
    apr_uint32_t i, longest = 1;

    memset((char *)h + h->buckets_off, 0,
           h->nbuckets * sizeof(beacon_routes_bucket_t));
    h->seed = seed;
    h->max_probe = h->nbuckets; /* while filling, probe() may look anywhere */
    v = view_of(h);
    for (i = 0; i < h->nroutes; i++) {
        beacon_routes_entry_t *r = &routes[i];
        unsigned probes = 0;
        apr_uint32_t n;

        r->hash = beacon_routes_hash(seed, name_of(&v, r), r->name_len);
        if (probe(&v, r->hash, name_of(&v, r), r->name_len, &probes) != 0) {
            return 0;
        }
        n = place(h, r->hash, i + 1);
        longest = n > longest ? n : longest;
    }
    return longest;
}

/* The header, the routes and their names, in the order given. */
static void lay_out(beacon_routes_header_t *h, const beacon_routes_spec_t *specs,
                    unsigned n, unsigned nbuckets, const layout_t *l,
                    apr_size_t names)
{
    beacon_routes_entry_t *routes;
    char *name;
    unsigned i;

    memset(h, 0, l->buckets_off);
    h->magic = BEACON_ROUTES_MAGIC;
    h->version = BEACON_ROUTES_VERSION;
    h->size = (apr_uint32_t)l->size;
    h->nroutes = n;
    h->nbuckets = nbuckets;
    h->buckets_off = (apr_uint32_t)l->buckets_off;
    h->routes_off = (apr_uint32_t)l->routes_off;
    h->names_off = (apr_uint32_t)l->names_off;
    h->names_len = (apr_uint32_t)names;
    routes = (beacon_routes_entry_t *)((char *)h + h->routes_off);
    name = (char *)h + h->names_off;
    for (i = 0; i < n; i++) {
        routes[i].value = specs[i].value;
        routes[i].balancer = specs[i].balancer;
        routes[i].name_len = (apr_uint16_t)specs[i].len;
        routes[i].name_off = (apr_uint32_t)(name - ((char *)h + h->names_off));
        memcpy(name, specs[i].ctx, specs[i].len);
        name[specs[i].len] = '\0';
        name += specs[i].len + 1;
    }
}

const char *beacon_routes_build(void *buf, apr_size_t size,
                               const beacon_routes_spec_t *specs, unsigned n,
                               unsigned nbuckets, apr_uint32_t seed)
{
    beacon_routes_header_t *h = buf;
    apr_uint32_t best_seed = seed, best = 0, longest, k;
    apr_size_t names = 0;
    layout_t l;
    unsigned i;

    if (nbuckets == 0) {
        nbuckets = beacon_routes_buckets(n);
    }
    if (!counts_fit(n, nbuckets)) {
        return "more routes than the buckets hold (a power of two, each of "
               BEACON_STR(BEACON_ROUTES_BUCKET_SLOTS) "), or more than "
               BEACON_STR(BEACON_ROUTES_MAX);
    }
    for (i = 0; i < n; i++) {
        if (!beacon_context_is_valid(specs[i].ctx, specs[i].len)) {
            return "a route's context is not a valid context";
        }
        names += specs[i].len + 1;
    }
    l = layout(n, names, nbuckets);
    if (buf == NULL || ((uintptr_t)buf & 3) != 0 || size < l.size) {
        return "the buffer is smaller than beacon_routes_image_size, or not "
               "4-byte aligned";
    }
    lay_out(h, specs, n, nbuckets, &l, names);
    for (k = 0; k < BEACON_ROUTES_SEEDS && best != 1; k++) {
        longest = fill(h, seed + k * SEED_STEP);
        if (longest == 0) {
            return "a context is given twice";
        }
        if (best == 0 || longest < best) {
            best = longest;
            best_seed = seed + k * SEED_STEP;
        }
    }
    if (h->seed != best_seed) {
        fill(h, best_seed);
    }
    h->max_probe = best;
    return NULL;
}

/* The header against the one layout its counts give. */
static const char *check_header(const beacon_routes_header_t *h, apr_size_t size)
{
    layout_t l;

    if (h->magic != BEACON_ROUTES_MAGIC) {
        return "not a route image (magic)";
    }
    if (h->version != BEACON_ROUTES_VERSION) {
        return "a route image of another version";
    }
    if (!counts_fit(h->nroutes, h->nbuckets) || h->max_probe == 0 ||
        h->max_probe > h->nbuckets ||
        h->names_len > (apr_size_t)h->nroutes * (BEACON_CTX_PATH_MAX + 1)) {
        return "a route image with impossible counts";
    }
    l = layout(h->nroutes, h->names_len, h->nbuckets);
    if (h->buckets_off != l.buckets_off || h->routes_off != l.routes_off ||
        h->names_off != l.names_off || h->size != l.size) {
        return "a route image whose layout is not the one its counts give";
    }
    if (h->size > size) {
        return "a route image larger than its buffer";
    }
    return NULL;
}

/* Every name inside the names, NUL-ended, a valid context of its hash. */
static const char *check_routes(const beacon_routes_view_t *v)
{
    const beacon_routes_entry_t *routes = routes_of(v);
    apr_uint32_t i;

    for (i = 0; i < v->h.nroutes; i++) {
        const beacon_routes_entry_t *r = &routes[i];

        if ((apr_size_t)r->name_off + r->name_len >= v->h.names_len ||
            name_of(v, r)[r->name_len] != '\0' ||
            !beacon_context_is_valid(name_of(v, r), r->name_len)) {
            return "a route image with a name out of place";
        }
        if (r->hash != beacon_routes_hash(v->h.seed, name_of(v, r), r->name_len)) {
            return "a route image with a hash that is not its name's";
        }
    }
    return NULL;
}

/* Refs in range with their routes' hashes, free slots only at a
 * bucket's end and zero, as many refs as routes, and each route where
 * its probe finds it (so none is there twice, none missing). */
static const char *check_buckets(const beacon_routes_view_t *v)
{
    const beacon_routes_bucket_t *buckets = buckets_of(v);
    const beacon_routes_entry_t *routes = routes_of(v);
    apr_uint32_t b, used = 0;
    unsigned slot, probes = 0;

    for (b = 0; b < v->h.nbuckets; b++) {
        for (slot = 0; slot < SLOTS; slot++) {
            apr_uint32_t ref = buckets[b].ref[slot];

            if (ref == 0 ? buckets[b].hash[slot] != 0 ||
                               (slot + 1 < SLOTS && buckets[b].ref[slot + 1] != 0)
                         : ref > v->h.nroutes ||
                               buckets[b].hash[slot] != routes[ref - 1].hash) {
                return "a route image with a bucket out of order";
            }
            used += ref != 0;
        }
    }
    if (used != v->h.nroutes) {
        return "a route image whose buckets do not hold its routes";
    }
    for (b = 0; b < v->h.nroutes; b++) {
        const beacon_routes_entry_t *r = &routes[b];

        if (probe(v, r->hash, name_of(v, r), r->name_len, &probes) != b + 1) {
            return "a route image with a route its probe does not find";
        }
    }
    return NULL;
}

const char *beacon_routes_view(beacon_routes_view_t *v, const void *image,
                               apr_size_t size)
{
    if (image == NULL || ((uintptr_t)image & 3) != 0 ||
        size < sizeof(beacon_routes_header_t)) {
        return "not a route image (no header, or not 4-byte aligned)";
    }
    *v = view_of(image);
    return check_header(&v->h, size);
}

const char *beacon_routes_check(const void *image, apr_size_t size)
{
    beacon_routes_view_t v;
    const char *msg;

    if ((msg = beacon_routes_view(&v, image, size)) != NULL ||
        (msg = check_routes(&v)) != NULL) {
        return msg;
    }
    return check_buckets(&v);
}

typedef struct {
    apr_uint32_t hash;
    apr_uint32_t len;
} prefix_t;

/*
 * The prefixes of path that a context could be, each with its hash:
 * "/", then every one followed by "/" or the end of the path
 * (beacon_context_matches), never one ending in "/" (no context does),
 * none past a ";" (no context holds one) nor past BEACON_CTX_PATH_MAX
 * bytes. Returns how many, shortest first.
 */
static unsigned prefixes(apr_uint32_t seed, const char *path, apr_size_t len,
                         prefix_t out[BEACON_CTX_PATH_MAX])
{
    apr_size_t k, end = len < BEACON_CTX_PATH_MAX ? len : BEACON_CTX_PATH_MAX;
    apr_uint32_t h = hash_start(seed);
    unsigned n = 0;

    if (len == 0 || path[0] != '/') {
        return 0;
    }
    for (k = 1; k <= end && path[k - 1] != ';'; k++) {
        h = hash_step(h, path[k - 1]);
        if (k > 1 && path[k - 1] == '/') {
            continue;
        }
        if (k == 1 || k == len || path[k] == '/') {
            out[n].hash = hash_end(h);
            out[n++].len = (apr_uint32_t)k;
        }
    }
    return n;
}

apr_uint32_t beacon_routes_find(const beacon_routes_view_t *v, const char *path,
                                apr_size_t len, beacon_routes_entry_t *out,
                                unsigned *probes)
{
    prefix_t cand[BEACON_CTX_PATH_MAX];
    unsigned n = prefixes(v->h.seed, path, len, cand), count = 0;
    apr_uint32_t ref = 0;

    while (n > 0 && ref == 0) {
        n--;
        ref = probe(v, cand[n].hash, path, cand[n].len, &count);
    }
    if (ref != 0 && out != NULL) {
        const beacon_routes_entry_t *r = &routes_of(v)[ref - 1];

        out->hash = once32(&r->hash);
        out->value = once32(&r->value);
        out->name_off = once32(&r->name_off);
        out->name_len = once16(&r->name_len);
        out->balancer = once16(&r->balancer);
    }
    if (probes != NULL) {
        *probes = count;
    }
    return ref;
}

const beacon_routes_entry_t *beacon_routes_lookup(const void *image, const char *path,
                                          apr_size_t len, unsigned *probes)
{
    beacon_routes_view_t v = view_of(image);
    apr_uint32_t ref = beacon_routes_find(&v, path, len, NULL, probes);

    return ref != 0 ? &routes_of(&v)[ref - 1] : NULL;
}

unsigned beacon_routes_count(const void *image)
{
    return header_of(image)->nroutes;
}

const beacon_routes_entry_t *beacon_routes_at(const void *image, unsigned i)
{
    beacon_routes_view_t v = view_of(image);

    return &routes_of(&v)[i];
}

const char *beacon_routes_name(const void *image, const beacon_routes_entry_t *route)
{
    beacon_routes_view_t v = view_of(image);

    return name_of(&v, route);
}
