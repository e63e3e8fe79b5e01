/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The lease and replay table (step 8 and the member state machine), the
 * receiver's service (step 6) and beacon_receive() end to end. Time is the
 * caller's: every boundary is exercised to the microsecond.
 */
#include "test_common.h"

#define N ((apr_time_t)APR_INT64_C(1796000000000000))
#define SEC ((apr_interval_time_t)APR_USEC_PER_SEC)
#define TIMEOUT (10 * SEC)
#define SKEW (30 * SEC)

/*
 * Compare enums by value, and print the library's names on a mismatch
 * (their own correctness is tested below, in names_*).
 */
#define assert_action_equal(got, want, what)                                  \
    do {                                                                      \
        beacon_action_t got_a_ = (got), want_a_ = (want);                     \
        if (got_a_ != want_a_) {                                              \
            print_error("case: %s: action %s, want %s\n", (what),             \
                        beacon_action_name(got_a_),                           \
                        beacon_action_name(want_a_));                         \
        }                                                                     \
        assert_int_equal(got_a_, want_a_);                                    \
    } while (0)

#define assert_state_equal(got, want, what)                                   \
    do {                                                                      \
        beacon_state_t got_s_ = (got), want_s_ = (want);                      \
        if (got_s_ != want_s_) {                                              \
            print_error("case: %s: state %s, want %s\n", (what),              \
                        beacon_state_name(got_s_),                            \
                        beacon_state_name(want_s_));                          \
        }                                                                     \
        assert_int_equal(got_s_, want_s_);                                    \
    } while (0)

/*
 * Tables are large (the whole array of records), so they live on the
 * heap; a failed assertion leaves the test early, so the teardown frees
 * them.
 */
static beacon_table_t *tables[8];

static beacon_table_t *alloc_sized(unsigned capacity)
{
    size_t i;

    for (i = 0; i < ARRAY_LEN(tables); i++) {
        if (tables[i] == NULL) {
            tables[i] = malloc(beacon_table_size(capacity));
            assert_non_null(tables[i]);
            return tables[i];
        }
    }
    fail_msg("too many tables in one test");
    return NULL;
}

static int free_tables(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(tables); i++) {
        free(tables[i]);
        tables[i] = NULL;
    }
    return 0;
}

static void assert_deadline_near(const beacon_table_t *t, apr_time_t at,
                                 const char *what);

static beacon_table_t *alloc_table(void)
{
    return alloc_sized(BEACON_TABLE_CAPACITY);
}

static beacon_table_t *new_sized(unsigned capacity,
                                 apr_interval_time_t timeout,
                                 apr_interval_time_t max_skew)
{
    beacon_table_t *t = alloc_sized(capacity);

    /* Garbage first: init must not rely on zeroed memory. */
    memset(t, 0xa5, beacon_table_size(capacity));
    beacon_table_init(t, capacity, timeout, max_skew);
    assert_int_equal(t->count, 0);
    assert_int_equal(beacon_table_capacity(t), capacity);
    return t;
}

static beacon_table_t *new_table(apr_interval_time_t timeout,
                                 apr_interval_time_t max_skew)
{
    return new_sized(BEACON_TABLE_CAPACITY, timeout, max_skew);
}

/*
 * Accepts one announcement and checks reason and, on BEACON_OK, action.
 * Returns the record (NULL on a drop).
 */
static beacon_record_t *announce(beacon_table_t *t, const char *url,
                                 apr_int64_t ts, int leaving, apr_time_t now,
                                 beacon_reason_t want, beacon_action_t want_act,
                                 const char *what)
{
    beacon_record_t *rec = NULL;
    beacon_action_t act = (beacon_action_t)-1;
    beacon_reason_t r = beacon_table_accept(t, url, ts, leaving, now, &rec, &act);

    assert_reason_equal(r, want, what);
    if (r != BEACON_OK) {
        return NULL;
    }
    assert_non_null(rec);
    assert_string_equal(rec->url, url);
    assert_true(rec == beacon_table_find(t, url));
    assert_action_equal(act, want_act, what);
    return rec;
}

/* A url announced, added and ACTIVE at now with ts. */
static beacon_record_t *member(beacon_table_t *t, const char *url,
                               apr_int64_t ts, apr_time_t now)
{
    beacon_record_t *rec = announce(t, url, ts, 0, now, BEACON_OK,
                                    BEACON_ACT_ADD, "new member");
    beacon_table_added(rec);
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "added");
    return rec;
}

static void member_url(char *buf, size_t size, unsigned i)
{
    snprintf(buf, size, "http://m%u.example.com:8080", i);
}

/* ------------------------------------------------------------------ */
/* Replay, scripted                                                    */

static void replay_counter_script(void **state)
{
    beacon_table_t *t = new_table(0, SKEW);
    beacon_record_t *rec;
    unsigned test_num = 0;

    (void)state;
    rec = member(t, "http://a", 100, N);
    assert_true(rec->high_ts == 100);

    /*
     * T(ts, reason): one announcement of http://a. An accepted ts becomes
     * the high-water mark; a dropped one leaves it alone.
     */
#define T(ts, want)                                                           \
    do {                                                                      \
        char what_[64];                                                       \
        apr_int64_t before_ = rec->high_ts;                                   \
        beacon_record_t *r_ = NULL;                                           \
        beacon_action_t a_;                                                   \
        snprintf(what_, sizeof what_, "replay script line %u", ++test_num);   \
        assert_reason_equal(                                                  \
            beacon_table_accept(t, "http://a", (ts), 0, N, &r_, &a_), (want), \
            what_);                                                           \
        assert_int_equal(rec->high_ts,                                        \
                         (want) == BEACON_OK ? (apr_int64_t)(ts) : before_);  \
    } while (0)
    /*  1 */ T(100, BEACON_DROP_REPLAYED_TS);  /* equal to the mark */
    /*  2 */ T(101, BEACON_OK);
    /*  3 */ T(99, BEACON_DROP_REPLAYED_TS);   /* below */
    /*  4 */ T(101, BEACON_DROP_REPLAYED_TS);
    /*  5 */ T(1000, BEACON_OK);               /* a gap is fine */
    /*  6 */ T(999, BEACON_DROP_REPLAYED_TS);  /* reordered */
    /*  7 */ T(1000, BEACON_DROP_REPLAYED_TS);
    /*  8 */ T(1001, BEACON_OK);
    /*  9 */ T(1, BEACON_DROP_REPLAYED_TS);
    /* 10 */ T(0, BEACON_DROP_REPLAYED_TS);
    /* 11 */ T(APR_INT64_C(999999999999999999), BEACON_OK);
    /* 12 */ T(APR_INT64_C(999999999999999999), BEACON_DROP_REPLAYED_TS);
#undef T

    /* The mark is per url: another url starts from nothing. */
    announce(t, "http://b", 50, 0, N, BEACON_OK, BEACON_ACT_ADD,
             "a low ts on another url");
}

/* A dropped replay renews nothing: the lease runs from the last acceptance. */
static void a_replayed_announcement_does_not_renew_the_lease(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec = member(t, "http://a", 100, N);
    unsigned cursor = 0;

    (void)state;
    announce(t, "http://a", 100, 0, N + TIMEOUT, BEACON_DROP_REPLAYED_TS, 0,
             "replay just before the lease ends");
    assert_true(rec->last_seen == N);
    assert_true(beacon_table_next_lapsed(t, N + TIMEOUT + 1, &cursor) == rec);
}

/* ------------------------------------------------------------------ */
/* Add, back-off                                                       */

static void first_announcement_adds_and_later_ones_renew(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec;

    (void)state;
    assert_null(beacon_table_find(t, "http://a"));
    rec = announce(t, "http://a", 1, 0, N, BEACON_OK, BEACON_ACT_ADD, "first");
    assert_state_equal(rec->state, BEACON_REC_NEW, "first");
    assert_int_equal(t->count, 1);
    assert_true(rec->high_ts == 1);
    assert_true(rec->last_seen == N);

    beacon_table_added(rec);
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "added");
    assert_true(announce(t, "http://a", 2, 0, N + SEC, BEACON_OK,
                         BEACON_ACT_RENEW, "second") == rec);
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "second");
    assert_true(rec->last_seen == N + SEC);
    assert_true(rec->high_ts == 2);
    assert_int_equal(t->count, 1);
    assert_null(beacon_table_find(t, "http://b"));
}

static void failed_adds_back_off_doubling_up_to_the_cap(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec;
    apr_interval_time_t want = BEACON_BACKOFF_MIN;
    apr_time_t now = N;
    apr_int64_t ts = 1;
    unsigned i;

    (void)state;
    rec = announce(t, "http://a", ts++, 0, now, BEACON_OK, BEACON_ACT_ADD,
                   "first");
    for (i = 0; i < 10; i++) {
        char what[64];

        snprintf(what, sizeof what, "failure %u", i + 1);
        beacon_table_add_failed(rec, now);
        assert_state_equal(rec->state, BEACON_REC_PENDING, what);
        if (rec->backoff != want) {
            print_error("%s: backoff %" APR_INT64_T_FMT ", want %"
                        APR_INT64_T_FMT "\n", what, rec->backoff, want);
        }
        assert_int_equal(rec->backoff, want);
        assert_int_equal(rec->retry_at, now + want);

        announce(t, "http://a", ts++, 0, rec->retry_at - 1, BEACON_OK,
                 BEACON_ACT_WAIT, "1us before retry_at");
        assert_state_equal(rec->state, BEACON_REC_PENDING, what);
        /* At retry_at on even rounds, a little after on odd ones. */
        now = rec->retry_at + (i % 2);
        announce(t, "http://a", ts++, 0, now, BEACON_OK, BEACON_ACT_ADD,
                 "at or after retry_at");
        want = want * 2 > BEACON_BACKOFF_MAX ? BEACON_BACKOFF_MAX : want * 2;
    }
    /* 1, 2, 4, 8, 16, 32, 64, 64, ... seconds: the cap was reached. */
    assert_int_equal(rec->backoff, BEACON_BACKOFF_MAX);

    beacon_table_added(rec);
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "added at last");
    announce(t, "http://a", ts++, 0, now + SEC, BEACON_OK, BEACON_ACT_RENEW,
             "after the add");
}

/* ------------------------------------------------------------------ */
/* Capacity                                                            */

static void fill(beacon_table_t *t, unsigned n, apr_time_t now)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        char url[64];

        member_url(url, sizeof url, i);
        member(t, url, 1, now);
    }
}

static void the_table_holds_256_urls_and_a_release_makes_room(void **state)
{
    beacon_table_t *t = new_table(0, SKEW);
    beacon_record_t *rec;
    char url[64];
    unsigned i;

    (void)state;
    fill(t, BEACON_TABLE_CAPACITY, N);
    assert_int_equal(t->count, BEACON_TABLE_CAPACITY);
    for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
        member_url(url, sizeof url, i);
        assert_non_null(beacon_table_find(t, url));
    }

    member_url(url, sizeof url, BEACON_TABLE_CAPACITY);
    announce(t, url, 1, 0, N, BEACON_DROP_TABLE_FULL, 0, "the 257th url");
    assert_null(beacon_table_find(t, url));
    assert_int_equal(t->count, BEACON_TABLE_CAPACITY);
    announce(t, "http://m3.example.com:8080", 2, 0, N, BEACON_OK,
             BEACON_ACT_RENEW, "a known url while full");

    /* One member leaves and is released: its slot takes the 257th. */
    member_url(url, sizeof url, 100);
    rec = announce(t, url, 2, 1, N, BEACON_OK, BEACON_ACT_DISABLE,
                   "leaving while full");
    assert_state_equal(rec->state, BEACON_REC_EVICTED, "left while full");
    assert_int_equal(beacon_table_release(t, N + 2 * SKEW + 1), 1);
    assert_null(beacon_table_find(t, url));
    assert_int_equal(t->count, BEACON_TABLE_CAPACITY - 1);

    member_url(url, sizeof url, BEACON_TABLE_CAPACITY);
    announce(t, url, 1, 0, N + 2 * SKEW + 1, BEACON_OK, BEACON_ACT_ADD,
             "the 257th url after a release");
    assert_int_equal(t->count, BEACON_TABLE_CAPACITY);
    member_url(url, sizeof url, BEACON_TABLE_CAPACITY + 1);
    announce(t, url, 1, 0, N + 2 * SKEW + 1, BEACON_DROP_TABLE_FULL, 0,
             "the 258th url");
}

/* Sizes: linear in the capacity, buckets a power of two of at least twice
 * it; 0 (refused) for none or more than the maximum. */
static void a_table_is_sized_from_its_capacity(void **state)
{
    static const unsigned caps[] = {1, 2, 255, BEACON_TABLE_CAPACITY, 257,
                                    5000 + BEACON_TABLE_CAPACITY,
                                    BEACON_TABLE_MAX_CAPACITY};
    apr_size_t header = beacon_table_size(1) - sizeof(beacon_record_t) -
                        2 * sizeof(apr_int32_t);
    size_t i;

    (void)state;
    assert_int_equal(beacon_table_size(0), 0);
    assert_int_equal(beacon_table_size(BEACON_TABLE_MAX_CAPACITY + 1), 0);
    assert_int_equal(beacon_table_size(~0u), 0);
    for (i = 0; i < ARRAY_LEN(caps); i++) {
        unsigned c = caps[i];
        beacon_table_t *t = new_sized(c, TIMEOUT, SKEW);
        apr_size_t size = beacon_table_size(c);

        print_message("capacity %u: %lu bytes, %u buckets\n", c,
                      (unsigned long)size, (unsigned)t->nbuckets);
        assert_true((t->nbuckets & (t->nbuckets - 1)) == 0);
        assert_true(t->nbuckets >= 2 * c && t->nbuckets < 4 * c + 2);
        /* the records and the buckets, nothing more per record */
        assert_int_equal(size, header + c * sizeof(beacon_record_t) +
                                   t->nbuckets * sizeof(apr_int32_t));
        assert_true(size <= header + c * (sizeof(beacon_record_t) +
                                          4 * sizeof(apr_int32_t)));
        free_tables(NULL);
    }
    /* one more record is one record's bytes while the buckets suffice */
    assert_int_equal(beacon_table_size(300) - beacon_table_size(299),
                     sizeof(beacon_record_t));
    assert_null(beacon_table_make(NULL, 0, TIMEOUT, SKEW));
    assert_null(beacon_table_make(NULL, BEACON_TABLE_MAX_CAPACITY + 1,
                                  TIMEOUT, SKEW));
}

/* A table holds exactly its capacity, at one record and at 5,256. */
static void a_table_is_full_at_exactly_its_capacity(void **state)
{
    static const unsigned caps[] = {1, 5000 + BEACON_TABLE_CAPACITY};
    char url[64];
    size_t k;

    (void)state;
    for (k = 0; k < ARRAY_LEN(caps); k++) {
        unsigned c = caps[k], i;
        beacon_table_t *t = new_sized(c, 0, SKEW);

        fill(t, c, N);
        assert_int_equal(t->count, c);
        for (i = 0; i < c; i++) {
            member_url(url, sizeof url, i);
            assert_non_null(beacon_table_find(t, url));
            assert_int_equal(beacon_table_index(beacon_table_find(t, url)) < c,
                             1);
        }
        member_url(url, sizeof url, c);
        announce(t, url, 1, 0, N, BEACON_DROP_TABLE_FULL, 0, "one too many");
        assert_int_equal(beacon_table_adopt(t, url, 0, 0, N),
                         BEACON_DROP_TABLE_FULL);
        assert_int_equal(beacon_table_remember(t, url, 1, N),
                         BEACON_DROP_TABLE_FULL);

        /* the last one leaves and is released: its slot takes the next */
        member_url(url, sizeof url, c - 1);
        announce(t, url, 2, 1, N, BEACON_OK, BEACON_ACT_DISABLE, "leaves");
        assert_int_equal(beacon_table_release(t, N + 2 * SKEW + 1), 1);
        member_url(url, sizeof url, c);
        announce(t, url, 1, 0, N + 2 * SKEW + 1, BEACON_OK, BEACON_ACT_ADD,
                 "in the freed slot");
        assert_int_equal(t->count, c);
        free_tables(NULL);
    }
}

/*
 * The housekeeping reads the records in use, oldest first, not every
 * slot: the free slots of a table of 5,256 are made to look like members
 * long overdue, and a table that scanned would lapse or wake for them.
 */
static void housekeeping_reads_only_the_oldest_records(void **state)
{
    beacon_table_t *t = new_sized(5000 + BEACON_TABLE_CAPACITY, TIMEOUT, SKEW);
    beacon_record_t *first;
    unsigned cursor = 0, i;

    (void)state;
    first = member(t, "http://first", 1, N);
    for (i = 0; i < 20; i++) {
        char url[64];

        member_url(url, sizeof url, i);
        member(t, url, 1, N + SEC);
    }
    announce(t, "http://idle", 1, 0, N + SEC, BEACON_OK, BEACON_ACT_ADD,
                    "never added");
    for (i = 0; i < beacon_table_capacity(t); i++) {
        beacon_record_t *r = &t->rec[i];

        if (r->state == BEACON_REC_FREE) {
            r->state = BEACON_REC_ACTIVE; /* a scan would see a member */
            r->last_seen = 1;
        }
    }
    assert_deadline_near(t, N + TIMEOUT, "the oldest member's lease");
    assert_null(beacon_table_next_lapsed(t, N + TIMEOUT, &cursor));
    assert_int_equal(beacon_table_release(t, N + SEC + 2 * SKEW), 0);
    assert_true(beacon_table_next_lapsed(t, N + TIMEOUT + 1, &cursor) == first);
    assert_null(beacon_table_next_lapsed(t, N + TIMEOUT + 1, &cursor));
    assert_int_equal(t->count, 22);
}

/*
 * The next deadline follows renewals in any order, a clock stepped back
 * and a mark remembered from long ago: always the earliest record's.
 */
static void next_deadline_follows_renewals_in_any_order(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec[8];
    apr_time_t now = N;
    unsigned i, round;
    char url[64];

    (void)state;
    for (i = 0; i < ARRAY_LEN(rec); i++) {
        member_url(url, sizeof url, i);
        rec[i] = member(t, url, 1, now + i * SEC / 8);
    }
    /* round robin: the renewed one is always the earliest */
    for (round = 1; round <= 3; round++) {
        for (i = 0; i < ARRAY_LEN(rec); i++) {
            now = N + round * SEC + i * SEC / 8;
            announce(t, rec[i]->url, 1 + round, 0, now, BEACON_OK,
                     BEACON_ACT_RENEW, "renewal");
            assert_deadline_near(t, rec[(i + 1) % ARRAY_LEN(rec)]->last_seen +
                                        TIMEOUT, "the next one's lease");
        }
    }
    /* the clock steps back 5 s: the record renewed then is due first */
    announce(t, rec[4]->url, 10, 0, now - 5 * SEC, BEACON_OK, BEACON_ACT_RENEW,
             "renewed at a clock stepped back");
    assert_deadline_near(t, now - 5 * SEC + TIMEOUT, "the stepped one");
    /* a mark from a minute ago is released before any lease lapses */
    beacon_table_remember(t, "http://old", 5, now - 2 * SKEW);
    assert_deadline_near(t, now, "the old mark");
    assert_int_equal(beacon_table_release(t, now + 1), 1);
    assert_null(beacon_table_find(t, "http://old"));
    assert_deadline_near(t, now - 5 * SEC + TIMEOUT, "the stepped one again");
}

/*
 * Releasing records from the middle of hash chains keeps every other
 * record findable, and freed slots are reused: a mixed table of PENDING,
 * NOT_MANAGED, EVICTED and ACTIVE records, released and refilled.
 */
static void release_keeps_the_rest_findable_and_slots_reusable(void **state)
{
    beacon_table_t *t = new_table(0, SKEW);
    char url[64];
    unsigned i, expect_released = 0, round;

    (void)state;
    for (round = 0; round < 3; round++) {
        apr_time_t now = N + round * 10 * SKEW;
        unsigned kept = 0;

        /* round 0 fills the table; later rounds refill released slots */
        for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
            beacon_record_t *rec;

            member_url(url, sizeof url, i);
            if (beacon_table_find(t, url) != NULL) {
                continue;
            }
            rec = announce(t, url, 1, 0, now, BEACON_OK, BEACON_ACT_ADD,
                           "fill");
            switch ((i + round) % 4) {
            case 0: beacon_table_add_failed(rec, now); break;
            case 1: beacon_table_not_managed(rec); break;
            case 2:
                beacon_table_added(rec);
                if ((i + round) % 8 == 2) {
                    announce(t, url, 2, 1, now, BEACON_OK, BEACON_ACT_DISABLE,
                             "leaving");
                }
                break;
            default: beacon_table_added(rec); break;
            }
        }
        assert_int_equal(t->count, BEACON_TABLE_CAPACITY);

        expect_released = 0;
        for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
            beacon_record_t *rec;

            member_url(url, sizeof url, i);
            rec = beacon_table_find(t, url);
            assert_non_null(rec);
            if (rec->state != BEACON_REC_ACTIVE) {
                expect_released++;
            }
        }
        assert_int_equal(beacon_table_release(t, now + 2 * SKEW), 0);
        assert_int_equal(beacon_table_release(t, now + 2 * SKEW + 1),
                         expect_released);
        assert_int_equal(t->count, BEACON_TABLE_CAPACITY - expect_released);
        for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
            beacon_record_t *rec;

            member_url(url, sizeof url, i);
            rec = beacon_table_find(t, url);
            if (rec != NULL) {
                assert_state_equal(rec->state, BEACON_REC_ACTIVE, url);
                assert_string_equal(rec->url, url);
                kept++;
            }
        }
        assert_int_equal(kept, BEACON_TABLE_CAPACITY - expect_released);
    }
}

/* Records are linked by index: a byte copy of the table is a working table. */
static void a_copied_table_works_on_its_own(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_table_t *copy = alloc_table();
    beacon_record_t *rec;
    char url[64];

    (void)state;
    fill(t, 40, N);
    memcpy(copy, t, beacon_table_size(BEACON_TABLE_CAPACITY));
    memset(t, 0xa5, beacon_table_size(BEACON_TABLE_CAPACITY)); /* gone */

    member_url(url, sizeof url, 17);
    rec = beacon_table_find(copy, url);
    assert_non_null(rec);
    assert_true(rec >= &copy->rec[0] && rec < &copy->rec[BEACON_TABLE_CAPACITY]);
    announce(copy, url, 1, 0, N, BEACON_DROP_REPLAYED_TS, 0, "replay in copy");
    announce(copy, url, 2, 0, N, BEACON_OK, BEACON_ACT_RENEW, "in copy");
    member_url(url, sizeof url, 40);
    announce(copy, url, 1, 0, N, BEACON_OK, BEACON_ACT_ADD, "new in copy");
    assert_int_equal(copy->count, 41);
}

/* ------------------------------------------------------------------ */
/* Leases                                                              */

static void timeout_zero_never_lapses(void **state)
{
    beacon_table_t *t = new_table(0, SKEW);
    beacon_record_t *rec = member(t, "http://a", 1, N);
    unsigned cursor = 0;

    (void)state;
    assert_null(beacon_table_next_lapsed(t, N + 3650 * 86400 * SEC, &cursor));
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "after ten years");
}

static void a_lease_lapses_one_microsecond_after_timeout(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec = member(t, "http://a", 1, N);
    unsigned cursor = 0;

    (void)state;
    assert_null(beacon_table_next_lapsed(t, N + TIMEOUT, &cursor));
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "silent exactly T");

    cursor = 0;
    assert_true(beacon_table_next_lapsed(t, N + TIMEOUT + 1, &cursor) == rec);
    assert_state_equal(rec->state, BEACON_REC_EVICTED, "silent T + 1us");
    assert_null(beacon_table_next_lapsed(t, N + TIMEOUT + 1, &cursor));
    /* Returned once: a new scan finds nothing more to evict. */
    cursor = 0;
    assert_null(beacon_table_next_lapsed(t, N + 100 * TIMEOUT, &cursor));
    assert_state_equal(rec->state, BEACON_REC_EVICTED, "after the scan");
}

/* Each lapsed record exactly once, and only ACTIVE ones. */
static void next_lapsed_returns_each_lapsed_member_once(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *a = member(t, "http://a", 1, N);
    beacon_record_t *b = member(t, "http://b", 1, N + 5 * SEC);
    beacon_record_t *c = member(t, "http://c", 1, N + 2 * SEC);
    beacon_record_t *fresh = announce(t, "http://new", 1, 0, N, BEACON_OK,
                                      BEACON_ACT_ADD, "never added");
    beacon_record_t *pending = announce(t, "http://pending", 1, 0, N, BEACON_OK,
                                        BEACON_ACT_ADD, "add failed");
    beacon_record_t *got;
    unsigned cursor = 0, seen_a = 0, seen_c = 0, other = 0;

    (void)state;
    beacon_table_add_failed(pending, N);
    while ((got = beacon_table_next_lapsed(t, N + 2 * SEC + TIMEOUT + 1,
                                           &cursor)) != NULL) {
        if (got == a) {
            seen_a++;
        } else if (got == c) {
            seen_c++;
        } else {
            print_error("lapsed: %s\n", got->url);
            other++;
        }
        assert_true(seen_a + seen_c + other <= 5);
    }
    assert_int_equal(seen_a, 1);
    assert_int_equal(seen_c, 1);
    assert_int_equal(other, 0);
    assert_state_equal(a->state, BEACON_REC_EVICTED, "a");
    assert_state_equal(c->state, BEACON_REC_EVICTED, "c");
    assert_state_equal(b->state, BEACON_REC_ACTIVE, "b, silent less than T");
    assert_state_equal(fresh->state, BEACON_REC_NEW, "never added");
    assert_state_equal(pending->state, BEACON_REC_PENDING, "add failed");
}

static void an_evicted_member_that_announces_again_is_enabled(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec = member(t, "http://a", 100, N);
    apr_time_t later = N + TIMEOUT + 1;
    unsigned cursor = 0;

    (void)state;
    assert_true(beacon_table_next_lapsed(t, later, &cursor) == rec);
    /* The replay mark outlives the eviction. */
    announce(t, "http://a", 100, 0, later, BEACON_DROP_REPLAYED_TS, 0,
             "replay after eviction");
    assert_state_equal(rec->state, BEACON_REC_EVICTED, "after a replay");
    announce(t, "http://a", 101, 0, later, BEACON_OK, BEACON_ACT_ENABLE,
             "back after eviction");
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "enabled");
    assert_true(rec->last_seen == later);
    announce(t, "http://a", 102, 0, later, BEACON_OK, BEACON_ACT_RENEW,
             "enabled once");
    /* The new lease runs from the re-announcement. */
    cursor = 0;
    assert_null(beacon_table_next_lapsed(t, later + TIMEOUT, &cursor));
    cursor = 0;
    assert_true(beacon_table_next_lapsed(t, later + TIMEOUT + 1, &cursor) == rec);
}

static void leaving_disables_and_the_next_announcement_enables(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec = member(t, "http://a", 1, N);
    unsigned cursor = 0;

    (void)state;
    announce(t, "http://a", 2, 1, N + SEC, BEACON_OK, BEACON_ACT_DISABLE,
             "leaving");
    assert_state_equal(rec->state, BEACON_REC_EVICTED, "left");
    /* Already out of rotation: not evicted a second time. */
    assert_null(beacon_table_next_lapsed(t, N + 100 * TIMEOUT, &cursor));
    announce(t, "http://a", 3, 0, N + 2 * SEC, BEACON_OK, BEACON_ACT_ENABLE,
             "back after leaving");
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "back");
}

/* ------------------------------------------------------------------ */
/* Release                                                             */

typedef enum {
    LAPSED,      /* ACTIVE, lease lapsed, collected by next_lapsed */
    LEFT,        /* announced state=leaving */
    ADD_FAILED,  /* PENDING */
    NOT_OURS     /* NOT_MANAGED */
} how_t;

typedef struct {
    const char *name;
    how_t how;
    beacon_state_t state;
} release_row_t;

/*
 * Released after more than 2 x max_skew of silence, counted from the last
 * accepted announcement; then the url is new again (its mark forgotten).
 */
static void silent_records_are_released_after_twice_max_skew(void **state)
{
    static const release_row_t rows[] = {
        {"an evicted (lapsed) member", LAPSED, BEACON_REC_EVICTED},
        {"an evicted (left) member", LEFT, BEACON_REC_EVICTED},
        {"a pending add", ADD_FAILED, BEACON_REC_PENDING},
        {"a url not managed by beacon", NOT_OURS, BEACON_REC_NOT_MANAGED},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const release_row_t *row = &rows[i];
        beacon_table_t *t = new_table(TIMEOUT, SKEW);
        beacon_record_t *rec = announce(t, "http://a", 100, 0, N, BEACON_OK,
                                        BEACON_ACT_ADD, row->name);
        apr_time_t last = N;
        unsigned cursor = 0, released;

        switch (row->how) {
        case LAPSED:
            beacon_table_added(rec);
            assert_true(beacon_table_next_lapsed(t, N + TIMEOUT + 1, &cursor)
                        == rec);
            break;
        case LEFT:
            beacon_table_added(rec);
            last = N + SEC;
            announce(t, "http://a", 101, 1, last, BEACON_OK, BEACON_ACT_DISABLE,
                     row->name);
            break;
        case ADD_FAILED:
            beacon_table_add_failed(rec, N);
            break;
        case NOT_OURS:
            beacon_table_not_managed(rec);
            break;
        }
        assert_state_equal(rec->state, row->state, row->name);

        released = beacon_table_release(t, last + 2 * SKEW);
        if (released != 0) {
            print_error("case: %s, silent exactly 2 x max_skew\n", row->name);
        }
        assert_int_equal(released, 0);
        assert_true(beacon_table_find(t, "http://a") == rec);

        released = beacon_table_release(t, last + 2 * SKEW + 1);
        if (released != 1) {
            print_error("case: %s, silent 2 x max_skew + 1us\n", row->name);
        }
        assert_int_equal(released, 1);
        assert_null(beacon_table_find(t, "http://a"));
        assert_int_equal(t->count, 0);

        /* New again: ADD, and the old high-water mark is forgotten. */
        announce(t, "http://a", 5, 0, last + 2 * SKEW + 1, BEACON_OK,
                 BEACON_ACT_ADD, row->name);
    }
}

static void active_members_are_never_released(void **state)
{
    beacon_table_t *with_lease = new_table(TIMEOUT, SKEW);
    beacon_table_t *forever = new_table(0, SKEW);

    (void)state;
    member(with_lease, "http://a", 1, N);
    member(forever, "http://a", 1, N);
    /* Lapsed but not yet collected by next_lapsed: still ACTIVE. */
    assert_int_equal(beacon_table_release(with_lease, N + 365 * 86400 * SEC), 0);
    assert_non_null(beacon_table_find(with_lease, "http://a"));
    assert_int_equal(beacon_table_release(forever, N + 365 * 86400 * SEC), 0);
    assert_non_null(beacon_table_find(forever, "http://a"));
}

/*
 * A url the caller declined (someone else's member) is accepted, not
 * dropped: its announcements advance the mark and last_seen (which times
 * its release) and say BEACON_ACT_NOT_MANAGED, leaving or not.
 */
static void a_url_not_managed_by_beacon_is_left_alone(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec = announce(t, "http://a", 1, 0, N, BEACON_OK,
                                    BEACON_ACT_ADD, "first");
    unsigned cursor = 0;

    (void)state;
    beacon_table_not_managed(rec);
    assert_state_equal(rec->state, BEACON_REC_NOT_MANAGED, "not managed");
    announce(t, "http://a", 2, 0, N + SEC, BEACON_OK, BEACON_ACT_NOT_MANAGED,
             "announced again");
    assert_true(rec->high_ts == 2 && rec->last_seen == N + SEC);
    announce(t, "http://a", 3, 1, N + 2 * SEC, BEACON_OK,
             BEACON_ACT_NOT_MANAGED, "announced leaving");
    assert_true(rec->high_ts == 3 && rec->last_seen == N + 2 * SEC);
    announce(t, "http://a", 3, 0, N + 3 * SEC, BEACON_DROP_REPLAYED_TS, 0,
             "a replay of someone else's url is still a replay");
    assert_state_equal(rec->state, BEACON_REC_NOT_MANAGED, "still");
    assert_null(beacon_table_next_lapsed(t, N + 100 * TIMEOUT, &cursor));
}

typedef struct {
    const char *name;
    beacon_state_t state;   /* the record's before the announcement */
    int leaving;
    beacon_action_t action;
    beacon_state_t after;
} transition_row_t;

/* Every state, announcing or leaving: the action and the state after. */
static void each_state_answers_an_announcement_with_one_action(void **state)
{
    static const transition_row_t rows[] = {
        {"a new url is added", BEACON_REC_NEW, 0, BEACON_ACT_ADD,
         BEACON_REC_NEW},
        {"leaving from a url never added changes nothing", BEACON_REC_NEW, 1,
         BEACON_ACT_NONE, BEACON_REC_NEW},
        {"a pending add waits out its back-off", BEACON_REC_PENDING, 0,
         BEACON_ACT_WAIT, BEACON_REC_PENDING},
        {"leaving from a pending add changes nothing", BEACON_REC_PENDING, 1,
         BEACON_ACT_NONE, BEACON_REC_PENDING},
        {"a member in rotation renews its lease", BEACON_REC_ACTIVE, 0,
         BEACON_ACT_RENEW, BEACON_REC_ACTIVE},
        {"a member in rotation that leaves is disabled", BEACON_REC_ACTIVE, 1,
         BEACON_ACT_DISABLE, BEACON_REC_EVICTED},
        {"an evicted member that announces is enabled", BEACON_REC_EVICTED, 0,
         BEACON_ACT_ENABLE, BEACON_REC_ACTIVE},
        {"an evicted member that leaves again changes nothing",
         BEACON_REC_EVICTED, 1, BEACON_ACT_NONE, BEACON_REC_EVICTED},
        {"someone else's url is not managed", BEACON_REC_NOT_MANAGED, 0,
         BEACON_ACT_NOT_MANAGED, BEACON_REC_NOT_MANAGED},
        {"someone else's url leaving is not managed either",
         BEACON_REC_NOT_MANAGED, 1, BEACON_ACT_NOT_MANAGED,
         BEACON_REC_NOT_MANAGED},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const transition_row_t *r = &rows[i];
        beacon_table_t *t = new_table(TIMEOUT, SKEW);
        beacon_record_t *rec = announce(t, "http://a", 1, 0, N, BEACON_OK,
                                        BEACON_ACT_ADD, r->name);

        /* PENDING with retry_at in the future: the back-off is running. */
        if (r->state == BEACON_REC_PENDING) {
            beacon_table_add_failed(rec, N);
        }
        rec->state = r->state;
        announce(t, "http://a", 2, r->leaving, N, BEACON_OK, r->action,
                 r->name);
        assert_state_equal(rec->state, r->after, r->name);
        free_tables(NULL);
    }
}

/* The names beaconctl listen and the status views print. */
static void names_of_states_and_actions_are_distinct_words(void **state)
{
    static const char *const states[] = {"free", "new", "pending add",
                                         "active", "evicted", "not managed"};
    static const char *const actions[] = {"ignore", "renew", "add", "enable",
                                          "disable", "wait", "not-managed"};
    size_t i, j;

    (void)state;
    for (i = 0; i < ARRAY_LEN(states); i++) {
        assert_string_equal(beacon_state_name((beacon_state_t)i), states[i]);
        for (j = 0; j < i; j++) {
            assert_string_not_equal(states[i], states[j]);
        }
    }
    assert_int_equal(BEACON_REC_NOT_MANAGED + 1, ARRAY_LEN(states));
    for (i = 0; i < ARRAY_LEN(actions); i++) {
        assert_string_equal(beacon_action_name((beacon_action_t)i), actions[i]);
        for (j = 0; j < i; j++) {
            assert_string_not_equal(actions[i], actions[j]);
        }
    }
    assert_int_equal(BEACON_ACT_NOT_MANAGED + 1, ARRAY_LEN(actions));
    /* Out of range: a name, never NULL. */
    assert_string_equal(beacon_state_name((beacon_state_t)99), "free");
    assert_string_equal(beacon_action_name((beacon_action_t)99), "ignore");
}

/* ------------------------------------------------------------------ */
/* Adopt                                                               */

static void adopt_gives_a_fresh_lease_from_adoption(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    apr_time_t at = N + 7 * SEC;
    beacon_record_t *rec;
    unsigned cursor = 0;

    (void)state;
    assert_reason_equal(beacon_table_adopt(t, "http://a", 0, 0, at), BEACON_OK,
                        "adopt enabled");
    rec = beacon_table_find(t, "http://a");
    assert_non_null(rec);
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "adopted enabled");
    assert_true(rec->high_ts == 0);
    assert_true(rec->last_seen == at);
    assert_int_equal(t->count, 1);
    assert_null(beacon_table_next_lapsed(t, at + TIMEOUT, &cursor));
    cursor = 0;
    assert_true(beacon_table_next_lapsed(t, at + TIMEOUT + 1, &cursor) == rec);
}

static void an_adopted_member_takes_any_ts_and_is_not_added_again(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);

    (void)state;
    assert_reason_equal(beacon_table_adopt(t, "http://a", 0, 0, N), BEACON_OK,
                        "adopt");
    announce(t, "http://a", 1, 0, N, BEACON_OK, BEACON_ACT_RENEW,
             "first announcement after adoption");
}

static void a_disabled_member_is_adopted_evicted_and_enabled_on_return(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec;
    unsigned cursor = 0;

    (void)state;
    assert_reason_equal(beacon_table_adopt(t, "http://a", 1, 0, N), BEACON_OK,
                        "adopt disabled");
    rec = beacon_table_find(t, "http://a");
    assert_non_null(rec);
    assert_state_equal(rec->state, BEACON_REC_EVICTED, "adopted disabled");
    assert_null(beacon_table_next_lapsed(t, N + 100 * TIMEOUT, &cursor));
    announce(t, "http://a", 1, 0, N + SEC, BEACON_OK, BEACON_ACT_ENABLE,
             "announcement after adopting disabled");
    assert_state_equal(rec->state, BEACON_REC_ACTIVE, "enabled");
}

/* A former member whose slot went to another url: a new owner keeps its
 * mark until every datagram it accepted is stale. */
static void a_remembered_mark_drops_replays_until_it_is_stale(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    apr_time_t heard = N - 5 * SEC;
    beacon_record_t *rec;

    (void)state;
    assert_reason_equal(beacon_table_remember(t, "http://a", 700, heard), BEACON_OK,
                        "remember");
    rec = beacon_table_find(t, "http://a");
    assert_non_null(rec);
    assert_state_equal(rec->state, BEACON_REC_NEW, "remembered");
    assert_true(rec->last_seen == heard);
    announce(t, "http://a", 700, 0, N, BEACON_DROP_REPLAYED_TS, BEACON_ACT_NONE,
             "the replay of the last accepted ts");
    announce(t, "http://a", 699, 0, N, BEACON_DROP_REPLAYED_TS, BEACON_ACT_NONE,
             "an older ts");
    assert_int_equal(beacon_table_release(t, heard + 2 * SKEW), 0);
    assert_int_equal(beacon_table_release(t, heard + 2 * SKEW + 1), 1);
    assert_null(beacon_table_find(t, "http://a"));
}

static void a_remembered_mark_is_added_anew_by_a_fresh_announcement(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);

    (void)state;
    assert_reason_equal(beacon_table_remember(t, "http://a", 700, N), BEACON_OK,
                        "remember");
    announce(t, "http://a", 701, 0, N + SEC, BEACON_OK, BEACON_ACT_ADD,
             "a fresh announcement of the old url");
}

static void remember_only_raises_an_existing_mark(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *active = member(t, "http://a", 500, N);

    (void)state;
    assert_reason_equal(beacon_table_remember(t, "http://a", 400, N - SEC), BEACON_OK,
                        "a lower mark");
    assert_true(active->high_ts == 500);
    assert_true(active->last_seen == N);
    assert_state_equal(active->state, BEACON_REC_ACTIVE, "still active");
    assert_reason_equal(beacon_table_remember(t, "http://a", 900, N - SEC), BEACON_OK,
                        "a higher mark");
    assert_true(active->high_ts == 900);
    assert_true(active->last_seen == N);
}

static void remember_into_a_full_table_says_so(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    char url[32];
    int i;

    (void)state;
    for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
        snprintf(url, sizeof(url), "http://h%d", i);
        assert_reason_equal(beacon_table_remember(t, url, 1, N), BEACON_OK, url);
    }
    assert_reason_equal(beacon_table_remember(t, "http://one-more", 1, N),
                        BEACON_DROP_TABLE_FULL, "full");
}

static void adopt_leaves_an_existing_record_alone(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *active = member(t, "http://a", 500, N);
    beacon_record_t *other = announce(t, "http://b", 9, 0, N, BEACON_OK,
                                      BEACON_ACT_ADD, "b");

    (void)state;
    beacon_table_not_managed(other);
    assert_reason_equal(beacon_table_adopt(t, "http://a", 1, 0, N + 5 * SEC),
                        BEACON_OK, "adopt an existing ACTIVE record");
    assert_state_equal(active->state, BEACON_REC_ACTIVE, "existing active");
    assert_true(active->high_ts == 500);
    assert_true(active->last_seen == N);
    assert_reason_equal(beacon_table_adopt(t, "http://b", 0, 0, N + 5 * SEC),
                        BEACON_OK, "adopt an existing NOT_MANAGED record");
    assert_state_equal(other->state, BEACON_REC_NOT_MANAGED, "existing other");
    assert_true(other->high_ts == 9);
    assert_int_equal(t->count, 2);
    announce(t, "http://a", 500, 0, N + 5 * SEC, BEACON_DROP_REPLAYED_TS, 0,
             "the mark survived the adoption");
}

static void adopt_reports_a_full_table(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    char url[64];

    (void)state;
    fill(t, BEACON_TABLE_CAPACITY, N);
    member_url(url, sizeof url, BEACON_TABLE_CAPACITY);
    assert_reason_equal(beacon_table_adopt(t, url, 0, 0, N),
                        BEACON_DROP_TABLE_FULL, "adopt into a full table");
    assert_null(beacon_table_find(t, url));
    member_url(url, sizeof url, 0);
    assert_reason_equal(beacon_table_adopt(t, url, 0, 0, N), BEACON_OK,
                        "adopt a known url into a full table");
    assert_int_equal(t->count, BEACON_TABLE_CAPACITY);
}

static void adopt_keeps_the_mark_it_is_given(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);

    (void)state;
    assert_reason_equal(beacon_table_adopt(t, "http://a", 1, 700, N), BEACON_OK,
                        "adopt with a kept mark");
    announce(t, "http://a", 700, 0, N + SEC, BEACON_DROP_REPLAYED_TS, 0,
             "a datagram accepted by the last owner");
    announce(t, "http://a", 701, 0, N + SEC, BEACON_OK, BEACON_ACT_ENABLE,
             "a newer one");
}

static void a_deferred_add_retries_when_room_frees(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec = announce(t, "http://a", 1, 0, N, BEACON_OK,
                                    BEACON_ACT_ADD, "a");
    int i;

    (void)state;
    for (i = 0; i < 6; i++) {
        beacon_table_add_failed(rec, N); /* back-off grown to 32 s */
    }
    beacon_table_add_deferred(rec, N, N + 3 * SEC);
    assert_state_equal(rec->state, BEACON_REC_PENDING, "deferred");
    assert_true(rec->retry_at == N + 3 * SEC);
    announce(t, "http://a", 2, 0, N + 3 * SEC - 1, BEACON_OK, BEACON_ACT_WAIT,
             "before the room frees");
    announce(t, "http://a", 3, 0, N + 3 * SEC, BEACON_OK, BEACON_ACT_ADD,
             "when it frees");
    beacon_table_add_deferred(rec, N + 3 * SEC, N + 500 * SEC);
    assert_true(rec->retry_at < N + 500 * SEC); /* the back-off is sooner */
}

static void an_unlisted_member_is_added_again_and_keeps_its_mark(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *rec = member(t, "http://a", 500, N);

    (void)state;
    announce(t, "http://a", 501, 1, N + SEC, BEACON_OK, BEACON_ACT_DISABLE,
             "leaving");
    beacon_table_unlisted(t, "http://a");
    beacon_table_unlisted(t, "http://never-seen");
    assert_state_equal(rec->state, BEACON_REC_NEW, "unlisted");
    announce(t, "http://a", 501, 0, N + 2 * SEC, BEACON_DROP_REPLAYED_TS, 0,
             "a replay after the unlisting");
    announce(t, "http://a", 502, 0, N + 2 * SEC, BEACON_OK, BEACON_ACT_ADD,
             "its return");
    assert_int_equal(t->count, 1);
}

/* ------------------------------------------------------------------ */
/* Deadline                                                            */

/* A deadline relative to N, so a failure reads "N+13.000001s". */
static const char *when(char buf[48], apr_time_t d)
{
    if (d == 0) {
        return "0 (never)";
    }
    snprintf(buf, 48, "N%+.6fs", (double)(d - N) / (double)SEC);
    return buf;
}

static void assert_deadline_equal(const beacon_table_t *t, apr_time_t want,
                                  const char *what)
{
    apr_time_t d = beacon_table_next_deadline(t);
    char b1[48], b2[48];

    if (d != want) {
        print_error("%s: deadline %s, want %s\n", what, when(b1, d),
                    when(b2, want));
    }
    assert_int_equal(d, want);
}

/*
 * A lease "lapses" when silent for more than timeout, so its deadline is
 * last_seen + timeout or the microsecond after; both wake the caller in
 * time. Anything else (another record's, 0) is wrong. Same for releases.
 */
static void assert_deadline_near(const beacon_table_t *t, apr_time_t at,
                                 const char *what)
{
    apr_time_t d = beacon_table_next_deadline(t);
    char b1[48], b2[48];

    if (d != at && d != at + 1) {
        print_error("%s: deadline %s, want %s (or 1us later)\n", what,
                    when(b1, d), when(b2, at));
    }
    assert_true(d == at || d == at + 1);
}

static void next_deadline_is_zero_when_nothing_is_ever_due(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_table_t *forever = new_table(0, SKEW);

    (void)state;
    assert_deadline_equal(t, 0, "empty table");
    /* Members without a lease (timeout 0) are never due. */
    fill(forever, 5, N);
    assert_deadline_equal(forever, 0, "members without a lease");
}

/* A url that was told to be added but never was (it only said it was
 * leaving, or the add is still outstanding) is forgotten after silence. */
static void next_deadline_releases_a_url_never_added(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);

    (void)state;
    announce(t, "http://a", 1, 0, N, BEACON_OK, BEACON_ACT_ADD, "add only");
    assert_deadline_near(t, N + 2 * SKEW, "release of a url never added");
    assert_int_equal(beacon_table_release(t, N + 2 * SKEW), 0);
    assert_int_equal(beacon_table_release(t, N + 2 * SKEW + 1), 1);
    assert_null(beacon_table_find(t, "http://a"));
}

static void next_deadline_is_the_earliest_due_event(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_record_t *a, *p;
    unsigned cursor = 0;

    (void)state;
    member(t, "http://b", 1, N + 3 * SEC);
    a = member(t, "http://a", 1, N);
    member(t, "http://c", 1, N + 4 * SEC);
    assert_deadline_near(t, N + TIMEOUT, "lease of a");

    /* a lapses; next is b's lease (a's release is 2 x max_skew away). */
    assert_true(beacon_table_next_lapsed(t, N + TIMEOUT + 1, &cursor) == a);
    assert_deadline_near(t, N + 3 * SEC + TIMEOUT, "lease of b");

    /* A pending add is retried on its next announcement, so its retry_at
     * sets no deadline: b's lease is still the earliest. */
    p = announce(t, "http://p", 1, 0, N + 4 * SEC, BEACON_OK, BEACON_ACT_ADD,
                 "p");
    beacon_table_add_failed(p, N + 4 * SEC);
    assert_true(p->retry_at < N + 3 * SEC + TIMEOUT);
    assert_deadline_near(t, N + 3 * SEC + TIMEOUT, "lease of b, not p's retry");
}

static void next_deadline_includes_releases(void **state)
{
    beacon_table_t *t = new_table(0, SKEW);

    (void)state;
    member(t, "http://a", 1, N);
    announce(t, "http://a", 2, 1, N + SEC, BEACON_OK, BEACON_ACT_DISABLE,
             "leaving");
    assert_deadline_near(t, N + SEC + 2 * SKEW, "release of a left member");
}

/* ------------------------------------------------------------------ */
/* beacon_receive, end to end                                          */

static size_t sign(char *out, size_t size, const beacon_key_t *k,
                   const char *signed_part)
{
    unsigned char mac[BEACON_MAC_LEN];
    size_t len = strlen(signed_part);
    unsigned i;

    beacon_mac(k, signed_part, len, mac);
    assert_true(len + 5 + 2 * BEACON_MAC_LEN < size);
    memcpy(out, signed_part, len);
    memcpy(out + len, " mac=", 5);
    len += 5;
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        snprintf(out + len, 3, "%02x", mac[i]);
        len += 2;
    }
    /* Deliberately not NUL-terminated where receive could notice. */
    out[len] = 'X';
    return len;
}

/*
 * The first v1 vector of tests/vectors/announcements.txt under the hex key
 * with a url (with_url) or without one (the heartbeat), copied into out.
 */
static void spec_vector(int with_url, char *out, size_t size)
{
    static const char *const cols[] = {"version", "secret", "datagram", NULL};
    vec_table_t t = load_vectors("announcements.txt", cols, 2);
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        const vec_field_t *dg = &t.rows[i].col[2];

        if (vec_is(&t.rows[i].col[0], "v1") &&
            strncmp(t.rows[i].col[1].text, "hex:", 4) == 0 &&
            (strstr(dg->text, " url=") != NULL) == with_url) {
            assert_true(dg->len < size);
            memcpy(out, dg->text, dg->len + 1);
            vec_free(&t);
            return;
        }
    }
    fail_msg("announcements.txt: no v1 vector %s a url",
             with_url ? "with" : "without");
}

static void receive_runs_every_step(void **state)
{
    char v1[BEACON_MAX_DATAGRAM + 1], v2[BEACON_MAX_DATAGRAM + 1];
    /* A max_skew of its own, so receive must take the table's. */
    const apr_interval_time_t skew = 7 * SEC;
    beacon_table_t *t = new_table(TIMEOUT, skew);
    beacon_key_t k = spec_hex_key();
    beacon_event_t ev;
    beacon_record_t *rec;
    char dg[512];
    size_t len;

    (void)state;
    spec_vector(1, v1, sizeof v1);
    spec_vector(0, v2, sizeof v2);
    /* The url vector: a new member, by its canonical url. */
    memset(&ev, 0xa5, sizeof ev);
    assert_reason_equal(beacon_receive(t, &k, v1, strlen(v1), N, &ev),
                        BEACON_OK, "url vector");
    assert_action_equal(ev.action, BEACON_ACT_ADD, "url vector");
    assert_string_equal(ev.url, "http://10.0.0.5:8080");
    assert_non_null(ev.rec);
    assert_string_equal(ev.rec->url, "http://10.0.0.5:8080");
    assert_true(ev.rec == beacon_table_find(t, "http://10.0.0.5:8080"));
    assert_true(ev.dg.ts == N);
    assert_true(ev.dg.host.ptr == strstr(v1, "web-1"));
    rec = ev.rec;
    beacon_table_added(rec);

    /* The heartbeat vector: OK, no record, no action. */
    memset(&ev, 0xa5, sizeof ev);
    assert_reason_equal(beacon_receive(t, &k, v2, strlen(v2), N, &ev),
                        BEACON_OK, "heartbeat vector");
    assert_null(ev.rec);
    assert_action_equal(ev.action, BEACON_ACT_NONE, "heartbeat vector");
    assert_string_equal(ev.url, "");
    assert_int_equal(t->count, 1);

    /* The same datagram again: a second copy of the one accepted. */
    memset(&ev, 0xa5, sizeof ev);
    assert_reason_equal(beacon_receive(t, &k, v1, strlen(v1), N + SEC, &ev),
                        BEACON_DROP_REPLAYED_TS, "url vector replayed");
    assert_true(rec->high_ts == N);
    assert_int_equal(ev.second_copy, 1);

    /* Another spelling of the same origin is the same member. */
    len = sign(dg, sizeof dg, &k,
               "BEACON url=HTTP://10.0.0.5:8080/ ts=1796000000000005");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_OK, "same origin, other spelling");
    assert_true(ev.rec == rec);
    assert_string_equal(ev.url, "http://10.0.0.5:8080");
    assert_action_equal(ev.action, BEACON_ACT_RENEW, "known member");
    assert_int_equal(t->count, 1);
    assert_int_equal(ev.second_copy, 0);

    /* The first datagram, now older than the one accepted: a replay. */
    assert_reason_equal(beacon_receive(t, &k, v1, strlen(v1), N + SEC, &ev),
                        BEACON_DROP_REPLAYED_TS, "url vector, older");
    assert_int_equal(ev.second_copy, 0);

    /* Unacceptable urls: nothing enters the table. */
    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://10.0.0.5:8080/x ts=1796000000000006");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_DROP_UNACCEPTABLE_URL, "a url with a path");
    len = sign(dg, sizeof dg, &k,
               "BEACON url=unix:/run/x.sock|http://h ts=1796000000000006");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_DROP_UNACCEPTABLE_URL, "the unix socket form");
    assert_int_equal(t->count, 1);

    /* Verification comes first: a wrong mac touches nothing. */
    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://10.0.0.9 ts=1796000000000007");
    dg[len - 1] = dg[len - 1] == '0' ? '1' : '0';
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_DROP_MAC_MISMATCH, "wrong mac");
    assert_null(beacon_table_find(t, "http://10.0.0.9"));

    /* Freshness uses the table's max_skew. */
    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://10.0.0.5:8080 ts=1796000000000008");
    assert_reason_equal(
        beacon_receive(t, &k, dg, len, N + 8 + skew + 1, &ev),
        BEACON_DROP_STALE_TS, "beyond the table's max_skew");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + 8 - skew - 1, &ev),
                        BEACON_DROP_STALE_TS, "ahead beyond the table's max_skew");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + 8 + skew, &ev),
                        BEACON_OK, "at the table's max_skew");

    /* state=leaving reaches the table. */
    len = sign(dg, sizeof dg, &k, "BEACON url=http://10.0.0.5:8080 "
                                  "ts=1796000000000009 state=leaving");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + 2 * SEC, &ev),
                        BEACON_OK, "leaving");
    assert_action_equal(ev.action, BEACON_ACT_DISABLE, "leaving");
    assert_state_equal(rec->state, BEACON_REC_EVICTED, "left");
}

/*
 * A receiver with a service (ProxyBeaconService): a datagram for another
 * service, or for none, is dropped before its url or ts reach the table,
 * so it can neither add a member nor move a member's replay mark. NULL or
 * "" accepts any datagram again.
 */
static void a_foreign_service_never_touches_the_table(void **state)
{
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_key_t k = spec_hex_key();
    beacon_record_t *rec;
    beacon_event_t ev;
    char dg[512];
    size_t len;

    (void)state;
    assert_string_equal(t->service, ""); /* none until set */
    beacon_table_set_service(t, "shop");
    assert_string_equal(t->service, "shop");
    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://a ts=1796000000000000 svc=shop");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N, &ev), BEACON_OK,
                        "the receiver's service");
    assert_action_equal(ev.action, BEACON_ACT_ADD, "the receiver's service");
    rec = ev.rec;
    beacon_table_added(rec);

    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://a ts=1796000000000005 svc=cart");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_DROP_WRONG_SERVICE, "another service");
    assert_null(ev.rec);
    assert_string_equal(ev.url, "");
    len = sign(dg, sizeof dg, &k, "BEACON url=http://a ts=1796000000000006");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_DROP_WRONG_SERVICE, "no service");
    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://b ts=1796000000000006 svc=cart");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_DROP_WRONG_SERVICE,
                        "a new url, another service");
    assert_true(rec->high_ts == N);
    assert_true(rec->last_seen == N);
    assert_null(beacon_table_find(t, "http://b"));
    assert_int_equal(t->count, 1);

    /* The member's own next datagram, older than the foreign ones. */
    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://a ts=1796000000000003 svc=shop");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_OK, "the member after foreign datagrams");
    assert_action_equal(ev.action, BEACON_ACT_RENEW, "renewed");

    beacon_table_set_service(t, NULL);
    assert_string_equal(t->service, "");
    len = sign(dg, sizeof dg, &k,
               "BEACON url=http://a ts=1796000000000007 svc=cart");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_OK, "no service: any svc");
    beacon_table_set_service(t, "");
    len = sign(dg, sizeof dg, &k, "BEACON url=http://a ts=1796000000000008");
    assert_reason_equal(beacon_receive(t, &k, dg, len, N + SEC, &ev),
                        BEACON_OK, "no service: no svc");
}

/* set_service takes a valid name only; anything else is a caller's bug,
 * and the table then fails closed: no datagram names that service. */
static void an_invalid_service_matches_no_datagram(void **state)
{
    static const char *const bad[] = {
        "shop!", "my shop",
        "s123456789012345678901234567890123456789012345678901234567890123",
    };
    beacon_table_t *t = new_table(TIMEOUT, SKEW);
    beacon_key_t k = spec_hex_key();
    beacon_event_t ev;
    char dg[512];
    size_t i, len;

    (void)state;
    for (i = 0; i < ARRAY_LEN(bad); i++) {
        beacon_table_set_service(t, bad[i]);
        assert_true(t->service[0] != '\0');
        assert_false(beacon_service_is_valid(t->service));
        len = sign(dg, sizeof dg, &k, "BEACON url=http://a ts=1796000000000000 "
                                      "svc=s12345678901234567890123456789012"
                                      "345678901234567890123456789012");
        assert_reason_equal(beacon_receive(t, &k, dg, len, N, &ev),
                            BEACON_DROP_WRONG_SERVICE, bad[i]);
        len = sign(dg, sizeof dg, &k,
                   "BEACON url=http://a ts=1796000000000000");
        assert_reason_equal(beacon_receive(t, &k, dg, len, N, &ev),
                            BEACON_DROP_WRONG_SERVICE, bad[i]);
    }
    assert_int_equal(t->count, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(replay_counter_script, free_tables),
        cmocka_unit_test_teardown(a_replayed_announcement_does_not_renew_the_lease, free_tables),
        cmocka_unit_test_teardown(first_announcement_adds_and_later_ones_renew, free_tables),
        cmocka_unit_test_teardown(failed_adds_back_off_doubling_up_to_the_cap, free_tables),
        cmocka_unit_test_teardown(the_table_holds_256_urls_and_a_release_makes_room, free_tables),
        cmocka_unit_test_teardown(a_table_is_sized_from_its_capacity, free_tables),
        cmocka_unit_test_teardown(a_table_is_full_at_exactly_its_capacity, free_tables),
        cmocka_unit_test_teardown(housekeeping_reads_only_the_oldest_records, free_tables),
        cmocka_unit_test_teardown(next_deadline_follows_renewals_in_any_order, free_tables),
        cmocka_unit_test_teardown(release_keeps_the_rest_findable_and_slots_reusable, free_tables),
        cmocka_unit_test_teardown(a_copied_table_works_on_its_own, free_tables),
        cmocka_unit_test_teardown(timeout_zero_never_lapses, free_tables),
        cmocka_unit_test_teardown(a_lease_lapses_one_microsecond_after_timeout, free_tables),
        cmocka_unit_test_teardown(next_lapsed_returns_each_lapsed_member_once, free_tables),
        cmocka_unit_test_teardown(an_evicted_member_that_announces_again_is_enabled, free_tables),
        cmocka_unit_test_teardown(leaving_disables_and_the_next_announcement_enables, free_tables),
        cmocka_unit_test_teardown(silent_records_are_released_after_twice_max_skew, free_tables),
        cmocka_unit_test_teardown(active_members_are_never_released, free_tables),
        cmocka_unit_test_teardown(a_url_not_managed_by_beacon_is_left_alone, free_tables),
        cmocka_unit_test_teardown(each_state_answers_an_announcement_with_one_action, free_tables),
        cmocka_unit_test_teardown(names_of_states_and_actions_are_distinct_words, free_tables),
        cmocka_unit_test_teardown(adopt_gives_a_fresh_lease_from_adoption, free_tables),
        cmocka_unit_test_teardown(an_adopted_member_takes_any_ts_and_is_not_added_again, free_tables),
        cmocka_unit_test_teardown(a_disabled_member_is_adopted_evicted_and_enabled_on_return, free_tables),
        cmocka_unit_test_teardown(adopt_leaves_an_existing_record_alone, free_tables),
        cmocka_unit_test_teardown(adopt_reports_a_full_table, free_tables),
        cmocka_unit_test_teardown(adopt_keeps_the_mark_it_is_given, free_tables),
        cmocka_unit_test_teardown(a_deferred_add_retries_when_room_frees,
                                  free_tables),
        cmocka_unit_test_teardown(
            an_unlisted_member_is_added_again_and_keeps_its_mark, free_tables),
        cmocka_unit_test_teardown(next_deadline_is_zero_when_nothing_is_ever_due, free_tables),
        cmocka_unit_test_teardown(next_deadline_releases_a_url_never_added, free_tables),
        cmocka_unit_test_teardown(next_deadline_is_the_earliest_due_event, free_tables),
        cmocka_unit_test_teardown(next_deadline_includes_releases, free_tables),
        cmocka_unit_test_teardown(a_remembered_mark_drops_replays_until_it_is_stale, free_tables),
        cmocka_unit_test_teardown(a_remembered_mark_is_added_anew_by_a_fresh_announcement, free_tables),
        cmocka_unit_test_teardown(remember_only_raises_an_existing_mark, free_tables),
        cmocka_unit_test_teardown(remember_into_a_full_table_says_so, free_tables),
        cmocka_unit_test_teardown(receive_runs_every_step, free_tables),
        cmocka_unit_test_teardown(a_foreign_service_never_touches_the_table, free_tables),
        cmocka_unit_test_teardown(an_invalid_service_matches_no_datagram, free_tables),
    };

    return cmocka_run_group_tests_name("table", tests, NULL, NULL);
}
