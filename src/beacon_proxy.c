/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The balancer side of the adapter: adding, enabling and disabling the
 * members beacon manages, exactly as balancer-manager does, and the
 * ownership registry that says which members those are.
 *
 * mod_proxy's functions are weak references, resolved when this DSO is
 * loaded: a backend that only sends loads the module without mod_proxy,
 * and a receiver whose mod_proxy is missing (or loaded after us) is told
 * so at configuration time instead of failing to start with "undefined
 * symbol".
 */

#include "mod_proxy_beacon.h"

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
#pragma weak ap_proxy_set_wstatus

#define REGISTRY_NAME "proxy_beacon_registry"

/*
 * One registry entry per member beacon created. It lives in shared memory
 * so that the mark survives the watchdog child that wrote it, and a status
 * bit is not enough: other processes rewrite w->s->status without locks.
 * Written only under the balancer's global mutex.
 */
typedef struct {
    char balancer[PROXY_BALANCER_MAX_NAME_SIZE];
    char url[BEACON_URL_MAX];
    apr_uint32_t in_use;
} beacon_mark;

static ap_slotmem_provider_t *registry_storage;
static ap_slotmem_instance_t *registry;
static unsigned registry_slots;

struct beacon_target {
    server_rec *s;
    proxy_server_conf *conf;
    proxy_balancer *b;
    int manage_max_attempts; /* the admin left maxattempts unset */
};

int beacon_proxy_linked(void)
{
    return &proxy_module != NULL && ap_proxy_get_balancer != NULL &&
           ap_proxy_sync_balancer != NULL && ap_proxy_define_worker_ex != NULL &&
           ap_proxy_share_worker != NULL && ap_proxy_initialize_worker != NULL &&
           ap_proxy_set_wstatus != NULL;
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

/* ------------------------------------------------------------------ */
/* Registry                                                            */

apr_status_t beacon_registry_create(apr_pool_t *pconf, server_rec *s,
                                    unsigned receivers, int persist)
{
    apr_status_t rv;

    registry_storage = ap_lookup_provider(AP_SLOTMEM_PROVIDER_GROUP, "shm",
                                          AP_SLOTMEM_PROVIDER_VERSION);
    if (registry_storage == NULL) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00001)
                     "mod_slotmem_shm is required by ProxyBeaconListen: "
                     "load it before mod_proxy_beacon");
        return APR_EGENERAL;
    }
    registry_slots = receivers * BEACON_TABLE_CAPACITY;
    rv = registry_storage->create(&registry, REGISTRY_NAME, sizeof(beacon_mark),
                                  registry_slots,
                                  AP_SLOTMEM_TYPE_PREGRAB |
                                  (persist ? AP_SLOTMEM_TYPE_PERSIST : 0),
                                  pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, BCNLOGNO(00002)
                     "cannot create the member registry in shared memory");
    }
    return rv;
}

static beacon_mark *mark_at(unsigned i)
{
    void *p = NULL;

    if (registry_storage->dptr(registry, i, &p) != APR_SUCCESS) {
        return NULL;
    }
    return p;
}

static beacon_mark *registry_find(const proxy_balancer *b, const char *url)
{
    unsigned i;

    for (i = 0; i < registry_slots; i++) {
        beacon_mark *m = mark_at(i);

        if (m && m->in_use && strcmp(m->url, url) == 0 &&
            strcmp(m->balancer, b->s->name) == 0) {
            return m;
        }
    }
    return NULL;
}

static int registry_put(const proxy_balancer *b, const char *url)
{
    unsigned i;

    for (i = 0; i < registry_slots; i++) {
        beacon_mark *m = mark_at(i);

        if (m && !m->in_use) {
            apr_cpystrn(m->balancer, b->s->name, sizeof(m->balancer));
            apr_cpystrn(m->url, url, sizeof(m->url));
            m->in_use = 1;
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Balancer                                                            */

beacon_target *beacon_proxy_target(apr_pool_t *p, server_rec *s,
                                   const char *balancer_name)
{
    beacon_target *t = apr_pcalloc(p, sizeof(*t));

    t->s = s;
    t->conf = proxy_conf(s);
    t->b = ap_proxy_get_balancer(p, t->conf, balancer_url(p, balancer_name), 0);
    if (t->b == NULL || t->b->s == NULL || t->b->wslot == NULL) {
        return NULL;
    }
    /* Decided once: a value the admin set is never ours to change. */
    t->manage_max_attempts = !t->b->s->max_attempts_set;
    return t;
}

static proxy_worker *find_worker(proxy_balancer *b, const char *url)
{
    proxy_worker **w = (proxy_worker **)b->workers->elts;
    int i;

    for (i = 0; i < b->workers->nelts; i++) {
        if (strcmp(w[i]->s->name_ex, url) == 0) {
            return w[i];
        }
    }
    return NULL;
}

/* Picks up members other processes added, like a request would. */
void beacon_proxy_sync(beacon_target *t)
{
    if (t->b->s->wupdated > t->b->wupdated) {
        PROXY_THREAD_LOCK(t->b);
        ap_proxy_sync_balancer(t->b, t->s, t->conf);
        PROXY_THREAD_UNLOCK(t->b);
    }
}

int beacon_proxy_free_slots(beacon_target *t)
{
    return (int)t->b->storage->num_free_slots(t->b->wslot);
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
static void forget_worker(proxy_balancer *b, proxy_worker_shared *shm,
                          int have_slot, unsigned idx)
{
    b->workers->nelts--;
    if (have_slot) {
        if (shm) {
            shm->hash.def = shm->hash.fnv = 0;
        }
        b->storage->release(b->wslot, idx);
    }
}

static beacon_add_result define_and_share(beacon_target *t, const char *url,
                                          apr_pool_t *worker_pool)
{
    proxy_balancer *b = t->b;
    proxy_worker_shared *shm = NULL;
    proxy_worker *w = NULL;
    unsigned idx = 0;
    apr_status_t rv;
    char *err;

    if (b->storage->num_free_slots(b->wslot) == 0) {
        return BEACON_ADD_NO_SLOT;
    }
    reserve_occupied_slots(b);
    err = ap_proxy_define_worker_ex(worker_pool, &w, b, t->conf, url,
                                    AP_PROXY_WORKER_IS_PREFIX);
    if (err != NULL) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, t->s, BCNLOGNO(00003)
                     "cannot define worker %s in %s: %s", url, b->s->name, err);
        return BEACON_ADD_FAILED;
    }
    PROXY_COPY_CONF_PARAMS(w, t->conf);
    if ((rv = b->storage->grab(b->wslot, &idx)) != APR_SUCCESS) {
        forget_worker(b, NULL, 0, 0);
        return rv == APR_EINVAL ? BEACON_ADD_NO_SLOT : BEACON_ADD_FAILED;
    }
    if ((rv = b->storage->dptr(b->wslot, idx, (void **)&shm)) != APR_SUCCESS ||
        (rv = ap_proxy_share_worker(w, shm, (int)idx)) != APR_SUCCESS ||
        (rv = ap_proxy_initialize_worker(w, t->s, t->conf->pool)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, t->s, BCNLOGNO(00004)
                     "cannot share or initialize worker %s in %s", url,
                     b->s->name);
        forget_worker(b, shm, 1, idx);
        return BEACON_ADD_FAILED;
    }
    if (!registry_put(b, url)) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, t->s, BCNLOGNO(00005)
                     "member registry full; not adding %s to %s", url,
                     b->s->name);
        forget_worker(b, shm, 1, idx);
        return BEACON_ADD_FAILED;
    }
    if (t->manage_max_attempts && b->workers->nelts > 1) {
        /* as mod_proxy_balancer does for static members: try them all */
        b->s->max_attempts = b->workers->nelts - 1;
        b->s->max_attempts_set = 1;
    }
    /* publish: other children sync on their next request */
    b->wupdated = b->s->wupdated = w->s->updated = apr_time_now();
    return BEACON_ADD_DONE;
}

static int is_confirmed(proxy_balancer *b, const char *url)
{
    proxy_worker *w = find_worker(b, url);

    return w != NULL && PROXY_WORKER_IS_INITIALIZED(w) &&
           registry_find(b, url) != NULL;
}

beacon_add_result beacon_proxy_add(beacon_target *t, const char *url,
                                   apr_pool_t *worker_pool)
{
    proxy_balancer *b = t->b;
    beacon_add_result result;
    proxy_worker *existing;

    /* balancer-manager's order: thread lock, then the global lock */
    PROXY_THREAD_LOCK(b);
    PROXY_GLOBAL_LOCK(b);
    ap_proxy_sync_balancer(b, t->s, t->conf);
    existing = find_worker(b, url);
    if (existing != NULL) {
        if (registry_find(b, url) == NULL) {
            result = BEACON_ADD_NOT_OURS;
        }
        else {
            ap_proxy_set_wstatus(PROXY_WORKER_DISABLED_FLAG, 0, existing);
            result = BEACON_ADD_ADOPTED;
        }
    }
    else {
        result = define_and_share(t, url, worker_pool);
        if (result == BEACON_ADD_DONE && !is_confirmed(b, url)) {
            result = BEACON_ADD_NOT_CONFIRMED;
        }
    }
    PROXY_GLOBAL_UNLOCK(b);
    PROXY_THREAD_UNLOCK(b);
    return result;
}

apr_status_t beacon_proxy_set_disabled(beacon_target *t, const char *url,
                                       int disabled)
{
    proxy_worker *w;

    beacon_proxy_sync(t);
    w = find_worker(t->b, url);
    if (w == NULL || registry_find(t->b, url) == NULL) {
        return APR_NOTFOUND;
    }
    /* Only D: Stopped, Drain and health-check failures are the admin's. */
    return ap_proxy_set_wstatus(PROXY_WORKER_DISABLED_FLAG, disabled, w);
}

int beacon_proxy_marked_members(beacon_target *t, apr_pool_t *p,
                                beacon_member **members)
{
    proxy_worker **w;
    int i, n = 0;

    beacon_proxy_sync(t);
    w = (proxy_worker **)t->b->workers->elts;
    *members = apr_pcalloc(p, sizeof(beacon_member) * (t->b->workers->nelts + 1));
    for (i = 0; i < t->b->workers->nelts; i++) {
        if (registry_find(t->b, w[i]->s->name_ex) != NULL) {
            (*members)[n].url = apr_pstrdup(p, w[i]->s->name_ex);
            (*members)[n].disabled =
                (w[i]->s->status & PROXY_WORKER_DISABLED) != 0;
            n++;
        }
    }
    return n;
}

int beacon_proxy_persists(server_rec *s)
{
    return proxy_conf(s)->bal_persist;
}
