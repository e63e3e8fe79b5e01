/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Beacon's policy on one receiver's balancer: adding, adopting, enabling
 * and disabling the members beacon manages, exactly as balancer-manager
 * does, what their backends announce of themselves, and the registry
 * that says which members those are and what a restart gives back. The
 * one face of the balancer wing to the parts above it.
 */
#ifndef MOD_PROXY_BEACON_BALANCER_H
#define MOD_PROXY_BEACON_BALANCER_H

#include "mod_proxy_beacon_restore.h"


/* One receiver's balancer and registry. */
typedef struct beacon_balancer beacon_balancer;


/* What an add says besides its result. */
typedef struct {
    const char *why;        /* a failure: what httpd refused (from p) */
    const char *recycled;   /* RECYCLED: the url whose slot it took */
    apr_time_t ready_at;    /* NO_SLOT: when a slot may be recyclable; 0 */
} beacon_add_info;

/* In post_config: the receiver's balancer and its registry of members;
 * registry_key names the receiver (virtual host, bind address). */
beacon_balancer *beacon_balancer_open(apr_pool_t *pconf, server_rec *s,
                                      const char *balancer_name,
                                      const char *registry_key,
                                      const beacon_member_policy *policy);

/* What a restart gives back (mod_proxy_beacon_restore.h): in post_config,
 * the members put back (returned: how many; *forgotten, how many were
 * forgotten instead), with httpd's failover count for them. */
int beacon_balancer_restore(beacon_balancer *t, apr_pool_t *p, int *forgotten);

/* Picks up members other processes added, as a request would. */
void beacon_balancer_sync(beacon_balancer *t);

/* An accepted announcement, as the receiver's member table decided it. */
typedef struct {
    const char *url;
    beacon_action_t action;           /* what the table asks of the member */
    apr_int64_t ts;                   /* its replay mark */
    const beacon_member_attrs *attrs; /* what it announces of itself */
    int *hint;                        /* where its registry entry is
                                       * (start with -1) */
} beacon_announcement;

/* What came of it, for the receiver's log lines. */
typedef struct {
    beacon_add_result added;  /* BEACON_ACT_ADD */
    beacon_add_info info;     /* BEACON_ACT_ADD */
    apr_status_t changed;     /* ENABLE, DISABLE: APR_NOTFOUND when the
                               * member is gone or not beacon's */
    int claims_changed;       /* the member's claimed contexts changed */
} beacon_outcome;

/*
 * Does what an accepted announcement asks, under the balancer's locks:
 *  - ADD: adds url as a member, as balancer-manager does: in a free growth
 *    slot, else in the slot of the longest-silent member beacon took out
 *    of rotation once it is safe to rename (mod_proxy_beacon_recycle.c);
 *    or finds it there (adopted, or someone else's);
 *  - ENABLE, DISABLE: beacon_balancer_set_disabled;
 * and, whatever it asks, keeps the member's last-heard time and replay
 * mark for a restart or a new owner, and its claimed contexts (attrs
 * claims), and applies its route, load factor and state when they differ
 * from the member's (logged).
 */
void beacon_balancer_announced(beacon_balancer *t,
                               const beacon_announcement *a, apr_time_t now,
                               apr_pool_t *p, beacon_outcome *out);

/* Once a second in the owner: beacon_restore_keep. */
int beacon_balancer_keep(beacon_balancer *t, apr_time_t now, apr_pool_t *p);

/* In the parent, as the generation ends: beacon_restore_keep_at_stop. */
void beacon_balancer_keep_at_stop(beacon_balancer *t);

/* Sets or clears the member's Disabled flag, nothing else of the admin's
 * (out of rotation, it loses what an announced state set); APR_NOTFOUND
 * when the member is gone or not beacon's. hint: where its registry
 * entry is (as in beacon_announcement). */
apr_status_t beacon_balancer_set_disabled(beacon_balancer *t, const char *url,
                                          int disabled, int *hint);

/* Members carrying beacon's mark, and the replay marks of urls whose
 * slot went to another (gone); returns how many were written. */
int beacon_balancer_marked_members(beacon_balancer *t, apr_pool_t *p,
                                   beacon_member **members);

/* The members of t's balancer that claim contexts
 * (beacon_registry_claims_in). */
int beacon_balancer_claims(const beacon_balancer *t, apr_pool_t *p,
                           beacon_claim **claims);

/* Growth of the balancer: slots in use by runtime members, free, and
 * held by members whose slot could be recycled now. */
void beacon_balancer_growth(beacon_balancer *t, int *used, int *free_slots,
                            int *recyclable);

/* Reserved slots of the balancer (slots=), and how many are free. */
void beacon_balancer_reserved(const beacon_balancer *t, int *reserved,
                              int *free_slots);

/* Every member as a status page shows it (beacon_member_shown), by url:
 * httpd's flags, the factor in force, and a slow start under way. */
apr_hash_t *beacon_balancer_members_shown(beacon_balancer *t, apr_pool_t *p);

#endif /* MOD_PROXY_BEACON_BALANCER_H */
