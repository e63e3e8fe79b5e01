/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What beacon_verify_ring says of a datagram its masters refuse: the svc=
 * and url= bytes (unverified) it read before the MAC, for the log and for
 * beaconctl listen: on a mac mismatch, what the member keys were derived
 * for; on a url not canonical, the url that is not (none: no url=).
 */
#include "test_common.h"

#define NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)

/* A ring whose only default key is the spec's key, as a master. Heap:
 * the ring is some 40 KB. */
static beacon_ring_t *master_ring(void)
{
    beacon_ring_t *r = malloc(sizeof *r);
    beacon_key_t master = spec_hex_key();

    assert_non_null(r);
    beacon_ring_init(r, &master, 1);
    beacon_ring_set_masters(r, BEACON_SERVICE_DEFAULT, 1u);
    return r;
}

/* The spans of out point into *g, which the caller frees once it has
 * read them. */
static beacon_reason_t verify(const beacon_ring_t *r, const char *body,
                              guarded_t *g, beacon_datagram_t *out)
{
    beacon_key_t other = spec_hex_key();
    char buf[BEACON_MAX_DATAGRAM + 1];
    size_t len;

    other.bytes[0] ^= 1; /* no member key: a mismatch, if it gets that far */
    len = sign_into(buf, sizeof buf, &other, body, strlen(body));
    *g = guarded_copy(buf, len);
    return beacon_verify_ring(g->buf, len, r, NOW, SKEW, out);
}

static void assert_span(beacon_span_t s, const char *want)
{
    if (want == NULL) {
        assert_null(s.ptr);
        return;
    }
    assert_non_null(s.ptr);
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.ptr, want, s.len);
}

/* body (signed with no key of r) gives want, with unverified_svc and
 * unverified_url as said (NULL: ptr NULL). */
static void check(const beacon_ring_t *r, const char *body,
                  beacon_reason_t want, const char *svc, const char *url)
{
    beacon_datagram_t out;
    guarded_t g;

    assert_int_equal(verify(r, body, &g, &out), want);
    assert_span(out.unverified_svc, svc);
    assert_span(out.unverified_url, url);
    guarded_free(&g);
}

static void a_mac_mismatch_names_what_the_key_was_derived_for(void **state)
{
    beacon_ring_t *r = master_ring();

    (void)state;
    check(r, "BEACON url=http://10.0.0.5:8080 ts=1796000000000000 svc=shop",
          BEACON_DROP_MAC_MISMATCH, "shop", "http://10.0.0.5:8080");
    free(r);
}

static void a_url_not_canonical_is_named(void **state)
{
    beacon_ring_t *r = master_ring();

    (void)state;
    check(r, "BEACON url=HTTP://10.0.0.5:8080/ ts=1796000000000000 svc=shop",
          BEACON_DROP_URL_NOT_CANONICAL, "shop", "HTTP://10.0.0.5:8080/");
    check(r, "BEACON ts=1796000000000000", BEACON_DROP_URL_NOT_CANONICAL,
          NULL, NULL); /* no svc=, no url= */
    free(r);
}

static void a_plain_key_mismatch_names_nothing(void **state)
{
    beacon_ring_t *r = master_ring();

    (void)state;
    beacon_ring_set_masters(r, BEACON_SERVICE_DEFAULT, 0);
    check(r, "BEACON url=HTTP://10.0.0.5:8080/ ts=1796000000000000",
          BEACON_DROP_MAC_MISMATCH, NULL, NULL);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_mac_mismatch_names_what_the_key_was_derived_for),
        cmocka_unit_test(a_url_not_canonical_is_named),
        cmocka_unit_test(a_plain_key_mismatch_names_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
