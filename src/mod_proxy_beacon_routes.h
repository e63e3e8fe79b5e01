/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The route table of one receiver's virtual host: which balancer each
 * context its members claim goes to. The parent makes it in post_config,
 * in shared memory, from what the registry kept (so routes outlive a
 * restart as members do); the receiver's owner rebuilds it when a claim
 * changes; every child reads it on each request without a lock, as
 * libbeacon's route board publishes it (immutable images behind a
 * generation counter).
 */
#ifndef MOD_PROXY_BEACON_ROUTES_H
#define MOD_PROXY_BEACON_ROUTES_H

#include "mod_proxy_beacon_balancer.h"

typedef struct beacon_route_table beacon_route_table;

/* One balancer of the receiver, as its route table knows it. */
typedef struct {
    const char *name;                  /* bare balancer name */
    const beacon_allow_t *contexts;    /* contexts=; NULL: it routes none */
    const beacon_balancer *target;
    unsigned entries;                  /* its registry's: bounds its claims */
} beacon_route_lane;

/*
 * In post_config, in the parent: the route table of s for the balancers
 * lanes[0..n) of its receiver (at udp label), sized for every context they may claim, filled
 * from their registries. NULL when none routes contexts, or (logged,
 * *failed set) when shared memory cannot be had.
 */
beacon_route_table *beacon_routes_table_open(apr_pool_t *pconf, server_rec *s,
                                  const char *label,
                                  const beacon_route_lane *lanes, int n,
                                  int *failed);

/* In the owner, when a claim changed or a member went: builds the table
 * anew from the registries and publishes it (each context that comes or
 * goes logged at info). */
void beacon_routes_table_publish(beacon_route_table *rt, apr_pool_t *p);

/* The virtual host whose requests the table routes. */
const server_rec *beacon_routes_table_server(const beacon_route_table *rt);

/* The balancer ("balancer://name") of the longest context that matches
 * the request path path, or NULL. Lock-free, allocates nothing. */
const char *beacon_routes_table_find(const beacon_route_table *rt, const char *path);

/* A context of the table, for the status pages. */
typedef struct {
    const char *context;
    const char *balancer;   /* bare name */
    const char *url;        /* "balancer://name" */
    int lane;               /* index of its balancer in lanes */
} beacon_route_view;

/* The routes as published (a consistent copy, from p), in the order
 * built; returns how many, *generation the table's. */
int beacon_routes_table_list(const beacon_route_table *rt, apr_pool_t *p,
                       beacon_route_view **routes, apr_uint32_t *generation);

#endif /* MOD_PROXY_BEACON_ROUTES_H */
