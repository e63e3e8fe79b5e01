/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Beacon's policy on a balancer (see mod_proxy_beacon_balancer.h): what
 * a member is, when it is added, adopted, taken out of rotation or back,
 * what its backend announces of itself, and what the registry keeps of
 * it. httpd's side of each step is mod_proxy_beacon_worker.c's.
 */

#include "mod_proxy_beacon_balancer.h"

#include <apr_strings.h>

struct beacon_balancer {
    beacon_workers w;
    beacon_registry *registry;
    beacon_member_policy policy;
};

int beacon_balancer_can_recycle(void)
{
    return beacon_worker_addresses_expire();
}

const char *beacon_balancer_check(apr_pool_t *p, server_rec *s,
                                  const char *name)
{
    if (beacon_worker_balancer(p, s, name)) {
        return NULL;
    }
    return apr_psprintf(p, "ProxyBeaconBalancer: balancer://%s is not defined "
                        "in this server (define it with <Proxy balancer://%s> "
                        "or ProxyPass)", name, name);
}

int beacon_balancer_configured_growth(apr_pool_t *p, server_rec *s,
                                      const char *name)
{
    proxy_balancer *b = beacon_worker_balancer(p, s, name);

    return b ? b->growth : -1;
}

const void *beacon_balancer_identity(apr_pool_t *p, server_rec *s,
                                     const char *name)
{
    proxy_balancer *b = beacon_worker_balancer(p, s, name);

    /* a virtual host's copy of an inherited balancer shares its state */
    return b ? (const void *)b->s : NULL;
}

/* The registry entry of url in t's balancer, or NULL: beacon's members
 * are those that have one. */
static beacon_entry *entry_of(const beacon_balancer *t, const char *url)
{
    return beacon_registry_find(t->registry, t->w.b->s->name, url);
}

/* Whether beacon created url in this balancer. */
static int ours(const beacon_balancer *t, const char *url)
{
    return entry_of(t, url) != NULL;
}

beacon_balancer *beacon_balancer_open(apr_pool_t *pconf, server_rec *s,
                                      const char *balancer_name,
                                      const char *registry_key,
                                      const beacon_member_policy *policy)
{
    beacon_balancer *t = apr_pcalloc(pconf, sizeof(*t));
    beacon_registry_header *header;

    if (!beacon_worker_open(&t->w, pconf, s, balancer_name)) {
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
    if (header && !t->w.b->s->max_attempts_set) {
        /* a new generation without BalancerPersist: nothing beacon wrote
         * of the balancer is left */
        header->max_attempts = -1;
    }
    return t;
}

/*
 * maxattempts as httpd sets it for static members (members minus one), for
 * a balancer beacon fills at runtime, only while the value is beacon's:
 * one the configuration set before beacon wrote any, or one typed into
 * balancer-manager (which writes the value, not the flag that puts it in
 * effect) differs from what beacon wrote last, and is the admin's. Then
 * beacon only puts it in effect, and never changes it.
 */
static void count_failover(beacon_balancer *t)
{
    proxy_balancer *b = t->w.b;
    proxy_balancer_shared *bs = b->s;
    beacon_registry_header *h = beacon_registry_header_of(t->registry);
    int admins;

    if (h == NULL || b->workers->nelts < 2) {
        return;
    }
    admins = h->max_attempts >= 0 ? bs->max_attempts != h->max_attempts
                                  : bs->max_attempts_set || bs->max_attempts != 0;
    if (!admins) {
        bs->max_attempts = h->max_attempts = b->workers->nelts - 1;
    }
    bs->max_attempts_set = 1;
}

int beacon_balancer_restore(beacon_balancer *t, apr_pool_t *p, int *forgotten)
{
    int restored = beacon_restore_members(&t->w, t->registry, &t->policy, p,
                                          forgotten);

    if (restored > 0) {
        count_failover(t);
    }
    return restored;
}

int beacon_balancer_keep(beacon_balancer *t, apr_time_t now, apr_pool_t *p)
{
    return beacon_restore_keep(&t->w, t->registry, &t->policy, now, p);
}

void beacon_balancer_keep_at_stop(beacon_balancer *t)
{
    beacon_restore_keep_at_stop(&t->w, t->registry);
}

void beacon_balancer_sync(beacon_balancer *t)
{
    beacon_worker_pick_up(&t->w);
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

/* ------------------------------------------------------------------ */
/* What a backend announces of itself                                  */

/* The flag an announced state asks for (wire format 1.2): draining is
 * httpd's drain (N), standby its hot standby (H). */
static apr_uint32_t state_flags(const beacon_member_attrs *attrs)
{
    switch (attrs->state) {
    case BEACON_WIRE_DRAINING: return PROXY_WORKER_DRAIN;
    case BEACON_WIRE_STANDBY:  return PROXY_WORKER_HOT_STANDBY;
    default:                   return 0;
    }
}

/* What the state asks for that the member lacks, and what an earlier
 * announced state set that it no longer asks for: never an admin's flag.
 * A leaving announces no state (the member goes out of rotation). */
static void state_change(const beacon_entry *e, const proxy_worker_shared *shm,
                         const beacon_member_attrs *attrs, apr_uint32_t *set,
                         apr_uint32_t *clear)
{
    apr_uint32_t want = state_flags(attrs);

    *set = *clear = 0;
    if (attrs->state != BEACON_WIRE_LEAVING) {
        *set = want & ~(apr_uint32_t)shm->status;
        *clear = e->announced_flags & ~want;
    }
}

static int attrs_differ(const beacon_entry *e, const proxy_worker_shared *shm,
                        const beacon_member_attrs *attrs)
{
    apr_uint32_t set, clear;

    if (attrs == NULL) {
        return 0;
    }
    state_change(e, shm, attrs, &set, &clear);
    return (attrs->route[0] && strcmp(attrs->route, shm->route) != 0) ||
           (attrs->lbfactor && attrs->lbfactor != shm->lbfactor) || set || clear;
}

static void apply_state(beacon_balancer *t, beacon_entry *e,
                        proxy_worker_shared *shm,
                        const beacon_member_attrs *attrs)
{
    apr_uint32_t set, clear;

    state_change(e, shm, attrs, &set, &clear);
    if (set == 0 && clear == 0) {
        return;
    }
    beacon_worker_set_flags(shm, set, clear);
    e->announced_flags = (e->announced_flags & ~clear) | set;
    if (set & PROXY_WORKER_DRAIN) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->w.s, BCNLOGNO(00141)
                     "backend draining %s in %s", e->url, t->w.b->s->name);
    }
    if (set & PROXY_WORKER_HOT_STANDBY) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->w.s, BCNLOGNO(00142)
                     "backend standby %s in %s", e->url, t->w.b->s->name);
    }
    if (clear) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->w.s, BCNLOGNO(00145)
                     "backend %s in %s no longer %s", e->url, t->w.b->s->name,
                     clear & PROXY_WORKER_DRAIN ? "draining" : "standby");
    }
}

/* Beacon takes a member out of rotation: what its announced state set
 * goes too (it would hold recycling back, as an admin's flag does). */
static void clear_announced_state(beacon_entry *e, proxy_worker_shared *shm)
{
    beacon_worker_set_flags(shm, 0, e->announced_flags);
    e->announced_flags = 0;
}

/* The member other than shm whose route is route, or NULL. */
static proxy_worker *route_holder(const beacon_balancer *t,
                                  const proxy_worker_shared *shm,
                                  const char *route)
{
    proxy_worker **w = (proxy_worker **)t->w.b->workers->elts;
    int i;

    for (i = 0; i < t->w.b->workers->nelts; i++) {
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
static int gives_up_route(const beacon_balancer *t, const proxy_worker *holder)
{
    const beacon_entry *e = entry_of(t, holder->s->name_ex);

    return e != NULL && e->out && (holder->s->status & PROXY_WORKER_DISABLED) &&
           !(holder->s->status & BEACON_ADMIN_FLAGS);
}

static void apply_route(beacon_balancer *t, beacon_entry *e,
                        proxy_worker_shared *shm, const char *route)
{
    proxy_worker *holder = route_holder(t, shm, route);
    apr_time_t now = apr_time_now();

    if (holder != NULL && gives_up_route(t, holder)) {
        holder->s->route[0] = '\0';
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->w.s, BCNLOGNO(00140)
                     "route %s of %s, out of rotation, goes to %s in %s",
                     route, holder->s->name_ex, e->url, t->w.b->s->name);
    }
    else if (holder != NULL) {
        /* stickiness must name one member: the later one goes without */
        if (now - e->route_refused_at >= BEACON_LOG_EVERY) {
            e->route_refused_at = now;
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, t->w.s, BCNLOGNO(00093)
                         "route %s already used by %s in %s: %s joins "
                         "without it", route, holder->s->name_ex,
                         t->w.b->s->name, e->url);
        }
        return;
    }
    apr_cpystrn(shm->route, route, sizeof(shm->route));
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->w.s, BCNLOGNO(00094)
                 "changed route of %s to %s in %s", e->url, route,
                 t->w.b->s->name);
}

/* What the backend announces is compared with the member as it is, not
 * with the last announcement: a value the member lost (a restart gave
 * back an older one, an admin typed another) is set again. */
static void apply_attrs(beacon_balancer *t, beacon_entry *e,
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
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->w.s, BCNLOGNO(00095)
                     "changed lbfactor of %s to %d.%02d in %s", e->url,
                     attrs->lbfactor / 100, attrs->lbfactor % 100,
                     t->w.b->s->name);
    }
    apply_state(t, e, shm, attrs);
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
    beacon_worker_set_disabled(shm, 0);
}

/* No free slot: the slot of a long-gone member, renamed to url and put
 * in rotation; NULL when none is ready (info->ready_at says when). */
static beacon_add_result recycle_for(beacon_balancer *t, const char *url,
                                     const beacon_member_attrs *attrs,
                                     apr_pool_t *p, beacon_add_info *info)
{
    proxy_worker *w = beacon_recycle_take(&t->w, t->registry, t->policy.params,
                                          url, p, &info->recycled,
                                          &info->ready_at);
    beacon_entry *e;

    if (w == NULL || (e = entry_of(t, url)) == NULL) {
        return BEACON_ADD_NO_SLOT;
    }
    apply_attrs(t, e, w->s, attrs);
    mark_out(e, w->s, 0);
    enable_returning(w->s);
    return BEACON_ADD_RECYCLED;
}

/* A new member in a free slot, with what its backend announces before
 * any request can use it (it is not initialized until then); else in a
 * recycled one. */
static beacon_add_result define_and_share(beacon_balancer *t, const char *url,
                                          const beacon_member_attrs *attrs,
                                          apr_pool_t *p, beacon_add_info *info)
{
    beacon_entry *e;
    proxy_worker *w;
    apr_status_t rv;
    int no_slot;

    if (!beacon_registry_has_room(t->registry)) {
        info->why = "the member registry is full";
        return BEACON_ADD_FAILED;
    }
    w = beacon_worker_share_new(&t->w, t->policy.params, url, p, &no_slot,
                                &info->why);
    if (w == NULL) {
        return no_slot ? recycle_for(t, url, attrs, p, info)
                       : BEACON_ADD_FAILED;
    }
    e = beacon_registry_put(t->registry, t->w.b->s->name, url);
    beacon_worker_note_slot(e, w->s);
    apply_attrs(t, e, w->s, attrs);
    if ((rv = beacon_worker_initialize(&t->w, w)) != APR_SUCCESS) {
        info->why = apr_psprintf(p, "cannot initialize worker: %pm", &rv);
        beacon_registry_forget(e);
        beacon_worker_forget(t->w.b, w, w->s, 1, (unsigned)w->s->index);
        return BEACON_ADD_FAILED;
    }
    beacon_worker_list(t->w.b, w, t->w.conf->pool);
    count_failover(t);
    beacon_worker_publish(&t->w, w);
    return BEACON_ADD_DONE;
}

static int is_confirmed(beacon_balancer *t, const char *url)
{
    proxy_worker *w = beacon_worker_find(&t->w, url);

    return w != NULL && PROXY_WORKER_IS_INITIALIZED(w) &&
           ours(t, url);
}

beacon_add_result beacon_balancer_add(beacon_balancer *t, const char *url,
                                      const beacon_member_attrs *attrs,
                                      apr_pool_t *p, beacon_add_info *info)
{
    beacon_add_result result;
    proxy_worker *existing;
    beacon_entry *e;

    memset(info, 0, sizeof(*info));
    if (beacon_worker_lock(&t->w) != APR_SUCCESS) {
        info->why = "the balancer's locks failed";
        return BEACON_ADD_FAILED;
    }
    beacon_worker_sync(&t->w);
    existing = beacon_worker_find(&t->w, url);
    if (existing != NULL) {
        if ((e = entry_of(t, url)) == NULL) {
            result = BEACON_ADD_NOT_OURS;
        }
        else {
            apply_attrs(t, e, existing->s, attrs);
            enable_returning(existing->s);
            mark_out(e, existing->s, 0);
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
    beacon_worker_unlock(&t->w);
    return result;
}

apr_status_t beacon_balancer_set_disabled(beacon_balancer *t, const char *url,
                                          int disabled)
{
    apr_status_t rv = beacon_worker_lock(&t->w); /* the registry is written too */
    beacon_entry *e;
    proxy_worker *w;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    beacon_worker_sync(&t->w);
    w = beacon_worker_find(&t->w, url);
    if (w == NULL || (e = entry_of(t, url)) == NULL) {
        rv = APR_NOTFOUND;
    }
    else {
        if (disabled) {
            /* Only D, and what an announced state set: Stopped, Drain
             * and health-check failures are the admin's. */
            beacon_worker_set_disabled(w->s, 1);
            clear_announced_state(e, w->s);
        }
        else {
            enable_returning(w->s);
        }
        mark_out(e, w->s, disabled);
    }
    beacon_worker_unlock(&t->w);
    return rv;
}

/* A member's route or load factor differs from what its backend
 * announces: applied under the balancer's locks, as balancer-manager
 * edits them. */
static void apply_changed_attrs(beacon_balancer *t, const char *url,
                                const beacon_member_attrs *attrs)
{
    proxy_worker_shared *shm;
    beacon_entry *e;

    if (beacon_worker_lock(&t->w) != APR_SUCCESS) {
        return; /* logged; the next announcement tries again */
    }
    if ((e = entry_of(t, url)) != NULL &&
        (shm = beacon_worker_slot(&t->w, e)) != NULL) {
        beacon_worker_sync(&t->w); /* routes of all */
        apply_attrs(t, e, shm, attrs);
    }
    beacon_worker_unlock(&t->w);
}

/* An accepted announcement of a url that is no member (it waits for a
 * slot): its replay mark, if its old slot went to another, rises too. */
static void heard_gone(beacon_balancer *t, const char *url, apr_int64_t ts,
                       apr_time_t now)
{
    beacon_entry *mark = beacon_registry_find_mark(t->registry,
                                                   t->w.b->s->name, url);

    if (mark != NULL && ts > mark->high_ts) {
        mark->high_ts = ts;
        mark->last_heard = now;
    }
}

void beacon_balancer_heard(beacon_balancer *t, const char *url, int *hint,
                           apr_int64_t ts, apr_time_t now,
                           const beacon_member_attrs *attrs)
{
    beacon_entry *e = beacon_registry_find_hinted(t->registry,
                                                  t->w.b->s->name, url, hint);
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
    if ((shm = beacon_worker_slot(&t->w, e)) != NULL &&
        attrs_differ(e, shm, attrs)) {
        apply_changed_attrs(t, url, attrs);
    }
}

/* The replay marks of t's balancer, written from members[n] on; returns
 * the new count. */
static int add_replay_marks(beacon_balancer *t, apr_pool_t *p,
                            beacon_member *members, int n)
{
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(t->registry, i);

        if (e && e->state == BEACON_ENTRY_MARK &&
            strcmp(e->balancer, t->w.b->s->name) == 0) {
            members[n].url = apr_pstrdup(p, e->url);
            members[n].gone = 1;
            members[n].high_ts = e->high_ts;
            members[n].last_heard = e->last_heard;
            n++;
        }
    }
    return n;
}

int beacon_balancer_marked_members(beacon_balancer *t, apr_pool_t *p,
                                   beacon_member **members)
{
    proxy_worker **w;
    int i, n = 0;

    *members = NULL;
    if (beacon_worker_lock(&t->w) != APR_SUCCESS) {
        return 0;
    }
    beacon_worker_sync(&t->w);
    beacon_recycle_finish(&t->w, t->registry, t->policy.params, p);
    w = (proxy_worker **)t->w.b->workers->elts;
    /* room for every member and every replay mark the registry holds */
    *members = apr_pcalloc(p, sizeof(beacon_member) *
                                  (apr_size_t)(t->w.b->workers->nelts + BEACON_REGISTRY_SIZE));
    for (i = 0; i < t->w.b->workers->nelts; i++) {
        beacon_entry *e = entry_of(t, w[i]->s->name_ex);

        if (e) {
            (*members)[n].url = apr_pstrdup(p, e->url);
            (*members)[n].disabled =
                (w[i]->s->status & PROXY_WORKER_DISABLED) != 0;
            (*members)[n].high_ts = e->high_ts;
            n++;
        }
    }
    n = add_replay_marks(t, p, *members, n);
    beacon_worker_unlock(&t->w);
    return n;
}

void beacon_balancer_growth(beacon_balancer *t, int *used, int *free_slots,
                            int *recyclable)
{
    beacon_worker_growth(&t->w, used, free_slots);
    *recyclable = beacon_recycle_count(&t->w, t->registry, apr_time_now());
}

const char *beacon_balancer_worker_flags(beacon_balancer *t, const char *url,
                                         apr_pool_t *p)
{
    return beacon_worker_flags(&t->w, url, p);
}
