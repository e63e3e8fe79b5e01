/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Contexts (wire format 1.2, ctx=): the request paths a member serves,
 * their syntax, and the rule by which a context matches a request path.
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

int beacon_context_matches(const char *ctx, apr_size_t ctxlen,
                           const char *path, apr_size_t pathlen)
{
    if (ctxlen == 0 || pathlen < ctxlen || memcmp(path, ctx, ctxlen) != 0) {
        return 0;
    }
    /* "/" ends in the boundary itself; any other context is followed by
     * the end of the path, a segment or a path parameter */
    return ctxlen == 1 || pathlen == ctxlen || path[ctxlen] == '/' ||
           path[ctxlen] == ';';
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
