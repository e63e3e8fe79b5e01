/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The wire format: beacon_format() against the spec's test vectors,
 * beacon_verify() against every drop reason with its boundary rows, the
 * sender's timestamp source and the reason names.
 *
 * Datagrams other than the spec vectors are signed here with beacon_mac(),
 * which test_siphash checks against the SipHash paper; the spec vectors pin
 * the rest (what is signed, hex order), so a datagram signed by the test
 * is a valid one.
 */
#include "test_common.h"

#include <ctype.h>

#define TS "1796000000000000"
#define NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)

/* The wire format's test vectors, verbatim. */
static const char V1[] =
    "BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 seq=17 "
    "ts=1796000000000000 mac=f73e29a869ca2b00";
static const char V2[] =
    "BEACON host=web-1 pid=4242 seq=18 ts=1796000000000001 "
    "mac=2cdf1be0166382fa";
static const char V3[] =
    "BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 seq=17 "
    "ts=1796000000000000 mac=f3bcb2028034a744";

static beacon_key_t passphrase_vector_key(void)
{
    beacon_key_t k;
    hex_to_bytes("350dda9f6098771e041755b6923de06e", k.bytes, sizeof k.bytes);
    return k;
}

/*
 * Writes signed_part[0..len) into out, then tail_fmt with "%s" replaced by
 * the correct mac in hex (upper case if upper). Returns the total length.
 */
static size_t build(char *out, size_t outsize, const beacon_key_t *key,
                    const char *signed_part, size_t len, const char *tail_fmt,
                    int upper)
{
    unsigned char mac[BEACON_MAC_LEN];
    char hex[2 * BEACON_MAC_LEN + 1];
    unsigned i;
    int n;

    beacon_mac(key, signed_part, len, mac);
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        snprintf(hex + 2 * i, 3, upper ? "%02X" : "%02x", mac[i]);
    }
    assert_true(len < outsize);
    memcpy(out, signed_part, len);
    n = snprintf(out + len, outsize - len, tail_fmt, hex);
    assert_true(n >= 0 && (size_t)n < outsize - len);
    return len + (size_t)n;
}

/* beacon_verify on an exact-length copy that ends before a guard page. */
static beacon_reason_t verify_guarded(const char *dg, size_t len,
                                      const beacon_key_t *key, apr_time_t now,
                                      apr_interval_time_t skew,
                                      beacon_datagram_t *out)
{
    guarded_t g = guarded_copy(dg, len);
    beacon_reason_t r = beacon_verify(g.buf, len, key, now, skew, out);

    guarded_free(&g);
    return r;
}

/* ------------------------------------------------------------------ */
/* beacon_format                                                       */

static void format_reproduces_the_spec_vectors_byte_for_byte(void **state)
{
    beacon_key_t hk = spec_hex_key(), pk = passphrase_vector_key();
    beacon_announcement_t a1 = {"http://10.0.0.5:8080", "web-1", 4242, 17,
                                APR_INT64_C(1796000000000000), NULL};
    beacon_announcement_t a2 = {NULL, "web-1", 4242, 18,
                                APR_INT64_C(1796000000000001), NULL};
    char buf[BEACON_MAX_DATAGRAM + 1];
    int n;

    (void)state;
    memset(buf, 'Z', sizeof buf);
    n = beacon_format(buf, sizeof buf, &a1, &hk);
    assert_int_equal(n, strlen(V1));
    assert_string_equal(buf, V1);

    memset(buf, 'Z', sizeof buf);
    n = beacon_format(buf, sizeof buf, &a2, &hk);
    assert_int_equal(n, strlen(V2));
    assert_string_equal(buf, V2);

    memset(buf, 'Z', sizeof buf);
    n = beacon_format(buf, sizeof buf, &a1, &pk);
    assert_int_equal(n, strlen(V3));
    assert_string_equal(buf, V3);
}

/*
 * Wire order url, host, pid, seq, ts, state, mac; fields < 0 or NULL are
 * omitted, 0 is a value. Macs computed independently (reference SipHash).
 */
static void format_writes_fields_in_wire_order_and_omits_absent_ones(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t leaving = {"http://10.0.0.5:8080", "web-1", 4242, 19,
                                     APR_INT64_C(1796000000000002), "leaving"};
    beacon_announcement_t bare = {NULL, NULL, -1, -1,
                                  APR_INT64_C(1796000000000000), NULL};
    beacon_announcement_t zeros = {"http://[::1]:8080", NULL, 0, 0, 0, NULL};
    char buf[512];
    int n;

    (void)state;
    n = beacon_format(buf, sizeof buf, &leaving, &k);
    assert_int_equal(n, strlen(buf));
    assert_string_equal(buf, "BEACON url=http://10.0.0.5:8080 host=web-1 "
                             "pid=4242 seq=19 ts=1796000000000002 "
                             "state=leaving mac=21edd8c6cb4821e3");
    n = beacon_format(buf, sizeof buf, &bare, &k);
    assert_int_equal(n, strlen(buf));
    assert_string_equal(buf, "BEACON ts=1796000000000000 mac=88c6926a0240f002");
    n = beacon_format(buf, sizeof buf, &zeros, &k);
    assert_int_equal(n, strlen(buf));
    assert_string_equal(buf, "BEACON url=http://[::1]:8080 pid=0 seq=0 ts=0 "
                             "mac=d950087fa9980dfe");
}

typedef struct {
    const char *name;
    beacon_announcement_t a;
} format_bad_row_t;

static void format_rejects_values_it_cannot_put_on_the_wire(void **state)
{
    static const format_bad_row_t rows[] = {
        {"a space in host", {NULL, "web 1", 1, 1, 1, NULL}},
        {"a space in url", {"http://h x", NULL, 1, 1, 1, NULL}},
        {"a space in state", {NULL, NULL, 1, 1, 1, "leav ing"}},
        {"an empty host", {NULL, "", 1, 1, 1, NULL}},
        {"an empty url", {"", NULL, 1, 1, 1, NULL}},
        {"an empty state", {NULL, NULL, 1, 1, 1, ""}},
        {"a newline in host", {NULL, "web-1\n", 1, 1, 1, NULL}},
        {"a control byte in host", {NULL, "web\x01" "1", 1, 1, 1, NULL}},
        {"DEL in host", {NULL, "web\x7f", 1, 1, 1, NULL}},
        {"a tab in state", {NULL, NULL, 1, 1, 1, "leaving\t"}},
        {"a negative ts", {NULL, NULL, 1, 1, -1, NULL}},
        {"a ts of 19 digits", {NULL, NULL, 1, 1,
                               APR_INT64_C(1000000000000000000), NULL}},
    };
    beacon_key_t k = spec_hex_key();
    char buf[BEACON_MAX_DATAGRAM + 1];
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        int n = beacon_format(buf, sizeof buf, &rows[i].a, &k);
        if (n != -1) {
            print_error("case: %s: formatted as %d bytes\n", rows[i].name, n);
        }
        assert_int_equal(n, -1);
    }
}

/* The largest ts is 18 nines; it formats and verifies (at that now). */
static void format_accepts_the_largest_18_digit_ts(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t a = {NULL, NULL, -1, -1,
                               APR_INT64_C(999999999999999999), NULL};
    beacon_datagram_t out;
    char buf[128];
    int n;

    (void)state;
    n = beacon_format(buf, sizeof buf, &a, &k);
    assert_true(n > 0);
    assert_non_null(strstr(buf, " ts=999999999999999999 mac="));
    assert_reason_equal(
        beacon_verify(buf, (size_t)n, &k,
                      (apr_time_t)APR_INT64_C(999999999999999999), SKEW, &out),
        BEACON_OK, "18 nines round trip");
    assert_true(out.ts == APR_INT64_C(999999999999999999));
}

/* 2048 bytes are a datagram, 2049 are not, whatever the buffer size. */
static void format_stops_at_the_datagram_limit_and_the_buffer_size(void **state)
{
    static const char frame[] = "BEACON host= ts=" TS " mac=0123456789abcdef";
    size_t fill = BEACON_MAX_DATAGRAM - (sizeof frame - 1);
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t a = {NULL, NULL, -1, -1,
                               APR_INT64_C(1796000000000000), NULL};
    beacon_datagram_t out;
    char *host = malloc(fill + 2);
    char *buf = malloc(2 * BEACON_MAX_DATAGRAM);
    int n;

    (void)state;
    assert_non_null(host);
    assert_non_null(buf);
    memset(host, 'h', fill + 1);
    host[fill] = '\0';
    a.host = host;
    n = beacon_format(buf, 2 * BEACON_MAX_DATAGRAM, &a, &k);
    assert_int_equal(n, BEACON_MAX_DATAGRAM);
    assert_int_equal(strlen(buf), BEACON_MAX_DATAGRAM);
    assert_reason_equal(verify_guarded(buf, (size_t)n, &k, NOW, SKEW, &out),
                        BEACON_OK, "formatted datagram of 2048 bytes");

    host[fill] = 'h';
    host[fill + 1] = '\0';
    assert_int_equal(beacon_format(buf, 2 * BEACON_MAX_DATAGRAM, &a, &k), -1);

    /* The buffer must hold the datagram and its NUL. */
    a.host = "web-1";
    a.url = "http://10.0.0.5:8080";
    a.pid = 4242;
    a.seq = 17;
    assert_int_equal(beacon_format(buf, sizeof V1, &a, &k), strlen(V1));
    assert_string_equal(buf, V1);
    assert_int_equal(beacon_format(buf, sizeof V1 - 1, &a, &k), -1);
    assert_int_equal(beacon_format(buf, 1, &a, &k), -1);
    free(host);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* beacon_next_ts                                                      */

static void next_ts_never_goes_backwards(void **state)
{
    apr_int64_t last = 0;

    (void)state;
#define T(now, want)                                                          \
    do {                                                                      \
        apr_int64_t got_ = beacon_next_ts(&last, (apr_time_t)(now));          \
        assert_int_equal(got_, (apr_int64_t)(want));                          \
        assert_int_equal(last, (apr_int64_t)(want));                          \
    } while (0)
    /*  1 */ T(NOW, NOW);                 /* first call: the clock */
    /*  2 */ T(NOW, NOW + 1);             /* equal clock: strictly greater */
    /*  3 */ T(NOW, NOW + 2);
    /*  4 */ T(NOW + 1, NOW + 3);         /* clock behind last: last + 1 */
    /*  5 */ T(NOW - 3600 * APR_USEC_PER_SEC, NOW + 4); /* clock stepped back */
    /*  6 */ T(NOW + 10, NOW + 10);       /* clock ahead again: the clock */
    /*  7 */ T(NOW + 10, NOW + 11);
    /*  8 */ T(NOW + 1000, NOW + 1000);
    /*  9 */ T(0, NOW + 1001);            /* clock reset to the epoch */
#undef T
}

/* ------------------------------------------------------------------ */
/* beacon_verify: the spec vectors                                     */

static void verify_accepts_the_spec_vectors_with_their_now(void **state)
{
    beacon_key_t hk = spec_hex_key(), pk = passphrase_vector_key();
    beacon_datagram_t out;

    (void)state;
    assert_reason_equal(
        verify_guarded(V1, strlen(V1), &hk, NOW, SKEW, &out), BEACON_OK, "V1");
    assert_true(out.ts == APR_INT64_C(1796000000000000));
    assert_reason_equal(verify_guarded(V2, strlen(V2), &hk, NOW + 1, SKEW, &out),
                        BEACON_OK, "V2");
    assert_true(out.ts == APR_INT64_C(1796000000000001));
    assert_null(out.url.ptr);
    assert_reason_equal(
        verify_guarded(V3, strlen(V3), &pk, NOW, SKEW, &out), BEACON_OK, "V3");
    /* Each vector is bound to its key. */
    assert_reason_equal(verify_guarded(V3, strlen(V3), &hk, NOW, SKEW, &out),
                        BEACON_DROP_MAC_MISMATCH, "V3 under the hex key");
    assert_reason_equal(verify_guarded(V1, strlen(V1), &pk, NOW, SKEW, &out),
                        BEACON_DROP_MAC_MISMATCH, "V1 under the passphrase key");
}

static void assert_span(beacon_span_t s, const char *buf, size_t len,
                        const char *want, const char *what)
{
    if (want == NULL) {
        if (s.ptr != NULL) {
            print_error("span %s: present, want absent\n", what);
        }
        assert_null(s.ptr);
        return;
    }
    if (s.ptr == NULL) {
        print_error("span %s: absent, want \"%s\"\n", what, want);
    }
    assert_non_null(s.ptr);
    /* Into the caller's buffer, not a copy. */
    assert_true(s.ptr >= buf && s.ptr + s.len <= buf + len);
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.ptr, want, s.len);
}

static void verify_spans_point_at_the_values_in_the_buffer(void **state)
{
    beacon_key_t k = spec_hex_key();
    static const char body[] =
        "BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 seq=17 "
        "ts=" TS " state=leaving";
    char dg[256];
    size_t len = build(dg, sizeof dg, &k, body, sizeof body - 1, " mac=%s", 0);
    beacon_datagram_t out;

    (void)state;
    /* Not NUL-terminated: the spans must use len, not strlen. */
    dg[len] = 'X';
    assert_reason_equal(beacon_verify(dg, len, &k, NOW, SKEW, &out), BEACON_OK,
                        "all fields");
    assert_span(out.url, dg, len, "http://10.0.0.5:8080", "url");
    assert_span(out.host, dg, len, "web-1", "host");
    assert_span(out.pid, dg, len, "4242", "pid");
    assert_span(out.seq, dg, len, "17", "seq");
    assert_span(out.state, dg, len, "leaving", "state");
    assert_true(out.ts == NOW);
    assert_true(out.url.ptr == dg + strlen("BEACON url="));

    assert_reason_equal(beacon_verify(V2, strlen(V2), &k, NOW, SKEW, &out),
                        BEACON_OK, "heartbeat vector");
    assert_span(out.url, V2, strlen(V2), NULL, "url of a heartbeat");
    assert_span(out.host, V2, strlen(V2), "web-1", "host");
    assert_span(out.pid, V2, strlen(V2), "4242", "pid");
    assert_span(out.seq, V2, strlen(V2), "18", "seq");
    assert_span(out.state, V2, strlen(V2), NULL, "state");
}

/* Keys only match whole: urlx= and xurl= are unknown keys, not url. */
static void verify_unknown_keys_are_ignored_not_confused(void **state)
{
    beacon_key_t k = spec_hex_key();
    static const char body[] = "BEACON urlx=http://evil xurl=http://evil "
                               "hostname=evil ts=" TS " url_2=x state2=leaving";
    char dg[256];
    size_t len = build(dg, sizeof dg, &k, body, sizeof body - 1, " mac=%s", 0);
    beacon_datagram_t out;

    (void)state;
    assert_reason_equal(verify_guarded(dg, len, &k, NOW, SKEW, &out), BEACON_OK,
                        "unknown keys only");
    assert_null(out.url.ptr);
    assert_null(out.host.ptr);
    assert_null(out.state.ptr);
    assert_true(out.ts == NOW);
}

/* ------------------------------------------------------------------ */
/* beacon_verify: drop reasons, one row per case                       */

typedef struct {
    const char *name;
    const char *signed_part; /* what the mac is computed over */
    const char *tail;        /* printf format; %s = the correct hex mac */
    int upper;               /* write the mac in upper case */
    beacon_reason_t expected;
} verify_row_t;

#define MAC " mac=%s"
#define WRONG_MAC " mac=0000000000000000"

static const verify_row_t verify_rows[] = {
    /* Accepted */
    {"a datagram with only ts and mac is accepted",
     "BEACON ts=" TS, MAC, 0, BEACON_OK},
    {"an upper-case hex mac is accepted",
     "BEACON url=http://10.0.0.5:8080 ts=" TS, MAC, 1, BEACON_OK},
    {"unknown keys anywhere before mac are accepted and ignored",
     "BEACON zzz=1 url=http://10.0.0.5:8080 x_9=a ts=" TS " later=yes",
     MAC, 0, BEACON_OK},
    {"a one-letter key is a key", "BEACON a=1 ts=" TS, MAC, 0, BEACON_OK},
    {"an unparsed url is not verify's business",
     "BEACON url=anything-at-all ts=" TS, MAC, 0, BEACON_OK},

    /* bad frame */
    {"an empty datagram is a bad frame", "", "", 0, BEACON_DROP_BAD_FRAME},
    {"BEACON alone is a bad frame", "BEACON", "", 0, BEACON_DROP_BAD_FRAME},
    {"a datagram without a mac token is a bad frame",
     "BEACON ts=" TS, "", 0, BEACON_DROP_BAD_FRAME},
    {"a missing BEACON prefix is a bad frame",
     "ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"the BEACON prefix is case-sensitive",
     "beacon ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"BEACONX is not the BEACON token",
     "BEACONX ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a double space between tokens is a bad frame",
     "BEACON  ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a double space before mac is a bad frame",
     "BEACON ts=" TS " ", MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a tab is not a separator",
     "BEACON\tts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a leading space is a bad frame",
     " BEACON ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a trailing space is a bad frame",
     "BEACON ts=" TS, MAC " ", 0, BEACON_DROP_BAD_FRAME},
    {"a trailing newline is a bad frame",
     "BEACON ts=" TS, MAC "\n", 0, BEACON_DROP_BAD_FRAME},
    {"a trailing CRLF is a bad frame",
     "BEACON ts=" TS, MAC "\r\n", 0, BEACON_DROP_BAD_FRAME},
    {"a key with an upper-case letter is a bad frame",
     "BEACON Host=web-1 ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a key starting with a digit is a bad frame",
     "BEACON 1host=web-1 ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a key starting with an underscore is a bad frame",
     "BEACON _x=1 ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a key with a hyphen is a bad frame",
     "BEACON x-y=1 ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"an empty key is a bad frame",
     "BEACON =1 ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"an empty value is a bad frame",
     "BEACON host= ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"an empty ts value is a bad frame, not a bad ts",
     "BEACON ts=", MAC, 0, BEACON_DROP_BAD_FRAME},
    {"a token without '=' is a bad frame",
     "BEACON host ts=" TS, MAC, 0, BEACON_DROP_BAD_FRAME},
    {"mac not last is a bad frame",
     "BEACON ts=" TS, MAC " host=web-1", 0, BEACON_DROP_BAD_FRAME},
    {"MAC= in upper case is not the mac token",
     "BEACON ts=" TS, " MAC=%s", 0, BEACON_DROP_BAD_FRAME},
    {"an empty mac is a bad frame",
     "BEACON ts=" TS, " mac=", 0, BEACON_DROP_BAD_FRAME},
    {"a mac of 15 hex digits is a bad frame",
     "BEACON ts=" TS, " mac=%.15s", 0, BEACON_DROP_BAD_FRAME},
    {"a mac of 17 hex digits is a bad frame",
     "BEACON ts=" TS, " mac=%s0", 0, BEACON_DROP_BAD_FRAME},
    {"a mac of 32 hex digits is a bad frame",
     "BEACON ts=" TS, " mac=%s0123456789abcdef", 0, BEACON_DROP_BAD_FRAME},
    {"a mac with a non-hex digit is a bad frame",
     "BEACON ts=" TS, " mac=%.15sg", 0, BEACON_DROP_BAD_FRAME},
    {"a mac with a 0x prefix is a bad frame",
     "BEACON ts=" TS, " mac=0x%.14s", 0, BEACON_DROP_BAD_FRAME},

    /* mac mismatch, and the MAC before any field */
    {"a mac over other bytes is a mac mismatch",
     "BEACON ts=" TS, WRONG_MAC, 0, BEACON_DROP_MAC_MISMATCH},
    {"a duplicate field with a wrong mac is a mac mismatch",
     "BEACON ts=" TS " ts=" TS, WRONG_MAC, 0, BEACON_DROP_MAC_MISMATCH},
    {"a bad ts with a wrong mac is a mac mismatch",
     "BEACON ts=+1", WRONG_MAC, 0, BEACON_DROP_MAC_MISMATCH},
    {"a missing ts with a wrong mac is a mac mismatch",
     "BEACON host=web-1", WRONG_MAC, 0, BEACON_DROP_MAC_MISMATCH},
    {"a stale ts with a wrong mac is a mac mismatch",
     "BEACON ts=1", WRONG_MAC, 0, BEACON_DROP_MAC_MISMATCH},

    /* duplicate field */
    {"ts twice is a duplicate field",
     "BEACON ts=" TS " ts=" TS, MAC, 0, BEACON_DROP_DUPLICATE_FIELD},
    {"ts twice with different values is a duplicate field",
     "BEACON ts=" TS " ts=1796000000000001", MAC, 0,
     BEACON_DROP_DUPLICATE_FIELD},
    {"url twice is a duplicate field",
     "BEACON url=http://a url=http://b ts=" TS, MAC, 0,
     BEACON_DROP_DUPLICATE_FIELD},
    {"an unknown key twice is a duplicate field",
     "BEACON pad=a ts=" TS " pad=a", MAC, 0, BEACON_DROP_DUPLICATE_FIELD},
    {"duplicates are checked before ts syntax",
     "BEACON ts=x pad=1 pad=1", MAC, 0, BEACON_DROP_DUPLICATE_FIELD},

    /* bad ts, all correctly signed */
    {"a missing ts is a bad ts",
     "BEACON url=http://10.0.0.5:8080 host=web-1", MAC, 0, BEACON_DROP_BAD_TS},
    {"a ts of 19 digits is a bad ts",
     "BEACON ts=1796000000000000000", MAC, 0, BEACON_DROP_BAD_TS},
    {"19 digits are a bad ts even when leading zeros keep the value fresh",
     "BEACON ts=000" TS, MAC, 0, BEACON_DROP_BAD_TS},
    {"a ts with a plus sign is a bad ts",
     "BEACON ts=+" TS, MAC, 0, BEACON_DROP_BAD_TS},
    {"a ts with a minus sign is a bad ts",
     "BEACON ts=-" TS, MAC, 0, BEACON_DROP_BAD_TS},
    {"a ts with a non-digit is a bad ts",
     "BEACON ts=17960000000000x0", MAC, 0, BEACON_DROP_BAD_TS},
    {"a ts with a fraction is a bad ts",
     "BEACON ts=" TS ".5", MAC, 0, BEACON_DROP_BAD_TS},
    {"a hex ts is a bad ts", "BEACON ts=0x10", MAC, 0, BEACON_DROP_BAD_TS},

    /* stale ts: 18 digits are syntactically fine */
    {"an 18-digit ts is valid syntax, then stale",
     "BEACON ts=100000000000000000", MAC, 0, BEACON_DROP_STALE_TS},
    {"18 nines do not overflow, then stale",
     "BEACON ts=999999999999999999", MAC, 0, BEACON_DROP_STALE_TS},
    {"ts=0 is valid syntax, then stale",
     "BEACON ts=0", MAC, 0, BEACON_DROP_STALE_TS},
};

static void verify_drops_each_case_for_the_right_reason(void **state)
{
    beacon_key_t k = spec_hex_key();
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(verify_rows); i++) {
        const verify_row_t *r = &verify_rows[i];
        char dg[512];
        beacon_datagram_t out;
        size_t len = build(dg, sizeof dg, &k, r->signed_part,
                           strlen(r->signed_part), r->tail, r->upper);

        assert_reason_equal(verify_guarded(dg, len, &k, NOW, SKEW, &out),
                            r->expected, r->name);
    }
}

/*
 * Builds a correctly signed datagram of exactly total bytes: the url
 * vector's fields, then an unknown key pad=xxx... sized to fit.
 */
static size_t build_padded(char *dg, size_t dgsize, const beacon_key_t *k,
                           size_t total)
{
    static const char prefix[] =
        "BEACON url=http://10.0.0.5:8080 ts=" TS " pad=";
    const size_t mac_tail = strlen(" mac=") + 2 * BEACON_MAC_LEN;
    size_t blen = total - mac_tail;
    char *body = malloc(blen);
    size_t len;

    assert_non_null(body);
    assert_true(blen > sizeof prefix);
    memcpy(body, prefix, sizeof prefix - 1);
    memset(body + sizeof prefix - 1, 'x', blen - (sizeof prefix - 1));
    len = build(dg, dgsize, k, body, blen, MAC, 0);
    free(body);
    assert_int_equal(len, total);
    return len;
}

static void verify_accepts_2048_bytes_and_drops_2049_as_oversize(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_datagram_t out;
    char dg[2 * BEACON_MAX_DATAGRAM];
    size_t len;

    (void)state;
    len = build_padded(dg, sizeof dg, &k, BEACON_MAX_DATAGRAM);
    assert_reason_equal(verify_guarded(dg, len, &k, NOW, SKEW, &out), BEACON_OK,
                        "2048 bytes, correctly signed");
    assert_reason_equal(beacon_verify(dg, len, &k, NOW, SKEW, &out), BEACON_OK,
                        "2048 bytes, spans");
    assert_span(out.url, dg, len, "http://10.0.0.5:8080", "url of 2048 bytes");

    len = build_padded(dg, sizeof dg, &k, BEACON_MAX_DATAGRAM + 1);
    assert_reason_equal(verify_guarded(dg, len, &k, NOW, SKEW, &out),
                        BEACON_DROP_OVERSIZE, "2049 bytes, correctly signed");
}

/* Size is step 1: it wins over every later check. */
static void verify_checks_size_before_anything_else(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_datagram_t out;
    char dg[2 * BEACON_MAX_DATAGRAM];
    char *junk;
    size_t len;

    (void)state;
    len = build_padded(dg, sizeof dg, &k, BEACON_MAX_DATAGRAM + 1);
    dg[10] = '\0';
    assert_reason_equal(verify_guarded(dg, len, &k, NOW, SKEW, &out),
                        BEACON_DROP_OVERSIZE, "2049 bytes with a NUL");

    junk = malloc(65507);
    assert_non_null(junk);
    memset(junk, 'x', 65507);
    assert_reason_equal(verify_guarded(junk, 65507, &k, NOW, SKEW, &out),
                        BEACON_DROP_OVERSIZE, "the largest UDP payload of junk");
    free(junk);
}

static void verify_drops_any_embedded_nul(void **state)
{
    static const char body[] = "BEACON host=web\0-1 ts=" TS;
    beacon_key_t k = spec_hex_key();
    beacon_datagram_t out;
    char dg[256];
    size_t len, n = strlen(V1);

    (void)state;
    /* A NUL inside a correctly signed datagram. */
    len = build(dg, sizeof dg, &k, body, sizeof body - 1, MAC, 0);
    assert_reason_equal(verify_guarded(dg, len, &k, NOW, SKEW, &out),
                        BEACON_DROP_EMBEDDED_NUL, "NUL inside the host value");

    /* The caller passed the terminator in len. */
    assert_reason_equal(verify_guarded(V1, n + 1, &k, NOW, SKEW, &out),
                        BEACON_DROP_EMBEDDED_NUL, "NUL as the last byte");

    memcpy(dg, V1, n);
    dg[0] = '\0';
    assert_reason_equal(verify_guarded(dg, n, &k, NOW, SKEW, &out),
                        BEACON_DROP_EMBEDDED_NUL, "NUL as the first byte");

    memcpy(dg, V1, n);
    dg[n - 1] = '\0';
    assert_reason_equal(verify_guarded(dg, n, &k, NOW, SKEW, &out),
                        BEACON_DROP_EMBEDDED_NUL, "NUL in the mac");
}

/*
 * The MAC covers every byte before " mac=": changing any letter or digit of
 * the signed part of V1 (the frame stays valid) is a mac mismatch, never
 * another reason, since the MAC is checked before any field.
 */
static void verify_mac_covers_every_signed_byte(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_datagram_t out;
    const size_t n = strlen(V1);
    const size_t signed_len = (size_t)(strstr(V1, " mac=") - V1);
    char dg[256];
    size_t i, changed = 0;

    (void)state;
    for (i = 0; i < signed_len; i++) {
        char c = V1[i];
        char what[96];

        if (islower((unsigned char)c)) {
            c = (char)(c == 'z' ? 'y' : c + 1);
        } else if (isdigit((unsigned char)c)) {
            c = (char)(c == '9' ? '8' : c + 1);
        } else {
            continue;
        }
        memcpy(dg, V1, n);
        dg[i] = c;
        snprintf(what, sizeof what, "byte %u changed to '%c'", (unsigned)i, c);
        assert_reason_equal(verify_guarded(dg, n, &k, NOW, SKEW, &out),
                            BEACON_DROP_MAC_MISMATCH, what);
        changed++;
    }
    assert_true(changed > 40);

    /* A changed mac digit, in either position of a byte. */
    memcpy(dg, V1, n);
    dg[n - 1] = dg[n - 1] == '0' ? '1' : '0';
    assert_reason_equal(verify_guarded(dg, n, &k, NOW, SKEW, &out),
                        BEACON_DROP_MAC_MISMATCH, "last mac digit changed");
    memcpy(dg, V1, n);
    dg[n - 16] = dg[n - 16] == 'f' ? 'e' : 'f';
    assert_reason_equal(verify_guarded(dg, n, &k, NOW, SKEW, &out),
                        BEACON_DROP_MAC_MISMATCH, "first mac digit changed");

    /* The tag's bytes are in order: the same digits byte-reversed fail. */
    assert_reason_equal(
        verify_guarded("BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 "
                       "seq=17 ts=1796000000000000 mac=002bca69a8293ef7",
                       n, &k, NOW, SKEW, &out),
        BEACON_DROP_MAC_MISMATCH, "V1 with the tag byte-reversed");
}

static void verify_accepts_an_upper_case_spec_vector(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_datagram_t out;
    static const char upper[] =
        "BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 seq=17 "
        "ts=1796000000000000 mac=F73E29A869CA2B00";
    static const char mixed[] =
        "BEACON url=http://10.0.0.5:8080 host=web-1 pid=4242 seq=17 "
        "ts=1796000000000000 mac=f73E29a869Ca2b00";

    (void)state;
    assert_reason_equal(
        verify_guarded(upper, strlen(upper), &k, NOW, SKEW, &out), BEACON_OK,
        "V1 with an upper-case mac");
    assert_reason_equal(
        verify_guarded(mixed, strlen(mixed), &k, NOW, SKEW, &out), BEACON_OK,
        "V1 with a mixed-case mac");
}

typedef struct {
    const char *name;
    apr_time_t now;
    apr_interval_time_t skew;
    beacon_reason_t expected;
} stale_row_t;

/* |ts - now| <= max_skew, in microseconds, in both directions. */
static void verify_freshness_bound_is_inclusive_in_both_directions(void **state)
{
    static const stale_row_t rows[] = {
        {"ts equal to now is fresh", NOW, SKEW, BEACON_OK},
        {"ts behind now by exactly max_skew is fresh",
         NOW + SKEW, SKEW, BEACON_OK},
        {"ts behind now by max_skew + 1us is stale",
         NOW + SKEW + 1, SKEW, BEACON_DROP_STALE_TS},
        {"ts ahead of now by exactly max_skew is fresh",
         NOW - SKEW, SKEW, BEACON_OK},
        {"ts ahead of now by max_skew + 1us is stale",
         NOW - SKEW - 1, SKEW, BEACON_DROP_STALE_TS},
        {"max_skew 0 accepts only ts == now", NOW, 0, BEACON_OK},
        {"max_skew 0 drops ts 1us behind", NOW + 1, 0, BEACON_DROP_STALE_TS},
        {"max_skew 0 drops ts 1us ahead", NOW - 1, 0, BEACON_DROP_STALE_TS},
        {"a receiver clock at the epoch finds today's ts stale",
         0, SKEW, BEACON_DROP_STALE_TS},
    };
    beacon_key_t k = spec_hex_key();
    beacon_datagram_t out;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        assert_reason_equal(verify_guarded(V1, strlen(V1), &k, rows[i].now,
                                           rows[i].skew, &out),
                            rows[i].expected, rows[i].name);
    }
}

/* ------------------------------------------------------------------ */
/* Reason names and ids                                                */

/* Key rotation: a receiver with several secrets accepts any of them. */
static void verify_any_accepts_a_datagram_signed_with_any_configured_key(void **state)
{
    beacon_key_t hk = spec_hex_key(), pk = passphrase_vector_key(), other;
    beacon_key_t old_and_new[2], new_only[1], four[4];
    beacon_datagram_t out;

    (void)state;
    memset(&other, 0x5a, sizeof(other));
    old_and_new[0] = other;
    old_and_new[1] = pk;
    new_only[0] = other;
    four[0] = other;
    four[1] = other;
    four[2] = other;
    four[3] = hk;
    assert_reason_equal(beacon_verify_any(V3, strlen(V3), old_and_new, 2, NOW, SKEW,
                                          &out), BEACON_OK, "second of two keys");
    assert_reason_equal(beacon_verify_any(V3, strlen(V3), new_only, 1, NOW, SKEW,
                                          &out), BEACON_DROP_MAC_MISMATCH,
                        "a key that is not configured");
    assert_reason_equal(beacon_verify_any(V1, strlen(V1), four, 4, NOW, SKEW, &out),
                        BEACON_OK, "the fourth key");
    assert_reason_equal(beacon_verify_any(V1, strlen(V1), four, 3, NOW, SKEW, &out),
                        BEACON_DROP_MAC_MISMATCH, "only the first three keys");
    assert_reason_equal(beacon_verify_any(V1, strlen(V1), four, 0, NOW, SKEW, &out),
                        BEACON_DROP_MAC_MISMATCH, "no key at all");
    /* The other checks still apply after a match. */
    assert_reason_equal(beacon_verify_any(V1, strlen(V1), four, 4,
                                          NOW + SKEW + 1, SKEW, &out),
                        BEACON_DROP_STALE_TS, "stale under the fourth key");
}

static void reason_names_are_the_spec_fragments(void **state)
{
    static const struct {
        beacon_reason_t reason;
        const char *name;
    } rows[] = {
        {BEACON_OK, "ok"},
        {BEACON_DROP_OVERSIZE, "oversize datagram"},
        {BEACON_DROP_EMBEDDED_NUL, "embedded NUL"},
        {BEACON_DROP_BAD_FRAME, "bad frame"},
        {BEACON_DROP_MAC_MISMATCH, "mac mismatch"},
        {BEACON_DROP_DUPLICATE_FIELD, "duplicate field"},
        {BEACON_DROP_BAD_TS, "bad ts"},
        {BEACON_DROP_STALE_TS, "stale ts"},
        {BEACON_DROP_UNACCEPTABLE_URL, "unacceptable url"},
        {BEACON_DROP_REPLAYED_TS, "replayed/reordered ts"},
        {BEACON_DROP_TABLE_FULL, "member table full"},
        {BEACON_DROP_NOT_MANAGED, "member not managed by beacon"},
    };
    size_t i;

    (void)state;
    assert_int_equal(ARRAY_LEN(rows), BEACON_REASON_COUNT);
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const char *got = beacon_reason_name(rows[i].reason);

        assert_non_null(got);
        assert_string_equal(got, rows[i].name);
    }
    assert_string_equal(beacon_reason_id(BEACON_DROP_MAC_MISMATCH),
                        "mac_mismatch");
}

static void every_reason_has_a_distinct_name_and_id(void **state)
{
    int i, j;

    (void)state;
    for (i = 0; i < BEACON_REASON_COUNT; i++) {
        const char *name = beacon_reason_name((beacon_reason_t)i);
        const char *id = beacon_reason_id((beacon_reason_t)i);
        const char *c;

        assert_non_null(name);
        assert_non_null(id);
        assert_true(name[0] != '\0');
        assert_true(id[0] != '\0');
        /* A counter / status key: no spaces, nothing to quote. */
        for (c = id; *c; c++) {
            if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c)
                  || *c == '_')) {
                print_error("id \"%s\" of \"%s\"\n", id, name);
            }
            assert_true(islower((unsigned char)*c) || isdigit((unsigned char)*c)
                        || *c == '_');
        }
        for (j = 0; j < i; j++) {
            if (strcmp(name, beacon_reason_name((beacon_reason_t)j)) == 0
                || strcmp(id, beacon_reason_id((beacon_reason_t)j)) == 0) {
                print_error("reasons %d and %d share \"%s\" / \"%s\"\n", j, i,
                            name, id);
            }
            assert_string_not_equal(name, beacon_reason_name((beacon_reason_t)j));
            assert_string_not_equal(id, beacon_reason_id((beacon_reason_t)j));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_reproduces_the_spec_vectors_byte_for_byte),
        cmocka_unit_test(format_writes_fields_in_wire_order_and_omits_absent_ones),
        cmocka_unit_test(format_rejects_values_it_cannot_put_on_the_wire),
        cmocka_unit_test(format_accepts_the_largest_18_digit_ts),
        cmocka_unit_test(format_stops_at_the_datagram_limit_and_the_buffer_size),
        cmocka_unit_test(next_ts_never_goes_backwards),
        cmocka_unit_test(verify_accepts_the_spec_vectors_with_their_now),
        cmocka_unit_test(verify_spans_point_at_the_values_in_the_buffer),
        cmocka_unit_test(verify_unknown_keys_are_ignored_not_confused),
        cmocka_unit_test(verify_drops_each_case_for_the_right_reason),
        cmocka_unit_test(verify_accepts_2048_bytes_and_drops_2049_as_oversize),
        cmocka_unit_test(verify_checks_size_before_anything_else),
        cmocka_unit_test(verify_drops_any_embedded_nul),
        cmocka_unit_test(verify_any_accepts_a_datagram_signed_with_any_configured_key),
        cmocka_unit_test(verify_mac_covers_every_signed_byte),
        cmocka_unit_test(verify_accepts_an_upper_case_spec_vector),
        cmocka_unit_test(verify_freshness_bound_is_inclusive_in_both_directions),
        cmocka_unit_test(reason_names_are_the_spec_fragments),
        cmocka_unit_test(every_reason_has_a_distinct_name_and_id),
    };

    return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
