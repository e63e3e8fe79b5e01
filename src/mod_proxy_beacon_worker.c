/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * httpd's worker primitives (see mod_proxy_beacon_worker.h): finding a
 * balancer and its members, the balancer's locks, and defining a worker
 * in a growth slot as balancer-manager does.
 *
 * mod_proxy's functions are weak references, resolved when this DSO is
 * loaded: a backend that only sends loads the module without mod_proxy,
 * and a receiver whose mod_proxy is missing (or loaded after us) is told
 * so at configuration time instead of failing to start with "undefined
 * symbol". Every one of them is here.
 */

#include "mod_proxy_beacon_worker.h"

#include <apr_atomic.h>
#include <apr_strings.h>
#include <ap_slotmem.h>

#include <stdatomic.h>
#include <unistd.h>

#pragma weak proxy_module
#pragma weak ap_proxy_get_balancer
#pragma weak ap_proxy_sync_balancer
#pragma weak ap_proxy_define_worker_ex
#pragma weak ap_proxy_share_worker
#pragma weak ap_proxy_initialize_worker
#pragma weak ap_proxy_parse_wstatus
#pragma weak ap_proxy_hashfunc
#pragma weak ap_proxy_determine_address

/*
 * Given to every member beacon adds, so that its slot can be renamed one
 * day (mod_proxy_beacon_recycle.c): an address TTL of five seconds (each
 * child resolves a member's host again at most every 5 s, so a DNS name
 * follows its records, and a renamed slot waits about that long), connect
 * and acquire waits bounded, and idle pooled connections that expire.
 */
#define ADDRESS_TTL 5 /* seconds, as httpd counts it */
#define CONNECT_TIMEOUT apr_time_from_sec(3)
#define ACQUIRE_TIMEOUT apr_time_from_sec(1)
#define IDLE_TTL apr_time_from_sec(5)

int beacon_worker_linked(void)
{
    return &proxy_module != NULL && ap_proxy_get_balancer != NULL &&
           ap_proxy_sync_balancer != NULL && ap_proxy_define_worker_ex != NULL &&
           ap_proxy_share_worker != NULL && ap_proxy_initialize_worker != NULL &&
           ap_proxy_parse_wstatus != NULL && ap_proxy_hashfunc != NULL;
}

int beacon_worker_addresses_expire(void)
{
    return ap_proxy_determine_address != NULL;
}

static proxy_server_conf *proxy_conf(server_rec *s)
{
    return ap_get_module_config(s->module_config, &proxy_module);
}

proxy_balancer *beacon_worker_balancer(apr_pool_t *p, server_rec *s,
                                       const char *name)
{
    return ap_proxy_get_balancer(p, proxy_conf(s),
                                 apr_pstrcat(p, BALANCER_PREFIX, name, NULL), 0);
}

int beacon_worker_open(beacon_workers *ws, apr_pool_t *pconf, server_rec *s,
                       const char *name)
{
    ws->s = s;
    ws->conf = proxy_conf(s);
    ws->b = beacon_worker_balancer(pconf, s, name);
    return ws->b != NULL && ws->b->s != NULL && ws->b->wslot != NULL;
}

static void member_settings(proxy_worker *w)
{
    proxy_worker_shared *s = w->s;

    if (!s->conn_timeout_set) {
        s->conn_timeout = CONNECT_TIMEOUT;
        s->conn_timeout_set = 1;
    }
    if (!s->acquire_set) {
        s->acquire = ACQUIRE_TIMEOUT;
        s->acquire_set = 1;
    }
    /* connections to an old address do not pile up in the pools */
    s->ttl = IDLE_TTL;
    s->smax = 0;
    if (beacon_worker_addresses_expire()) {
        s->address_ttl = ADDRESS_TTL;
        s->address_ttl_set = 1;
    }
}

/*
 * Whether a worker's name is the member canonical url names. The admin
 * may spell a BalancerMember otherwise ("http://h:80/", "http://[0:0::1]:8")
 * and it is still the same member: names are compared in canonical form.
 * A name with a path or a socket is no origin and never matches.
 */
int beacon_worker_names(const char *name, const char *url)
{
    char canonical[BEACON_URL_MAX];

    return strcmp(name, url) == 0 ||
           (beacon_url_canonicalize(name, strlen(name), canonical,
                                    sizeof(canonical)) == NULL &&
            strcmp(canonical, url) == 0);
}

proxy_worker *beacon_worker_find(const beacon_workers *ws, const char *url)
{
    proxy_worker **w = (proxy_worker **)ws->b->workers->elts;
    int i;

    for (i = 0; i < ws->b->workers->nelts; i++) {
        if (beacon_worker_names(w[i]->s->name_ex, url)) {
            return w[i];
        }
    }
    return NULL;
}

static proxy_worker_shared *slot_shm(const proxy_balancer *b, int i)
{
    proxy_worker_shared *shm = NULL;

    if (i < 0 || i >= b->max_workers ||
        b->storage->dptr(b->wslot, (unsigned)i, (void **)&shm) != APR_SUCCESS) {
        return NULL;
    }
    return shm;
}

proxy_worker_shared *beacon_worker_slot(const beacon_workers *ws,
                                        const beacon_entry *e)
{
    proxy_worker_shared *shm = slot_shm(ws->b, e->slot);

    return shm && shm->hash.def == e->hash_def && shm->hash.fnv == e->hash_fnv &&
                   (shm->hash.def || shm->hash.fnv)
               ? shm
               : NULL;
}

/*
 * The balancer's locks, checked as balancer-manager checks them: a lock
 * that fails is said, with the balancer's name, and nothing is changed
 * without it. Returns rv.
 */
static apr_status_t lock_said(beacon_workers *ws, apr_status_t rv,
                              const char *action, const char *which)
{
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, ws->s, BCNLOGNO(00014)
                     "cannot %s the %s lock of %s", action, which,
                     ws->b->s->name);
    }
    return rv;
}

apr_status_t beacon_worker_thread_lock(beacon_workers *ws)
{
    return lock_said(ws, PROXY_THREAD_LOCK(ws->b), "take", "thread");
}

void beacon_worker_thread_unlock(beacon_workers *ws)
{
    lock_said(ws, PROXY_THREAD_UNLOCK(ws->b), "release", "thread");
}

apr_status_t beacon_worker_lock(beacon_workers *ws)
{
    apr_status_t rv = beacon_worker_thread_lock(ws);

    if (rv == APR_SUCCESS &&
        (rv = lock_said(ws, PROXY_GLOBAL_LOCK(ws->b), "take", "global"))
            != APR_SUCCESS) {
        beacon_worker_thread_unlock(ws);
    }
    return rv;
}

void beacon_worker_unlock(beacon_workers *ws)
{
    lock_said(ws, PROXY_GLOBAL_UNLOCK(ws->b), "release", "global");
    beacon_worker_thread_unlock(ws);
}

void beacon_worker_sync(beacon_workers *ws)
{
    ap_proxy_sync_balancer(ws->b, ws->s, ws->conf);
}

void beacon_worker_pick_up(beacon_workers *ws)
{
    if (ws->b->s->wupdated > ws->b->wupdated &&
        beacon_worker_thread_lock(ws) == APR_SUCCESS) {
        beacon_worker_sync(ws);
        beacon_worker_thread_unlock(ws);
    }
}

/*
 * This child's member list, current and held still: request threads of
 * this child add to it when they sync, so it is walked under the thread
 * lock (as httpd's pre_request syncs under it). beacon_worker_thread_unlock() after.
 */
apr_status_t beacon_worker_lock_members(beacon_workers *ws)
{
    apr_status_t rv = beacon_worker_thread_lock(ws);

    if (rv == APR_SUCCESS) {
        beacon_worker_sync(ws);
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

/* Takes w off this child's member list, wherever it stands. */
void beacon_worker_unlist(proxy_balancer *b, const proxy_worker *w)
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
void beacon_worker_forget(proxy_balancer *b, const proxy_worker *w,
                          proxy_worker_shared *shm, int have_slot,
                          unsigned idx)
{
    beacon_worker_unlist(b, w);
    if (have_slot) {
        if (shm) {
            shm->hash.def = shm->hash.fnv = 0;
        }
        b->storage->release(b->wslot, idx);
    }
}

static unsigned int nonzero(unsigned int hash)
{
    return hash ? hash : 1; /* a zero hash marks a free slot */
}

/*
 * A member's identity hash is its name's plus a salt: a slot keeps its
 * hash when it is recycled (a new hash would make every other child adopt
 * it twice), so a url that comes back after its slot was renamed must not
 * hash as it did, or other children would take the new slot for the one
 * they know (their list matches slots by hash, not name).
 */
static void salt_identity(proxy_worker *w)
{
    static apr_uint32_t salts;
    char salted[PROXY_WORKER_EXT_NAME_SIZE + 64];

    apr_snprintf(salted, sizeof(salted), "%s#beacon-%" APR_TIME_T_FMT "-%"
                 APR_PID_T_FMT "-%u", w->s->name_ex, apr_time_now(), getpid(),
                 apr_atomic_inc32(&salts));
    w->hash.def = w->s->hash.def =
        nonzero(ap_proxy_hashfunc(salted, PROXY_HASHFUNC_DEFAULT));
    w->hash.fnv = w->s->hash.fnv =
        nonzero(ap_proxy_hashfunc(salted, PROXY_HASHFUNC_FNV));
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
proxy_worker *beacon_worker_share_new(beacon_workers *ws,
                                      const beacon_member_params *params,
                                      const char *url, apr_pool_t *p,
                                      int *no_slot, const char **why)
{
    proxy_balancer *b = ws->b;
    proxy_worker_shared *shm = NULL;
    proxy_worker *w = NULL;
    unsigned idx = 0;
    apr_status_t rv;
    char *err;

    *no_slot = 0;
    *why = NULL;
    if (b->storage->num_free_slots(b->wslot) == 0) {
        *no_slot = 1;
        return NULL;
    }
    reserve_occupied_slots(b);
    /* defined for no balancer: it joins this child's list only once it is
     * whole (beacon_worker_list) */
    err = ap_proxy_define_worker_ex(ws->conf->pool, &w, NULL, NULL, url,
                                    AP_PROXY_WORKER_IS_PREFIX);
    if (err != NULL) {
        *why = apr_pstrcat(p, "cannot define worker: ", err, NULL);
        return NULL;
    }
    w->balancer = b;
    /* httpd's mark of a worker outside any balancer */
    w->s->status &= ~(unsigned int)PROXY_WORKER_IGNORE_ERRORS;
    PROXY_COPY_CONF_PARAMS(w, ws->conf);
    member_settings(w);
    beacon_params_apply(ws->conf->pool, ws->s, params, w);
    salt_identity(w);
    if ((rv = b->storage->grab(b->wslot, &idx)) != APR_SUCCESS) {
        beacon_worker_forget(b, w, NULL, 0, 0);
        if (rv == APR_EINVAL) {
            *no_slot = 1;
        }
        *why = apr_psprintf(p, "cannot take a growth slot: %pm", &rv);
        return NULL;
    }
    if ((rv = b->storage->dptr(b->wslot, idx, (void **)&shm)) != APR_SUCCESS ||
        (rv = ap_proxy_share_worker(w, shm, (int)idx)) != APR_SUCCESS) {
        *why = apr_psprintf(p, "cannot share worker: %pm", &rv);
        beacon_worker_forget(b, w, shm, 1, idx);
        return NULL;
    }
    return w;
}

proxy_worker *beacon_worker_template(apr_pool_t *p, const char *url)
{
    proxy_worker *tmpl = NULL;

    if (ap_proxy_define_worker_ex(p, &tmpl, NULL, NULL, url,
                                  AP_PROXY_WORKER_IS_PREFIX) != NULL) {
        return NULL;
    }
    return tmpl;
}

apr_status_t beacon_worker_initialize(beacon_workers *ws, proxy_worker *w)
{
    return ap_proxy_initialize_worker(w, ws->s, ws->conf->pool);
}

void beacon_worker_list(proxy_balancer *b, proxy_worker *w, apr_pool_t *pool)
{
    apr_array_header_t *list = b->workers;

    if (list->nelts == list->nalloc) {
        apr_array_header_t *bigger = apr_array_make(pool, list->nalloc * 2 + 1,
                                                    sizeof(proxy_worker *));

        memcpy(bigger->elts, list->elts,
               (apr_size_t)list->nelts * sizeof(proxy_worker *));
        bigger->nelts = list->nelts;
        atomic_thread_fence(memory_order_release);
        b->workers = list = bigger;
    }
    ((proxy_worker **)list->elts)[list->nelts] = w;
    atomic_thread_fence(memory_order_release); /* the slot, then the count */
    list->nelts++;
}

void beacon_worker_publish(beacon_workers *ws, proxy_worker *w)
{
    ws->b->wupdated = ws->b->s->wupdated = w->s->updated = apr_time_now();
}


/* Where the member lives, for a restart or a recycling to find it. */
void beacon_worker_note_slot(beacon_entry *e, const proxy_worker_shared *shm)
{
    e->slot = shm->index;
    e->hash_def = shm->hash.def;
    e->hash_fnv = shm->hash.fnv;
}

/*
 * Sets or clears Disabled, and nothing else, in the status word that
 * every process shares: a compare-and-swap, so that this write never
 * undoes a change another process makes to another flag at the same
 * moment (the proxy's Err, health checks). httpd's own writes are plain
 * read-modify-writes, which can still lose this one: lease transitions
 * are rare, and the next one writes again.
 */
void beacon_worker_set_flags(proxy_worker_shared *shm, apr_uint32_t set,
                             apr_uint32_t clear)
{
    volatile apr_uint32_t *status = (volatile apr_uint32_t *)&shm->status;
    apr_uint32_t old, new;

    do {
        old = apr_atomic_read32(status);
        new = (old | set) & ~clear;
    } while (apr_atomic_cas32(status, new, old) != old);
}

void beacon_worker_set_disabled(proxy_worker_shared *shm, int disabled)
{
    beacon_worker_set_flags(shm, disabled ? PROXY_WORKER_DISABLED : 0,
                            disabled ? 0 : PROXY_WORKER_DISABLED);
}


void beacon_worker_growth(const beacon_workers *ws, int *used, int *free_slots)
{
    *free_slots = (int)ws->b->storage->num_free_slots(ws->b->wslot);
    *used = ws->b->growth - *free_slots;
}

const char *beacon_worker_flags(beacon_workers *ws, const char *url,
                                apr_pool_t *p)
{
    const char *flags = NULL;
    proxy_worker *w;

    if (beacon_worker_lock_members(ws) == APR_SUCCESS) {
        w = beacon_worker_find(ws, url);
        flags = w ? ap_proxy_parse_wstatus(p, w) : NULL;
        beacon_worker_thread_unlock(ws);
    }
    return flags;
}
