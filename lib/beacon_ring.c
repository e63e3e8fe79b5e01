/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The key ring of a receiver with many services (wire format 1.2, key
 * selection): the default keys and each service's own. Filled at
 * configuration time; on the datagram path only read, by a hash lookup
 * of the svc= bytes, so that a datagram costs the same however many
 * services there are. Verification itself is beacon_wire.c's.
 */

#include <string.h>

#include "beacon.h"

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

/* Whether the key sets of a and b (indexes or -1) have a key in common. */
static int share(const beacon_ring_t *ring, int a, int b)
{
    unsigned na, nb, i, j;
    const beacon_key_t *ka = beacon_ring_keys(ring, a, &na);
    const beacon_key_t *kb = beacon_ring_keys(ring, b, &nb);

    for (i = 0; i < na; i++) {
        for (j = 0; j < nb; j++) {
            if (memcmp(&ka[i], &kb[j], sizeof(ka[i])) == 0) {
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
