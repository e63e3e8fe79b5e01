/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: the route image, a virtual host's contexts as one flat
 * block that processes share (lib/beacon_routes.c).
 */
#ifndef BEACON_ROUTES_H
#define BEACON_ROUTES_H

#include "beacon_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Route image: the request path lookup, shared between processes      */

/*
 * The contexts of one virtual host and where each goes, as one process
 * (the receiver) builds them into memory it shares, and others (the
 * children serving requests) read, mapped at another address: a flat
 * byte image of offsets, never pointers, immutable once built. A new
 * table is a new image in another buffer, published behind the caller's
 * generation counter, so a reader never locks and never sees a table
 * rewritten under it.
 *
 * Layout (host byte order; the image starts 4-byte aligned):
 *   beacon_routes_header_t, padded to 64 bytes
 *   nbuckets x beacon_routes_bucket_t  open addressing, a power of two
 *   nroutes  x beacon_routes_entry_t   in the order they were given
 *   names                              each context and a NUL
 *
 * A context's home bucket is its beacon_routes_hash modulo nbuckets; it
 * sits there or, when that is full, in the next ones (header max_probe
 * says how many at most: 1 unless the builder found no seed of
 * BEACON_ROUTES_SEEDS that gave every context a place at home). A lookup
 * hashes each prefix of the request path that ends at a segment boundary
 * and probes it, longest first: its cost grows with the path's depth
 * (at most its first BEACON_CTX_PATH_MAX bytes, no context is longer),
 * never with the number of contexts. The seeds are against bad luck, not
 * malice: a member that holds a key and names contexts chosen to collide
 * can at worst make lookups read max_probe buckets each.
 */
#define BEACON_ROUTES_MAGIC 0x52434542u /* "BECR" read little-endian */
#define BEACON_ROUTES_VERSION 1
#define BEACON_ROUTES_MAX 65536         /* routes in one image */
#define BEACON_ROUTES_BUCKET_SLOTS 8    /* a bucket is one 64-byte line */
#define BEACON_ROUTES_SEEDS 4

typedef struct {
    apr_uint32_t magic;       /* BEACON_ROUTES_MAGIC */
    apr_uint32_t version;     /* BEACON_ROUTES_VERSION */
    apr_uint32_t size;        /* bytes of the whole image */
    apr_uint32_t seed;        /* of beacon_routes_hash, as the build chose */
    apr_uint32_t nroutes;
    apr_uint32_t nbuckets;
    apr_uint32_t max_probe;   /* buckets the longest probe reads, >= 1 */
    apr_uint32_t buckets_off; /* each offset from the image's start */
    apr_uint32_t routes_off;
    apr_uint32_t names_off;
    apr_uint32_t names_len;
} beacon_routes_header_t;

/* Slots fill from 0; the first ref 0 ends the bucket. A bucket with a
 * free slot ends every probe that reaches it. */
typedef struct {
    apr_uint32_t hash[BEACON_ROUTES_BUCKET_SLOTS]; /* of the route in ref */
    apr_uint32_t ref[BEACON_ROUTES_BUCKET_SLOTS];  /* route index + 1; 0 free */
} beacon_routes_bucket_t;

typedef struct {
    apr_uint32_t hash;        /* beacon_routes_hash of the name */
    apr_uint32_t value;       /* the caller's: opaque to the library */
    apr_uint32_t name_off;    /* from names_off */
    apr_uint16_t name_len;    /* without the NUL */
    apr_uint16_t balancer;    /* the caller's index of the balancer */
} beacon_routes_entry_t;

/* One route to build: a valid context (beacon_context_is_valid), each
 * context once in a table. */
typedef struct {
    const char *ctx;
    apr_size_t len;
    apr_uint16_t balancer;
    apr_uint32_t value;
} beacon_routes_spec_t;

/* The hash the image is built with: part of its format (its version). */
apr_uint32_t beacon_routes_hash(apr_uint32_t seed, const char *s,
                                apr_size_t len);

/* The default number of buckets for n routes: a power of two with room
 * for four times n (two a bucket on average), so that every context
 * nearly always finds room at home. */
unsigned beacon_routes_buckets(unsigned n);

/*
 * The bytes an image of n routes needs whose contexts hold names bytes
 * in all, in nbuckets buckets (0: beacon_routes_buckets(n)); 0 when no
 * image can hold them (n above BEACON_ROUTES_MAX, more than
 * BEACON_ROUTES_BUCKET_SLOTS per bucket, nbuckets not a power of two).
 */
apr_size_t beacon_routes_image_size(unsigned n, apr_size_t names,
                                    unsigned nbuckets);

/*
 * Builds the image of specs[0..n) into buf (size bytes, 4-byte aligned),
 * in nbuckets buckets (0: the default; a caller may ask for fewer, a
 * test for collisions). seed starts the hash (pass a random one: it is
 * kept in the image); the build tries BEACON_ROUTES_SEEDS seeds from it
 * for one-bucket probes and keeps the best. Returns NULL, or a static
 * message: a bad context, one context twice, a buffer too small or
 * misaligned, a count image_size refuses. Only buf is written.
 */
const char *beacon_routes_build(void *buf, apr_size_t size,
                                const beacon_routes_spec_t *specs, unsigned n,
                                unsigned nbuckets, apr_uint32_t seed);

/*
 * Whether the size bytes at image are an image this version reads: the
 * magic, the version, the layout its counts give and its size within
 * size, every route's name a valid context within the names and of its
 * hash, every bucket's refs and hashes those of its routes, and every
 * route found where its probe looks. A reader calls it once on an image
 * it did not build, before any lookup; NULL, or a static message saying
 * what is wrong. O(n): not for every request.
 */
const char *beacon_routes_check(const void *image, apr_size_t size);

/*
 * The route of the longest context in image (checked, immutable) that
 * matches the request path path[0..len) (not NUL-terminated) by
 * beacon_context_matches, or NULL. Reads buckets only: no allocation, no
 * lock. *probes (when not NULL) gets the number of buckets read.
 */
const beacon_routes_entry_t *beacon_routes_lookup(const void *image,
                                                  const char *path,
                                                  apr_size_t len,
                                                  unsigned *probes);

/* The number of routes, route i (0 to count - 1, in the order built),
 * and a route's context, NUL-terminated (status pages). */
unsigned beacon_routes_count(const void *image);
const beacon_routes_entry_t *beacon_routes_at(const void *image, unsigned i);
const char *beacon_routes_name(const void *image,
                               const beacon_routes_entry_t *route);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_ROUTES_H */
