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

#define MARGIN apr_time_from_sec(1)

/* ------------------------------------------------------------------ */
/* The gates                                                           */

typedef enum { GATE_OPEN, GATE_WAIT, GATE_NEVER } gate_state;

/* G1's span: longer than a request elected before the slot left rotation
 * may still be connecting, and than a child may cache its address. No sum
 * here or in slot_gate can overflow: ProxyBeaconMemberParams bounds
 * connectiontimeout and acquire to an hour and timeout to a day
 * (mod_proxy_beacon_params.c), address_ttl is beacon's own 5 s, so
 * out_since + this span + twice the timeout is a wall-clock time at most
 * about 2 days and 2 hours ahead. */
static apr_interval_time_t quiet_span(const beacon_slot_view *v)
{
    apr_interval_time_t connecting = v->conn_timeout + v->acquire + MARGIN;
    apr_interval_time_t caching = v->address_ttl + MARGIN;

    return connecting > caching ? connecting : caching;
}

/* A slot that is beacon's to rename: a member beacon took out of
 * rotation, with nothing of the admin's on it, and nothing httpd keeps
 * outside the slot (health checks, a unix socket). */
static int is_candidate(const beacon_entry *e, const beacon_slot_view *v)
{
    return e->state == BEACON_ENTRY_MEMBER && e->out &&
           (v->status & BEACON_W_DISABLED) &&
           !(v->status & BEACON_ADMIN_FLAGS) && v->renamable;
}

/*
 * Whether e's slot, as v shows it, may be renamed at now; *ready_at, when
 * it waits, is when it may. G1's clock starts again when a request was
 * elected to the slot since it left rotation (the admin enabled it
 * meanwhile): the owner, under the balancer's locks, restarts it; others
 * only look.
 */
static gate_state slot_gate(beacon_entry *e, const beacon_slot_view *v,
                            apr_time_t now, int owner, apr_time_t *ready_at,
                            int *drift)
{
    apr_time_t quiet_until;

    *ready_at = 0;
    *drift = 0;
    if (!is_candidate(e, v) || v->expiry_unknown) {
        return GATE_NEVER; /* no way to tell when caches expire: never */
    }
    if (v->elected != e->elected_at_out) {
        if (!owner) {
            return GATE_WAIT; /* only the owner restarts the clock */
        }
        e->elected_at_out = v->elected;
        e->out_since = now;
    }
    quiet_until = e->out_since + quiet_span(v);
    if (now < quiet_until) {
        *ready_at = quiet_until;
        return GATE_WAIT;
    }
    if (v->busy > 0) {
        apr_time_t drift_after = quiet_until + 2 * v->timeout;

        if (now < drift_after) {
            *ready_at = drift_after;
            return GATE_WAIT;
        }
        *drift = 1;
    }
    if (now < v->addresses_expire_at) {
        *ready_at = v->addresses_expire_at;
        return GATE_WAIT;
    }
    return GATE_OPEN;
}

/* The slot of registry entry i when it is a member of the balancer named
 * name, with a look at it; NULL when it is not. */
static beacon_entry *slot_entry(const beacon_worker_balancer *ws,
                                const beacon_registry *reg, unsigned i,
                                const char *name, beacon_slot **slot,
                                beacon_slot_view *v)
{
    beacon_entry *e = beacon_registry_entry(reg, i);

    if (e == NULL || strcmp(e->balancer, name) != 0 ||
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

/* The best slot for url: open gates, another origin, silent longest. */
static beacon_entry *best_slot(const beacon_worker_balancer *ws,
                               const beacon_registry *reg,
                               const beacon_worker *tmpl, apr_time_t now,
                               apr_time_t *ready_at, int *drift)
{
    const char *name = beacon_worker_balancer_name(ws);
    beacon_entry *best = NULL;
    unsigned i;

    *ready_at = 0;
    for (i = 0; i < beacon_registry_size(reg); i++) {
        beacon_slot_view v;
        beacon_slot *slot;
        beacon_entry *e;
        apr_time_t ready;
        int stuck;

        if ((e = slot_entry(ws, reg, i, name, &slot, &v)) == NULL ||
            beacon_worker_same_origin(slot, tmpl)) {
            continue;
        }
        switch (slot_gate(e, &v, now, 1, &ready, &stuck)) {
        case GATE_OPEN:
            if (best == NULL || e->last_heard < best->last_heard) {
                best = e;
                *drift = stuck;
            }
            break;
        case GATE_WAIT:
            if (*ready_at == 0 || ready < *ready_at) {
                *ready_at = ready;
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
                                 const beacon_member_params *params,
                                 const char *url, apr_pool_t *p,
                                 const char **recycled, apr_time_t *ready_at)
{
    beacon_worker *tmpl;
    beacon_slot *slot;
    beacon_entry *e;
    int drift = 0;

    if (!beacon_worker_addresses_expire() ||
        (tmpl = beacon_worker_template(ws, params, url, p)) == NULL ||
        (e = best_slot(ws, reg, tmpl, apr_time_now(), ready_at, &drift)) == NULL) {
        return NULL;
    }
    slot = beacon_worker_slot(ws, e);
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
                     beacon_worker_balancer_name(ws), v.busy);
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
    const char *name = beacon_worker_balancer_name(ws);
    int n = 0;
    unsigned i;

    if (!beacon_worker_addresses_expire()) {
        return 0;
    }
    for (i = 0; i < beacon_registry_size(reg); i++) {
        beacon_slot_view v;
        beacon_slot *slot;
        beacon_entry *e;
        apr_time_t ready;
        int drift;

        if ((e = slot_entry(ws, reg, i, name, &slot, &v)) != NULL &&
            slot_gate(e, &v, now, 0, &ready, &drift) == GATE_OPEN) {
            n++;
        }
    }
    return n;
}
