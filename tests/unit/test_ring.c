/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Wire format 1.2 on the receiver: the key ring and beacon_verify_ring
 * (key selection by the svc= bytes, then the service of step 6),
 * beacon_receive_verified, and the states draining and standby through
 * the table. What a forged datagram costs is test_ring_cost.c's.
 */
#include "test_common.h"

#define TS "1796000000000000"
#define NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)
#define SEC ((apr_interval_time_t)APR_USEC_PER_SEC)

/* The default key (the spec's), the service key of the last v1.2 vector,
 * and a third service's key. */
static beacon_key_t key_default, key_shop, key_api;

static beacon_key_t key_of_hex(const char *hex)
{
    beacon_key_t k;

    hex_to_bytes(hex, k.bytes, sizeof k.bytes);
    return k;
}

static int setup_keys(void **state)
{
    (void)state;
    key_default = spec_hex_key();
    key_shop = key_of_hex("ffeeddccbbaa99887766554433221100");
    key_api = key_of_hex("a1a2a3a4a5a6a7a8a9aaabacadaeafb0");
    return 0;
}

/* A ring of the default key, "shop" and "api" with keys of their own,
 * and "cart" without. Heap: the ring is some 40 KB. */
static beacon_ring_t *three_services(void)
{
    beacon_ring_t *r = malloc(sizeof *r);

    assert_non_null(r);
    beacon_ring_init(r, &key_default, 1);
    assert_null(beacon_ring_add(r, "shop", &key_shop, 1));
    assert_null(beacon_ring_add(r, "api", &key_api, 1));
    assert_null(beacon_ring_add(r, "cart", NULL, 0));
    return r;
}

typedef struct {
    char buf[BEACON_MAX_DATAGRAM + 1];
    size_t len;
} datagram_t;

static datagram_t signed_with(const beacon_key_t *k, const char *body)
{
    datagram_t d;

    d.len = sign_into(d.buf, sizeof d.buf, k, body, strlen(body));
    return d;
}

static beacon_reason_t verify(const beacon_ring_t *r, const datagram_t *d,
                              beacon_datagram_t *out)
{
    guarded_t g = guarded_copy(d->buf, d->len);
    beacon_reason_t reason = beacon_verify_ring(g.buf, d->len, r, NOW, SKEW,
                                                out);

    guarded_free(&g);
    return reason;
}

typedef struct {
    const char *name;
    const beacon_key_t *key;
    const char *body;
    beacon_reason_t want;
    int service; /* on BEACON_OK */
} selection_row_t;

static void check_rows(const beacon_ring_t *r, const selection_row_t *rows,
                       size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        datagram_t d = signed_with(rows[i].key, rows[i].body);
        beacon_datagram_t out;

        assert_reason_equal(verify(r, &d, &out), rows[i].want, rows[i].name);
        if (rows[i].want == BEACON_OK) {
            if (out.service != rows[i].service) {
                print_error("case: %s: service %d\n", rows[i].name, out.service);
            }
            assert_int_equal(out.service, rows[i].service);
        }
    }
}

/* The rows on a fresh three_services() ring. */
static void check_three_services(const selection_row_t *rows, size_t n)
{
    beacon_ring_t *r = three_services();

    check_rows(r, rows, n);
    free(r);
}

/* ------------------------------------------------------------------ */
/* The ring                                                            */

static void ring_add_refuses_bad_names_repeats_and_too_many(void **state)
{
    beacon_ring_t *r = three_services();
    beacon_key_t five[5];
    char name[16];
    unsigned i;

    (void)state;
    memset(five, 7, sizeof five);
    assert_non_null(beacon_ring_add(r, "", NULL, 0));
    assert_non_null(beacon_ring_add(r, "sh op", NULL, 0));
    assert_non_null(beacon_ring_add(r, NULL, NULL, 0));
    assert_non_null(beacon_ring_add(r, "shop", NULL, 0));
    assert_non_null(beacon_ring_add(r, "new", five, 5));
    assert_int_equal(r->nservices, 3);
    for (i = 3; i < BEACON_RING_MAX_SERVICES; i++) {
        snprintf(name, sizeof name, "s%u", i);
        assert_null(beacon_ring_add(r, name, NULL, 0));
    }
    assert_int_equal(r->nservices, 256);
    assert_non_null(beacon_ring_add(r, "one-too-many", NULL, 0));
    free(r);
}

static void ring_find_finds_every_service_by_exact_name(void **state)
{
    beacon_ring_t *r = malloc(sizeof *r);
    char name[16];
    unsigned i;

    (void)state;
    assert_non_null(r);
    beacon_ring_init(r, &key_default, 1);
    for (i = 0; i < BEACON_RING_MAX_SERVICES; i++) {
        snprintf(name, sizeof name, "svc-%u", i);
        assert_null(beacon_ring_add(r, name, NULL, 0));
    }
    for (i = 0; i < BEACON_RING_MAX_SERVICES; i++) {
        snprintf(name, sizeof name, "svc-%u", i);
        assert_int_equal(beacon_ring_find(r, name, strlen(name)), (int)i);
    }
    assert_int_equal(beacon_ring_find(r, "svc-1", 4), -1);   /* a prefix */
    assert_int_equal(beacon_ring_find(r, "SVC-1", 5), -1);   /* case counts */
    assert_int_equal(beacon_ring_find(r, "svc-256", 7), -1);
    assert_int_equal(beacon_ring_find(r, NULL, 0), -1);
    free(r);
}

static void ring_keys_are_a_services_own_or_the_default(void **state)
{
    beacon_ring_t *r = three_services();
    const beacon_key_t *k;
    unsigned n;

    (void)state;
    k = beacon_ring_keys(r, 0, &n);
    assert_int_equal(n, 1);
    assert_memory_equal(k, &key_shop, sizeof *k);
    k = beacon_ring_keys(r, 2, &n); /* cart: none of its own */
    assert_int_equal(n, 1);
    assert_memory_equal(k, &key_default, sizeof *k);
    k = beacon_ring_keys(r, BEACON_SERVICE_DEFAULT, &n);
    assert_int_equal(n, 1);
    assert_memory_equal(k, &key_default, sizeof *k);
    free(r);
}

static void ring_shared_key_finds_services_that_are_not_isolated(void **state)
{
    beacon_ring_t *r = three_services();
    int a = 9, b = 9;

    (void)state;
    /* no balancer takes datagrams without svc=: the default keys are
     * cart's alone */
    beacon_ring_require_service(r, 1);
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 0); /* one without */
    assert_null(beacon_ring_add(r, "cart2", NULL, 0));
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 1); /* two without */
    assert_int_equal(a, 2);
    assert_int_equal(b, 3);
    free(r);

    r = three_services();
    beacon_ring_require_service(r, 1);
    assert_null(beacon_ring_add(r, "shop2", &key_shop, 1));
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 1);
    assert_int_equal(a, 0);
    assert_int_equal(b, 3);
    free(r);

    r = three_services();
    beacon_ring_require_service(r, 1);
    assert_null(beacon_ring_add(r, "uses-default", &key_default, 1));
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 1);
    assert_int_equal(a, -1); /* cart, without keys, is no such pair */
    assert_int_equal(b, 3);
    free(r);
}

/* A balancer without service= takes the datagrams without svc=, verified
 * with the default keys: a service without keys of its own shares them
 * with it (issue 32, defect 5). */
static void ring_shared_key_finds_a_keyless_service_beside_the_default(void **state)
{
    beacon_ring_t *r = three_services(); /* require_service off */
    int a = 9, b = 9;

    (void)state;
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 1);
    assert_int_equal(a, -1);
    assert_int_equal(b, 2); /* cart */
    free(r);

    /* every service with keys of its own: nothing shared */
    r = malloc(sizeof *r);
    assert_non_null(r);
    beacon_ring_init(r, &key_default, 1);
    assert_null(beacon_ring_add(r, "shop", &key_shop, 1));
    assert_null(beacon_ring_add(r, "api", &key_api, 1));
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 0);
    free(r);
}

/* ------------------------------------------------------------------ */
/* Key selection                                                       */

static void a_service_with_own_keys_is_verified_with_those_only(void **state)
{
    static const char shop[] = "BEACON url=http://10.0.0.6:8080 ts=" TS
                               " svc=shop";
    const selection_row_t rows[] = {
        {"shop's key for shop", &key_shop, shop, BEACON_OK, 0},
        {"the default key for shop", &key_default, shop,
         BEACON_DROP_MAC_MISMATCH, 0},
        {"api's key for shop", &key_api, shop, BEACON_DROP_MAC_MISMATCH, 0},
        {"api's key for api", &key_api,
         "BEACON svc=api url=http://10.0.0.7:8080 ts=" TS, BEACON_OK, 1},
    };

    (void)state;
    check_three_services(rows, ARRAY_LEN(rows));
}

static void a_service_without_keys_and_no_svc_use_the_default_keys(void **state)
{
    static const char cart[] = "BEACON url=http://10.0.0.8:8080 ts=" TS
                               " svc=cart";
    static const char none[] = "BEACON url=http://10.0.0.8:8080 ts=" TS;
    const selection_row_t rows[] = {
        {"the default key for cart", &key_default, cart, BEACON_OK, 2},
        {"shop's key for cart", &key_shop, cart, BEACON_DROP_MAC_MISMATCH, 0},
        {"no svc, the default key", &key_default, none, BEACON_OK,
         BEACON_SERVICE_DEFAULT},
        {"no svc, shop's key", &key_shop, none, BEACON_DROP_MAC_MISMATCH, 0},
        {"a heartbeat without svc", &key_default, "BEACON ts=" TS, BEACON_OK,
         BEACON_SERVICE_DEFAULT},
    };

    (void)state;
    check_three_services(rows, ARRAY_LEN(rows));
}

/* An svc= naming no service: the default keys, so a stranger gets a mac
 * mismatch, and a valid MAC a wrong service. Forged and garbage bytes
 * only ever pick a set; after the MAC they are a bad field. */
static void an_unknown_or_garbage_svc_selects_the_default_keys(void **state)
{
    const selection_row_t rows[] = {
        {"unknown, default key", &key_default,
         "BEACON url=http://h ts=" TS " svc=blog", BEACON_DROP_WRONG_SERVICE, 0},
        {"unknown, shop's key", &key_shop,
         "BEACON url=http://h ts=" TS " svc=blog", BEACON_DROP_MAC_MISMATCH, 0},
        {"a prefix of shop, shop's key", &key_shop,
         "BEACON url=http://h ts=" TS " svc=sho", BEACON_DROP_MAC_MISMATCH, 0},
        {"Shop, shop's key", &key_shop,
         "BEACON url=http://h ts=" TS " svc=Shop", BEACON_DROP_MAC_MISMATCH, 0},
        {"garbage, default key", &key_default,
         "BEACON url=http://h ts=" TS " svc=sh\x01op", BEACON_DROP_BAD_FIELD, 0},
        {"garbage, shop's key", &key_shop,
         "BEACON url=http://h ts=" TS " svc=sh\x01op", BEACON_DROP_MAC_MISMATCH, 0},
        {"shop! with shop's key", &key_shop,
         "BEACON url=http://h ts=" TS " svc=shop!", BEACON_DROP_MAC_MISMATCH, 0},
        {"64 bytes, default key", &key_default,
         "BEACON ts=" TS " svc=s123456789s123456789s123456789s123456789"
         "s123456789s123456789abcd", BEACON_DROP_BAD_FIELD, 0},
        /* the key= of another token is no svc token */
        {"xsvc=shop, shop's key", &key_shop,
         "BEACON url=http://h ts=" TS " xsvc=shop", BEACON_DROP_MAC_MISMATCH, 0},
        {"a value holding svc=shop, shop's key", &key_shop,
         "BEACON url=http://h ts=" TS " host=svc=shop", BEACON_DROP_MAC_MISMATCH, 0},
    };

    (void)state;
    check_three_services(rows, ARRAY_LEN(rows));
}

/* The first svc= picks the keys; a second is a duplicate field after the
 * MAC, whichever it names. */
static void the_first_svc_token_selects_and_a_second_is_a_duplicate(void **state)
{
    const selection_row_t rows[] = {
        {"shop then api, shop's key", &key_shop,
         "BEACON ts=" TS " svc=shop svc=api", BEACON_DROP_DUPLICATE_FIELD, 0},
        {"shop then api, api's key", &key_api,
         "BEACON ts=" TS " svc=shop svc=api", BEACON_DROP_MAC_MISMATCH, 0},
        {"shop twice, shop's key", &key_shop,
         "BEACON ts=" TS " svc=shop svc=shop", BEACON_DROP_DUPLICATE_FIELD, 0},
    };

    (void)state;
    check_three_services(rows, ARRAY_LEN(rows));
}

static void step_six_comes_after_freshness_and_can_require_a_service(void **state)
{
    const selection_row_t rows[] = {
        {"stale and unknown", &key_default,
         "BEACON ts=1 svc=blog", BEACON_DROP_STALE_TS, 0},
        {"no svc, required", &key_default,
         "BEACON url=http://h ts=" TS, BEACON_DROP_WRONG_SERVICE, 0},
        {"no svc, required, forged", &key_shop,
         "BEACON url=http://h ts=" TS, BEACON_DROP_MAC_MISMATCH, 0},
        {"shop, required", &key_shop, "BEACON ts=" TS " svc=shop", BEACON_OK, 0},
    };
    beacon_ring_t *r = three_services();

    (void)state;
    beacon_ring_require_service(r, 1);
    check_rows(r, rows, ARRAY_LEN(rows));
    free(r);
}

static void a_ring_without_services_accepts_any_svc(void **state)
{
    const selection_row_t rows[] = {
        {"svc=blog", &key_default, "BEACON ts=" TS " svc=blog", BEACON_OK,
         BEACON_SERVICE_DEFAULT},
        {"no svc", &key_default, "BEACON ts=" TS, BEACON_OK,
         BEACON_SERVICE_DEFAULT},
        {"another key", &key_shop, "BEACON ts=" TS, BEACON_DROP_MAC_MISMATCH, 0},
        {"a bad svc", &key_default, "BEACON ts=" TS " svc=a!", BEACON_DROP_BAD_FIELD,
         0},
    };
    beacon_ring_t *r = malloc(sizeof *r);

    (void)state;
    assert_non_null(r);
    beacon_ring_init(r, &key_default, 1);
    beacon_ring_require_service(r, 1); /* no services: nothing to require */
    check_rows(r, rows, ARRAY_LEN(rows));
    free(r);
}

static void a_service_rotates_between_its_own_keys(void **state)
{
    beacon_key_t both[2];
    const selection_row_t rows[] = {
        {"the old key", &key_shop, "BEACON ts=" TS " svc=rot", BEACON_OK, 3},
        {"the new key", &key_api, "BEACON ts=" TS " svc=rot", BEACON_OK, 3},
        {"the default key", &key_default, "BEACON ts=" TS " svc=rot",
         BEACON_DROP_MAC_MISMATCH, 0},
    };
    beacon_ring_t *r = three_services();

    (void)state;
    both[0] = key_shop;
    both[1] = key_api;
    assert_null(beacon_ring_add(r, "rot", both, 2));
    check_rows(r, rows, ARRAY_LEN(rows));
    free(r);
}

static void without_default_keys_only_own_keys_verify(void **state)
{
    const selection_row_t rows[] = {
        {"shop", &key_shop, "BEACON ts=" TS " svc=shop", BEACON_OK, 0},
        {"no svc", &key_default, "BEACON ts=" TS, BEACON_DROP_MAC_MISMATCH, 0},
    };
    beacon_ring_t *r = malloc(sizeof *r);

    (void)state;
    assert_non_null(r);
    beacon_ring_init(r, NULL, 0);
    assert_null(beacon_ring_add(r, "shop", &key_shop, 1));
    check_rows(r, rows, ARRAY_LEN(rows));
    free(r);
}

/* The design's vector signed with shop's own key, from the data file. */
static void the_service_key_vector_verifies_only_where_shop_has_that_key(void **state)
{
    static const char *const cols[] = {"version", "secret", "datagram", NULL};
    vec_table_t t = load_vectors("announcements.txt", cols, 4);
    const vec_row_t *row = NULL;
    beacon_ring_t *r = malloc(sizeof *r);
    beacon_datagram_t out;
    size_t i;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        if (vec_is(&t.rows[i].col[0], "v1.2") &&
            strcmp(t.rows[i].col[1].text,
                   "hex:ffeeddccbbaa99887766554433221100") == 0) {
            row = &t.rows[i];
        }
    }
    assert_non_null(row);
    assert_non_null(r);
    beacon_ring_init(r, &key_default, 1);
    assert_null(beacon_ring_add(r, "api", &key_api, 1));
    assert_null(beacon_ring_add(r, "shop", &key_shop, 1));
    assert_reason_equal(beacon_verify_ring(row->col[2].text, row->col[2].len, r,
                                           NOW + 8, SKEW, &out),
                        BEACON_OK, "shop with its own key");
    assert_int_equal(out.service, 1);
    beacon_ring_init(r, &key_default, 1);
    assert_null(beacon_ring_add(r, "shop", NULL, 0));
    assert_reason_equal(beacon_verify_ring(row->col[2].text, row->col[2].len, r,
                                           NOW + 8, SKEW, &out),
                        BEACON_DROP_MAC_MISMATCH, "shop on the default keys");
    free(r);
    vec_free(&t);
}

/* ------------------------------------------------------------------ */
/* States and the table                                                */

static beacon_reason_t receive(beacon_table_t *t, const beacon_ring_t *r,
                               const char *body, apr_time_t now,
                               beacon_event_t *ev)
{
    datagram_t d = signed_with(&key_default, body);
    beacon_reason_t reason = beacon_verify_ring(d.buf, d.len, r, now, SKEW,
                                                &ev->dg);

    /* ev->dg points into d: read it before d goes */
    return reason == BEACON_OK ? beacon_receive_verified(t, now, NULL, ev) : reason;
}

static void state_values_parse_and_unknown_ones_are_a_bad_field(void **state)
{
    static const struct {
        const char *body;
        beacon_reason_t want;
        beacon_wire_state_t st;
    } rows[] = {
        {"BEACON ts=" TS, BEACON_OK, BEACON_WIRE_NONE},
        {"BEACON ts=" TS " state=leaving", BEACON_OK, BEACON_WIRE_LEAVING},
        {"BEACON ts=" TS " state=draining", BEACON_OK, BEACON_WIRE_DRAINING},
        {"BEACON ts=" TS " state=standby", BEACON_OK, BEACON_WIRE_STANDBY},
        {"BEACON ts=" TS " state=Draining", BEACON_DROP_BAD_FIELD, 0},
        {"BEACON ts=" TS " state=drain", BEACON_DROP_BAD_FIELD, 0},
        {"BEACON ts=" TS " state=leavingx", BEACON_DROP_BAD_FIELD, 0},
        {"BEACON ts=" TS " state=none", BEACON_DROP_BAD_FIELD, 0},
    };
    beacon_datagram_t out;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        datagram_t d = signed_with(&key_default, rows[i].body);

        assert_reason_equal(beacon_verify(d.buf, d.len, &key_default, NOW, SKEW,
                                          &out),
                            rows[i].want, rows[i].body);
        if (rows[i].want == BEACON_OK) {
            assert_int_equal(beacon_datagram_state(&out), rows[i].st);
            assert_int_equal(beacon_datagram_is_leaving(&out),
                             rows[i].st == BEACON_WIRE_LEAVING);
            assert_string_equal(beacon_wire_state_name(rows[i].st),
                                rows[i].st ? strstr(rows[i].body, "state=") + 6
                                           : "");
        }
        else {
            assert_int_equal(out.bad_field.len, 5);
            assert_memory_equal(out.bad_field.ptr, "state", 5);
        }
    }
    assert_int_equal(beacon_wire_state_parse(NULL, 0), -1);
    assert_int_equal(beacon_wire_state_parse("", 0), -1);
}

/* Draining and standby are not leaving: they add, renew and re-enable
 * like a normal announcement; leaving still disables. */
static void draining_and_standby_renew_the_lease(void **state)
{
    static const char *const states[] = {"draining", "standby"};
    beacon_ring_t *r = three_services();
    beacon_table_t *t = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
    beacon_event_t ev;
    char body[256];
    size_t i;

    (void)state;
    assert_non_null(t);
    for (i = 0; i < ARRAY_LEN(states); i++) {
        apr_time_t now = NOW;
        apr_int64_t ts = NOW;
        unsigned cursor = 0;

        beacon_table_init(t, BEACON_TABLE_CAPACITY, 10 * SEC, SKEW);
#define ANNOUNCE(st)                                                          \
    (snprintf(body, sizeof body,                                              \
              "BEACON url=http://10.0.0.8:8080 ts=%" APR_INT64_T_FMT          \
              " svc=cart%s%s", ts++, (st) ? " state=" : "", (st) ? (st) : ""), \
     receive(t, r, body, now, &ev))
        assert_reason_equal(ANNOUNCE(states[i]), BEACON_OK, states[i]);
        assert_int_equal(ev.action, BEACON_ACT_ADD);
        assert_int_equal(ev.dg.service, 2);
        beacon_table_added(ev.rec);
        now += 9 * SEC;
        assert_reason_equal(ANNOUNCE(states[i]), BEACON_OK, states[i]);
        assert_int_equal(ev.action, BEACON_ACT_RENEW);
        now += 9 * SEC; /* 18 s after the add, 9 after the renewal */
        assert_null(beacon_table_next_lapsed(t, now, &cursor));
        assert_reason_equal(ANNOUNCE("leaving"), BEACON_OK, "leaving");
        assert_int_equal(ev.action, BEACON_ACT_DISABLE);
        assert_reason_equal(ANNOUNCE(states[i]), BEACON_OK, states[i]);
        assert_int_equal(ev.action, BEACON_ACT_ENABLE);
        assert_reason_equal(ANNOUNCE(NULL), BEACON_OK, "no state");
        assert_int_equal(ev.action, BEACON_ACT_RENEW);
#undef ANNOUNCE
    }
    free(t);
    free(r);
}

static void receive_verified_takes_a_heartbeat_and_canonicalizes(void **state)
{
    beacon_ring_t *r = three_services();
    beacon_table_t *t = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
    beacon_event_t ev;

    (void)state;
    assert_non_null(t);
    beacon_table_init(t, BEACON_TABLE_CAPACITY, 10 * SEC, SKEW);
    beacon_table_set_service(t, "other"); /* the ring decided: not checked */
    assert_reason_equal(receive(t, r, "BEACON ts=" TS " svc=cart", NOW, &ev),
                        BEACON_OK, "heartbeat");
    assert_null(ev.rec);
    assert_string_equal(ev.url, "");
    assert_reason_equal(receive(t, r, "BEACON url=HTTP://H:80/ ts=" TS " svc=cart",
                                NOW, &ev),
                        BEACON_OK, "url");
    assert_string_equal(ev.url, "http://h");
    assert_int_equal(ev.action, BEACON_ACT_ADD);
    assert_reason_equal(receive(t, r, "BEACON url=http://h ts=" TS " svc=cart",
                                NOW, &ev),
                        BEACON_DROP_REPLAYED_TS, "the same ts again");
    assert_int_equal(ev.second_copy, 1);
    assert_reason_equal(receive(t, r, "BEACON url=http://h/x ts=" TS, NOW, &ev),
                        BEACON_DROP_UNACCEPTABLE_URL, "a path");
    free(t);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_add_refuses_bad_names_repeats_and_too_many),
        cmocka_unit_test(ring_find_finds_every_service_by_exact_name),
        cmocka_unit_test(ring_keys_are_a_services_own_or_the_default),
        cmocka_unit_test(ring_shared_key_finds_services_that_are_not_isolated),
        cmocka_unit_test(ring_shared_key_finds_a_keyless_service_beside_the_default),
        cmocka_unit_test(a_service_with_own_keys_is_verified_with_those_only),
        cmocka_unit_test(a_service_without_keys_and_no_svc_use_the_default_keys),
        cmocka_unit_test(an_unknown_or_garbage_svc_selects_the_default_keys),
        cmocka_unit_test(the_first_svc_token_selects_and_a_second_is_a_duplicate),
        cmocka_unit_test(step_six_comes_after_freshness_and_can_require_a_service),
        cmocka_unit_test(a_ring_without_services_accepts_any_svc),
        cmocka_unit_test(a_service_rotates_between_its_own_keys),
        cmocka_unit_test(without_default_keys_only_own_keys_verify),
        cmocka_unit_test(the_service_key_vector_verifies_only_where_shop_has_that_key),
        cmocka_unit_test(state_values_parse_and_unknown_ones_are_a_bad_field),
        cmocka_unit_test(draining_and_standby_renew_the_lease),
        cmocka_unit_test(receive_verified_takes_a_heartbeat_and_canonicalizes),
    };

    return cmocka_run_group_tests(tests, setup_keys, NULL);
}
