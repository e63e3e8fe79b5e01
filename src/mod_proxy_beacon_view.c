/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* What the status pages show; see mod_proxy_beacon_view.h. */

#include "mod_proxy_beacon_view.h"

#include "mod_proxy_beacon_routes.h"

#include <apr_strings.h>

const char *const beacon_event_ids[BEACON_EV_COUNT] = {
    [BEACON_EV_ACCEPTED] = "accepted",     [BEACON_EV_HEARTBEAT] = "heartbeats",
    [BEACON_EV_ADDED] = "added",           [BEACON_EV_READOPTED] = "readopted",
    [BEACON_EV_ADD_FAILED] = "add_failed", [BEACON_EV_EVICTED] = "evicted",
    [BEACON_EV_REENABLED] = "reenabled",   [BEACON_EV_LEAVING] = BEACON_STATE_LEAVING,
    [BEACON_EV_TAKEN_OVER] = "taken_over", [BEACON_EV_RECYCLED] = "recycled",
    [BEACON_EV_FORGOTTEN] = "forgotten",
};

/* Status-line names for ?auto, in the CamelCase mod_status uses. */
const char *const beacon_event_keys[BEACON_EV_COUNT] = {
    [BEACON_EV_ACCEPTED] = "Accepted",    [BEACON_EV_HEARTBEAT] = "Heartbeats",
    [BEACON_EV_ADDED] = "Added",          [BEACON_EV_READOPTED] = "Readopted",
    [BEACON_EV_ADD_FAILED] = "AddFailed", [BEACON_EV_EVICTED] = "Evictions",
    [BEACON_EV_REENABLED] = "Reenabled",  [BEACON_EV_LEAVING] = "Leaving",
    [BEACON_EV_TAKEN_OVER] = "TakenOver", [BEACON_EV_RECYCLED] = "Recycled",
    [BEACON_EV_FORGOTTEN] = "Forgotten",
};

const char *beacon_view_state_name(apr_int32_t state)
{
    return beacon_state_name((beacon_state_t)state);
}


double beacon_view_seconds(apr_interval_time_t t)
{
    return (double)t / APR_USEC_PER_SEC;
}

/* with_flags: also httpd's flags of each member, which take the
 * balancer's lock and one walk of its members; ?auto shows none. */
static void derive(beacon_shown_receiver *out, const beacon_receiver_view *v,
                   int with_flags, apr_pool_t *p, apr_time_t now)
{
    beacon_status_record *copy = apr_palloc(p, sizeof(*copy) * v->shared->capacity);
    apr_hash_t *members = NULL;
    unsigned i;

    memset(out, 0, sizeof(*out));
    out->v = v;
    out->nrows = beacon_shm_status_read(v->shared, copy);
    out->rows = apr_pcalloc(p, sizeof(*out->rows) * (out->nrows + 1));
    out->growth_used = out->growth_free = -1;
    out->reserved = out->reserved_free = -1;
    if (v->target) {
        beacon_balancer_growth(v->target, &out->growth_used, &out->growth_free,
                               &out->growth_recyclable);
        beacon_balancer_reserved(v->target, &out->reserved, &out->reserved_free);
    }
    if (v->target && with_flags) {
        members = beacon_balancer_members_shown(v->target, p);
    }
    for (i = 0; i < out->nrows; i++) {
        beacon_shown_record *row = &out->rows[i];
        const beacon_status_record *rec = &copy[i];

        row->rec = rec;
        row->since = beacon_view_seconds(now - rec->last_seen);
        row->lease_left = -1;
        row->retry_in = -1;
        row->ours = rec->state == BEACON_REC_ACTIVE ||
                    rec->state == BEACON_REC_EVICTED;
        if (rec->state == BEACON_REC_ACTIVE && v->conf->timeout.value > 0) {
            row->lease_left = beacon_view_seconds(
                rec->last_seen + v->conf->timeout.value - now);
            if (row->lease_left < 0) {
                row->lease_left = 0;
            }
        }
        if (rec->state == BEACON_REC_PENDING && rec->retry_at > now) {
            row->retry_in = beacon_view_seconds(rec->retry_at - now);
        }
        if (members) {
            const beacon_member_shown *m = apr_hash_get(members, rec->url,
                                                        APR_HASH_KEY_STRING);

            if (m) {
                row->flags = m->flags;
                row->lbfactor = m->lbfactor;
                row->slow_start = m->slow_start;
            }
        }
        out->active += rec->state == BEACON_REC_ACTIVE;
        out->evicted += rec->state == BEACON_REC_EVICTED;
        out->pending += rec->state == BEACON_REC_PENDING;
        out->not_managed += rec->state == BEACON_REC_NOT_MANAGED;
    }
}

/* The receivers of server only (NULL: every server), as shown. */
int beacon_view_gather(request_rec *r, const server_rec *only, int with_flags,
                  beacon_shown_receiver **shown)
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

int beacon_view_has_flag(const char *flags, const char *word)
{
    apr_size_t n = strlen(word);
    const char *at = flags;

    while ((at = strstr(at, word)) != NULL) {
        if ((at == flags || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0')) {
            return 1;
        }
        at += n;
    }
    return 0;
}

/* The words are those of mod_proxy's proxy_wstat_tbl (proxy_util.c). */
int beacon_view_admin_held(const beacon_shown_record *row)
{
    static const char *const admins[] = {"Stop", "Drn", "Stby", "Spar"};
    unsigned i;

    if (row->flags == NULL) {
        return 0;
    }
    for (i = 0; i < sizeof(admins) / sizeof(admins[0]); i++) {
        if (beacon_view_has_flag(row->flags, admins[i])) {
            return 1;
        }
    }
    /* beacon sets Disabled on the members it took out (evicted, leaving)
     * and clears it when they return; one being added is beacon's too */
    return (row->rec->state == BEACON_REC_ACTIVE ||
            row->rec->state == BEACON_REC_NOT_MANAGED) &&
           beacon_view_has_flag(row->flags, "Dis");
}

/* httpd's flag text ends in a space ("Init Ok "). */
const char *beacon_view_factor(apr_pool_t *p, int hundredths)
{
    return apr_psprintf(p, "%d.%02d", hundredths / 100, hundredths % 100);
}

const char *beacon_view_trimmed(apr_pool_t *p, const char *flags)
{
    apr_size_t n = strlen(flags);

    while (n > 0 && flags[n - 1] == ' ') {
        n--;
    }
    return apr_pstrmemdup(p, flags, n);
}

const char *beacon_view_balancer(apr_pool_t *p, const beacon_receiver_view *v)
{
    return v->balancer ? apr_pstrcat(p, "balancer://", v->balancer, NULL) : NULL;
}

const char *beacon_view_allow(apr_pool_t *p, const beacon_reach_t *reach)
{
    /* an entry is at most a name of BEACON_REACH_NAME_MAX and "*." */
    apr_size_t size;
    char *buf;

    if (reach == NULL) {
        return NULL;
    }
    size = reach->n * (BEACON_REACH_NAME_MAX + 4) + 1;
    buf = apr_palloc(p, size);
    return beacon_reach_text(reach, buf, size);
}

const char *beacon_view_targets(apr_pool_t *p, const beacon_server_conf *conf)
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

/* The shown row of url in sr, or NULL. */
static const beacon_shown_record *row_of(const beacon_shown_receiver *sr,
                                         const char *url)
{
    unsigned i;

    for (i = 0; i < sr->nrows; i++) {
        if (strcmp(sr->rows[i].rec->url, url) == 0) {
            return &sr->rows[i];
        }
    }
    return NULL;
}

static const char *claimant_state(const beacon_shown_record *row)
{
    if (row == NULL) {
        return "unknown";
    }
    return row->rec->leaving ? "leaving" : beacon_view_state_name(row->rec->state);
}

/* Whether ctx= value claims names context. */
static int claims_context(const char *value, const char *context)
{
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int i, n = beacon_ctx_parse(value, strlen(value), paths);

    for (i = 0; i < n; i++) {
        if (paths[i].len == strlen(context) &&
            memcmp(paths[i].ptr, context, paths[i].len) == 0) {
            return 1;
        }
    }
    return 0;
}

/* A shown receiver's claims, read from the registry once a page. */
typedef struct {
    beacon_claim *claims;
    int n;        /* -1: not read yet */
} lane_claims;

/* The members of sr's balancer that claim context. */
static void add_claimants(request_rec *r, const beacon_shown_receiver *sr,
                          lane_claims *lc, beacon_shown_context *c)
{
    beacon_claim *claims;
    int i, n;

    if (lc->n < 0) {
        lc->n = beacon_balancer_claims(sr->v->target, r->pool, &lc->claims);
    }
    claims = lc->claims;
    n = lc->n;
    c->members = apr_pcalloc(r->pool, sizeof(*c->members) * (apr_size_t)(n + 1));
    for (i = 0; i < n; i++) {
        if (claims_context(claims[i].ctx, c->context)) {
            c->members[c->nmembers].url = claims[i].url;
            c->members[c->nmembers].state = claimant_state(row_of(sr, claims[i].url));
            c->nmembers++;
        }
    }
}

/* The shown receiver of balancer in routes rt, or NULL. */
static const beacon_shown_receiver *lane_of_route(const beacon_shown_receiver *shown,
                                                  int n, const beacon_route_table *rt,
                                                  const char *balancer)
{
    int i;

    for (i = 0; i < n; i++) {
        if (shown[i].v->conf->routes == rt && shown[i].v->target &&
            shown[i].v->balancer && strcmp(shown[i].v->balancer, balancer) == 0) {
            return &shown[i];
        }
    }
    return NULL;
}

/* Whether a receiver before shown[i] is of the same virtual host's routes:
 * each virtual host's are shown once. */
static int shown_before(const beacon_shown_receiver *shown, int i,
                        const beacon_route_table *rt)
{
    int j;

    for (j = 0; j < i; j++) {
        if (shown[j].v->conf->routes == rt) {
            return 1;
        }
    }
    return 0;
}

int beacon_view_contexts(request_rec *r, const beacon_shown_receiver *shown,
                         int n, beacon_shown_context **contexts)
{
    apr_array_header_t *out = apr_array_make(r->pool, 16, sizeof(beacon_shown_context));
    lane_claims *claims = apr_palloc(r->pool, sizeof(*claims) * (apr_size_t)(n + 1));
    int i, k;

    for (i = 0; i < n; i++) {
        claims[i].n = -1;
    }
    for (i = 0; i < n; i++) {
        const beacon_route_table *rt = shown[i].v->conf->routes;
        beacon_route_view *routes;
        apr_uint32_t generation;
        int nroutes;

        if (rt == NULL || shown_before(shown, i, rt)) {
            continue;
        }
        nroutes = beacon_routes_table_list(rt, r->pool, &routes, &generation);
        for (k = 0; k < nroutes; k++) {
            beacon_shown_context *c = apr_array_push(out);
            const beacon_shown_receiver *sr =
                lane_of_route(shown, n, rt, routes[k].balancer);

            memset(c, 0, sizeof(*c));
            c->context = routes[k].context;
            c->balancer = routes[k].url;
            if (sr) {
                add_claimants(r, sr, &claims[sr - shown], c);
            }
        }
    }
    *contexts = (beacon_shown_context *)out->elts;
    return out->nelts;
}
