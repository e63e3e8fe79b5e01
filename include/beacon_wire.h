/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: the wire format, both ends: a sender's announcements and
 * their sequencing, the leaving repeats, and a receiver's steps 1 to 5
 * (lib/beacon_wire.c; the fields' rules, lib/beacon_fields.c). The
 * contract is docs/wire-format.md.
 */
#ifndef BEACON_WIRE_H
#define BEACON_WIRE_H

#include "beacon_common.h"
#include "beacon_key.h"

#include <apr_time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A sender says state=leaving once, then BEACON_LEAVING_REPEATS times
 * more within the first second, each a new announcement (its own seq and
 * ts), so that one lost datagram does not keep a departed backend in
 * rotation. A receiver takes a repeat for a member already out of
 * rotation as nothing new. beacon_leaving_repeat_at(i) is when repeat i
 * (from 0) is due, counted from the first; 0 past the last.
 */
#define BEACON_LEAVING_REPEATS 3
apr_interval_time_t beacon_leaving_repeat_at(unsigned i);

/* How long a sender that said leaving first at first waits, at now,
 * before repeat i: 0 once it is due, and never longer than its offset
 * (a clock stepped back meanwhile does not hold the exit). */
apr_interval_time_t beacon_leaving_repeat_wait(apr_time_t first, unsigned i,
                                               apr_time_t now);

/* ------------------------------------------------------------------ */
/* Values                                                              */

/*
 * A plain decimal of 1 to BEACON_DECIMAL_MAX_DIGITS digits, no sign, no
 * space: the wire's ts, pid and seq, and every count a tool takes. Returns
 * 1 and sets *out, or 0 (out untouched) for anything else.
 */
int beacon_parse_decimal(const char *s, apr_size_t len, apr_int64_t *out);

/* ------------------------------------------------------------------ */
/* Sender                                                              */

typedef struct {
    const char *url;   /* origin, or NULL for a heartbeat without url */
    const char *host;  /* sender's host name, or NULL to omit */
    apr_int64_t pid;   /* sender's pid, or < 0 to omit */
    apr_int64_t seq;   /* counter, or < 0 to omit */
    apr_int64_t ts;    /* microseconds since the epoch, >= 0 */
    const char *state; /* a BEACON_STATE_* value, or NULL to omit */
    const char *svc;   /* the service it is meant for (v1.1), or NULL */
    const char *route; /* its route for sticky sessions (v1.1), or NULL */
    const char *lbfactor; /* its load factor (v1.1), or NULL */
    const char *ctx;   /* its contexts, "/shop,/cart" (v1.2), or NULL */
} beacon_announcement_t;

/* Whether name can be a service (svc=): 1 to BEACON_SERVICE_MAX bytes of
 * [A-Za-z0-9._-]. */
int beacon_service_is_valid(const char *name);

/* Whether route can be a member's route (route=): 1 to BEACON_ROUTE_MAX
 * bytes of [A-Za-z0-9._-]. */
int beacon_route_is_valid(const char *route);

/*
 * A load factor (lbfactor=) as the wire writes it, "1" to "100" with at
 * most two decimals ("2.5", "0.5" is too small): in hundredths
 * (BEACON_LBFACTOR_MIN to BEACON_LBFACTOR_MAX, as httpd keeps a member's
 * loadfactor), or -1 when it is not one.
 */
int beacon_lbfactor_parse(const char *s, apr_size_t len);

/* Whether v can be a field's value: non-empty, printable ASCII, no space. */
int beacon_value_is_valid(const char *v);

/*
 * Writes the signed datagram for a into buf (NUL-terminated) in the wire
 * order url, host, pid, seq, ts, svc, ctx, route, lbfactor, state, mac.
 * Returns its length, or -1 when a value is empty or holds a space or a
 * non-printable byte, svc, ctx, route, lbfactor or state breaks its rule
 * (beacon_service_is_valid, beacon_ctx_parse, beacon_route_is_valid,
 * beacon_lbfactor_parse, beacon_wire_state_parse), ts, pid or seq is above
 * BEACON_DECIMAL_MAX, or the datagram would exceed BEACON_MAX_DATAGRAM or
 * bufsize - 1.
 */
int beacon_format(char *buf, apr_size_t bufsize, const beacon_announcement_t *a,
                  const beacon_key_t *key);

/*
 * A sender's sequencing: seq counts from 0 with every announcement, and
 * ts is the wall clock, made strictly increasing (max(now, last + 1)) so
 * that a clock stepped back cannot make a receiver drop the sender as a
 * replay. Zero-initialize; one per stream of datagrams a receiver sees
 * (a sender that sends one datagram to several proxies may share one).
 *
 * shared_ts, when set, keeps the last ts instead of last_ts: memory that
 * outlives the sequence and that other sequences may share, at once or
 * one after another (shared memory of a parent process whose children
 * take turns sending), so that ts rises across all of them. It is read
 * and raised atomically.
 */
typedef struct {
    apr_int64_t next_seq;
    apr_int64_t last_ts;
    volatile apr_uint64_t *shared_ts;
} beacon_sequence_t;

/* Sets a->seq and a->ts for the next announcement, sent at now. */
void beacon_sequence_stamp(beacon_sequence_t *s, apr_time_t now,
                           beacon_announcement_t *a);

/* ------------------------------------------------------------------ */
/* Receiver: steps 1 to 5 of the wire format                           */

/* The service of a datagram that goes to the receiver's default (no
 * service, or a ring without services): beacon_datagram_t.service. */
#define BEACON_SERVICE_DEFAULT (-1)

typedef struct {
    beacon_span_t url, host, pid, seq, state, svc, route, lbfactor, ctx;
    apr_int64_t ts;
    beacon_span_t bad_field; /* BEACON_DROP_BAD_FIELD: the field's key */
    /* beacon_verify_ring's BEACON_DROP_REVOKED, BEACON_DROP_URL_NOT_CANONICAL,
     * and BEACON_DROP_MAC_MISMATCH under masters: the first svc= and url=
     * bytes, unverified (the member keys tried were derived for them);
     * ptr NULL when absent, and on any other outcome. */
    beacon_span_t unverified_svc, unverified_url;
    /* beacon_verify_ring: the index of the ring's service svc= names, or
     * BEACON_SERVICE_DEFAULT; always BEACON_SERVICE_DEFAULT otherwise. */
    int service;
    /* beacon_verify_ring, when a member key verified it: url is in
     * canonical form (checked before the MAC), so beacon_receive_verified
     * takes it as it is rather than canonicalizing it again. */
    int url_is_canonical;
} beacon_datagram_t;

/* What state= says. */
typedef enum {
    BEACON_WIRE_NONE = 0, /* no state=: a normal announcement */
    BEACON_WIRE_LEAVING,  /* state=leaving */
    BEACON_WIRE_DRAINING, /* state=draining: httpd's N flag */
    BEACON_WIRE_STANDBY   /* state=standby: httpd's H flag */
} beacon_wire_state_t;

/* The state a state= value names (s[0..len)), or -1 for any other value
 * (a verified datagram never has one: it is a bad field state). */
int beacon_wire_state_parse(const char *s, apr_size_t len);

/* "leaving", "draining", "standby"; "" for BEACON_WIRE_NONE. */
const char *beacon_wire_state_name(beacon_wire_state_t state);

/* The state a verified datagram announces. */
beacon_wire_state_t beacon_datagram_state(const beacon_datagram_t *dg);

/* Whether the datagram says state=leaving. */
int beacon_datagram_is_leaving(const beacon_datagram_t *dg);

/* An informational number (pid, seq) as announced, or -1 when absent or
 * not a plain decimal (the MAC vouches for the sender, not for its use
 * of the field). */
apr_int64_t beacon_span_number(const beacon_span_t *span);

/*
 * Checks buf[0..len) in the wire format's order: size, NUL, frame (at
 * most BEACON_MAX_FIELDS fields), MAC (constant time, before any field is
 * interpreted), duplicate fields, ts syntax, the values of the version 1.1
 * and 1.2 fields this version knows (svc, ctx, route, lbfactor, state, in
 * that order; out->bad_field names the first that is bad), and freshness (|ts - now| <= max_skew, both in microseconds).
 * On BEACON_OK, out's spans point into buf (which need not be
 * NUL-terminated); on a drop, out is unspecified but for bad_field.
 */
beacon_reason_t beacon_verify(const char *buf, apr_size_t len,
                              const beacon_key_t *key, apr_time_t now,
                              apr_interval_time_t max_skew,
                              beacon_datagram_t *out);

/*
 * beacon_verify with any of keys[0..nkeys) (1 to BEACON_MAX_KEYS), for key
 * rotation: a datagram passes if its MAC matches one of them. A forged
 * datagram costs one MAC per key.
 */
beacon_reason_t beacon_verify_any(const char *buf, apr_size_t len,
                                  const beacon_key_t *keys, unsigned nkeys,
                                  apr_time_t now, apr_interval_time_t max_skew,
                                  beacon_datagram_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_WIRE_H */
