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
    apr_size_t capacity;       /* of one image of max_routes */
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

/* How many contexts the lanes may hold in all. */
static unsigned routes_for(const beacon_route_lane *lanes, int n)
{
    apr_size_t routes = 0;
    int i;

    for (i = 0; i < n; i++) {
        if (lanes[i].contexts && lanes[i].target) {
            routes += lane_bound(&lanes[i]);
        }
    }
    return routes > BEACON_ROUTES_MAX ? BEACON_ROUTES_MAX : (unsigned)routes;
}

static int by_context(const void *a, const void *b)
{
    const beacon_routes_spec_t *x = a, *y = b;

    return strcmp(x->ctx, y->ctx);
}

/* Adds the contexts of one claim (ctx= as announced) of lane to specs,
 * each once: value counts the members that claim it. */
static void add_claim(apr_hash_t *seen, beacon_routes_spec_t *specs,
                      unsigned *n, unsigned max, int lane, const char *ctx,
                      apr_pool_t *p)
{
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int i, count = beacon_ctx_parse(ctx, strlen(ctx), paths);

    for (i = 0; i < count; i++) {
        const char *path = apr_pstrmemdup(p, paths[i].ptr, paths[i].len);
        beacon_routes_spec_t *spec = apr_hash_get(seen, path, APR_HASH_KEY_STRING);

        if (spec != NULL) {
            /* a path named twice, or by a second member; another
             * balancer's can only be nested (check_config) */
            spec->value += spec->balancer == lane;
            continue;
        }
        if (*n == max) {
            return;
        }
        spec = &specs[(*n)++];
        spec->ctx = path;
        spec->len = paths[i].len;
        spec->balancer = (apr_uint16_t)lane;
        spec->value = 1;
        apr_hash_set(seen, path, APR_HASH_KEY_STRING, spec);
    }
}

/* The routes the lanes' members claim now, sorted by context. */
static unsigned claimed_routes(const beacon_route_table *rt, apr_pool_t *p,
                               beacon_routes_spec_t **specs)
{
    unsigned max = rt->max_routes, n = 0;
    apr_hash_t *seen = apr_hash_make(p);
    int lane;

    *specs = apr_palloc(p, sizeof(**specs) * max);
    for (lane = 0; lane < rt->nlanes; lane++) {
        const beacon_route_lane *l = &rt->lanes[lane];
        beacon_claim *claims;
        int i, nclaims;

        if (l->contexts == NULL || l->target == NULL) {
            continue;
        }
        nclaims = beacon_balancer_claims(l->target, p, &claims);
        for (i = 0; i < nclaims; i++) {
            add_claim(seen, *specs, &n, max, lane, claims[i].ctx, p);
        }
    }
    qsort(*specs, n, sizeof(**specs), by_context);
    return n;
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

beacon_route_table *beacon_route_table_open(apr_pool_t *pconf, server_rec *s,
                                  const char *label,
                                  const beacon_route_lane *lanes, int n,
                                  int *failed)
{
    unsigned max_routes = routes_for(lanes, n);
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
    int i, n = beacon_route_table_list(rt, p, &routes, &generation);

    for (i = 0; i < n; i++) {
        apr_hash_set(set, routes[i].context, APR_HASH_KEY_STRING, &rt->lanes[routes[i].lane]);
    }
    return set;
}

void beacon_route_table_publish(beacon_route_table *rt, apr_pool_t *p)
{
    apr_hash_t *before = published_set(rt, p);
    beacon_routes_spec_t *specs;
    apr_hash_index_t *hi;
    int i, n;

    if ((n = build(rt, p, &specs)) < 0) {
        return;
    }
    for (i = 0; i < n; i++) {
        const beacon_route_lane *lane = &rt->lanes[specs[i].balancer];

        if (apr_hash_get(before, specs[i].ctx, APR_HASH_KEY_STRING) != lane) {
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
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, rt->s, BCNLOGNO(00150)
                     "context %s withdrawn from balancer://%s: no member "
                     "claims it any more", (const char *)ctx,
                     ((const beacon_route_lane *)lane)->name);
    }
}

const server_rec *beacon_route_table_server(const beacon_route_table *rt)
{
    return rt->s;
}

const char *beacon_route_table_find(const beacon_route_table *rt, const char *path)
{
    beacon_board_hit_t hit;

    /* -1 (a table no reader could read whole) routes nothing either */
    if (beacon_board_lookup(rt->board, path, strlen(path), &hit) != 1 ||
        hit.balancer >= rt->nlanes) {
        return NULL;
    }
    return rt->url[hit.balancer];
}

int beacon_route_table_list(const beacon_route_table *rt, apr_pool_t *p,
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
