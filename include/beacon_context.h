/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: contexts, the request paths a member serves (ctx=;
 * lib/beacon_context.c).
 */
#ifndef BEACON_CONTEXT_H
#define BEACON_CONTEXT_H

#include "beacon_common.h"
#include "beacon_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Contexts (ctx=, wire format 1.2): request paths a member serves      */

/* Whether path[0..len) is one context: "/" or "/seg(/seg)*", a segment
 * 1 or more of [A-Za-z0-9._~-] and not "." or "..", no trailing "/", at
 * most BEACON_CTX_PATH_MAX bytes. */
int beacon_context_is_valid(const char *path, apr_size_t len);

/*
 * The paths of a ctx= value ("/shop,/cart"): 1 to BEACON_CTX_MAX_PATHS
 * valid contexts separated by ",". Returns how many, each a span into
 * value, or -1 when the value breaks the rule (paths then unspecified).
 */
int beacon_ctx_parse(const char *value, apr_size_t len,
                     beacon_span_t paths[BEACON_CTX_MAX_PATHS]);

/* The contexts of a verified datagram into paths; 0 without ctx=. */
unsigned beacon_datagram_contexts(const beacon_datagram_t *dg,
                                  beacon_span_t paths[BEACON_CTX_MAX_PATHS]);

/*
 * The servlet path of the request path path[0..len): the path a servlet
 * container serves for it, and the one contexts are matched on. Every
 * segment's path parameters (";" up to the next "/": "/shop;jsessionid=1"
 * is "/shop", "/a;x/b" is "/a/b") removed, runs of "/" made one, and "."
 * and ".." segments resolved, also when a parameter follows them (".;x",
 * "..;x": Tomcat serves "/a/..;/b" as "/b"). Nothing decoded. Written to
 * out, which has room for len + 1 bytes (it may be path itself),
 * NUL-terminated; returns its length, or -1 when path does not start
 * with "/" or a ".." goes above the root ("/..;/x").
 */
apr_ssize_t beacon_servlet_path(const char *path, apr_size_t len, char *out);

/*
 * Whether the context ctx[0..ctxlen) matches the servlet path
 * path[0..pathlen) (beacon_servlet_path): "/shop" matches "/shop" and
 * "/shop/...", never "/shopping" nor "/shop;x" (a path that still holds
 * a parameter is not a servlet path); "/" matches every path that starts
 * with "/". Bytes compared as they are (case counts, nothing decoded).
 */
int beacon_context_matches(const char *ctx, apr_size_t ctxlen,
                           const char *path, apr_size_t pathlen);

/* The index of the longest of ctxs[0..n) that matches path (the first of
 * equals), or -1 when none does. */
int beacon_context_best(const beacon_span_t *ctxs, unsigned n,
                        const char *path, apr_size_t pathlen);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_CONTEXT_H */
