/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What beacon knows, for people and for scripts: a section in mod_status's
 * server-status (and machine-readable lines in ?auto), and a handler,
 * "SetHandler beacon-status", with the same data as HTML or, with ?json,
 * as JSON. Read-only: nothing here changes any state.
 *
 * The request is served by any child; the data comes from the shared
 * memory the watchdog owner publishes to, and the worker flags from the
 * balancer as this child sees it.
 */

#include "mod_proxy_beacon_status.h"
#include "mod_proxy_beacon_receiver.h"
#include "mod_proxy_beacon_sender.h"

#include <apr_optional_hooks.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include <mod_status.h>

#define HANDLER_NAME "beacon-status"

static const char *const event_ids[BEACON_EV_COUNT] = {
    [BEACON_EV_ACCEPTED] = "accepted",     [BEACON_EV_HEARTBEAT] = "heartbeats",
    [BEACON_EV_ADDED] = "added",           [BEACON_EV_READOPTED] = "readopted",
    [BEACON_EV_ADD_FAILED] = "add_failed", [BEACON_EV_EVICTED] = "evicted",
    [BEACON_EV_REENABLED] = "reenabled",   [BEACON_EV_LEAVING] = BEACON_STATE_LEAVING,
    [BEACON_EV_TAKEN_OVER] = "taken_over", [BEACON_EV_RECYCLED] = "recycled",
    [BEACON_EV_FORGOTTEN] = "forgotten",
};

/* Status-line names for ?auto, in the CamelCase mod_status uses. */
static const char *const event_keys[BEACON_EV_COUNT] = {
    [BEACON_EV_ACCEPTED] = "Accepted",    [BEACON_EV_HEARTBEAT] = "Heartbeats",
    [BEACON_EV_ADDED] = "Added",          [BEACON_EV_READOPTED] = "Readopted",
    [BEACON_EV_ADD_FAILED] = "AddFailed", [BEACON_EV_EVICTED] = "Evictions",
    [BEACON_EV_REENABLED] = "Reenabled",  [BEACON_EV_LEAVING] = "Leaving",
    [BEACON_EV_TAKEN_OVER] = "TakenOver", [BEACON_EV_RECYCLED] = "Recycled",
    [BEACON_EV_FORGOTTEN] = "Forgotten",
};

static const char *state_name(apr_int32_t state)
{
    return beacon_state_name((beacon_state_t)state);
}

/* One record as shown: the shared copy plus what this child derives. */
typedef struct {
    const beacon_status_record *rec;
    double since;         /* seconds since the last announcement */
    double lease_left;    /* < 0: no lease (timeout 0, or not active) */
    double retry_in;      /* < 0: no retry pending */
    const char *flags;    /* httpd's worker flags, NULL when no worker */
    int ours;             /* created by beacon: the "Bcn" mark */
} shown_record;

typedef struct {
    const beacon_receiver_view *v;
    shown_record *rows;
    unsigned nrows;
    unsigned active, evicted, pending, not_managed;
    int growth_used, growth_free; /* -1 in log-only mode */
    int growth_recyclable;        /* slots of long-gone members, now */
} shown_receiver;

static double seconds(apr_interval_time_t t)
{
    return (double)t / APR_USEC_PER_SEC;
}

/* with_flags: also httpd's flags of each member, which take the
 * balancer's lock and a walk of its members per record; ?auto shows none. */
static void derive(shown_receiver *out, const beacon_receiver_view *v,
                   int with_flags, apr_pool_t *p, apr_time_t now)
{
    beacon_status_record *copy = apr_palloc(p, sizeof(*copy) * BEACON_TABLE_CAPACITY);
    unsigned i;

    memset(out, 0, sizeof(*out));
    out->v = v;
    out->nrows = beacon_status_read(v->shared, copy);
    out->rows = apr_pcalloc(p, sizeof(*out->rows) * (out->nrows + 1));
    out->growth_used = out->growth_free = -1;
    if (v->target) {
        beacon_proxy_growth(v->target, &out->growth_used, &out->growth_free,
                            &out->growth_recyclable);
    }
    for (i = 0; i < out->nrows; i++) {
        shown_record *row = &out->rows[i];
        const beacon_status_record *rec = &copy[i];

        row->rec = rec;
        row->since = seconds(now - rec->last_seen);
        row->lease_left = -1;
        row->retry_in = -1;
        row->ours = rec->state == BEACON_REC_ACTIVE ||
                    rec->state == BEACON_REC_EVICTED;
        if (rec->state == BEACON_REC_ACTIVE && v->conf->timeout.value > 0) {
            row->lease_left = seconds(rec->last_seen + v->conf->timeout.value - now);
            if (row->lease_left < 0) {
                row->lease_left = 0;
            }
        }
        if (rec->state == BEACON_REC_PENDING && rec->retry_at > now) {
            row->retry_in = seconds(rec->retry_at - now);
        }
        if (v->target && with_flags) {
            row->flags = beacon_proxy_worker_flags(v->target, rec->url, p);
        }
        out->active += rec->state == BEACON_REC_ACTIVE;
        out->evicted += rec->state == BEACON_REC_EVICTED;
        out->pending += rec->state == BEACON_REC_PENDING;
        out->not_managed += rec->state == BEACON_REC_NOT_MANAGED;
    }
}

/* The receivers of server only (NULL: every server), as shown. */
static int gather(request_rec *r, const server_rec *only, int with_flags,
                  shown_receiver **shown)
{
    beacon_receiver_view *views;
    apr_time_t now = apr_time_now();
    int i, n = beacon_receiver_views(r->pool, only, &views);

    *shown = apr_pcalloc(r->pool, sizeof(**shown) * (n + 1));
    for (i = 0; i < n; i++) {
        derive(&(*shown)[i], &views[i], with_flags, r->pool, now);
    }
    return n;
}

/* httpd's flag text ends in a space ("Init Ok "). */
static const char *trimmed(apr_pool_t *p, const char *flags)
{
    apr_size_t n = strlen(flags);

    while (n > 0 && flags[n - 1] == ' ') {
        n--;
    }
    return apr_pstrmemdup(p, flags, n);
}

static const char *targets_text(apr_pool_t *p, const beacon_server_conf *conf)
{
    const char *text = "";
    int i;

    for (i = 0; i < conf->targets->nelts; i++) {
        text = apr_pstrcat(p, text, i ? " " : "",
                           APR_ARRAY_IDX(conf->targets, i, beacon_dest).spec,
                           NULL);
    }
    return text;
}

/* ------------------------------------------------------------------ */
/* ?auto: "Key: value" lines, as exporters scrape mod_status           */

/* A line per name and one per address: "Key: name fields". */
static void print_destinations_auto(request_rec *r, const beacon_fanout_t *f)
{
    char text[BEACON_SOCKADDR_TEXT_MAX];
    unsigned i, j;

    for (i = 0; i < f->nnames; i++) {
        const beacon_fanout_name_t *name = &f->names[i];

        ap_rprintf(r, "BeaconSendTarget: %s state=%s addresses=%u "
                   "lookup_failures=%u\n", name->spec,
                   beacon_name_state_name(name->state), name->naddrs,
                   name->lookup_failures);
        for (j = 0; j < name->naddrs; j++) {
            const beacon_fanout_addr_t *a = &name->addrs[j];

            ap_rprintf(r, "BeaconSendAddress: %s %s sent=%u errors=%u%s\n",
                       name->spec,
                       beacon_sockaddr_text(&a->to, text, sizeof(text)),
                       a->sent, a->errors, a->duplicate ? " duplicate" : "");
        }
    }
}

static void print_auto(request_rec *r)
{
    apr_uint64_t dropped[BEACON_DROP_COUNT] = {0}, events[BEACON_EV_COUNT] = {0};
    apr_uint64_t sent = 0, errors = 0;
    unsigned records = 0, active = 0, evicted = 0, pending = 0, not_managed = 0;
    int growth_used = 0, growth_free = 0, growth_recyclable = 0;
    shown_receiver *shown;
    beacon_sender_view *senders;
    int i, j, n = gather(r, NULL, 0, &shown);
    int nsenders = beacon_sender_views(r->pool, NULL, &senders);

    for (i = 0; i < n; i++) {
        records += shown[i].nrows;
        active += shown[i].active;
        evicted += shown[i].evicted;
        pending += shown[i].pending;
        not_managed += shown[i].not_managed;
        if (shown[i].growth_used >= 0) {
            growth_used += shown[i].growth_used;
            growth_free += shown[i].growth_free;
            growth_recyclable += shown[i].growth_recyclable;
        }
        for (j = 0; j < BEACON_DROP_COUNT; j++) {
            dropped[j] += shown[i].v->shared->dropped[j];
        }
        for (j = 0; j < BEACON_EV_COUNT; j++) {
            events[j] += shown[i].v->shared->events[j];
        }
    }
    if (n == 0 && nsenders == 0) {
        return;
    }
    for (i = 0; i < nsenders; i++) {
        sent += senders[i].shared->sent;
        errors += senders[i].shared->errors;
    }
    ap_rprintf(r, "BeaconReceivers: %d\nBeaconRecords: %u\nBeaconMembers: %u\n"
               "BeaconEvicted: %u\nBeaconPending: %u\nBeaconNotManaged: %u\n",
               n, records, active, evicted, pending, not_managed);
    ap_rprintf(r, "BeaconGrowthUsed: %d\nBeaconGrowthFree: %d\n"
               "BeaconGrowthRecyclable: %d\n", growth_used, growth_free,
               growth_recyclable);
    for (j = 0; j < BEACON_EV_COUNT; j++) {
        ap_rprintf(r, "Beacon%s: %" APR_UINT64_T_FMT "\n", event_keys[j], events[j]);
    }
    for (j = 1; j < BEACON_DROP_COUNT; j++) {
        ap_rprintf(r, "BeaconDropped_%s: %" APR_UINT64_T_FMT "\n",
                   beacon_drop_id(j), dropped[j]);
    }
    ap_rprintf(r, "BeaconSenders: %d\nBeaconSent: %" APR_UINT64_T_FMT "\n"
               "BeaconSendErrors: %" APR_UINT64_T_FMT "\n", nsenders, sent, errors);
    for (i = 0; i < nsenders; i++) {
        print_destinations_auto(r, senders[i].fanout);
    }
}

/* ------------------------------------------------------------------ */
/* HTML                                                                */

static const char *html(apr_pool_t *p, const char *s)
{
    return ap_escape_html(p, ap_escape_logitem(p, s));
}

static const char *maybe_seconds(apr_pool_t *p, double v)
{
    return v < 0 ? "-" : apr_psprintf(p, "%.1f", v);
}

static void print_receiver_html(request_rec *r, const shown_receiver *sr)
{
    const beacon_receiver_view *v = sr->v;
    unsigned i;

    ap_rprintf(r, "<h3>Receiver %s</h3>\n<table>\n", html(r->pool, v->label));
    ap_rprintf(r, "<tr><th>balancer</th><td>%s</td></tr>\n",
               v->conf->balancer_name
                   ? html(r->pool, apr_pstrcat(r->pool, "balancer://",
                                               v->conf->balancer_name, NULL))
                   : "none (log-only)");
    ap_rprintf(r, "<tr><th>service</th><td>%s</td></tr>\n",
               v->conf->service ? html(r->pool, v->conf->service) : "any");
    ap_rprintf(r, "<tr><th>timeout</th><td>%s</td></tr>\n",
               v->conf->timeout.value ? apr_psprintf(r->pool, "%.3f s",
                                               seconds(v->conf->timeout.value))
                                : "0 (add-only)");
    ap_rprintf(r, "<tr><th>max skew</th><td>%.3f s</td></tr>\n",
               seconds(v->conf->max_skew.value));
    ap_rprintf(r, "<tr><th>records</th><td>%u of %d</td></tr>\n", sr->nrows,
               BEACON_TABLE_CAPACITY);
    if (sr->growth_used >= 0) {
        ap_rprintf(r, "<tr><th>growth slots</th><td>%d used, %d free, %d "
                   "recyclable now</td></tr>\n", sr->growth_used,
                   sr->growth_free, sr->growth_recyclable);
    }
    ap_rprintf(r, "<tr><th>receiving child</th><td>%s</td></tr>\n</table>\n",
               v->shared->owner_pid
                   ? apr_psprintf(r->pool, "pid %" APR_INT64_T_FMT "%s",
                                  v->shared->owner_pid,
                                  v->shared->listening ? "" : " (not listening)")
                   : "none yet");
    ap_rputs("<table>\n<tr><th>url</th><th>state</th><th>httpd flags</th>"
             "<th>since last (s)</th><th>lease left (s)</th><th>retry in (s)</th>"
             "<th>last ts</th><th>host</th><th>pid</th><th>seq</th></tr>\n", r);
    for (i = 0; i < sr->nrows; i++) {
        const shown_record *row = &sr->rows[i];

        ap_rprintf(r, "<tr><td>%s</td><td>%s</td><td>%s%s</td><td>%.1f</td>"
                   "<td>%s</td><td>%s</td><td>%" APR_INT64_T_FMT "</td>"
                   "<td>%s</td><td>%s</td><td>%s</td></tr>\n",
                   html(r->pool, row->rec->url), state_name(row->rec->state),
                   row->flags ? html(r->pool, trimmed(r->pool, row->flags)) : "-",
                   row->ours ? " Bcn" : "", row->since,
                   maybe_seconds(r->pool, row->lease_left),
                   maybe_seconds(r->pool, row->retry_in), row->rec->last_ts,
                   html(r->pool, row->rec->host),
                   row->rec->pid < 0 ? "-"
                       : apr_psprintf(r->pool, "%" APR_INT64_T_FMT, row->rec->pid),
                   row->rec->seq < 0 ? "-"
                       : apr_psprintf(r->pool, "%" APR_INT64_T_FMT, row->rec->seq));
    }
    ap_rputs("</table>\n<table>\n<tr><th>event</th><th>count</th></tr>\n", r);
    for (i = 0; i < BEACON_EV_COUNT; i++) {
        ap_rprintf(r, "<tr><td>%s</td><td>%" APR_UINT64_T_FMT "</td></tr>\n",
                   event_ids[i], v->shared->events[i]);
    }
    for (i = 1; i < BEACON_DROP_COUNT; i++) {
        ap_rprintf(r, "<tr><td>dropped: %s</td><td>%" APR_UINT64_T_FMT "</td></tr>\n",
                   beacon_drop_name(i), v->shared->dropped[i]);
    }
    ap_rputs("</table>\n", r);
}

/* Each name a sender announces to, and each of its addresses. */
static void print_destinations_html(request_rec *r, const beacon_fanout_t *f)
{
    char text[BEACON_SOCKADDR_TEXT_MAX];
    unsigned i, j;

    ap_rputs("<table>\n<tr><th>proxy</th><th>lookup</th><th>lookup "
             "failures</th><th>address</th><th>sent</th><th>errors</th></tr>"
             "\n", r);
    for (i = 0; i < f->nnames; i++) {
        const beacon_fanout_name_t *name = &f->names[i];
        unsigned rows = name->naddrs ? name->naddrs : 1;

        ap_rprintf(r, "<tr><td rowspan=\"%u\">%s</td><td rowspan=\"%u\">%s"
                   "</td><td rowspan=\"%u\">%u</td>", rows,
                   html(r->pool, name->spec), rows,
                   name->literal ? "none (an address)"
                                 : beacon_name_state_name(name->state),
                   rows, name->lookup_failures);
        if (name->naddrs == 0) {
            ap_rputs("<td>none</td><td></td><td></td></tr>\n", r);
        }
        for (j = 0; j < name->naddrs; j++) {
            const beacon_fanout_addr_t *a = &name->addrs[j];

            ap_rprintf(r, "%s<td>%s%s</td><td>%u</td><td>%u</td></tr>\n",
                       j ? "<tr>" : "",
                       beacon_sockaddr_text(&a->to, text, sizeof(text)),
                       a->duplicate ? " (sent for an earlier name)" : "",
                       a->sent, a->errors);
        }
    }
    ap_rputs("</table>\n", r);
}

static void print_senders_html(request_rec *r, const server_rec *only)
{
    beacon_sender_view *senders;
    int i, n = beacon_sender_views(r->pool, only, &senders);

    for (i = 0; i < n; i++) {
        const beacon_sender_view *v = &senders[i];

        ap_rprintf(r, "<h3>Sender</h3>\n<table>\n"
                   "<tr><th>targets</th><td>%s</td></tr>\n"
                   "<tr><th>advertise</th><td>%s</td></tr>\n"
                   "<tr><th>interval</th><td>%.3f s</td></tr>\n"
                   "<tr><th>datagrams sent</th><td>%u</td></tr>\n"
                   "<tr><th>send errors</th><td>%u</td></tr>\n"
                   "</table>\n",
                   html(r->pool, targets_text(r->pool, v->conf)),
                   v->conf->advertise ? html(r->pool, v->conf->advertise)
                                      : "none (heartbeat only)",
                   seconds(v->conf->interval.value), v->shared->sent,
                   v->shared->errors);
        print_destinations_html(r, v->fanout);
    }
}

static void print_html_body(request_rec *r, const server_rec *only)
{
    shown_receiver *shown;
    int i, n = gather(r, only, 1, &shown);

    for (i = 0; i < n; i++) {
        print_receiver_html(r, &shown[i]);
    }
    print_senders_html(r, only);
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */

/* A JSON string; peer bytes that are not printable ASCII become \u00XX. */
static void json_str(request_rec *r, const char *s)
{
    ap_rputc('"', r);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            ap_rprintf(r, "\\%c", c);
        }
        else if (c < 0x20 || c > 0x7e) {
            ap_rprintf(r, "\\u%04x", c);
        }
        else {
            ap_rputc(c, r);
        }
    }
    ap_rputc('"', r);
}

static void json_str_or_null(request_rec *r, const char *s)
{
    if (s) {
        json_str(r, s);
    }
    else {
        ap_rputs("null", r);
    }
}

static void json_seconds_or_null(request_rec *r, double v)
{
    if (v < 0) {
        ap_rputs("null", r);
    }
    else {
        ap_rprintf(r, "%.3f", v);
    }
}

static void print_record_json(request_rec *r, const shown_record *row)
{
    ap_rputs("{\"url\": ", r);
    json_str(r, row->rec->url);
    ap_rprintf(r, ", \"state\": \"%s\", \"mark\": %s, \"flags\": ",
               state_name(row->rec->state), row->ours ? "\"Bcn\"" : "null");
    json_str_or_null(r, row->flags ? trimmed(r->pool, row->flags) : NULL);
    ap_rprintf(r, ", \"seconds_since_announcement\": %.3f, \"lease_left\": ",
               row->since);
    json_seconds_or_null(r, row->lease_left);
    ap_rputs(", \"retry_in\": ", r);
    json_seconds_or_null(r, row->retry_in);
    ap_rprintf(r, ", \"last_ts\": %" APR_INT64_T_FMT ", \"host\": ", row->rec->last_ts);
    json_str(r, row->rec->host);
    ap_rprintf(r, ", \"pid\": %s, \"seq\": %s}",
               row->rec->pid < 0 ? "null"
                   : apr_psprintf(r->pool, "%" APR_INT64_T_FMT, row->rec->pid),
               row->rec->seq < 0 ? "null"
                   : apr_psprintf(r->pool, "%" APR_INT64_T_FMT, row->rec->seq));
}

static void print_receiver_json(request_rec *r, const shown_receiver *sr)
{
    const beacon_receiver_view *v = sr->v;
    unsigned i;

    ap_rputs("{\"listen\": ", r);
    json_str(r, v->label);
    ap_rputs(", \"balancer\": ", r);
    json_str_or_null(r, v->conf->balancer_name
                            ? apr_pstrcat(r->pool, "balancer://",
                                          v->conf->balancer_name, NULL)
                            : NULL);
    ap_rputs(", \"service\": ", r);
    json_str_or_null(r, v->conf->service);
    ap_rprintf(r, ", \"timeout\": %.3f, \"max_skew\": %.3f, \"records\": %u, "
               "\"capacity\": %d, \"owner_pid\": %" APR_INT64_T_FMT
               ", \"listening\": %s", seconds(v->conf->timeout.value),
               seconds(v->conf->max_skew.value), sr->nrows, BEACON_TABLE_CAPACITY,
               v->shared->owner_pid, v->shared->listening ? "true" : "false");
    if (sr->growth_used >= 0) {
        ap_rprintf(r, ", \"growth\": {\"used\": %d, \"free\": %d, "
                   "\"recyclable\": %d}", sr->growth_used, sr->growth_free,
                   sr->growth_recyclable);
    }
    else {
        ap_rputs(", \"growth\": null", r);
    }
    ap_rputs(", \"events\": {", r);
    for (i = 0; i < BEACON_EV_COUNT; i++) {
        ap_rprintf(r, "%s\"%s\": %" APR_UINT64_T_FMT, i ? ", " : "", event_ids[i],
                   v->shared->events[i]);
    }
    ap_rputs("}, \"dropped\": {", r);
    for (i = 1; i < BEACON_DROP_COUNT; i++) {
        ap_rprintf(r, "%s\"%s\": %" APR_UINT64_T_FMT, i > 1 ? ", " : "",
                   beacon_drop_id(i), v->shared->dropped[i]);
    }
    ap_rputs("}, \"members\": [", r);
    for (i = 0; i < sr->nrows; i++) {
        ap_rputs(i ? ", " : "", r);
        print_record_json(r, &sr->rows[i]);
    }
    ap_rputs("]}", r);
}

static void print_destinations_json(request_rec *r, const beacon_fanout_t *f)
{
    char text[BEACON_SOCKADDR_TEXT_MAX];
    unsigned i, j;

    for (i = 0; i < f->nnames; i++) {
        const beacon_fanout_name_t *name = &f->names[i];

        ap_rputs(i ? ", {\"name\": " : "[{\"name\": ", r);
        json_str(r, name->spec);
        ap_rprintf(r, ", \"state\": \"%s\", \"literal\": %s, "
                   "\"lookup_failures\": %u, \"cut\": %u, \"addresses\": [",
                   beacon_name_state_name(name->state),
                   name->literal ? "true" : "false", name->lookup_failures,
                   name->cut);
        for (j = 0; j < name->naddrs; j++) {
            const beacon_fanout_addr_t *a = &name->addrs[j];

            ap_rprintf(r, "%s{\"address\": \"%s\", \"sent\": %u, "
                       "\"errors\": %u, \"duplicate\": %s}", j ? ", " : "",
                       beacon_sockaddr_text(&a->to, text, sizeof(text)),
                       a->sent, a->errors, a->duplicate ? "true" : "false");
        }
        ap_rputs("]}", r);
    }
    ap_rputs(f->nnames ? "]" : "[]", r);
}

static void print_json(request_rec *r, const server_rec *only)
{
    shown_receiver *shown;
    beacon_sender_view *senders;
    int i, n = gather(r, only, 1, &shown);
    int nsenders = beacon_sender_views(r->pool, only, &senders);

    ap_rputs("{\"receivers\": [", r);
    for (i = 0; i < n; i++) {
        ap_rputs(i ? ", " : "", r);
        print_receiver_json(r, &shown[i]);
    }
    ap_rputs("], \"senders\": [", r);
    for (i = 0; i < nsenders; i++) {
        const beacon_sender_view *v = &senders[i];
        int t;

        ap_rputs(i ? ", {\"targets\": [" : "{\"targets\": [", r);
        for (t = 0; t < v->conf->targets->nelts; t++) {
            ap_rputs(t ? ", " : "", r);
            json_str(r, APR_ARRAY_IDX(v->conf->targets, t, beacon_dest).spec);
        }
        ap_rputs("], \"destinations\": ", r);
        print_destinations_json(r, v->fanout);
        ap_rputs(", \"advertise\": ", r);
        json_str_or_null(r, v->conf->advertise);
        ap_rputs(", \"service\": ", r);
        json_str_or_null(r, v->conf->service);
        ap_rprintf(r, ", \"interval\": %.3f, \"sent\": %u"
                   ", \"send_errors\": %u, \"owner_pid\": %"
                   APR_INT64_T_FMT "}", seconds(v->conf->interval.value), v->shared->sent,
                   v->shared->errors, v->shared->owner_pid);
    }
    ap_rputs("]}\n", r);
}

/* ------------------------------------------------------------------ */
/* Hooks                                                               */

static int beacon_status_handler(request_rec *r)
{
    const server_rec *only;

    if (strcmp(r->handler, HANDLER_NAME) != 0) {
        return DECLINED;
    }
    only = beacon_status_shows_all(r) ? NULL : r->server;
    r->allowed = AP_METHOD_BIT << M_GET;
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (r->args && strcmp(r->args, "json") == 0) {
        ap_set_content_type(r, "application/json");
        if (!r->header_only) {
            print_json(r, only);
        }
        return OK;
    }
    ap_set_content_type(r, "text/html; charset=utf-8");
    if (!r->header_only) {
        ap_rputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<title>mod_proxy_beacon status</title></head><body>\n"
                 "<h1>mod_proxy_beacon</h1>\n", r);
        print_html_body(r, only);
        ap_rputs("<p><a href=\"?json\">as JSON</a></p>\n</body></html>\n", r);
    }
    return OK;
}

static int beacon_status_section(request_rec *r, int flags)
{
    beacon_receiver_view *receivers;
    beacon_sender_view *senders;

    if (flags & AP_STATUS_SHORT) {
        print_auto(r);
    }
    else if (beacon_receiver_views(r->pool, NULL, &receivers) ||
             beacon_sender_views(r->pool, NULL, &senders)) {
        /* server-status shows the whole server, as mod_status does */
        ap_rputs("<hr />\n<h2>mod_proxy_beacon</h2>\n", r);
        print_html_body(r, NULL);
    }
    return OK;
}

void beacon_status_register_hooks(void)
{
    ap_hook_handler(beacon_status_handler, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, beacon_status_section, NULL, NULL,
                      APR_HOOK_MIDDLE);
}
