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
/* httpd's Timeout when a worker has none of its own */
#define HTTPD_TIMEOUT apr_time_from_sec(60)

/* ------------------------------------------------------------------ */
/* The gates                                                           */

typedef enum { GATE_OPEN, GATE_WAIT, GATE_NEVER } gate_state;

static apr_interval_time_t worker_timeout(const proxy_worker_shared *shm)
{
    return shm->timeout_set ? shm->timeout : HTTPD_TIMEOUT;
}

/* G1's span: longer than a request elected before the slot left rotation
 * may still be connecting, and than a child may cache its address. No sum
 * here or in slot_gate can overflow: ProxyBeaconMemberParams bounds
 * connectiontimeout and acquire to an hour and timeout to a day
 * (mod_proxy_beacon_params.c), address_ttl is beacon's own 5 s, so
 * out_since + this span + twice the timeout is a wall-clock time at most
 * about 2 days and 2 hours ahead. */
static apr_interval_time_t quiet_span(const proxy_worker_shared *shm)
{
    apr_interval_time_t connecting =
        (shm->conn_timeout_set ? shm->conn_timeout : worker_timeout(shm)) +
        (shm->acquire_set ? shm->acquire : 0) + MARGIN;
    apr_interval_time_t caching = apr_time_from_sec(shm->address_ttl) + MARGIN;

    return connecting > caching ? connecting : caching;
}

/* A slot that is beacon's to rename: a member beacon took out of
 * rotation, with nothing of the admin's on it, and nothing httpd keeps
 * outside the slot (health checks, a unix socket). */
static int is_candidate(const beacon_entry *e, const proxy_worker_shared *shm)
{
    return e->state == BEACON_ENTRY_MEMBER && e->out &&
           (shm->status & PROXY_WORKER_DISABLED) &&
           !(shm->status & BEACON_ADMIN_FLAGS) && shm->uds_path[0] == '\0' &&
           shm->method == NONE &&
           (!shm->is_address_reusable || shm->address_ttl > 0);
}

/* mod_proxy's epoch of address expiries, or NULL when it keeps none. */
static const apr_time_t *expiry_epoch(void)
{
    return ap_retained_data_get("proxy_start_time");
}

/* G3: when every child's cached address has expired (wall clock); 0 for
 * a member whose address is resolved per request. */
static apr_time_t addresses_expire_at(const proxy_worker_shared *shm)
{
    if (!shm->is_address_reusable) {
        return 0; /* nothing cached */
    }
    return *expiry_epoch() +
           apr_time_from_sec((apr_time_t)shm->address_expiry + 1);
}

/*
 * Whether e's slot may be renamed at now; *ready_at, when it waits, is
 * when it may. G1's clock starts again when a request was elected to the
 * slot since it left rotation (the admin enabled it meanwhile): the
 * owner, under the balancer's locks, restarts it; others only look.
 */
static gate_state slot_gate(beacon_entry *e, const proxy_worker_shared *shm,
                            apr_time_t now, int owner, apr_time_t *ready_at,
                            int *drift)
{
    apr_time_t quiet_until, expire_at;

    *ready_at = 0;
    *drift = 0;
    if (!is_candidate(e, shm) ||
        (shm->is_address_reusable && expiry_epoch() == NULL)) {
        return GATE_NEVER; /* no way to tell when caches expire: never */
    }
    if (shm->elected != e->elected_at_out) {
        if (!owner) {
            return GATE_WAIT; /* only the owner restarts the clock */
        }
        e->elected_at_out = shm->elected;
        e->out_since = now;
    }
    quiet_until = e->out_since + quiet_span(shm);
    if (now < quiet_until) {
        *ready_at = quiet_until;
        return GATE_WAIT;
    }
    if (shm->busy > 0) {
        apr_time_t drift_after = quiet_until + 2 * worker_timeout(shm);

        if (now < drift_after) {
            *ready_at = drift_after;
            return GATE_WAIT;
        }
        *drift = 1;
    }
    expire_at = addresses_expire_at(shm);
    if (now < expire_at) {
        *ready_at = expire_at;
        return GATE_WAIT;
    }
    return GATE_OPEN;
}

/* ------------------------------------------------------------------ */
/* The rename                                                          */

/* Whether the slot's backend is at url's host and port: a pooled
 * connection to it would pass httpd's check whatever the scheme. */
static int same_origin(const proxy_worker_shared *a, const proxy_worker_shared *b)
{
    return a->port == b->port && strcasecmp(a->hostname_ex, b->hostname_ex) == 0;
}

/* httpd's reading of url (scheme, host, port), as a worker it pushes
 * nowhere, with what a new member gets (ProxyBeaconMemberParams); NULL
 * when httpd refuses it. */
static proxy_worker *template_of(const beacon_workers *ws,
                                 const beacon_member_params *params,
                                 const char *url, apr_pool_t *p)
{
    proxy_worker *tmpl = beacon_worker_template(p, url);

    if (tmpl != NULL) {
        beacon_params_apply(p, ws->s, params, tmpl);
    }
    return tmpl;
}

#define COPY_FIELD(dst, src, field) memcpy((dst)->field, (src)->field, sizeof((dst)->field))

/*
 * Writes the new name into the slot, field by field (the struct's size
 * differs between 2.4 releases), and clears what belonged to the old
 * member: its balancing counts, route, errors, and the admin's settings
 * (a new member starts as beacon adds one). Keeps the hash, index, TTLs,
 * timeouts and pool sizes, and Disabled.
 */
static void write_name(proxy_worker_shared *shm, const proxy_worker_shared *tmpl)
{
    COPY_FIELD(shm, tmpl, name_ex);
    COPY_FIELD(shm, tmpl, name);
    COPY_FIELD(shm, tmpl, scheme);
    COPY_FIELD(shm, tmpl, hostname_ex);
    COPY_FIELD(shm, tmpl, hostname);
    shm->port = tmpl->port;
    shm->uds_path[0] = shm->route[0] = shm->redirect[0] = '\0';
    shm->lbstatus = 0;
    shm->lbfactor = tmpl->lbfactor;
    shm->lbset = tmpl->lbset;
    shm->elected = shm->busy = 0;
    shm->transferred = shm->read = 0;
    shm->error_time = 0;
    shm->status &= ~(unsigned int)(PROXY_WORKER_IN_ERROR |
                                   PROXY_WORKER_HC_FAIL);
    shm->address_expiry = 0;
    shm->updated = apr_time_now();
}

/* Steps after the write-ahead: the slot, then the entry. */
static void complete(beacon_entry *e, proxy_worker_shared *shm,
                     const proxy_worker *tmpl)
{
    if (shm && tmpl) {
        write_name(shm, tmpl->s);
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

void beacon_recycle_finish_entry(const beacon_workers *ws,
                                 const beacon_registry *reg,
                                 const beacon_member_params *params,
                                 beacon_entry *e, proxy_worker_shared *shm,
                                 apr_pool_t *p)
{
    proxy_worker *tmpl = template_of(ws, params, e->next_url, p);

    beacon_registry_put_mark(reg, e); /* e->url is still the old one */
    e->out = 1; /* the new url's first announcement puts it in rotation */
    complete(e, tmpl ? shm : NULL, tmpl);
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ws->s, BCNLOGNO(00087)
                 "finished renaming a slot of %s to %s, left half done by "
                 "an owner that stopped", ws->b->s->name, e->url);
}

void beacon_recycle_finish(const beacon_workers *ws, const beacon_registry *reg,
                           const beacon_member_params *params, apr_pool_t *p)
{
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(reg, i);

        if (e && e->state == BEACON_ENTRY_RECYCLING &&
            strcmp(e->balancer, ws->b->s->name) == 0) {
            beacon_recycle_finish_entry(ws, reg, params, e,
                                        beacon_worker_slot(ws, e), p);
        }
    }
}

/* The best slot for url: open gates, another origin, silent longest. */
static beacon_entry *best_slot(const beacon_workers *ws,
                               const beacon_registry *reg,
                               const proxy_worker *tmpl, apr_time_t now,
                               apr_time_t *ready_at, int *drift)
{
    beacon_entry *best = NULL;
    unsigned i;

    *ready_at = 0;
    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(reg, i);
        proxy_worker_shared *shm;
        apr_time_t ready;
        int stuck;

        if (e == NULL || strcmp(e->balancer, ws->b->s->name) != 0 ||
            (shm = beacon_worker_slot(ws, e)) == NULL ||
            same_origin(shm, tmpl->s)) {
            continue;
        }
        switch (slot_gate(e, shm, now, 1, &ready, &stuck)) {
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

proxy_worker *beacon_recycle_take(const beacon_workers *ws,
                                  const beacon_registry *reg,
                                  const beacon_member_params *params,
                                  const char *url, apr_pool_t *p,
                                  const char **recycled, apr_time_t *ready_at)
{
    proxy_worker *tmpl, *w;
    proxy_worker_shared *shm;
    beacon_entry *e;
    int drift = 0;

    if (!beacon_worker_addresses_expire() ||
        (tmpl = template_of(ws, params, url, p)) == NULL ||
        (e = best_slot(ws, reg, tmpl, apr_time_now(), ready_at, &drift)) == NULL) {
        return NULL;
    }
    shm = beacon_worker_slot(ws, e);
    w = beacon_worker_find(ws, e->url);
    if (w == NULL || w->s != shm) {
        return NULL; /* not in this child's list: sync first (cannot be) */
    }
    if (drift) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ws->s, BCNLOGNO(00088)
                     "%s in %s counted %" APR_SIZE_T_FMT " busy requests "
                     "long after it left rotation (httpd's count drifts); "
                     "taken as none", e->url, ws->b->s->name, shm->busy);
    }
    *recycled = apr_pstrdup(p, e->url);
    /* the old url's replay mark outlives this owner: a replay of what it
     * sent must not bring it back into another slot */
    beacon_registry_put_mark(reg, e);
    /* write-ahead: an owner that dies from here on leaves the entry that
     * the next one finishes; the slot stays out of rotation until then */
    apr_cpystrn(e->next_url, url, sizeof(e->next_url));
    e->state = BEACON_ENTRY_RECYCLING;
    complete(e, shm, tmpl);
    return w;
}

int beacon_recycle_count(const beacon_workers *ws, const beacon_registry *reg,
                         apr_time_t now)
{
    int n = 0;
    unsigned i;

    if (!beacon_worker_addresses_expire()) {
        return 0;
    }
    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(reg, i);
        proxy_worker_shared *shm;
        apr_time_t ready;
        int drift;

        if (e && strcmp(e->balancer, ws->b->s->name) == 0 &&
            (shm = beacon_worker_slot(ws, e)) != NULL &&
            slot_gate(e, shm, now, 0, &ready, &drift) == GATE_OPEN) {
            n++;
        }
    }
    return n;
}
