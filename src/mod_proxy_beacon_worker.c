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

#include <mod_proxy.h>

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
#pragma weak ap_proxy_trans_match

/*
 * Given to every member beacon adds, so that its slot can be renamed one
 * day (mod_proxy_beacon_recycle.c): an address TTL of five seconds (each
 * child resolves a member's host again at most every 5 s, so a DNS name
 * follows its records, and a renamed slot waits about that long), connect
 * and acquire waits bounded, and idle pooled connections that expire
 * (after a minute: at 5 s, a balancer of 1,000 members closed and opened
 * again 5% of its backend connections, a pool's spare ones between two
 * bursts, and lost 8% of its throughput against static members).
 */
#define ADDRESS_TTL 5 /* seconds, as httpd counts it */
#define CONNECT_TIMEOUT apr_time_from_sec(3)
#define ACQUIRE_TIMEOUT apr_time_from_sec(1)
#define IDLE_TTL apr_time_from_sec(60)
/* httpd's Timeout when a worker has none of its own */
#define HTTPD_TIMEOUT apr_time_from_sec(60)

/* beacon's names for httpd's flags and sizes are httpd's values */
_Static_assert(BEACON_W_IGNORE_ERRORS == PROXY_WORKER_IGNORE_ERRORS &&
               BEACON_W_DRAIN == PROXY_WORKER_DRAIN &&
               BEACON_W_DISABLED == PROXY_WORKER_DISABLED &&
               BEACON_W_STOPPED == PROXY_WORKER_STOPPED &&
               BEACON_W_IN_ERROR == PROXY_WORKER_IN_ERROR &&
               BEACON_W_HOT_STANDBY == PROXY_WORKER_HOT_STANDBY &&
               BEACON_W_HC_FAIL == PROXY_WORKER_HC_FAIL &&
               BEACON_W_HOT_SPARE == PROXY_WORKER_HOT_SPARE,
               "beacon's flag names differ from httpd's flags");
_Static_assert(BEACON_SLOT_ROUTE_SIZE == PROXY_WORKER_MAX_ROUTE_SIZE &&
               BEACON_SLOT_SCHEME_SIZE == PROXY_WORKER_MAX_SCHEME_SIZE &&
               BEACON_BALANCER_NAME_SIZE == PROXY_BALANCER_MAX_NAME_SIZE &&
               sizeof(apr_int32_t) == sizeof(hcmethod_t),
               "the registry's copies of httpd's fields differ in size");

struct beacon_worker_balancer {
    server_rec *s;
    proxy_server_conf *conf;
    proxy_balancer *b;
    /* The owner's index of its member list by canonical name, so that an
     * announcement finds its member without a walk of a thousand: built
     * when this process becomes the receiver's owner (beacon_worker_index)
     * and kept by the adds and renames it makes itself, for its watchdog
     * thread alone. Any other process or thread walks the list. */
    apr_hash_t *by_name;
    apr_pool_t *index_pool;   /* its keys; made anew by a rebuild */
    pid_t indexed_by;         /* 0: no index in this process */
    int indexed;              /* entries of the list it holds */
    int keys;                 /* keys made since the last rebuild */
};

/* A slot is httpd's shared worker record; the handle is only its name. */
#define shm_of(slot) ((proxy_worker_shared *)(void *)(slot))
#define slot_name(shm) ((beacon_slot *)(void *)(shm))

/* ------------------------------------------------------------------ */
/* The balancer                                                        */

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

/* One ProxyPass: its verdict, or BEACON_NO_STATIC_ROUTE. */
static int static_verdict(request_rec *r, struct proxy_alias *ent,
                          proxy_dir_conf *dconf)
{
    int rv;

    if (ent->flags & PROXYPASS_MAP_ENCODED) {
        return BEACON_NO_STATIC_ROUTE;
    }
    rv = ap_proxy_trans_match(r, ent, dconf);
    return rv == HTTP_CONTINUE ? BEACON_NO_STATIC_ROUTE : rv;
}

/* The <Location>'s ProxyPass, then the server's, in order: the first
 * verdict, or BEACON_NO_STATIC_ROUTE. */
static int static_walk(request_rec *r)
{
    proxy_dir_conf *dconf = ap_get_module_config(r->per_dir_config, &proxy_module);
    proxy_server_conf *conf = proxy_conf(r->server);
    int i, rv;

    if (ap_proxy_trans_match == NULL) {
        return BEACON_NO_STATIC_ROUTE;
    }
    if (dconf->alias &&
        (rv = static_verdict(r, dconf->alias, dconf)) != BEACON_NO_STATIC_ROUTE) {
        return rv;
    }
    for (i = 0; i < conf->aliases->nelts; i++) {
        struct proxy_alias *ent = &((struct proxy_alias *)conf->aliases->elts)[i];

        if ((rv = static_verdict(r, ent, dconf)) != BEACON_NO_STATIC_ROUTE) {
            return rv;
        }
    }
    return BEACON_NO_STATIC_ROUTE;
}

int beacon_worker_static_route(request_rec *r)
{
    return static_walk(r);
}

int beacon_worker_static_match(request_rec *r, char *uri)
{
    /* ap_proxy_trans_match writes what it matches into the request
     * (filename, handler, proxyreq, notes): it gets a copy that holds uri
     * and tables of its own, and r stays as it was */
    request_rec shadow = *r;

    shadow.uri = uri;
    shadow.notes = apr_table_copy(r->pool, r->notes);
    return static_walk(&shadow) != BEACON_NO_STATIC_ROUTE;
}

static proxy_balancer *balancer_of(apr_pool_t *p, server_rec *s,
                                   const char *name)
{
    return ap_proxy_get_balancer(p, proxy_conf(s),
                                 apr_pstrcat(p, BALANCER_PREFIX, name, NULL), 0);
}

int beacon_worker_balancer_defined(apr_pool_t *p, server_rec *s,
                                   const char *name)
{
    return balancer_of(p, s, name) != NULL;
}

const void *beacon_worker_balancer_identity(apr_pool_t *p, server_rec *s,
                                            const char *name)
{
    proxy_balancer *b = balancer_of(p, s, name);

    /* a virtual host's copy of an inherited balancer shares its state */
    return b ? (const void *)b->s : NULL;
}

int beacon_worker_balancer_growth(apr_pool_t *p, server_rec *s,
                                  const char *name)
{
    proxy_balancer *b = balancer_of(p, s, name);

    return b ? b->growth : -1;
}

const char *beacon_worker_balancer_lbmethod(apr_pool_t *p, server_rec *s,
                                            const char *name)
{
    proxy_balancer *b = balancer_of(p, s, name);

    if (b == NULL) {
        return NULL;
    }
    /* what ProxySet lbmethod= wrote (every process looks its provider up
     * by it), else the provider httpd gave the balancer */
    if (b->s && b->s->lbpname[0]) {
        return apr_pstrndup(p, b->s->lbpname, sizeof(b->s->lbpname));
    }
    return b->lbmethod ? b->lbmethod->name : NULL;
}

/*
 * Gives a member list room for n members, in place: the header stays the
 * one that a virtual host's copy of an inherited balancer shares, so that
 * copy keeps seeing every member.
 */
static void make_room(apr_array_header_t *list, int n)
{
    void *elts;

    if (list->nalloc >= n) {
        return;
    }
    elts = apr_pcalloc(list->pool, (apr_size_t)n * sizeof(proxy_worker *));
    memcpy(elts, list->elts, (apr_size_t)list->nelts * sizeof(proxy_worker *));
    atomic_thread_fence(memory_order_release); /* the copy, then the storage */
    list->elts = elts;
    list->nalloc = n;
}

beacon_worker_balancer *beacon_worker_open(apr_pool_t *pconf, server_rec *s,
                                           const char *name)
{
    beacon_worker_balancer *ws = apr_pcalloc(pconf, sizeof(*ws));

    ws->s = s;
    ws->conf = proxy_conf(s);
    ws->b = balancer_of(pconf, s, name);
    if (ws->b == NULL || ws->b->s == NULL || ws->b->wslot == NULL) {
        return NULL;
    }
    /* Room for a member in every slot, before any child exists: httpd
     * makes the list with room for 5 and grows it by moving it
     * (apr_array_push), which a walk in progress does not survive: it
     * goes on reading the old storage up to the new count
     * (balancer-manager crashed so in the owner child). Children that
     * adopt members by sync then push into the room made here too. */
    make_room(ws->b->workers, ws->b->max_workers);
    return ws;
}

const char *beacon_worker_balancer_name(const beacon_worker_balancer *ws)
{
    return ws->b->s->name;
}

server_rec *beacon_worker_server(const beacon_worker_balancer *ws)
{
    return ws->s;
}

void beacon_worker_growth(const beacon_worker_balancer *ws, int *used, int *free_slots)
{
    *free_slots = (int)ws->b->storage->num_free_slots(ws->b->wslot);
    *used = ws->b->growth - *free_slots;
}

int beacon_worker_failover(const beacon_worker_balancer *ws, int *max_attempts,
                           int *in_effect)
{
    *max_attempts = ws->b->s->max_attempts;
    *in_effect = ws->b->s->max_attempts_set;
    return beacon_worker_count(ws);
}

void beacon_worker_set_failover(beacon_worker_balancer *ws, int max_attempts)
{
    if (max_attempts >= 0) {
        ws->b->s->max_attempts = max_attempts;
    }
    ws->b->s->max_attempts_set = 1;
}

/* ------------------------------------------------------------------ */
/* Locks and this child's member list                                  */

/*
 * The balancer's locks, checked as balancer-manager checks them: a lock
 * that fails is said, with the balancer's name, and nothing is changed
 * without it. Returns rv.
 */
static apr_status_t lock_said(beacon_worker_balancer *ws, apr_status_t rv,
                              const char *action, const char *which)
{
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, ws->s, BCNLOGNO(00014)
                     "cannot %s the %s lock of %s", action, which,
                     ws->b->s->name);
    }
    return rv;
}

apr_status_t beacon_worker_thread_lock(beacon_worker_balancer *ws)
{
    return lock_said(ws, PROXY_THREAD_LOCK(ws->b), "take", "thread");
}

void beacon_worker_thread_unlock(beacon_worker_balancer *ws)
{
    lock_said(ws, PROXY_THREAD_UNLOCK(ws->b), "release", "thread");
}

void beacon_worker_unlock(beacon_worker_balancer *ws)
{
    lock_said(ws, PROXY_GLOBAL_UNLOCK(ws->b), "release", "global");
    beacon_worker_thread_unlock(ws);
}

static void sync_members(beacon_worker_balancer *ws)
{
    ap_proxy_sync_balancer(ws->b, ws->s, ws->conf);
}

apr_status_t beacon_worker_hold(beacon_worker_balancer *ws)
{
    apr_status_t rv = beacon_worker_thread_lock(ws);

    if (rv == APR_SUCCESS &&
        (rv = lock_said(ws, PROXY_GLOBAL_LOCK(ws->b), "take", "global"))
            != APR_SUCCESS) {
        beacon_worker_thread_unlock(ws);
    }
    if (rv == APR_SUCCESS) {
        sync_members(ws);
    }
    return rv;
}

/*
 * This child's member list, current and held still: request threads of
 * this child add to it when they sync, so it is walked under the thread
 * lock (as httpd's pre_request syncs under it).
 */
apr_status_t beacon_worker_lock_members(beacon_worker_balancer *ws)
{
    apr_status_t rv = beacon_worker_thread_lock(ws);

    if (rv == APR_SUCCESS) {
        sync_members(ws);
    }
    return rv;
}

void beacon_worker_pick_up(beacon_worker_balancer *ws)
{
    if (ws->b->s->wupdated > ws->b->wupdated &&
        beacon_worker_thread_lock(ws) == APR_SUCCESS) {
        sync_members(ws);
        beacon_worker_thread_unlock(ws);
    }
}

/* A worker's name in canonical form into canonical (BEACON_URL_MAX);
 * 0 for a name that is no origin (a path, a socket). */
static int canonical_name(const char *name, char *canonical)
{
    return beacon_url_canonicalize(name, strlen(name), canonical,
                                   BEACON_URL_MAX) == NULL;
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
           (canonical_name(name, canonical) && strcmp(canonical, url) == 0);
}

static proxy_worker *worker_walked_to(const beacon_worker_balancer *ws, const char *url)
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

/* The index key of a worker's name: its canonical form (from the index's
 * pool), or NULL for a name that is no origin. */
static const char *index_key(beacon_worker_balancer *ws, const char *name)
{
    char canonical[BEACON_URL_MAX];

    if (!canonical_name(name, canonical)) {
        return NULL;
    }
    ws->keys++;
    return apr_pstrdup(ws->index_pool, canonical);
}

/* Under its name, unless one before it in the list has that name: the
 * first, as a walk finds it (the configuration's members come first). */
static void index_put(beacon_worker_balancer *ws, proxy_worker *w)
{
    const char *key = index_key(ws, w->s->name_ex);

    if (key != NULL && apr_hash_get(ws->by_name, key, APR_HASH_KEY_STRING) == NULL) {
        apr_hash_set(ws->by_name, key, APR_HASH_KEY_STRING, w);
    }
}

static void index_rebuild(beacon_worker_balancer *ws)
{
    if (ws->index_pool == NULL) {
        apr_pool_create(&ws->index_pool, ws->conf->pool);
    }
    apr_pool_clear(ws->index_pool);
    ws->by_name = apr_hash_make(ws->index_pool);
    ws->indexed = ws->keys = 0;
}

/* Brings the index up to the list: members appended since (a sync, an
 * add) are put in; a list that shrank, or keys piled up by renames (each
 * leaves its old key in the pool), make it anew: a cost of one walk per
 * list's worth of renames. */
static void index_catch_up(beacon_worker_balancer *ws)
{
    proxy_worker **list = (proxy_worker **)ws->b->workers->elts;
    int n = ws->b->workers->nelts;

    if (n < ws->indexed || ws->keys > 4 * (n + 64)) {
        index_rebuild(ws);
    }
    for (; ws->indexed < n; ws->indexed++) {
        index_put(ws, list[ws->indexed]);
    }
}

static int is_indexed(const beacon_worker_balancer *ws)
{
    return ws->indexed_by == getpid();
}

/* The worker of slot shm, taken out of the index under its name (before
 * a rename, which puts it back under the new one). */
static proxy_worker *index_take(beacon_worker_balancer *ws, proxy_worker_shared *shm)
{
    proxy_worker **list = (proxy_worker **)ws->b->workers->elts;
    const char *key;
    proxy_worker *w;
    int i;

    index_catch_up(ws);
    key = index_key(ws, shm->name_ex);
    w = key ? apr_hash_get(ws->by_name, key, APR_HASH_KEY_STRING) : NULL;
    if (w != NULL && w->s == shm) {
        apr_hash_set(ws->by_name, key, APR_HASH_KEY_STRING, NULL);
        return w;
    }
    for (i = 0; i < ws->b->workers->nelts; i++) {
        if (list[i]->s == shm) {
            return list[i]; /* a name the index could not hold */
        }
    }
    return NULL;
}

void beacon_worker_index(beacon_worker_balancer *ws)
{
    ws->indexed_by = getpid();
    index_rebuild(ws);
    index_catch_up(ws);
}

/* The owner's watchdog thread finds a member by its index, anyone else by
 * a walk of the list. */
static proxy_worker *worker_named(beacon_worker_balancer *ws, const char *url)
{
    proxy_worker *w;

    if (!is_indexed(ws)) {
        return worker_walked_to(ws, url);
    }
    index_catch_up(ws);
    w = apr_hash_get(ws->by_name, url, APR_HASH_KEY_STRING);
    return w && beacon_worker_names(w->s->name_ex, url) ? w : NULL;
}

beacon_slot *beacon_worker_find(beacon_worker_balancer *ws, const char *url)
{
    proxy_worker *w = worker_named(ws, url);

    return w ? slot_name(w->s) : NULL;
}

int beacon_worker_confirmed(beacon_worker_balancer *ws, const char *url)
{
    proxy_worker *w = worker_named(ws, url);

    return w != NULL && PROXY_WORKER_IS_INITIALIZED(w);
}

int beacon_worker_count(const beacon_worker_balancer *ws)
{
    return ws->b->workers->nelts;
}

beacon_slot *beacon_worker_at(const beacon_worker_balancer *ws, int i)
{
    return slot_name(((proxy_worker **)ws->b->workers->elts)[i]->s);
}

int beacon_worker_configured(beacon_worker_balancer *ws, const char *url,
                             const beacon_slot *kept)
{
    proxy_worker **w = (proxy_worker **)ws->b->workers->elts;
    proxy_worker *first;
    int i;

    if (is_indexed(ws)) {
        /* the configuration's members come first in the list */
        first = worker_named(ws, url);
        return first != NULL && first->s != shm_of(kept);
    }
    for (i = 0; i < ws->b->workers->nelts; i++) {
        if (w[i]->s != shm_of(kept) &&
            beacon_worker_names(w[i]->s->name_ex, url)) {
            return 1;
        }
    }
    return 0;
}

/* Takes w off this child's member list, wherever it stands. */
static void unlist(proxy_balancer *b, const proxy_worker *w)
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
 * Appends w, whole, to this child's member list. Request threads walk the
 * list without a lock (httpd's election, balancer-manager's pages), so the
 * slot is written before the count that makes it visible. They read the
 * storage once and the count at every step, so the storage must never
 * move while they may walk: beacon_worker_open made room for every slot
 * of the balancer, and every member holds one. Under the thread lock.
 */
void beacon_worker_list(beacon_worker_balancer *ws, beacon_worker *w)
{
    apr_array_header_t *list = ws->b->workers;

    if (list->nelts == list->nalloc) {
        /* not while each member holds a slot; grown as httpd grows it */
        make_room(list, list->nalloc * 2 + 1);
    }
    ((proxy_worker **)list->elts)[list->nelts] = w;
    atomic_thread_fence(memory_order_release); /* the slot, then the count */
    list->nelts++;
}

/* ------------------------------------------------------------------ */
/* Slots                                                               */

static proxy_worker_shared *slot_shm(const proxy_balancer *b, int i)
{
    proxy_worker_shared *shm = NULL;

    if (i < 0 || i >= b->max_workers ||
        b->storage->dptr(b->wslot, (unsigned)i, (void **)&shm) != APR_SUCCESS) {
        return NULL;
    }
    return shm;
}

beacon_slot *beacon_worker_slot(const beacon_worker_balancer *ws, const beacon_entry *e)
{
    proxy_worker_shared *shm = slot_shm(ws->b, e->slot);

    return shm && shm->hash.def == e->hash_def && shm->hash.fnv == e->hash_fnv &&
                   (shm->hash.def || shm->hash.fnv)
               ? slot_name(shm)
               : NULL;
}

/* Where the member lives, for a restart or a recycling to find it. */
void beacon_worker_note_slot(beacon_entry *e, const beacon_slot *slot)
{
    const proxy_worker_shared *shm = shm_of(slot);

    e->slot = shm->index;
    e->hash_def = shm->hash.def;
    e->hash_fnv = shm->hash.fnv;
}

/* mod_proxy's epoch of address expiries, or NULL when it keeps none. */
static const apr_time_t *expiry_epoch(void)
{
    return ap_retained_data_get("proxy_start_time");
}

void beacon_worker_view(const beacon_slot *slot, beacon_slot_view *v)
{
    const proxy_worker_shared *shm = shm_of(slot);

    v->name = shm->name_ex;
    v->route = shm->route;
    v->lbfactor = shm->lbfactor;
    v->status = shm->status;
    v->elected = shm->elected;
    v->busy = shm->busy;
    v->timeout = shm->timeout_set ? shm->timeout : HTTPD_TIMEOUT;
    v->conn_timeout = shm->conn_timeout_set ? shm->conn_timeout : v->timeout;
    v->acquire = shm->acquire_set ? shm->acquire : 0;
    v->address_ttl = apr_time_from_sec(shm->address_ttl);
    v->renamable = shm->uds_path[0] == '\0' && shm->method == NONE &&
                   (!shm->is_address_reusable || shm->address_ttl > 0);
    v->expiry_unknown = shm->is_address_reusable && expiry_epoch() == NULL;
    v->addresses_expire_at =
        shm->is_address_reusable && !v->expiry_unknown
            ? *expiry_epoch() +
                  apr_time_from_sec((apr_time_t)shm->address_expiry + 1)
            : 0;
}

/*
 * A compare-and-swap on the status word that every process shares, so
 * that this write never undoes a change another process makes to another
 * flag at the same moment (the proxy's Err, health checks). httpd's own
 * writes are plain read-modify-writes, which can still lose this one:
 * lease transitions are rare, and the next one writes again.
 */
static void set_flags(proxy_worker_shared *shm, apr_uint32_t set,
                      apr_uint32_t clear)
{
    volatile apr_uint32_t *status = (volatile apr_uint32_t *)&shm->status;
    apr_uint32_t old, new;

    do {
        old = apr_atomic_read32(status);
        new = (old | set) & ~clear;
    } while (apr_atomic_cas32(status, new, old) != old);
}

static proxy_worker *route_holder(const beacon_worker_balancer *ws,
                                  const proxy_worker_shared *shm,
                                  const char *route)
{
    proxy_worker **w = (proxy_worker **)ws->b->workers->elts;
    int i;

    for (i = 0; i < ws->b->workers->nelts; i++) {
        if (w[i]->s != shm && strcmp(w[i]->s->route, route) == 0) {
            return w[i];
        }
    }
    return NULL;
}

void beacon_worker_look(const beacon_worker_balancer *ws, const beacon_slot *slot,
                        const char *route, beacon_slot_look *look)
{
    /* a slot that has the route already needs no walk for its holder:
     * the route stays as it is */
    proxy_worker *holder = route && route[0] &&
                                   strcmp(shm_of(slot)->route, route) != 0
                               ? route_holder(ws, shm_of(slot), route)
                               : NULL;

    beacon_worker_view(slot, &look->self);
    look->holder = holder ? slot_name(holder->s) : NULL;
    if (holder) {
        beacon_worker_view(look->holder, &look->holder_view);
    }
}

/*
 * A backend that was refused a connection while it stopped (its listener
 * closes as its state=leaving goes out) is in the proxy's error state,
 * which the proxy keeps for the worker's retry (60 s by default). Enabled,
 * its retry is due now: the proxy itself clears the error on the next
 * request and sets it again if that connection fails.
 */
void beacon_worker_apply(beacon_slot *slot, const beacon_slot_change *c)
{
    proxy_worker_shared *shm = shm_of(slot);

    if (c->route_from) {
        shm_of(c->route_from)->route[0] = '\0';
    }
    if (c->route) {
        apr_cpystrn(shm->route, c->route, sizeof(shm->route));
    }
    if (c->lbfactor) {
        shm->lbfactor = c->lbfactor;
    }
    if (c->set || c->clear) {
        set_flags(shm, c->set, c->clear);
    }
    if (c->enable) {
        if (shm->status & PROXY_WORKER_IN_ERROR) {
            shm->error_time = 0;
        }
        set_flags(shm, 0, PROXY_WORKER_DISABLED);
    }
}

/*
 * The settings balancer-manager lets an admin type, field by field: one
 * list, so that taking, comparing and giving back cannot disagree.
 */
#define ADMIN_NUMBERS(X) X(lbfactor) X(lbset) X(method) X(interval) X(passes) X(fails)
#define ADMIN_STRINGS(X) X(route) X(redirect) X(hcuri) X(hcexpr)

static int same_admin(const beacon_admin_settings *x,
                      const beacon_admin_settings *y)
{
#define SAME_NUMBER(f) &&x->f == y->f
#define SAME_STRING(f) &&strcmp(x->f, y->f) == 0
    return x->saved == y->saved && x->flags == y->flags
        ADMIN_NUMBERS(SAME_NUMBER) ADMIN_STRINGS(SAME_STRING);
#undef SAME_NUMBER
#undef SAME_STRING
}

int beacon_worker_take_admin(beacon_admin_settings *kept,
                             const beacon_slot *slot)
{
    const proxy_worker_shared *shm = shm_of(slot);
    beacon_admin_settings now;

    memset(&now, 0, sizeof(now));
    now.saved = 1;
    now.flags = shm->status & BEACON_ADMIN_FLAGS;
#define TAKE_NUMBER(f) now.f = shm->f;
    /* a string cut while balancer-manager wrote it stays terminated */
#define TAKE_STRING(f) apr_cpystrn(now.f, shm->f, sizeof(now.f));
    ADMIN_NUMBERS(TAKE_NUMBER)
    ADMIN_STRINGS(TAKE_STRING)
#undef TAKE_NUMBER
#undef TAKE_STRING
    if (same_admin(kept, &now)) {
        return 0;
    }
    *kept = now;
    return 1;
}

void beacon_worker_give_admin(beacon_slot *slot, const beacon_admin_settings *a)
{
    proxy_worker_shared *shm = shm_of(slot);

    if (!a->saved) {
        return;
    }
    shm->status = (shm->status & ~(unsigned int)BEACON_ADMIN_FLAGS) |
                  (a->flags & BEACON_ADMIN_FLAGS);
#define GIVE_NUMBER(f) shm->f = a->f;
#define GIVE_STRING(f) memcpy(shm->f, a->f, sizeof(shm->f));
    ADMIN_NUMBERS(GIVE_NUMBER)
    ADMIN_STRINGS(GIVE_STRING)
#undef GIVE_NUMBER
#undef GIVE_STRING
}

void beacon_worker_restart_slot(beacon_slot *slot, int out)
{
    proxy_worker_shared *shm = shm_of(slot);

    /* no child exists: plain writes */
    shm->status = out ? shm->status | PROXY_WORKER_DISABLED
                      : shm->status & ~(unsigned int)PROXY_WORKER_DISABLED;
    shm->address_expiry = 0;
}

void beacon_worker_drop_slot(beacon_worker_balancer *ws, const beacon_entry *e)
{
    beacon_slot *slot = beacon_worker_slot(ws, e);
    proxy_worker **w = (proxy_worker **)ws->b->workers->elts;
    proxy_worker_shared *shm;
    int i;

    if (slot == NULL) {
        return;
    }
    shm = shm_of(slot);
    /* no child exists yet: unlisting it from the parent's list removes it */
    for (i = 0; i < ws->b->workers->nelts; i++) {
        if (w[i]->s == shm) {
            unlist(ws->b, w[i]);
            break;
        }
    }
    shm->hash.def = shm->hash.fnv = 0;
    ws->b->storage->release(ws->b->wslot, (unsigned)e->slot);
}

/* ------------------------------------------------------------------ */
/* Defining and renaming members                                       */

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

/*
 * Undo of a partial add, as if the worker had never been defined: no
 * half-built worker in this child's list (a request would use it) and no
 * claimed slot in shm.
 */
static void forget(proxy_balancer *b, const proxy_worker *w,
                   proxy_worker_shared *shm, int have_slot, unsigned idx)
{
    unlist(b, w);
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
 * The worker comes from the proxy configuration's pool, as the workers
 * balancer-manager adds and a sync adopts do: it must live as long as the
 * child's configuration, since request threads keep using it after the
 * watchdog thread that added it has ended (a graceful stop ends that
 * thread first).
 *
 * *why (from p) says what went wrong; the caller logs it, rate-limited
 * where a peer can repeat it.
 */
beacon_worker *beacon_worker_share_new(beacon_worker_balancer *ws,
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
     * whole (beacon_worker_commit) */
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
        forget(b, w, NULL, 0, 0);
        if (rv == APR_EINVAL) {
            *no_slot = 1;
        }
        *why = apr_psprintf(p, "cannot take a growth slot: %pm", &rv);
        return NULL;
    }
    if ((rv = b->storage->dptr(b->wslot, idx, (void **)&shm)) != APR_SUCCESS ||
        (rv = ap_proxy_share_worker(w, shm, (int)idx)) != APR_SUCCESS) {
        *why = apr_psprintf(p, "cannot share worker: %pm", &rv);
        forget(b, w, shm, 1, idx);
        return NULL;
    }
    return w;
}

const char *beacon_worker_define_reserved(apr_pool_t *p, server_rec *s,
                                          const char *name,
                                          const beacon_member_params *params,
                                          const char *url)
{
    proxy_balancer *b = balancer_of(p, s, name);
    proxy_server_conf *conf = proxy_conf(s);
    proxy_worker *w = NULL;
    char *err;

    if (b == NULL) {
        return "no such balancer";
    }
    err = ap_proxy_define_worker_ex(p, &w, b, conf, url,
                                    AP_PROXY_WORKER_IS_PREFIX);
    if (err != NULL) {
        return err;
    }
    PROXY_COPY_CONF_PARAMS(w, conf);
    member_settings(w);
    beacon_params_apply(p, s, params, w);
    /* shared by mod_proxy_balancer as it shares the configured members;
     * never in rotation before a backend takes it, and stopped, so that
     * no health check (ProxyBeaconMemberParams hc...) ever looks up its
     * name: mod_proxy_hcheck skips stopped members only */
    w->s->status |= BEACON_PLACEHOLDER_FLAGS;
    return NULL;
}

apr_uint32_t beacon_worker_identity_of(const char *url)
{
    return ap_proxy_hashfunc(url, PROXY_HASHFUNC_DEFAULT);
}

beacon_slot *beacon_worker_slot_of(beacon_worker *w)
{
    return slot_name(w->s);
}

apr_status_t beacon_worker_commit(beacon_worker_balancer *ws, beacon_worker *w,
                                  apr_pool_t *p, const char **why)
{
    apr_status_t rv = ap_proxy_initialize_worker(w, ws->s, ws->conf->pool);

    if (rv != APR_SUCCESS) {
        *why = apr_psprintf(p, "cannot initialize worker: %pm", &rv);
        forget(ws->b, w, w->s, 1, (unsigned)w->s->index);
        return rv;
    }
    beacon_worker_list(ws, w);
    /* the other children sync on their next request */
    ws->b->wupdated = ws->b->s->wupdated = w->s->updated = apr_time_now();
    return APR_SUCCESS;
}

beacon_worker *beacon_worker_template(const beacon_worker_balancer *ws,
                                      const beacon_member_params *params,
                                      const char *url, apr_pool_t *p)
{
    proxy_worker *tmpl = NULL;

    if (ap_proxy_define_worker_ex(p, &tmpl, NULL, NULL, url,
                                  AP_PROXY_WORKER_IS_PREFIX) != NULL) {
        return NULL;
    }
    beacon_params_apply(p, ws->s, params, tmpl);
    return tmpl;
}

int beacon_worker_same_origin(const beacon_slot *slot,
                              const beacon_worker *tmpl)
{
    const proxy_worker_shared *a = shm_of(slot), *b = tmpl->s;

    return a->port == b->port && strcasecmp(a->hostname_ex, b->hostname_ex) == 0;
}

#define COPY_FIELD(dst, src, field) memcpy((dst)->field, (src)->field, sizeof((dst)->field))

/*
 * Field by field (the struct's size differs between 2.4 releases): the
 * new name, and what belonged to the old member cleared: its balancing
 * counts, route, errors, and the admin's settings (a new member starts as
 * beacon adds one). Keeps the hash, index, TTLs, timeouts and pool sizes,
 * and Disabled.
 */
void beacon_worker_rename(beacon_worker_balancer *ws, beacon_slot *slot,
                          const beacon_worker *tmpl_worker)
{
    proxy_worker_shared *shm = shm_of(slot);
    const proxy_worker_shared *tmpl = tmpl_worker->s;
    proxy_worker *w = is_indexed(ws) ? index_take(ws, shm) : NULL;

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
    if (w != NULL) {
        index_put(ws, w);
    }
}

apr_hash_t *beacon_worker_members_shown(beacon_worker_balancer *ws,
                                        apr_pool_t *p)
{
    apr_hash_t *shown = apr_hash_make(p);
    proxy_worker **list;
    int i;

    if (beacon_worker_lock_members(ws) != APR_SUCCESS) {
        return shown;
    }
    list = (proxy_worker **)ws->b->workers->elts;
    for (i = 0; i < ws->b->workers->nelts; i++) {
        char canonical[BEACON_URL_MAX];
        beacon_member_shown *m;

        if (canonical_name(list[i]->s->name_ex, canonical)) {
            m = apr_pcalloc(p, sizeof(*m));
            m->flags = ap_proxy_parse_wstatus(p, list[i]);
            m->lbfactor = list[i]->s->lbfactor;
            apr_hash_set(shown, apr_pstrdup(p, canonical), APR_HASH_KEY_STRING, m);
        }
    }
    beacon_worker_thread_unlock(ws);
    return shown;
}

const char *beacon_worker_admin_letters(apr_pool_t *p, unsigned int flags)
{
    static const struct {
        unsigned int flag;
        const char *letter;
    } letters[] = {
        {BEACON_W_STOPPED, "S"},     {BEACON_W_DRAIN, "N"},
        {BEACON_W_HOT_STANDBY, "H"}, {BEACON_W_HOT_SPARE, "R"},
        {BEACON_W_IGNORE_ERRORS, "I"},
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
