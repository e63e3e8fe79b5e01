/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The receivers: every server with ProxyBeaconListen, served by one
 * mod_watchdog singleton thread in one child of each generation.
 */
#ifndef MOD_PROXY_BEACON_RECEIVER_H
#define MOD_PROXY_BEACON_RECEIVER_H

#include "mod_proxy_beacon_balancer.h"
#include "mod_proxy_beacon_config.h"
#include "mod_proxy_beacon_shm.h"

/* A receiver as the status pages show it. */
typedef struct {
    server_rec *s;
    const beacon_server_conf *conf;
    const char *label;                 /* listen address */
    const char *balancer;              /* bare name; NULL in log-only mode */
    const char *service;               /* NULL: the announcements without */
    const beacon_reach_t *allow;       /* its balancer's allow=, or NULL */
    int shares_listener;               /* other balancers listen with it */
    beacon_balancer *target;           /* NULL in log-only mode */
    const beacon_receiver_status *shared;
} beacon_receiver_view;

/*
 * Where the receiver of s listens: ProxyBeaconListen's parts, the missing
 * ones from the server's own address (a virtual host's, else the first
 * Listen). *host NULL is every address; *port 0, none known. Also for
 * check_config, which refuses a missing port and two receivers on one.
 */
void beacon_receiver_address(apr_pool_t *p, server_rec *s,
                             const beacon_server_conf *conf, const char **host,
                             apr_port_t *port);

/* "addr:port", "[v6]:port" or "*:port", for log lines. */
const char *beacon_receiver_label(apr_pool_t *p, const char *host,
                                  apr_port_t port);

/* The receivers of server only (NULL: of every server), for the status
 * pages; returns how many. */
int beacon_receiver_views(apr_pool_t *p, const server_rec *only,
                          beacon_receiver_view **views);

/* The bytes of shared memory the balancers of receiver conf take (their
 * status records, registries and claims), for check_config's bound. */
apr_size_t beacon_receiver_shm(const beacon_server_conf *conf);

/* Hooks (mod_proxy_beacon.c). */
apr_status_t beacon_receiver_post_config(apr_pool_t *pconf, server_rec *s);
void beacon_receiver_child_init(apr_pool_t *pchild);
void beacon_receiver_sync_all(void);

/* In post_config, after mod_slotmem_shm's: has the parent take what a
 * restart must give back once more as this generation ends (see
 * beacon_balancer_keep_at_stop). */
void beacon_receiver_keep_at_stop(apr_pool_t *pconf);

#endif /* MOD_PROXY_BEACON_RECEIVER_H */
