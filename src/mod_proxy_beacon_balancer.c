/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The balancer side of the adapter (see mod_proxy_beacon_balancer.h).
 *
 * mod_proxy's functions are weak references, resolved when this DSO is
 * loaded: a backend that only sends loads the module without mod_proxy,
 * and a receiver whose mod_proxy is missing (or loaded after us) is told
 * so at configuration time instead of failing to start with "undefined
 * symbol".
 */

#include "mod_proxy_beacon_balancer.h"
#include "mod_proxy_beacon_recycle.h"
#include "mod_proxy_beacon_target.h"

#include <apr_strings.h>
#include <ap_provider.h>
#include <ap_slotmem.h>
#include <mod_proxy.h>

#pragma weak proxy_module
#pragma weak ap_proxy_get_balancer
#pragma weak ap_proxy_sync_balancer
#pragma weak ap_proxy_define_worker_ex
#pragma weak ap_proxy_share_worker
#pragma weak ap_proxy_initialize_worker
#pragma weak ap_proxy_parse_wstatus
#pragma weak ap_proxy_hashfunc

int beacon_proxy_linked(void)
{
    return &proxy_module != NULL && ap_proxy_get_balancer != NULL &&
           ap_proxy_sync_balancer != NULL && ap_proxy_define_worker_ex != NULL &&
           ap_proxy_share_worker != NULL && ap_proxy_initialize_worker != NULL &&
           ap_proxy_parse_wstatus != NULL && ap_proxy_hashfunc != NULL;
}

int beacon_proxy_can_recycle(void)
{
    return beacon_target_addresses_expire();
}

static proxy_server_conf *proxy_conf(server_rec *s)
{
    return ap_get_module_config(s->module_config, &proxy_module);
}

static const char *balancer_url(apr_pool_t *p, const char *name)
{
    return apr_pstrcat(p, BALANCER_PREFIX, name, NULL);
}

const char *beacon_proxy_check_balancer(apr_pool_t *p, server_rec *s,
                                        const char *name)
{
    if (ap_proxy_get_balancer(p, proxy_conf(s), balancer_url(p, name), 0)) {
        return NULL;
    }
    return apr_psprintf(p, "ProxyBeaconBalancer: balancer://%s is not defined "
                        "in this server (define it with <Proxy balancer://%s> "
                        "or ProxyPass)", name, name);
}

int beacon_proxy_configured_growth(apr_pool_t *p, server_rec *s,
                                   const char *name)
{
    proxy_balancer *b = ap_proxy_get_balancer(p, proxy_conf(s),
                                              balancer_url(p, name), 0);

    return b ? b->growth : -1;
}

const void *beacon_proxy_balancer_identity(apr_pool_t *p, server_rec *s,
                                           const char *name)
{
    proxy_balancer *b = ap_proxy_get_balancer(p, proxy_conf(s),
                                              balancer_url(p, name), 0);

    /* a virtual host's copy of an inherited balancer shares its state */
    return b ? (const void *)b->s : NULL;
}

/* Whether beacon created url in this balancer. */
static int ours(const beacon_target *t, const char *url)
{
    return beacon_target_entry(t, url) != NULL;
}

beacon_target *beacon_proxy_target(apr_pool_t *pconf, server_rec *s,
                                   const char *balancer_name,
                                   const char *registry_key,
                                   const beacon_member_policy *policy)
{
    beacon_target *t = apr_pcalloc(pconf, sizeof(*t));
    beacon_registry_header *header;

    t->s = s;
    t->conf = proxy_conf(s);
    t->b = ap_proxy_get_balancer(pconf, t->conf,
                                 balancer_url(pconf, balancer_name), 0);
    if (t->b == NULL || t->b->s == NULL || t->b->wslot == NULL) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00006)
                     "balancer://%s has no shared memory yet: is "
                     "mod_proxy_balancer loaded?", balancer_name);
        return NULL;
    }
    t->policy = *policy;
    t->registry = beacon_registry_open(pconf, s, registry_key);
    if (t->registry == NULL) {
        return NULL;
    }
    header = beacon_registry_header_of(t->registry);
    if (header && !t->b->s->max_attempts_set) {
        /* a new generation without BalancerPersist: nothing beacon wrote
         * of the balancer is left */
        header->max_attempts = -1;
    }
    return t;
}

void beacon_proxy_sync(beacon_target *t)
{
    if (t->b->s->wupdated > t->b->wupdated && beacon_target_thread_lock(t) == APR_SUCCESS) {
        ap_proxy_sync_balancer(t->b, t->s, t->conf);
        beacon_target_thread_unlock(t);
    }
}

/*
 * A member comes back into rotation: clear D, and nothing else of the
 * status. A backend that was refused a connection while it stopped (its
 * listener closes as its state=leaving goes out) is in the proxy's error
 * state, which the proxy keeps for the worker's retry (60 s by default).
 * The announcement is fresh evidence that the backend is up, so the retry
 * is made due now: the proxy itself clears the error on the next request
 * and sets it again if that connection fails.
 */
static void enable_returning(proxy_worker_shared *shm)
{
    if (shm->status & PROXY_WORKER_IN_ERROR) {
        shm->error_time = 0;
    }
    beacon_target_set_disabled_flag(shm, 0);
}

/* No free slot: the slot of a long-gone member, renamed to url and put
 * in rotation; NULL when none is ready (info->ready_at says when). */
static beacon_add_result recycle_for(beacon_target *t, const char *url,
                                     const beacon_member_attrs *attrs,
                                     apr_pool_t *p, beacon_add_info *info)
{
    proxy_worker *w = beacon_recycle_take(t, url, p, info);
    beacon_entry *e;

    if (w == NULL || (e = beacon_target_entry(t, url)) == NULL) {
        return BEACON_ADD_NO_SLOT;
    }
    beacon_target_apply_attrs(t, e, w->s, attrs);
    beacon_target_mark_out(e, w->s, 0);
    enable_returning(w->s);
    return BEACON_ADD_RECYCLED;
}

/* A new member in a free slot, with what its backend announces before
 * any request can use it (it is not initialized until then); else in a
 * recycled one. */
static beacon_add_result define_and_share(beacon_target *t, const char *url,
                                          const beacon_member_attrs *attrs,
                                          apr_pool_t *p, beacon_add_info *info)
{
    beacon_add_result result;
    beacon_entry *e;
    proxy_worker *w;
    apr_status_t rv;

    if (!beacon_registry_has_room(t->registry)) {
        info->why = "the member registry is full";
        return BEACON_ADD_FAILED;
    }
    w = beacon_target_share_new(t, url, p, &result, &info->why);
    if (w == NULL) {
        return result == BEACON_ADD_NO_SLOT
                   ? recycle_for(t, url, attrs, p, info)
                   : result;
    }
    e = beacon_registry_put(t->registry, t->b->s->name, url);
    beacon_target_note_slot(e, w->s);
    beacon_target_apply_attrs(t, e, w->s, attrs);
    if ((rv = ap_proxy_initialize_worker(w, t->s, t->conf->pool)) != APR_SUCCESS) {
        info->why = apr_psprintf(p, "cannot initialize worker: %pm", &rv);
        beacon_registry_forget(e);
        beacon_target_forget_worker(t->b, w, w->s, 1, (unsigned)w->s->index);
        return BEACON_ADD_FAILED;
    }
    beacon_target_list(t->b, w, t->conf->pool);
    beacon_target_count_failover(t);
    /* publish: other children sync on their next request */
    t->b->wupdated = t->b->s->wupdated = w->s->updated = apr_time_now();
    return BEACON_ADD_DONE;
}

static int is_confirmed(beacon_target *t, const char *url)
{
    proxy_worker *w = beacon_target_find(t, url);

    return w != NULL && PROXY_WORKER_IS_INITIALIZED(w) &&
           ours(t, url);
}

beacon_add_result beacon_proxy_add(beacon_target *t, const char *url,
                                   const beacon_member_attrs *attrs,
                                   apr_pool_t *p, beacon_add_info *info)
{
    beacon_add_result result;
    proxy_worker *existing;
    beacon_entry *e;

    memset(info, 0, sizeof(*info));
    if (beacon_target_lock(t) != APR_SUCCESS) {
        info->why = "the balancer's locks failed";
        return BEACON_ADD_FAILED;
    }
    ap_proxy_sync_balancer(t->b, t->s, t->conf);
    existing = beacon_target_find(t, url);
    if (existing != NULL) {
        if ((e = beacon_target_entry(t, url)) == NULL) {
            result = BEACON_ADD_NOT_OURS;
        }
        else {
            beacon_target_apply_attrs(t, e, existing->s, attrs);
            enable_returning(existing->s);
            beacon_target_mark_out(e, existing->s, 0);
            result = BEACON_ADD_ADOPTED;
        }
    }
    else {
        result = define_and_share(t, url, attrs, p, info);
        if ((result == BEACON_ADD_DONE || result == BEACON_ADD_RECYCLED) &&
            !is_confirmed(t, url)) {
            result = BEACON_ADD_NOT_CONFIRMED;
        }
    }
    beacon_target_unlock(t);
    return result;
}

apr_status_t beacon_proxy_set_disabled(beacon_target *t, const char *url,
                                       int disabled)
{
    apr_status_t rv = beacon_target_lock(t); /* the registry is written too */
    beacon_entry *e;
    proxy_worker *w;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    ap_proxy_sync_balancer(t->b, t->s, t->conf);
    w = beacon_target_find(t, url);
    if (w == NULL || (e = beacon_target_entry(t, url)) == NULL) {
        rv = APR_NOTFOUND;
    }
    else {
        if (disabled) {
            /* Only D: Stopped, Drain and health-check failures are the
             * admin's. */
            beacon_target_set_disabled_flag(w->s, 1);
        }
        else {
            enable_returning(w->s);
        }
        beacon_target_mark_out(e, w->s, disabled);
    }
    beacon_target_unlock(t);
    return rv;
}

/* A member's route or load factor differs from what its backend
 * announces: applied under the balancer's locks, as balancer-manager
 * edits them. */
static void apply_changed_attrs(beacon_target *t, const char *url,
                                const beacon_member_attrs *attrs)
{
    proxy_worker_shared *shm;
    beacon_entry *e;

    if (beacon_target_lock(t) != APR_SUCCESS) {
        return; /* logged; the next announcement tries again */
    }
    if ((e = beacon_target_entry(t, url)) != NULL &&
        (shm = beacon_target_slot(t, e)) != NULL) {
        ap_proxy_sync_balancer(t->b, t->s, t->conf); /* routes of all */
        beacon_target_apply_attrs(t, e, shm, attrs);
    }
    beacon_target_unlock(t);
}

/* An accepted announcement of a url that is no member (it waits for a
 * slot): its replay mark, if its old slot went to another, rises too. */
static void heard_gone(beacon_target *t, const char *url, apr_int64_t ts,
                       apr_time_t now)
{
    beacon_entry *mark = beacon_registry_find_mark(t->registry, t->b->s->name,
                                                   url);

    if (mark != NULL && ts > mark->high_ts) {
        mark->high_ts = ts;
        mark->last_heard = now;
    }
}

void beacon_proxy_heard(beacon_target *t, const char *url, int *hint,
                        apr_int64_t ts, apr_time_t now,
                        const beacon_member_attrs *attrs)
{
    beacon_entry *e = beacon_registry_find_hinted(t->registry, t->b->s->name,
                                                  url, hint);
    proxy_worker_shared *shm;

    if (e == NULL) {
        heard_gone(t, url, ts, now);
        return;
    }
    /* only the owner writes these: no lock */
    if (ts > e->high_ts) {
        e->high_ts = ts;
    }
    e->last_heard = now;
    /* a look without the lock; apply_changed_attrs looks again under it */
    if ((shm = beacon_target_slot(t, e)) != NULL &&
        beacon_target_attrs_differ(shm, attrs)) {
        apply_changed_attrs(t, url, attrs);
    }
}

/* The replay marks of t's balancer, written from members[n] on; returns
 * the new count. */
static int add_replay_marks(beacon_target *t, apr_pool_t *p,
                            beacon_member *members, int n)
{
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(t->registry, i);

        if (e && e->state == BEACON_ENTRY_MARK &&
            strcmp(e->balancer, t->b->s->name) == 0) {
            members[n].url = apr_pstrdup(p, e->url);
            members[n].gone = 1;
            members[n].high_ts = e->high_ts;
            members[n].last_heard = e->last_heard;
            n++;
        }
    }
    return n;
}

int beacon_proxy_marked_members(beacon_target *t, apr_pool_t *p,
                                beacon_member **members)
{
    proxy_worker **w;
    int i, n = 0;

    *members = NULL;
    if (beacon_target_lock(t) != APR_SUCCESS) {
        return 0;
    }
    ap_proxy_sync_balancer(t->b, t->s, t->conf);
    beacon_recycle_finish(t, p);
    w = (proxy_worker **)t->b->workers->elts;
    /* room for every member and every replay mark the registry holds */
    *members = apr_pcalloc(p, sizeof(beacon_member) *
                                  (apr_size_t)(t->b->workers->nelts + BEACON_REGISTRY_SIZE));
    for (i = 0; i < t->b->workers->nelts; i++) {
        beacon_entry *e = beacon_target_entry(t, w[i]->s->name_ex);

        if (e) {
            (*members)[n].url = apr_pstrdup(p, e->url);
            (*members)[n].disabled =
                (w[i]->s->status & PROXY_WORKER_DISABLED) != 0;
            (*members)[n].high_ts = e->high_ts;
            n++;
        }
    }
    n = add_replay_marks(t, p, *members, n);
    beacon_target_unlock(t);
    return n;
}

void beacon_proxy_growth(beacon_target *t, int *used, int *free_slots,
                         int *recyclable)
{
    *free_slots = (int)t->b->storage->num_free_slots(t->b->wslot);
    *used = t->b->growth - *free_slots;
    *recyclable = beacon_recycle_count(t, apr_time_now());
}

const char *beacon_proxy_worker_flags(beacon_target *t, const char *url,
                                      apr_pool_t *p)
{
    const char *flags = NULL;
    proxy_worker *w;

    if (beacon_target_lock_members(t) == APR_SUCCESS) {
        w = beacon_target_find(t, url);
        flags = w ? ap_proxy_parse_wstatus(p, w) : NULL;
        beacon_target_thread_unlock(t);
    }
    return flags;
}
