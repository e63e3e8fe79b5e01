/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What a restart gives back: the owner keeps the admin's settings of
 * beacon's members in the registry once a second, marks the long-silent
 * ones forgotten and drops stale replay marks; the parent takes the
 * settings once more at the stop itself, and, before any child of the new
 * generation exists, puts every member back as it was.
 *
 * Each function works on the members registry reg lists in balancer ws.
 */
#ifndef MOD_PROXY_BEACON_RESTORE_H
#define MOD_PROXY_BEACON_RESTORE_H

#include "mod_proxy_beacon_recycle.h"
#include "mod_proxy_beacon_slots.h"

/* How a receiver's members live and die (its directives). */
typedef struct {
    apr_interval_time_t timeout;  /* lease; 0 = never evict */
    apr_interval_time_t forget;   /* silence after which it is forgotten */
    apr_interval_time_t replay_span; /* 2 x MaxSkew: a replay mark's life */
    const beacon_member_params *params; /* ProxyBeaconMemberParams */
    int slots;                    /* slots=: member slots reserved */
    unsigned entries;             /* the registry's: the receiver's capacity */
    beacon_reach_gate_t reach;    /* ProxyBeaconAllow and allow= (no source):
                                   * a member they refuse is not restored */
    const beacon_allow_t *contexts; /* contexts=, or NULL: a restored claim
                                   * keeps only the contexts it allows */
    apr_interval_time_t slowstart; /* ProxyBeaconSlowStart, slowstart=;
                                   * 0: none */
    const beacon_ring_t *ring;    /* the receiver's keys, and its revoked
                                   * urls: a revoked member is not restored */
    int ring_set;                 /* the balancer's key set in ring */
} beacon_member_policy;

/*
 * In post_config, before any child exists: puts back the members the
 * persisted registry lists as they were when httpd stopped (in rotation
 * or out, with the admin's settings: httpd's downtime is no lapsed lease;
 * the new owner gives each a fresh one), and forgets those silent past
 * the policy's forget, downtime included. A member goes back into its
 * own slot when it is there still, else into a reserved slot (slots),
 * else into a growth slot. Returns how many were restored; *forgotten
 * says how many were forgotten. A new generation without BalancerPersist
 * has lost the maxattempts beacon wrote: the registry forgets it too.
 */
int beacon_restore_members(beacon_worker_balancer *ws, const beacon_registry *reg,
                           const beacon_member_policy *policy,
                           beacon_slots_reserved *slots, apr_pool_t *p, int *forgotten);

/* Once a second in the owner: keeps the admin's settings of beacon's
 * members, marks those silent past forget (returned: how many were
 * newly forgotten; each logged), and drops stale replay marks. */
int beacon_restore_keep(const beacon_worker_balancer *ws, const beacon_registry *reg,
                        const beacon_member_policy *policy, apr_time_t now,
                        apr_pool_t *p);

/* In the parent, as the generation ends (graceful, restart, stop), before
 * the balancer's and the registry's shared memory go: keeps the admin's
 * settings and what backends announced, as they are at that moment, so
 * that no edit of the last second is lost. Allocates and logs nothing. */
void beacon_restore_keep_at_stop(const beacon_worker_balancer *ws,
                                 const beacon_registry *reg);

/* A member of the balancer that beacon created, for adoption; or a url
 * whose slot went to another (gone), of which only the replay mark is
 * left. */
typedef struct {
    const char *url;
    int disabled;
    int gone;
    apr_int64_t high_ts;    /* its replay mark, kept across owners */
    apr_time_t last_heard;  /* gone: when the mark was taken */
} beacon_member;

/*
 * A new owner takes the registry over, under the balancer's locks (held
 * by the caller): it finishes a rename another owner left half done,
 * indexes the slots, and writes into *members (from p) the members
 * carrying beacon's mark and the replay marks of urls whose slot went to
 * another; returns how many.
 */
int beacon_restore_take_over(beacon_worker_balancer *ws, const beacon_registry *reg,
                             const beacon_member_policy *policy,
                             beacon_slots_reserved *slots, apr_pool_t *p,
                             beacon_member **members);

#endif /* MOD_PROXY_BEACON_RESTORE_H */
