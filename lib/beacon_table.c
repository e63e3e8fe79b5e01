/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The lease and replay table: one record per canonical url, in a fixed
 * array linked by index (no pointers inside, no allocation after init).
 * The caller passes the clock in and carries out the actions the table
 * returns; the table only decides.
 */

#include <string.h>

#include "beacon.h"

#define NO_INDEX (-1)

static apr_uint32_t url_hash(const char *url)
{
    apr_uint32_t h = 2166136261u; /* FNV-1a */

    while (*url) {
        h = (h ^ (unsigned char)*url++) * 16777619u;
    }
    return h;
}

static apr_int16_t *bucket_of(beacon_table_t *t, apr_uint32_t hash)
{
    return &t->bucket[hash & (BEACON_TABLE_BUCKETS - 1)];
}

void beacon_table_init(beacon_table_t *t, apr_interval_time_t timeout,
                       apr_interval_time_t max_skew)
{
    int i;

    memset(t, 0, sizeof(*t));
    for (i = 0; i < BEACON_TABLE_BUCKETS; i++) {
        t->bucket[i] = NO_INDEX;
    }
    for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
        t->rec[i].next = (apr_int16_t)(i + 1 < BEACON_TABLE_CAPACITY ? i + 1
                                                                     : NO_INDEX);
    }
    t->free_head = 0;
    t->timeout = timeout;
    t->max_skew = max_skew;
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
    apr_int16_t i;

    for (i = *bucket_of(t, hash); i != NO_INDEX; i = t->rec[i].next) {
        if (t->rec[i].hash == hash && strcmp(t->rec[i].url, url) == 0) {
            return &t->rec[i];
        }
    }
    return NULL;
}

/* A new record for url (which must fit), or NULL when the table is full. */
static beacon_record_t *insert(beacon_table_t *t, const char *url,
                               beacon_state_t state, apr_time_t now)
{
    apr_int16_t i = t->free_head;
    apr_int16_t *head;
    beacon_record_t *r;

    if (i == NO_INDEX || strlen(url) >= BEACON_URL_MAX) {
        return NULL;
    }
    r = &t->rec[i];
    t->free_head = r->next;
    memset(r, 0, sizeof(*r));
    strcpy(r->url, url);
    r->hash = url_hash(url);
    r->state = state;
    r->last_seen = now;
    head = bucket_of(t, r->hash);
    r->next = *head;
    *head = i;
    t->count++;
    return r;
}

static void release(beacon_table_t *t, beacon_record_t *r)
{
    apr_int16_t i = (apr_int16_t)(r - t->rec);
    apr_int16_t *link = bucket_of(t, r->hash);

    while (*link != i) {
        link = &t->rec[*link].next;
    }
    *link = r->next;
    memset(r, 0, sizeof(*r));
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
    return BEACON_OK;
}

void beacon_table_added(beacon_record_t *rec)
{
    rec->state = BEACON_REC_ACTIVE;
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
    rec->state = BEACON_REC_PENDING;
}

void beacon_table_not_managed(beacon_record_t *rec)
{
    rec->state = BEACON_REC_NOT_MANAGED;
}

static int lease_lapsed(const beacon_table_t *t, const beacon_record_t *r,
                        apr_time_t now)
{
    return t->timeout > 0 && r->state == BEACON_REC_ACTIVE &&
           now - r->last_seen > t->timeout;
}

beacon_record_t *beacon_table_next_lapsed(beacon_table_t *t, apr_time_t now,
                                          unsigned *cursor)
{
    while (*cursor < BEACON_TABLE_CAPACITY) {
        beacon_record_t *r = &t->rec[(*cursor)++];

        if (lease_lapsed(t, r, now)) {
            r->state = BEACON_REC_EVICTED;
            return r;
        }
    }
    return NULL;
}

/* Records that are not members in rotation may be forgotten after silence. */
static int releasable_state(beacon_state_t state)
{
    return state == BEACON_REC_NEW || state == BEACON_REC_PENDING ||
           state == BEACON_REC_EVICTED || state == BEACON_REC_NOT_MANAGED;
}

unsigned beacon_table_release(beacon_table_t *t, apr_time_t now)
{
    unsigned released = 0;
    int i;

    for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
        beacon_record_t *r = &t->rec[i];

        if (releasable_state(r->state) &&
            now - r->last_seen > 2 * t->max_skew) {
            release(t, r);
            released++;
        }
    }
    return released;
}

static void earliest(apr_time_t *best, apr_time_t candidate)
{
    if (*best == 0 || candidate < *best) {
        *best = candidate;
    }
}

apr_time_t beacon_table_next_deadline(const beacon_table_t *t)
{
    apr_time_t best = 0;
    int i;

    for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
        const beacon_record_t *r = &t->rec[i];

        if (r->state == BEACON_REC_ACTIVE && t->timeout > 0) {
            earliest(&best, r->last_seen + t->timeout + 1);
        }
        else if (releasable_state(r->state)) {
            earliest(&best, r->last_seen + 2 * t->max_skew + 1);
        }
    }
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
        r->state = BEACON_REC_NEW;
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
}

beacon_reason_t beacon_receive_verified(beacon_table_t *t, apr_time_t now,
                                        beacon_event_t *ev)
{
    beacon_reason_t reason;

    event_reset(ev);
    if (ev->dg.url.ptr == NULL) {
        return BEACON_OK; /* a heartbeat */
    }
    if (beacon_url_canonicalize(ev->dg.url.ptr, ev->dg.url.len, ev->url,
                                sizeof(ev->url)) != NULL) {
        ev->url[0] = '\0';
        return BEACON_DROP_UNACCEPTABLE_URL;
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
    return beacon_receive_verified(t, now, ev);
}

beacon_reason_t beacon_receive(beacon_table_t *t, const beacon_key_t *key,
                               const char *buf, apr_size_t len, apr_time_t now,
                               beacon_event_t *ev)
{
    return beacon_receive_any(t, key, 1, buf, len, now, ev);
}
