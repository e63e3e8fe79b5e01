/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: all of a receiver's steps at once, datagram to table
 * (lib/beacon_table.c).
 */
#ifndef BEACON_RECEIVE_H
#define BEACON_RECEIVE_H

#include "beacon_common.h"
#include "beacon_key.h"
#include "beacon_reach.h"
#include "beacon_table.h"
#include "beacon_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* All receiver steps at once                                          */

typedef struct {
    beacon_datagram_t dg;
    char url[BEACON_URL_MAX]; /* canonical url; "" for a heartbeat */
    beacon_record_t *rec;     /* NULL for a heartbeat */
    beacon_action_t action;
    /* With BEACON_DROP_REPLAYED_TS: the ts is the one last accepted for
     * this url, so this is a second copy of that very announcement (a
     * proxy a sender reaches at two addresses, or the network), not a
     * replay of an older one. Still dropped. */
    int second_copy;
    /* With BEACON_DROP_URL_NOT_ALLOWED: why (beacon_reach_refusal's
     * message), and whether the balancer's list refused it (1) or the
     * receiver's (0). */
    const char *refusal;
    int refused_by_balancer;
} beacon_event_t;

/*
 * Steps 1 to 8 of the wire format for one datagram: beacon_verify, the
 * table's service (step 6, BEACON_DROP_WRONG_SERVICE, heartbeats too),
 * then (when a url is present) beacon_url_canonicalize, the reach gate
 * (BEACON_DROP_URL_NOT_ALLOWED, before the table: a refused url creates
 * no record and moves no mark) and beacon_table_accept.
 * A heartbeat (no url) gives BEACON_OK with ev->rec NULL and no action.
 * beacon_receive checks the default reach.
 */
beacon_reason_t beacon_receive(beacon_table_t *t, const beacon_key_t *key,
                               const char *buf, apr_size_t len, apr_time_t now,
                               beacon_event_t *ev);

/* beacon_receive accepting any of keys[0..nkeys), as beacon_verify_any,
 * with gate's reach (NULL: the defaults, no source). */
beacon_reason_t beacon_receive_any(beacon_table_t *t, const beacon_key_t *keys,
                                   unsigned nkeys, const char *buf,
                                   apr_size_t len, apr_time_t now,
                                   const beacon_reach_gate_t *gate,
                                   beacon_event_t *ev);

/*
 * Steps 7 and 8 for a datagram beacon_verify_ring passed, in ev->dg: its
 * url canonicalized, checked against gate (NULL: the defaults, no
 * source) and accepted into t, the table of the balancer that
 * ev->dg.service picks (t's own service is not checked: the ring did).
 * ev's other fields are set as beacon_receive sets them; a heartbeat
 * gives BEACON_OK with ev->rec NULL.
 */
beacon_reason_t beacon_receive_verified(beacon_table_t *t, apr_time_t now,
                                        const beacon_reach_gate_t *gate,
                                        beacon_event_t *ev);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_RECEIVE_H */
