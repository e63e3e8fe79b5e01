/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* What a restart gives back; see mod_proxy_beacon_restore.h. */

#include "mod_proxy_beacon_restore.h"

#include <apr_strings.h>
#include <ap_slotmem.h>

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

/* Takes the settings balancer-manager can change; whether they changed. */
static int save_admin(beacon_admin_settings *kept, const proxy_worker_shared *shm)
{
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

static void restore_admin(proxy_worker_shared *shm, const beacon_admin_settings *a)
{
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

/* Silent past ProxyBeaconForget, by wall clock: the proxy's own downtime
 * counts here (a backend gone for an hour is gone), not for the lease. */
static int silent_past_forget(const beacon_member_policy *policy,
                              const beacon_entry *e, apr_time_t now)
{
    return policy->forget > 0 && now - e->last_heard > policy->forget;
}

/* At runtime only a member out of rotation is forgotten: one in rotation
 * is the lease's business (ProxyBeaconTimeout 0 keeps it for ever). */
static int is_forgettable(const beacon_member_policy *policy,
                          const beacon_entry *e, apr_time_t now)
{
    return e->forgotten || (e->out && silent_past_forget(policy, e, now));
}

/* A replay mark whose url can send nothing fresh that it accepted. */
static int is_stale_mark(const beacon_member_policy *policy,
                         const beacon_entry *e, apr_time_t now)
{
    return e->state == BEACON_ENTRY_MARK &&
           now - e->last_heard > policy->replay_span;
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

/* The entries of ws's balancer that are members with a slot, one by one:
 * start with *i = 0; NULL when there are no more. */
static beacon_entry *next_member(const beacon_workers *ws,
                                 const beacon_registry *reg, unsigned *i,
                                 proxy_worker_shared **shm)
{
    while (*i < BEACON_REGISTRY_SIZE) {
        beacon_entry *e = beacon_registry_entry(reg, (*i)++);

        if (e && strcmp(e->balancer, ws->b->s->name) == 0 &&
            e->state == BEACON_ENTRY_MEMBER &&
            (*shm = beacon_worker_slot(ws, e)) != NULL) {
            return e;
        }
    }
    return NULL;
}

int beacon_restore_keep(const beacon_workers *ws, const beacon_registry *reg,
                        const beacon_member_policy *policy, apr_time_t now,
                        apr_pool_t *p)
{
    proxy_worker_shared *shm;
    int forgotten = 0;
    unsigned i = 0;
    beacon_entry *e;

    while ((e = next_member(ws, reg, &i, &shm)) != NULL) {
        if (save_admin(&e->admin, shm)) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ws->s, BCNLOGNO(00091)
                         "kept the settings of %s in %s for restarts: "
                         "flags '%s', lbfactor %d, lbset %d, route '%s'",
                         e->url, ws->b->s->name, admin_letters(p, e->admin.flags),
                         e->admin.lbfactor, e->admin.lbset,
                         ap_escape_logitem(p, e->admin.route));
        }
        if (!e->forgotten && is_forgettable(policy, e, now)) {
            e->forgotten = 1;
            forgotten++;
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, ws->s, BCNLOGNO(00089)
                         "forgot backend %s of %s: silent for %" APR_TIME_T_FMT
                         " s; its slot is free to recycle, and a restart "
                         "does not restore it", e->url, ws->b->s->name,
                         apr_time_sec(now - e->last_heard));
        }
    }
    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        if ((e = beacon_registry_entry(reg, i)) != NULL &&
            strcmp(e->balancer, ws->b->s->name) == 0 &&
            is_stale_mark(policy, e, now)) {
            beacon_registry_forget(e);
        }
    }
    return forgotten;
}

void beacon_restore_keep_at_stop(const beacon_workers *ws,
                                 const beacon_registry *reg)
{
    proxy_worker_shared *shm;
    unsigned i = 0;
    beacon_entry *e;

    while ((e = next_member(ws, reg, &i, &shm)) != NULL) {
        save_admin(&e->admin, shm);
    }
}

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
static void drop_kept_slot(const beacon_workers *ws, const beacon_entry *e)
{
    proxy_worker_shared *shm = beacon_worker_slot(ws, e);
    proxy_worker **w = (proxy_worker **)ws->b->workers->elts;
    int i;

    if (shm == NULL) {
        return;
    }
    for (i = 0; i < ws->b->workers->nelts; i++) {
        if (w[i]->s == shm) {
            beacon_worker_unlist(ws->b, w[i]);
            break;
        }
    }
    shm->hash.def = shm->hash.fnv = 0;
    ws->b->storage->release(ws->b->wslot, (unsigned)e->slot);
}

/* A member the configuration names (a worker of that name that is not
 * beacon's slot): the admin's. */
static int is_configured(const beacon_workers *ws, const char *url,
                         const proxy_worker_shared *kept)
{
    proxy_worker **w = (proxy_worker **)ws->b->workers->elts;
    int i;

    for (i = 0; i < ws->b->workers->nelts; i++) {
        if (w[i]->s != kept && beacon_worker_names(w[i]->s->name_ex, url)) {
            return 1;
        }
    }
    return 0;
}

/* Whether e was restorable by today's rules; NULL (and why) if not. */
static const char *unsound_entry(const beacon_workers *ws,
                                 const beacon_entry *e)
{
    if (strcmp(e->balancer, ws->b->s->name) != 0) {
        return "another balancer's";
    }
    if (!is_canonical(e->url) ||
        (e->state == BEACON_ENTRY_RECYCLING && !is_canonical(e->next_url))) {
        return "not a member's name";
    }
    if (e->state != BEACON_ENTRY_MEMBER && e->state != BEACON_ENTRY_RECYCLING &&
        e->state != BEACON_ENTRY_MARK) {
        return "an unknown state";
    }
    return NULL;
}

/* The slot e's member gets in this generation: BalancerPersist's, or a
 * new one; NULL (logged) when none can be had. */
static proxy_worker_shared *slot_for(beacon_workers *ws,
                                     const beacon_member_params *params,
                                     beacon_entry *e, apr_pool_t *p)
{
    proxy_worker_shared *kept = beacon_worker_slot(ws, e);
    const char *why = NULL;
    proxy_worker *w;
    int no_slot;

    if (kept) {
        return kept;
    }
    if ((w = beacon_worker_share_new(ws, params, e->url, p, &no_slot,
                                     &why)) != NULL) {
        beacon_worker_list(ws->b, w, ws->conf->pool);
        return w->s;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, ws->s, BCNLOGNO(00009)
                 "cannot restore %s in %s: %s; it joins again with its next "
                 "announcement", e->url, ws->b->s->name,
                 no_slot ? "no free growth slot" : why);
    return NULL;
}

/* Puts e's member back as it was; 0 when it is not (logged). */
static int restore_member(beacon_workers *ws,
                          const beacon_member_params *params, beacon_entry *e,
                          apr_pool_t *p)
{
    proxy_worker_shared *shm;

    if (is_configured(ws, e->url, beacon_worker_slot(ws, e))) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, ws->s, BCNLOGNO(00008)
                     "%s is now configured in %s; beacon no longer "
                     "manages it", e->url, ws->b->s->name);
        drop_kept_slot(ws, e);
        beacon_registry_forget(e);
        return 0;
    }
    if ((shm = slot_for(ws, params, e, p)) == NULL) {
        beacon_registry_forget(e);
        return 0;
    }
    beacon_worker_note_slot(e, shm);
    /* in rotation or not as when httpd stopped: the downtime is no lease
     * that lapsed, the new owner gives it a fresh one */
    restore_admin(shm, &e->admin);
    /* its next announcement puts it back; no child exists: plain writes */
    shm->status = e->out ? shm->status | PROXY_WORKER_DISABLED
                         : shm->status & ~(unsigned int)PROXY_WORKER_DISABLED;
    /* an address expiry of the last epoch would hold recycling back */
    shm->address_expiry = 0;
    return 1;
}

int beacon_restore_members(beacon_workers *ws, const beacon_registry *reg,
                           const beacon_member_policy *policy, apr_pool_t *p,
                           int *forgotten)
{
    unsigned i, skipped = beacon_registry_damaged(reg);
    apr_time_t now = apr_time_now();
    int restored = 0;

    *forgotten = 0;
    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_entry *e = beacon_registry_entry(reg, i);

        if (e == NULL) {
            continue;
        }
        if (unsound_entry(ws, e) != NULL) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, ws->s, BCNLOGNO(00090)
                         "registry entry %u of %s skipped: %s", i,
                         ws->b->s->name, unsound_entry(ws, e));
            drop_kept_slot(ws, e);
            beacon_registry_forget(e);
            skipped++;
            continue;
        }
        if (e->state == BEACON_ENTRY_RECYCLING) {
            beacon_recycle_finish_entry(ws, reg, policy->params, e,
                                        beacon_worker_slot(ws, e), p);
        }
        if (e->state == BEACON_ENTRY_MARK) {
            if (is_stale_mark(policy, e, now)) {
                beacon_registry_forget(e);
            }
        }
        else if (e->forgotten || silent_past_forget(policy, e, now)) {
            drop_kept_slot(ws, e);
            beacon_registry_forget(e);
            (*forgotten)++;
        }
        else if (restore_member(ws, policy->params, e, p)) {
            restored++;
        }
    }
    if (skipped > 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, ws->s, BCNLOGNO(00084)
                     "skipped %u entr%s of the member registry of %s that "
                     "this release cannot read (an older layout, or "
                     "damaged); those members join again with their next "
                     "announcement", skipped, skipped == 1 ? "y" : "ies",
                     ws->b->s->name);
    }
    return restored;
}
