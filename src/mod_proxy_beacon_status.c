/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What beacon knows, for people and for scripts: a section in mod_status's
 * server-status (and machine-readable lines in ?auto), and a handler,
 * "SetHandler beacon-status", with the same data as HTML or, with ?json,
 * as JSON, or, with ?metrics, for Prometheus to scrape. Read-only: nothing
 * here changes any state.
 * What is shown comes from mod_proxy_beacon_view.c; the HTML from
 * mod_proxy_beacon_status_html.c, the metrics from
 * mod_proxy_beacon_metrics.c.
 */

#include "mod_proxy_beacon_status.h"
#include "mod_proxy_beacon_metrics.h"
#include "mod_proxy_beacon_status_html.h"
#include "mod_proxy_beacon_view.h"

#include <apr_optional_hooks.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include <mod_status.h>

#define HANDLER_NAME "beacon-status"

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


/* One line per balancer a receiver feeds: its service, what it holds, and
 * how many of its members are in a slow start. */
static void print_balancer_auto(request_rec *r, const beacon_shown_receiver *sr)
{
    const char *balancer = beacon_view_balancer(r->pool, sr->v);
    apr_uint64_t dropped = 0;
    unsigned ramping = 0, i;
    int j;

    if (balancer == NULL) {
        return;
    }
    for (j = 1; j < BEACON_DROP_COUNT; j++) {
        dropped += sr->v->shared->dropped[j];
    }
    for (i = 0; i < sr->nrows; i++) {
        ramping += sr->rows[i].slow_start > 0;
    }
    ap_rprintf(r, "BeaconBalancer: %s service=%s members=%u records=%u "
               "dropped=%" APR_UINT64_T_FMT " slow_start=%u\n", balancer,
               sr->v->service ? sr->v->service : "-", sr->active, sr->nrows,
               dropped, ramping);
}

/* The contexts routed, and how many of them have no member in rotation
 * (they answer 503). */
static void print_contexts_auto(request_rec *r, const beacon_shown_receiver *shown,
                                int n)
{
    beacon_shown_context *contexts;
    int i, m, down = 0, nctx = beacon_view_contexts(r, shown, n, &contexts);

    for (i = 0; i < nctx; i++) {
        int up = 0;

        for (m = 0; m < contexts[i].nmembers; m++) {
            up += strcmp(contexts[i].members[m].state, "active") == 0;
        }
        down += up == 0;
    }
    ap_rprintf(r, "BeaconContexts: %d\nBeaconContextsDown: %d\n", nctx, down);
}

static void print_auto(request_rec *r)
{
    apr_uint64_t dropped[BEACON_DROP_COUNT] = {0}, events[BEACON_EV_COUNT] = {0};
    apr_uint64_t sent = 0, errors = 0;
    unsigned records = 0, active = 0, evicted = 0, pending = 0, not_managed = 0;
    int growth_used = 0, growth_free = 0, growth_recyclable = 0;
    int reserved = 0, reserved_free = 0;
    beacon_shown_receiver *shown;
    beacon_sender_view *senders;
    /* with httpd's view of each member: the slow starts */
    int i, j, n = beacon_view_gather(r, NULL, 1, &shown);
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
            reserved += shown[i].reserved;
            reserved_free += shown[i].reserved_free;
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
    ap_rprintf(r, "BeaconSlotsReserved: %d\nBeaconSlotsFree: %d\n", reserved,
               reserved_free);
    for (j = 0; j < BEACON_EV_COUNT; j++) {
        ap_rprintf(r, "Beacon%s: %" APR_UINT64_T_FMT "\n", beacon_event_keys[j], events[j]);
    }
    for (j = 1; j < BEACON_DROP_COUNT; j++) {
        ap_rprintf(r, "BeaconDropped_%s: %" APR_UINT64_T_FMT "\n",
                   beacon_shm_drop_id(j), dropped[j]);
    }
    for (i = 0; i < n; i++) {
        print_balancer_auto(r, &shown[i]);
    }
    print_contexts_auto(r, shown, n);
    ap_rprintf(r, "BeaconSenders: %d\nBeaconSent: %" APR_UINT64_T_FMT "\n"
               "BeaconSendErrors: %" APR_UINT64_T_FMT "\n", nsenders, sent, errors);
    for (i = 0; i < nsenders; i++) {
        print_destinations_auto(r, senders[i].fanout);
    }
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

static void print_record_json(request_rec *r, const beacon_shown_record *row)
{
    ap_rputs("{\"url\": ", r);
    json_str(r, row->rec->url);
    ap_rprintf(r, ", \"state\": \"%s\", \"mark\": %s, \"flags\": ",
               beacon_view_state_name(row->rec->state), row->ours ? "\"Bcn\"" : "null");
    json_str_or_null(r, row->flags ? beacon_view_trimmed(r->pool, row->flags) : NULL);
    ap_rprintf(r, ", \"seconds_since_announcement\": %.3f, \"lease_left\": ",
               row->since);
    json_seconds_or_null(r, row->lease_left);
    ap_rputs(", \"retry_in\": ", r);
    json_seconds_or_null(r, row->retry_in);
    ap_rprintf(r, ", \"last_ts\": %" APR_INT64_T_FMT ", \"host\": ", row->rec->last_ts);
    json_str(r, row->rec->host);
    ap_rprintf(r, ", \"pid\": %s, \"seq\": %s, \"said_leaving\": %s",
               row->rec->pid < 0 ? "null"
                   : apr_psprintf(r->pool, "%" APR_INT64_T_FMT, row->rec->pid),
               row->rec->seq < 0 ? "null"
                   : apr_psprintf(r->pool, "%" APR_INT64_T_FMT, row->rec->seq),
               row->rec->leaving ? "true" : "false");
    ap_rprintf(r, ", \"lbfactor\": %s, \"lbfactor_announced\": %s, "
               "\"slow_start\": %s}",
               row->lbfactor ? beacon_view_factor(r->pool, row->lbfactor) : "null",
               row->rec->lbfactor ? beacon_view_factor(r->pool, row->rec->lbfactor)
                                  : "null",
               row->slow_start ? apr_itoa(r->pool, row->slow_start) : "null");
}

static void print_receiver_json(request_rec *r, const beacon_shown_receiver *sr)
{
    const beacon_receiver_view *v = sr->v;
    unsigned i;

    ap_rputs("{\"listen\": ", r);
    json_str(r, v->label);
    ap_rputs(", \"balancer\": ", r);
    json_str_or_null(r, beacon_view_balancer(r->pool, v));
    ap_rputs(", \"service\": ", r);
    json_str_or_null(r, v->service);
    ap_rputs(", \"allow\": {\"receiver\": ", r);
    json_str_or_null(r, beacon_view_allow(r->pool, v->conf->allow));
    ap_rputs(", \"balancer\": ", r);
    json_str_or_null(r, beacon_view_allow(r->pool, v->allow));
    ap_rprintf(r, "}, \"timeout\": %.3f, \"max_skew\": %.3f, \"records\": %u, "
               "\"capacity\": %d, \"owner_pid\": %" APR_INT64_T_FMT
               ", \"listening\": %s",
               beacon_view_seconds(v->conf->timeout.value),
               beacon_view_seconds(v->conf->max_skew.value), sr->nrows,
               v->shared->capacity,
               v->shared->owner_pid, v->shared->listening ? "true" : "false");
    if (sr->growth_used >= 0) {
        ap_rprintf(r, ", \"growth\": {\"used\": %d, \"free\": %d, "
                   "\"recyclable\": %d}, \"slots\": {\"reserved\": %d, "
                   "\"free\": %d}", sr->growth_used, sr->growth_free,
                   sr->growth_recyclable, sr->reserved, sr->reserved_free);
    }
    else {
        ap_rputs(", \"growth\": null, \"slots\": null", r);
    }
    ap_rputs(", \"events\": {", r);
    for (i = 0; i < BEACON_EV_COUNT; i++) {
        ap_rprintf(r, "%s\"%s\": %" APR_UINT64_T_FMT, i ? ", " : "", beacon_event_ids[i],
                   v->shared->events[i]);
    }
    ap_rputs("}, \"dropped\": {", r);
    for (i = 1; i < BEACON_DROP_COUNT; i++) {
        ap_rprintf(r, "%s\"%s\": %" APR_UINT64_T_FMT, i > 1 ? ", " : "",
                   beacon_shm_drop_id(i), v->shared->dropped[i]);
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

/* context, then balancer, then the members that claim it */
static void print_contexts_json(request_rec *r, const beacon_shown_receiver *shown,
                                int n)
{
    beacon_shown_context *contexts;
    int i, m, nctx = beacon_view_contexts(r, shown, n, &contexts);

    ap_rputs("[", r);
    for (i = 0; i < nctx; i++) {
        ap_rputs(i ? ", {\"context\": " : "{\"context\": ", r);
        json_str(r, contexts[i].context);
        ap_rputs(", \"balancer\": ", r);
        json_str(r, contexts[i].balancer);
        ap_rputs(", \"members\": [", r);
        for (m = 0; m < contexts[i].nmembers; m++) {
            ap_rputs(m ? ", {\"url\": " : "{\"url\": ", r);
            json_str(r, contexts[i].members[m].url);
            ap_rputs(", \"state\": ", r);
            json_str(r, contexts[i].members[m].state);
            ap_rputs("}", r);
        }
        ap_rputs("]}", r);
    }
    ap_rputs("]", r);
}

static void print_json(request_rec *r, const server_rec *only)
{
    beacon_shown_receiver *shown;
    beacon_sender_view *senders;
    int i, n = beacon_view_gather(r, only, 1, &shown);
    int nsenders = beacon_sender_views(r->pool, only, &senders);

    ap_rputs("{\"receivers\": [", r);
    for (i = 0; i < n; i++) {
        ap_rputs(i ? ", " : "", r);
        print_receiver_json(r, &shown[i]);
    }
    ap_rputs("], \"contexts\": ", r);
    print_contexts_json(r, shown, n);
    ap_rputs(", \"senders\": [", r);
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
        ap_rputs(", \"lbfactor\": ", r);
        ap_rputs(v->shared->lbfactor ? beacon_view_factor(r->pool, v->shared->lbfactor)
                 : "null", r);
        ap_rprintf(r, ", \"interval\": %.3f, \"sent\": %u"
                   ", \"send_errors\": %u, \"owner_pid\": %"
                   APR_INT64_T_FMT "}",
                   beacon_view_seconds(v->conf->interval.value), v->shared->sent,
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
    only = beacon_config_status_shows_all(r) ? NULL : r->server;
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
    /* "metrics=" is how Prometheus's scrape params write it */
    if (r->args && (strcmp(r->args, "metrics") == 0 ||
                    strcmp(r->args, "metrics=") == 0)) {
        ap_set_content_type(r, BEACON_METRICS_CONTENT_TYPE);
        if (!r->header_only) {
            beacon_metrics_print(r, only);
        }
        return OK;
    }
    ap_set_content_type(r, "text/html; charset=utf-8");
    beacon_status_html_page(r, only);
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
        beacon_status_html_body(r, NULL);
    }
    return OK;
}

void beacon_status_register_hooks(void)
{
    ap_hook_handler(beacon_status_handler, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, beacon_status_section, NULL, NULL,
                      APR_HOOK_MIDDLE);
}
