/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* The status pages as HTML; see mod_proxy_beacon_status_html.h. */

#include "mod_proxy_beacon_status_html.h"
#include "mod_proxy_beacon_view.h"

#include <apr_strings.h>
#include <httpd.h>

static const char *html(apr_pool_t *p, const char *s)
{
    return ap_escape_html(p, ap_escape_logitem(p, s));
}

static const char *maybe_seconds(apr_pool_t *p, double v)
{
    return v < 0 ? "-" : apr_psprintf(p, "%.1f", v);
}

static void print_receiver_html(request_rec *r, const beacon_shown_receiver *sr)
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
                                               beacon_seconds(v->conf->timeout.value))
                                : "0 (add-only)");
    ap_rprintf(r, "<tr><th>max skew</th><td>%.3f s</td></tr>\n",
               beacon_seconds(v->conf->max_skew.value));
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
        const beacon_shown_record *row = &sr->rows[i];

        ap_rprintf(r, "<tr><td>%s</td><td>%s</td><td>%s%s</td><td>%.1f</td>"
                   "<td>%s</td><td>%s</td><td>%" APR_INT64_T_FMT "</td>"
                   "<td>%s</td><td>%s</td><td>%s</td></tr>\n",
                   html(r->pool, row->rec->url), beacon_view_state_name(row->rec->state),
                   row->flags ? html(r->pool, beacon_view_trimmed(r->pool, row->flags)) : "-",
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
                   beacon_event_ids[i], v->shared->events[i]);
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
                   html(r->pool, beacon_view_targets(r->pool, v->conf)),
                   v->conf->advertise ? html(r->pool, v->conf->advertise)
                                      : "none (heartbeat only)",
                   beacon_seconds(v->conf->interval.value), v->shared->sent,
                   v->shared->errors);
        print_destinations_html(r, v->fanout);
    }
}

void beacon_status_html_body(request_rec *r, const server_rec *only)
{
    beacon_shown_receiver *shown;
    int i, n = beacon_view_gather(r, only, 1, &shown);

    for (i = 0; i < n; i++) {
        print_receiver_html(r, &shown[i]);
    }
    print_senders_html(r, only);
}
