/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What a datagram costs a receiver with many services: one SipHash per
 * key of the set its svc= bytes select, however many services the ring
 * holds (wire format 1.2, key selection).
 *
 * The seam: lib/beacon_wire.c is compiled into this test with its calls
 * to beacon_mac renamed to counted_mac, which counts and then computes
 * the real tag. The linker then takes beacon_wire's functions from here,
 * not from libbeacon.a, and the rest (the ring, the MAC itself) from the
 * library as every caller gets it.
 */
#include "test_common.h"

void counted_mac(const beacon_key_t *key, const void *buf, apr_size_t len,
                 unsigned char mac[BEACON_MAC_LEN]);

#define beacon_mac counted_mac
#include "../../lib/beacon_wire.c"
#undef beacon_mac

static unsigned long macs;

void counted_mac(const beacon_key_t *key, const void *buf, apr_size_t len,
                 unsigned char mac[BEACON_MAC_LEN])
{
    macs++;
    beacon_mac(key, buf, len, mac);
}

#define TS "1796000000000000"
#define NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)

/* Key i of service s: distinct for every pair. */
static beacon_key_t key_of(unsigned s, unsigned i)
{
    beacon_key_t k;

    memset(&k, 0, sizeof k);
    k.bytes[0] = (unsigned char)(s & 0xff);
    k.bytes[1] = (unsigned char)(s >> 8);
    k.bytes[2] = (unsigned char)(i + 1);
    return k;
}

/* BEACON_RING_MAX_SERVICES services "s0".., each with nkeys keys of its
 * own (0: the default ones), and ndefault default keys. */
static beacon_ring_t *full_ring(unsigned nkeys, unsigned ndefault)
{
    beacon_ring_t *r = malloc(sizeof *r);
    beacon_key_t keys[BEACON_MAX_KEYS], defaults[BEACON_MAX_KEYS];
    char name[16];
    unsigned s, i;

    assert_non_null(r);
    for (i = 0; i < ndefault; i++) {
        defaults[i] = key_of(9999, i);
    }
    beacon_ring_init(r, defaults, ndefault);
    for (s = 0; s < BEACON_RING_MAX_SERVICES; s++) {
        for (i = 0; i < nkeys; i++) {
            keys[i] = key_of(s, i);
        }
        snprintf(name, sizeof name, "s%u", s);
        assert_null(beacon_ring_add(r, name, keys, nkeys));
    }
    return r;
}

/* The MACs one verification of body (signed with key, or forged when
 * key is NULL) computes, and its outcome in *reason. */
static unsigned long macs_of(const beacon_ring_t *r, const char *body,
                             const beacon_key_t *key, beacon_reason_t *reason)
{
    char dg[BEACON_MAX_DATAGRAM + 1];
    beacon_key_t forger;
    beacon_datagram_t out;
    size_t len;

    memset(&forger, 0x5a, sizeof forger);
    len = sign_into(dg, sizeof dg, key ? key : &forger, body, strlen(body));
    macs = 0;
    *reason = beacon_verify_ring(dg, len, r, NOW, SKEW, &out);
    return macs;
}

static void a_forged_datagram_costs_one_mac_per_key_of_the_chosen_set(void **state)
{
    static const char *const bodies[] = {
        "BEACON url=http://h ts=" TS " svc=s17",   /* a service */
        "BEACON url=http://h ts=" TS " svc=s255",  /* the last one */
        "BEACON url=http://h ts=" TS " svc=blog",  /* none: the defaults */
        "BEACON url=http://h ts=" TS,              /* no svc: the defaults */
        "BEACON url=http://h ts=" TS " svc=s\x01", /* garbage: the defaults */
    };
    unsigned nkeys, i;

    (void)state;
    for (nkeys = 1; nkeys <= BEACON_MAX_KEYS; nkeys++) {
        beacon_ring_t *r = full_ring(nkeys, 2);

        for (i = 0; i < ARRAY_LEN(bodies); i++) {
            beacon_reason_t reason;
            unsigned long n = macs_of(r, bodies[i], NULL, &reason);

            assert_reason_equal(reason, BEACON_DROP_MAC_MISMATCH, bodies[i]);
            /* a service's own keys for the first two, 2 defaults else */
            assert_int_equal(n, i < 2 ? nkeys : 2);
        }
        free(r);
    }
}

static void services_without_keys_cost_the_default_keys(void **state)
{
    beacon_ring_t *r = full_ring(0, 1);
    beacon_reason_t reason;
    beacon_key_t def = key_of(9999, 0);

    (void)state;
    assert_int_equal(macs_of(r, "BEACON ts=" TS " svc=s200", NULL, &reason), 1);
    assert_reason_equal(reason, BEACON_DROP_MAC_MISMATCH, "forged");
    assert_int_equal(macs_of(r, "BEACON ts=" TS " svc=s200", &def, &reason), 1);
    assert_reason_equal(reason, BEACON_OK, "genuine");
    free(r);
}

/* A genuine datagram stops at the key that matches; one that fails
 * earlier than the MAC costs none. */
static void a_genuine_datagram_stops_at_its_key_and_bad_frames_cost_nothing(void **state)
{
    beacon_ring_t *r = full_ring(4, 4);
    beacon_key_t third = key_of(42, 2);
    beacon_reason_t reason;
    beacon_datagram_t out;
    static const char bad[] = "BEACON  ts=1 mac=0000000000000000";

    (void)state;
    assert_int_equal(macs_of(r, "BEACON ts=" TS " svc=s42", &third, &reason), 3);
    assert_reason_equal(reason, BEACON_OK, "the third key of s42");
    macs = 0;
    assert_reason_equal(beacon_verify_ring(bad, sizeof bad - 1, r, NOW, SKEW, &out),
                        BEACON_DROP_BAD_FRAME, bad);
    assert_int_equal(macs, 0);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_forged_datagram_costs_one_mac_per_key_of_the_chosen_set),
        cmocka_unit_test(services_without_keys_cost_the_default_keys),
        cmocka_unit_test(a_genuine_datagram_stops_at_its_key_and_bad_frames_cost_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
