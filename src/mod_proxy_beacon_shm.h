/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What every child may read: the receivers' records and counters and the
 * senders' counters, written by the child that owns the watchdog and
 * read by the status pages in any child. Anonymous shared memory made in
 * post_config, so that all children of a generation map the same block.
 */
#ifndef MOD_PROXY_BEACON_SHM_H
#define MOD_PROXY_BEACON_SHM_H

#include "mod_proxy_beacon_util.h"

typedef enum {
    BEACON_EV_ACCEPTED,   /* authenticated, fresh, not replayed */
    BEACON_EV_HEARTBEAT,  /* accepted without url */
    BEACON_EV_ADDED,
    BEACON_EV_READOPTED,
    BEACON_EV_ADD_FAILED,
    BEACON_EV_EVICTED,
    BEACON_EV_REENABLED,
    BEACON_EV_LEAVING,
    BEACON_EV_TAKEN_OVER, /* members adopted by a new owner */
    BEACON_EV_RECYCLED,   /* added in a long-gone member's slot */
    BEACON_EV_FORGOTTEN,  /* silent past ProxyBeaconForget */
    BEACON_EV_COUNT
} beacon_event_kind;

/*
 * What a receiver counts as dropped: libbeacon's drop reasons, and two of
 * the adapter's own: a url the balancer holds that beacon did not create
 * (libbeacon only knows that its caller declined the url), and a context
 * the balancer does not let its members claim (libbeacon's allow-list
 * decides; the datagram never reaches the member table).
 */
#define BEACON_DROP_NOT_OURS BEACON_REASON_COUNT
#define BEACON_DROP_CONTEXT_NOT_ALLOWED (BEACON_REASON_COUNT + 1)
#define BEACON_DROP_COUNT (BEACON_REASON_COUNT + 2)

/* The log fragment and the counter key of a drop (libbeacon's for its
 * reasons). */
const char *beacon_shm_drop_name(unsigned drop);
const char *beacon_shm_drop_id(unsigned drop);

typedef struct {
    char url[BEACON_URL_MAX];
    char host[64];            /* as announced: escape before display */
    apr_int64_t pid, seq;     /* -1 when not announced */
    apr_int64_t last_ts;
    apr_time_t last_seen, retry_at;
    apr_int32_t state;        /* beacon_state_t */
    apr_int32_t leaving;      /* its last announcement said state=leaving */
    apr_int32_t lbfactor;     /* the lbfactor it announced, hundredths; 0:
                               * none */
} beacon_status_record;

typedef struct {
    volatile apr_uint32_t generation; /* odd while the owner writes rec[] */
    apr_uint32_t capacity;            /* of rec[]: its balancer's capacity */
    apr_uint32_t nrecords;
    apr_int64_t owner_pid;            /* 0 until a child owns the receiver */
    apr_int32_t listening;
    apr_uint64_t dropped[BEACON_DROP_COUNT];
    apr_uint64_t events[BEACON_EV_COUNT];
    beacon_status_record rec[];       /* capacity of them */
} beacon_receiver_status;

typedef struct {
    volatile apr_uint32_t sent, errors; /* atomic: the owner may change child */
    apr_time_t last_sent;
    apr_int64_t owner_pid;              /* of the child that started last */
    volatile apr_int32_t lbfactor;      /* ProxyBeaconLBFactor auto: the
                                         * last announced, hundredths; 0:
                                         * none yet, or not auto */
} beacon_sender_status;

/* Zeroed anonymous shared memory of size bytes, or NULL (logged). */
void *beacon_shm_create(apr_pool_t *pconf, server_rec *s, apr_size_t size);

/* The bytes of the status memory of capacity records. */
apr_size_t beacon_shm_status_size(unsigned capacity);

/* A receiver's status memory, for capacity records; NULL (logged). */
beacon_receiver_status *beacon_shm_status_create(apr_pool_t *pconf, server_rec *s,
                                                 unsigned capacity);

/*
 * The records go out under a sequence lock: the owner is the only writer
 * and never waits for a reader; a reader that sees an odd or changed
 * generation reads again.
 */
void beacon_shm_status_write_begin(beacon_receiver_status *sh);
void beacon_shm_status_write_end(beacon_receiver_status *sh, apr_uint32_t nrecords);

/* A consistent copy of the owner's records (copy holds sh->capacity);
 * returns how many. */
unsigned beacon_shm_status_read(const beacon_receiver_status *sh,
                                beacon_status_record *copy);

#endif /* MOD_PROXY_BEACON_SHM_H */
