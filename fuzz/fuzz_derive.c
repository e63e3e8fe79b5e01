/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: member keys on the receiver (wire format 1.3),
 * beacon_verify_ring() on a ring whose key sets hold masters, with
 * revoked urls, against a reference written out again here.
 *
 * The ring (make_ring):
 *   default  masters A and B (rotation)
 *   shop     its own: a plain key P, masters A and B (a migration)
 *   cart     no keys of its own: the default masters, svc=cart
 *   api      its own: master C only
 *   legacy   its own: a plain key L only (no member keys)
 *   revoked: http://10.0.0.9:8080 in every set, http://10.0.0.6:8080 in
 *   shop only.
 * A is the wire format's test-vector key, so the rows of
 * tests/vectors/member-keys.txt (fuzz/corpus/fuzz_derive/) verify as
 * they are.
 *
 * Each input is verified as it is, and re-signed (the input less any
 * " mac=<16 hex>" tail) under each of: the member keys A, B, C and a
 * master of no set derive for its first svc= and url= bytes, P and L; so
 * that mutations reach the derivation, the canonical check and the
 * fields behind the MAC. Each verdict, with and without a required
 * service (the input's length picks which comes first), is checked:
 *  - never a crash, leak or UB; the reason in range;
 *  - it is the reference's: beacon_verify()'s pre-MAC verdict (steps 1
 *    and 2); the first svc= and url= tokens by a scan of the signed part;
 *    the set they pick by a scan of the ring's names; revoked in that set
 *    or every set by a scan of the ring's revocations (the url
 *    canonicalized); the set's plain keys, each by beacon_verify(); with
 *    masters, a url that is absent or not its own canonical form is url
 *    not canonical, else each master's member key
 *    (beacon_member_key_derive) by beacon_verify(); then step 6 by name;
 *  - revoked, url not canonical and a mac mismatch under masters name
 *    the first tokens' bytes as unverified svc and url, and no other
 *    verdict names any;
 *  - BEACON_OK: out->url and out->svc are the first tokens (the same
 *    pointers); out->url is not revoked; a datagram no plain key of its
 *    set verifies has a canonical out->url, and its MAC is the member key's
 *    a master of the set derives from out->svc (empty if none) and
 *    out->url; out->service is the set svc= names.
 */
#include "fuzz_common.h"

#define REVOKED_EVERY "http://10.0.0.9:8080"
#define REVOKED_SHOP "http://10.0.0.6:8080"

static beacon_ring_t ring;
static beacon_key_t master_a, master_b, master_c, master_x, plain_p, plain_l;

static beacon_key_t key_hex(const char *secret, beacon_key_use_t use)
{
    beacon_key_t k;
    const char *err = beacon_key_parse_as(secret, use, &k);

    FUZZ_CHECK(err == NULL, "fixed key %s: %s", secret, err);
    return k;
}

static void make_ring(void)
{
    beacon_key_t def[2], shop[3];

    master_a = key_hex(FUZZ_HEX_KEY, BEACON_KEY_USE_MASTER);
    master_b = key_hex("hex:0f1e2d3c4b5a69788796a5b4c3d2e1f0",
                       BEACON_KEY_USE_MASTER);
    master_c = key_hex("hex:c0c1c2c3c4c5c6c7c8c9cacbcccdcecf",
                       BEACON_KEY_USE_MASTER);
    master_x = key_hex("hex:5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a",
                       BEACON_KEY_USE_MASTER);
    plain_p = key_hex("hex:ffeeddccbbaa99887766554433221100", BEACON_KEY_USE_MAC);
    plain_l = key_hex("hex:a1a2a3a4a5a6a7a8a9aaabacadaeafb0", BEACON_KEY_USE_MAC);
    def[0] = master_a;
    def[1] = master_b;
    shop[0] = plain_p;
    shop[1] = master_a;
    shop[2] = master_b;

    beacon_ring_init(&ring, def, 2);
    beacon_ring_set_masters(&ring, BEACON_SERVICE_DEFAULT, 3);
    FUZZ_CHECK(beacon_ring_add(&ring, "shop", shop, 3) == NULL, "shop");
    beacon_ring_set_masters(&ring, 0, 6);
    FUZZ_CHECK(beacon_ring_add(&ring, "cart", NULL, 0) == NULL, "cart");
    FUZZ_CHECK(beacon_ring_add(&ring, "api", &master_c, 1) == NULL, "api");
    beacon_ring_set_masters(&ring, 2, 1);
    FUZZ_CHECK(beacon_ring_add(&ring, "legacy", &plain_l, 1) == NULL, "legacy");
    FUZZ_CHECK(beacon_ring_revoke(&ring, BEACON_RING_EVERY_SET,
                                  REVOKED_EVERY) == NULL, "revoke");
    FUZZ_CHECK(beacon_ring_revoke(&ring, 0, REVOKED_SHOP) == NULL, "revoke");
}

/* ------------------------------------------------------------------ */
/* The reference                                                       */

/* The key sets, written out again: index -1 is the default. */
typedef struct {
    const char *name;
    const beacon_key_t *keys[3];
    unsigned nkeys;
    unsigned masters;
} ref_set_t;

static ref_set_t ref_sets[5];

static void make_ref(void)
{
    ref_set_t def = {NULL, {&master_a, &master_b, NULL}, 2, 3};
    ref_set_t shop = {"shop", {&plain_p, &master_a, &master_b}, 3, 6};
    ref_set_t cart = {"cart", {&master_a, &master_b, NULL}, 2, 3};
    ref_set_t api = {"api", {&master_c, NULL, NULL}, 1, 1};
    ref_set_t legacy = {"legacy", {&plain_l, NULL, NULL}, 1, 0};

    ref_sets[0] = def;
    ref_sets[1] = shop;
    ref_sets[2] = cart;
    ref_sets[3] = api;
    ref_sets[4] = legacy;
}

/* The service named s[0..len) by a scan, or -1. */
static int ref_service(const char *s, size_t len)
{
    int i;

    for (i = 1; s != NULL && i < 5; i++) {
        if (strlen(ref_sets[i].name) == len && memcmp(ref_sets[i].name, s, len) == 0) {
            return i - 1;
        }
    }
    return -1;
}

/* The value of the first token key= in buf[6..signed_len): tokens are
 * " key=value", the value up to the next space (a well-framed datagram;
 * for any other bytes, some span inside them). */
static beacon_span_t ref_first(const char *buf, size_t signed_len,
                               const char *key)
{
    size_t klen = strlen(key), i = 6;
    beacon_span_t none = {NULL, 0};

    while (i < signed_len) {
        size_t start = i + 1, end = start;

        while (end < signed_len && buf[end] != ' ') {
            end++;
        }
        if (end - start > klen + 1 && memcmp(buf + start, key, klen) == 0 &&
            buf[start + klen] == '=') {
            beacon_span_t v = {buf + start + klen + 1, end - start - klen - 1};
            return v;
        }
        i = end;
    }
    return none;
}

/* url[0..len) canonicalized into out, or 0. */
static int ref_canonical(const char *url, size_t len, char *out, size_t size)
{
    char *copy;
    const char *err;

    if (url == NULL) {
        return 0;
    }
    copy = fuzz_dup(url, len);
    err = beacon_url_canonicalize(copy, len, out, size);
    free(copy);
    return err == NULL;
}

/* Whether url[0..len) is its own canonical form. */
static int ref_is_canonical(const char *url, size_t len)
{
    char c[BEACON_URL_MAX];

    return ref_canonical(url, len, c, sizeof c) && strlen(c) == len &&
           memcmp(c, url, len) == 0;
}

/* Revoked in set (-1 the default, else a service) or in every set, by a
 * scan of the ring's entries. */
static int ref_revoked(int set, const char *url, size_t len)
{
    char c[BEACON_URL_MAX];

    if (!ref_canonical(url, len, c, sizeof c)) {
        return 0;
    }
    return strcmp(c, REVOKED_EVERY) == 0 ||
           (set == 0 && strcmp(c, REVOKED_SHOP) == 0);
}

typedef struct {
    beacon_reason_t reason;
    beacon_span_t svc, url;  /* the first tokens */
    int set;                 /* -1 or a service */
    int by_plain;            /* BEACON_OK: a plain key verified it */
    int derived_miss;        /* a mismatch after member keys were tried */
    int service;             /* BEACON_OK: out->service */
} ref_t;

static ref_t reference(const char *buf, size_t len, int require)
{
    ref_t ref;
    const ref_set_t *s;
    beacon_datagram_t dg;
    beacon_key_t dummy = plain_l, member;
    beacon_reason_t r;
    size_t signed_len;
    unsigned i;

    memset(&ref, 0, sizeof ref);
    dummy.bytes[0] ^= 0x80;
    ref.set = -1;
    ref.service = BEACON_SERVICE_DEFAULT;
    r = beacon_verify(buf, len, &dummy, FUZZ_NOW, FUZZ_SKEW, &dg);
    if (r == BEACON_DROP_OVERSIZE || r == BEACON_DROP_EMBEDDED_NUL ||
        r == BEACON_DROP_BAD_FRAME) {
        ref.reason = r;
        return ref;
    }
    signed_len = len - MAC_TAIL_LEN;
    ref.svc = ref_first(buf, signed_len, "svc");
    ref.url = ref_first(buf, signed_len, "url");
    ref.set = ref_service(ref.svc.ptr, ref.svc.len);
    if (ref_revoked(ref.set, ref.url.ptr, ref.url.len)) {
        ref.reason = BEACON_DROP_REVOKED;
        return ref;
    }
    s = &ref_sets[ref.set + 1];
    r = BEACON_DROP_MAC_MISMATCH;
    for (i = 0; i < s->nkeys && r == BEACON_DROP_MAC_MISMATCH; i++) {
        if (!((s->masters >> i) & 1)) {
            r = beacon_verify(buf, len, s->keys[i], FUZZ_NOW, FUZZ_SKEW, &dg);
            ref.by_plain = r != BEACON_DROP_MAC_MISMATCH;
        }
    }
    if (r == BEACON_DROP_MAC_MISMATCH && s->masters != 0) {
        if (ref.url.ptr == NULL || !ref_is_canonical(ref.url.ptr, ref.url.len)) {
            ref.reason = BEACON_DROP_URL_NOT_CANONICAL;
            return ref;
        }
        for (i = 0; i < s->nkeys && r == BEACON_DROP_MAC_MISMATCH; i++) {
            if ((s->masters >> i) & 1) {
                FUZZ_CHECK(beacon_member_key_derive(s->keys[i], ref.svc.ptr,
                                                    ref.svc.len, ref.url.ptr,
                                                    ref.url.len, &member) == 0,
                           "derivation refused inside a datagram");
                r = beacon_verify(buf, len, &member, FUZZ_NOW, FUZZ_SKEW, &dg);
            }
        }
        ref.derived_miss = r == BEACON_DROP_MAC_MISMATCH;
    }
    if (r == BEACON_OK) { /* step 6: every datagram's set has services */
        if (dg.svc.ptr == NULL) {
            r = require ? BEACON_DROP_WRONG_SERVICE : BEACON_OK;
        }
        else {
            ref.service = ref_service(dg.svc.ptr, dg.svc.len);
            r = ref.service < 0 ? BEACON_DROP_WRONG_SERVICE : BEACON_OK;
        }
    }
    ref.reason = r;
    return ref;
}

/* ------------------------------------------------------------------ */
/* The checks                                                          */

static int same(const beacon_span_t *a, const beacon_span_t *b)
{
    return a->ptr == b->ptr && a->len == b->len;
}

static void check(const char *buf, size_t len, int require)
{
    beacon_datagram_t dg, again;
    beacon_reason_t got;
    ref_t ref;

    beacon_ring_require_service(&ring, require);
    got = beacon_verify_ring(buf, len, &ring, FUZZ_NOW, FUZZ_SKEW, &dg);
    FUZZ_CHECK((unsigned)got < BEACON_REASON_COUNT, "reason %d", (int)got);
    ref = reference(buf, len, require);
    FUZZ_CHECK(got == ref.reason, "ring %s, reference %s (set %d)",
               beacon_reason_name(got), beacon_reason_name(ref.reason),
               ref.set);
    FUZZ_CHECK(beacon_verify_ring(buf, len, &ring, FUZZ_NOW, FUZZ_SKEW,
                                  &again) == got, "not deterministic");

    if (got == BEACON_DROP_REVOKED || got == BEACON_DROP_URL_NOT_CANONICAL ||
        (got == BEACON_DROP_MAC_MISMATCH && ref.derived_miss)) {
        FUZZ_CHECK(same(&dg.unverified_url, &ref.url) &&
                       same(&dg.unverified_svc, &ref.svc),
                   "%s names other bytes than the first svc= and url=",
                   beacon_reason_name(got));
    }
    else {
        FUZZ_CHECK(dg.unverified_url.ptr == NULL &&
                       dg.unverified_svc.ptr == NULL,
                   "unverified svc or url on %s", beacon_reason_name(got));
    }
    if (got != BEACON_OK) {
        return;
    }
    FUZZ_CHECK(same(&dg.url, &ref.url) && same(&dg.svc, &ref.svc),
               "verified url or svc are not the first tokens");
    FUZZ_CHECK(dg.service == ref.service, "service %d, svc names %d",
               dg.service, ref.service);
    FUZZ_CHECK(!beacon_ring_is_revoked(&ring, dg.service, dg.url.ptr, dg.url.len) &&
                   !ref_revoked(dg.service, dg.url.ptr, dg.url.len),
               "a revoked url verified");
    if (!ref.by_plain) {
        const ref_set_t *s = &ref_sets[dg.service + 1];
        beacon_datagram_t dm;
        beacon_key_t member;
        unsigned i;
        int matched = 0;

        FUZZ_CHECK(dg.url.ptr != NULL &&
                       ref_is_canonical(dg.url.ptr, dg.url.len) &&
                       beacon_url_is_canonical(dg.url.ptr, dg.url.len),
                   "a member verified with a url not canonical: %.*s",
                   (int)dg.url.len, dg.url.ptr ? dg.url.ptr : "");
        for (i = 0; i < s->nkeys && !matched; i++) {
            if ((s->masters >> i) & 1) {
                FUZZ_CHECK(beacon_member_key_derive(
                               s->keys[i], dg.svc.ptr ? dg.svc.ptr : "",
                               dg.svc.len, dg.url.ptr, dg.url.len,
                               &member) == 0,
                           "derivation refused");
                matched = beacon_verify(buf, len, &member, FUZZ_NOW,
                                        FUZZ_SKEW, &dm) == BEACON_OK;
            }
        }
        FUZZ_CHECK(matched, "BEACON_OK without a member key of its set "
                   "for svc=%.*s url=%.*s", (int)dg.svc.len,
                   dg.svc.ptr ? dg.svc.ptr : "", (int)dg.url.len, dg.url.ptr);
    }
}

static void check_both(const char *buf, size_t len)
{
    char *copy = fuzz_dup(buf, len); /* exact: ASan sees any overread */

    check(copy, len, (int)(len & 1));
    check(copy, len, !(len & 1));
    free(copy);
}

/* The input less a " mac=" tail, signed under key, then checked. */
static void resigned(const char *in, size_t body, const beacon_key_t *key)
{
    size_t len;
    char *dg = fuzz_sign(in, body, key, (int)(body & 2), &len);

    check_both(dg, len);
    free(dg);
}

/* Re-signed under member's key for the input's first svc= and url=
 * (whatever they are: derivation takes any bytes). */
static void resigned_member(const char *in, size_t body,
                            const beacon_key_t *master)
{
    beacon_span_t svc = ref_first(in, body, "svc");
    beacon_span_t url = ref_first(in, body, "url");
    beacon_key_t member;

    if (beacon_member_key_derive(master, svc.ptr, svc.len, url.ptr, url.len,
                                 &member) == 0) {
        resigned(in, body, &member);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    const char *in = (const char *)data;
    size_t body = size;

    if (!ready) {
        make_ring();
        make_ref();
        ready = 1;
    }
    check_both(in, size);

    if (size >= MAC_TAIL_LEN &&
        memcmp(in + size - MAC_TAIL_LEN, " mac=", 5) == 0) {
        body = size - MAC_TAIL_LEN;
    }
    if (body > BEACON_MAX_DATAGRAM) {
        return 0; /* oversize whatever its tag: as it is was enough */
    }
    resigned_member(in, body, &master_a);
    resigned_member(in, body, &master_b);
    resigned_member(in, body, &master_c);
    resigned_member(in, body, &master_x);
    resigned(in, body, &plain_p);
    resigned(in, body, &plain_l);
    return 0;
}
