/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * One receiver and its members: libbeacon's lease table decides, this
 * file carries the decisions out on the balancer (add, re-enable, take
 * out of rotation), counts and logs them, and publishes the table for the
 * status pages. It runs in the child that owns the watchdog; the
 * receiver's lifecycle (sockets, ownership, the loop) is
 * mod_proxy_beacon_receiver.c's.
 */
#ifndef MOD_PROXY_BEACON_MEMBERS_H
#define MOD_PROXY_BEACON_MEMBERS_H

#include "mod_proxy_beacon_receiver_rec.h"

/*
 * The owner's state for r, from pool (which must outlive the serving
 * loop), and the balancer's beacon members adopted with fresh leases from
 * now: a new owner (hand-off, restart) takes over what the last one
 * added. p is for temporary memory.
 */
void beacon_members_start(beacon_receiver *r, apr_pool_t *pool,
                          apr_time_t now, apr_pool_t *p);

/* A beacon_datagram_fn: the receiver's steps of the wire format
 * (beacon_receive_any), then the action on the balancer. ctx is the
 * receiver. */
void beacon_members_handle(void *ctx, const char *buf, apr_size_t len,
                           const struct sockaddr *peer, socklen_t peer_len,
                           apr_pool_t *scratch);

/* Takes members whose lease lapsed out of rotation, forgets long-silent
 * records, keeps what a restart needs in the registry, and publishes what
 * changed for the status pages. p is for temporary memory. */
void beacon_members_tick(beacon_receiver *r, apr_time_t now, apr_pool_t *p);

/* When the loop must wake for r next: its listener's route table waits
 * for a rebuild until then; 0: nothing waits. */
apr_time_t beacon_members_due(const beacon_receiver *r);

#endif /* MOD_PROXY_BEACON_MEMBERS_H */
