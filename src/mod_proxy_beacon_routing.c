/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Routing by announced contexts; see mod_proxy_beacon_routing.h. The
 * hook does what mod_rewrite's [P] and mod_proxy's own translation do
 * (contexts-routing.md has the facts): it runs after mod_rewrite and
 * before mod_proxy, leaves alone what either already took, lets every
 * ProxyPass decide first, and builds the filename from the decoded,
 * normalised r->uri, without the query string (the balancer's canon adds
 * it), so that everything after translation is stock: <Proxy
 * balancer://name> settings, <Location> access control, stickysession,
 * the lbmethod, failover, ProxyPassReverse.
 *
 * A request is routed on its servlet path (beacon_servlet_path: what
 * Tomcat serves for it), and a routed request's r->uri becomes that path,
 * as mod_proxy's mapping=servlet does: <Location /shop/admin> and
 * ProxyPass /shop/admin ! end a match only at "/" or the end, and would
 * not see "/shop/admin;x/users", which the member serves as
 * "/shop/admin/users". The filename keeps the path as sent, parameters
 * and all (;jsessionid= for the member and for stickysession).
 */

#include "mod_proxy_beacon_routing.h"

#include "mod_proxy_beacon_config.h"
#include "mod_proxy_beacon_routes.h"
#include "mod_proxy_beacon_worker.h"

#include "beacon.h"

#include <apr_strings.h>
#include <http_request.h>
#include <string.h>

/* What proxy_trans declines, declined the same way: a request someone
 * already proxies (forward proxy, RewriteRule [P], an encoded ProxyPass),
 * "OPTIONS *", a path that is not one, and no-proxy. */
static int is_routable(const request_rec *r)
{
    return !r->proxyreq && r->uri && r->uri[0] == '/' &&
           apr_table_get(r->subprocess_env, "no-proxy") == NULL;
}

static int route_by_context(request_rec *r)
{
    const beacon_route_table *rt = beacon_config_of(r->server)->routes;
    const char *balancer;
    char *servlet;
    apr_size_t len;
    int rv;

    /* a virtual host that names no directive of ours shares the main
     * server's configuration, routes included: its requests are not the
     * receiver's */
    if (rt == NULL || beacon_routes_table_server(rt) != r->server || !is_routable(r)) {
        return DECLINED;
    }
    len = strlen(r->uri);
    servlet = apr_palloc(r->pool, len + 1);
    /* a ".." above the root ("/..;/x") names no path a member serves */
    if (beacon_servlet_path(r->uri, len, servlet) < 0) {
        return DECLINED;
    }
    /* the lookup first, the cheaper: a path no context holds is
     * mod_proxy's business alone, and walked through its ProxyPass once */
    if ((balancer = beacon_routes_table_find(rt, servlet)) == NULL) {
        return DECLINED;
    }
    if ((rv = beacon_worker_static_route(r)) != BEACON_NO_STATIC_ROUTE) {
        return rv;
    }
    /* a ProxyPass, "!" above all, is never bypassed by spelling its path
     * with parameters: one that holds the servlet path keeps the request
     * from being routed */
    if (strcmp(servlet, r->uri) != 0 && beacon_worker_static_match(r, servlet)) {
        return DECLINED;
    }
    r->filename = apr_pstrcat(r->pool, "proxy:", balancer, r->uri, NULL);
    r->handler = "proxy-server";
    r->proxyreq = PROXYREQ_REVERSE;
    /* in place, as mod_proxy does (r->parsed_uri.path is the same
     * buffer): the location walk after translation, <Location>,
     * <LocationMatch> and <If> see what the member serves; never longer */
    memcpy(r->uri, servlet, strlen(servlet) + 1);
    return OK;
}

void beacon_routing_register_hooks(void)
{
    static const char *const after_rewrite[] = {"mod_rewrite.c", NULL};
    static const char *const before_proxy[] = {"mod_proxy.c", NULL};

    ap_hook_translate_name(route_by_context, after_rewrite, before_proxy,
                           APR_HOOK_FIRST);
}
