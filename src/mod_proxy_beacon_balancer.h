/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Everything that touches mod_proxy and mod_proxy_balancer: adding,
 * enabling and disabling the members beacon manages, exactly as
 * balancer-manager does, and the ownership registry that says which
 * members those are.
 */
#ifndef MOD_PROXY_BEACON_BALANCER_H
#define MOD_PROXY_BEACON_BALANCER_H

#include "mod_proxy_beacon_util.h"

typedef enum {
    BEACON_ADD_DONE,          /* created, shared, initialized, confirmed */
    BEACON_ADD_ADOPTED,       /* existed already, created by beacon: enabled */
    BEACON_ADD_NOT_OURS,      /* a member beacon did not create */
    BEACON_ADD_NO_SLOT,       /* growth exhausted */
    BEACON_ADD_FAILED,        /* httpd refused; details logged */
    BEACON_ADD_NOT_CONFIRMED  /* added, but not found afterwards */
} beacon_add_result;

/* One receiver's balancer and registry. */
typedef struct beacon_target beacon_target;

/* A member of the balancer that beacon created, for adoption. */
typedef struct {
    const char *url;
    int disabled;
} beacon_member;

/* Whether mod_proxy's functions resolved (it was loaded before us). */
int beacon_proxy_linked(void);

/* Config-time check of the receiver's balancer; NULL or an error message. */
const char *beacon_proxy_check_balancer(apr_pool_t *p, server_rec *s,
                                        const char *name);

/*
 * What makes a configured balancer one balancer, at configuration time:
 * virtual hosts that inherit balancer://name share it (and get the same
 * value); one that defines its own gets another. NULL when undefined.
 */
const void *beacon_proxy_balancer_identity(apr_pool_t *p, server_rec *s,
                                           const char *name);

/* The growth slots the configuration gives the balancer (ProxySet growth,
 * BalancerGrowth); -1 when it is not defined. At configuration time. */
int beacon_proxy_configured_growth(apr_pool_t *p, server_rec *s,
                                   const char *name);

/* In post_config: the receiver's balancer and its registry of members. */
beacon_target *beacon_proxy_target(apr_pool_t *pconf, server_rec *s,
                                   const char *balancer_name, apr_port_t port);

/* In post_config, before any child exists: puts back the members the
 * persisted registry lists, so a restart loses none. Returns how many. */
int beacon_proxy_restore(beacon_target *t, apr_pool_t *p);

/* Picks up members other processes added, as a request would. */
void beacon_proxy_sync(beacon_target *t);

/* Adds url as a member, as balancer-manager does, under the balancer's
 * locks; or finds it there (adopted, or someone else's). On a failure,
 * *why (from p, or static) says what httpd refused, for the caller's log
 * line; NULL when the result says it all. */
beacon_add_result beacon_proxy_add(beacon_target *t, const char *url,
                                   apr_pool_t *p, const char **why);

/* Sets or clears the member's Disabled flag, nothing else; APR_NOTFOUND
 * when the member is gone or not beacon's. */
apr_status_t beacon_proxy_set_disabled(beacon_target *t, const char *url,
                                       int disabled);

/* Members carrying beacon's mark; returns how many were written. */
int beacon_proxy_marked_members(beacon_target *t, apr_pool_t *p,
                                beacon_member **members);

/* Growth of the balancer: slots in use by runtime members, and free. */
void beacon_proxy_growth(beacon_target *t, int *used, int *free_slots);

/* httpd's flag text for a member ("Init Ok "), or NULL when absent. */
const char *beacon_proxy_worker_flags(beacon_target *t, const char *url,
                                      apr_pool_t *p);

#endif /* MOD_PROXY_BEACON_BALANCER_H */
