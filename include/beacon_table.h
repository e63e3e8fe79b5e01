/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: the lease and replay table (lib/beacon_table.c); all the
 * receiver's steps at once are beacon_receive.h.
 */
#ifndef BEACON_TABLE_H
#define BEACON_TABLE_H

#include "beacon_common.h"

#include <apr_pools.h>
#include <apr_time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Lease and replay table                                              */

typedef enum {
    BEACON_REC_FREE = 0,    /* slot unused */
    BEACON_REC_NEW,         /* accepted, not yet added */
    BEACON_REC_PENDING,     /* add failed; retry after retry_at */
    BEACON_REC_ACTIVE,      /* a member in rotation, lease running */
    BEACON_REC_EVICTED,     /* lease lapsed or leaving: disabled */
    BEACON_REC_NOT_MANAGED  /* the caller declined it: someone else's url */
} beacon_state_t;

/* The state's name for people ("pending add", "not managed"). */
const char *beacon_state_name(beacon_state_t state);

/* What the caller must do to the balancer after an accepted announcement. */
typedef enum {
    BEACON_ACT_NONE = 0,  /* nothing: a leaving from a url never added */
    BEACON_ACT_RENEW,     /* the lease of a member in rotation runs on */
    BEACON_ACT_ADD,       /* create the member; report with added/add_failed */
    BEACON_ACT_ENABLE,    /* back into rotation: it was evicted and is back */
    BEACON_ACT_DISABLE,   /* out of rotation: it announced state=leaving */
    BEACON_ACT_WAIT,      /* an add failed recently; back-off not over */
    BEACON_ACT_NOT_MANAGED /* leave alone: the caller declined this url */
} beacon_action_t;

/* The action's name as beaconctl listen prints it ("add", "renew",
 * "ignore" for NONE). */
const char *beacon_action_name(beacon_action_t action);

typedef struct {
    char url[BEACON_URL_MAX];  /* canonical url, the key */
    beacon_state_t state;
    apr_int64_t high_ts;       /* replay high-water mark; 0 = none yet */
    apr_time_t last_seen;      /* receiver clock at the last acceptance */
    apr_time_t retry_at;       /* PENDING: earliest next add */
    apr_interval_time_t backoff; /* PENDING: the current back-off */
    apr_uint32_t hash;
    apr_int32_t next;          /* bucket chain (or free list), index or -1 */
    apr_int32_t self;          /* its own index: its table is found from it */
    apr_int32_t older, newer;  /* its deadline list, by last_seen; or -1 */
    apr_int32_t list;          /* which deadline list (the table's own) */
} beacon_record_t;

#define BEACON_TABLE_MAX_CAPACITY 65536 /* a larger table is refused */
#define BEACON_BACKOFF_MIN apr_time_from_sec(1)
#define BEACON_BACKOFF_MAX apr_time_from_sec(64)

/* A chain of records by index, oldest last_seen first. */
typedef struct {
    apr_int32_t head, tail;    /* -1 when empty */
} beacon_table_list_t;

#define BEACON_TABLE_LISTS 3   /* in rotation, not, lapsed (beacon_table.c) */

/*
 * A table of a capacity chosen at init, in one block the caller places
 * where it likes (pool, heap): a header, then the records, then the hash
 * buckets (a power of two, at least 2 x capacity). Records are linked by
 * index, never by pointer, so the table may be copied byte for byte
 * (beacon_table_size bytes).
 *
 * Every operation on one record (find, accept, insert, release, a state
 * change) is O(1) at any capacity, and so are the housekeeping calls when
 * nothing is due: the records in use are kept in lists ordered by
 * last_seen, one per deadline rule, so the next deadline is a list's head
 * and a lapse or release takes heads only. (A record whose last_seen is
 * older than its list's newest, after a clock step back or a remembered
 * mark, is placed by a walk from the newest end.)
 */
typedef struct {
    apr_uint32_t capacity;     /* records */
    apr_uint32_t nbuckets;     /* power of two, >= 2 x capacity */
    apr_int32_t free_head;     /* chain of free slots through rec[].next */
    unsigned count;            /* records in use */
    apr_interval_time_t timeout;  /* lease; 0 = never evict */
    apr_interval_time_t max_skew; /* release after > 2 x max_skew of silence */
    beacon_table_list_t lists[BEACON_TABLE_LISTS];
    char service[BEACON_SERVICE_MAX + 1]; /* svc= required; "" = any or none */
    beacon_record_t rec[];     /* capacity of them, then nbuckets heads */
} beacon_table_t;

/* The bytes of a table of capacity records; 0 when capacity is 0 or more
 * than BEACON_TABLE_MAX_CAPACITY (refused). Linear in capacity. */
apr_size_t beacon_table_size(unsigned capacity);

/* Makes the beacon_table_size(capacity) bytes at t an empty table; the
 * bytes may hold anything before. capacity must be one that
 * beacon_table_size accepts. */
void beacon_table_init(beacon_table_t *t, unsigned capacity,
                       apr_interval_time_t timeout,
                       apr_interval_time_t max_skew);

/* An empty table of capacity records in p; NULL when capacity is refused. */
beacon_table_t *beacon_table_make(apr_pool_t *p, unsigned capacity,
                                  apr_interval_time_t timeout,
                                  apr_interval_time_t max_skew);

/* The records the table holds at most. */
unsigned beacon_table_capacity(const beacon_table_t *t);

/* The index of rec in its table (0 to capacity - 1): for arrays that the
 * caller keeps beside the table. */
unsigned beacon_table_index(const beacon_record_t *rec);

/*
 * The service this receiver is (ProxyBeaconService): from now on a
 * datagram must name it in svc=, or it is dropped as BEACON_DROP_WRONG_SERVICE
 * before its url or timestamp touch the table. NULL or "" accepts any
 * datagram, with or without svc=. service must be valid
 * (beacon_service_is_valid).
 */
void beacon_table_set_service(beacon_table_t *t, const char *service);

beacon_record_t *beacon_table_find(beacon_table_t *t, const char *url);

/*
 * Step 8 and the state machine for one verified announcement of canonical
 * url with timestamp ts, received at now. Creates the record if new
 * (BEACON_DROP_TABLE_FULL when all are in use); BEACON_DROP_REPLAYED_TS
 * unless ts > the record's high-water mark. On BEACON_OK the lease is
 * renewed, *rec points to the record and *action says what to do; leaving
 * is non-zero for state=leaving. A NOT_MANAGED record gives
 * BEACON_ACT_NOT_MANAGED (its high-water mark and last_seen advance too,
 * which times its release). state=leaving from a url never
 * added (NEW, PENDING) changes nothing. A url of BEACON_URL_MAX bytes or more
 * gives BEACON_DROP_UNACCEPTABLE_URL.
 */
beacon_reason_t beacon_table_accept(beacon_table_t *t, const char *url,
                                    apr_int64_t ts, int leaving, apr_time_t now,
                                    beacon_record_t **rec,
                                    beacon_action_t *action);

/* Outcome of BEACON_ACT_ADD: ACTIVE, or PENDING with a doubled back-off. */
void beacon_table_added(beacon_record_t *rec);
void beacon_table_add_failed(beacon_record_t *rec, apr_time_t now);
/* The caller will not manage this url (someone else owns it): its later
 * announcements give BEACON_ACT_NOT_MANAGED until the record is released. */
void beacon_table_not_managed(beacon_record_t *rec);

/*
 * Returns the next ACTIVE record whose lease lapsed at now (silent for
 * more than timeout), after marking it EVICTED: the caller takes it out of
 * rotation. Start with *cursor = 0; NULL when there are no more.
 * Never returns anything when timeout is 0.
 */
beacon_record_t *beacon_table_next_lapsed(beacon_table_t *t, apr_time_t now,
                                          unsigned *cursor);

/*
 * Releases the records that are not members in rotation (NEW, PENDING,
 * EVICTED, NOT_MANAGED) once silent for more than 2 x max_skew: by then
 * every datagram they accepted is stale, so dropping the high-water mark
 * admits no replay. Returns how many were released.
 */
unsigned beacon_table_release(beacon_table_t *t, apr_time_t now);

/*
 * The earliest time at which a lease lapses or a record can be released;
 * 0 when nothing is due. (A pending add is retried on the member's next
 * announcement after retry_at, so it sets no deadline.)
 */
apr_time_t beacon_table_next_deadline(const beacon_table_t *t);

/*
 * Adopts an existing beacon member (watchdog hand-off, restart): a record
 * with a fresh lease from now, ACTIVE, or EVICTED when it is disabled,
 * and high_ts as its high-water mark (the last one the caller kept; 0 if
 * none), so that no datagram accepted before is accepted again. Returns
 * BEACON_OK, or BEACON_DROP_TABLE_FULL; an existing record is left as it
 * is.
 */
beacon_reason_t beacon_table_adopt(beacon_table_t *t, const char *url,
                                   int disabled, apr_int64_t high_ts,
                                   apr_time_t now);

/*
 * A url that is no member any more (its slot went to another url) but
 * whose replay mark a new owner must keep (watchdog hand-off, restart): a
 * NEW record with high_ts as its high-water mark and last_seen as its last
 * acceptance, so that it is released 2 x max_skew after that, when every
 * datagram it accepted is stale; its next fresh announcement adds it
 * anew. An existing record only has its mark raised to high_ts. Returns
 * BEACON_OK, or BEACON_DROP_TABLE_FULL.
 */
beacon_reason_t beacon_table_remember(beacon_table_t *t, const char *url,
                                      apr_int64_t high_ts, apr_time_t last_seen);

/*
 * An add failed for want of room that the caller knows frees at ready_at
 * (a member's slot that may be reused then): PENDING until ready_at when
 * that is sooner than the back-off beacon_table_add_failed would give.
 */
void beacon_table_add_deferred(beacon_record_t *rec, apr_time_t now,
                               apr_time_t ready_at);

/*
 * The member url is no longer in the balancer (its place went to another
 * url): its record, if any, is NEW again, so its next announcement adds
 * it anew; the high-water mark stays.
 */
void beacon_table_unlisted(beacon_table_t *t, const char *url);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_TABLE_H */
