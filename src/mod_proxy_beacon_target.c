/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The balancer machinery beacon's parts share (see
 * mod_proxy_beacon_target.h): finding members, the balancer's locks, and
 * defining a worker in a growth slot as balancer-manager does.
 */

#include "mod_proxy_beacon_target.h"

#include <apr_atomic.h>
#include <apr_strings.h>
#include <ap_slotmem.h>

#include <stdatomic.h>
#include <unistd.h>

#pragma weak ap_proxy_sync_balancer
#pragma weak ap_proxy_define_worker_ex
#pragma weak ap_proxy_share_worker
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

int beacon_target_addresses_expire(void)
{
    return ap_proxy_determine_address != NULL;
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
    if (beacon_target_addresses_expire()) {
        s->address_ttl = ADDRESS_TTL;
        s->address_ttl_set = 1;
    }
}

beacon_entry *beacon_target_entry(const beacon_target *t, const char *url)
{
    return beacon_registry_find(t->registry, t->b->s->name, url);
}

/*
 * Whether a worker's name is the member canonical url names. The admin
 * may spell a BalancerMember otherwise ("http://h:80/", "http://[0:0::1]:8")
 * and it is still the same member: names are compared in canonical form.
 * A name with a path or a socket is no origin and never matches.
 */
int beacon_target_names(const char *name, const char *url)
{
    char canonical[BEACON_URL_MAX];

    return strcmp(name, url) == 0 ||
           (beacon_url_canonicalize(name, strlen(name), canonical,
                                    sizeof(canonical)) == NULL &&
            strcmp(canonical, url) == 0);
}

proxy_worker *beacon_target_find(const beacon_target *t, const char *url)
{
    proxy_worker **w = (proxy_worker **)t->b->workers->elts;
    int i;

    for (i = 0; i < t->b->workers->nelts; i++) {
        if (beacon_target_names(w[i]->s->name_ex, url)) {
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

proxy_worker_shared *beacon_target_slot(const beacon_target *t,
                                        const beacon_entry *e)
{
    proxy_worker_shared *shm = slot_shm(t->b, e->slot);

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

apr_status_t beacon_target_thread_lock(beacon_target *t)
{
    return lock_said(t, PROXY_THREAD_LOCK(t->b), "take", "thread");
}

void beacon_target_thread_unlock(beacon_target *t)
{
    lock_said(t, PROXY_THREAD_UNLOCK(t->b), "release", "thread");
}

apr_status_t beacon_target_lock(beacon_target *t)
{
    apr_status_t rv = beacon_target_thread_lock(t);

    if (rv == APR_SUCCESS &&
        (rv = lock_said(t, PROXY_GLOBAL_LOCK(t->b), "take", "global"))
            != APR_SUCCESS) {
        beacon_target_thread_unlock(t);
    }
    return rv;
}

void beacon_target_unlock(beacon_target *t)
{
    lock_said(t, PROXY_GLOBAL_UNLOCK(t->b), "release", "global");
    beacon_target_thread_unlock(t);
}

/*
 * This child's member list, current and held still: request threads of
 * this child add to it when they sync, so it is walked under the thread
 * lock (as httpd's pre_request syncs under it). beacon_target_thread_unlock() after.
 */
apr_status_t beacon_target_lock_members(beacon_target *t)
{
    apr_status_t rv = beacon_target_thread_lock(t);

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

/* Takes w off this child's member list, wherever it stands. */
void beacon_target_unlist(proxy_balancer *b, const proxy_worker *w)
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
void beacon_target_forget_worker(proxy_balancer *b, const proxy_worker *w,
                          proxy_worker_shared *shm, int have_slot,
                          unsigned idx)
{
    beacon_target_unlist(b, w);
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
proxy_worker *beacon_target_share_new(beacon_target *t, const char *url,
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
    /* defined for no balancer: it joins this child's list only once it is
     * whole (beacon_target_list) */
    err = ap_proxy_define_worker_ex(t->conf->pool, &w, NULL, NULL, url,
                                    AP_PROXY_WORKER_IS_PREFIX);
    if (err != NULL) {
        *why = apr_pstrcat(p, "cannot define worker: ", err, NULL);
        return NULL;
    }
    w->balancer = b;
    /* httpd's mark of a worker outside any balancer */
    w->s->status &= ~(unsigned int)PROXY_WORKER_IGNORE_ERRORS;
    PROXY_COPY_CONF_PARAMS(w, t->conf);
    member_settings(w);
    beacon_params_apply(t->conf->pool, t->s, t->policy.params, w);
    salt_identity(w);
    if ((rv = b->storage->grab(b->wslot, &idx)) != APR_SUCCESS) {
        beacon_target_forget_worker(b, w, NULL, 0, 0);
        if (rv == APR_EINVAL) {
            *result = BEACON_ADD_NO_SLOT;
        }
        *why = apr_psprintf(p, "cannot take a growth slot: %pm", &rv);
        return NULL;
    }
    if ((rv = b->storage->dptr(b->wslot, idx, (void **)&shm)) != APR_SUCCESS ||
        (rv = ap_proxy_share_worker(w, shm, (int)idx)) != APR_SUCCESS) {
        *why = apr_psprintf(p, "cannot share worker: %pm", &rv);
        beacon_target_forget_worker(b, w, shm, 1, idx);
        return NULL;
    }
    *result = BEACON_ADD_DONE;
    return w;
}

void beacon_target_list(proxy_balancer *b, proxy_worker *w, apr_pool_t *pool)
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

/*
 * maxattempts as httpd sets it for static members (members minus one), for
 * a balancer beacon fills at runtime, only while the value is beacon's:
 * one the configuration set before beacon wrote any, or one typed into
 * balancer-manager (which writes the value, not the flag that puts it in
 * effect) differs from what beacon wrote last, and is the admin's. Then
 * beacon only puts it in effect, and never changes it.
 */
void beacon_target_count_failover(beacon_target *t)
{
    proxy_balancer_shared *bs = t->b->s;
    beacon_registry_header *h = beacon_registry_header_of(t->registry);
    int admins;

    if (h == NULL || t->b->workers->nelts < 2) {
        return;
    }
    admins = h->max_attempts >= 0 ? bs->max_attempts != h->max_attempts
                                  : bs->max_attempts_set || bs->max_attempts != 0;
    if (!admins) {
        bs->max_attempts = h->max_attempts = t->b->workers->nelts - 1;
    }
    bs->max_attempts_set = 1;
}

/* Where the member lives, for a restart or a recycling to find it. */
void beacon_target_note_slot(beacon_entry *e, const proxy_worker_shared *shm)
{
    e->slot = shm->index;
    e->hash_def = shm->hash.def;
    e->hash_fnv = shm->hash.fnv;
}

/* Beacon takes a member out of rotation (or back): the registry keeps
 * when, and how often httpd had elected it then, for recycling's G1. */
void beacon_target_mark_out(beacon_entry *e, const proxy_worker_shared *shm, int out)
{
    if (out && !e->out) {
        e->out_since = apr_time_now();
        e->elected_at_out = shm->elected;
    }
    e->out = out != 0;
    if (!out) {
        e->forgotten = 0;
    }
}

/*
 * Sets or clears Disabled, and nothing else, in the status word that
 * every process shares: a compare-and-swap, so that this write never
 * undoes a change another process makes to another flag at the same
 * moment (the proxy's Err, health checks). httpd's own writes are plain
 * read-modify-writes, which can still lose this one: lease transitions
 * are rare, and the next one writes again.
 */
void beacon_target_set_disabled_flag(proxy_worker_shared *shm, int disabled)
{
    volatile apr_uint32_t *status = (volatile apr_uint32_t *)&shm->status;
    apr_uint32_t old, new;

    do {
        old = apr_atomic_read32(status);
        new = disabled ? old | PROXY_WORKER_DISABLED
                       : old & ~(apr_uint32_t)PROXY_WORKER_DISABLED;
    } while (apr_atomic_cas32(status, new, old) != old);
}

/* ------------------------------------------------------------------ */
/* What a backend announces of itself                                  */

int beacon_target_attrs_differ(const proxy_worker_shared *shm,
                               const beacon_member_attrs *attrs)
{
    return attrs != NULL &&
           ((attrs->route[0] && strcmp(attrs->route, shm->route) != 0) ||
            (attrs->lbfactor && attrs->lbfactor != shm->lbfactor));
}

/* The member other than shm whose route is route, or NULL. */
static proxy_worker *route_holder(const beacon_target *t,
                                  const proxy_worker_shared *shm,
                                  const char *route)
{
    proxy_worker **w = (proxy_worker **)t->b->workers->elts;
    int i;

    for (i = 0; i < t->b->workers->nelts; i++) {
        if (w[i]->s != shm && strcmp(w[i]->s->route, route) == 0) {
            return w[i];
        }
    }
    return NULL;
}

/*
 * Whether the holder of a route gives it up to a member whose backend
 * announces it: when beacon took the holder out of rotation (a departed
 * backend whose replacement announces the same jvmRoute). A member in
 * rotation, or one the admin configured or stopped, keeps it.
 */
static int gives_up_route(const beacon_target *t, const proxy_worker *holder)
{
    const beacon_entry *e = beacon_target_entry(t, holder->s->name_ex);

    return e != NULL && e->out && (holder->s->status & PROXY_WORKER_DISABLED) &&
           !(holder->s->status & BEACON_ADMIN_FLAGS);
}

static void apply_route(beacon_target *t, beacon_entry *e,
                        proxy_worker_shared *shm, const char *route)
{
    proxy_worker *holder = route_holder(t, shm, route);
    apr_time_t now = apr_time_now();

    if (holder != NULL && gives_up_route(t, holder)) {
        holder->s->route[0] = '\0';
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00140)
                     "route %s of %s, out of rotation, goes to %s in %s",
                     route, holder->s->name_ex, e->url, t->b->s->name);
    }
    else if (holder != NULL) {
        /* stickiness must name one member: the later one goes without */
        if (now - e->route_refused_at >= BEACON_LOG_EVERY) {
            e->route_refused_at = now;
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, t->s, BCNLOGNO(00093)
                         "route %s already used by %s in %s: %s joins "
                         "without it", route, holder->s->name_ex,
                         t->b->s->name, e->url);
        }
        return;
    }
    apr_cpystrn(shm->route, route, sizeof(shm->route));
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00094)
                 "changed route of %s to %s in %s", e->url, route,
                 t->b->s->name);
}

/* What the backend announces is compared with the member as it is, not
 * with the last announcement: a value the member lost (a restart gave
 * back an older one, an admin typed another) is set again. */
void beacon_target_apply_attrs(beacon_target *t, beacon_entry *e,
                               proxy_worker_shared *shm,
                               const beacon_member_attrs *attrs)
{
    if (attrs == NULL) {
        return;
    }
    if (attrs->route[0] && strcmp(attrs->route, shm->route) != 0) {
        apply_route(t, e, shm, attrs->route);
    }
    if (attrs->lbfactor && attrs->lbfactor != shm->lbfactor) {
        shm->lbfactor = attrs->lbfactor;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00095)
                     "changed lbfactor of %s to %d.%02d in %s", e->url,
                     attrs->lbfactor / 100, attrs->lbfactor % 100,
                     t->b->s->name);
    }
}
