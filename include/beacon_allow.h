/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: a balancer's allow-list of contexts (contexts=;
 * lib/beacon_allow.c).
 */
#ifndef BEACON_ALLOW_H
#define BEACON_ALLOW_H

#include "beacon_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Allow-lists (contexts=LIST of ProxyBeaconBalancer)                  */

// (Line comments here: a delegation is written with "/" and "*", which
// a block comment cannot hold.)
//
// The contexts a balancer's members may claim: "/shop,/apps/*,/".
// Entries are separated by "," (no spaces), each at most
// BEACON_CTX_PATH_MAX bytes, at most BEACON_ALLOW_MAX_ENTRIES of them
// (a repeated entry counts once):
//
//   /shop     exactly the context /shop (beacon_context_is_valid)
//   /apps/*   a delegation: any context strictly under /apps (/apps/x,
//             /apps/x/y), never /apps itself
//   /*        any context but "/": "/" is allowed only when named, so
//             that no delegation hands out the catch-all by accident
//   /         exactly "/"
//
// "*" stands only as a whole last segment: "/apps*", "/a/*/b", "*" and
// "/a/**" are refused, and so is "//*" (the root's delegation is "/*"). A plain block with no pointers: the caller places
// it where it likes (a configuration pool) and may copy it.
#define BEACON_ALLOW_MAX_ENTRIES 64

typedef struct {
    char text[BEACON_CTX_PATH_MAX + 1]; /* as written, NUL-terminated */
    apr_size_t len;                     /* of text */
    int delegation;                     /* a delegation: text is BASE + "/" + "*" */
} beacon_allow_entry_t;

typedef struct {
    unsigned n;
    beacon_allow_entry_t entry[BEACON_ALLOW_MAX_ENTRIES];
} beacon_allow_t;

/* An empty list: it permits nothing. */
void beacon_allow_init(beacon_allow_t *allow);

/*
 * Adds the entries of list[0..len) to allow (a second contexts= adds to
 * the first). Returns NULL, or a static message for the first bad entry
 * (an empty one, one that is neither a context nor a delegation, a
 * misplaced "*", one past BEACON_ALLOW_MAX_ENTRIES), with *bad (when not
 * NULL) its span in list; allow is then as it was before the call:
 * nothing half-applied.
 */
const char *beacon_allow_add(beacon_allow_t *allow, const char *list,
                             apr_size_t len, beacon_span_t *bad);

/* Whether the context ctx[0..len) lies in allow: an entry names it, or a
 * delegation holds it. 0 for what is not a valid context. */
int beacon_allow_permits(const beacon_allow_t *allow, const char *ctx,
                         apr_size_t len);

/* The index of the first of paths[0..n) that allow does not permit, or
 * -1 when it permits them all: a datagram is applied whole or dropped
 * whole (context not allowed). */
int beacon_allow_refused(const beacon_allow_t *allow, const beacon_span_t *paths,
                         unsigned n);

// Two balancers of one virtual host may not both be allowed one same
// context: its route would depend on which member spoke last. Contexts
// strictly nested in each other are different contexts, and the longest
// match decides a request, so those coexist. "Strictly nested" for a
// delegation: what it holds lies below its base, not at it, so it
// conflicts with an entry only where both hold one same context.
//
//   /shop    and /shop         conflict (the same context)
//   /shop    and /shop/admin   coexist (nested: /shop/admin/x goes to the
//                              second, /shop/x to the first)
//   /apps/*  and /apps/x       conflict (the delegation holds /apps/x)
//   /apps/*  and /apps         coexist (/apps is not under /apps)
//   /apps/*  and /apps/x/*     conflict (both hold /apps/x/y)
//   /apps/*  and /shop/*       coexist
//   /*       and /shop         conflict
//   /*       and /             coexist ("/" is not under "/")
//
// Returns 1 with *ia and *ib (when not NULL) the first conflicting pair,
// a's entry first, so that the error can name both; 0 when a and b
// coexist.
int beacon_allow_conflict(const beacon_allow_t *a, const beacon_allow_t *b,
                          unsigned *ia, unsigned *ib);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_ALLOW_H */
