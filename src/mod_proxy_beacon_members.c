/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* One receiver and its members; see mod_proxy_beacon_members.h. */

#include "mod_proxy_beacon_members.h"

#include <apr_strings.h>

#include <unistd.h>

#define PUBLISH_EVERY apr_time_from_msec(100) /* renewals, at most */
#define DIRTY_RENEWED 1   /* only last-seen times changed */
#define DIRTY_CHANGED 2   /* a record came, went or changed state */
#define KEEP_EVERY apr_time_from_sec(1) /* admin settings, forgetting */
/*
 * A listener's route table is one image for all its services, rebuilt
 * whole: a claim change marks it dirty, and it is rebuilt at once when
 * the last rebuild is ROUTE_EVERY old, else when it gets so. A key holder
 * that changes claims in a loop so gets 5 rebuilds a second, not one per
 * datagram, and every service's new claim is routed within 200 ms, well
 * under a heartbeat (1 s at the least) and a fraction of any lease. The
 * pause also grows to ROUTE_SHARE times the last rebuild's own time, so
 * that rebuilds of the largest tables (65,536 routes) take at most a
 * fifth of the loop, whichever service churns: there is one budget per
 * listener, since one rebuild serves every service at once.
 */
#define ROUTE_EVERY apr_time_from_msec(200)
#define ROUTE_SHARE 4

/* ------------------------------------------------------------------ */
/* Logging                                                             */

static const char *escaped_span(apr_pool_t *p, const beacon_span_t *span)
{
    if (span->ptr == NULL) {
        return "-";
    }
    return ap_escape_logitem(p, apr_pstrmemdup(p, span->ptr, span->len));
}

/* A peer controls how often drops happen: each reason is reported at most
 * once per BEACON_LOG_EVERY per receiver, with the count it stands for. */
/* A proxy a sender reaches at two addresses (its A and AAAA records)
 * gets each announcement twice: no cause for a warning, but worth a line
 * for whoever wonders why replayed_ts grows. */
static void report_second_copy(beacon_receiver *r, const beacon_event_t *ev,
                               const struct sockaddr *peer, socklen_t peer_len,
                               apr_time_t now, apr_pool_t *p)
{
    unsigned suppressed;

    if (beacon_decide_rate_allows(&r->second_copy_log, now, BEACON_LOG_EVERY,
                                &suppressed)) {
        /* BCN00020's words first: operators grep for "replayed/reordered
         * ts" (the seed's troubleshooting table), then why it is harmless */
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, r->s, BCNLOGNO(00113)
                     "%s: dropped datagram from %s: %s %s: a second copy of "
                     "the announcement last accepted, the same ts again (a "
                     "sender that reaches this proxy at two addresses)%s",
                     r->label, beacon_inbox_peer_label(p, peer, peer_len),
                     beacon_shm_drop_name(BEACON_DROP_REPLAYED_TS), ev->url,
                     beacon_util_held_back(p, suppressed));
    }
}

/* The first context of a verified datagram that r's balancer does not let
 * its members claim (contexts=), into *path; 0 when there is none, or when
 * the balancer routes no contexts (ctx= is then ignored). A leaving one
 * is never refused: it claims nothing (attrs_of), and a member must be
 * able to go even when contexts= lost a path it still names. */
static int refused_context(const beacon_receiver *r,
                           const beacon_datagram_t *dg, beacon_span_t *path)
{
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int i;

    if (r->bal == NULL || r->bal->contexts == NULL ||
        beacon_datagram_is_leaving(dg) ||
        (i = beacon_allow_refused(r->bal->contexts, paths,
                                  beacon_datagram_contexts(dg, paths))) < 0) {
        return 0;
    }
    *path = paths[i];
    return 1;
}

/* What receiver r lets a url from peer point at. */
static const beacon_reach_gate_t *gate_of(const beacon_receiver *r,
                                          const struct sockaddr *peer,
                                          beacon_reach_gate_t *gate)
{
    gate->receiver = r->conf->allow;
    gate->balancer = r->bal ? r->bal->allow : NULL;
    gate->source = peer;
    return gate;
}

/* " URL: why (whose list)" */
static const char *not_allowed_detail(const beacon_receiver *r,
                                      const beacon_event_t *ev,
                                      const struct sockaddr *peer,
                                      apr_pool_t *p)
{
    beacon_reach_gate_t gate;
    const char *balancer = r->bal ? apr_pstrcat(p, "balancer://", r->bal->name,
                                                NULL)
                                  : "";

    return apr_pstrcat(p, " ", ev->url, ": ", ev->refusal,
                       beacon_util_refused_by(p, gate_of(r, peer, &gate),
                                              ev->refused_by_balancer, balancer),
                       NULL);
}

/* What a drop for its url says of the datagram's unverified svc= and
 * url= (wire format 1.3): the url, and for a member key that did not
 * match, what it was derived for. */
static const char *unverified_detail(unsigned drop, const beacon_datagram_t *dg,
                                     apr_pool_t *p)
{
    const char *url = dg->unverified_url.ptr
                          ? apr_pstrcat(p, "'", escaped_span(p, &dg->unverified_url),
                                        "'", NULL)
                          : "(no url=)";

    if (drop != BEACON_DROP_MAC_MISMATCH) {
        return apr_pstrcat(p, " ", url, NULL);
    }
    return apr_pstrcat(p, " (member key derived for svc=",
                       dg->unverified_svc.ptr ? escaped_span(p, &dg->unverified_svc)
                                              : "(none)",
                       " url=", url, ")", NULL);
}

static void report_drop(beacon_receiver *r, unsigned drop,
                        const beacon_event_t *ev, const struct sockaddr *peer,
                        socklen_t peer_len, apr_time_t now, apr_pool_t *p)
{
    beacon_span_t refused;
    const char *detail = "";
    unsigned suppressed;

    r->shared->dropped[drop]++;
    if (drop == BEACON_DROP_REPLAYED_TS && ev->second_copy) {
        report_second_copy(r, ev, peer, peer_len, now, p);
        return;
    }
    if (!beacon_decide_rate_allows(&r->drop_log[drop], now, BEACON_LOG_EVERY,
                                 &suppressed)) {
        return;
    }
    if (drop == BEACON_DROP_UNACCEPTABLE_URL) {
        detail = apr_pstrcat(p, " '", escaped_span(p, &ev->dg.url), "'", NULL);
    }
    else if (drop == BEACON_DROP_BAD_FIELD) {
        detail = apr_pstrcat(p, " ", escaped_span(p, &ev->dg.bad_field), NULL);
    }
    else if (drop == BEACON_DROP_WRONG_SERVICE) {
        detail = apr_pstrcat(p, " (svc=", escaped_span(p, &ev->dg.svc), ")",
                             NULL);
    }
    else if (drop == BEACON_DROP_CONTEXT_NOT_ALLOWED &&
             refused_context(r, &ev->dg, &refused)) {
        detail = apr_pstrcat(p, " ", escaped_span(p, &refused), " from ",
                             ev->dg.url.ptr ? escaped_span(p, &ev->dg.url)
                                            : "a heartbeat",
                             " (balancer://", r->bal->name, ")", NULL);
    }
    else if (drop == BEACON_DROP_URL_NOT_ALLOWED) {
        detail = not_allowed_detail(r, ev, peer, p);
    }
    else if (drop == BEACON_DROP_REVOKED || drop == BEACON_DROP_URL_NOT_CANONICAL ||
             (drop == BEACON_DROP_MAC_MISMATCH && ev->dg.unverified_url.ptr)) {
        detail = unverified_detail(drop, &ev->dg, p);
    }
    else if (drop == BEACON_DROP_TABLE_FULL && r->bal) {
        detail = apr_pstrcat(p, " ", ev->url, " (balancer://", r->bal->name, ")",
                             NULL);
    }
    else if (drop == BEACON_DROP_NOT_OURS || drop == BEACON_DROP_REPLAYED_TS ||
             drop == BEACON_DROP_TABLE_FULL) {
        detail = apr_pstrcat(p, " ", ev->url, NULL);
    }
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, r->s, BCNLOGNO(00020)
                 "%s: dropped datagram from %s: %s%s%s", r->label,
                 beacon_inbox_peer_label(p, peer, peer_len), beacon_shm_drop_name(drop),
                 detail, beacon_util_held_back(p, suppressed));
}

/* ------------------------------------------------------------------ */
/* Acting on accepted announcements                                    */

/* One line for the whole balancer, however many urls wait: an error when
 * nothing will free a slot, else a note of the wait. */
static void log_no_slot(beacon_receiver *r, const beacon_record_t *rec,
                        apr_time_t ready_at, apr_time_t now, apr_pool_t *p)
{
    unsigned suppressed;

    if (!beacon_decide_rate_allows(&r->no_slot_log, now, BEACON_LOG_EVERY,
                                 &suppressed)) {
        return;
    }
    if (ready_at != 0) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00039)
                     "backend %s waits %" APR_TIME_T_FMT " s for a slot of "
                     "balancer://%s: its growth is used up, and a member out "
                     "of rotation becomes safe to reuse then%s", rec->url,
                     apr_time_sec(ready_at - now + APR_USEC_PER_SEC - 1),
                     r->bal->name, beacon_util_held_back(p, suppressed));
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, r->s, BCNLOGNO(00037)
                 "cannot add backend %s to balancer://%s: no free slot "
                 "(reserved or growth), and no member out of rotation whose "
                 "slot could be reused (raise slots= on its "
                 "ProxyBeaconBalancer line); retrying in %"
                 APR_TIME_T_FMT " s%s", rec->url, r->bal->name,
                 apr_time_sec(rec->retry_at - now + APR_USEC_PER_SEC - 1),
                 beacon_util_held_back(p, suppressed));
}

/* Announcements repeat what failed: one line per receiver per
 * BEACON_LOG_EVERY, with the count it stands for. */
static void add_failed(beacon_receiver *r, beacon_record_t *rec,
                       beacon_add_result result, const beacon_add_info *info,
                       apr_time_t now, apr_pool_t *p)
{
    unsigned suppressed;

    r->shared->events[BEACON_EV_ADD_FAILED]++;
    if (result == BEACON_ADD_NO_SLOT) {
        beacon_table_add_deferred(rec, now, info->ready_at);
        log_no_slot(r, rec, info->ready_at, now, p);
        return;
    }
    beacon_table_add_failed(rec, now);
    if (!beacon_decide_rate_allows(&r->add_fail_log, now, BEACON_LOG_EVERY,
                                 &suppressed)) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, r->s, BCNLOGNO(00033)
                 "%s backend %s to balancer://%s%s%s; retrying in %"
                 APR_TIME_T_FMT " s%s", result == BEACON_ADD_NOT_CONFIRMED
                                            ? "balancer add not confirmed for"
                                            : "cannot add",
                 ap_escape_logitem(p, rec->url), r->bal->name,
                 info->why ? ": " : "",
                 info->why ? ap_escape_logitem(p, info->why) : "",
                 apr_time_sec(rec->backoff), beacon_util_held_back(p, suppressed));
}

/* What came of an add, in the table and the log. */
static void report_add(beacon_receiver *r, beacon_record_t *rec,
                       const beacon_outcome *out, apr_time_t now,
                       apr_pool_t *p)
{
    switch (out->added) {
    case BEACON_ADD_DONE:
        beacon_table_added(rec);
        r->shared->events[BEACON_EV_ADDED]++;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00030)
                     "added backend %s to balancer://%s", rec->url,
                     r->bal->name);
        break;
    case BEACON_ADD_RECYCLED:
        beacon_table_added(rec);
        /* the old url's next announcement adds it anew */
        beacon_table_unlisted(r->table, out->info.recycled);
        r->shared->events[BEACON_EV_ADDED]++;
        r->shared->events[BEACON_EV_RECYCLED]++;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00038)
                     "recycled slot of %s for %s in balancer://%s",
                     out->info.recycled, rec->url, r->bal->name);
        break;
    case BEACON_ADD_ADOPTED:
        beacon_table_added(rec);
        r->shared->events[BEACON_EV_READOPTED]++;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00031)
                     "re-adopted backend %s in balancer://%s", rec->url,
                     r->bal->name);
        break;
    case BEACON_ADD_NOT_OURS:
        beacon_table_not_managed(rec);
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, r->s, BCNLOGNO(00032)
                     "member not managed by beacon: %s is configured in "
                     "balancer://%s; left alone", rec->url, r->bal->name);
        break;
    default:
        add_failed(r, rec, out->added, &out->info, now, p);
        break;
    }
}

/* What came of taking a member out of rotation or back. */
static void report_change(beacon_receiver *r, const char *url,
                          apr_status_t rv, int disabled, const char *what,
                          beacon_event_kind event)
{
    r->shared->events[event]++;
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, r->s, BCNLOGNO(00034)
                     "cannot change backend %s in balancer://%s: it is gone "
                     "or not beacon's", url, r->bal->name);
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00035)
                 "%s backend %s%s%s", what, url,
                 disabled ? " from balancer://" : " in balancer://", r->bal->name);
}

static void report_outcome(beacon_receiver *r, const beacon_event_t *ev,
                           const beacon_outcome *out, apr_time_t now,
                           apr_pool_t *p)
{
    switch (ev->action) {
    case BEACON_ACT_ADD:
        report_add(r, ev->rec, out, now, p);
        break;
    case BEACON_ACT_ENABLE:
        report_change(r, ev->url, out->changed, 0, "re-enabled",
                      BEACON_EV_REENABLED);
        break;
    case BEACON_ACT_DISABLE:
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00036)
                     "backend leaving %s", ev->url);
        report_change(r, ev->url, out->changed, 1, "disabled",
                      BEACON_EV_LEAVING);
        break;
    case BEACON_ACT_WAIT:
        ap_log_error(APLOG_MARK, APLOG_TRACE1, 0, r->s,
                     "%s: add of %s waits for its back-off", r->label, ev->url);
        return;
    default:
        ap_log_error(APLOG_MARK, APLOG_TRACE3, 0, r->s, "%s: %s %s",
                     r->label, beacon_action_name(ev->action), ev->url);
        return;
    }
    r->dirty = DIRTY_CHANGED;
}

/* Who announced a record last, for the status pages. */
static void remember_sender(beacon_receiver *r, const beacon_event_t *ev)
{
    beacon_status_record *info = &r->peer[ev->rec - r->table->rec];
    apr_size_t n = ev->dg.host.ptr ? ev->dg.host.len : 0;

    if (n >= sizeof(info->host)) {
        n = sizeof(info->host) - 1;
    }
    memcpy(info->host, ev->dg.host.ptr ? ev->dg.host.ptr : "", n);
    info->host[n] = '\0';
    info->pid = beacon_span_number(&ev->dg.pid);
    info->seq = beacon_span_number(&ev->dg.seq);
    info->leaving = beacon_datagram_is_leaving(&ev->dg);
    if (r->dirty < DIRTY_RENEWED) {
        r->dirty = DIRTY_RENEWED;
    }
}

/* The route, load factor, state and contexts a verified datagram
 * announces (libbeacon checked their values). A member's claims are
 * those of its latest announcement, one without ctx= claiming none;
 * except a leaving one, which says the member goes, not that its
 * applications moved: their routes stay, answering 503, until it is
 * forgotten. */
static void attrs_of(const beacon_receiver *r, const beacon_datagram_t *dg,
                     beacon_member_attrs *attrs)
{
    apr_size_t n = dg->route.ptr ? dg->route.len : 0;

    memset(attrs, 0, sizeof(*attrs));
    attrs->state = beacon_datagram_state(dg);
    attrs->claims = r->bal->contexts != NULL && !beacon_datagram_is_leaving(dg);
    attrs->ctx = dg->ctx;
    if (n > 0 && n < sizeof(attrs->route)) {
        memcpy(attrs->route, dg->route.ptr, n);
    }
    if (dg->lbfactor.ptr) {
        attrs->lbfactor = beacon_lbfactor_parse(dg->lbfactor.ptr, dg->lbfactor.len);
        if (attrs->lbfactor < 0) {
            attrs->lbfactor = 0;
        }
    }
}

/* An accepted datagram in log-only mode or without url: logged only. */
static void log_unbound(beacon_receiver *r, const beacon_event_t *ev,
                        const char *buf, apr_size_t len, apr_pool_t *p)
{
    if (r->target == NULL) {
        /* authenticated, so logging each is bounded by the senders the
         * operator gave the secret to */
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00040)
                     "%s: received: %s", r->label,
                     ap_escape_logitem(p, apr_pstrmemdup(p, buf, len)));
        return;
    }
    r->shared->events[BEACON_EV_HEARTBEAT]++;
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, r->s, BCNLOGNO(00041)
                 "%s: heartbeat without url from host=%s pid=%s", r->label,
                 escaped_span(p, &ev->dg.host), escaped_span(p, &ev->dg.pid));
}

/* The receiver of listener l that a verified datagram's service picks:
 * that service's balancer, the one without a service, or (log-only) l. */
static beacon_receiver *lane_of(beacon_receiver *l, const beacon_datagram_t *dg)
{
    if (l->bal == NULL) {
        return l;
    }
    if (dg->service >= 0) {
        return l->lanes[l->lane_of[dg->service]];
    }
    /* the ring made a datagram without svc= a wrong service when no
     * balancer is without one */
    return l->lanes[l->default_lane >= 0 ? l->default_lane : 0];
}

/* Rebuilds listener l's route table. Its memory goes as soon as it is
 * done: a wake may handle hundreds of datagrams with p. */
static void rebuild(beacon_receiver *l, apr_pool_t *p)
{
    apr_pool_t *build;

    apr_pool_create(&build, p);
    beacon_routes_table_publish(l->routes, build);
    apr_pool_destroy(build);
    l->routes_dirty = 0;
}

/* Rebuilds listener l's route table if it waits for one and may have it
 * now (ROUTE_EVERY). */
static void route_if_due(beacon_receiver *l, apr_time_t now, apr_pool_t *p)
{
    apr_interval_time_t took, pause;

    if (l->routes == NULL || !l->routes_dirty || now < l->routes_due) {
        return;
    }
    rebuild(l, p);
    took = apr_time_now() - now;
    pause = took * ROUTE_SHARE > ROUTE_EVERY ? took * ROUTE_SHARE : ROUTE_EVERY;
    l->routes_due = now + took + pause;
}

/* The contexts claimed changed, or a member that claimed some went: at
 * once if the last rebuild is old enough, so that a new context is
 * routed on the next request, else within ROUTE_EVERY. */
static void reroute(beacon_receiver *l, apr_time_t now, apr_pool_t *p)
{
    l->routes_dirty = 1;
    route_if_due(l, now, p);
}

apr_time_t beacon_members_due(const beacon_receiver *r)
{
    return r->listener == r && r->routes && r->routes_dirty ? r->routes_due : 0;
}

void beacon_members_handle(void *ctx, const char *buf, apr_size_t len,
                           const struct sockaddr *peer, socklen_t peer_len,
                           apr_pool_t *scratch)
{
    beacon_receiver *l = ctx, *r = l;
    apr_time_t now = apr_time_now();
    beacon_announcement announcement;
    beacon_member_attrs attrs;
    beacon_span_t refused;
    beacon_reach_gate_t gate;
    beacon_outcome out;
    beacon_event_t ev;
    beacon_reason_t reason;

    /* one MAC with the keys of the service the datagram names; drops
     * before its service is known count on the listener's first balancer */
    memset(&ev, 0, sizeof(ev));
    reason = beacon_verify_ring(buf, len, l->ring, now, l->conf->max_skew.value,
                                &ev.dg);
    if (reason == BEACON_OK) {
        r = lane_of(l, &ev.dg);
        if (refused_context(r, &ev.dg, &refused)) {
            /* before the table: nothing of it is applied */
            report_drop(r, BEACON_DROP_CONTEXT_NOT_ALLOWED, &ev, peer,
                        peer_len, now, scratch);
            return;
        }
        reason = beacon_receive_verified(r->table, now,
                                         gate_of(r, peer, &gate), &ev);
    }
    if (reason != BEACON_OK) {
        report_drop(r, reason, &ev, peer, peer_len, now, scratch);
        return;
    }
    if (ev.rec) {
        remember_sender(r, &ev);
    }
    if (ev.action == BEACON_ACT_NOT_MANAGED) {
        /* the balancer's own member: the adapter's drop, not the wire's */
        report_drop(r, BEACON_DROP_NOT_OURS, &ev, peer, peer_len, now, scratch);
        return;
    }
    r->shared->events[BEACON_EV_ACCEPTED]++;
    if (r->target == NULL || ev.rec == NULL) {
        log_unbound(r, &ev, buf, len, scratch);
        return;
    }
    attrs_of(r, &ev.dg, &attrs);
    r->peer[ev.rec - r->table->rec].lbfactor = attrs.lbfactor;
    announcement.url = ev.url;
    announcement.action = ev.action;
    announcement.ts = ev.dg.ts;
    announcement.attrs = &attrs;
    announcement.hint = &r->entry_hint[beacon_table_index(ev.rec)];
    beacon_balancer_announced(r->target, &announcement, now, scratch, &out);
    report_outcome(r, &ev, &out, now, scratch);
    if (out.claims_changed || out.added == BEACON_ADD_RECYCLED) {
        reroute(l, now, scratch);
    }
}

/* ------------------------------------------------------------------ */
/* Leases and publication                                              */

static void expire(beacon_receiver *r, apr_time_t now)
{
    beacon_record_t *rec;
    unsigned cursor = 0, released;

    while ((rec = beacon_table_next_lapsed(r->table, now, &cursor)) != NULL) {
        r->dirty = DIRTY_CHANGED;
        if (r->target) {
            report_change(r, rec->url,
                          beacon_balancer_set_disabled(
                              r->target, rec->url, 1,
                              &r->entry_hint[beacon_table_index(rec)]),
                          1, "evicted", BEACON_EV_EVICTED);
        }
    }
    released = beacon_table_release(r->table, now);
    if (released) {
        r->dirty = DIRTY_CHANGED;
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, r->s, BCNLOGNO(00054)
                     "%s: forgot %u silent non-member record(s)", r->label,
                     released);
    }
}

/* Copies the table for the status pages in other children. */
static void publish(beacon_receiver *r, apr_time_t now)
{
    beacon_receiver_status *sh = r->shared;
    unsigned i, n = 0;

    /* Every accepted announcement renews a record: renewals are copied at
     * most every PUBLISH_EVERY, so a busy receiver's cost per wake stays
     * flat, while membership changes show at once. */
    if (r->dirty == 0 ||
        (r->dirty == DIRTY_RENEWED && now - r->published < PUBLISH_EVERY)) {
        return;
    }
    r->published = now;
    beacon_shm_status_write_begin(sh);
    for (i = 0; i < beacon_table_capacity(r->table); i++) {
        const beacon_record_t *rec = &r->table->rec[i];
        beacon_status_record *out;

        if (rec->state == BEACON_REC_FREE) {
            continue;
        }
        out = &sh->rec[n++];
        *out = r->peer[i];
        apr_cpystrn(out->url, rec->url, sizeof(out->url));
        out->last_ts = rec->high_ts;
        out->last_seen = rec->last_seen;
        out->retry_at = rec->retry_at;
        out->state = rec->state;
    }
    beacon_shm_status_write_end(sh, n);
    r->dirty = 0;
}

/* Once a second: the registry keeps what a restart must give back. */
static void keep(beacon_receiver *r, apr_time_t now, apr_pool_t *p)
{
    int forgotten;

    if (r->target == NULL || now - r->kept < KEEP_EVERY) {
        return;
    }
    r->kept = now;
    forgotten = beacon_balancer_keep(r->target, now, p);
    if (forgotten > 0) {
        r->shared->events[BEACON_EV_FORGOTTEN] += (apr_uint64_t)forgotten;
        r->dirty = DIRTY_CHANGED;
        reroute(r->listener, now, p);
    }
}

void beacon_members_tick(beacon_receiver *r, apr_time_t now, apr_pool_t *p)
{
    expire(r, now);
    keep(r, now, p);
    publish(r, now);
    if (r->listener == r) {
        route_if_due(r, now, p);
    }
}

/* ------------------------------------------------------------------ */
/* A new owner                                                         */

static void adopt_members(beacon_receiver *r, apr_time_t now, apr_pool_t *p)
{
    beacon_member *members;
    int i, n, adopted = 0;

    n = beacon_balancer_marked_members(r->target, p, &members);
    for (i = 0; i < n; i++) {
        if (members[i].gone) {
            /* no member: only its replay mark is taken over */
            beacon_table_remember(r->table, members[i].url, members[i].high_ts,
                                  members[i].last_heard);
        }
        else if (beacon_table_adopt(r->table, members[i].url, members[i].disabled,
                                    members[i].high_ts, now) == BEACON_OK) {
            adopted++;
        }
    }
    r->shared->events[BEACON_EV_TAKEN_OVER] += (apr_uint64_t)adopted;
    if (adopted > 0) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00060)
                     "took over %d existing member(s) of balancer://%s",
                     adopted, r->bal->name);
    }
}

void beacon_members_start(beacon_receiver *r, apr_pool_t *pool,
                          apr_time_t now, apr_pool_t *p)
{
    unsigned i, capacity = r->shared->capacity;

    r->pool = pool;
    /* the capacity the status memory was made for: its balancer's */
    r->table = beacon_table_make(pool, capacity, r->conf->timeout.value,
                                 r->conf->max_skew.value);
    if (r->listener == r) {
        r->inbox = beacon_inbox_make(pool, r->s, r->bind_host, r->bind_port,
                                     r->label, r->sock);
    }
    r->peer = apr_pcalloc(pool, sizeof(*r->peer) * capacity);
    r->entry_hint = apr_palloc(pool, sizeof(*r->entry_hint) * capacity);
    for (i = 0; i < capacity; i++) {
        r->peer[i].pid = r->peer[i].seq = -1;
        r->entry_hint[i] = -1;
    }
    r->shared->owner_pid = getpid();
    r->shared->listening = 0;
    r->dirty = DIRTY_CHANGED;
    if (r->target) {
        adopt_members(r, now, p);
    }
    /* the last owner may have died with a rebuild pending; this one opens
     * no ROUTE_EVERY pause, so that the first claim is routed at once */
    r->routes_due = 0;
    if (r->listener == r && r->routes) {
        rebuild(r, p);
    }
}
