/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The status pages as HTML; see mod_proxy_beacon_status_html.h.
 *
 * Self-contained on purpose: the CSS is inline and nothing is fetched from
 * anywhere (no font, no script, not even a favicon), so the page works on
 * a proxy with no way out and says nothing to a third party. Every class
 * is under .bcn, since the same body sits in mod_status's page too.
 */

#include "mod_proxy_beacon_status_html.h"
#include "mod_proxy_beacon_view.h"

#include <apr_strings.h>
#include <httpd.h>
#include <http_protocol.h>
#include <util_time.h>

#include <stdlib.h>

/* Compact on purpose: it is sent with every refresh. */
static const char css[] =
    ".bcn{font:14px/1.4 system-ui,sans-serif;color:#222}"
    ".bcn h1{font-size:1.4em;margin:.2em 0}"
    ".bcn h2{font-size:1.15em;margin:1.4em 0 .3em}"
    ".bcn h3{font-size:1em;margin:.8em 0 .2em;color:#444}"
    ".bcn .scroll{overflow-x:auto}"
    ".bcn table{border-collapse:collapse;font-size:13px;margin:.3em 0}"
    ".bcn th,.bcn td{padding:.25em .6em;border-bottom:1px solid #e2e2e2;"
    "text-align:left;vertical-align:top}"
    ".bcn th{background:#f3f4f6;font-weight:600;white-space:nowrap}"
    ".bcn .n{text-align:right;font-variant-numeric:tabular-nums}"
    ".bcn .u{font-family:ui-monospace,monospace;word-break:break-all}"
    ".bcn .mut{color:#6b6b6b;font-size:12px}"
    ".bcn .kv{display:grid;grid-template-columns:max-content auto;"
    "gap:.05em 1em;margin:.3em 0}"
    ".bcn .kv dt{color:#555}.bcn .kv dd{margin:0}"
    ".bcn .st{display:inline-block;padding:0 .5em;margin:0 .2em .1em 0;"
    "border-radius:.8em;font-weight:600;white-space:nowrap}"
    ".bcn .ok{background:#d9f2df;color:#1d5e2c}"
    ".bcn .out{background:#fbe0df;color:#8c1d18}"
    ".bcn .adm{background:#fdf0c4;color:#664d00}"
    ".bcn .wait{background:#e0e9fb;color:#1d3f8c}"
    ".bcn .none{background:#ececec;color:#444}"
    ".bcn .bar{display:inline-block;width:4em;height:.45em;margin-right:.4em;"
    "background:#e4e4e4;border-radius:.3em;overflow:hidden}"
    ".bcn .bar span{display:block;height:100%;background:#43a047}"
    ".bcn .bar .low{background:#ef8f00}"
    ".bcn .grid{display:grid;grid-template-columns:repeat(auto-fill,"
    "minmax(9.5em,1fr));gap:.3em;margin:.3em 0;max-width:60em}"
    ".bcn .grid div{border:1px solid #e2e2e2;border-radius:.3em;"
    "padding:.15em .5em;font-size:12px;color:#555}"
    ".bcn .grid b{display:block;font-size:15px;color:#222;"
    "font-variant-numeric:tabular-nums}"
    ".bcn .grid .zero b{color:#aaa}"
    ".bcn .grid .warn{border-color:#e57373;background:#fff4f4}";

static const char *html(apr_pool_t *p, const char *s)
{
    return ap_escape_html(p, ap_escape_logitem(p, s));
}

/* ------------------------------------------------------------------ */
/* Times for people                                                    */

/* "4.2 s", "3 min", "2.5 h", "3.1 d": precise while it changes fast. */
static const char *human_duration(apr_pool_t *p, double s)
{
    if (s < 0) {
        s = 0;
    }
    if (s < 60) {
        return apr_psprintf(p, "%.1f s", s);
    }
    if (s < 3600) {
        return apr_psprintf(p, "%ld min", (long)(s / 60));
    }
    if (s < 86400) {
        return apr_psprintf(p, "%.1f h", s / 3600);
    }
    return apr_psprintf(p, "%.1f d", s / 86400);
}

/* A wall-clock time (microseconds since the epoch, as apr_time_t is) in
 * UTC: the sender's ts, for the tooltip; raw microseconds tell nobody. */
static const char *utc_text(apr_pool_t *p, apr_time_t t)
{
    return ap_ht_time(p, t, "%Y-%m-%d %H:%M:%S UTC", 1);
}

/* ------------------------------------------------------------------ */
/* The one state column: beacon's view and httpd's flags together     */

typedef struct {
    const char *key;   /* data-state, stable for scripts and tests */
    const char *label; /* what people read */
    const char *tone;  /* CSS class */
    const char *why;   /* tooltip */
} state_badge;

static const state_badge
    B_ACTIVE = {"active", "active", "ok", "in rotation, lease running"},
    B_EVICTED = {"evicted", "evicted", "out",
                 "silent longer than its lease: disabled until it announces"},
    B_LEAVING = {"leaving", "leaving", "wait",
                 "announced state=leaving: disabled until it announces"},
    B_PENDING = {"pending", "pending add", "wait",
                 "adding it to the balancer failed; retried on an announcement"},
    B_ADDING = {"adding", "adding", "wait", "accepted, not yet added"},
    B_NOT_MANAGED = {"not-managed", "not managed", "none",
                     "a member beacon did not create: left alone"};

/* httpd's flags (proxy_util.c's wstat table) that hold a member out or
 * change how it gets traffic, whoever set them, most telling first. */
static const struct {
    const char *flag;
    state_badge badge;
} httpd_badges[] = {
    {"Stop", {"stopped", "stopped by admin", "adm",
              "httpd flag Stop (balancer-manager): no traffic at all"}},
    {"HcFl", {"hcheck-failed", "health check failed", "out",
              "httpd flag HcFl: mod_proxy_hcheck holds it out"}},
    {"Err", {"error", "in error", "out",
             "httpd flag Err: a request failed; retried after retry="}},
    {"Drn", {"draining", "draining", "adm",
             "httpd flag Drn: only requests of existing sessions"}},
    /* not "by admin": for a moment after an eviction the flag is set and
     * the record, published after, still says active */
    {"Dis", {"disabled", "disabled", "adm",
             "httpd flag Dis, not set by beacon: no new sessions"}},
    {"Stby", {"standby", "hot standby", "adm",
              "httpd flag Stby: used only when no other member is"}},
    {"Spar", {"spare", "spare", "adm",
              "httpd flag Spar: used only in place of an unusable member"}},
};

static const state_badge *beacon_badge(const beacon_shown_record *row)
{
    switch (row->rec->state) {
    case BEACON_REC_NOT_MANAGED: return &B_NOT_MANAGED;
    case BEACON_REC_PENDING:     return &B_PENDING;
    case BEACON_REC_NEW:         return &B_ADDING;
    case BEACON_REC_EVICTED:
        return row->rec->leaving ? &B_LEAVING : &B_EVICTED;
    default:                     return NULL; /* active: httpd has a say */
    }
}

#define MAX_BADGES (1 + sizeof(httpd_badges) / sizeof(httpd_badges[0]))

/* The badges of one member, beacon's first (none of httpd's for a member
 * beacon does not manage: its flags are someone else's business); "Dis"
 * only when beacon's own record says active, since beacon disables the
 * evicted and leaving ones itself. Returns how many, at least one. */
static unsigned member_badges(const beacon_shown_record *row,
                              const state_badge *out[MAX_BADGES])
{
    const state_badge *mine = beacon_badge(row);
    unsigned n = 0;
    apr_size_t i;

    if (mine) {
        out[n++] = mine;
    }
    for (i = 0; row->flags && row->rec->state != BEACON_REC_NOT_MANAGED &&
                i < MAX_BADGES - 1; i++) {
        if (beacon_view_has_flag(row->flags, httpd_badges[i].flag) &&
            (mine == NULL || strcmp(httpd_badges[i].flag, "Dis") != 0)) {
            out[n++] = &httpd_badges[i].badge;
        }
    }
    if (n == 0) {
        out[n++] = &B_ACTIVE;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* A receiver                                                          */

/* What members may point at: the receiver's list (or its defaults), and
 * the balancer's allow= that narrows it. */
static void print_allow(request_rec *r, const beacon_shown_receiver *sr)
{
    const char *receiver = beacon_view_allow(r->pool, sr->v->conf->allow);
    const char *balancer = beacon_view_allow(r->pool, sr->v->allow);

    ap_rprintf(r, "<dt>allow</dt><dd>%s%s%s</dd>",
               receiver ? html(r->pool, receiver)
                        : "all but link-local, unspecified, multicast, broadcast",
               balancer ? "; within it " : "",
               balancer ? html(r->pool, balancer) : "");
}

static void print_receiver_facts(request_rec *r, const beacon_shown_receiver *sr)
{
    const beacon_server_conf *c = sr->v->conf;
    const char *balancer = beacon_view_balancer(r->pool, sr->v);

    ap_rprintf(r, "<dl class=\"kv\"><dt>balancer</dt><dd>%s</dd>"
               "<dt>service</dt><dd>%s</dd><dt>lease</dt><dd>%s</dd>"
               "<dt>max skew</dt><dd>%s</dd><dt>records</dt><dd>%u of %d</dd>",
               balancer ? html(r->pool, balancer) : "none (log-only)",
               sr->v->service ? html(r->pool, sr->v->service)
                              : sr->v->shares_listener ? "none (announcements without svc=)"
                                                       : "any",
               c->timeout.value ? human_duration(r->pool, beacon_view_seconds(c->timeout.value))
                                : "none (add-only)",
               human_duration(r->pool, beacon_view_seconds(c->max_skew.value)),
               sr->nrows, sr->v->shared->capacity);
    print_allow(r, sr);
    if (sr->growth_used >= 0) {
        ap_rprintf(r, "<dt>growth slots</dt><dd>%d used, %d free, %d "
                   "recyclable now</dd>", sr->growth_used, sr->growth_free,
                   sr->growth_recyclable);
        if (sr->reserved > 0) {
            ap_rprintf(r, "<dt>reserved slots</dt><dd>%d taken, %d free</dd>",
                       sr->reserved - sr->reserved_free, sr->reserved_free);
        }
    }
    ap_rprintf(r, "<dt>receiving child</dt><dd>%s</dd></dl>\n",
               sr->v->shared->owner_pid
                   ? apr_psprintf(r->pool, "pid %" APR_INT64_T_FMT "%s",
                                  sr->v->shared->owner_pid,
                                  sr->v->shared->listening ? "" : " (not listening)")
                   : "none yet");
}

/* Lease left as text and a bar of the part left. */
static void print_lease(request_rec *r, const beacon_shown_record *row,
                        apr_interval_time_t timeout)
{
    double part;

    if (row->lease_left < 0 || timeout <= 0) {
        ap_rputs("<td class=\"mut\">-</td>", r);
        return;
    }
    part = row->lease_left / beacon_view_seconds(timeout);
    part = part > 1 ? 1 : part;
    ap_rprintf(r, "<td><span class=\"bar\"><span%s style=\"width:%d%%\">"
               "</span></span>%s</td>", part < 0.25 ? " class=\"low\"" : "",
               (int)(part * 100 + 0.5), human_duration(r->pool, row->lease_left));
}

/* What the state badges leave out: when a pending add is retried, and
 * httpd's flags verbatim (with "Bcn" for members beacon created). */
static void print_state_detail(request_rec *r, const beacon_shown_record *row)
{
    if (row->rec->state == BEACON_REC_PENDING) {
        ap_rprintf(r, "<div class=\"mut\">retry %s</div>",
                   row->retry_in >= 0
                       ? apr_pstrcat(r->pool, "in ",
                                     human_duration(r->pool, row->retry_in), NULL)
                       : "on its next announcement");
    }
    if (row->flags || row->ours) {
        ap_rprintf(r, "<div class=\"mut\" title=\"httpd's worker flags; Bcn: "
                   "created by beacon\">%s%s%s</div>",
                   row->flags ? html(r->pool, beacon_view_trimmed(r->pool, row->flags)) : "",
                   row->flags && row->ours ? " " : "", row->ours ? "Bcn" : "");
    }
}

/* The factor in force; what the backend announced, when it differs; and
 * a slow start under way. */
static void print_factor(request_rec *r, const beacon_shown_record *row)
{
    if (row->lbfactor == 0) {
        ap_rputs("<td class=\"n\">-</td>", r);
        return;
    }
    ap_rprintf(r, "<td class=\"n\" title=\"the load factor in force%s\">%s%s%s</td>",
               row->rec->lbfactor ? "; of: as announced" : "",
               beacon_view_factor(r->pool, row->lbfactor),
               row->rec->lbfactor && row->rec->lbfactor != row->lbfactor
                   ? apr_pstrcat(r->pool, " of ",
                                 beacon_view_factor(r->pool, row->rec->lbfactor), NULL)
                   : "",
               row->slow_start
                   ? apr_psprintf(r->pool, "<div class=\"mut\">slow start %d%%</div>",
                                  row->slow_start)
                   : "");
}

static const char *id_or_dash(apr_pool_t *p, apr_int64_t v)
{
    return v < 0 ? "-" : apr_psprintf(p, "%" APR_INT64_T_FMT, v);
}

/* data-state: the first badge's key, for scripts and tests. */
static void print_member(request_rec *r, const beacon_shown_record *row,
                         apr_interval_time_t timeout)
{
    const state_badge *badges[MAX_BADGES];
    unsigned i, n = member_badges(row, badges);

    ap_rprintf(r, "<tr data-state=\"%s\"><td class=\"u\">%s</td><td>",
               badges[0]->key, html(r->pool, row->rec->url));
    for (i = 0; i < n; i++) {
        ap_rprintf(r, "<span class=\"st %s\" title=\"%s\">%s</span>",
                   badges[i]->tone, badges[i]->why, badges[i]->label);
    }
    print_state_detail(r, row);
    ap_rprintf(r, "</td><td title=\"sent %s\">%s ago</td>",
               utc_text(r->pool, (apr_time_t)row->rec->last_ts),
               human_duration(r->pool, row->since));
    print_lease(r, row, timeout);
    ap_rprintf(r, "<td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>",
               html(r->pool, row->rec->host),
               id_or_dash(r->pool, row->rec->pid), id_or_dash(r->pool, row->rec->seq));
    print_factor(r, row);
    ap_rputs("</tr>\n", r);
}

/* The rows stay where beacon_view_gather put them (?json keeps that
 * order); the table sorts references to them. */
typedef struct {
    const beacon_shown_record *row;
} row_ref;

static int by_url(const void *a, const void *b)
{
    const row_ref *x = a, *y = b;

    return strcmp(x->row->rec->url, y->row->rec->url);
}

static void print_members(request_rec *r, const beacon_shown_receiver *sr)
{
    row_ref *sorted;
    unsigned i;

    ap_rputs("<div class=\"scroll\"><table class=\"members\"><thead><tr>"
             "<th>member</th><th>state</th><th>last announcement</th>"
             "<th>lease left</th><th>host</th><th>pid</th><th>seq</th>"
             "<th>lbfactor</th></tr>"
             "</thead><tbody>\n", r);
    sorted = apr_palloc(r->pool, sizeof(row_ref) * (sr->nrows + 1));
    for (i = 0; i < sr->nrows; i++) {
        sorted[i].row = &sr->rows[i];
    }
    qsort(sorted, sr->nrows, sizeof(row_ref), by_url);
    for (i = 0; i < sr->nrows; i++) {
        print_member(r, sorted[i].row, sr->v->conf->timeout.value);
    }
    if (sr->nrows == 0) {
        ap_rputs("<tr><td colspan=\"7\" class=\"mut\">no member has announced "
                 "itself yet</td></tr>\n", r);
    }
    ap_rputs("</tbody></table></div>\n", r);
}

/* One cell of a counter grid; warn: a non-zero count deserves a look. */
static void print_counter(request_rec *r, const char *name, apr_uint64_t n, int warn)
{
    ap_rprintf(r, "<div%s><b>%" APR_UINT64_T_FMT "</b>%s</div>",
               n == 0 ? " class=\"zero\"" : warn ? " class=\"warn\"" : "", n, name);
}

/* "add_failed" as people write it. */
static const char *spaced(apr_pool_t *p, const char *id)
{
    char *s = apr_pstrdup(p, id), *u;

    for (u = s; *u; u++) {
        if (*u == '_') {
            *u = ' ';
        }
    }
    return s;
}

static void print_counters(request_rec *r, const beacon_receiver_status *sh)
{
    unsigned i;

    ap_rputs("<h3>events</h3><div class=\"grid events\">", r);
    for (i = 0; i < BEACON_EV_COUNT; i++) {
        print_counter(r, spaced(r->pool, beacon_event_ids[i]), sh->events[i],
                      i == BEACON_EV_ADD_FAILED);
    }
    ap_rputs("</div>\n<h3>dropped</h3><div class=\"grid dropped\">", r);
    for (i = 1; i < BEACON_DROP_COUNT; i++) {
        print_counter(r, beacon_shm_drop_name(i), sh->dropped[i], 1);
    }
    ap_rputs("</div>\n", r);
}

/* How many members each state has, as the table shows them (beacon's
 * own counts lump leaving in with evicted and know nothing of httpd's). */
static void print_summary(request_rec *r, const beacon_shown_receiver *sr)
{
    const state_badge *all[MAX_BADGES + 5] = {&B_ACTIVE, &B_EVICTED, &B_LEAVING,
                                              &B_PENDING, &B_ADDING, &B_NOT_MANAGED};
    const state_badge *badges[MAX_BADGES];
    unsigned count[MAX_BADGES + 5] = {0};
    unsigned i, j, nall = 6;
    const char *sep = "";

    for (i = 0; i < MAX_BADGES - 1; i++) {
        all[nall++] = &httpd_badges[i].badge;
    }
    for (i = 0; i < sr->nrows; i++) {
        member_badges(&sr->rows[i], badges);
        for (j = 0; j < nall; j++) {
            count[j] += all[j] == badges[0];
        }
    }
    ap_rputs(" <span class=\"mut\">", r);
    for (j = 0; j < nall; j++) {
        if (count[j]) {
            ap_rprintf(r, "%s%u %s", sep, count[j], all[j]->label);
            sep = ", ";
        }
    }
    ap_rprintf(r, "%s</span>", sr->nrows ? "" : "no members");
}

static void print_receiver_html(request_rec *r, const beacon_shown_receiver *sr)
{
    ap_rprintf(r, "<section class=\"receiver\"><h2>Receiver %s",
               html(r->pool, sr->v->label));
    print_summary(r, sr);
    ap_rputs("</h2>\n", r);
    print_receiver_facts(r, sr);
    print_members(r, sr);
    print_counters(r, sr->v->shared);
    ap_rputs("</section>\n", r);
}

/* ------------------------------------------------------------------ */
/* A sender                                                            */

/* Each name a sender announces to, and each of its addresses. */
static void print_destinations_html(request_rec *r, const beacon_fanout_t *f)
{
    char text[BEACON_SOCKADDR_TEXT_MAX];
    unsigned i, j;

    ap_rputs("<div class=\"scroll\"><table class=\"destinations\"><thead><tr>"
             "<th>proxy</th><th>lookup</th><th>lookup failures</th>"
             "<th>address</th><th>sent</th><th>errors</th></tr></thead><tbody>\n", r);
    for (i = 0; i < f->nnames; i++) {
        const beacon_fanout_name_t *name = &f->names[i];
        unsigned rows = name->naddrs ? name->naddrs : 1;

        ap_rprintf(r, "<tr><td rowspan=\"%u\" class=\"u\">%s</td><td rowspan=\"%u\">"
                   "%s</td><td rowspan=\"%u\" class=\"n\">%u</td>", rows,
                   html(r->pool, name->spec), rows,
                   name->literal ? "none (an address)"
                                 : beacon_name_state_name(name->state),
                   rows, name->lookup_failures);
        if (name->naddrs == 0) {
            ap_rputs("<td class=\"mut\">none</td><td></td><td></td></tr>\n", r);
        }
        for (j = 0; j < name->naddrs; j++) {
            const beacon_fanout_addr_t *a = &name->addrs[j];

            ap_rprintf(r, "%s<td class=\"u\">%s%s</td><td class=\"n\">%u</td>"
                       "<td class=\"n\">%u</td></tr>\n", j ? "<tr>" : "",
                       beacon_sockaddr_text(&a->to, text, sizeof(text)),
                       a->duplicate ? " (sent for an earlier name)" : "",
                       a->sent, a->errors);
        }
    }
    ap_rputs("</tbody></table></div>\n", r);
}

static void print_sender_html(request_rec *r, const beacon_sender_view *v)
{
    ap_rprintf(r, "<section class=\"sender\"><h2>Sender <span class=\"mut\">"
               "announces every %s</span></h2>\n<dl class=\"kv\"><dt>targets</dt>"
               "<dd class=\"u\">%s</dd><dt>advertise</dt><dd class=\"u\">%s</dd>"
               "<dt>service</dt><dd>%s</dd></dl>\n<div class=\"grid\">",
               human_duration(r->pool, beacon_view_seconds(v->conf->interval.value)),
               html(r->pool, beacon_view_targets(r->pool, v->conf)),
               v->conf->advertise ? html(r->pool, v->conf->advertise)
                                  : "none (heartbeat only)",
               v->conf->service ? html(r->pool, v->conf->service) : "none");
    print_counter(r, "datagrams sent", v->shared->sent, 0);
    print_counter(r, "send errors", v->shared->errors, 1);
    ap_rputs("</div>\n", r);
    print_destinations_html(r, v->fanout);
    ap_rputs("</section>\n", r);
}

/* The contexts routed: context, then balancer, then the members that
 * claim it, each with its state. */
static void print_contexts_html(request_rec *r, const beacon_shown_receiver *shown,
                                int n)
{
    beacon_shown_context *contexts;
    int i, m, nctx = beacon_view_contexts(r, shown, n, &contexts);

    if (nctx == 0) {
        return;
    }
    ap_rputs("<section class=\"contexts\"><h2>Contexts</h2>\n"
             "<div class=\"scroll\"><table class=\"contexts\"><thead><tr>"
             "<th>context</th><th>balancer</th><th>members</th></tr>"
             "</thead><tbody>\n", r);
    for (i = 0; i < nctx; i++) {
        ap_rprintf(r, "<tr><td><code>%s</code></td><td>%s</td><td>",
                   html(r->pool, contexts[i].context),
                   html(r->pool, contexts[i].balancer));
        for (m = 0; m < contexts[i].nmembers; m++) {
            ap_rprintf(r, "%s<code>%s</code> %s", m ? "<br>" : "",
                       html(r->pool, contexts[i].members[m].url),
                       html(r->pool, contexts[i].members[m].state));
        }
        ap_rputs(contexts[i].nmembers ? "</td></tr>\n"
                                      : "<span class=\"mut\">none</span></td></tr>\n", r);
    }
    ap_rputs("</tbody></table></div></section>\n", r);
}

/* ------------------------------------------------------------------ */
/* Pages                                                               */

static int print_all(request_rec *r, const server_rec *only)
{
    beacon_shown_receiver *shown;
    beacon_sender_view *senders;
    int i, n = beacon_view_gather(r, only, 1, &shown);
    int nsenders = beacon_sender_views(r->pool, only, &senders);

    for (i = 0; i < n; i++) {
        print_receiver_html(r, &shown[i]);
    }
    print_contexts_html(r, shown, n);
    for (i = 0; i < nsenders; i++) {
        print_sender_html(r, &senders[i]);
    }
    return n + nsenders;
}

/* In mod_status's page: the style goes in the body (browsers apply it),
 * and touches nothing outside .bcn. */
void beacon_status_html_body(request_rec *r, const server_rec *only)
{
    ap_rprintf(r, "<style>%s</style>\n<div class=\"bcn\">\n", css);
    print_all(r, only);
    ap_rputs("</div>\n", r);
}

/*
 * ?refresh[=N] exactly as mod_status reads it: "refresh" anywhere in the
 * query, N after '=', anything below 1 or not a number gives 10, and no
 * upper bound. (strtol, not mod_status's atol: the same value, without
 * atol's undefined overflow.) 0: no refresh asked for.
 */
static long refresh_seconds(const request_rec *r)
{
    const char *loc = r->args ? ap_strstr_c(r->args, "refresh") : NULL;
    long t = 0;

    if (loc == NULL) {
        return 0;
    }
    if (loc[sizeof("refresh") - 1] == '=') {
        t = strtol(loc + sizeof("refresh"), NULL, 10);
    }
    return t < 1 ? 10 : t;
}

static void print_page_top(request_rec *r, long refresh)
{
    ap_rprintf(r, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, "
               "initial-scale=1\"><title>mod_proxy_beacon status</title>"
               "<link rel=\"icon\" href=\"data:,\"><style>body{margin:1em}%s"
               ".bcn .top a{margin-right:.8em}</style></head><body>\n"
               "<div class=\"bcn\">\n<h1>mod_proxy_beacon</h1>\n<p class=\"mut "
               "top\">%s &middot; ", css,
               html(r->pool, r->server->server_hostname ? r->server->server_hostname : ""));
    ap_rprintf(r, "as of %s", utc_text(r->pool, r->request_time));
    if (refresh > 0) {
        ap_rprintf(r, " &middot; <span class=\"refresh\">refreshes every %ld s"
                   "</span> <a href=\"?\">stop</a>", refresh);
    }
    else {
        ap_rputs(" &middot; <a href=\"?refresh=5\">refresh every 5 s</a>", r);
    }
    ap_rputs(" <a href=\"?json\">JSON</a></p>\n", r);
}

void beacon_status_html_page(request_rec *r, const server_rec *only)
{
    long refresh = refresh_seconds(r);

    /* The page's own promise, enforced: inline style only, no request
     * anywhere; a slip in escaping could then not load anything either. */
    apr_table_setn(r->headers_out, "Content-Security-Policy",
                   "default-src 'none'; style-src 'unsafe-inline'; "
                   "img-src data:; base-uri 'none'; form-action 'none'");
    if (refresh > 0) {
        /* as mod_status: the Refresh header, which browsers honour */
        apr_table_setn(r->headers_out, "Refresh", apr_ltoa(r->pool, refresh));
    }
    if (r->header_only) {
        return;
    }
    print_page_top(r, refresh);
    if (print_all(r, only) == 0) {
        ap_rputs("<p>No receiver or sender is configured here.</p>\n", r);
    }
    ap_rputs("</div>\n</body></html>\n", r);
}
