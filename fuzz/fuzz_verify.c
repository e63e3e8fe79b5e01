/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: the receiver, beacon_verify() and beacon_receive(),
 * on arbitrary bytes, with the wire format's test-vector key and a lease
 * table; beacon_verify_any() (key rotation), and beacon_verify_ring() (key
 * selection by service, wire format 1.2) on a ring of 64 services.
 *
 * Each input is used three ways:
 *  1. as it is, one datagram: almost always a MAC mismatch or earlier drop,
 *     which is the path every forged datagram on the network takes;
 *  2. re-signed: the input less any " mac=<16 hex>" tail, with the correct
 *     tag appended, so that mutations reach the field parser behind the MAC;
 *  3. as a script, one line per step, against one table per input: a line
 *     is a datagram (re-signed as in 2) given to beacon_receive(), or a
 *     command that drives the table's clock and housekeeping:
 *       !tick N   the receiver's clock moves N seconds ahead
 *       !back N   ... or N seconds back (a stepped clock; not below 0)
 *       !fill N   beacon_table_adopt() of N synthetic members (up to 300)
 *       !lapse    beacon_table_next_lapsed(), _release(), _next_deadline()
 *       !capacity N  a new table of N records (1 to 300; 256 until then)
 *       !service NAME  beacon_table_set_service() with the rest of the
 *                 line (empty: none; an invalid name fails closed)
 *     An accepted url's BEACON_ACT_ADD is answered with _added(),
 *     _add_failed() or _not_managed(), chosen by the line's length mod 3.
 *
 * Invariants checked beyond "no crash, leak or UB":
 *  - reasons are in range, deterministic, and follow the wire format's
 *    order (oversize, then NUL, then frame, then MAC); whatever passes
 *    the frame check has at most BEACON_MAX_FIELDS fields;
 *  - bad_field names svc, ctx, route, lbfactor or state on a bad field
 *    and nothing on any other verdict; an accepted svc is a valid service
 *    name, an accepted state one of the three, an accepted ctx 1 to 16
 *    paths inside its span;
 *  - key selection: beacon_verify_ring() gives beacon_verify()'s verdict
 *    under the key set that the first svc= token names (written out again
 *    here, with a scan for the service where the library hashes), then
 *    step 6 of the ring (its service, or wrong service), with and without
 *    a required service;
 *  - a correctly signed datagram is never a MAC mismatch, and one that
 *    passes under the key fails under another key;
 *  - BEACON_OK: every span lies inside the signed part of the buffer, is
 *    non-empty, holds no space; ts is 1-18 digits' worth and fresh;
 *  - a receiver with a service drops a datagram that does not name it as
 *    wrong service, and the table (count, the record's replay mark and
 *    last_seen) is left exactly as it was;
 *  - beacon_receive() agrees with beacon_verify() and the canonical url is
 *    a fixed point of beacon_url_canonicalize(); the record it returns is
 *    that url's, with the datagram's ts as high-water mark;
 *  - the table stays consistent: count, hash chains, the free list, its
 *    deadline lists (linked both ways, in last_seen order, one rule each,
 *    holding every record in use), the next deadline equal to a scan's,
 *    and no deadline in the past after lapse + release.
 */
#include "fuzz_common.h"

#define MAX_LINES 512
#define TS_LIMIT APR_INT64_C(999999999999999999)
#define PASSPHRASE "a-long-random-shared-cluster-secret"

static beacon_key_t key, other;
/* The script's table: BEACON_TABLE_CAPACITY, or what !capacity says. */
#define FUZZ_MAX_CAPACITY 300
static beacon_table_t *table; /* of FUZZ_MAX_CAPACITY's size, made once */

/* The ring: default key `key`; "shop" with `other` of its own, "cart"
 * without keys, then "s0" to "s61", each with a key of its own. */
#define RING_FILLERS 62
static beacon_ring_t ring;
static beacon_key_t filler_keys[RING_FILLERS];

/* The wire format's service rule, written out again on purpose (the
 * library's own is what is under test). */
static int service_is_valid(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > BEACON_SERVICE_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
              s[i] == '-')) {
            return 0;
        }
    }
    return 1;
}

static int span_is(beacon_span_t s, const char *lit)
{
    return s.ptr != NULL && s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

/* An accepted state is one of the three, and ctx lists 1 to 16 paths,
 * each inside the ctx span, starting with '/'. */
static void check_v12_values(const beacon_datagram_t *dg)
{
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    unsigned n, i;

    FUZZ_CHECK(dg->state.ptr == NULL || span_is(dg->state, "leaving") ||
                   span_is(dg->state, "draining") ||
                   span_is(dg->state, "standby"),
               "accepted state=%.*s", (int)dg->state.len, dg->state.ptr);
    n = beacon_datagram_contexts(dg, paths);
    FUZZ_CHECK((n == 0) == (dg->ctx.ptr == NULL) && n <= BEACON_CTX_MAX_PATHS,
               "%u contexts", n);
    for (i = 0; i < n; i++) {
        FUZZ_CHECK(paths[i].ptr >= dg->ctx.ptr &&
                       paths[i].ptr + paths[i].len <= dg->ctx.ptr + dg->ctx.len &&
                       paths[i].len > 0 && paths[i].len <= BEACON_CTX_PATH_MAX &&
                       paths[i].ptr[0] == '/',
                   "context %u out of its span", i);
        FUZZ_CHECK(beacon_context_matches(paths[i].ptr, paths[i].len,
                                          paths[i].ptr, paths[i].len),
                   "a context does not match itself");
    }
}

static void check_span(const char *what, beacon_span_t s, const char *buf,
                       size_t signed_len)
{
    size_t i;

    if (s.ptr == NULL) {
        FUZZ_CHECK(s.len == 0, "absent %s with length %zu", what, s.len);
        return;
    }
    FUZZ_CHECK(s.ptr > buf && s.ptr + s.len <= buf + signed_len,
               "%s span [%td, +%zu) outside the signed part [0, %zu)", what,
               s.ptr - buf, s.len, signed_len);
    FUZZ_CHECK(s.len > 0, "empty %s span", what);
    FUZZ_CHECK(s.ptr[-1] == '=', "%s span does not follow '='", what);
    for (i = 0; i < s.len; i++) {
        FUZZ_CHECK(s.ptr[i] != ' ', "%s span holds a space", what);
    }
}

static void check_datagram(const char *buf, size_t len,
                           const beacon_datagram_t *dg, apr_time_t now)
{
    size_t signed_len;

    FUZZ_CHECK(len >= 6 + MAC_TAIL_LEN && len <= BEACON_MAX_DATAGRAM,
               "BEACON_OK for %zu bytes", len);
    signed_len = len - MAC_TAIL_LEN;
    FUZZ_CHECK(memcmp(buf, "BEACON", 6) == 0, "BEACON_OK without BEACON");
    FUZZ_CHECK(memcmp(buf + signed_len, " mac=", 5) == 0,
               "BEACON_OK without a mac= tail");
    check_span("url", dg->url, buf, signed_len);
    check_span("host", dg->host, buf, signed_len);
    check_span("pid", dg->pid, buf, signed_len);
    check_span("seq", dg->seq, buf, signed_len);
    check_span("state", dg->state, buf, signed_len);
    check_span("svc", dg->svc, buf, signed_len);
    check_span("ctx", dg->ctx, buf, signed_len);
    check_span("route", dg->route, buf, signed_len);
    check_span("lbfactor", dg->lbfactor, buf, signed_len);
    check_v12_values(dg);
    FUZZ_CHECK(dg->svc.ptr == NULL ||
                   service_is_valid(dg->svc.ptr, dg->svc.len),
               "accepted svc=%.*s", (int)dg->svc.len, dg->svc.ptr);
    FUZZ_CHECK(dg->bad_field.ptr == NULL, "bad_field set on BEACON_OK");
    FUZZ_CHECK(dg->ts >= 0 && dg->ts <= TS_LIMIT, "ts %lld out of range",
               (long long)dg->ts);
    FUZZ_CHECK(dg->ts - now <= FUZZ_SKEW && now - dg->ts <= FUZZ_SKEW,
               "ts %lld not fresh at %lld", (long long)dg->ts, (long long)now);
}

/* Past the frame check: at most BEACON_MAX_FIELDS tokens before the mac
 * (one space before each), and bad_field exactly on a bad field. */
static void check_fields(const char *buf, size_t len, beacon_reason_t r,
                         const beacon_datagram_t *dg)
{
    size_t i, fields = 0;

    for (i = 0; i + MAC_TAIL_LEN < len; i++) {
        fields += buf[i] == ' ';
    }
    FUZZ_CHECK(fields <= BEACON_MAX_FIELDS, "%zu fields got past the frame "
               "check: %s", fields, beacon_reason_name(r));
    if (r != BEACON_DROP_BAD_FIELD) {
        FUZZ_CHECK(dg->bad_field.ptr == NULL, "bad_field set on %s",
                   beacon_reason_name(r));
        return;
    }
    FUZZ_CHECK(dg->bad_field.ptr > buf &&
                   dg->bad_field.ptr + dg->bad_field.len + 1 < buf + len &&
                   dg->bad_field.ptr[dg->bad_field.len] == '=' &&
                   ((dg->bad_field.len == 3 &&
                     memcmp(dg->bad_field.ptr, "svc", 3) == 0) ||
                    (dg->bad_field.len == 3 &&
                     memcmp(dg->bad_field.ptr, "ctx", 3) == 0) ||
                    (dg->bad_field.len == 5 &&
                     memcmp(dg->bad_field.ptr, "route", 5) == 0) ||
                    (dg->bad_field.len == 8 &&
                     memcmp(dg->bad_field.ptr, "lbfactor", 8) == 0) ||
                    (dg->bad_field.len == 5 &&
                     memcmp(dg->bad_field.ptr, "state", 5) == 0)),
               "bad field without bad_field naming svc, ctx, route, lbfactor "
               "or state");
}

/* A verdict reached before the MAC is checked (steps 1 and 2). */
static int pre_mac(beacon_reason_t r)
{
    return r == BEACON_DROP_OVERSIZE || r == BEACON_DROP_EMBEDDED_NUL ||
           r == BEACON_DROP_BAD_FRAME;
}

/* Key rotation (beacon_verify_any): the verdict under {other, key} is
 * key's (r) unless key's was a mismatch, and then it is other's (ro). */
static void check_rotation(const char *buf, size_t len, apr_time_t now,
                           beacon_reason_t r, beacon_reason_t ro)
{
#ifdef BEACON_MAX_KEYS
    beacon_key_t both[2];
    beacon_datagram_t dga;
    beacon_reason_t ra, r0;

    both[0] = other;
    both[1] = key;
    ra = beacon_verify_any(buf, len, both, 2, now, FUZZ_SKEW, &dga);
    FUZZ_CHECK(ra == (r == BEACON_DROP_MAC_MISMATCH ? ro : r),
               "verify_any %s, key %s, other %s", beacon_reason_name(ra),
               beacon_reason_name(r), beacon_reason_name(ro));
    if (ra == BEACON_OK) {
        check_datagram(buf, len, &dga, now);
    }
    r0 = beacon_verify_any(buf, len, both, 0, now, FUZZ_SKEW, &dga);
    FUZZ_CHECK(r0 == (pre_mac(r) ? r : BEACON_DROP_MAC_MISMATCH),
               "verify_any with no key: %s", beacon_reason_name(r0));
#else
    (void)buf;
    (void)len;
    (void)now;
    (void)r;
    (void)ro;
#endif
}

/* ------------------------------------------------------------------ */
/* Key selection                                                       */

static void make_ring(void)
{
    char name[8];
    unsigned i;

    beacon_ring_init(&ring, &key, 1);
    FUZZ_CHECK(beacon_ring_add(&ring, "shop", &other, 1) == NULL, "ring shop");
    FUZZ_CHECK(beacon_ring_add(&ring, "cart", NULL, 0) == NULL, "ring cart");
    for (i = 0; i < RING_FILLERS; i++) {
        memset(&filler_keys[i], (int)i + 1, sizeof(filler_keys[i]));
        (void)snprintf(name, sizeof(name), "s%u", i);
        FUZZ_CHECK(beacon_ring_add(&ring, name, &filler_keys[i], 1) == NULL,
                   "ring %s", name);
    }
}

/* The value of the first token whose key is svc in the signed part of a
 * well-framed datagram: the rule written out again (tokens are split at
 * single spaces; the first is BEACON). */
static beacon_span_t first_svc(const char *buf, size_t signed_len)
{
    const char *p = buf + 6, *end = buf + signed_len;
    beacon_span_t none = {NULL, 0};

    while (p < end) {
        const char *tok = p + 1, *next = memchr(tok, ' ', (size_t)(end - tok));

        next = next ? next : end;
        if (next - tok > 4 && memcmp(tok, "svc=", 4) == 0) {
            beacon_span_t v = {tok + 4, (size_t)(next - tok - 4)};
            return v;
        }
        p = next;
    }
    return none;
}

/* The service a name picks, by a scan of the ring (the library hashes):
 * its index, or -1. */
static int ring_index(beacon_span_t name)
{
    unsigned i;

    for (i = 0; name.ptr != NULL && i < ring.nservices; i++) {
        if (ring.service[i].len == name.len &&
            memcmp(ring.service[i].name, name.ptr, name.len) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/*
 * beacon_verify_ring against beacon_verify under the key the svc= bytes
 * select (r under key, ro under other, when those are the one): the same
 * verdict up to the MAC and the fields, then the ring's step 6.
 */
static void check_ring(const char *buf, size_t len, apr_time_t now,
                       beacon_reason_t r, beacon_reason_t ro, int require)
{
    beacon_datagram_t dg, base_dg;
    beacon_reason_t got, base, want;
    const beacon_key_t *k;
    int chosen = -1, named = -1;

    beacon_ring_require_service(&ring, require);
    got = beacon_verify_ring(buf, len, &ring, now, FUZZ_SKEW, &dg);
    if (pre_mac(r)) {
        FUZZ_CHECK(got == r, "ring pre-MAC %s, verify %s",
                   beacon_reason_name(got), beacon_reason_name(r));
        return;
    }
    chosen = ring_index(first_svc(buf, len - MAC_TAIL_LEN));
    if (chosen < 0 || ring.service[chosen].nkeys == 0) {
        k = &key; /* unknown, absent, or cart: the default key */
        base = r;
    }
    else if (chosen == 0) {
        k = &other;
        base = ro;
    }
    else {
        k = &filler_keys[chosen - 2];
        base = beacon_verify(buf, len, k, now, FUZZ_SKEW, &base_dg);
    }
    want = base;
    if (base == BEACON_OK) {
        (void)beacon_verify(buf, len, k, now, FUZZ_SKEW, &base_dg);
        named = ring_index(base_dg.svc);
        if ((base_dg.svc.ptr != NULL && named < 0) ||
            (base_dg.svc.ptr == NULL && require)) {
            want = BEACON_DROP_WRONG_SERVICE;
        }
    }
    FUZZ_CHECK(got == want, "ring %s, want %s (svc picks %d)",
               beacon_reason_name(got), beacon_reason_name(want), chosen);
    if (got == BEACON_OK) {
        check_datagram(buf, len, &dg, now);
        FUZZ_CHECK(dg.service == named, "ring service %d, svc names %d",
                   dg.service, named);
    }
}


static int same_span(const beacon_span_t *a, const beacon_span_t *b)
{
    return a->ptr == b->ptr && a->len == b->len;
}

/* Field by field: the struct has padding, which memcmp would compare. */
static int same_datagram(const beacon_datagram_t *a, const beacon_datagram_t *b)
{
    return same_span(&a->url, &b->url) && same_span(&a->host, &b->host) &&
           same_span(&a->pid, &b->pid) && same_span(&a->seq, &b->seq) &&
           same_span(&a->state, &b->state) && same_span(&a->svc, &b->svc) &&
           same_span(&a->route, &b->route) &&
           same_span(&a->lbfactor, &b->lbfactor) && same_span(&a->ctx, &b->ctx) &&
           same_span(&a->bad_field, &b->bad_field) && a->ts == b->ts &&
           a->service == b->service;
}

/* beacon_verify() with every cross-check; returns its reason. */
static beacon_reason_t verify_checked(const char *buf, size_t len,
                                      apr_time_t now, int correctly_signed)
{
    beacon_datagram_t dg, dg2, dgo;
    beacon_reason_t r, r2, ro;

    r = beacon_verify(buf, len, &key, now, FUZZ_SKEW, &dg);
    FUZZ_CHECK((unsigned)r < BEACON_REASON_COUNT, "reason %d", (int)r);
    FUZZ_CHECK(r != BEACON_DROP_UNACCEPTABLE_URL &&
                   r != BEACON_DROP_REPLAYED_TS &&
                   r != BEACON_DROP_TABLE_FULL &&
                   r != BEACON_DROP_WRONG_SERVICE,
               "beacon_verify gave a receive-step reason: %s",
               beacon_reason_name(r));
    FUZZ_CHECK((r == BEACON_DROP_OVERSIZE) == (len > BEACON_MAX_DATAGRAM),
               "oversize is about length alone: %s for %zu bytes",
               beacon_reason_name(r), len);
    if (len <= BEACON_MAX_DATAGRAM) {
        FUZZ_CHECK((r == BEACON_DROP_EMBEDDED_NUL) ==
                       (memchr(buf, '\0', len) != NULL),
                   "embedded NUL mismatch: %s", beacon_reason_name(r));
    }
    if (correctly_signed) {
        FUZZ_CHECK(r != BEACON_DROP_MAC_MISMATCH,
                   "a correctly signed datagram is a mac mismatch");
    }
    if (!pre_mac(r)) {
        check_fields(buf, len, r, &dg);
    }

    r2 = beacon_verify(buf, len, &key, now, FUZZ_SKEW, &dg2);
    FUZZ_CHECK(r2 == r, "not deterministic: %s then %s", beacon_reason_name(r),
               beacon_reason_name(r2));
    if (r == BEACON_OK) {
        check_datagram(buf, len, &dg, now);
        FUZZ_CHECK(same_datagram(&dg, &dg2), "spans differ on a rerun");
    }

    /* Under another key: the same pre-MAC verdict, and anything that got
     * past the MAC under key is a mismatch under other. */
    ro = beacon_verify(buf, len, &other, now, FUZZ_SKEW, &dgo);
    if (pre_mac(r)) {
        FUZZ_CHECK(ro == r, "pre-MAC verdict depends on the key: %s vs %s",
                   beacon_reason_name(r), beacon_reason_name(ro));
    }
    else if (r != BEACON_DROP_MAC_MISMATCH) {
        FUZZ_CHECK(ro == BEACON_DROP_MAC_MISMATCH,
                   "passes under two keys: %s", beacon_reason_name(ro));
    }

    check_rotation(buf, len, now, r, ro);
    check_ring(buf, len, now, r, ro, (int)(len & 1));
    return r;
}

/* The input less a " mac=" tail, re-signed under key. */
static char *resign(const char *in, size_t len, size_t *outlen)
{
    size_t body = len;
    int upper = 0;

    if (len >= MAC_TAIL_LEN &&
        memcmp(in + len - MAC_TAIL_LEN, " mac=", 5) == 0) {
        size_t i;

        body = len - MAC_TAIL_LEN;
        for (i = body + 5; i < len; i++) {
            upper |= in[i] >= 'A' && in[i] <= 'F';
        }
    }
    return fuzz_sign(in, body, &key, upper, outlen);
}

/* ------------------------------------------------------------------ */
/* The table                                                           */

/* The earliest deadline, by the rule the header states, from every
 * record (the table's own lists are what is under test). */
static apr_time_t deadline_by_scan(void)
{
    apr_time_t best = 0, d;
    unsigned k;

    for (k = 0; k < beacon_table_capacity(table); k++) {
        const beacon_record_t *r = &table->rec[k];

        if (r->state == BEACON_REC_FREE ||
            (r->state == BEACON_REC_ACTIVE && FUZZ_TIMEOUT == 0)) {
            continue;
        }
        d = r->last_seen + 1 +
            (r->state == BEACON_REC_ACTIVE ? FUZZ_TIMEOUT : 2 * FUZZ_SKEW);
        best = best == 0 || d < best ? d : best;
    }
    return best;
}

/* Each deadline list: links both ways, oldest last_seen first, one rule
 * (in rotation or not) per list. Returns the records it holds. */
static unsigned check_list(const beacon_table_list_t *l)
{
    apr_int32_t i, prev = -1;
    unsigned n = 0, cap = beacon_table_capacity(table);
    int active = -1;

    for (i = l->head; i != -1; prev = i, i = table->rec[i].newer) {
        const beacon_record_t *r = &table->rec[i];

        FUZZ_CHECK(i >= 0 && (unsigned)i < cap && ++n <= cap, "list loops");
        FUZZ_CHECK(r->state != BEACON_REC_FREE && r->older == prev,
                   "list link of slot %d", i);
        FUZZ_CHECK(prev == -1 || table->rec[prev].last_seen <= r->last_seen,
                   "slot %d out of last_seen order", i);
        FUZZ_CHECK(active == -1 || active == (r->state == BEACON_REC_ACTIVE),
                   "slot %d (%s) in a list of another rule", i,
                   beacon_state_name(r->state));
        active = r->state == BEACON_REC_ACTIVE;
    }
    FUZZ_CHECK(l->tail == prev, "list tail %d, last %d", l->tail, prev);
    return n;
}

static void check_table(void)
{
    unsigned used = 0, free_len = 0, listed = 0;
    unsigned cap = beacon_table_capacity(table), k;
    apr_int32_t i;

    for (k = 0; k < cap; k++) {
        const beacon_record_t *r = &table->rec[k];

        FUZZ_CHECK(r->state <= BEACON_REC_NOT_MANAGED, "slot %u state %d", k,
                   (int)r->state);
        FUZZ_CHECK(beacon_table_index(r) == k, "slot %u knows itself as %u",
                   k, beacon_table_index(r));
        if (r->state == BEACON_REC_FREE) {
            continue;
        }
        used++;
        FUZZ_CHECK(memchr(r->url, '\0', sizeof(r->url)) != NULL,
                   "slot %u url not terminated", k);
        FUZZ_CHECK(beacon_table_find(table, r->url) == r,
                   "slot %u (%s) not found by its url", k, r->url);
    }
    FUZZ_CHECK(used == table->count, "count %u, slots in use %u", table->count,
               used);
    for (i = table->free_head; i != -1; i = table->rec[i].next) {
        FUZZ_CHECK(i >= 0 && (unsigned)i < cap, "free index %d", i);
        FUZZ_CHECK(table->rec[i].state == BEACON_REC_FREE,
                   "slot %d on the free list in state %d", i,
                   (int)table->rec[i].state);
        FUZZ_CHECK(++free_len <= cap, "free list loops");
    }
    FUZZ_CHECK(free_len + used == cap,
               "free list %u + used %u != capacity", free_len, used);
    for (k = 0; k < BEACON_TABLE_LISTS; k++) {
        listed += check_list(&table->lists[k]);
    }
    FUZZ_CHECK(listed == used, "lists hold %u of %u records", listed, used);
    FUZZ_CHECK(beacon_table_next_deadline(table) == deadline_by_scan(),
               "deadline %lld, by scan %lld",
               (long long)beacon_table_next_deadline(table),
               (long long)deadline_by_scan());
}

/* A command's decimal argument, capped. */
static apr_int64_t arg_of(const char *p, const char *end, apr_int64_t cap)
{
    apr_int64_t n = 0;

    while (p < end && *p == ' ') {
        p++;
    }
    while (p < end && *p >= '0' && *p <= '9' && n <= cap) {
        n = n * 10 + (*p++ - '0');
    }
    return n > cap ? cap : n;
}

static int is_cmd(const char *line, size_t len, const char *cmd)
{
    size_t n = strlen(cmd);

    return len >= n && memcmp(line, cmd, n) == 0;
}

static void lapse(apr_time_t now)
{
    beacon_record_t *r;
    unsigned cursor = 0, evicted = 0;
    apr_time_t deadline;

    while ((r = beacon_table_next_lapsed(table, now, &cursor)) != NULL) {
        FUZZ_CHECK(r->state == BEACON_REC_EVICTED, "lapsed record state %d",
                   (int)r->state);
        FUZZ_CHECK(now - r->last_seen > FUZZ_TIMEOUT,
                   "lease of %s lapsed early", r->url);
        FUZZ_CHECK(++evicted <= beacon_table_capacity(table),
                   "next_lapsed loops");
    }
    (void)beacon_table_release(table, now);
    check_table();
    deadline = beacon_table_next_deadline(table);
    FUZZ_CHECK(deadline == 0 || deadline > now,
               "deadline %lld not after now %lld once lapsed and released",
               (long long)deadline, (long long)now);
}

static void fill(apr_int64_t n, apr_time_t now)
{
    apr_int64_t i;

    for (i = 0; i < n; i++) {
        char url[64];
        unsigned before = table->count;
        beacon_reason_t r;

        (void)snprintf(url, sizeof(url), "http://fill-%lld.example:%lld",
                       (long long)i, (long long)i + 1000);
        r = beacon_table_adopt(table, url, i % 3 == 0, 0, now);
        if (r == BEACON_DROP_TABLE_FULL) {
            FUZZ_CHECK(before == beacon_table_capacity(table) &&
                           beacon_table_find(table, url) == NULL,
                       "table full with %u records", before);
        }
        else {
            FUZZ_CHECK(r == BEACON_OK, "adopt: %s", beacon_reason_name(r));
            FUZZ_CHECK(beacon_table_find(table, url) != NULL,
                       "adopted %s not found", url);
        }
    }
}

/*
 * The action fits the record's state after the transition: a NOT_MANAGED
 * record answers every announcement with BEACON_ACT_NOT_MANAGED (and with
 * nothing else), a renewal or enable leaves an ACTIVE member, a disable an
 * EVICTED one; only a leaving announcement disables or is ignored.
 */
static void check_action(const beacon_event_t *ev, int leaving)
{
    beacon_state_t st = ev->rec->state;

    FUZZ_CHECK((st == BEACON_REC_NOT_MANAGED) ==
                   (ev->action == BEACON_ACT_NOT_MANAGED),
               "state %s with action %s", beacon_state_name(st),
               beacon_action_name(ev->action));
    switch (ev->action) {
    case BEACON_ACT_RENEW:
    case BEACON_ACT_ENABLE:
        FUZZ_CHECK(!leaving && st == BEACON_REC_ACTIVE, "%s leaves %s",
                   beacon_action_name(ev->action), beacon_state_name(st));
        break;
    case BEACON_ACT_DISABLE:
        FUZZ_CHECK(leaving && st == BEACON_REC_EVICTED, "disable leaves %s",
                   beacon_state_name(st));
        break;
    case BEACON_ACT_ADD:
    case BEACON_ACT_WAIT:
        FUZZ_CHECK(!leaving && (st == BEACON_REC_NEW ||
                                st == BEACON_REC_PENDING),
                   "%s in state %s", beacon_action_name(ev->action),
                   beacon_state_name(st));
        break;
    case BEACON_ACT_NONE: /* a leaving from a url not in rotation */
        FUZZ_CHECK(leaving && st != BEACON_REC_ACTIVE &&
                       st != BEACON_REC_NOT_MANAGED,
                   "ignore in state %s", beacon_state_name(st));
        break;
    default:
        break;
    }
}

/* The verdict on a verified datagram with a url, once the table ran. */
static void check_url_verdict(const beacon_datagram_t *dg, beacon_reason_t r,
                              const beacon_event_t *ev, apr_time_t now)
{
    char canon[BEACON_URL_MAX];
    const char *err = beacon_url_canonicalize(dg->url.ptr, dg->url.len, canon,
                                              sizeof(canon));
    beacon_record_t *rec;

    if (err != NULL) {
        FUZZ_CHECK(r == BEACON_DROP_UNACCEPTABLE_URL && ev->url[0] == '\0',
                   "url refused (%s) but receive gave %s", err,
                   beacon_reason_name(r));
        return;
    }
    FUZZ_CHECK(strcmp(ev->url, canon) == 0, "event url %s, canonical %s",
               ev->url, canon);
    fuzz_check_fixed_point(ev->url);
    /* beacon_receive checks the default reach: exactly what it refuses */
    FUZZ_CHECK((r == BEACON_DROP_URL_NOT_ALLOWED) ==
                   (beacon_reach_refusal(NULL, canon, NULL) != NULL),
               "reach verdict %s on %s", beacon_reason_name(r), canon);
    switch (r) {
    case BEACON_DROP_URL_NOT_ALLOWED:
        FUZZ_CHECK(ev->rec == NULL && ev->refusal != NULL &&
                       beacon_table_find(table, ev->url) == NULL,
                   "a refused url reached the table");
        break;
    case BEACON_OK:
        FUZZ_CHECK(ev->rec != NULL && strcmp(ev->rec->url, ev->url) == 0,
                   "record for %s", ev->url);
        FUZZ_CHECK(ev->rec->high_ts == dg->ts && ev->rec->last_seen == now,
                   "record not advanced");
        check_action(ev, beacon_datagram_is_leaving(dg));
        break;
    case BEACON_DROP_REPLAYED_TS:
        rec = beacon_table_find(table, ev->url);
        FUZZ_CHECK(rec != NULL && rec->high_ts >= dg->ts,
                   "replay verdict without a higher mark");
        break;
    case BEACON_DROP_TABLE_FULL:
        FUZZ_CHECK(table->count == beacon_table_capacity(table) &&
                       beacon_table_find(table, ev->url) == NULL,
                   "table full at %u records", table->count);
        break;
    default:
        FUZZ_CHECK(0, "table step gave %s", beacon_reason_name(r));
    }
}

/* What a table knows of one url, to show that a drop changed nothing. */
typedef struct {
    unsigned count;
    int found;
    beacon_record_t rec;
} snapshot_t;

static snapshot_t snapshot(const beacon_datagram_t *dg)
{
    char canon[BEACON_URL_MAX];
    snapshot_t s;
    beacon_record_t *rec = NULL;

    memset(&s, 0, sizeof(s));
    s.count = table->count;
    if (dg->url.ptr != NULL &&
        beacon_url_canonicalize(dg->url.ptr, dg->url.len, canon,
                                sizeof(canon)) == NULL) {
        rec = beacon_table_find(table, canon);
    }
    if (rec != NULL) {
        s.found = 1;
        s.rec = *rec;
    }
    return s;
}

/* Whether the table's service lets a verified datagram in (restated). */
static int is_for_table(const beacon_datagram_t *dg)
{
    size_t n = strlen(table->service);

    return n == 0 || (dg->svc.ptr != NULL && dg->svc.len == n &&
                      memcmp(dg->svc.ptr, table->service, n) == 0);
}

/* Whether two copies of a record say the same, field by field (a memcmp
 * would compare their padding too). */
static int same_record(const beacon_record_t *a, const beacon_record_t *b)
{
    return strcmp(a->url, b->url) == 0 && a->state == b->state &&
           a->high_ts == b->high_ts && a->last_seen == b->last_seen &&
           a->retry_at == b->retry_at && a->backoff == b->backoff &&
           a->hash == b->hash && a->next == b->next;
}

/* A foreign datagram: wrong service, and the table as it was. */
static void check_foreign(const beacon_datagram_t *dg, beacon_reason_t r,
                          const beacon_event_t *ev, const snapshot_t *before)
{
    snapshot_t after = snapshot(dg);

    FUZZ_CHECK(r == BEACON_DROP_WRONG_SERVICE && ev->rec == NULL &&
                   ev->url[0] == '\0',
               "svc not the table's \"%s\", yet %s", table->service,
               beacon_reason_name(r));
    FUZZ_CHECK(after.count == before->count && after.found == before->found &&
                   (!after.found || same_record(&after.rec, &before->rec)),
               "a wrong service changed the table");
}

/* Answers an add as the module would: added, failed or not managed,
 * chosen by the line's length. */
static void answer(beacon_event_t *ev, size_t len, apr_time_t now)
{
    switch (ev->action) {
    case BEACON_ACT_ADD:
        if (len % 3 == 0) {
            beacon_table_added(ev->rec);
            FUZZ_CHECK(ev->rec->state == BEACON_REC_ACTIVE, "added");
        }
        else if (len % 3 == 1) {
            beacon_table_add_failed(ev->rec, now);
            FUZZ_CHECK(ev->rec->state == BEACON_REC_PENDING &&
                           ev->rec->backoff >= BEACON_BACKOFF_MIN &&
                           ev->rec->backoff <= BEACON_BACKOFF_MAX &&
                           ev->rec->retry_at == now + ev->rec->backoff,
                       "add_failed: backoff %lld", (long long)ev->rec->backoff);
        }
        else {
            beacon_table_not_managed(ev->rec);
        }
        break;
    case BEACON_ACT_ENABLE:
        FUZZ_CHECK(ev->rec->state == BEACON_REC_ACTIVE, "enable");
        break;
    case BEACON_ACT_DISABLE:
        FUZZ_CHECK(ev->rec->state == BEACON_REC_EVICTED, "disable");
        break;
    default:
        break;
    }
}

static void receive_line(const char *line, size_t len, apr_time_t now)
{
    beacon_event_t ev;
    beacon_datagram_t dg;
    beacon_reason_t r, rv;
    snapshot_t before;
    size_t dglen;
    char *dgbuf = resign(line, len, &dglen);

    rv = beacon_verify(dgbuf, dglen, &key, now, table->max_skew, &dg);
    memset(&before, 0, sizeof(before));
    if (rv == BEACON_OK) { /* on a drop, dg's spans are not to be read */
        before = snapshot(&dg);
    }
    r = beacon_receive(table, &key, dgbuf, dglen, now, &ev);
    if (rv != BEACON_OK) {
        FUZZ_CHECK(r == rv, "receive %s, verify %s", beacon_reason_name(r),
                   beacon_reason_name(rv));
    }
    else if (!is_for_table(&dg)) {
        check_foreign(&dg, r, &ev, &before);
    }
    else if (dg.url.ptr == NULL) {
        FUZZ_CHECK(r == BEACON_OK && ev.rec == NULL && ev.url[0] == '\0' &&
                       ev.action == BEACON_ACT_NONE,
                   "heartbeat gave %s", beacon_reason_name(r));
    }
    else {
        check_url_verdict(&dg, r, &ev, now);
    }
    if (r == BEACON_OK && ev.rec != NULL) {
        answer(&ev, len, now);
    }
    free(dgbuf);
}

/* "!service NAME": up to 63 bytes of NAME after one space, up to a NUL,
 * as given (an invalid one must make the table fail closed); nothing: no
 * service. */
static void set_service(const char *p, const char *end)
{
    char name[BEACON_SERVICE_MAX + 1];
    size_t n;

    if (p < end && *p == ' ') {
        p++;
    }
    for (n = 0; p + n < end && n < BEACON_SERVICE_MAX && p[n] != '\0'; n++) {
        /* a C string, as a directive argument is */
    }
    memcpy(name, p, n);
    name[n] = '\0';
    beacon_table_set_service(table, name);
    if (n == 0 || service_is_valid(name, n)) {
        FUZZ_CHECK(strcmp(table->service, name) == 0,
                   "service \"%s\" set as \"%s\"", name, table->service);
    }
    else { /* fails closed: some name no datagram can carry */
        n = strlen(table->service);
        FUZZ_CHECK(n > 0 && n <= BEACON_SERVICE_MAX &&
                       !service_is_valid(table->service, n),
                   "invalid service \"%s\" set as \"%s\"", name,
                   table->service);
    }
}

static void run_script(const char *data, size_t size)
{
    const char *p = data, *end = data + size;
    apr_time_t now = FUZZ_NOW;
    int lines = 0;

    beacon_table_init(table, BEACON_TABLE_CAPACITY, FUZZ_TIMEOUT, FUZZ_SKEW);
    while (p < end && lines++ < MAX_LINES) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        size_t len = (size_t)(eol - p);

        if (is_cmd(p, len, "!tick")) {
            now += arg_of(p + 5, eol, APR_INT64_C(10000000)) * APR_USEC_PER_SEC;
        }
        else if (is_cmd(p, len, "!back")) {
            /* Stepped back, but not before the epoch: apr_time_now()
             * never is, and the table's contract assumes as much. */
            now -= arg_of(p + 5, eol, APR_INT64_C(10000000)) * APR_USEC_PER_SEC;
            now = now < 0 ? 0 : now;
        }
        else if (is_cmd(p, len, "!fill")) {
            fill(arg_of(p + 5, eol, 300), now);
            check_table();
        }
        else if (is_cmd(p, len, "!capacity")) {
            /* a new, empty table of 1 to FUZZ_MAX_CAPACITY records */
            apr_int64_t n = arg_of(p + 9, eol, FUZZ_MAX_CAPACITY);

            beacon_table_init(table, n < 1 ? 1 : (unsigned)n, FUZZ_TIMEOUT,
                              FUZZ_SKEW);
            check_table();
        }
        else if (is_cmd(p, len, "!lapse")) {
            lapse(now);
        }
        else if (is_cmd(p, len, "!service")) {
            set_service(p + 8, eol);
        }
        else {
            receive_line(p, len, now);
        }
        p = nl ? nl + 1 : end;
    }
    check_table();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    const char *in = (const char *)data;
    char *dg;
    size_t dglen;

    if (!ready) {
        key = fuzz_key(FUZZ_HEX_KEY);
        other = fuzz_key(PASSPHRASE);
        make_ring();
        table = malloc(beacon_table_size(FUZZ_MAX_CAPACITY));
        FUZZ_CHECK(table != NULL, "table");
        ready = 1;
    }

    /* 1. As it is. */
    (void)verify_checked(in, size, FUZZ_NOW, 0);

    /* 2. Re-signed. */
    dg = resign(in, size, &dglen);
    (void)verify_checked(dg, dglen, FUZZ_NOW, 1);
    free(dg);

    /* 3. As a script against a table-> */
    run_script(in, size);
    return 0;
}
