/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Beacon's policy on a balancer carried out (see
 * mod_proxy_beacon_balancer.h): a member added, adopted, taken out of
 * rotation or back, what its backend announces of itself, its slow start,
 * and what the registry keeps of it, as mod_proxy_beacon_decide.c plans
 * each; httpd's side of each step is mod_proxy_beacon_worker.c's.
 */

#include "mod_proxy_beacon_balancer.h"

#include <apr_strings.h>

struct beacon_balancer {
    beacon_worker_balancer *w;
    beacon_registry *registry;
    beacon_slots_reserved *slots;       /* its reserved slots (slots=) */
    beacon_member_policy policy;
    const char *name; /* balancer://name, for log lines */
    server_rec *s;
};

/* The registry entry of url in t's balancer, or NULL: beacon's members
 * are those that have one. */
static beacon_entry *entry_of(const beacon_balancer *t, const char *url)
{
    return beacon_registry_find(t->registry, t->name, url);
}

beacon_balancer *beacon_balancer_open(apr_pool_t *pconf, server_rec *s,
                                      const char *balancer_name,
                                      const char *registry_key,
                                      const beacon_member_policy *policy)
{
    beacon_balancer *t = apr_pcalloc(pconf, sizeof(*t));

    if ((t->w = beacon_worker_open(pconf, s, balancer_name)) == NULL) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00006)
                     "balancer://%s has no shared memory yet: is "
                     "mod_proxy_balancer loaded?", balancer_name);
        return NULL;
    }
    t->policy = *policy;
    t->name = beacon_worker_balancer_name(t->w);
    t->s = s;
    t->slots = beacon_slots_open(pconf, t->w, policy->slots);
    t->registry = beacon_registry_open(pconf, s, registry_key, policy->entries);
    return t->registry ? t : NULL;
}

/* maxattempts, while it is beacon's (beacon_decide_failover), as httpd
 * sets it for static members; a placeholder is no member: it never
 * serves. */
static void count_failover(beacon_balancer *t)
{
    beacon_registry_header *h = beacon_registry_header_of(t->registry);
    int max_attempts, in_effect, value, members;

    if (h == NULL) {
        return;
    }
    members = beacon_worker_failover(t->w, &max_attempts, &in_effect) -
              beacon_slots_free(t->slots);
    if (beacon_decide_failover(members, h->max_attempts, max_attempts,
                               in_effect, &value)) {
        if (value >= 0) {
            h->max_attempts = value;
        }
        beacon_worker_set_failover(t->w, value);
    }
}

int beacon_balancer_restore(beacon_balancer *t, apr_pool_t *p, int *forgotten)
{
    int restored;

    beacon_worker_index(t->w); /* a thousand members: no walk for each */
    restored = beacon_restore_members(t->w, t->registry, &t->policy, t->slots,
                                      p, forgotten);

    beacon_slots_index(t->slots); /* some were taken, some given back */
    if (restored > 0) {
        count_failover(t);
    }
    return restored;
}

void beacon_balancer_keep_at_stop(beacon_balancer *t)
{
    beacon_restore_keep_at_stop(t->w, t->registry);
}

void beacon_balancer_sync(beacon_balancer *t)
{
    beacon_worker_pick_up(t->w);
}

/* ------------------------------------------------------------------ */
/* What a backend announces of itself                                  */

/* What the backend's announcement asks of member e, as look saw its slot
 * (beacon_decide_attrs); returns 1 when its route is refused. */
static int plan_attrs(const beacon_balancer *t, const beacon_entry *e,
                      const beacon_slot_look *look,
                      const beacon_member_attrs *attrs, beacon_slot_change *c)
{
    const beacon_entry *holder =
        look->holder ? entry_of(t, look->holder_view.name) : NULL;

    return beacon_decide_attrs(look, holder, e, attrs, t->policy.slowstart,
                               apr_time_now(), c);
}

/* What plan_attrs planned, once applied: the entry keeps the flags an
 * announced state set, and each change has its line. */
static void log_attrs(beacon_balancer *t, beacon_entry *e,
                      const beacon_slot_look *look,
                      const beacon_slot_change *c, int refused)
{
    apr_time_t now = apr_time_now();

    e->announced_flags = beacon_decide_announced_after(e->announced_flags, c);
    if (c->lbfactor) {
        /* a slow start's steps, and a load report's, at debug */
        ap_log_error(APLOG_MARK,
                     e->ramp_since || beacon_decide_load_is_report(
                         e->lbfactor_changed_at, now) ? APLOG_DEBUG : APLOG_INFO,
                     0, t->s, BCNLOGNO(00095) "changed lbfactor of %s to "
                     "%d.%02d in %s", e->url, c->lbfactor / 100,
                     c->lbfactor % 100, t->name);
        e->lbfactor_changed_at = now;
    }
    if (c->route_from) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00140)
                     "route %s of %s, out of rotation, goes to %s in %s",
                     c->route, look->holder_view.name, e->url, t->name);
    }
    if (c->route) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00094)
                     "changed route of %s to %s in %s", e->url, c->route,
                     t->name);
    }
    if (refused && now - e->route_refused_at >= BEACON_LOG_EVERY) {
        e->route_refused_at = now;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, t->s, BCNLOGNO(00093)
                     "route %s already used by %s in %s: %s joins without it",
                     look->holder_view.route, look->holder_view.name, t->name,
                     e->url);
    }
    if (c->set & BEACON_W_DRAIN) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00141)
                     "backend draining %s in %s", e->url, t->name);
    }
    if (c->set & BEACON_W_HOT_STANDBY) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00142)
                     "backend standby %s in %s", e->url, t->name);
    }
    if (c->clear) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00145)
                     "backend %s in %s no longer %s", e->url, t->name,
                     c->clear & BEACON_W_DRAIN ? "draining" : "standby");
    }
}

/* What the backend announces (attrs; NULL: a slow start's step alone),
 * applied to member e in slot under the balancer's locks; and, with
 * enable, the member (back) in rotation after it. A member no longer
 * draining starts slowly again. */
static void apply_attrs(beacon_balancer *t, beacon_entry *e, beacon_slot *slot,
                        const beacon_member_attrs *attrs, int enable)
{
    beacon_slot_look look;
    beacon_slot_change c;
    int refused;

    beacon_worker_look(t->w, slot, attrs ? attrs->route : NULL, &look);
    refused = plan_attrs(t, e, &look, attrs, &c);
    if (t->policy.slowstart && (c.clear & BEACON_W_DRAIN)) {
        beacon_decide_ramp_start(e, apr_time_now());
        refused = plan_attrs(t, e, &look, attrs, &c);
    }
    c.enable = enable;
    if (enable) {
        beacon_decide_mark_out(e, 0, 0, 0);
    }
    beacon_worker_apply(slot, &c);
    log_attrs(t, e, &look, &c, refused);
    beacon_decide_ramp_after(e, attrs, look.self.lbfactor, t->policy.slowstart,
                             apr_time_now());
}

/* A member begins a slow start: said once, its steps at debug. */
static void ramp_begins(beacon_balancer *t, beacon_entry *e, apr_time_t now)
{
    beacon_decide_ramp_start(e, now);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, t->s, BCNLOGNO(00225)
                 "slow start of %s in %s: %d%% of its lbfactor, all of it "
                 "after %" APR_TIME_T_FMT " ms", e->url, t->name,
                 BEACON_RAMP_FLOOR, apr_time_as_msec(t->policy.slowstart));
}

/* Once a second: the next step of every slow start under way. */
static void ramp_steps(beacon_balancer *t)
{
    int held = 0;
    unsigned i;

    for (i = 0; i < beacon_registry_size(t->registry); i++) {
        beacon_entry *e = beacon_registry_entry(t->registry, i);
        beacon_slot *slot;

        if (e == NULL || e->ramp_since == 0 || e->state != BEACON_ENTRY_MEMBER ||
            strcmp(e->balancer, t->name) != 0) {
            continue;
        }
        if (!held && beacon_worker_hold(t->w) != APR_SUCCESS) {
            return; /* logged; the next second tries again */
        }
        held = 1;
        if ((slot = beacon_worker_slot(t->w, e)) != NULL) {
            apply_attrs(t, e, slot, NULL, 0);
        }
    }
    if (held) {
        beacon_worker_unlock(t->w);
    }
}

int beacon_balancer_keep(beacon_balancer *t, apr_time_t now, apr_pool_t *p)
{
    int forgotten = beacon_restore_keep(t->w, t->registry, &t->policy, now, p);

    if (t->policy.slowstart) {
        ramp_steps(t);
    }
    return forgotten;
}

/* ------------------------------------------------------------------ */
/* Members in and out of rotation                                      */

/* The one way an add ends (beacon_decide_join): member e in slot gets
 * what its backend announces, is made a member when it still has to be
 * (w: its worker), counted, and found in the list afterwards. */
static beacon_add_result joined(beacon_balancer *t, beacon_join_way way,
                                beacon_entry *e, beacon_slot *slot,
                                beacon_worker *w,
                                const beacon_member_attrs *attrs,
                                apr_pool_t *p, beacon_add_info *info)
{
    beacon_join_plan plan;

    beacon_decide_join(way, &plan);
    if (plan.ramp && t->policy.slowstart) {
        ramp_begins(t, e, apr_time_now());
    }
    apply_attrs(t, e, slot, attrs, plan.enable);
    if (plan.commit && beacon_worker_commit(t->w, w, p, &info->why) != APR_SUCCESS) {
        beacon_registry_forget(e);
        return BEACON_ADD_FAILED;
    }
    if (plan.recount) {
        count_failover(t);
    }
    if (plan.confirm && !beacon_worker_confirmed(t->w, e->url)) {
        return BEACON_ADD_NOT_CONFIRMED;
    }
    return plan.result;
}

/* No free slot: the slot of a long-gone member, renamed to url (tmpl);
 * NO_SLOT when none is ready (info->ready_at says when). */
static beacon_add_result recycle_for(beacon_balancer *t, const char *url,
                                     const beacon_worker *tmpl,
                                     const beacon_member_attrs *attrs,
                                     apr_pool_t *p, beacon_add_info *info)
{
    beacon_slot *slot = beacon_recycle_take(t->w, t->registry, tmpl, url, p,
                                            &info->recycled, &info->ready_at);
    beacon_entry *e;

    if (slot == NULL || (e = entry_of(t, url)) == NULL) {
        return BEACON_ADD_NO_SLOT;
    }
    return joined(t, BEACON_JOIN_RECYCLED, e, slot, NULL, attrs, p, info);
}

/* A new member in a free reserved slot (renamed from a placeholder, which
 * no child ever connected to), else in a free growth slot, else in a
 * recycled one; tmpl: httpd's reading of url (NULL: it refuses it), which
 * a reserved or a recycled slot is renamed to. */
static beacon_add_result define_and_share(beacon_balancer *t, const char *url,
                                          const beacon_worker *tmpl,
                                          const beacon_member_attrs *attrs,
                                          apr_pool_t *p, beacon_add_info *info)
{
    beacon_join_way way = BEACON_JOIN_RESERVED;
    beacon_worker *w = NULL;
    beacon_slot *slot;
    beacon_entry *e;
    int no_slot;

    if (!beacon_registry_has_room(t->registry)) {
        info->why = "the member registry is full";
        return BEACON_ADD_FAILED;
    }
    if (tmpl == NULL || (slot = beacon_slots_take(t->slots, tmpl, url, p)) == NULL) {
        /* httpd's own refusal of url, if it refuses it, comes from here */
        w = beacon_worker_share_new(t->w, t->policy.params, url, p, &no_slot,
                                    &info->why);
        if (w == NULL) {
            return no_slot ? recycle_for(t, url, tmpl, attrs, p, info)
                           : BEACON_ADD_FAILED;
        }
        way = BEACON_JOIN_GROWTH;
        slot = beacon_worker_slot_of(w);
    }
    e = beacon_registry_put(t->registry, t->name, url);
    beacon_worker_note_slot(e, slot);
    return joined(t, way, e, slot, w, attrs, p, info);
}

/* Adds url as a member, under the balancer's locks (see
 * beacon_balancer_announced): beacon's own, found in the list, comes
 * back; an admin's is left alone. */
static beacon_add_result add(beacon_balancer *t, const char *url,
                             const beacon_member_attrs *attrs, apr_pool_t *p,
                             beacon_add_info *info)
{
    beacon_add_result result;
    beacon_slot *existing;
    beacon_entry *e;

    if (beacon_worker_hold(t->w) != APR_SUCCESS) {
        info->why = "the balancer's locks failed";
        return BEACON_ADD_FAILED;
    }
    if ((existing = beacon_worker_find(t->w, url)) == NULL) {
        result = define_and_share(
            t, url, beacon_worker_template(t->w, t->policy.params, url, p),
            attrs, p, info);
    }
    else if ((e = entry_of(t, url)) == NULL) {
        result = BEACON_ADD_NOT_OURS;
    }
    else {
        result = joined(t, BEACON_JOIN_ADOPTED, e, existing, NULL, attrs, p,
                        info);
    }
    beacon_worker_unlock(t->w);
    return result;
}

apr_status_t beacon_balancer_set_disabled(beacon_balancer *t, const char *url,
                                          int disabled, int *hint)
{
    /* found as the owner finds it (it alone writes entries), and written
     * under the balancer's locks, with the slot */
    beacon_entry *e = beacon_registry_find_hinted(t->registry, t->name, url,
                                                  hint);
    beacon_slot_change c;
    beacon_slot_view v;
    beacon_slot *slot;
    apr_status_t rv;

    if (e == NULL) {
        return APR_NOTFOUND;
    }
    if ((rv = beacon_worker_hold(t->w)) != APR_SUCCESS) {
        return rv;
    }
    if ((slot = beacon_worker_find(t->w, url)) == NULL) {
        beacon_worker_unlock(t->w);
        return APR_NOTFOUND;
    }
    beacon_worker_view(slot, &v);
    e->announced_flags = beacon_decide_rotation(disabled, e->announced_flags,
                                                &c);
    if (!disabled && t->policy.slowstart) { /* back: slowly, from now */
        ramp_begins(t, e, apr_time_now());
        c.lbfactor = beacon_decide_ramp_first(e, v.lbfactor);
    }
    beacon_decide_mark_out(e, disabled, v.elected, apr_time_now());
    beacon_worker_apply(slot, &c);
    beacon_worker_unlock(t->w);
    return APR_SUCCESS;
}

/* An accepted announcement of member url (or of a url that waits for a
 * slot, whose replay mark, if its old slot went to another, rises too):
 * its last-heard time and replay mark, and what it announces of itself
 * when that differs from the member, looked at without the lock (the
 * owner alone writes these) and again under it, as balancer-manager edits
 * a member. */
static void heard(beacon_balancer *t, const beacon_announcement *a,
                  apr_time_t now, beacon_outcome *out)
{
    beacon_entry *e = beacon_registry_find_hinted(t->registry, t->name, a->url,
                                                  a->hint);
    beacon_slot_change c;
    beacon_slot_look look;
    beacon_slot *slot;

    if (e == NULL) {
        if ((e = beacon_registry_find_mark(t->registry, t->name, a->url))) {
            beacon_decide_heard(e, a->ts, now);
        }
        return;
    }
    beacon_decide_heard(e, a->ts, now);
    if (a->attrs && a->attrs->claims) {
        out->claims_changed = beacon_registry_claim(
            t->registry, (unsigned)*a->hint, a->attrs->ctx.ptr ? a->attrs->ctx.ptr : "",
            a->attrs->ctx.ptr ? a->attrs->ctx.len : 0);
    }
    if (a->attrs == NULL || (slot = beacon_worker_slot(t->w, e)) == NULL) {
        return;
    }
    beacon_worker_look(t->w, slot, a->attrs->route, &look);
    if ((plan_attrs(t, e, &look, a->attrs, &c) || beacon_decide_changes_slot(&c)) &&
        beacon_worker_hold(t->w) == APR_SUCCESS) { /* else logged; the next
                                                    * announcement tries again */
        apply_attrs(t, e, slot, a->attrs, 0);
        beacon_worker_unlock(t->w);
    }
}

void beacon_balancer_announced(beacon_balancer *t,
                               const beacon_announcement *a, apr_time_t now,
                               apr_pool_t *p, beacon_outcome *out)
{
    memset(out, 0, sizeof(*out));
    switch (a->action) {
    case BEACON_ACT_ADD:
        out->added = add(t, a->url, a->attrs, p, &out->info);
        break;
    case BEACON_ACT_ENABLE:
    case BEACON_ACT_DISABLE:
        out->changed = beacon_balancer_set_disabled(
            t, a->url, a->action == BEACON_ACT_DISABLE, a->hint);
        break;
    default:
        break;
    }
    heard(t, a, now, out);
}

int beacon_balancer_marked_members(beacon_balancer *t, apr_pool_t *p,
                                   beacon_member **members)
{
    int n;

    *members = NULL;
    if (beacon_worker_hold(t->w) != APR_SUCCESS) {
        return 0;
    }
    n = beacon_restore_take_over(t->w, t->registry, &t->policy, t->slots, p,
                                 members);
    beacon_worker_unlock(t->w);
    return n;
}

int beacon_balancer_claims(const beacon_balancer *t, apr_pool_t *p,
                           beacon_claim **claims)
{
    return beacon_registry_claims_in(t->registry, t->name, p, claims);
}

void beacon_balancer_growth(beacon_balancer *t, int *used, int *free_slots,
                            int *recyclable)
{
    beacon_worker_growth(t->w, used, free_slots);
    *recyclable = beacon_recycle_count(t->w, t->registry, apr_time_now());
}

void beacon_balancer_reserved(const beacon_balancer *t, int *reserved,
                              int *free_slots)
{
    beacon_slots_count(t->slots, reserved, free_slots);
}

apr_hash_t *beacon_balancer_members_shown(beacon_balancer *t, apr_pool_t *p)
{
    apr_hash_t *shown = beacon_worker_members_shown(t->w, p);
    unsigned i;

    for (i = 0; t->policy.slowstart && i < beacon_registry_size(t->registry); i++) {
        const beacon_entry *e = beacon_registry_entry(t->registry, i);
        beacon_member_shown *m;

        if (e && e->ramp_since && strcmp(e->balancer, t->name) == 0 &&
            (m = apr_hash_get(shown, e->url, APR_HASH_KEY_STRING)) != NULL) {
            m->slow_start = beacon_decide_ramp_percent(
                e->ramp_since, t->policy.slowstart, apr_time_now());
        }
    }
    return shown;
}
