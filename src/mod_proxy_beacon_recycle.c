/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Slot recycling; see mod_proxy_beacon_recycle.h.
 *
 * Why a rename is safe once the gates hold (httpd 2.4.59 and later): a
 * request builds its backend url from the slot's shared name_ex, so every
 * child follows a rename at once, and a pooled connection whose host or
 * port differ from the url's is closed before use. What a child keeps of
 * the old name is its cached address, until the shared address_expiry,
 * and requests elected before the slot left rotation, bounded by the
 * connect and acquire timeouts set when the member was added. So a slot
 * is renamed only when
 *   G1  it has been out of rotation for longer than those bounds, and no
 *       request was elected to it since (httpd's elected count),
 *   G2  no request is busy on it (busy, which httpd 2.4 counts without
 *       locks and can leave stuck: past twice the worker's timeout it is
 *       taken as drift, logged, and reset),
 *   G3  every child's cached address has expired,
 * checked on each try and again under the balancer's locks.
 */

#include "mod_proxy_beacon_recycle.h"

#include <apr_strings.h>

/* ------------------------------------------------------------------ */
/* The gates (their rule is beacon_decide_recycle_gate's)              */

/* The gate of e's slot as v shows it at now, to the owner, which
 * restarts G1's clock when the gate says so (under the balancer's
 * locks). */
static void owner_gate(beacon_entry *e, const beacon_slot_view *v,
                       apr_time_t now, beacon_gate *g)
{
    beacon_decide_recycle_gate(e, v, now, 1, g);
    if (g->restart) {
        e->elected_at_out = v->elected;
        e->out_since = now;
    }
}

/* The slot of registry entry i when it is a member of balancer ws, with
 * a look at it; NULL when it is not. */
static beacon_entry *slot_entry(const beacon_worker_balancer *ws,
                                const beacon_registry *reg, unsigned i,
                                beacon_slot **slot, beacon_slot_view *v)
{
    beacon_entry *e = beacon_registry_entry(reg, i);

    if (e == NULL || strcmp(e->balancer, beacon_worker_balancer_name(ws)) != 0 ||
        (*slot = beacon_worker_slot(ws, e)) == NULL) {
        return NULL;
    }
    beacon_worker_view(*slot, v);
    return e;
}

/* ------------------------------------------------------------------ */
/* The rename                                                          */

/* Steps after the write-ahead: the slot, then the entry. */
static void complete(beacon_worker_balancer *ws, beacon_entry *e,
                     beacon_slot *slot, const beacon_worker *tmpl)
{
    if (slot && tmpl) {
        beacon_worker_rename(ws, slot, tmpl);
    }
    memcpy(e->url, e->next_url, sizeof(e->url));
    e->next_url[0] = '\0';
    e->high_ts = 0;
    e->forgotten = 0;
    e->last_heard = apr_time_now();
    memset(&e->admin, 0, sizeof(e->admin));
    e->route_refused_at = 0;
    e->lbfactor_changed_at = e->ramp_since = 0;
    e->ramp_base = 0;
    e->state = BEACON_ENTRY_MEMBER;
}

void beacon_recycle_finish_entry(beacon_worker_balancer *ws,
                                 const beacon_registry *reg,
                                 const beacon_member_params *params,
                                 beacon_entry *e, beacon_slot *slot,
                                 apr_pool_t *p)
{
    beacon_worker *tmpl = beacon_worker_template(ws, params, e->next_url, p);

    beacon_registry_put_mark(reg, e); /* e->url is still the old one */
    e->out = 1; /* the new url's first announcement puts it in rotation */
    complete(ws, e, tmpl ? slot : NULL, tmpl);
    beacon_registry_renamed(reg);
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, beacon_worker_server(ws),
                 BCNLOGNO(00087) "finished renaming a slot of %s to %s, "
                 "left half done by an owner that stopped",
                 beacon_worker_balancer_name(ws), e->url);
}

void beacon_recycle_finish(beacon_worker_balancer *ws, const beacon_registry *reg,
                           const beacon_member_params *params, apr_pool_t *p)
{
    const char *name = beacon_worker_balancer_name(ws);
    unsigned i;

    for (i = 0; i < beacon_registry_size(reg); i++) {
        beacon_entry *e = beacon_registry_entry(reg, i);

        if (e && e->state == BEACON_ENTRY_RECYCLING &&
            strcmp(e->balancer, name) == 0) {
            beacon_recycle_finish_entry(ws, reg, params, e,
                                        beacon_worker_slot(ws, e), p);
        }
    }
}

/* The best slot for url: open gates, another origin, silent longest;
 * its entry, and the slot in *best_slot. */
static beacon_entry *best_slot(const beacon_worker_balancer *ws,
                               const beacon_registry *reg,
                               const beacon_worker *tmpl, apr_time_t now,
                               beacon_slot **best_slot, apr_time_t *ready_at,
                               int *drift)
{
    beacon_entry *best = NULL;
    unsigned i;

    *ready_at = 0;
    for (i = 0; i < beacon_registry_size(reg); i++) {
        beacon_slot_view v;
        beacon_slot *slot;
        beacon_entry *e;
        beacon_gate g;

        if ((e = slot_entry(ws, reg, i, &slot, &v)) == NULL ||
            beacon_worker_same_origin(slot, tmpl)) {
            continue;
        }
        owner_gate(e, &v, now, &g);
        switch (g.state) {
        case BEACON_GATE_OPEN:
            if (best == NULL || e->last_heard < best->last_heard) {
                best = e;
                *best_slot = slot;
                *drift = g.drift;
            }
            break;
        case BEACON_GATE_WAIT:
            if (*ready_at == 0 || g.ready_at < *ready_at) {
                *ready_at = g.ready_at;
            }
            break;
        default:
            break;
        }
    }
    return best;
}

beacon_slot *beacon_recycle_take(beacon_worker_balancer *ws,
                                 const beacon_registry *reg,
                                 const beacon_worker *tmpl, const char *url,
                                 apr_pool_t *p, const char **recycled,
                                 apr_time_t *ready_at)
{
    beacon_slot *slot = NULL;
    beacon_entry *e;
    int drift = 0;

    if (!beacon_worker_addresses_expire() || tmpl == NULL ||
        (e = best_slot(ws, reg, tmpl, apr_time_now(), &slot, ready_at,
                       &drift)) == NULL) {
        return NULL;
    }
    if (beacon_worker_find(ws, e->url) != slot) {
        return NULL; /* not in this child's list: sync first (cannot be) */
    }
    if (drift) {
        beacon_slot_view v;

        beacon_worker_view(slot, &v);
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, beacon_worker_server(ws),
                     BCNLOGNO(00088) "%s in %s counted %" APR_SIZE_T_FMT
                     " busy requests long after it left rotation (httpd's "
                     "count drifts); taken as none", e->url,
                     e->balancer, v.busy);
    }
    *recycled = apr_pstrdup(p, e->url);
    /* the old url's replay mark outlives this owner: a replay of what it
     * sent must not bring it back into another slot */
    beacon_registry_put_mark(reg, e);
    /* write-ahead: an owner that dies from here on leaves the entry that
     * the next one finishes; the slot stays out of rotation until then */
    apr_cpystrn(e->next_url, url, sizeof(e->next_url));
    e->state = BEACON_ENTRY_RECYCLING;
    complete(ws, e, slot, tmpl);
    beacon_registry_renamed(reg);
    return slot;
}

int beacon_recycle_count(const beacon_worker_balancer *ws, const beacon_registry *reg,
                         apr_time_t now)
{
    int n = 0;
    unsigned i;

    if (!beacon_worker_addresses_expire()) {
        return 0;
    }
    for (i = 0; i < beacon_registry_size(reg); i++) {
        beacon_slot_view v;
        beacon_slot *slot;
        beacon_entry *e;
        beacon_gate g;

        if ((e = slot_entry(ws, reg, i, &slot, &v)) == NULL) {
            continue;
        }
        beacon_decide_recycle_gate(e, &v, now, 0, &g);
        n += g.state == BEACON_GATE_OPEN;
    }
    return n;
}
