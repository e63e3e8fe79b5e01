/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* A virtual host's route table; see mod_proxy_beacon_routes.h. */

#include "mod_proxy_beacon_routes.h"
#include "mod_proxy_beacon_shm.h"

#include <apr_hash.h>
#include <apr_strings.h>

#include <stdlib.h>

struct beacon_route_table {
    server_rec *s;
    const char *label;         /* "udp addr:port", the receiver's */
    const beacon_route_lane *lanes;
    const char **url;          /* "balancer://name" by lane */
    int nlanes;
    void *board;               /* libbeacon's, in shared memory */
    unsigned max_routes;       /* the contexts the lanes may hold */
    unsigned *share;           /* of max_routes, by lane (share_routes) */
    apr_size_t capacity;       /* of one image of max_routes */
    beacon_rate_limit *full_log; /* by lane: claims its share left out */
};

/* The contexts lane may hold at most: an allow-list of exact entries
 * alone holds as many as it names; a delegation, as many as its members
 * can claim. */
static unsigned lane_bound(const beacon_route_lane *lane)
{
    unsigned claims = lane->entries * BEACON_CTX_MAX_PATHS, i;

    for (i = 0; i < lane->contexts->n; i++) {
        if (lane->contexts->entry[i].delegation) {
            return claims;
        }
    }
    return lane->contexts->n < claims ? lane->contexts->n : claims;
}

/*
 * Each lane's share of the BEACON_ROUTES_MAX routes of one table, in
 * share[], and their sum. When every lane's bound fits, a lane gets its
 * bound; when not, the table is shared max-min fairly: a lane bounded
 * below an even part keeps its bound, and the rest is split evenly among
 * the others. So no balancer, whatever its slots, crowds out the contexts
 * of those configured after it (a delegation with 4,096 slots alone could
 * claim the whole table).
 */
static unsigned share_routes(const beacon_route_lane *lanes, int n, unsigned *share,
                             apr_pool_t *p)
{
    unsigned left = BEACON_ROUTES_MAX, unsettled = 0, sum = 0, even;
    int *settled = apr_pcalloc(p, sizeof(*settled) * (apr_size_t)n);
    int i, progress = 1;

    for (i = 0; i < n; i++) {
        share[i] = lanes[i].contexts && lanes[i].target ? lane_bound(&lanes[i]) : 0;
        settled[i] = share[i] == 0;
        unsettled += !settled[i];
    }
    /* settle the lanes bounded within an even part of what is left, until
     * none is; the others split what is then left */
    while (unsettled > 0 && progress) {
        progress = 0;
        even = left / unsettled;
        for (i = 0; i < n; i++) {
            if (!settled[i] && share[i] <= even) {
                left -= share[i];
                sum += share[i];
                settled[i] = 1;
                unsettled--;
                progress = 1;
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (!settled[i]) {
            share[i] = left / unsettled;
            sum += share[i];
        }
    }
    return sum;
}

static int by_context(const void *a, const void *b)
{
    const beacon_routes_spec_t *x = a, *y = b;

    return strcmp(x->ctx, y->ctx);
}

/* What one rebuild holds while it gathers the claims. */
typedef struct {
    apr_hash_t *seen;             /* context -> its spec */
    beacon_routes_spec_t *specs;  /* max_routes of them */
    unsigned n;
    unsigned *held;               /* by lane: routes it has, up to its share */
    unsigned *left_out;           /* by lane: contexts its share had no room for */
} gathered;

/* Adds the contexts of one claim (ctx= as announced) of lane to g, each
 * once: value counts the members that claim it. */
static void add_claim(const beacon_route_table *rt, gathered *g, int lane,
                      const char *ctx, apr_pool_t *p)
{
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int i, count = beacon_ctx_parse(ctx, strlen(ctx), paths);

    for (i = 0; i < count; i++) {
        const char *path = apr_pstrmemdup(p, paths[i].ptr, paths[i].len);
        beacon_routes_spec_t *spec = apr_hash_get(g->seen, path, APR_HASH_KEY_STRING);

        if (spec != NULL) {
            /* a path named twice, or by a second member; another
             * balancer's can only be nested (check_config) */
            spec->value += spec->balancer == lane;
            continue;
        }
        if (g->held[lane] == rt->share[lane]) {
            g->left_out[lane]++;
            continue;
        }
        g->held[lane]++;
        spec = &g->specs[g->n++];
        spec->ctx = path;
        spec->len = paths[i].len;
        spec->balancer = (apr_uint16_t)lane;
        spec->value = 1;
        apr_hash_set(g->seen, path, APR_HASH_KEY_STRING, spec);
    }
}

/* Says, at most once per BEACON_LOG_EVERY a balancer, how many contexts
 * its members claim that its share of the table had no room for: they are
 * not routed, and a peer can make this happen at will. */
static void report_left_out(const beacon_route_table *rt, const gathered *g,
                            apr_pool_t *p)
{
    apr_time_t now = apr_time_now();
    unsigned suppressed;
    int lane;

    for (lane = 0; lane < rt->nlanes; lane++) {
        if (g->left_out[lane] == 0 ||
            !beacon_decide_rate_allows(&rt->full_log[lane], now, BEACON_LOG_EVERY,
                                     &suppressed)) {
            continue;
        }
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, rt->s, BCNLOGNO(00200)
                     "route table of %s: %u context(s) claimed by members of "
                     "balancer://%s are not routed: its share of the table "
                     "(%u of %u routes) is full%s", rt->label,
                     g->left_out[lane], rt->lanes[lane].name, rt->share[lane],
                     BEACON_ROUTES_MAX, beacon_util_held_back(p, suppressed));
    }
}

/* The routes the lanes' members claim now, sorted by context. */
static unsigned claimed_routes(const beacon_route_table *rt, apr_pool_t *p,
                               beacon_routes_spec_t **specs)
{
    gathered g;
    int lane;

    g.seen = apr_hash_make(p);
    g.specs = apr_palloc(p, sizeof(*g.specs) * rt->max_routes);
    g.n = 0;
    g.held = apr_pcalloc(p, sizeof(*g.held) * (apr_size_t)rt->nlanes);
    g.left_out = apr_pcalloc(p, sizeof(*g.left_out) * (apr_size_t)rt->nlanes);
    for (lane = 0; lane < rt->nlanes; lane++) {
        const beacon_route_lane *l = &rt->lanes[lane];
        beacon_claim *claims;
        int i, nclaims;

        if (rt->share[lane] == 0) {
            continue;
        }
        nclaims = beacon_balancer_claims(l->target, p, &claims);
        for (i = 0; i < nclaims; i++) {
            add_claim(rt, &g, lane, claims[i].ctx, p);
        }
    }
    report_left_out(rt, &g, p);
    qsort(g.specs, g.n, sizeof(*g.specs), by_context);
    *specs = g.specs;
    return g.n;
}

/* Builds and publishes; returns how many routes, or -1 (logged). */
static int build(beacon_route_table *rt, apr_pool_t *p, beacon_routes_spec_t **specs)
{
    unsigned n = claimed_routes(rt, p, specs);
    apr_uint32_t seed, generation;
    const char *err;

    if (apr_generate_random_bytes((unsigned char *)&seed, sizeof(seed)) != APR_SUCCESS) {
        seed = (apr_uint32_t)apr_time_now();
    }
    if ((err = beacon_board_publish(rt->board, *specs, n, seed, &generation)) != NULL) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, rt->s, BCNLOGNO(00151)
                     "cannot publish the %u route(s) of %s: %s; the "
                     "previous table stays", n, rt->label,
                     err);
        return -1;
    }
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, rt->s, BCNLOGNO(00153)
                 "route table of %s: %u context(s), generation %u",
                 rt->label, n, generation);
    return (int)n;
}

/* Says at start which balancers' members may claim more than their
 * share of the table (share_routes): BCN00200 names what it leaves out. */
static void report_shares(const beacon_route_table *rt)
{
    int i, routing = 0;

    for (i = 0; i < rt->nlanes; i++) {
        routing += rt->share[i] > 0;
    }
    for (i = 0; i < rt->nlanes; i++) {
        unsigned bound = rt->share[i] ? lane_bound(&rt->lanes[i]) : 0;

        if (bound > rt->share[i]) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, rt->s, BCNLOGNO(00202)
                         "route table of %s: the members of balancer://%s may "
                         "claim up to %u contexts, its share is %u (%u routes "
                         "shared by %d balancer(s))", rt->label,
                         rt->lanes[i].name, bound, rt->share[i],
                         BEACON_ROUTES_MAX, routing);
        }
    }
}

beacon_route_table *beacon_routes_table_open(apr_pool_t *pconf, server_rec *s,
                                  const char *label,
                                  const beacon_route_lane *lanes, int n,
                                  int *failed)
{
    unsigned *share = apr_pcalloc(pconf, sizeof(*share) * (apr_size_t)n);
    unsigned max_routes = share_routes(lanes, n, share, pconf);
    apr_size_t capacity = max_routes
        ? beacon_board_capacity(max_routes, (apr_size_t)max_routes * BEACON_CTX_PATH_MAX)
        : 0;
    beacon_routes_spec_t *specs;
    beacon_route_table *rt;
    const char *err = NULL; /* read only when the board exists, and set then */
    int i, routes;

    *failed = 0;
    if (capacity == 0) {
        return NULL;
    }
    rt = apr_pcalloc(pconf, sizeof(*rt));
    rt->share = share;
    rt->full_log = apr_pcalloc(pconf, sizeof(*rt->full_log) * (apr_size_t)n);
    rt->s = s;
    rt->label = apr_pstrcat(pconf, "udp ", label, NULL);
    rt->lanes = lanes;
    rt->nlanes = n;
    rt->max_routes = max_routes;
    rt->capacity = capacity;
    rt->url = apr_pcalloc(pconf, sizeof(*rt->url) * (apr_size_t)n);
    for (i = 0; i < n; i++) {
        rt->url[i] = apr_pstrcat(pconf, "balancer://", lanes[i].name, NULL);
    }
    rt->board = beacon_shm_create(pconf, s, beacon_board_size(capacity));
    if (rt->board == NULL ||
        (err = beacon_board_init(rt->board, beacon_board_size(capacity),
                                 capacity)) != NULL) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00152)
                     "cannot make the route table of udp %s in shared "
                     "memory%s%s", label, rt->board ? ": " : "",
                     rt->board ? err : "");
        *failed = 1;
        return NULL;
    }
    report_shares(rt);
    if ((routes = build(rt, pconf, &specs)) > 0) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, BCNLOGNO(00154)
                     "restored %d route(s) of udp %s from the member "
                     "registry", routes, label);
    }
    return rt;
}

/* The contexts of the published table, as a set (context -> its lane + 1). */
static apr_hash_t *published_set(const beacon_route_table *rt, apr_pool_t *p)
{
    apr_hash_t *set = apr_hash_make(p);
    beacon_route_view *routes;
    apr_uint32_t generation;
    int i, n = beacon_routes_table_list(rt, p, &routes, &generation);

    for (i = 0; i < n; i++) {
        apr_hash_set(set, routes[i].context, APR_HASH_KEY_STRING, &rt->lanes[routes[i].lane]);
    }
    return set;
}

/* A rebuild names at most this many contexts routed, and as many
 * withdrawn (one announcement's worth), and counts the rest in one line:
 * a key holder that changes claims in a loop would otherwise write a line
 * for every context of the table at every rebuild. */
#define NAMED_MAX BEACON_CTX_MAX_PATHS

void beacon_routes_table_publish(beacon_route_table *rt, apr_pool_t *p)
{
    apr_hash_t *before = published_set(rt, p);
    beacon_routes_spec_t *specs;
    apr_hash_index_t *hi;
    unsigned routed = 0, withdrawn = 0;
    int i, n;

    if ((n = build(rt, p, &specs)) < 0) {
        return;
    }
    for (i = 0; i < n; i++) {
        const beacon_route_lane *lane = &rt->lanes[specs[i].balancer];

        if (apr_hash_get(before, specs[i].ctx, APR_HASH_KEY_STRING) != lane &&
            routed++ < NAMED_MAX) {
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, rt->s, BCNLOGNO(00146)
                         "context %s routed to balancer://%s",
                         specs[i].ctx, lane->name);
        }
        apr_hash_set(before, specs[i].ctx, APR_HASH_KEY_STRING, NULL);
    }
    for (hi = apr_hash_first(p, before); hi; hi = apr_hash_next(hi)) {
        const void *ctx;
        void *lane;

        apr_hash_this(hi, &ctx, NULL, &lane);
        if (withdrawn++ < NAMED_MAX) {
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, rt->s, BCNLOGNO(00150)
                         "context %s withdrawn from balancer://%s: no member "
                         "claims it any more", (const char *)ctx,
                         ((const beacon_route_lane *)lane)->name);
        }
    }
    if (routed > NAMED_MAX || withdrawn > NAMED_MAX) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, rt->s, BCNLOGNO(00201)
                     "route table of %s: %u more context(s) routed and %u "
                     "more withdrawn than named above", rt->label,
                     routed > NAMED_MAX ? routed - NAMED_MAX : 0,
                     withdrawn > NAMED_MAX ? withdrawn - NAMED_MAX : 0);
    }
}

const server_rec *beacon_routes_table_server(const beacon_route_table *rt)
{
    return rt->s;
}

const char *beacon_routes_table_find(const beacon_route_table *rt, const char *path)
{
    beacon_board_hit_t hit;

    /* -1 (a table no reader could read whole) routes nothing either */
    if (beacon_board_lookup(rt->board, path, strlen(path), &hit) != 1 ||
        hit.balancer >= rt->nlanes) {
        return NULL;
    }
    return rt->url[hit.balancer];
}

int beacon_routes_table_list(const beacon_route_table *rt, apr_pool_t *p,
                       beacon_route_view **routes, apr_uint32_t *generation)
{
    const void *image = beacon_board_copy(rt->board, apr_palloc(p, rt->capacity),
                                          rt->capacity, generation);
    unsigned i, n = image ? beacon_routes_count(image) : 0;

    *routes = apr_pcalloc(p, sizeof(**routes) * (n + 1));
    for (i = 0; i < n; i++) {
        const beacon_routes_entry_t *e = beacon_routes_at(image, i);
        int lane = e->balancer < rt->nlanes ? e->balancer : 0;

        (*routes)[i].context = apr_pstrdup(p, beacon_routes_name(image, e));
        (*routes)[i].lane = lane;
        (*routes)[i].balancer = rt->lanes[lane].name;
        (*routes)[i].url = rt->url[lane];
    }
    return (int)n;
}
