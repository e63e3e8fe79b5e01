/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Reusing the growth slot of a member beacon took out of rotation long
 * ago for a new url, in place, with no restart (httpd 2.4.59 and later):
 * every child reads a member's name from shared memory on each request,
 * so renaming the slot moves it; what makes that safe is waiting until no
 * child can still hold a connection or a cached address of the old name.
 * See docs/operations.md for what an operator sees.
 */
#ifndef MOD_PROXY_BEACON_RECYCLE_H
#define MOD_PROXY_BEACON_RECYCLE_H

#include "mod_proxy_beacon_worker.h"

/*
 * The slots of balancer ws whose members registry reg lists.
 *
 * Under the balancer's locks: renames the best recyclable slot to tmpl,
 * httpd's reading of url with its params (beacon_worker_template; NULL:
 * none), as a new member gets them (the write-ahead entry first), and
 * returns it, still disabled; NULL when none is eligible now, with
 * *ready_at set when one may be later. *recycled (from p) names the url
 * that had the slot.
 */
beacon_slot *beacon_recycle_take(beacon_worker_balancer *ws,
                                 const beacon_registry *reg,
                                 const beacon_worker *tmpl, const char *url,
                                 apr_pool_t *p, const char **recycled,
                                 apr_time_t *ready_at);

/* Under the balancer's locks: finishes the renames an owner that died
 * left half done (registry entries still RECYCLING). */
void beacon_recycle_finish(beacon_worker_balancer *ws, const beacon_registry *reg,
                           const beacon_member_params *params, apr_pool_t *p);

/* In post_config (no child yet): finishes entry e's rename in its slot,
 * or just the entry when slot is NULL. */
void beacon_recycle_finish_entry(beacon_worker_balancer *ws,
                                 const beacon_registry *reg,
                                 const beacon_member_params *params,
                                 beacon_entry *e, beacon_slot *slot,
                                 apr_pool_t *p);

/* How many slots could be recycled now. */
int beacon_recycle_count(const beacon_worker_balancer *ws, const beacon_registry *reg,
                         apr_time_t now);

#endif /* MOD_PROXY_BEACON_RECYCLE_H */
