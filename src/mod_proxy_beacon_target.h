/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Inside the balancer adapter: what mod_proxy_beacon_balancer.c and
 * mod_proxy_beacon_recycle.c share. Nothing else includes this.
 */
#ifndef MOD_PROXY_BEACON_TARGET_H
#define MOD_PROXY_BEACON_TARGET_H

#include "mod_proxy_beacon_balancer.h"
#include "mod_proxy_beacon_registry.h"

#include <mod_proxy.h>

struct beacon_target {
    server_rec *s;
    proxy_server_conf *conf;
    proxy_balancer *b;
    int manage_max_attempts; /* the admin left maxattempts unset */
    beacon_registry *registry;
    beacon_member_policy policy;
};

/* The flags balancer-manager gives the admin; Disabled is beacon's. */
#define BEACON_ADMIN_FLAGS                                                  \
    (PROXY_WORKER_STOPPED | PROXY_WORKER_DRAIN | PROXY_WORKER_HOT_STANDBY | \
     PROXY_WORKER_HOT_SPARE | PROXY_WORKER_IGNORE_ERRORS)

/* balancer-manager's order: the thread lock, then the global lock;
 * logged when one fails. */
apr_status_t beacon_target_lock(beacon_target *t);
void beacon_target_unlock(beacon_target *t);

/* This child's worker named url (canonical comparison), or NULL. */
proxy_worker *beacon_target_find(const beacon_target *t, const char *url);

/* The shared slot entry e names, when it still holds e's member (same
 * salted hash), else NULL. */
proxy_worker_shared *beacon_target_slot(const beacon_target *t,
                                        const beacon_entry *e);

/* Sets or clears Disabled, and nothing else, of a shared status word. */
void beacon_target_set_disabled_flag(proxy_worker_shared *shm, int disabled);

#endif /* MOD_PROXY_BEACON_TARGET_H */
