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
#include "mod_proxy_beacon_registry.h"

#include <apr_atomic.h>
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

struct beacon_target {
    server_rec *s;
    proxy_server_conf *conf;
    proxy_balancer *b;
    int manage_max_attempts; /* the admin left maxattempts unset */
    beacon_registry *registry;
};

int beacon_proxy_linked(void)
{
    return &proxy_module != NULL && ap_proxy_get_balancer != NULL &&
           ap_proxy_sync_balancer != NULL && ap_proxy_define_worker_ex != NULL &&
           ap_proxy_share_worker != NULL && ap_proxy_initialize_worker != NULL &&
           ap_proxy_parse_wstatus != NULL;
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
    return beacon_registry_has(t->registry, t->b->s->name, url);
}

/* ------------------------------------------------------------------ */
/* Balancer                                                            */

beacon_target *beacon_proxy_target(apr_pool_t *pconf, server_rec *s,
                                   const char *balancer_name, apr_port_t port)
{
    beacon_target *t = apr_pcalloc(pconf, sizeof(*t));

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
    /* Decided once: a value the admin set is never ours to change. */
    t->manage_max_attempts = !t->b->s->max_attempts_set;
    t->registry = beacon_registry_open(pconf, s, balancer_name, port);
    if (t->registry == NULL) {
        return NULL;
    }
    return t;
}

/*
 * Whether a worker's name is the member canonical url names. The admin
 * may spell a BalancerMember otherwise ("http://h:80/", "http://[0:0::1]:8")
 * and it is still the same member: names are compared in canonical form.
 * A name with a path or a socket is no origin and never matches.
 */
static int names_member(const char *name, const char *url)
{
    char canonical[BEACON_URL_MAX];

    return strcmp(name, url) == 0 ||
           (beacon_url_canonicalize(name, strlen(name), canonical,
                                    sizeof(canonical)) == NULL &&
            strcmp(canonical, url) == 0);
}

static proxy_worker *find_worker(proxy_balancer *b, const char *url)
{
    proxy_worker **w = (proxy_worker **)b->workers->elts;
    int i;

    for (i = 0; i < b->workers->nelts; i++) {
        if (names_member(w[i]->s->name_ex, url)) {
            return w[i];
        }
    }
    return NULL;
}

/*
 * The balancer's locks, checked as balancer-manager checks them: a lock
 * that fails is said, with the balancer's name, and nothing is changed
 * without it. Returns rv.
 */
static apr_status_t lock_said(beacon_target *t, apr_status_t rv,
                              const char *action, const char *which)
{
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, t->s, BCNLOGNO(00014)
                     "cannot %s the %s lock of %s", action, which,
                     t->b->s->name);
    }
    return rv;
}

static apr_status_t thread_lock(beacon_target *t)
{
    return lock_said(t, PROXY_THREAD_LOCK(t->b), "take", "thread");
}

static void thread_unlock(beacon_target *t)
{
    lock_said(t, PROXY_THREAD_UNLOCK(t->b), "release", "thread");
}

/* balancer-manager's order: the thread lock, then the global lock. */
static apr_status_t lock_balancer(beacon_target *t)
{
    apr_status_t rv = thread_lock(t);

    if (rv == APR_SUCCESS &&
        (rv = lock_said(t, PROXY_GLOBAL_LOCK(t->b), "take", "global"))
            != APR_SUCCESS) {
        thread_unlock(t);
    }
    return rv;
}

static void unlock_balancer(beacon_target *t)
{
    lock_said(t, PROXY_GLOBAL_UNLOCK(t->b), "release", "global");
    thread_unlock(t);
}

void beacon_proxy_sync(beacon_target *t)
{
    if (t->b->s->wupdated > t->b->wupdated && thread_lock(t) == APR_SUCCESS) {
        ap_proxy_sync_balancer(t->b, t->s, t->conf);
        thread_unlock(t);
    }
}

/*
 * This child's member list, current and held still: request threads of
 * this child add to it when they sync, so it is walked under the thread
 * lock (as httpd's pre_request syncs under it). thread_unlock() after.
 */
static apr_status_t lock_members(beacon_target *t)
{
    apr_status_t rv = thread_lock(t);

    if (rv == APR_SUCCESS) {
        ap_proxy_sync_balancer(t->b, t->s, t->conf);
    }
    return rv;
}

/*
 * Slots that BalancerPersist restored hold live workers but are not marked
 * in use; grabbing without this would hand one of them out again.
 */
static void reserve_occupied_slots(proxy_balancer *b)
{
    int i;

    for (i = 0; i < b->max_workers; i++) {
        proxy_worker_shared *shm;

        if (b->storage->dptr(b->wslot, (unsigned)i, (void **)&shm) == APR_SUCCESS &&
            shm->hash.def && shm->hash.fnv) {
            b->storage->fgrab(b->wslot, (unsigned)i);
        }
    }
}

/* Undo of a partial add: no half-built worker in the local list or shm. */
/* Takes w off this child's member list, wherever it stands. */
static void unlist_worker(proxy_balancer *b, const proxy_worker *w)
{
    proxy_worker **list = (proxy_worker **)b->workers->elts;
    int i, found = 0;

    for (i = 0; i < b->workers->nelts; i++) {
        if (found) {
            list[i - 1] = list[i]; /* close the gap */
        }
        else {
            found = list[i] == w;
        }
    }
    if (found) {
        b->workers->nelts--;
    }
}

/*
 * Undo of a partial add, as if the worker had never been defined: no
 * half-built worker in this child's list (a request would use it) and no
 * claimed slot in shm.
 */
static void forget_worker(proxy_balancer *b, const proxy_worker *w,
                          proxy_worker_shared *shm, int have_slot,
                          unsigned idx)
{
    unlist_worker(b, w);
    if (have_slot) {
        if (shm) {
            shm->hash.def = shm->hash.fnv = 0;
        }
        b->storage->release(b->wslot, idx);
    }
}

/*
 * Defines url in the balancer with a shared slot of its own, as
 * balancer-manager's add does; initializing it is the caller's business.
 * On failure nothing of it is left behind and NULL is returned.
 *
 * The worker comes from the proxy configuration's pool, as the workers
 * balancer-manager adds and a sync adopts do: it must live as long as the
 * child's configuration, since request threads keep using it after the
 * watchdog thread that added it has ended (a graceful stop ends that
 * thread first).
 *
 * *why (from p) says what went wrong; the caller logs it, rate-limited
 * where a peer can repeat it.
 */
static proxy_worker *share_new_worker(beacon_target *t, const char *url,
                                      apr_pool_t *p, beacon_add_result *result,
                                      const char **why)
{
    proxy_balancer *b = t->b;
    proxy_worker_shared *shm = NULL;
    proxy_worker *w = NULL;
    unsigned idx = 0;
    apr_status_t rv;
    char *err;

    *result = BEACON_ADD_FAILED;
    *why = NULL;
    if (b->storage->num_free_slots(b->wslot) == 0) {
        *result = BEACON_ADD_NO_SLOT;
        return NULL;
    }
    reserve_occupied_slots(b);
    err = ap_proxy_define_worker_ex(t->conf->pool, &w, b, t->conf, url,
                                    AP_PROXY_WORKER_IS_PREFIX);
    if (err != NULL) {
        /* httpd lists the worker before it checks the url's parts */
        if (w != NULL) {
            forget_worker(b, w, NULL, 0, 0);
        }
        *why = apr_pstrcat(p, "cannot define worker: ", err, NULL);
        return NULL;
    }
    PROXY_COPY_CONF_PARAMS(w, t->conf);
    if ((rv = b->storage->grab(b->wslot, &idx)) != APR_SUCCESS) {
        forget_worker(b, w, NULL, 0, 0);
        if (rv == APR_EINVAL) {
            *result = BEACON_ADD_NO_SLOT;
        }
        *why = apr_psprintf(p, "cannot take a growth slot: %pm", &rv);
        return NULL;
    }
    if ((rv = b->storage->dptr(b->wslot, idx, (void **)&shm)) != APR_SUCCESS ||
        (rv = ap_proxy_share_worker(w, shm, (int)idx)) != APR_SUCCESS) {
        *why = apr_psprintf(p, "cannot share worker: %pm", &rv);
        forget_worker(b, w, shm, 1, idx);
        return NULL;
    }
    *result = BEACON_ADD_DONE;
    return w;
}

/* As mod_proxy_balancer does for static members: a request may try them
 * all, unless the admin set maxattempts. */
static void count_failover_attempts(beacon_target *t)
{
    if (t->manage_max_attempts && t->b->workers->nelts > 1) {
        t->b->s->max_attempts = t->b->workers->nelts - 1;
        t->b->s->max_attempts_set = 1;
    }
}

static beacon_add_result define_and_share(beacon_target *t, const char *url,
                                          apr_pool_t *p, const char **why)
{
    beacon_add_result result;
    proxy_worker *w;
    apr_status_t rv;

    if (!beacon_registry_has_room(t->registry)) {
        *why = "the member registry is full";
        return BEACON_ADD_FAILED;
    }
    w = share_new_worker(t, url, p, &result, why);
    if (w == NULL) {
        return result;
    }
    if ((rv = ap_proxy_initialize_worker(w, t->s, t->conf->pool)) != APR_SUCCESS) {
        *why = apr_psprintf(p, "cannot initialize worker: %pm", &rv);
        forget_worker(t->b, w, w->s, 1, (unsigned)w->s->index);
        return BEACON_ADD_FAILED;
    }
    beacon_registry_put(t->registry, t->b->s->name, url);
    count_failover_attempts(t);
    /* publish: other children sync on their next request */
    t->b->wupdated = t->b->s->wupdated = w->s->updated = apr_time_now();
    return BEACON_ADD_DONE;
}

static int is_confirmed(beacon_target *t, const char *url)
{
    proxy_worker *w = find_worker(t->b, url);

    return w != NULL && PROXY_WORKER_IS_INITIALIZED(w) &&
           ours(t, url);
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
/*
 * Sets or clears Disabled, and nothing else, in the status word that
 * every process shares: a compare-and-swap, so that this write never
 * undoes a change another process makes to another flag at the same
 * moment (the proxy's Err, health checks). httpd's own writes are plain
 * read-modify-writes, which can still lose this one: lease transitions
 * are rare, and the next one writes again.
 */
static void set_disabled_flag(proxy_worker *w, int disabled)
{
    volatile apr_uint32_t *status = (volatile apr_uint32_t *)&w->s->status;
    apr_uint32_t old, new;

    do {
        old = apr_atomic_read32(status);
        new = disabled ? old | PROXY_WORKER_DISABLED
                       : old & ~(apr_uint32_t)PROXY_WORKER_DISABLED;
    } while (apr_atomic_cas32(status, new, old) != old);
}

static void enable_returning(proxy_worker *w)
{
    if (w->s->status & PROXY_WORKER_IN_ERROR) {
        w->s->error_time = 0;
    }
    set_disabled_flag(w, 0);
}

beacon_add_result beacon_proxy_add(beacon_target *t, const char *url,
                                   apr_pool_t *p, const char **why)
{
    beacon_add_result result;
    proxy_worker *existing;

    *why = NULL;
    if (lock_balancer(t) != APR_SUCCESS) {
        *why = "the balancer's locks failed";
        return BEACON_ADD_FAILED;
    }
    ap_proxy_sync_balancer(t->b, t->s, t->conf);
    existing = find_worker(t->b, url);
    if (existing != NULL) {
        if (!ours(t, url)) {
            result = BEACON_ADD_NOT_OURS;
        }
        else {
            enable_returning(existing);
            beacon_registry_set_out(t->registry, t->b->s->name, url, 0);
            result = BEACON_ADD_ADOPTED;
        }
    }
    else {
        result = define_and_share(t, url, p, why);
        if (result == BEACON_ADD_DONE && !is_confirmed(t, url)) {
            result = BEACON_ADD_NOT_CONFIRMED;
        }
    }
    unlock_balancer(t);
    return result;
}

apr_status_t beacon_proxy_set_disabled(beacon_target *t, const char *url,
                                       int disabled)
{
    apr_status_t rv = lock_balancer(t); /* the registry is written too */
    proxy_worker *w;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    ap_proxy_sync_balancer(t->b, t->s, t->conf);
    w = find_worker(t->b, url);
    if (w == NULL || !ours(t, url)) {
        rv = APR_NOTFOUND;
    }
    else if (disabled) {
        /* Only D: Stopped, Drain and health-check failures are the admin's. */
        set_disabled_flag(w, 1);
    }
    else {
        enable_returning(w);
    }
    if (rv == APR_SUCCESS) {
        beacon_registry_set_out(t->registry, t->b->s->name, url, disabled);
    }
    unlock_balancer(t);
    return rv;
}

int beacon_proxy_marked_members(beacon_target *t, apr_pool_t *p,
                                beacon_member **members)
{
    proxy_worker **w;
    int i, n = 0;

    *members = NULL;
    if (lock_members(t) != APR_SUCCESS) {
        return 0;
    }
    w = (proxy_worker **)t->b->workers->elts;
    *members = apr_pcalloc(p, sizeof(beacon_member) * (t->b->workers->nelts + 1));
    for (i = 0; i < t->b->workers->nelts; i++) {
        if (ours(t, w[i]->s->name_ex)) {
            (*members)[n].url = apr_pstrdup(p, w[i]->s->name_ex);
            (*members)[n].disabled =
                (w[i]->s->status & PROXY_WORKER_DISABLED) != 0;
            n++;
        }
    }
    thread_unlock(t);
    return n;
}

/* A slot BalancerPersist restored for url, not yet in the member list. */
static proxy_worker_shared *restored_slot(proxy_balancer *b, const char *url)
{
    int i;

    for (i = 0; i < b->max_workers; i++) {
        proxy_worker_shared *shm;

        if (b->storage->dptr(b->wslot, (unsigned)i, (void **)&shm) == APR_SUCCESS &&
            shm->hash.def && names_member(shm->name_ex, url)) {
            return shm;
        }
    }
    return NULL;
}

/*
 * Puts back registry entry i (url) in post_config, before any child
 * exists; returns its shared state, or NULL (logged, entry forgotten).
 */
static proxy_worker_shared *restore_member(beacon_target *t, unsigned i,
                                           const char *url, apr_pool_t *p)
{
    proxy_worker *w = find_worker(t->b, url);
    proxy_worker_shared *shm;
    beacon_add_result result;
    const char *why = NULL;

    if (w && t->conf->bal_persist) {
        return w->s; /* BalancerPersist brought it back already */
    }
    if (w) {
        /* The configuration names it now: it is the admin's. */
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, t->s, BCNLOGNO(00008)
                     "%s is now configured in %s; beacon no longer "
                     "manages it", url, t->b->s->name);
        beacon_registry_forget(t->registry, i);
        return NULL;
    }
    if ((shm = restored_slot(t->b, url)) != NULL) {
        return shm;
    }
    if ((w = share_new_worker(t, url, p, &result, &why)) != NULL) {
        return w->s;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, t->s, BCNLOGNO(00009)
                 "cannot restore %s in %s: %s; it joins again with its next "
                 "announcement", url, t->b->s->name,
                 result == BEACON_ADD_NO_SLOT ? "no free growth slot" : why);
    beacon_registry_forget(t->registry, i);
    return NULL;
}

/* Whether url is a member's name by today's identity rules. */
static int is_canonical(const char *url)
{
    char canonical[BEACON_URL_MAX];

    return beacon_url_canonicalize(url, strlen(url), canonical,
                                   sizeof(canonical)) == NULL &&
           strcmp(canonical, url) == 0;
}

int beacon_proxy_restore(beacon_target *t, apr_pool_t *p)
{
    unsigned i, skipped = beacon_registry_damaged(t->registry);
    int restored = 0;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        int out = 0;
        const char *url = beacon_registry_url(t->registry, i, t->b->s->name,
                                              &out);
        proxy_worker_shared *shm;

        if (url && !is_canonical(url)) {
            beacon_registry_forget(t->registry, i);
            skipped++;
            continue;
        }
        if (url == NULL || (shm = restore_member(t, i, url, p)) == NULL) {
            continue;
        }
        restored++;
        if (out) {
            /* out of rotation before the restart: its next announcement
             * puts it back (no child exists yet: a plain write) */
            shm->status |= PROXY_WORKER_DISABLED;
        }
    }
    if (skipped > 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, t->s, BCNLOGNO(00084)
                     "skipped %u entr%s of the member registry of %s that "
                     "this release cannot read (an older layout, or "
                     "damaged); those members join again with their next "
                     "announcement", skipped, skipped == 1 ? "y" : "ies",
                     t->b->s->name);
    }
    if (restored > 0) {
        count_failover_attempts(t);
    }
    return restored;
}

void beacon_proxy_growth(beacon_target *t, int *used, int *free_slots)
{
    *free_slots = (int)t->b->storage->num_free_slots(t->b->wslot);
    *used = t->b->growth - *free_slots;
}

const char *beacon_proxy_worker_flags(beacon_target *t, const char *url,
                                      apr_pool_t *p)
{
    const char *flags = NULL;
    proxy_worker *w;

    if (lock_members(t) == APR_SUCCESS) {
        w = find_worker(t->b, url);
        flags = w ? ap_proxy_parse_wstatus(p, w) : NULL;
        thread_unlock(t);
    }
    return flags;
}
