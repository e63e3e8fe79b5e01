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
    unsigned masters;        /* bit i: keys[i] is a master (derive:) */
    apr_uint32_t hash;
    apr_int16_t next;        /* bucket chain, index or -1 */
} beacon_ring_service_t;

/* A revoked member url (canonical) and the key set it is revoked in. */
#define BEACON_RING_MAX_REVOKED 256
#define BEACON_RING_EVERY_SET (-2) /* revoked whatever svc= says */
typedef struct {
    char url[BEACON_URL_MAX];
    apr_size_t len;
    int set;                 /* a service, BEACON_SERVICE_DEFAULT or
                              * BEACON_RING_EVERY_SET */
    apr_uint32_t hash;
    apr_int16_t next;        /* bucket chain, index or -1 */
} beacon_ring_revoked_t;

/*
 * What a receiver verifies with (wire format 1.2, key selection; 1.3,
 * member keys): the default keys (ProxyBeaconSecret) and its services,
 * each with a name and optionally keys of its own, any of which may be a
 * master; and the revoked member urls. Filled at configuration time, then
 * only read; a plain block (no pointers), the caller places it where it
 * likes.
 */
typedef struct {
    beacon_key_t keys[BEACON_MAX_KEYS]; /* the default keys */
    unsigned nkeys;
    unsigned masters;        /* bit i: keys[i] is a master (derive:) */
    int require_svc;         /* with services: no svc= is a wrong service */
    unsigned nservices;
    apr_int16_t bucket[BEACON_RING_BUCKETS];
    beacon_ring_service_t service[BEACON_RING_MAX_SERVICES];
    unsigned nrevoked;
    apr_int16_t revoked_bucket[BEACON_RING_BUCKETS];
    beacon_ring_revoked_t revoked[BEACON_RING_MAX_REVOKED];
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

/*
 * Makes the keys of set (a service's index, or BEACON_SERVICE_DEFAULT:
 * the default keys) whose bit is set in masters masters (wire format 1.3):
 * a datagram is verified with the member key each derives for the svc=
 * and url= it carries (beacon_member_key_derive), and refused as
 * BEACON_DROP_URL_NOT_CANONICAL before any derivation when its url= is
 * missing or not canonical (beacon_url_is_canonical). The other keys of
 * the set verify as keys do (a migration may hold both). A set without
 * keys of its own takes no masters: set the default keys'.
 */
void beacon_ring_set_masters(beacon_ring_t *ring, int set, unsigned masters);

/*
 * Revokes the member url (any form beacon_url_canonicalize takes) in set
 * (a service's index, BEACON_SERVICE_DEFAULT, or BEACON_RING_EVERY_SET):
 * its datagrams are BEACON_DROP_REVOKED, before the MAC. Returns NULL, or
 * a static message: a url that is no member's, a set the ring does not
 * have, more than BEACON_RING_MAX_REVOKED. Revoking twice is no error.
 */
const char *beacon_ring_revoke(beacon_ring_t *ring, int set, const char *url);

/* Whether url[0..len) (canonicalized first) is revoked in set (as
 * beacon_ring_revoke takes it, BEACON_RING_EVERY_SET aside): revoked in
 * set or in every set. Costs nothing on a ring without revocations. */
int beacon_ring_is_revoked(const beacon_ring_t *ring, int set, const char *url,
                           apr_size_t len);

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
 * beacon_ring_require_service, it has none of its own. A master that is
 * a master in both is not shared: the member keys it gives differ by
 * service; one that is a plain key in the other is (its holders mint
 * every member key). 1 with *a < *b set to the first such pair, or 0.
 */
int beacon_ring_shared_key(const beacon_ring_t *ring, int *a, int *b);

/*
 * beacon_verify with key selection: after the frame check, the bytes of
 * the first svc= and url= tokens, unparsed and untrusted, pick the key set
 * (beacon_ring_keys of the service svc= names; the default keys when it
 * names none, or there is no svc=) and say whether the url is revoked
 * (BEACON_DROP_REVOKED). Only that set is tried: one MAC per key of it,
 * and per master one derivation and its MAC (beacon_ring_set_masters),
 * however many services the ring has. Then steps 4 and 5 as
 * beacon_verify, and step 6: on a ring with services, an svc= that names
 * none of them, or no svc= under beacon_ring_require_service, is
 * BEACON_DROP_WRONG_SERVICE. On BEACON_OK out->service is the index of
 * the service svc= names, or BEACON_SERVICE_DEFAULT; a datagram a member
 * key verified has out->svc and out->url the very bytes it was derived
 * for (any second svc= or url= is a duplicate field).
 */
beacon_reason_t beacon_verify_ring(const char *buf, apr_size_t len,
                                   const beacon_ring_t *ring, apr_time_t now,
                                   apr_interval_time_t max_skew,
                                   beacon_datagram_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_RING_H */
