/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The senders: every server with ProxyBeaconAddress announces its own
 * origin to every address of each proxy named, from a mod_watchdog
 * singleton per server.
 */
#ifndef MOD_PROXY_BEACON_SENDER_H
#define MOD_PROXY_BEACON_SENDER_H

#include "mod_proxy_beacon_config.h"
#include "mod_proxy_beacon_shm.h"

/* A sender as the status pages show it. */
typedef struct {
    server_rec *s;
    const beacon_server_conf *conf;
    const beacon_sender_status *shared;
    beacon_fanout_t *fanout;  /* a copy of the owner's names and addresses */
} beacon_sender_view;

/* The senders of server only (NULL: of every server), for the status
 * pages, allocated from p; returns how many. */
int beacon_sender_views(apr_pool_t *p, const server_rec *only,
                        beacon_sender_view **views);

/* Hooks (mod_proxy_beacon.c). */
apr_status_t beacon_sender_post_config(apr_pool_t *pconf, server_rec *s);
void beacon_sender_child_init(apr_pool_t *pchild);
void beacon_sender_child_stopping(apr_pool_t *pchild, int graceful);

#endif /* MOD_PROXY_BEACON_SENDER_H */
