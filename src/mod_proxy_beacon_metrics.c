/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * ?metrics: Prometheus's text exposition format 0.0.4. Every family has
 * its HELP and TYPE and then all its samples, whichever receiver or
 * sender they belong to (the format wants a family in one piece), so
 * each family walks the receivers or senders again. Counters end in
 * _total and times are in seconds, as `promtool check metrics` wants.
 * Label values hold peer bytes (a member's announced host), so every one
 * is escaped. docs/monitoring.md says what each family means.
 */

#include "mod_proxy_beacon_metrics.h"
#include "mod_proxy_beacon_view.h"

#include <apr_strings.h>
#include <http_protocol.h>

/* What one scrape shows, gathered once. */
typedef struct {
    request_rec *r;
    beacon_shown_receiver *rx;
    const char **rx_labels;   /* listen="...",balancer="..." per receiver */
    int nrx;
    beacon_sender_view *tx;
    int ntx;
} scrape;

/* ------------------------------------------------------------------ */
/* The format                                                          */

/*
 * A label value as the format escapes it: backslash, double quote and
 * newline. Other bytes outside printable ASCII become the text \xNN: the
 * format wants UTF-8, and a peer's host may hold any byte but space and
 * NUL.
 */
static const char *escaped(apr_pool_t *p, const char *s)
{
    char *out = apr_palloc(p, strlen(s) * 5 + 1), *o = out;

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '\\' || c == '"') {
            *o++ = '\\';
            *o++ = (char)c;
        }
        else if (c == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        }
        else if (c < 0x20 || c > 0x7e) {
            o += apr_snprintf(o, 6, "\\\\x%02x", c);
        }
        else {
            *o++ = (char)c;
        }
    }
    *o = '\0';
    return out;
}

/* name="value", the value escaped; NULL is the empty value (no label). */
static const char *label(apr_pool_t *p, const char *name, const char *value)
{
    return apr_pstrcat(p, name, "=\"", escaped(p, value ? value : ""), "\"",
                       NULL);
}

static void family(request_rec *r, const char *name, const char *type,
                   const char *help)
{
    ap_rprintf(r, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(request_rec *r, const char *name, const char *labels,
                   const char *value)
{
    ap_rprintf(r, "%s{%s} %s\n", name, labels, value);
}

static const char *seconds(apr_pool_t *p, double v)
{
    return apr_psprintf(p, "%.3f", v);
}

static const char *count(apr_pool_t *p, apr_uint64_t v)
{
    return apr_psprintf(p, "%" APR_UINT64_T_FMT, v);
}

/* ------------------------------------------------------------------ */
/* Receivers                                                           */

/* The labels every series of a receiver has: where it listens (the
 * "listen" of ?json) and its balancer, "" in log-only mode. */
static const char *receiver_labels(apr_pool_t *p, const beacon_receiver_view *v)
{
    const char *balancer = beacon_view_balancer(p, v);

    return apr_pstrcat(p, label(p, "listen", v->label), ",",
                       label(p, "balancer", balancer), NULL);
}

static const char *member_labels(const scrape *s, int i, unsigned j)
{
    apr_pool_t *p = s->r->pool;

    return apr_pstrcat(p, s->rx_labels[i], ",",
                       label(p, "member", s->rx[i].rows[j].rec->url), NULL);
}

static void print_listening(const scrape *s)
{
    int i;

    family(s->r, "beacon_receiver_listening", "gauge",
           "1 while the receiver's UDP socket is open, else 0.");
    for (i = 0; i < s->nrx; i++) {
        sample(s->r, "beacon_receiver_listening", s->rx_labels[i],
               s->rx[i].v->shared->listening ? "1" : "0");
    }
    family(s->r, "beacon_receiver_timeout_seconds", "gauge",
           "ProxyBeaconTimeout: silence after which a member is evicted; "
           "0 never evicts.");
    for (i = 0; i < s->nrx; i++) {
        sample(s->r, "beacon_receiver_timeout_seconds", s->rx_labels[i],
               seconds(s->r->pool, beacon_view_seconds(s->rx[i].v->conf->timeout.value)));
    }
}

/* How many of a receiver's records are in state. */
static unsigned in_state(const beacon_shown_receiver *sr, apr_int32_t state)
{
    unsigned j, n = 0;

    for (j = 0; j < sr->nrows; j++) {
        n += sr->rows[j].rec->state == state;
    }
    return n;
}

/* Records per beacon state, zeros included, so that a sum never lacks a
 * series. */
static void print_records(const scrape *s)
{
    static const beacon_state_t states[] = {
        BEACON_REC_NEW, BEACON_REC_PENDING, BEACON_REC_ACTIVE,
        BEACON_REC_EVICTED, BEACON_REC_NOT_MANAGED};
    apr_pool_t *p = s->r->pool;
    int i;
    unsigned k;

    family(s->r, "beacon_receiver_records", "gauge",
           "Urls the receiver keeps a record of, by beacon's state.");
    for (i = 0; i < s->nrx; i++) {
        for (k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
            sample(s->r, "beacon_receiver_records",
                   apr_pstrcat(p, s->rx_labels[i], ",",
                               label(p, "state", beacon_view_state_name(states[k])),
                               NULL),
                   apr_psprintf(p, "%u", in_state(&s->rx[i], states[k])));
        }
    }
}

/* Log-only receivers have no balancer, so no growth. */
static void print_growth(const scrape *s)
{
    apr_pool_t *p = s->r->pool;
    int i;

    family(s->r, "beacon_growth_slots", "gauge",
           "The balancer's growth slots: used by runtime members, free, "
           "and recyclable now (used by a long-gone member beacon can "
           "replace). Joins fail when free and recyclable are both 0.");
    for (i = 0; i < s->nrx; i++) {
        const beacon_shown_receiver *sr = &s->rx[i];
        const char *l = s->rx_labels[i];

        if (sr->growth_used < 0) {
            continue;
        }
        sample(s->r, "beacon_growth_slots",
               apr_pstrcat(p, l, ",state=\"used\"", NULL),
               apr_itoa(p, sr->growth_used));
        sample(s->r, "beacon_growth_slots",
               apr_pstrcat(p, l, ",state=\"free\"", NULL),
               apr_itoa(p, sr->growth_free));
        sample(s->r, "beacon_growth_slots",
               apr_pstrcat(p, l, ",state=\"recyclable\"", NULL),
               apr_itoa(p, sr->growth_recyclable));
    }
}

/* The slots a balancer reserves (slots=): taken by members, or free. */
static void print_reserved(const scrape *s)
{
    apr_pool_t *p = s->r->pool;
    int i;

    family(s->r, "beacon_reserved_slots", "gauge",
           "The balancer's reserved slots (slots=): taken by members, and "
           "free. A join takes a free one before any growth slot.");
    for (i = 0; i < s->nrx; i++) {
        const beacon_shown_receiver *sr = &s->rx[i];
        const char *l = s->rx_labels[i];

        if (sr->reserved < 0) {
            continue;
        }
        sample(s->r, "beacon_reserved_slots",
               apr_pstrcat(p, l, ",state=\"taken\"", NULL),
               apr_itoa(p, sr->reserved - sr->reserved_free));
        sample(s->r, "beacon_reserved_slots",
               apr_pstrcat(p, l, ",state=\"free\"", NULL),
               apr_itoa(p, sr->reserved_free));
    }
}

/* One series per record: its state as beacon sees it and whether an
 * admin holds it out (the two answer different questions), and its
 * announced host, which a peer chose. */
static void print_member_info(const scrape *s)
{
    apr_pool_t *p = s->r->pool;
    int i;
    unsigned j;

    family(s->r, "beacon_member_info", "gauge",
           "1 per url the receiver knows: state is beacon's view of it, "
           "admin_held whether httpd's flags say an admin holds it out "
           "(Stopped, Drain, hot standby or spare, or a Disabled that is "
           "not beacon's), host what it announced.");
    for (i = 0; i < s->nrx; i++) {
        for (j = 0; j < s->rx[i].nrows; j++) {
            const beacon_shown_record *row = &s->rx[i].rows[j];

            sample(s->r, "beacon_member_info",
                   apr_pstrcat(p, member_labels(s, i, j), ",",
                               label(p, "state", beacon_view_state_name(row->rec->state)),
                               ",admin_held=\"",
                               beacon_view_admin_held(row) ? "true" : "false",
                               "\",", label(p, "host", row->rec->host), NULL),
                   "1");
        }
    }
}

/* Two series per member at most: 2,000 at 1,000 members. */
static void print_member_factors(const scrape *s)
{
    int i;
    unsigned j;

    family(s->r, "beacon_member_lbfactor", "gauge",
           "The load factor in force (balancer-manager's), a slow start's "
           "share included; absent without a worker.");
    for (i = 0; i < s->nrx; i++) {
        for (j = 0; j < s->rx[i].nrows; j++) {
            if (s->rx[i].rows[j].lbfactor) {
                sample(s->r, "beacon_member_lbfactor", member_labels(s, i, j),
                       beacon_view_factor(s->r->pool, s->rx[i].rows[j].lbfactor));
            }
        }
    }
    family(s->r, "beacon_member_lbfactor_announced", "gauge",
           "The load factor the member's last announcement carried; absent "
           "when it carried none.");
    for (i = 0; i < s->nrx; i++) {
        for (j = 0; j < s->rx[i].nrows; j++) {
            if (s->rx[i].rows[j].rec->lbfactor) {
                sample(s->r, "beacon_member_lbfactor_announced", member_labels(s, i, j),
                       beacon_view_factor(s->r->pool, s->rx[i].rows[j].rec->lbfactor));
            }
        }
    }
}

static void print_member_times(const scrape *s)
{
    int i;
    unsigned j;

    family(s->r, "beacon_member_last_announcement_age_seconds", "gauge",
           "Seconds since the receiver accepted the url's last announcement.");
    for (i = 0; i < s->nrx; i++) {
        for (j = 0; j < s->rx[i].nrows; j++) {
            sample(s->r, "beacon_member_last_announcement_age_seconds",
                   member_labels(s, i, j),
                   seconds(s->r->pool, s->rx[i].rows[j].since));
        }
    }
    family(s->r, "beacon_member_lease_remaining_seconds", "gauge",
           "Seconds until an active member is evicted unless it announces "
           "again; absent without a lease (not active, or timeout 0).");
    for (i = 0; i < s->nrx; i++) {
        for (j = 0; j < s->rx[i].nrows; j++) {
            if (s->rx[i].rows[j].lease_left >= 0) {
                sample(s->r, "beacon_member_lease_remaining_seconds",
                       member_labels(s, i, j),
                       seconds(s->r->pool, s->rx[i].rows[j].lease_left));
            }
        }
    }
}

/* Drop 0 is libbeacon's "ok", no drop. */
static void print_dropped(const scrape *s)
{
    apr_pool_t *p = s->r->pool;
    int i;
    unsigned k;

    family(s->r, "beacon_datagrams_dropped_total", "counter",
           "Datagrams the receiver dropped, by reason (the reason of the "
           "BCN log line, as an identifier).");
    for (i = 0; i < s->nrx; i++) {
        for (k = 1; k < BEACON_DROP_COUNT; k++) {
            sample(s->r, "beacon_datagrams_dropped_total",
                   apr_pstrcat(p, s->rx_labels[i], ",",
                               label(p, "reason", beacon_shm_drop_id(k)), NULL),
                   count(p, s->rx[i].v->shared->dropped[k]));
        }
    }
}

static void print_events(const scrape *s)
{
    apr_pool_t *p = s->r->pool;
    int i;
    unsigned k;

    family(s->r, "beacon_datagrams_accepted_total", "counter",
           "Datagrams accepted: authenticated, fresh and not replayed "
           "(heartbeats included).");
    for (i = 0; i < s->nrx; i++) {
        sample(s->r, "beacon_datagrams_accepted_total", s->rx_labels[i],
               count(p, s->rx[i].v->shared->events[BEACON_EV_ACCEPTED]));
    }
    family(s->r, "beacon_events_total", "counter",
           "What the receiver did, by event: the keys of ?json's events.");
    for (i = 0; i < s->nrx; i++) {
        for (k = 0; k < BEACON_EV_COUNT; k++) {
            sample(s->r, "beacon_events_total",
                   apr_pstrcat(p, s->rx_labels[i], ",",
                               label(p, "event", beacon_event_ids[k]), NULL),
                   count(p, s->rx[i].v->shared->events[k]));
        }
    }
}

/* ------------------------------------------------------------------ */
/* Senders                                                             */

/* A sender is told apart by the url it advertises ("" for heartbeats
 * only): two virtual hosts may name the same proxy. */
static const char *name_labels(apr_pool_t *p, const beacon_sender_view *v,
                               const beacon_fanout_name_t *name)
{
    return apr_pstrcat(p, label(p, "advertise", v->conf->advertise), ",",
                       label(p, "target", name->spec), NULL);
}

/* A counter of every address of every name; which: 0 sent, 1 errors. */
static void print_address_counter(const scrape *s, const char *metric,
                                  const char *help, int which)
{
    apr_pool_t *p = s->r->pool;
    char text[BEACON_SOCKADDR_TEXT_MAX];
    int i;
    unsigned k, j;

    family(s->r, metric, "counter", help);
    for (i = 0; i < s->ntx; i++) {
        const beacon_fanout_t *f = s->tx[i].fanout;

        for (k = 0; k < f->nnames; k++) {
            const beacon_fanout_name_t *name = &f->names[k];

            for (j = 0; j < name->naddrs; j++) {
                const beacon_fanout_addr_t *a = &name->addrs[j];
                const char *to = beacon_sockaddr_text(&a->to, text, sizeof(text));

                sample(s->r, metric,
                       apr_pstrcat(p, name_labels(p, &s->tx[i], name), ",",
                                   label(p, "address", to), NULL),
                       apr_psprintf(p, "%u", which ? a->errors : a->sent));
            }
        }
    }
}

/* A value per ProxyBeaconAddress name of every sender. */
typedef unsigned (*name_value)(const beacon_fanout_name_t *name);

static void print_per_name(const scrape *s, const char *metric,
                           const char *type, const char *help, name_value value)
{
    apr_pool_t *p = s->r->pool;
    int i;
    unsigned k;

    family(s->r, metric, type, help);
    for (i = 0; i < s->ntx; i++) {
        const beacon_fanout_t *f = s->tx[i].fanout;

        for (k = 0; k < f->nnames; k++) {
            sample(s->r, metric, name_labels(p, &s->tx[i], &f->names[k]),
                   apr_psprintf(p, "%u", value(&f->names[k])));
        }
    }
}

static unsigned lookup_failures(const beacon_fanout_name_t *name)
{
    return name->lookup_failures;
}

/* The last good set while lookups fail; duplicates too (an address an
 * earlier name has is sent once, under that name, but it is reached). */
static unsigned addresses(const beacon_fanout_name_t *name)
{
    return name->naddrs;
}

static void print_senders(const scrape *s)
{
    print_address_counter(s, "beacon_sender_datagrams_sent_total",
                          "Announcements sent to the address.", 0);
    print_address_counter(s, "beacon_sender_send_errors_total",
                          "Announcements the system refused to send to the "
                          "address.", 1);
    print_per_name(s, "beacon_sender_lookup_failures_total", "counter",
                   "Failed DNS lookups of the ProxyBeaconAddress name.",
                   lookup_failures);
    print_per_name(s, "beacon_sender_target_addresses", "gauge",
                   "Addresses the ProxyBeaconAddress name resolves to, as the "
                   "sender uses them; 0: announcements reach no proxy by "
                   "that name.", addresses);
}

/* ------------------------------------------------------------------ */
/* Contexts                                                            */

/* Each routed context's claimants by state: "active" always (0: the
 * context answers 503), the other states where some are in them. */
static void print_context(const scrape *s, const beacon_shown_context *c)
{
    static const char *const states[] = {"active", "evicted", "leaving",
                                         "pending add", "new", "unknown"};
    apr_pool_t *p = s->r->pool;
    const char *labels = apr_pstrcat(p, label(p, "balancer", c->balancer), ",",
                                     label(p, "context", c->context), NULL);
    unsigned k;
    int m, in;

    for (k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
        for (m = 0, in = 0; m < c->nmembers; m++) {
            in += strcmp(c->members[m].state, states[k]) == 0;
        }
        if (in > 0 || k == 0) {
            sample(s->r, "beacon_context_members",
                   apr_pstrcat(p, labels, ",", label(p, "state", states[k]), NULL),
                   count(p, (apr_uint64_t)in));
        }
    }
}

static void print_contexts(const scrape *s)
{
    beacon_shown_context *contexts;
    int i, n = beacon_view_contexts(s->r, s->rx, s->nrx, &contexts);

    if (n == 0) {
        return;
    }
    family(s->r, "beacon_context_members", "gauge",
           "Members that claim a routed context (ctx=), by state; a context "
           "with no active one answers 503.");
    for (i = 0; i < n; i++) {
        print_context(s, &contexts[i]);
    }
}

/* ------------------------------------------------------------------ */

void beacon_metrics_print(request_rec *r, const server_rec *only)
{
    scrape s;
    int i;

    s.r = r;
    s.nrx = beacon_view_gather(r, only, 1, &s.rx);
    s.ntx = beacon_sender_views(r->pool, only, &s.tx);
    s.rx_labels = apr_pcalloc(r->pool, sizeof(*s.rx_labels) * (s.nrx + 1));
    for (i = 0; i < s.nrx; i++) {
        s.rx_labels[i] = receiver_labels(r->pool, s.rx[i].v);
    }
    if (s.nrx > 0) {
        print_listening(&s);
        print_records(&s);
        print_growth(&s);
        print_reserved(&s);
        print_member_info(&s);
        print_member_times(&s);
        print_member_factors(&s);
        print_events(&s);
        print_dropped(&s);
        print_contexts(&s);
    }
    if (s.ntx > 0) {
        print_senders(&s);
    }
}
