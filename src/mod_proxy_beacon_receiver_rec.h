/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * One receiver: what mod_proxy_beacon_receiver.c sets up (its address,
 * socket, balancer and status copy) and mod_proxy_beacon_members.c works
 * on in the watchdog owner (its lease table, rate limits and records).
 * A header of its own, below both, so that neither includes the other's
 * header back up: _receiver calls _members, never the other way.
 */
#ifndef MOD_PROXY_BEACON_RECEIVER_REC_H
#define MOD_PROXY_BEACON_RECEIVER_REC_H

#include "mod_proxy_beacon_balancer.h"
#include "mod_proxy_beacon_config.h"
#include "mod_proxy_beacon_inbox.h"
#include "mod_proxy_beacon_routes.h"
#include "mod_proxy_beacon_shm.h"

/*
 * A receiver is one balancer of a listener (one ProxyBeaconBalancer line;
 * a listener in log-only mode has one receiver without a balancer). The
 * receivers of one listener share its socket and key ring, which the
 * first of them, the listener itself, holds; each has its own lease
 * table, registry and status copy, so that a member is a (service, url)
 * pair.
 */
typedef struct beacon_receiver beacon_receiver;
struct beacon_receiver {
    server_rec *s;
    beacon_server_conf *conf;
    const beacon_balancer_conf *bal; /* NULL in log-only mode */
    const char *service;       /* its service (beacon_config_balancer_service) */
    const char *bind_host;     /* NULL: all addresses */
    apr_port_t bind_port;
    const char *label;         /* "addr:port" for log lines */
    beacon_receiver *next;
    beacon_receiver *listener; /* the first receiver of its listener */

    /* the listener only, from post_config on */
    beacon_receiver **lanes;   /* its receivers, in configuration order */
    int nlanes;
    beacon_ring_t *ring;       /* the keys, by service */
    int *lane_of;              /* the receiver of ring service k */
    int default_lane;          /* the one without a service, or -1 */
    beacon_route_table *routes;     /* its contexts' routes; NULL: none */

    /* in every child, from post_config on */
    apr_socket_t *sock;        /* the parent's socket, or NULL */
    beacon_balancer *target;   /* NULL in log-only mode */
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
    int routes_dirty;            /* listener: claims changed since its rebuild */
    apr_time_t routes_due;       /* listener: no rebuild before this */
    apr_time_t published;        /* when the status copy was made */
};

#endif /* MOD_PROXY_BEACON_RECEIVER_REC_H */
