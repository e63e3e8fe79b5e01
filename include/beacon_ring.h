/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: the key ring, a receiver's services and their keys
 * (lib/beacon_ring.c).
 */
#ifndef BEACON_RING_H
#define BEACON_RING_H

#include "beacon_common.h"
#include "beacon_key.h"
#include "beacon_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Key ring: one receiver, many services, each with keys of its own    */

#define BEACON_RING_MAX_SERVICES 256
#define BEACON_RING_BUCKETS 512  /* power of two, 2 x services */

typedef struct {
    char name[BEACON_SERVICE_MAX + 1];
    apr_size_t len;
    beacon_key_t keys[BEACON_MAX_KEYS];
    unsigned nkeys;          /* 0: the ring's default keys */
    apr_uint32_t hash;
    apr_int16_t next;        /* bucket chain, index or -1 */
} beacon_ring_service_t;

/*
 * What a receiver verifies with (wire format 1.2, key selection): the
 * default keys (ProxyBeaconSecret) and its services, each with a name and
 * optionally keys of its own. Filled at configuration time, then only
 * read; a plain block (no pointers), the caller places it where it likes.
 */
typedef struct {
    beacon_key_t keys[BEACON_MAX_KEYS]; /* the default keys */
    unsigned nkeys;
    int require_svc;         /* with services: no svc= is a wrong service */
    unsigned nservices;
    apr_int16_t bucket[BEACON_RING_BUCKETS];
    beacon_ring_service_t service[BEACON_RING_MAX_SERVICES];
} beacon_ring_t;

/* A ring with the default keys[0..nkeys) (0 to BEACON_MAX_KEYS; with none,
 * only a service's own keys verify anything) and no service. */
void beacon_ring_init(beacon_ring_t *ring, const beacon_key_t *keys,
                      unsigned nkeys);

/*
 * Adds the service name (beacon_service_is_valid) with its own
 * keys[0..nkeys) (0 to BEACON_MAX_KEYS; 0: the default keys verify it).
 * Its index is the number of services added before it. Returns NULL, or a
 * static message: an invalid name, a name already in the ring, too many
 * keys or services.
 */
const char *beacon_ring_add(beacon_ring_t *ring, const char *name,
                            const beacon_key_t *keys, unsigned nkeys);

/* Whether a datagram without svc= is a wrong service on a ring with
 * services (a receiver with no balancer outside its services, or one
 * ProxyBeaconService). Off after beacon_ring_init: such a datagram goes
 * to BEACON_SERVICE_DEFAULT. */
void beacon_ring_require_service(beacon_ring_t *ring, int required);

/* The index of the service named name[0..len) (byte for byte), or -1.
 * A hash lookup: it does not grow with the number of services. */
int beacon_ring_find(const beacon_ring_t *ring, const char *name,
                     apr_size_t len);

/* The keys a datagram for service (an index, or BEACON_SERVICE_DEFAULT)
 * is verified with: its own, or the default ones; *nkeys says how many. */
const beacon_key_t *beacon_ring_keys(const beacon_ring_t *ring, int service,
                                     unsigned *nkeys);

/*
 * Two services that share a key, so that neither is isolated from the
 * other (two without keys of their own share the default ones), or a
 * service that shares a default key with the datagrams without svc=
 * (*a == -1): its own keys hold one, or, unless
 * beacon_ring_require_service, it has none of its own. 1 with *a < *b
 * set to the first such pair, or 0.
 */
int beacon_ring_shared_key(const beacon_ring_t *ring, int *a, int *b);

/*
 * beacon_verify with key selection: after the frame check, the bytes of
 * the first svc= token, unparsed and untrusted, pick the key set
 * (beacon_ring_keys of the service they name; the default keys when they
 * name none, or there is no svc=), and only that set is tried: one MAC per
 * key of it, however many services the ring has. Then steps 4 and 5 as
 * beacon_verify, and step 6: on a ring with services, an svc= that names
 * none of them, or no svc= under beacon_ring_require_service, is
 * BEACON_DROP_WRONG_SERVICE. On BEACON_OK out->service is the index of
 * the service svc= names, or BEACON_SERVICE_DEFAULT.
 */
beacon_reason_t beacon_verify_ring(const char *buf, apr_size_t len,
                                   const beacon_ring_t *ring, apr_time_t now,
                                   apr_interval_time_t max_skew,
                                   beacon_datagram_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_RING_H */
