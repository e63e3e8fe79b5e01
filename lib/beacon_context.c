/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Contexts (wire format 1.2, ctx=): the request paths a member serves,
 * their syntax, the servlet path a request is matched on, and the rule
 * by which a context matches it.
 * Pure functions on caller bytes: no allocation, no state.
 */

#include <string.h>

#include "beacon.h"

static int is_segment_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' ||
           c == '-';
}

/* "." and ".." would make one path name another once a server
 * normalizes it. */
static int is_dot_segment(const char *seg, apr_size_t len)
{
    return (len == 1 && seg[0] == '.') ||
           (len == 2 && seg[0] == '.' && seg[1] == '.');
}

int beacon_context_is_valid(const char *path, apr_size_t len)
{
    apr_size_t i = 0;

    if (len == 0 || len > BEACON_CTX_PATH_MAX || path[0] != '/') {
        return 0;
    }
    if (len == 1) {
        return 1; /* "/" */
    }
    while (i < len) { /* at a '/' */
        apr_size_t start = ++i;

        while (i < len && path[i] != '/') {
            if (!is_segment_char(path[i])) {
                return 0;
            }
            i++;
        }
        /* an empty segment: "//" inside, or a trailing "/" */
        if (i == start || is_dot_segment(path + start, i - start)) {
            return 0;
        }
    }
    return 1;
}

int beacon_ctx_parse(const char *value, apr_size_t len,
                     beacon_span_t paths[BEACON_CTX_MAX_PATHS])
{
    apr_size_t start = 0, i;
    int n = 0;

    if (value == NULL) {
        return -1;
    }
    for (i = 0; i <= len; i++) {
        if (i < len && value[i] != ',') {
            continue;
        }
        if (n == BEACON_CTX_MAX_PATHS ||
            !beacon_context_is_valid(value + start, i - start)) {
            return -1;
        }
        paths[n].ptr = value + start;
        paths[n++].len = i - start;
        start = i + 1;
    }
    return n;
}

unsigned beacon_datagram_contexts(const beacon_datagram_t *dg,
                                  beacon_span_t paths[BEACON_CTX_MAX_PATHS])
{
    int n;

    if (dg->ctx.ptr == NULL) {
        return 0;
    }
    n = beacon_ctx_parse(dg->ctx.ptr, dg->ctx.len, paths);
    return n > 0 ? (unsigned)n : 0; /* verified: never -1 */
}

apr_ssize_t beacon_servlet_path(const char *path, apr_size_t len, char *out)
{
    apr_size_t i = 1, w = 1;

    if (len == 0 || path[0] != '/') {
        return -1;
    }
    out[0] = '/';
    /* w <= i throughout, and path[i] is read before out[w] is written:
     * out may be path itself */
    while (i < len) {
        if (path[i] == ';') { /* a parameter, up to the segment's end */
            while (i < len && path[i] != '/') {
                i++;
            }
            continue;
        }
        if (out[w - 1] == '/') { /* at a segment's start */
            apr_size_t dots = 0;

            if (path[i] == '/') {
                i++;
                continue;
            }
            while (dots < 2 && i + dots < len && path[i + dots] == '.') {
                dots++;
            }
            /* "." or ".." ends at "/", at ";" (Tomcat reads "..;x" as
             * "..") or at the end */
            if (dots > 0 && (i + dots == len || path[i + dots] == '/' ||
                             path[i + dots] == ';')) {
                if (dots == 2) {
                    if (w == 1) {
                        return -1; /* above the root */
                    }
                    do {
                        w--;
                    } while (out[w - 1] != '/');
                }
                i += dots;
                continue;
            }
        }
        out[w++] = path[i++];
    }
    out[w] = '\0';
    return (apr_ssize_t)w;
}

int beacon_context_matches(const char *ctx, apr_size_t ctxlen,
                           const char *path, apr_size_t pathlen)
{
    if (ctxlen == 0 || pathlen < ctxlen || memcmp(path, ctx, ctxlen) != 0) {
        return 0;
    }
    /* "/" ends in the boundary itself; any other context is followed by
     * the end of the path or a segment. Not by ";": the path is a servlet
     * path (beacon_servlet_path), and one written with a parameter,
     * "/shop;x/admin", would be matched by "/shop" where <Location
     * /shop/admin> does not see it. */
    return ctxlen == 1 || pathlen == ctxlen || path[ctxlen] == '/';
}

int beacon_context_best(const beacon_span_t *ctxs, unsigned n,
                        const char *path, apr_size_t pathlen)
{
    int best = -1;
    unsigned i;

    for (i = 0; i < n; i++) {
        if ((best < 0 || ctxs[i].len > ctxs[best].len) &&
            beacon_context_matches(ctxs[i].ptr, ctxs[i].len, path, pathlen)) {
            best = (int)i;
        }
    }
    return best;
}
