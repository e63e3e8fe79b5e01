/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: the route board, the current route image in shared
 * memory, read without a lock (lib/beacon_board.c).
 */
#ifndef BEACON_BOARD_H
#define BEACON_BOARD_H

#include "beacon_common.h"
#include "beacon_routes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Route board: the current route image, shared, read without a lock    */

/*
 * Memory shared between processes (apr_shm; mapped at the same address
 * or another) holding the current route table as an immutable image
 * behind a generation counter. One writer process (the receiver; the
 * caller serialises its calls) publishes a new table; any number of
 * reader threads, in any process, look up on every request: a reader
 * never locks, never allocates, never waits for the writer, and never
 * returns an answer that is not wholly one published table's.
 *
 * Two image buffers: the writer builds a table into the one readers are
 * not sent to, then publishes it with the next generation; the old one
 * stays as it was until the publication after. Each buffer has a
 * sequence counter, odd while it is written (a seqlock): a reader that
 * was in a buffer while it was rewritten sees the counter change and
 * reads again from the current one. What it read meanwhile goes through
 * O(1) checks of the image's header and a bounds check of every index,
 * so a torn image can never make it read outside the buffer. A writer
 * that dies mid-build leaves the current table as it was.
 */
#define BEACON_BOARD_TRIES 4096 /* reads a reader tries before giving up */

/* The image capacity that holds up to n routes whose contexts hold names
 * bytes in all (beacon_routes_image_size with the default buckets), or 0
 * when no image can hold them. */
apr_size_t beacon_board_capacity(unsigned n, apr_size_t names);

/* The bytes of a board whose two buffers hold an image of image_capacity
 * bytes each; 0 when the capacity cannot hold an empty table or exceeds
 * 256 MiB. */
apr_size_t beacon_board_size(apr_size_t image_capacity);

/*
 * Makes mem (size bytes, 8-byte aligned as apr_shm_baseaddr_get's is)
 * a board publishing the empty table as generation 1; before any reader
 * maps it. NULL, or a static message (a capacity beacon_board_size
 * refuses, memory too small or misaligned).
 */
const char *beacon_board_init(void *mem, apr_size_t size,
                              apr_size_t image_capacity);

/*
 * Writer: builds specs[0..n) (beacon_routes_build's rules, seed its) into
 * the buffer readers are not sent to, then publishes it as the next
 * generation, which *generation (when not NULL) gets. NULL, or a static
 * message: routes that need more than the capacity, or what
 * beacon_routes_build refuses; nothing is published then, and the
 * current table and generation stay.
 */
const char *beacon_board_publish(void *board, const beacon_routes_spec_t *specs,
                                 unsigned n, apr_uint32_t seed,
                                 apr_uint32_t *generation);

/* The current table's generation (1 after init, one more a publish). */
apr_uint32_t beacon_board_generation(const void *board);

typedef struct {
    apr_uint16_t balancer;   /* the route's, as published */
    apr_uint32_t value;
    apr_uint32_t ctx_len;    /* of the context that matched: path[0..ctx_len) */
    apr_uint32_t generation; /* of the table the hit came from */
} beacon_board_hit_t;

/*
 * Reader: 1 with *hit (a copy) when the longest context of the current
 * table matches path[0..len) (beacon_context_matches' rule, as
 * beacon_routes_lookup), 0 when none does; -1, *hit untouched, when mem
 * is no board, when its current image is corrupt (read whole and still
 * not an image), or when BEACON_BOARD_TRIES reads in a row were each cut
 * by a publication (a writer publishing without pause, faster than a
 * lookup): a caller routes nothing then, as for 0, and may log it.
 * Never locks, never allocates.
 */
int beacon_board_lookup(const void *board, const char *path, apr_size_t len,
                        beacon_board_hit_t *hit);

/*
 * Reader, for status pages: copies the current image, read whole, into
 * buf (4-byte aligned; bufsize >= the board's image capacity always
 * suffices) and returns buf, which beacon_routes_check passed, with its
 * generation in *generation (when not NULL); NULL when buf is too small
 * or lookup would give -1. Then beacon_routes_count/at/name list it.
 */
const void *beacon_board_copy(const void *board, void *buf, apr_size_t bufsize,
                              apr_uint32_t *generation);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_BOARD_H */
