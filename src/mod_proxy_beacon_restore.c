/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* What a restart gives back; see mod_proxy_beacon_restore.h. */

#include "mod_proxy_beacon_restore.h"

#include <apr_strings.h>

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

/* Whether e belongs to ws's balancer. */
static int in_balancer(const beacon_worker_balancer *ws, const beacon_entry *e)
{
    return strcmp(e->balancer, beacon_worker_balancer_name(ws)) == 0;
}

/* The entries of ws's balancer that are members with a slot, one by one:
 * start with *i = 0; NULL when there are no more. */
static beacon_entry *next_member(const beacon_worker_balancer *ws,
                                 const beacon_registry *reg, unsigned *i,
                                 beacon_slot **slot)
{
    while (*i < beacon_registry_size(reg)) {
        beacon_entry *e = beacon_registry_entry(reg, (*i)++);

        if (e && in_balancer(ws, e) && e->state == BEACON_ENTRY_MEMBER &&
            (*slot = beacon_worker_slot(ws, e)) != NULL) {
            return e;
        }
    }
    return NULL;
}

int beacon_restore_keep(const beacon_worker_balancer *ws, const beacon_registry *reg,
                        const beacon_member_policy *policy, apr_time_t now,
                        apr_pool_t *p)
{
    server_rec *s = beacon_worker_server(ws);
    const char *name = beacon_worker_balancer_name(ws);
    beacon_slot *slot;
    int forgotten = 0;
    unsigned i = 0;
    beacon_entry *e;

    while ((e = next_member(ws, reg, &i, &slot)) != NULL) {
        if (beacon_worker_take_admin(&e->admin, slot)) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, BCNLOGNO(00091)
                         "kept the settings of %s in %s for restarts: "
                         "flags '%s', lbfactor %d, lbset %d, route '%s'",
                         e->url, name, beacon_worker_admin_letters(p, e->admin.flags),
                         e->admin.lbfactor, e->admin.lbset,
                         ap_escape_logitem(p, e->admin.route));
        }
        if (!e->forgotten && is_forgettable(policy, e, now)) {
            e->forgotten = 1;
            forgotten++;
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, BCNLOGNO(00089)
                         "forgot backend %s of %s: silent for %" APR_TIME_T_FMT
                         " s; its slot is free to recycle, and a restart "
                         "does not restore it", e->url, name,
                         apr_time_sec(now - e->last_heard));
        }
    }
    for (i = 0; i < beacon_registry_size(reg); i++) {
        if ((e = beacon_registry_entry(reg, i)) != NULL && in_balancer(ws, e) &&
            is_stale_mark(policy, e, now)) {
            beacon_registry_forget(e);
        }
    }
    return forgotten;
}

void beacon_restore_keep_at_stop(const beacon_worker_balancer *ws,
                                 const beacon_registry *reg)
{
    beacon_slot *slot;
    unsigned i = 0;
    beacon_entry *e;

    while ((e = next_member(ws, reg, &i, &slot)) != NULL) {
        beacon_worker_take_admin(&e->admin, slot);
    }
}

/* e's member is dropped before any child exists: its reserved slot is
 * a placeholder again, any other slot is released. */
static void drop(beacon_worker_balancer *ws, beacon_slots_reserved *slots,
                 const beacon_entry *e, apr_pool_t *p)
{
    if (!beacon_slots_give_back(slots, e, p)) {
        beacon_worker_drop_slot(ws, e);
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

/* Whether e was restorable by today's rules; NULL (and why) if not. */
static const char *unsound_entry(const beacon_worker_balancer *ws,
                                 const beacon_entry *e)
{
    if (!in_balancer(ws, e)) {
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

/* The slot e's member gets in this generation: its own, kept by a
 * graceful restart or BalancerPersist (or, reserved, given back to it),
 * else a reserved one, else a new one; NULL (logged) when none can be
 * had. */
static beacon_slot *slot_for(beacon_worker_balancer *ws, beacon_slots_reserved *slots,
                             const beacon_member_params *params,
                             beacon_entry *e, apr_pool_t *p)
{
    beacon_slot *kept = beacon_worker_slot(ws, e);
    beacon_worker *tmpl = beacon_worker_template(ws, params, e->url, p);
    const char *why = NULL;
    beacon_slot_view v;
    beacon_worker *w;
    int no_slot;

    if (kept) {
        beacon_worker_view(kept, &v);
        if (!beacon_slots_is_placeholder(v.name) ||
            (tmpl && beacon_slots_take_this(slots, kept, tmpl, e->url, p))) {
            return kept;
        }
    }
    if (tmpl && (kept = beacon_slots_take(slots, tmpl, e->url, p)) != NULL) {
        return kept;
    }
    if ((w = beacon_worker_share_new(ws, params, e->url, p, &no_slot,
                                     &why)) != NULL) {
        beacon_worker_list(ws, w);
        return beacon_worker_slot_of(w);
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, beacon_worker_server(ws),
                 BCNLOGNO(00009) "cannot restore %s in %s: %s; it joins "
                 "again with its next announcement", e->url,
                 beacon_worker_balancer_name(ws),
                 no_slot ? "no free slot" : why);
    return NULL;
}

/* Whether the member of e is one the configuration now refuses
 * (ProxyBeaconAllow or allow= changed while httpd was stopped): it is not
 * put back, so that a tightened list takes effect with the restart, not
 * with a lease that may never lapse. Logged. */
static int no_longer_allowed(beacon_worker_balancer *ws,
                             const beacon_member_policy *policy,
                             const beacon_entry *e, apr_pool_t *p)
{
    int by_balancer;
    const char *why = beacon_reach_gate_refusal(&policy->reach, e->url,
                                                &by_balancer);

    if (why == NULL) {
        return 0;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, beacon_worker_server(ws),
                 BCNLOGNO(00157) "not restoring %s in %s: url not allowed: "
                 "%s%s; beacon no longer manages it", e->url,
                 beacon_worker_balancer_name(ws), why,
                 beacon_util_refused_by(p, &policy->reach, by_balancer,
                                        beacon_worker_balancer_name(ws)));
    return 1;
}

/* Whether e's url is revoked (ProxyBeaconRevoke, revoke=): it is not put
 * back, so that the restart that brings a revocation takes the member
 * out at once. Logged. */
static int revoked(beacon_worker_balancer *ws, const beacon_member_policy *policy,
                   const beacon_entry *e)
{
    if (policy->ring == NULL ||
        !beacon_ring_is_revoked(policy->ring, policy->ring_set, e->url,
                                strlen(e->url))) {
        return 0;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, beacon_worker_server(ws),
                 BCNLOGNO(00212) "not restoring %s in %s: revoked "
                 "(ProxyBeaconRevoke or revoke=); beacon no longer manages it",
                 e->url, beacon_worker_balancer_name(ws));
    return 1;
}

/* Puts e's member back as it was; 0 when it is not (logged). */
static int restore_member(beacon_worker_balancer *ws, beacon_slots_reserved *slots,
                          const beacon_member_policy *policy, beacon_entry *e,
                          apr_pool_t *p)
{
    const beacon_member_params *params = policy->params;
    beacon_slot *slot;

    if (revoked(ws, policy, e) || no_longer_allowed(ws, policy, e, p)) {
        drop(ws, slots, e, p);
        beacon_registry_forget(e);
        return 0;
    }
    if (beacon_worker_configured(ws, e->url, beacon_worker_slot(ws, e))) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, beacon_worker_server(ws),
                     BCNLOGNO(00008) "%s is now configured in %s; beacon no "
                     "longer manages it", e->url, beacon_worker_balancer_name(ws));
        drop(ws, slots, e, p);
        beacon_registry_forget(e);
        return 0;
    }
    if ((slot = slot_for(ws, slots, params, e, p)) == NULL) {
        beacon_registry_forget(e);
        return 0;
    }
    beacon_worker_note_slot(e, slot);
    beacon_decide_ramp_restart(e);
    beacon_worker_give_admin(slot, &e->admin);
    /* in rotation or not as when httpd stopped: the downtime is no lease
     * that lapsed, the new owner gives it a fresh one */
    beacon_worker_restart_slot(slot, e->out != 0);
    return 1;
}

/* Entry i's claim (e's member, restored) keeps only the contexts that
 * contexts= allows now; the others are dropped, logged once (the claim
 * is rewritten): a list narrowed while httpd was down or by a graceful
 * restart takes effect with the restart, as for an announcement. The
 * member stays: its other contexts, and the balancer's own ProxyPass,
 * still reach it. */
static void narrow_claim(const beacon_worker_balancer *ws, const beacon_registry *reg,
                         const beacon_member_policy *policy, unsigned i,
                         const beacon_entry *e, apr_pool_t *p)
{
    const char *claim = beacon_registry_claims(reg, i), *kept = "",
               *dropped = "";
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int k, n;

    if (policy->contexts == NULL || *claim == '\0') {
        return;
    }
    n = beacon_ctx_parse(claim, strlen(claim), paths);
    for (k = 0; k < n; k++) {
        const char *path = apr_pstrmemdup(p, paths[k].ptr, paths[k].len);

        if (beacon_allow_permits(policy->contexts, paths[k].ptr, paths[k].len)) {
            kept = apr_pstrcat(p, kept, *kept ? "," : "", path, NULL);
        }
        else {
            dropped = apr_pstrcat(p, dropped, *dropped ? "," : "", path, NULL);
        }
    }
    if (*dropped == '\0') {
        return;
    }
    beacon_registry_claim(reg, i, kept, strlen(kept));
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, beacon_worker_server(ws),
                 BCNLOGNO(00190) "restored %s in %s without context(s) %s: "
                 "contexts= no longer allows them; it keeps %s",
                 e->url, beacon_worker_balancer_name(ws),
                 ap_escape_logitem(p, dropped),
                 *kept ? ap_escape_logitem(p, kept) : "no context");
}

int beacon_restore_members(beacon_worker_balancer *ws, const beacon_registry *reg,
                           const beacon_member_policy *policy,
                           beacon_slots_reserved *slots, apr_pool_t *p, int *forgotten)
{
    unsigned i, skipped = beacon_registry_damaged(reg);
    beacon_registry_header *header = beacon_registry_header_of(reg);
    apr_time_t now = apr_time_now();
    int restored = 0, max_attempts, in_effect;

    beacon_worker_failover(ws, &max_attempts, &in_effect);
    if (header && !in_effect) {
        /* a new generation without BalancerPersist: nothing beacon wrote
         * of the balancer is left */
        header->max_attempts = -1;
    }
    *forgotten = 0;
    for (i = 0; i < beacon_registry_size(reg); i++) {
        beacon_entry *e = beacon_registry_entry(reg, i);

        if (e == NULL) {
            continue;
        }
        if (unsound_entry(ws, e) != NULL) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, beacon_worker_server(ws),
                         BCNLOGNO(00090) "registry entry %u of %s skipped: %s",
                         i, beacon_worker_balancer_name(ws),
                         unsound_entry(ws, e));
            drop(ws, slots, e, p);
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
            drop(ws, slots, e, p);
            beacon_registry_forget(e);
            (*forgotten)++;
        }
        else if (restore_member(ws, slots, policy, e, p)) {
            narrow_claim(ws, reg, policy, i, e, p);
            restored++;
        }
    }
    if (skipped > 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, beacon_worker_server(ws),
                     BCNLOGNO(00084)
                     "skipped %u entr%s of the member registry of %s that "
                     "this release cannot read (an older layout, or "
                     "damaged); those members join again with their next "
                     "announcement", skipped, skipped == 1 ? "y" : "ies",
                     beacon_worker_balancer_name(ws));
    }
    return restored;
}

/* Registry entry e as a new owner takes it over into *m: a member in its
 * slot, or a replay mark (gone); 0 when it is neither (a member whose
 * slot is not there). */
static int marked_member(const beacon_worker_balancer *ws, const beacon_entry *e,
                         apr_pool_t *p, beacon_member *m)
{
    beacon_slot_view v;
    beacon_slot *slot;

    memset(m, 0, sizeof(*m));
    m->url = apr_pstrdup(p, e->url);
    m->high_ts = e->high_ts;
    if (e->state == BEACON_ENTRY_MARK) {
        m->gone = 1;
        m->last_heard = e->last_heard;
        return 1;
    }
    if (e->state != BEACON_ENTRY_MEMBER ||
        (slot = beacon_worker_slot(ws, e)) == NULL) {
        return 0;
    }
    beacon_worker_view(slot, &v);
    m->disabled = (v.status & BEACON_W_DISABLED) != 0;
    return 1;
}

int beacon_restore_take_over(beacon_worker_balancer *ws, const beacon_registry *reg,
                             const beacon_member_policy *policy,
                             beacon_slots_reserved *slots, apr_pool_t *p,
                             beacon_member **members)
{
    unsigned i;
    int n = 0;

    /* this process is the owner from now on */
    beacon_registry_own(reg);
    beacon_recycle_finish(ws, reg, policy->params, p);
    beacon_slots_index(slots);
    beacon_worker_index(ws);
    /* one walk of the registry: each member's slot is found by the index
     * the entry keeps */
    *members = apr_pcalloc(p, sizeof(beacon_member) * beacon_registry_size(reg));
    for (i = 0; i < beacon_registry_size(reg); i++) {
        const beacon_entry *e = beacon_registry_entry(reg, i);

        if (e && in_balancer(ws, e) && marked_member(ws, e, p, &(*members)[n])) {
            n++;
        }
    }
    return n;
}
