/* Licensed under the Apache License, Version 2.0; see LICENSE. */

// Allow-lists (contexts=LIST): which contexts a balancer's members may
// claim, and whether two balancers' lists could both claim one. Filled
// at configuration time into the caller's block, then only read; the
// rules are in beacon_allow.h. (Line comments: delegations are "/x/*".)

#include <string.h>

#include "beacon_private.h"

// The base of an entry: all of an exact one, what a delegation's "/*"
// follows ("" for the root's).
static apr_size_t base_len(const beacon_allow_entry_t *e)
{
    return e->delegation ? e->len - 2 : e->len;
}

/* Whether ctx (a valid context) lies strictly under base[0..blen), a
 * valid context or "" for the root: base, then "/", then at least one
 * more byte. */
static int is_under(const char *base, apr_size_t blen, const char *ctx,
                    apr_size_t len)
{
    return len > blen + 1 && memcmp(ctx, base, blen) == 0 && ctx[blen] == '/';
}

static int entry_permits(const beacon_allow_entry_t *e, const char *ctx,
                         apr_size_t len)
{
    if (e->delegation) {
        return is_under(e->text, base_len(e), ctx, len);
    }
    return len == e->len && memcmp(ctx, e->text, len) == 0;
}

/* Checks one entry's text; NULL, or why it is no entry. */
static const char *entry_check(const char *s, apr_size_t len, int *delegation)
{
    const char *star = memchr(s, '*', len);

    if (len == 0) {
        return "an empty entry (a \",\" at an end, or two in a row)";
    }
    if (len > BEACON_CTX_PATH_MAX) {
        return "an entry longer than " BEACON_STR(BEACON_CTX_PATH_MAX) " bytes";
    }
    *delegation = star != NULL;
    if (star != NULL) {
        /* the only "*", the whole last segment; the base a context or "" */
        if (star != s + len - 1 || len < 2 || s[len - 2] != '/') {
            return "\"*\" stands only as a whole last segment, as in /apps/*";
        }
        len -= 2;
        if (len == 0) {
            return NULL; /* the root's delegation */
        }
    }
    // a delegation's base is never "/" ("//*" would hold nothing)
    if (!beacon_context_is_valid(s, len) || (*delegation && len == 1)) {
        return "not a context: \"/\", or segments \"/seg\" of "
               "[A-Za-z0-9._~-], none \".\" or \"..\", no trailing \"/\"";
    }
    return NULL;
}

static int allow_has(const beacon_allow_t *allow, unsigned n, const char *s,
                     apr_size_t len)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (allow->entry[i].len == len && memcmp(allow->entry[i].text, s, len) == 0) {
            return 1;
        }
    }
    return 0;
}

void beacon_allow_init(beacon_allow_t *allow)
{
    allow->n = 0;
}

/* Appends one entry unless it is there already; NULL, or why not. */
static const char *allow_append(beacon_allow_t *allow, const char *s,
                                apr_size_t len)
{
    beacon_allow_entry_t *e;
    int delegation = 0;
    const char *msg = entry_check(s, len, &delegation);

    if (msg != NULL || allow_has(allow, allow->n, s, len)) {
        return msg;
    }
    if (allow->n == BEACON_ALLOW_MAX_ENTRIES) {
        return "more than " BEACON_STR(BEACON_ALLOW_MAX_ENTRIES) " entries";
    }
    e = &allow->entry[allow->n++];
    memcpy(e->text, s, len);
    e->text[len] = '\0';
    e->len = len;
    e->delegation = delegation;
    return NULL;
}

const char *beacon_each_entry(const char *list, apr_size_t len,
                              beacon_entry_fn *add, void *ctx,
                              beacon_span_t *bad)
{
    apr_size_t start = 0, i;

    for (i = 0; i <= len; i++) {
        const char *msg;

        if (i < len && list[i] != ',') {
            continue;
        }
        if ((msg = add(ctx, list + start, i - start)) != NULL) {
            if (bad != NULL) {
                bad->ptr = list + start;
                bad->len = i - start;
            }
            return msg;
        }
        start = i + 1;
    }
    return NULL;
}

static const char *append_to(void *allow, const char *s, apr_size_t len)
{
    return allow_append(allow, s, len);
}

const char *beacon_allow_add(beacon_allow_t *allow, const char *list,
                             apr_size_t len, beacon_span_t *bad)
{
    unsigned before = allow->n;
    const char *msg = beacon_each_entry(list, len, append_to, allow, bad);

    if (msg != NULL) {
        allow->n = before; /* entries past n are never read */
    }
    return msg;
}

int beacon_allow_permits(const beacon_allow_t *allow, const char *ctx,
                         apr_size_t len)
{
    unsigned i;

    if (!beacon_context_is_valid(ctx, len)) {
        return 0;
    }
    for (i = 0; i < allow->n; i++) {
        if (entry_permits(&allow->entry[i], ctx, len)) {
            return 1;
        }
    }
    return 0;
}

int beacon_allow_refused(const beacon_allow_t *allow, const beacon_span_t *paths,
                         unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (!beacon_allow_permits(allow, paths[i].ptr, paths[i].len)) {
            return (int)i;
        }
    }
    return -1;
}

/* Whether some context is permitted by both entries. An exact entry is
 * one context: the other must permit it. Two delegations share one
 * exactly when one's base is the other's or under it (then the deeper
 * base with one more segment is in both; a base is at most
 * BEACON_CTX_PATH_MAX - 2 bytes, so that context is valid). */
static int entries_overlap(const beacon_allow_entry_t *a,
                           const beacon_allow_entry_t *b)
{
    const beacon_allow_entry_t *outer, *inner;

    if (!a->delegation) {
        return entry_permits(b, a->text, a->len);
    }
    if (!b->delegation) {
        return entry_permits(a, b->text, b->len);
    }
    outer = base_len(a) <= base_len(b) ? a : b;
    inner = outer == a ? b : a;
    return base_len(outer) == base_len(inner)
               ? memcmp(outer->text, inner->text, base_len(inner)) == 0
               : memcmp(outer->text, inner->text, base_len(outer)) == 0 &&
                     inner->text[base_len(outer)] == '/';
}

int beacon_allow_conflict(const beacon_allow_t *a, const beacon_allow_t *b,
                          unsigned *ia, unsigned *ib)
{
    unsigned i, j;

    for (i = 0; i < a->n; i++) {
        for (j = 0; j < b->n; j++) {
            if (entries_overlap(&a->entry[i], &b->entry[j])) {
                if (ia != NULL) {
                    *ia = i;
                }
                if (ib != NULL) {
                    *ib = j;
                }
                return 1;
            }
        }
    }
    return 0;
}
