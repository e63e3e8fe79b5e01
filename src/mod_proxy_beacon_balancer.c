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
#pragma weak ap_proxy_hashfunc

int beacon_proxy_linked(void)
{
    return &proxy_module != NULL && ap_proxy_get_balancer != NULL &&
           ap_proxy_sync_balancer != NULL && ap_proxy_define_worker_ex != NULL &&
           ap_proxy_share_worker != NULL && ap_proxy_initialize_worker != NULL &&
           ap_proxy_parse_wstatus != NULL && ap_proxy_hashfunc != NULL;
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

static beacon_entry *entry_of(const beacon_target *t, const char *url)
{
    return beacon_registry_find(t->registry, t->b->s->name, url);
}

/* Whether beacon created url in this balancer. */
static int ours(const beacon_target *t, const char *url)
{
    return entry_of(t, url) != NULL;
}

/* ------------------------------------------------------------------ */
/* Balancer                                                            */

beacon_target *beacon_proxy_target(apr_pool_t *pconf, server_rec *s,
                                   const char *balancer_name,
                                   const char *registry_key,
                                   const beacon_member_policy *policy)
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
    t->policy = *policy;
    t->registry = beacon_registry_open(pconf, s, registry_key);
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

proxy_worker *beacon_target_find(const beacon_target *t, const char *url)
{
    proxy_worker **w = (proxy_worker **)t->b->workers->elts;
    int i;

    for (i = 0; i < t->b->workers->nelts; i++) {
        if (names_member(w[i]->s->name_ex, url)) {
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

static apr_status_t thread_lock(beacon_target *t)
{
    return lock_said(t, PROXY_THREAD_LOCK(t->b), "take", "thread");
}

static void thread_unlock(beacon_target *t)
{
    lock_said(t, PROXY_THREAD_UNLOCK(t->b), "release", "thread");
}

apr_status_t beacon_target_lock(beacon_target *t)
{
    apr_status_t rv = thread_lock(t);

    if (rv == APR_SUCCESS &&
        (rv = lock_said(t, PROXY_GLOBAL_LOCK(t->b), "take", "global"))
            != APR_SUCCESS) {
        thread_unlock(t);
    }
    return rv;
}

void beacon_target_unlock(beacon_target *t)
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
    beacon_recycle_prepare(w);
    salt_identity(w);
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

/* Where the member lives, for a restart or a recycling to find it. */
static void note_slot(beacon_entry *e, const proxy_worker_shared *shm)
{
    e->slot = shm->index;
    e->hash_def = shm->hash.def;
    e->hash_fnv = shm->hash.fnv;
}

/* Beacon takes a member out of rotation (or back): the registry keeps
 * when, and how often httpd had elected it then, for recycling's G1. */
static void mark_out(beacon_entry *e, const proxy_worker_shared *shm, int out)
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
                                     apr_pool_t *p, beacon_add_info *info)
{
    proxy_worker *w = beacon_recycle_take(t, url, p, info);
    beacon_entry *e;

    if (w == NULL || (e = entry_of(t, url)) == NULL) {
        return BEACON_ADD_NO_SLOT;
    }
    mark_out(e, w->s, 0);
    enable_returning(w->s);
    return BEACON_ADD_RECYCLED;
}

static beacon_add_result define_and_share(beacon_target *t, const char *url,
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
    w = share_new_worker(t, url, p, &result, &info->why);
    if (w == NULL) {
        return result == BEACON_ADD_NO_SLOT ? recycle_for(t, url, p, info)
                                            : result;
    }
    if ((rv = ap_proxy_initialize_worker(w, t->s, t->conf->pool)) != APR_SUCCESS) {
        info->why = apr_psprintf(p, "cannot initialize worker: %pm", &rv);
        forget_worker(t->b, w, w->s, 1, (unsigned)w->s->index);
        return BEACON_ADD_FAILED;
    }
    e = beacon_registry_put(t->registry, t->b->s->name, url);
    note_slot(e, w->s);
    count_failover_attempts(t);
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
        if ((e = entry_of(t, url)) == NULL) {
            result = BEACON_ADD_NOT_OURS;
        }
        else {
            enable_returning(existing->s);
            mark_out(e, existing->s, 0);
            result = BEACON_ADD_ADOPTED;
        }
    }
    else {
        result = define_and_share(t, url, p, info);
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
    if (w == NULL || (e = entry_of(t, url)) == NULL) {
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
        mark_out(e, w->s, disabled);
    }
    beacon_target_unlock(t);
    return rv;
}

void beacon_proxy_heard(beacon_target *t, const char *url, int *hint,
                        apr_int64_t ts, apr_time_t now)
{
    beacon_entry *e = beacon_registry_find_hinted(t->registry, t->b->s->name,
                                                  url, hint);

    /* only the owner writes these: no lock */
    if (e) {
        if (ts > e->high_ts) {
            e->high_ts = ts;
        }
        e->last_heard = now;
    }
}

/* ------------------------------------------------------------------ */
/* The admin's settings, and forgetting                               */

static int same_admin(const beacon_admin_settings *x,
                      const beacon_admin_settings *y)
{
    return x->saved == y->saved && x->flags == y->flags &&
           x->lbfactor == y->lbfactor && x->lbset == y->lbset &&
           x->method == y->method && x->interval == y->interval &&
           x->passes == y->passes && x->fails == y->fails &&
           strcmp(x->route, y->route) == 0 &&
           strcmp(x->redirect, y->redirect) == 0 &&
           strcmp(x->hcuri, y->hcuri) == 0 && strcmp(x->hcexpr, y->hcexpr) == 0;
}

/* Takes the settings balancer-manager can change; whether they changed. */
static int save_admin(beacon_admin_settings *kept, const proxy_worker_shared *shm)
{
    beacon_admin_settings now, *a = &now;

    memset(a, 0, sizeof(*a));
    a->flags = shm->status & BEACON_ADMIN_FLAGS;
    a->lbfactor = shm->lbfactor;
    a->lbset = shm->lbset;
    a->method = shm->method;
    a->interval = shm->interval;
    a->passes = shm->passes;
    a->fails = shm->fails;
    memcpy(a->route, shm->route, sizeof(a->route));
    memcpy(a->redirect, shm->redirect, sizeof(a->redirect));
    memcpy(a->hcuri, shm->hcuri, sizeof(a->hcuri));
    memcpy(a->hcexpr, shm->hcexpr, sizeof(a->hcexpr));
    /* a string cut while balancer-manager wrote it stays terminated */
    a->route[sizeof(a->route) - 1] = a->redirect[sizeof(a->redirect) - 1] = '\0';
    a->hcuri[sizeof(a->hcuri) - 1] = a->hcexpr[sizeof(a->hcexpr) - 1] = '\0';
    a->saved = 1;
    if (same_admin(kept, a)) {
        return 0;
    }
    *kept = now;
    return 1;
}

static void restore_admin(proxy_worker_shared *shm, const beacon_admin_settings *a)
{
    if (!a->saved) {
        return;
    }
    shm->status = (shm->status & ~(unsigned int)BEACON_ADMIN_FLAGS) |
                  (a->flags & BEACON_ADMIN_FLAGS);
    shm->lbfactor = a->lbfactor;
    shm->lbset = a->lbset;
    shm->method = a->method;
    shm->interval = a->interval;
    shm->passes = a->passes;
    shm->fails = a->fails;
    memcpy(shm->route, a->route, sizeof(shm->route));
    memcpy(shm->redirect, a->redirect, sizeof(shm->redirect));
    memcpy(shm->hcuri, a->hcuri, sizeof(shm->hcuri));
    memcpy(shm->hcexpr, a->hcexpr, sizeof(shm->hcexpr));
}

/* A member out of rotation and silent past ProxyBeaconForget. */
static int is_forgettable(const beacon_target *t, const beacon_entry *e,
                          apr_time_t now)
{
    return e->forgotten ||
           (t->policy.forget > 0 && e->out &&
            now - e->last_heard > t->policy.forget);
}

/* The admin's flags as balancer-manager's letters, for a log line. */
static const char *admin_letters(apr_pool_t *p, unsigned int flags)
{
    static const struct {
        unsigned int flag;
        const char *letter;
    } letters[] = {
        {PROXY_WORKER_STOPPED, "S"},     {PROXY_WORKER_DRAIN, "N"},
        {PROXY_WORKER_HOT_STANDBY, "H"}, {PROXY_WORKER_HOT_SPARE, "R"},
        {PROXY_WORKER_IGNORE_ERRORS, "I"},
    };
    char *text = apr_pcalloc(p, 8), *c = text;
    unsigned i;

    for (i = 0; i < sizeof(letters) / sizeof(letters[0]); i++) {
        if (flags & letters[i].flag) {
            *c++ = *letters[i].letter;
        }
    }
    return text;
}

int beacon_proxy_keep(beacon_target *t, apr_time_t now, apr_pool_t *p)
{
    int forgotten = 0;
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(t->registry, i);
        proxy_worker_shared *shm;

        if (e == NULL || strcmp(e->balancer, t->b->s->name) != 0 ||
            e->state != BEACON_ENTRY_MEMBER ||
            (shm = beacon_target_slot(t, e)) == NULL) {
            continue;
        }
        if (save_admin(&e->admin, shm)) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, t->s, BCNLOGNO(00091)
                         "kept the settings of %s in %s for restarts: "
                         "flags '%s', lbfactor %d, lbset %d, route '%s'",
                         e->url, t->b->s->name, admin_letters(p, e->admin.flags),
                         e->admin.lbfactor, e->admin.lbset,
                         ap_escape_logitem(p, e->admin.route));
        }
        if (!e->forgotten && is_forgettable(t, e, now)) {
            e->forgotten = 1;
            forgotten++;
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00089)
                         "forgot backend %s of %s: silent for %" APR_TIME_T_FMT
                         " s; its slot is free to recycle, and a restart "
                         "does not restore it", e->url, t->b->s->name,
                         apr_time_sec(now - e->last_heard));
        }
    }
    return forgotten;
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
    *members = apr_pcalloc(p, sizeof(beacon_member) * (t->b->workers->nelts + 1));
    for (i = 0; i < t->b->workers->nelts; i++) {
        beacon_entry *e = entry_of(t, w[i]->s->name_ex);

        if (e) {
            (*members)[n].url = apr_pstrdup(p, e->url);
            (*members)[n].disabled =
                (w[i]->s->status & PROXY_WORKER_DISABLED) != 0;
            (*members)[n].high_ts = e->high_ts;
            n++;
        }
    }
    beacon_target_unlock(t);
    return n;
}

/* ------------------------------------------------------------------ */
/* Restoring (post_config, parent, before any child exists)            */

/* Whether url is a member's name by today's identity rules. */
static int is_canonical(const char *url)
{
    char canonical[BEACON_URL_MAX];

    return beacon_url_canonicalize(url, strlen(url), canonical,
                                   sizeof(canonical)) == NULL &&
           strcmp(canonical, url) == 0;
}

/* Drops the slot BalancerPersist brought back for e, if any: no child
 * exists yet, so unlisting it from the parent's list removes it. */
static void drop_kept_slot(beacon_target *t, const beacon_entry *e)
{
    proxy_worker_shared *shm = beacon_target_slot(t, e);
    proxy_worker **w = (proxy_worker **)t->b->workers->elts;
    int i;

    if (shm == NULL) {
        return;
    }
    for (i = 0; i < t->b->workers->nelts; i++) {
        if (w[i]->s == shm) {
            unlist_worker(t->b, w[i]);
            break;
        }
    }
    shm->hash.def = shm->hash.fnv = 0;
    t->b->storage->release(t->b->wslot, (unsigned)e->slot);
}

/* A member the configuration names (a worker of that name that is not
 * beacon's slot): the admin's. */
static int is_configured(const beacon_target *t, const char *url,
                         const proxy_worker_shared *kept)
{
    proxy_worker **w = (proxy_worker **)t->b->workers->elts;
    int i;

    for (i = 0; i < t->b->workers->nelts; i++) {
        if (w[i]->s != kept && names_member(w[i]->s->name_ex, url)) {
            return 1;
        }
    }
    return 0;
}

/* Whether e was restorable by today's rules; NULL (and why) if not. */
static const char *unsound_entry(const beacon_target *t, const beacon_entry *e)
{
    if (strcmp(e->balancer, t->b->s->name) != 0) {
        return "another balancer's";
    }
    if (!is_canonical(e->url) ||
        (e->state == BEACON_ENTRY_RECYCLING && !is_canonical(e->next_url))) {
        return "not a member's name";
    }
    if (e->state != BEACON_ENTRY_MEMBER && e->state != BEACON_ENTRY_RECYCLING) {
        return "an unknown state";
    }
    return NULL;
}

/* The slot e's member gets in this generation: BalancerPersist's, or a
 * new one; NULL (logged) when none can be had. */
static proxy_worker_shared *slot_for(beacon_target *t, beacon_entry *e,
                                     apr_pool_t *p)
{
    proxy_worker_shared *kept = beacon_target_slot(t, e);
    beacon_add_result result;
    const char *why = NULL;
    proxy_worker *w;

    if (kept) {
        return kept;
    }
    if ((w = share_new_worker(t, e->url, p, &result, &why)) != NULL) {
        return w->s;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, t->s, BCNLOGNO(00009)
                 "cannot restore %s in %s: %s; it joins again with its next "
                 "announcement", e->url, t->b->s->name,
                 result == BEACON_ADD_NO_SLOT ? "no free growth slot" : why);
    return NULL;
}

/* Puts e's member back as it was; 0 when it is not (logged). */
static int restore_member(beacon_target *t, beacon_entry *e, apr_time_t now,
                          apr_pool_t *p)
{
    proxy_worker_shared *shm;

    if (is_configured(t, e->url, beacon_target_slot(t, e))) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, t->s, BCNLOGNO(00008)
                     "%s is now configured in %s; beacon no longer "
                     "manages it", e->url, t->b->s->name);
        drop_kept_slot(t, e);
        beacon_registry_forget(e);
        return 0;
    }
    if ((shm = slot_for(t, e, p)) == NULL) {
        beacon_registry_forget(e);
        return 0;
    }
    note_slot(e, shm);
    if (!e->out && t->policy.timeout > 0 &&
        now - e->last_heard > t->policy.timeout) {
        mark_out(e, shm, 1); /* its lease lapsed while httpd was down */
    }
    restore_admin(shm, &e->admin);
    /* its next announcement puts it back; no child exists: plain writes */
    shm->status = e->out ? shm->status | PROXY_WORKER_DISABLED
                         : shm->status & ~(unsigned int)PROXY_WORKER_DISABLED;
    /* an address expiry of the last epoch would hold recycling back */
    shm->address_expiry = 0;
    return 1;
}

int beacon_proxy_restore(beacon_target *t, apr_pool_t *p, int *forgotten)
{
    unsigned i, skipped = beacon_registry_damaged(t->registry);
    apr_time_t now = apr_time_now();
    int restored = 0;

    *forgotten = 0;
    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(t->registry, i);

        if (e == NULL) {
            continue;
        }
        if (unsound_entry(t, e) != NULL) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, t->s, BCNLOGNO(00090)
                         "registry entry %u of %s skipped: %s", i,
                         t->b->s->name, unsound_entry(t, e));
            drop_kept_slot(t, e);
            beacon_registry_forget(e);
            skipped++;
            continue;
        }
        if (e->state == BEACON_ENTRY_RECYCLING) {
            beacon_recycle_finish_entry(t, e, beacon_target_slot(t, e), p);
        }
        if (is_forgettable(t, e, now)) {
            drop_kept_slot(t, e);
            beacon_registry_forget(e);
            (*forgotten)++;
        }
        else if (restore_member(t, e, now, p)) {
            restored++;
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

/* ------------------------------------------------------------------ */
/* For the status pages                                                */

void beacon_proxy_growth(beacon_target *t, int *used, int *free_slots,
                         int *recyclable)
{
    *free_slots = (int)t->b->storage->num_free_slots(t->b->wslot);
    *used = t->b->growth - *free_slots;
    *recyclable = beacon_recycle_count(t, apr_time_now());
}

apr_time_t beacon_proxy_last_heard(beacon_target *t, const char *url)
{
    beacon_entry *e = entry_of(t, url);

    return e ? e->last_heard : 0;
}

const char *beacon_proxy_worker_flags(beacon_target *t, const char *url,
                                      apr_pool_t *p)
{
    const char *flags = NULL;
    proxy_worker *w;

    if (lock_members(t) == APR_SUCCESS) {
        w = beacon_target_find(t, url);
        flags = w ? ap_proxy_parse_wstatus(p, w) : NULL;
        thread_unlock(t);
    }
    return flags;
}
