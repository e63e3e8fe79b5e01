/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The key ring of a receiver with many services (wire format 1.2, key
 * selection; 1.3, member keys): the default keys and each service's own,
 * masters among them, and the revoked member urls. Filled at
 * configuration time; on the datagram path only read, by hash lookups of
 * the svc= and url= bytes, so that a datagram costs the same however
 * many services and revocations there are. The steps of verification
 * are beacon_wire.c's; which keys, and in which order, is decided here.
 */

#include <string.h>

#include "beacon.h"
#include "beacon_private.h"

#define NO_INDEX (-1)

static apr_uint32_t name_hash(const char *name, apr_size_t len)
{
    apr_uint32_t h = 2166136261u; /* FNV-1a */
    apr_size_t i;

    for (i = 0; i < len; i++) {
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    }
    return h;
}

static unsigned capped(unsigned nkeys)
{
    return nkeys < BEACON_MAX_KEYS ? nkeys : BEACON_MAX_KEYS;
}

void beacon_ring_init(beacon_ring_t *ring, const beacon_key_t *keys,
                      unsigned nkeys)
{
    int i;

    memset(ring, 0, sizeof(*ring));
    ring->nkeys = keys ? capped(nkeys) : 0;
    if (ring->nkeys > 0) {
        memcpy(ring->keys, keys, ring->nkeys * sizeof(*keys));
    }
    for (i = 0; i < BEACON_RING_BUCKETS; i++) {
        ring->bucket[i] = NO_INDEX;
        ring->revoked_bucket[i] = NO_INDEX;
    }
}

void beacon_ring_require_service(beacon_ring_t *ring, int required)
{
    ring->require_svc = required != 0;
}

int beacon_ring_find(const beacon_ring_t *ring, const char *name,
                     apr_size_t len)
{
    apr_uint32_t hash;
    apr_int16_t i;

    if (name == NULL || len == 0 || len > BEACON_SERVICE_MAX) {
        return -1;
    }
    hash = name_hash(name, len);
    for (i = ring->bucket[hash & (BEACON_RING_BUCKETS - 1)]; i != NO_INDEX;
         i = ring->service[i].next) {
        const beacon_ring_service_t *s = &ring->service[i];

        if (s->hash == hash && s->len == len && memcmp(s->name, name, len) == 0) {
            return i;
        }
    }
    return -1;
}

const char *beacon_ring_add(beacon_ring_t *ring, const char *name,
                            const beacon_key_t *keys, unsigned nkeys)
{
    beacon_ring_service_t *s;
    apr_int16_t *head;

    if (!beacon_service_is_valid(name)) {
        return "a service is 1 to 63 of the characters A-Z a-z 0-9 . _ -";
    }
    if (nkeys > BEACON_MAX_KEYS) {
        return "a service has at most 4 keys";
    }
    if (ring->nservices == BEACON_RING_MAX_SERVICES) {
        return "a receiver has at most 256 services";
    }
    if (beacon_ring_find(ring, name, strlen(name)) >= 0) {
        return "the service is in the ring already";
    }
    s = &ring->service[ring->nservices];
    s->len = strlen(name);
    memcpy(s->name, name, s->len + 1);
    s->nkeys = keys ? nkeys : 0;
    if (s->nkeys > 0) {
        memcpy(s->keys, keys, s->nkeys * sizeof(*keys));
    }
    s->hash = name_hash(s->name, s->len);
    head = &ring->bucket[s->hash & (BEACON_RING_BUCKETS - 1)];
    s->next = *head;
    *head = (apr_int16_t)ring->nservices++;
    return NULL;
}

const beacon_key_t *beacon_ring_keys(const beacon_ring_t *ring, int service,
                                     unsigned *nkeys)
{
    const beacon_ring_service_t *s;

    if (service < 0 || (unsigned)service >= ring->nservices ||
        ring->service[service].nkeys == 0) {
        *nkeys = ring->nkeys;
        return ring->keys;
    }
    s = &ring->service[service];
    *nkeys = s->nkeys;
    return s->keys;
}

/* The masters mask of the keys beacon_ring_keys gives for set. */
static unsigned masters_of(const beacon_ring_t *ring, int set)
{
    if (set < 0 || (unsigned)set >= ring->nservices ||
        ring->service[set].nkeys == 0) {
        return ring->masters;
    }
    return ring->service[set].masters;
}

static int is_master(unsigned masters, unsigned i)
{
    return ((masters >> i) & 1u) != 0;
}

/* Whether the key sets of a and b (indexes or -1) have a key in common:
 * the same bytes, but for a master in both (its member keys name the
 * service). */
static int share(const beacon_ring_t *ring, int a, int b)
{
    unsigned na, nb, i, j;
    const beacon_key_t *ka = beacon_ring_keys(ring, a, &na);
    const beacon_key_t *kb = beacon_ring_keys(ring, b, &nb);
    unsigned ma = masters_of(ring, a), mb = masters_of(ring, b);

    for (i = 0; i < na; i++) {
        for (j = 0; j < nb; j++) {
            if (memcmp(&ka[i], &kb[j], sizeof(ka[i])) == 0 &&
                !(is_master(ma, i) && is_master(mb, j))) {
                return 1;
            }
        }
    }
    return 0;
}

int beacon_ring_shared_key(const beacon_ring_t *ring, int *a, int *b)
{
    int i, j, n = (int)ring->nservices;

    /* quadratic, but at configuration time only */
    for (i = -1; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            /* a service without keys of its own uses the default ones
             * by configuration: a shared secret only when datagrams
             * without svc= go somewhere too (not require_svc) */
            if ((i >= 0 || ring->service[j].nkeys > 0 || !ring->require_svc) &&
                share(ring, i, j)) {
                *a = i;
                *b = j;
                return 1;
            }
        }
    }
    return 0;
}

void beacon_ring_set_masters(beacon_ring_t *ring, int set, unsigned masters)
{
    unsigned all = (1u << BEACON_MAX_KEYS) - 1;

    if (set == BEACON_SERVICE_DEFAULT) {
        ring->masters = masters & all;
    }
    else if (set >= 0 && (unsigned)set < ring->nservices) {
        ring->service[set].masters = masters & all;
    }
}

/* ------------------------------------------------------------------ */
/* Revocation                                                          */

static int is_set(const beacon_ring_t *ring, int set)
{
    return set == BEACON_RING_EVERY_SET || set == BEACON_SERVICE_DEFAULT ||
           (set >= 0 && (unsigned)set < ring->nservices);
}

/* The entry of canonical url[0..len) revoked in exactly set, or NULL. */
static const beacon_ring_revoked_t *revoked_entry(const beacon_ring_t *ring,
                                                  int set, const char *url,
                                                  apr_size_t len)
{
    apr_uint32_t hash = name_hash(url, len);
    apr_int16_t i;

    for (i = ring->revoked_bucket[hash & (BEACON_RING_BUCKETS - 1)];
         i != NO_INDEX; i = ring->revoked[i].next) {
        const beacon_ring_revoked_t *r = &ring->revoked[i];

        if (r->hash == hash && r->set == set && r->len == len &&
            memcmp(r->url, url, len) == 0) {
            return r;
        }
    }
    return NULL;
}

const char *beacon_ring_revoke(beacon_ring_t *ring, int set, const char *url)
{
    beacon_ring_revoked_t *r;
    apr_int16_t *head;
    char canonical[BEACON_URL_MAX];

    if (!is_set(ring, set)) {
        return "no such service in the ring";
    }
    if (beacon_url_canonicalize(url, strlen(url), canonical,
                                sizeof(canonical)) != NULL) {
        return "not a member url (scheme://host[:port])";
    }
    if (revoked_entry(ring, set, canonical, strlen(canonical)) != NULL) {
        return NULL;
    }
    if (ring->nrevoked == BEACON_RING_MAX_REVOKED) {
        return "a receiver revokes at most " BEACON_STR(BEACON_RING_MAX_REVOKED)
               " urls";
    }
    r = &ring->revoked[ring->nrevoked];
    r->len = strlen(canonical);
    memcpy(r->url, canonical, r->len + 1);
    r->set = set;
    r->hash = name_hash(r->url, r->len);
    head = &ring->revoked_bucket[r->hash & (BEACON_RING_BUCKETS - 1)];
    r->next = *head;
    *head = (apr_int16_t)ring->nrevoked++;
    return NULL;
}

/* Whether the canonical url (NULL: no member url, never revoked) is
 * revoked in set or in every set. */
static int canonical_is_revoked(const beacon_ring_t *ring, int set,
                                const char *canonical)
{
    apr_size_t len;

    if (ring->nrevoked == 0 || canonical == NULL) {
        return 0; /* a url that is no member's is refused after the MAC */
    }
    len = strlen(canonical);
    return revoked_entry(ring, BEACON_RING_EVERY_SET, canonical, len) != NULL ||
           revoked_entry(ring, set, canonical, len) != NULL;
}

/* The canonical form of url[0..len) into out, or NULL when it is no
 * member's url (or absent). */
static const char *canonical_of(const char *url, apr_size_t len,
                                char out[BEACON_URL_MAX])
{
    return url != NULL && beacon_url_canonicalize(url, len, out,
                                                  BEACON_URL_MAX) == NULL
               ? out
               : NULL;
}

int beacon_ring_is_revoked(const beacon_ring_t *ring, int set, const char *url,
                           apr_size_t len)
{
    char out[BEACON_URL_MAX];

    return ring->nrevoked > 0 &&
           canonical_is_revoked(ring, set, canonical_of(url, len, out));
}

/* ------------------------------------------------------------------ */
/* Verification                                                        */

/*
 * Step 3 under the key set keys[0..nkeys) with masters: the keys first,
 * one MAC each, then, for a canonical url only (url_canonical), each
 * master's member key for svc and url.
 */
static beacon_reason_t set_matches(const char *buf, apr_size_t signed_len,
                                   const beacon_key_t *keys, unsigned nkeys,
                                   unsigned masters, const beacon_span_t *svc,
                                   const beacon_span_t *url, int url_canonical,
                                   int *by_member_key)
{
    beacon_key_t member;
    unsigned i;
    int matched = 0;

    for (i = 0; i < nkeys && i < BEACON_MAX_KEYS; i++) {
        if (!is_master(masters, i) && beacon_mac_matches(buf, signed_len, &keys[i])) {
            return BEACON_OK;
        }
    }
    if (masters == 0) {
        return BEACON_DROP_MAC_MISMATCH;
    }
    if (!url_canonical) {
        return BEACON_DROP_URL_NOT_CANONICAL;
    }
    for (i = 0; !matched && i < nkeys && i < BEACON_MAX_KEYS; i++) {
        matched = is_master(masters, i) &&
                  beacon_member_key_derive(&keys[i], svc->ptr, svc->len,
                                           url->ptr, url->len, &member) == 0 &&
                  beacon_mac_matches(buf, signed_len, &member);
    }
    beacon_key_wipe(&member);
    *by_member_key = matched;
    return matched ? BEACON_OK : BEACON_DROP_MAC_MISMATCH;
}

/* Whether canonical (NULL: none) is url's bytes exactly: a url already in
 * canonical form (beacon_url_is_canonical's answer, from one
 * canonicalization). */
static int is_these_bytes(const char *canonical, const beacon_span_t *url)
{
    return canonical != NULL && strlen(canonical) == url->len &&
           memcmp(canonical, url->ptr, url->len) == 0;
}

/* Step 6 on a ring: which service a verified datagram is for. */
static beacon_reason_t ring_service(const beacon_ring_t *ring,
                                    beacon_datagram_t *out)
{
    if (ring->nservices == 0) {
        return BEACON_OK; /* svc= is read, not required: the default */
    }
    if (out->svc.ptr == NULL) {
        return ring->require_svc ? BEACON_DROP_WRONG_SERVICE : BEACON_OK;
    }
    out->service = beacon_ring_find(ring, out->svc.ptr, out->svc.len);
    if (out->service < 0) {
        out->service = BEACON_SERVICE_DEFAULT;
        return BEACON_DROP_WRONG_SERVICE;
    }
    return BEACON_OK;
}

beacon_reason_t beacon_verify_ring(const char *buf, apr_size_t len,
                                   const beacon_ring_t *ring, apr_time_t now,
                                   apr_interval_time_t max_skew,
                                   beacon_datagram_t *out)
{
    apr_size_t signed_len;
    const beacon_key_t *keys;
    unsigned nkeys, masters;
    int set, by_member_key = 0;
    beacon_span_t svc, url;
    char buf_canonical[BEACON_URL_MAX];
    const char *canonical = NULL;
    beacon_reason_t reason = beacon_check_frame(buf, len, &signed_len, out);

    if (reason != BEACON_OK) {
        return reason;
    }
    /* unknown or absent: the default keys, so a stranger's drop is a mac
     * mismatch like any forgery, and wrong service only after the MAC */
    beacon_first_tokens(buf, signed_len, &svc, &url);
    set = beacon_ring_find(ring, svc.ptr, svc.len);
    keys = beacon_ring_keys(ring, set, &nkeys);
    masters = masters_of(ring, set) & ((1u << nkeys) - 1); /* keys it has */
    if (masters != 0 || ring->nrevoked > 0) {
        /* once, for both: a ring of plain keys only pays nothing here */
        canonical = canonical_of(url.ptr, url.len, buf_canonical);
    }
    reason = canonical_is_revoked(ring, set, canonical)
                 ? BEACON_DROP_REVOKED
                 : set_matches(buf, signed_len, keys, nkeys, masters, &svc,
                               &url, is_these_bytes(canonical, &url),
                               &by_member_key);
    if (reason == BEACON_OK) {
        reason = beacon_check_fields(buf, signed_len, now, max_skew, out);
        /* out->url is url (a second url= is a duplicate field) */
        out->url_is_canonical = by_member_key && out->url.ptr == url.ptr;
        return reason == BEACON_OK ? ring_service(ring, out) : reason;
    }
    if (reason != BEACON_DROP_MAC_MISMATCH || masters != 0) {
        /* a drop for the url, or under member keys: what it claimed */
        out->unverified_svc = svc;
        out->unverified_url = url;
    }
    return reason;
}
