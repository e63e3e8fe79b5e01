/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The lease and replay table: one record per canonical url, in an array
 * linked by index (no pointers inside, no allocation after init), of a
 * capacity chosen at init. The caller passes the clock in and carries out
 * the actions the table returns; the table only decides.
 */

#include <stddef.h>
#include <string.h>

#include "beacon.h"

#define NO_INDEX (-1)

/* The deadline lists: each holds the records of one rule, oldest
 * last_seen at the head, so that the earliest deadline is a head. */
enum {
    LIST_ACTIVE,    /* ACTIVE: the lease lapses timeout after last_seen */
    LIST_IDLE,      /* not in rotation: released 2 x max_skew after it */
    LIST_LAPSED     /* EVICTED by a lapse: the same rule as LIST_IDLE, a
                     * list of its own because lapses come in last_seen
                     * order, which keeps both lists' appends O(1) */
};

static apr_uint32_t url_hash(const char *url)
{
    apr_uint32_t h = 2166136261u; /* FNV-1a */

    while (*url) {
        h = (h ^ (unsigned char)*url++) * 16777619u;
    }
    return h;
}

/* The smallest power of two >= 2 x capacity. */
static apr_uint32_t buckets_for(unsigned capacity)
{
    apr_uint32_t n = 1;

    while (n < 2 * (apr_uint32_t)capacity) {
        n <<= 1;
    }
    return n;
}

apr_size_t beacon_table_size(unsigned capacity)
{
    if (capacity == 0 || capacity > BEACON_TABLE_MAX_CAPACITY) {
        return 0;
    }
    return offsetof(beacon_table_t, rec) +
           (apr_size_t)capacity * sizeof(beacon_record_t) +
           (apr_size_t)buckets_for(capacity) * sizeof(apr_int32_t);
}

unsigned beacon_table_capacity(const beacon_table_t *t)
{
    return t->capacity;
}

unsigned beacon_table_index(const beacon_record_t *rec)
{
    return (unsigned)rec->self;
}

static apr_int32_t *buckets(beacon_table_t *t)
{
    return (apr_int32_t *)(void *)(t->rec + t->capacity);
}

static apr_int32_t *bucket_of(beacon_table_t *t, apr_uint32_t hash)
{
    return &buckets(t)[hash & (t->nbuckets - 1)];
}

/* The table a record is in: records know their own index. */
static beacon_table_t *table_of(beacon_record_t *rec)
{
    return (beacon_table_t *)(void *)((char *)(rec - rec->self) -
                                      offsetof(beacon_table_t, rec));
}

void beacon_table_init(beacon_table_t *t, unsigned capacity,
                       apr_interval_time_t timeout,
                       apr_interval_time_t max_skew)
{
    apr_uint32_t i;

    memset(t, 0, beacon_table_size(capacity));
    t->capacity = capacity;
    t->nbuckets = buckets_for(capacity);
    for (i = 0; i < t->nbuckets; i++) {
        buckets(t)[i] = NO_INDEX;
    }
    for (i = 0; i < capacity; i++) {
        t->rec[i].self = (apr_int32_t)i;
        t->rec[i].next = i + 1 < capacity ? (apr_int32_t)(i + 1) : NO_INDEX;
        t->rec[i].older = t->rec[i].newer = NO_INDEX;
    }
    for (i = 0; i < BEACON_TABLE_LISTS; i++) {
        t->lists[i].head = t->lists[i].tail = NO_INDEX;
    }
    t->free_head = 0;
    t->timeout = timeout;
    t->max_skew = max_skew;
}

beacon_table_t *beacon_table_make(apr_pool_t *p, unsigned capacity,
                                  apr_interval_time_t timeout,
                                  apr_interval_time_t max_skew)
{
    apr_size_t size = beacon_table_size(capacity);
    beacon_table_t *t;

    if (size == 0 || (t = apr_palloc(p, size)) == NULL) {
        return NULL;
    }
    beacon_table_init(t, capacity, timeout, max_skew);
    return t;
}

void beacon_table_set_service(beacon_table_t *t, const char *service)
{
    if (service == NULL || *service == '\0') {
        t->service[0] = '\0';
    }
    else if (beacon_service_is_valid(service)) {
        /* fits: at most BEACON_SERVICE_MAX bytes and the NUL */
        memcpy(t->service, service, strlen(service) + 1);
    }
    else {
        /* A caller's bug. Fail closed: "!" is no service a datagram can
         * name, where "" would accept every service and a cut name
         * another one. */
        memcpy(t->service, "!", sizeof("!"));
    }
}

beacon_record_t *beacon_table_find(beacon_table_t *t, const char *url)
{
    apr_uint32_t hash = url_hash(url);
    apr_int32_t i;

    for (i = *bucket_of(t, hash); i != NO_INDEX; i = t->rec[i].next) {
        if (t->rec[i].hash == hash && strcmp(t->rec[i].url, url) == 0) {
            return &t->rec[i];
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Deadline lists                                                      */

static void unlink_rec(beacon_table_t *t, beacon_record_t *r)
{
    beacon_table_list_t *l = &t->lists[r->list];

    if (r->older != NO_INDEX) {
        t->rec[r->older].newer = r->newer;
    }
    else {
        l->head = r->newer;
    }
    if (r->newer != NO_INDEX) {
        t->rec[r->newer].older = r->older;
    }
    else {
        l->tail = r->older;
    }
    r->older = r->newer = NO_INDEX;
}

/* Into list, after every record seen later than r: the newest end, but
 * for a clock stepped back or a mark remembered from long ago. */
static void link_rec(beacon_table_t *t, beacon_record_t *r, apr_int32_t list)
{
    beacon_table_list_t *l = &t->lists[list];
    apr_int32_t after = l->tail;

    while (after != NO_INDEX && t->rec[after].last_seen > r->last_seen) {
        after = t->rec[after].older;
    }
    r->list = list;
    r->older = after;
    if (after == NO_INDEX) {
        r->newer = l->head;
        l->head = r->self;
    }
    else {
        r->newer = t->rec[after].newer;
        t->rec[after].newer = r->self;
    }
    if (r->newer == NO_INDEX) {
        l->tail = r->self;
    }
    else {
        t->rec[r->newer].older = r->self;
    }
}

static apr_int32_t list_for(beacon_state_t state)
{
    return state == BEACON_REC_ACTIVE ? LIST_ACTIVE : LIST_IDLE;
}

/* After last_seen moved: r goes to the newest end of its state's list. */
static void relink(beacon_table_t *t, beacon_record_t *r)
{
    unlink_rec(t, r);
    link_rec(t, r, list_for(r->state));
}

/* After a state change at the same last_seen: into the other list when
 * the rule changed (an idle and a lapsed record have the same one). */
static void restate(beacon_record_t *r, beacon_state_t state)
{
    beacon_table_t *t = table_of(r);
    int was_active = r->state == BEACON_REC_ACTIVE;

    r->state = state;
    if (was_active != (state == BEACON_REC_ACTIVE)) {
        relink(t, r);
    }
}

/* A new record for url (which must fit), or NULL when the table is full. */
static beacon_record_t *insert(beacon_table_t *t, const char *url,
                               beacon_state_t state, apr_time_t now)
{
    apr_int32_t i = t->free_head;
    apr_int32_t *head;
    beacon_record_t *r;

    if (i == NO_INDEX || strlen(url) >= BEACON_URL_MAX) {
        return NULL;
    }
    r = &t->rec[i];
    t->free_head = r->next;
    memset(r, 0, sizeof(*r));
    r->self = i;
    strcpy(r->url, url);
    r->hash = url_hash(url);
    r->state = state;
    r->last_seen = now;
    head = bucket_of(t, r->hash);
    r->next = *head;
    *head = i;
    link_rec(t, r, list_for(state));
    t->count++;
    return r;
}

static void release(beacon_table_t *t, beacon_record_t *r)
{
    apr_int32_t i = r->self;
    apr_int32_t *link = bucket_of(t, r->hash);

    while (*link != i) {
        link = &t->rec[*link].next;
    }
    *link = r->next;
    unlink_rec(t, r);
    memset(r, 0, sizeof(*r));
    r->self = i;
    r->older = r->newer = NO_INDEX;
    r->next = t->free_head;
    t->free_head = i;
    t->count--;
}

static beacon_action_t transition(beacon_record_t *r, int leaving,
                                  apr_time_t now)
{
    switch (r->state) {
    case BEACON_REC_NEW:
        return leaving ? BEACON_ACT_NONE : BEACON_ACT_ADD;
    case BEACON_REC_PENDING:
        if (leaving) {
            return BEACON_ACT_NONE;
        }
        return now >= r->retry_at ? BEACON_ACT_ADD : BEACON_ACT_WAIT;
    case BEACON_REC_ACTIVE:
        if (leaving) {
            r->state = BEACON_REC_EVICTED;
            return BEACON_ACT_DISABLE;
        }
        return BEACON_ACT_RENEW;
    case BEACON_REC_EVICTED:
        if (leaving) {
            return BEACON_ACT_NONE;
        }
        r->state = BEACON_REC_ACTIVE;
        return BEACON_ACT_ENABLE;
    default:
        return BEACON_ACT_NOT_MANAGED;
    }
}

beacon_reason_t beacon_table_accept(beacon_table_t *t, const char *url,
                                    apr_int64_t ts, int leaving, apr_time_t now,
                                    beacon_record_t **rec,
                                    beacon_action_t *action)
{
    beacon_record_t *r = beacon_table_find(t, url);

    *rec = NULL;
    *action = BEACON_ACT_NONE;
    if (strlen(url) >= BEACON_URL_MAX) {
        return BEACON_DROP_UNACCEPTABLE_URL;
    }
    if (r == NULL && (r = insert(t, url, BEACON_REC_NEW, now)) == NULL) {
        return BEACON_DROP_TABLE_FULL;
    }
    if (ts <= r->high_ts) {
        return BEACON_DROP_REPLAYED_TS;
    }
    r->high_ts = ts;
    r->last_seen = now;
    *rec = r;
    *action = transition(r, leaving, now);
    relink(t, r);
    return BEACON_OK;
}

void beacon_table_added(beacon_record_t *rec)
{
    restate(rec, BEACON_REC_ACTIVE);
    rec->backoff = 0;
    rec->retry_at = 0;
}

void beacon_table_add_failed(beacon_record_t *rec, apr_time_t now)
{
    if (rec->backoff < BEACON_BACKOFF_MIN) {
        rec->backoff = BEACON_BACKOFF_MIN;
    }
    else if (rec->backoff < BEACON_BACKOFF_MAX / 2) {
        rec->backoff *= 2;
    }
    else {
        rec->backoff = BEACON_BACKOFF_MAX;
    }
    rec->retry_at = now + rec->backoff;
    restate(rec, BEACON_REC_PENDING);
}

void beacon_table_not_managed(beacon_record_t *rec)
{
    restate(rec, BEACON_REC_NOT_MANAGED);
}

static int lease_lapsed(const beacon_table_t *t, const beacon_record_t *r,
                        apr_time_t now)
{
    return t->timeout > 0 && r->state == BEACON_REC_ACTIVE &&
           now - r->last_seen > t->timeout;
}

/* The oldest record of list, or NULL. */
static beacon_record_t *oldest(beacon_table_t *t, apr_int32_t list)
{
    apr_int32_t i = t->lists[list].head;

    return i == NO_INDEX ? NULL : &t->rec[i];
}

/* The members in rotation are oldest first: the lapsed ones lead. */
beacon_record_t *beacon_table_next_lapsed(beacon_table_t *t, apr_time_t now,
                                          unsigned *cursor)
{
    beacon_record_t *r = oldest(t, LIST_ACTIVE);

    if (r == NULL || !lease_lapsed(t, r, now)) {
        return NULL;
    }
    r->state = BEACON_REC_EVICTED;
    unlink_rec(t, r);
    link_rec(t, r, LIST_LAPSED);
    (*cursor)++;
    return r;
}

static int silent_past_skew(const beacon_table_t *t, const beacon_record_t *r,
                            apr_time_t now)
{
    return now - r->last_seen > 2 * t->max_skew;
}

/* Every record not in rotation (NEW, PENDING, EVICTED, NOT_MANAGED) is in
 * one of the two lists released by silence, oldest first. */
unsigned beacon_table_release(beacon_table_t *t, apr_time_t now)
{
    static const apr_int32_t lists[] = {LIST_IDLE, LIST_LAPSED};
    unsigned released = 0, k;
    beacon_record_t *r;

    for (k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
        while ((r = oldest(t, lists[k])) != NULL && silent_past_skew(t, r, now)) {
            release(t, r);
            released++;
        }
    }
    return released;
}

static void earliest(apr_time_t *best, const beacon_table_t *t,
                     apr_int32_t list, apr_interval_time_t after)
{
    apr_int32_t i = t->lists[list].head;
    apr_time_t candidate;

    if (i == NO_INDEX) {
        return;
    }
    candidate = t->rec[i].last_seen + after + 1;
    if (*best == 0 || candidate < *best) {
        *best = candidate;
    }
}

apr_time_t beacon_table_next_deadline(const beacon_table_t *t)
{
    apr_time_t best = 0;

    if (t->timeout > 0) {
        earliest(&best, t, LIST_ACTIVE, t->timeout);
    }
    earliest(&best, t, LIST_IDLE, 2 * t->max_skew);
    earliest(&best, t, LIST_LAPSED, 2 * t->max_skew);
    return best;
}

beacon_reason_t beacon_table_adopt(beacon_table_t *t, const char *url,
                                   int disabled, apr_int64_t high_ts,
                                   apr_time_t now)
{
    beacon_record_t *r;

    if (beacon_table_find(t, url) != NULL) {
        return BEACON_OK;
    }
    r = insert(t, url, disabled ? BEACON_REC_EVICTED : BEACON_REC_ACTIVE, now);
    if (r == NULL) {
        return BEACON_DROP_TABLE_FULL;
    }
    r->high_ts = high_ts > 0 ? high_ts : 0;
    return BEACON_OK;
}

beacon_reason_t beacon_table_remember(beacon_table_t *t, const char *url,
                                      apr_int64_t high_ts, apr_time_t last_seen)
{
    beacon_record_t *r = beacon_table_find(t, url);

    if (r == NULL && (r = insert(t, url, BEACON_REC_NEW, last_seen)) == NULL) {
        return BEACON_DROP_TABLE_FULL;
    }
    if (high_ts > r->high_ts) {
        r->high_ts = high_ts;
    }
    return BEACON_OK;
}

void beacon_table_add_deferred(beacon_record_t *rec, apr_time_t now,
                               apr_time_t ready_at)
{
    beacon_table_add_failed(rec, now);
    if (ready_at > now && ready_at < rec->retry_at) {
        rec->retry_at = ready_at;
    }
}

void beacon_table_unlisted(beacon_table_t *t, const char *url)
{
    beacon_record_t *r = beacon_table_find(t, url);

    if (r != NULL) {
        restate(r, BEACON_REC_NEW);
        r->backoff = 0;
        r->retry_at = 0;
    }
}

const char *beacon_state_name(beacon_state_t state)
{
    switch (state) {
    case BEACON_REC_NEW:         return "new";
    case BEACON_REC_PENDING:     return "pending add";
    case BEACON_REC_ACTIVE:      return "active";
    case BEACON_REC_EVICTED:     return "evicted";
    case BEACON_REC_NOT_MANAGED: return "not managed";
    default:                     return "free";
    }
}

const char *beacon_action_name(beacon_action_t action)
{
    switch (action) {
    case BEACON_ACT_RENEW:       return "renew";
    case BEACON_ACT_ADD:         return "add";
    case BEACON_ACT_ENABLE:      return "enable";
    case BEACON_ACT_DISABLE:     return "disable";
    case BEACON_ACT_WAIT:        return "wait";
    case BEACON_ACT_NOT_MANAGED: return "not-managed";
    default:                     return "ignore";
    }
}

/* ------------------------------------------------------------------ */
/* The whole receiver pipeline                                         */

/*
 * Whether a verified datagram is meant for this receiver: any is, unless
 * the table has a service, which svc= must then name exactly (byte for
 * byte, case included). Checked before the url or ts reach the table, so
 * that a capture replayed from another service sharing the secret moves
 * no replay mark here.
 */
static int is_for_service(const beacon_table_t *t, const beacon_span_t *svc)
{
    if (t->service[0] == '\0') {
        return 1;
    }
    return svc->ptr != NULL && svc->len == strlen(t->service) &&
           memcmp(svc->ptr, t->service, svc->len) == 0;
}

/* Clears what the steps after the MAC fill in. */
static void event_reset(beacon_event_t *ev)
{
    ev->url[0] = '\0';
    ev->rec = NULL;
    ev->action = BEACON_ACT_NONE;
    ev->second_copy = 0;
    ev->refusal = NULL;
    ev->refused_by_balancer = 0;
}

beacon_reason_t beacon_receive_verified(beacon_table_t *t, apr_time_t now,
                                        const beacon_reach_gate_t *gate,
                                        beacon_event_t *ev)
{
    beacon_reason_t reason;

    event_reset(ev);
    if (ev->dg.url.ptr == NULL) {
        return BEACON_OK; /* a heartbeat */
    }
    if (ev->dg.url_is_canonical && ev->dg.url.len < sizeof(ev->url)) {
        memcpy(ev->url, ev->dg.url.ptr, ev->dg.url.len); /* checked once */
        ev->url[ev->dg.url.len] = '\0';
    }
    else if (beacon_url_canonicalize(ev->dg.url.ptr, ev->dg.url.len, ev->url,
                                     sizeof(ev->url)) != NULL) {
        ev->url[0] = '\0';
        return BEACON_DROP_UNACCEPTABLE_URL;
    }
    ev->refusal = beacon_reach_gate_refusal(gate, ev->url,
                                            &ev->refused_by_balancer);
    if (ev->refusal != NULL) {
        return BEACON_DROP_URL_NOT_ALLOWED; /* before the table: no trace */
    }
    reason = beacon_table_accept(t, ev->url, ev->dg.ts,
                                 beacon_datagram_is_leaving(&ev->dg), now,
                                 &ev->rec, &ev->action);
    if (reason == BEACON_DROP_REPLAYED_TS) {
        const beacon_record_t *r = beacon_table_find(t, ev->url);

        ev->second_copy = r != NULL && r->high_ts == ev->dg.ts;
    }
    return reason;
}

beacon_reason_t beacon_receive_any(beacon_table_t *t, const beacon_key_t *keys,
                                   unsigned nkeys, const char *buf,
                                   apr_size_t len, apr_time_t now,
                                   const beacon_reach_gate_t *gate,
                                   beacon_event_t *ev)
{
    beacon_reason_t reason;

    event_reset(ev);
    reason = beacon_verify_any(buf, len, keys, nkeys, now, t->max_skew, &ev->dg);
    if (reason == BEACON_OK && !is_for_service(t, &ev->dg.svc)) {
        return BEACON_DROP_WRONG_SERVICE;
    }
    if (reason != BEACON_OK) {
        return reason;
    }
    return beacon_receive_verified(t, now, gate, ev);
}

beacon_reason_t beacon_receive(beacon_table_t *t, const beacon_key_t *key,
                               const char *buf, apr_size_t len, apr_time_t now,
                               beacon_event_t *ev)
{
    return beacon_receive_any(t, key, 1, buf, len, now, NULL, ev);
}
