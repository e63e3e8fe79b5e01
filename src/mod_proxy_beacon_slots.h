/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Reserved slots (ProxyBeaconBalancer slots=N): N placeholder members that
 * beacon defines in the balancer at configuration time, so that it holds
 * more announced members than httpd's growth (at most 100) allows. Each
 * is named http://slot-K.beacon.invalid, a name that never resolves
 * (RFC 6761), and is out of rotation. An announced url takes a free one
 * by renaming it in place, as recycling renames a member's slot; a
 * placeholder never served, so none of recycling's gates applies. Every
 * child has the placeholders in its member list from the configuration,
 * so a rename needs no child to sync. Once taken, a slot is a member like
 * one in a growth slot, and is recycled like one once its member leaves.
 * No announced url may be named like a placeholder: libbeacon's reach
 * refuses every host under beacon.invalid (beacon_url_is_reserved).
 */
#ifndef MOD_PROXY_BEACON_SLOTS_H
#define MOD_PROXY_BEACON_SLOTS_H

#include "mod_proxy_beacon_worker.h"

/* In post_config, before mod_proxy_balancer's: the n reserved slots of
 * balancer://name in s. NULL, or why not (from p). */
const char *beacon_slots_define(apr_pool_t *p, server_rec *s, const char *name,
                                int n, const beacon_member_params *params);

/* Whether a member's name is a placeholder's: a free reserved slot. */
int beacon_slots_is_placeholder(const char *name);

/* One balancer's reserved slots, as this process knows them. */
typedef struct beacon_slots_reserved beacon_slots_reserved;

/* In post_config: the n reserved slots of ws, indexed. */
beacon_slots_reserved *beacon_slots_open(apr_pool_t *pconf,
                                         beacon_worker_balancer *ws, int n);

/*
 * Indexes the free reserved slots of this child's member list anew (a
 * walk of it), under the balancer's locks. Only the receiver's owner
 * takes slots, so the index it built when it became the owner stays
 * true for as long as it is; a take costs no walk.
 */
void beacon_slots_index(beacon_slots_reserved *rs);

/* Free reserved slots, as the index has them. */
int beacon_slots_free(const beacon_slots_reserved *rs);

/* A free reserved slot renamed to tmpl, httpd's reading of url with
 * its params (beacon_worker_template), still out of rotation; NULL when
 * none is free. Under the balancer's locks. */
beacon_slot *beacon_slots_take(beacon_slots_reserved *rs,
                               const beacon_worker *tmpl, const char *url,
                               apr_pool_t *p);

/* Reserved slot slot, when it is a free placeholder, renamed to tmpl (as
 * in beacon_slots_take): a restart gives a member back the slot it had.
 * Returns whether it was taken. */
int beacon_slots_take_this(beacon_slots_reserved *rs, beacon_slot *slot,
                           const beacon_worker *tmpl, const char *url,
                           apr_pool_t *p);

/* In post_config (no child yet): e's slot, when it is a reserved one,
 * made a placeholder again, out of rotation (a restart drops e's member);
 * 0 when e has no reserved slot. */
int beacon_slots_give_back(beacon_slots_reserved *rs, const beacon_entry *e,
                           apr_pool_t *p);

/* For the views: the slots reserved, and how many of them are free (a
 * walk of this child's member list, under its thread lock: never from a
 * thread that holds it). */
void beacon_slots_count(const beacon_slots_reserved *rs, int *reserved, int *free_slots);

#endif /* MOD_PROXY_BEACON_SLOTS_H */
