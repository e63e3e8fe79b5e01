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

#include "mod_proxy_beacon_balancer.h"
#include "mod_proxy_beacon_config.h"
#include "mod_proxy_beacon_inbox.h"
#include "mod_proxy_beacon_shm.h"

typedef struct beacon_receiver beacon_receiver;
struct beacon_receiver {
    server_rec *s;
    beacon_server_conf *conf;
    const char *bind_host;     /* NULL: all addresses */
    apr_port_t bind_port;
    const char *label;         /* "addr:port" for log lines */
    beacon_receiver *next;

    /* in every child, from post_config on */
    apr_socket_t *sock;        /* the parent's socket, or NULL */
    beacon_balancer *target;     /* NULL in log-only mode */
    beacon_receiver_status *shared;

    /* in the watchdog owner only, from beacon_members_start on */
    apr_pool_t *pool;          /* lives as long as the owner serves */
    beacon_table_t *table;
    beacon_inbox *inbox;
    beacon_rate_limit drop_log[BEACON_DROP_COUNT];
    beacon_rate_limit second_copy_log; /* replayed_ts, the same ts again */
    beacon_rate_limit no_slot_log;
    beacon_rate_limit add_fail_log;
    beacon_status_record *peer;  /* host/pid/seq by table index */
    int *entry_hint;             /* registry entry by table index */
    apr_time_t kept;             /* the registry was last kept */
    int dirty;                   /* what changed since the last publish */
    apr_time_t published;        /* when the status copy was made */
};

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

#endif /* MOD_PROXY_BEACON_MEMBERS_H */
