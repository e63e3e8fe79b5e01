/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* Helpers shared by libbeacon's sources; not part of the public API. */
#ifndef BEACON_PRIVATE_H
#define BEACON_PRIVATE_H

#include <stdatomic.h>

#include "beacon.h"

/* 0-15 for a hex digit of either case, -1 otherwise. */
int beacon_hex_value(char c);

/* Whether s[0..len) holds only [A-Za-z0-9._-]: a word that reads the same
 * in a log line, a directive and a status page (service names, host
 * names of datagram endpoints). Lengths are the caller's rule. */
int beacon_is_word(const char *s, apr_size_t len);

/* svc= and route=: 1 to max bytes of a word. */
int beacon_word_span_is_valid(const char *s, apr_size_t len, apr_size_t max);

/*
 * A route image's header as a reader copied it, checked in O(1) by
 * beacon_routes_view: the magic, the version, counts that fit, the one
 * layout they give, all within size. A lookup through a view reads only
 * inside that layout, whatever the bytes there hold: the board's readers
 * (beacon_board.c) look up in images a writer may be rewriting, and throw
 * away what they read when it was.
 */
typedef struct {
    const char *image;
    beacon_routes_header_t h; /* the copy */
} beacon_routes_view_t;

/* NULL, or a static message (beacon_routes_check's header messages). */
const char *beacon_routes_view(beacon_routes_view_t *v, const void *image,
                               apr_size_t size);

/*
 * beacon_routes_lookup's search in v: the index + 1 of the route of the
 * longest context matching path[0..len), 0 when none. Each word it reads
 * from the image is read once and every index checked before use, so a
 * torn image gives a wrong answer, never a read outside v's layout.
 * *out (when not NULL) gets a copy of the route; *probes (when not NULL)
 * the buckets read.
 */
apr_uint32_t beacon_routes_find(const beacon_routes_view_t *v, const char *path,
                                apr_size_t len, beacon_routes_entry_t *out,
                                unsigned *probes);

/* For the tests of torn reads: the seq counter and the image of the
 * board's buffer that generation's parity names (beacon_board.c). */
_Atomic apr_uint32_t *beacon_board_seq(void *board, apr_uint32_t generation);
char *beacon_board_image(void *board, apr_uint32_t generation);

/*
 * The ","-separated entries of list[0..len), each given to add(ctx, entry,
 * entry_len) in turn (an empty one too: add says what is wrong with it).
 * NULL, or the first message add returned, with *bad (when not NULL) that
 * entry's span. Undoing the entries added before it is the caller's.
 */
typedef const char *beacon_entry_fn(void *ctx, const char *entry,
                                    apr_size_t len);
const char *beacon_each_entry(const char *list, apr_size_t len,
                              beacon_entry_fn *add, void *ctx,
                              beacon_span_t *bad);

/*
 * The steps of beacon_verify, for beacon_verify_ring (beacon_ring.c):
 * steps 1 and 2 (*signed_len is where " mac=" starts; clears out's
 * diagnostics), step 3 under one key, steps 4 and 5 once a MAC matched.
 */
beacon_reason_t beacon_check_frame(const char *buf, apr_size_t len,
                                   apr_size_t *signed_len,
                                   beacon_datagram_t *out);
int beacon_mac_matches(const char *buf, apr_size_t signed_len,
                       const beacon_key_t *key);
beacon_reason_t beacon_check_fields(const char *buf, apr_size_t signed_len,
                                    apr_time_t now, apr_interval_time_t max_skew,
                                    beacon_datagram_t *out);

/* The first svc= and url= values of a well-framed signed part (ptr NULL
 * when absent), unparsed and untrusted: read before the MAC. */
void beacon_first_tokens(const char *buf, apr_size_t signed_len,
                         beacon_span_t *svc, beacon_span_t *url);

/* A macro's value as a string literal, for static messages that name a
 * bound ("more than " BEACON_STR(BEACON_ALLOW_MAX_ENTRIES) " entries"). */
#define BEACON_STR_(x) #x
#define BEACON_STR(x) BEACON_STR_(x)

#endif /* BEACON_PRIVATE_H */
