/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The wire format: beacon_format() and beacon_verify() against the spec's
 * announcement vectors and the receiver's drop table (tests/vectors/
 * announcements.txt and drops.txt), the boundary rows that are about
 * sizes and clocks rather than bytes, the sender's sequencing, the
 * decimal and span helpers, and the reason names.
 *
 * Datagrams other than the vectors are signed here with beacon_mac(),
 * which test_siphash checks against the SipHash paper; the spec vectors pin
 * the rest (what is signed, hex order), so a datagram signed by the test
 * is a valid one.
 */
#include "test_common.h"

#include <ctype.h>

#define TS "1796000000000000"
#define NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)
#define SEC ((apr_interval_time_t)APR_USEC_PER_SEC)
#define MAC_TAIL (5 + 2 * BEACON_MAC_LEN) /* " mac=" and 16 hex digits */

/* ------------------------------------------------------------------ */
/* The spec's announcement vectors, loaded once by the group setup     */

static const char *const spec_cols[] = {"version", "secret", "datagram", NULL};
enum { SPEC_VERSION, SPEC_SECRET, SPEC_DATAGRAM };

#define MAX_SPEC 16

typedef struct {
    int v1_1;                          /* a version 1.1 or 1.2 datagram */
    int hex_secret;                    /* its secret is a hex: key */
    beacon_key_t key;
    char dg[BEACON_MAX_DATAGRAM + 1];  /* NUL-terminated */
    size_t len;
    apr_int64_t ts;                    /* its own ts: fresh at that clock */
} spec_vector_t;

static spec_vector_t spec[MAX_SPEC];
static size_t nspec;
/* The url vector under the hex key, and the passphrase vector. */
static const char *V1, *V3;
static beacon_key_t pk;

static void take_spec_row(const vec_row_t *r, spec_vector_t *v)
{
    const vec_field_t *dg = &r->col[SPEC_DATAGRAM];
    const char *ts;

    if (!vec_is(&r->col[SPEC_VERSION], "v1") &&
        !vec_is(&r->col[SPEC_VERSION], "v1.1") &&
        !vec_is(&r->col[SPEC_VERSION], "v1.2")) {
        fail_msg("line %u: version \"%s\"", r->line, r->col[SPEC_VERSION].text);
    }
    v->v1_1 = !vec_is(&r->col[SPEC_VERSION], "v1");
    v->key = key_of_secret(&r->col[SPEC_SECRET], r->line);
    v->hex_secret = strncmp(r->col[SPEC_SECRET].text, "hex:", 4) == 0;
    assert_true(dg->len < sizeof v->dg && strlen(dg->text) == dg->len);
    memcpy(v->dg, dg->text, dg->len + 1);
    v->len = dg->len;
    ts = strstr(v->dg, " ts=");
    assert_non_null(ts);
    v->ts = strtoll(ts + 4, NULL, 10);
}

static int load_spec_vectors(void **state)
{
    vec_table_t t = load_vectors("announcements.txt", spec_cols, 6);
    size_t i, v1_1 = 0;

    (void)state;
    assert_true(t.nrows <= MAX_SPEC);
    for (i = 0; i < t.nrows; i++) {
        spec_vector_t *v = &spec[i];

        take_spec_row(&t.rows[i], v);
        v1_1 += v->v1_1;
        if (V1 == NULL && !v->v1_1 && v->hex_secret && strstr(v->dg, " url=")) {
            V1 = v->dg;
        }
        if (V3 == NULL && !v->v1_1 && !v->hex_secret) {
            V3 = v->dg;
            pk = v->key;
        }
    }
    nspec = t.nrows;
    vec_free(&t);
    if (V1 == NULL || V3 == NULL || v1_1 < 3 || nspec - v1_1 < 3) {
        fail_msg("announcements.txt lacks the url vector, the passphrase "
                 "vector or three vectors of each version");
    }
    return 0;
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

/* A span as a NUL-terminated string in buf, or NULL when absent. */
static const char *span_str(beacon_span_t s, char *buf, size_t size)
{
    if (s.ptr == NULL) {
        return NULL;
    }
    assert_true(s.len < size);
    memcpy(buf, s.ptr, s.len);
    buf[s.len] = '\0';
    return buf;
}

/* Whether a token "key=value" is one of the fields beacon_format writes. */
static int is_format_field(const char *tok, size_t len)
{
    static const char *const keys[] = {"url=", "host=",  "pid=",      "seq=",
                                       "ts=",  "svc=",   "route=",    "lbfactor=",
                                       "state="};
    size_t i;

    for (i = 0; i < ARRAY_LEN(keys); i++) {
        size_t n = strlen(keys[i]);

        if (len > n && strncmp(tok, keys[i], n) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * The vector v less its reserved fields (route, lbfactor), re-signed with
 * beacon_mac into out: what a sender of this release that knew the same
 * values would write. Returns its length; *dropped counts the fields left
 * out.
 */
static size_t without_reserved(const char *v, char *out, size_t outsize,
                               const beacon_key_t *key, size_t *dropped)
{
    const char *end = strstr(v, " mac=");
    const char *p = v + strlen("BEACON");
    char body[BEACON_MAX_DATAGRAM + 1] = "BEACON";
    size_t n = strlen("BEACON");

    assert_non_null(end);
    *dropped = 0;
    while (p < end) {
        const char *tok = p + 1;
        const char *next = memchr(tok, ' ', (size_t)(end - tok));
        size_t len = (size_t)((next ? next : end) - tok);

        if (is_format_field(tok, len)) {
            body[n++] = ' ';
            memcpy(body + n, tok, len);
            n += len;
        }
        else {
            (*dropped)++;
        }
        p = tok + len;
    }
    return sign_into(out, outsize, key, body, n);
}

/* What beacon_verify read out of a datagram, as an announcement; the
 * strings live in bufs. */
static beacon_announcement_t announcement_of(const beacon_datagram_t *dg,
                                             char bufs[6][256])
{
    beacon_announcement_t a;

    memset(&a, 0, sizeof(a)); /* a field added later: absent, not garbage */
    a.url = span_str(dg->url, bufs[0], sizeof bufs[0]);
    a.host = span_str(dg->host, bufs[1], sizeof bufs[1]);
    a.pid = beacon_span_number(&dg->pid);
    a.seq = beacon_span_number(&dg->seq);
    a.ts = dg->ts;
    a.state = span_str(dg->state, bufs[2], sizeof bufs[2]);
    a.svc = span_str(dg->svc, bufs[3], sizeof bufs[3]);
    a.route = span_str(dg->route, bufs[4], sizeof bufs[4]);
    a.lbfactor = span_str(dg->lbfactor, bufs[5], sizeof bufs[5]);
    return a;
}

/* ------------------------------------------------------------------ */
/* beacon_format                                                       */

/*
 * Every vector is written again from what verify read out of it: byte for
 * byte when it holds only fields beacon_format writes (all of version 1
 * and 1.1 today), else as the same vector less the others, re-signed.
 */
static void format_reproduces_the_spec_vectors(void **state)
{
    size_t i, whole = 0, with_svc = 0;

    (void)state;
    for (i = 0; i < nspec; i++) {
        const spec_vector_t *v = &spec[i];
        char bufs[6][256], want[BEACON_MAX_DATAGRAM + 1];
        char buf[BEACON_MAX_DATAGRAM + 1];
        beacon_announcement_t a;
        beacon_datagram_t dg;
        size_t want_len, dropped;

        assert_reason_equal(
            beacon_verify(v->dg, v->len, &v->key, v->ts, 0, &dg), BEACON_OK,
            v->dg);
        a = announcement_of(&dg, bufs);
        want_len = without_reserved(v->dg, want, sizeof want, &v->key,
                                    &dropped);
        memset(buf, 'Z', sizeof buf);
        assert_int_equal(beacon_format(buf, sizeof buf, &a, &v->key), want_len);
        assert_string_equal(buf, dropped ? want : v->dg);
        whole += dropped == 0;
        with_svc += a.svc != NULL;
    }
    assert_true(whole >= 6);    /* every vector of version 1 and 1.1 */
    assert_true(with_svc >= 1); /* svc=shop route=web1 */
}

/*
 * Wire order url, host, pid, seq, ts, svc, state, mac; fields < 0 or NULL
 * are omitted, 0 is a value. Macs computed independently (the Python
 * sender of tests/integration/beacon_wire.py).
 */
static void format_writes_fields_in_wire_order_and_omits_absent_ones(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t leaving = {"http://10.0.0.5:8080", "web-1", 4242, 19,
                                     APR_INT64_C(1796000000000002), "leaving",
                                     NULL, NULL, NULL, NULL};
    beacon_announcement_t bare = {NULL, NULL, -1, -1,
                                  APR_INT64_C(1796000000000000), NULL, NULL, NULL, NULL, NULL};
    beacon_announcement_t zeros = {"http://[::1]:8080", NULL, 0, 0, 0, NULL,
                                   NULL, NULL, NULL, NULL};
    beacon_announcement_t all = {"http://10.0.0.5:8080", "web-1", 4242, 21,
                                 APR_INT64_C(1796000000000004), "leaving",
                                 "shop", NULL, NULL, NULL};
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
    n = beacon_format(buf, sizeof buf, &all, &k);
    assert_int_equal(n, strlen(buf));
    assert_string_equal(buf, "BEACON url=http://10.0.0.5:8080 host=web-1 "
                             "pid=4242 seq=21 ts=1796000000000004 svc=shop "
                             "state=leaving mac=f479f8b2f17e698c");
}

/* The version 1.1 vector of docs/wire-format.md, written by the sender. */
static void format_writes_route_and_lbfactor_after_ts(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t a = {"http://10.0.0.5:8080", "web-1", 4242, 19,
                               APR_INT64_C(1796000000000002), NULL, NULL,
                               "web1", "2.5", NULL};
    char buf[512];
    int n;

    (void)state;
    n = beacon_format(buf, sizeof buf, &a, &k);
    assert_int_equal(n, strlen(buf));
    assert_string_equal(buf, "BEACON url=http://10.0.0.5:8080 host=web-1 "
                             "pid=4242 seq=19 ts=1796000000000002 route=web1 "
                             "lbfactor=2.5 mac=f691980003d5caa3");
}

static void lbfactor_is_read_in_hundredths(void **state)
{
    static const struct {
        const char *text;
        int hundredths;
    } rows[] = {
        {"1", 100},      {"2.5", 250},   {"2.50", 250}, {"99.99", 9999},
        {"100", 10000},  {"100.0", 10000}, {"007", 700}, {"1.05", 105},
        {"0.99", -1},    {"0", -1},      {"100.01", -1}, {"101", -1},
        {"1.234", -1},   {".5", -1},     {"5.", -1},    {"1e2", -1},
        {"-5", -1},      {"+5", -1},     {"", -1},      {"1..5", -1},
        {"1000000", -1}, {" 5", -1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int got = beacon_lbfactor_parse(rows[i].text, strlen(rows[i].text));

        if (got != rows[i].hundredths) {
            print_error("lbfactor '%s': %d, want %d\n", rows[i].text, got,
                        rows[i].hundredths);
        }
        assert_int_equal(got, rows[i].hundredths);
    }
    assert_int_equal(beacon_lbfactor_parse(NULL, 0), -1);
    assert_int_equal(beacon_lbfactor_parse("2.5x", 3), 250); /* len counts */
}

typedef struct {
    const char *name;
    beacon_announcement_t a;
} format_bad_row_t;

static void format_rejects_values_it_cannot_put_on_the_wire(void **state)
{
    static const format_bad_row_t rows[] = {
        {"a space in host", {NULL, "web 1", 1, 1, 1, NULL, NULL, NULL, NULL, NULL}},
        {"a space in url", {"http://h x", NULL, 1, 1, 1, NULL, NULL, NULL, NULL, NULL}},
        {"a space in state", {NULL, NULL, 1, 1, 1, "leav ing", NULL, NULL, NULL, NULL}},
        {"an empty host", {NULL, "", 1, 1, 1, NULL, NULL, NULL, NULL, NULL}},
        {"an empty url", {"", NULL, 1, 1, 1, NULL, NULL, NULL, NULL, NULL}},
        {"an empty state", {NULL, NULL, 1, 1, 1, "", NULL, NULL, NULL, NULL}},
        {"a newline in host", {NULL, "web-1\n", 1, 1, 1, NULL, NULL, NULL, NULL, NULL}},
        {"a control byte in host", {NULL, "web\x01" "1", 1, 1, 1, NULL, NULL, NULL, NULL, NULL}},
        {"DEL in host", {NULL, "web\x7f", 1, 1, 1, NULL, NULL, NULL, NULL, NULL}},
        {"a tab in state", {NULL, NULL, 1, 1, 1, "leaving\t", NULL, NULL, NULL, NULL}},
        {"a negative ts", {NULL, NULL, 1, 1, -1, NULL, NULL, NULL, NULL, NULL}},
        {"a ts of 19 digits", {NULL, NULL, 1, 1,
                               APR_INT64_C(1000000000000000000), NULL, NULL, NULL, NULL, NULL}},
        {"an empty svc", {NULL, NULL, 1, 1, 1, NULL, "", NULL, NULL, NULL}},
        {"a svc with a character outside [A-Za-z0-9._-]",
         {NULL, NULL, 1, 1, 1, NULL, "shop!", NULL, NULL, NULL}},
        {"a svc with a space", {NULL, NULL, 1, 1, 1, NULL, "my shop", NULL, NULL, NULL}},
        {"a svc of 64 bytes",
         {NULL, NULL, 1, 1, 1, NULL,
          "s123456789s123456789s123456789s123456789s123456789s123456789abcd", NULL, NULL, NULL}},
        {"a route with a slash", {NULL, NULL, 1, 1, 1, NULL, NULL, "web/1", NULL, NULL}},
        {"an empty route", {NULL, NULL, 1, 1, 1, NULL, NULL, "", NULL, NULL}},
        {"an lbfactor of 0", {NULL, NULL, 1, 1, 1, NULL, NULL, NULL, "0", NULL}},
        {"an lbfactor of 101", {NULL, NULL, 1, 1, 1, NULL, NULL, NULL, "101", NULL}},
        {"an lbfactor with three decimals",
         {NULL, NULL, 1, 1, 1, NULL, NULL, NULL, "2.125", NULL}},
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
                               APR_INT64_C(999999999999999999), NULL, NULL, NULL, NULL, NULL};
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

/* A receiver reads pid and seq as 1 to 18 digits: a sender writes no more. */
static void format_refuses_a_pid_or_seq_of_19_digits(void **state)
{
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t a = {NULL, NULL, BEACON_DECIMAL_MAX,
                               BEACON_DECIMAL_MAX, 1, NULL, NULL, NULL, NULL, NULL};
    char buf[128];

    (void)state;
    assert_true(beacon_format(buf, sizeof buf, &a, &k) > 0);
    a.pid = BEACON_DECIMAL_MAX + 1;
    assert_int_equal(beacon_format(buf, sizeof buf, &a, &k), -1);
    a.pid = 1;
    a.seq = BEACON_DECIMAL_MAX + 1;
    assert_int_equal(beacon_format(buf, sizeof buf, &a, &k), -1);
}

/* 2048 bytes are a datagram, 2049 are not, whatever the buffer size. */
static void format_stops_at_the_datagram_limit_and_the_buffer_size(void **state)
{
    static const char frame[] = "BEACON host= ts=" TS " mac=0123456789abcdef";
    size_t fill = BEACON_MAX_DATAGRAM - (sizeof frame - 1);
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t a = {NULL, NULL, -1, -1,
                               APR_INT64_C(1796000000000000), NULL, NULL, NULL, NULL, NULL};
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
    assert_int_equal(beacon_format(buf, strlen(V1) + 1, &a, &k), strlen(V1));
    assert_string_equal(buf, V1);
    assert_int_equal(beacon_format(buf, strlen(V1), &a, &k), -1);
    assert_int_equal(beacon_format(buf, 1, &a, &k), -1);
    free(host);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* beacon_sequence_stamp                                               */

/*
 * seq counts every announcement from 0; ts is the clock unless that would
 * not be above the last ts, then last + 1: a clock stepped back never
 * makes a receiver drop the sender as a replay.
 */
static void sequence_stamp_counts_and_never_goes_backwards(void **state)
{
    beacon_sequence_t s;
    beacon_announcement_t a = {"http://a", "web-1", 4242, -1, -1, NULL,
                               NULL, NULL, NULL, NULL};
    unsigned test_num = 0;

    (void)state;
    memset(&s, 0, sizeof s);
#define T(now, want_ts)                                                       \
    do {                                                                      \
        beacon_sequence_stamp(&s, (apr_time_t)(now), &a);                     \
        if (a.ts != (apr_int64_t)(want_ts) || a.seq != (apr_int64_t)test_num) \
            print_error("sequence script line %u\n", test_num + 1);           \
        assert_int_equal(a.ts, (apr_int64_t)(want_ts));                       \
        assert_int_equal(a.seq, test_num++);                                  \
    } while (0)
    /*  1 */ T(NOW, NOW);                 /* first stamp: the clock, seq 0 */
    /*  2 */ T(NOW, NOW + 1);             /* equal clock: strictly greater */
    /*  3 */ T(NOW, NOW + 2);
    /*  4 */ T(NOW + 1, NOW + 3);         /* clock behind last: last + 1 */
    /*  5 */ T(NOW - 3600 * SEC, NOW + 4); /* clock stepped back an hour */
    /*  6 */ T(NOW + 10, NOW + 10);       /* clock ahead again: the clock */
    /*  7 */ T(NOW + 10, NOW + 11);
    /*  8 */ T(NOW + 1000, NOW + 1000);
    /*  9 */ T(0, NOW + 1001);            /* clock reset to the epoch */
#undef T
    /* Only seq and ts are the sequence's. */
    assert_string_equal(a.url, "http://a");
    assert_string_equal(a.host, "web-1");
    assert_int_equal(a.pid, 4242);
    assert_null(a.state);
}

/*
 * Sequences that share their last ts (a sender's owners one after
 * another, the old and the new one at once): ts rises across them, above
 * a clock stepped back, while each counts its own seq.
 */
static void sequences_sharing_their_ts_rise_across_them(void **state)
{
    volatile apr_uint64_t shared = 0;
    beacon_sequence_t old_owner = {0, 0, &shared}, new_owner = {0, 0, &shared};
    beacon_announcement_t a;

    (void)state;
    memset(&a, 0, sizeof a);
    beacon_sequence_stamp(&old_owner, NOW, &a);
    assert_int_equal(a.ts, NOW);
    beacon_sequence_stamp(&old_owner, NOW + 10, &a);
    assert_int_equal(a.ts, NOW + 10);
    /* the clock steps back an hour, and the next owner starts */
    beacon_sequence_stamp(&new_owner, NOW - 3600 * SEC, &a);
    assert_int_equal(a.ts, NOW + 11);
    assert_int_equal(a.seq, 0);
    beacon_sequence_stamp(&old_owner, NOW - 3600 * SEC, &a);
    assert_int_equal(a.ts, NOW + 12);
    assert_int_equal(a.seq, 2);
    beacon_sequence_stamp(&new_owner, NOW + 20, &a);
    assert_int_equal(a.ts, NOW + 20);
    assert_int_equal(shared, (apr_uint64_t)(NOW + 20));
    /* the sequence's own last_ts is not used */
    assert_int_equal(old_owner.last_ts, 0);
}

/* The repeats of state=leaving: rising, within the first second, and
 * none past the last. */
static void leaving_repeats_rise_within_a_second(void **state)
{
    apr_interval_time_t last = 0;
    unsigned i;

    (void)state;
    assert_true(BEACON_LEAVING_REPEATS >= 2);
    for (i = 0; i < BEACON_LEAVING_REPEATS; i++) {
        apr_interval_time_t at = beacon_leaving_repeat_at(i);

        assert_true(at > last);
        assert_true(at < apr_time_from_sec(1));
        last = at;
    }
    assert_int_equal(beacon_leaving_repeat_at(BEACON_LEAVING_REPEATS), 0);
    /* the wait: until it is due, none after, never more than its offset */
    last = beacon_leaving_repeat_at(0);
    assert_int_equal(beacon_leaving_repeat_wait(NOW, 0, NOW), last);
    assert_int_equal(beacon_leaving_repeat_wait(NOW, 0, NOW + last / 2),
                     last - last / 2);
    assert_int_equal(beacon_leaving_repeat_wait(NOW, 0, NOW + last), 0);
    assert_int_equal(beacon_leaving_repeat_wait(NOW, 0, NOW + SEC), 0);
    assert_int_equal(beacon_leaving_repeat_wait(NOW, 0, NOW - 3600 * SEC), 0);
}

/* A sender whose clock steps back 5 s keeps being accepted. */
static void a_stamped_sender_survives_its_clock_stepping_back(void **state)
{
    static const apr_time_t sender_clock[] = {NOW, NOW + SEC, NOW - 4 * SEC,
                                              NOW - 3 * SEC, NOW + 2 * SEC};
    beacon_table_t *t = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
    beacon_key_t k = spec_hex_key();
    beacon_announcement_t a = {"http://10.0.0.5:8080", "web-1", 4242, -1, -1,
                               NULL, NULL, NULL, NULL, NULL};
    beacon_sequence_t s = {0, 0, NULL};
    char buf[256];
    size_t i;

    (void)state;
    assert_non_null(t);
    beacon_table_init(t, BEACON_TABLE_CAPACITY, 10 * SEC, SKEW);
    for (i = 0; i < ARRAY_LEN(sender_clock); i++) {
        beacon_event_t ev;
        int n;

        beacon_sequence_stamp(&s, sender_clock[i], &a);
        n = beacon_format(buf, sizeof buf, &a, &k);
        assert_true(n > 0);
        assert_reason_equal(beacon_receive(t, &k, buf, (size_t)n, NOW, &ev),
                            BEACON_OK, "a stamped announcement");
        assert_int_equal(beacon_span_number(&ev.dg.seq), i);
        if (i == 0) {
            beacon_table_added(ev.rec);
        }
    }
    free(t);
}

/* ------------------------------------------------------------------ */
/* beacon_parse_decimal, beacon_span_number, beacon_datagram_is_leaving */

typedef struct {
    const char *name;
    const char *s;
    apr_size_t len;  /* of s that counts; the rest is never read */
    int ok;
    apr_int64_t want;
} decimal_row_t;

#define D(s) s, sizeof(s) - 1

static void parse_decimal_takes_1_to_18_plain_digits(void **state)
{
    static const decimal_row_t rows[] = {
        {"0 is a number", D("0"), 1, 0},
        {"1 is a number", D("1"), 1, 1},
        {"18 digits are the most", D("999999999999999999"), 1,
         APR_INT64_C(999999999999999999)},
        {"18 digits with leading zeros", D("000000000000000042"), 1, 42},
        {"19 digits are refused", D("1000000000000000000"), 0, 0},
        {"19 zeros are refused, whatever their value",
         D("0000000000000000000"), 0, 0},
        {"an empty string is refused", D(""), 0, 0},
        {"a plus sign is refused", D("+1"), 0, 0},
        {"a minus sign is refused", D("-1"), 0, 0},
        {"a leading space is refused", D(" 1"), 0, 0},
        {"a trailing space is refused", D("1 "), 0, 0},
        {"a hex number is refused", D("0x10"), 0, 0},
        {"a fraction is refused", D("1.5"), 0, 0},
        {"a NUL inside len is refused", "1\0" "2", 3, 0, 0},
        {"only len bytes count", "12x", 2, 1, 12},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const decimal_row_t *r = &rows[i];
        guarded_t g = guarded_copy(r->s, r->len);
        apr_int64_t out = -4242;
        int ok = beacon_parse_decimal(g.buf, r->len, &out);

        guarded_free(&g);
        if (ok != r->ok || out != (r->ok ? r->want : -4242)) {
            print_error("case: %s: %d, %" APR_INT64_T_FMT "\n", r->name, ok,
                        out);
        }
        assert_int_equal(ok, r->ok);
        /* untouched on failure */
        assert_int_equal(out, r->ok ? r->want : -4242);
    }
}

static beacon_span_t span(const char *s)
{
    beacon_span_t sp = {s, s ? strlen(s) : 0};
    return sp;
}

static void span_number_is_the_decimal_or_minus_one(void **state)
{
    static const struct {
        const char *name;
        const char *text; /* NULL: absent */
        apr_int64_t want;
    } rows[] = {
        {"an absent field is -1", NULL, -1},
        {"4242 is 4242", "4242", 4242},
        {"0 is 0", "0", 0},
        {"18 nines", "999999999999999999", APR_INT64_C(999999999999999999)},
        {"19 digits are -1", "1000000000000000000", -1},
        {"a name is -1", "web-1", -1},
        {"a negative number is -1", "-5", -1},
        {"an empty span is -1", "", -1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        beacon_span_t s = span(rows[i].text);
        apr_int64_t got = beacon_span_number(&s);

        if (got != rows[i].want) {
            print_error("case: %s: %" APR_INT64_T_FMT "\n", rows[i].name, got);
        }
        assert_int_equal(got, rows[i].want);
    }
}

static void only_state_leaving_is_leaving(void **state)
{
    static const struct {
        const char *state; /* NULL: absent */
        int leaving;
    } rows[] = {
        {"leaving", 1}, {NULL, 0},        {"Leaving", 0}, {"LEAVING", 0},
        {"leavin", 0},  {"leaving2", 0},  {"", 0},        {"gone", 0},
    };
    beacon_datagram_t dg;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        memset(&dg, 0, sizeof dg);
        dg.state = span(rows[i].state);
        if (beacon_datagram_is_leaving(&dg) != rows[i].leaving) {
            print_error("case: state=%s\n", rows[i].state ? rows[i].state
                                                          : "(absent)");
        }
        assert_int_equal(beacon_datagram_is_leaving(&dg), rows[i].leaving);
    }
    /* The span is compared by length: "leaving" inside a longer buffer. */
    dg.state.ptr = "leavingXYZ";
    dg.state.len = 7;
    assert_true(beacon_datagram_is_leaving(&dg));
}

/* svc=: 1 to BEACON_SERVICE_MAX bytes of [A-Za-z0-9._-], nothing else. */
static void service_names_take_1_to_63_of_a_small_alphabet(void **state)
{
    static const struct {
        const char *name;
        int valid;
    } rows[] = {
        {"shop", 1},
        {"a", 1},
        {"Shop.EU-1_blue", 1},
        {"0123456789", 1},
        {"-", 1},
        {"...", 1},
        {"s12345678901234567890123456789012345678901234567890123456789012",
         1},
        {"s123456789012345678901234567890123456789012345678901234567890123",
         0},
        {"", 0},
        {"my shop", 0},
        {"shop!", 0},
        {"shop/cart", 0},
        {"shop=1", 0},
        {"sh%6fp", 0},
        {"shop\n", 0},
        {"caf\xc3\xa9", 0},
        {"~shop", 0},
    };
    char c[2] = {0, 0};
    int i, allowed = 0;

    (void)state;
    for (i = 0; i < (int)ARRAY_LEN(rows); i++) {
        if (beacon_service_is_valid(rows[i].name) != rows[i].valid) {
            print_error("case: \"%s\"\n", rows[i].name);
        }
        assert_int_equal(beacon_service_is_valid(rows[i].name), rows[i].valid);
    }
    assert_int_equal(strlen(rows[6].name), BEACON_SERVICE_MAX);
    assert_false(beacon_service_is_valid(NULL));
    /* Exactly 26 + 26 + 10 + 3 one-byte names. */
    for (i = 1; i < 256; i++) {
        c[0] = (char)i;
        allowed += beacon_service_is_valid(c);
    }
    assert_int_equal(allowed, 65);
}

/* ------------------------------------------------------------------ */
/* beacon_verify: the spec vectors                                     */

/*
 * Each vector verifies under its own key at the clock of its ts, and under
 * no other key. v1.1 vectors too: their reserved fields are covered by the
 * MAC and otherwise ignored; state=leaving is read as leaving.
 */
static void verify_accepts_every_spec_vector_under_its_key_only(void **state)
{
    size_t i, j;

    (void)state;
    for (i = 0; i < nspec; i++) {
        const spec_vector_t *v = &spec[i];
        beacon_datagram_t out;

        assert_reason_equal(verify_guarded(v->dg, v->len, &v->key, v->ts, SKEW,
                                           &out),
                            BEACON_OK, v->dg);
        /* Again in place: the guarded copy, which out points into, is gone. */
        assert_reason_equal(beacon_verify(v->dg, v->len, &v->key, v->ts, 0,
                                          &out),
                            BEACON_OK, v->dg);
        assert_true(out.ts == v->ts);
        assert_int_equal(beacon_datagram_is_leaving(&out),
                         strstr(v->dg, " state=leaving ") != NULL);
        assert_int_equal(out.url.ptr != NULL, strstr(v->dg, " url=") != NULL);
        for (j = 0; j < nspec; j++) {
            if (memcmp(&spec[j].key, &v->key, sizeof v->key) != 0) {
                assert_reason_equal(verify_guarded(v->dg, v->len, &spec[j].key,
                                                   v->ts, SKEW, &out),
                                    BEACON_DROP_MAC_MISMATCH, v->dg);
            }
        }
    }
}

/*
 * A receiver of this release treats a v1.1 or v1.2 datagram as the v1
 * datagram without its reserved fields: a new url (every vector's is
 * canonical already) is added, state=leaving from a url never added
 * changes nothing (draining and standby add it), a heartbeat has no
 * record.
 */
static void receive_treats_v1_1_vectors_as_their_v1_selves(void **state)
{
    beacon_table_t *t = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
    size_t i;

    (void)state;
    assert_non_null(t);
    for (i = 0; i < nspec; i++) {
        const spec_vector_t *v = &spec[i];
        int leaving = strstr(v->dg, " state=leaving ") != NULL;
        beacon_event_t ev;

        beacon_table_init(t, BEACON_TABLE_CAPACITY, 10 * SEC, SKEW);
        assert_reason_equal(beacon_receive(t, &v->key, v->dg, v->len, v->ts,
                                           &ev),
                            BEACON_OK, v->dg);
        if (ev.dg.url.ptr == NULL) {
            assert_null(ev.rec);
            assert_int_equal(ev.action, BEACON_ACT_NONE);
            continue;
        }
        assert_int_equal(strlen(ev.url), ev.dg.url.len);
        assert_memory_equal(ev.url, ev.dg.url.ptr, ev.dg.url.len);
        assert_int_equal(ev.action, leaving ? BEACON_ACT_NONE : BEACON_ACT_ADD);
    }
    free(t);
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
        "ts=" TS " svc=shop state=leaving";
    static const char heartbeat[] = "BEACON host=web-1 pid=4242 seq=18 ts=" TS;
    char dg[256];
    size_t len = sign_into(dg, sizeof dg, &k, body, sizeof body - 1);
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
    assert_span(out.svc, dg, len, "shop", "svc");
    assert_span(out.bad_field, dg, len, NULL, "bad_field when all is well");
    assert_true(out.ts == NOW);
    assert_true(out.url.ptr == dg + strlen("BEACON url="));

    len = sign_into(dg, sizeof dg, &k, heartbeat, sizeof heartbeat - 1);
    assert_reason_equal(beacon_verify(dg, len, &k, NOW, SKEW, &out), BEACON_OK,
                        "heartbeat");
    assert_span(out.url, dg, len, NULL, "url of a heartbeat");
    assert_span(out.host, dg, len, "web-1", "host");
    assert_span(out.pid, dg, len, "4242", "pid");
    assert_span(out.seq, dg, len, "18", "seq");
    assert_span(out.state, dg, len, NULL, "state");
    assert_span(out.svc, dg, len, NULL, "svc");
}

/* Keys only match whole: urlx= and xurl= are unknown keys, not url. */
static void verify_unknown_keys_are_ignored_not_confused(void **state)
{
    beacon_key_t k = spec_hex_key();
    static const char body[] = "BEACON urlx=http://evil xurl=http://evil "
                               "hostname=evil ts=" TS " url_2=x state2=leaving";
    char dg[256];
    size_t len = sign_into(dg, sizeof dg, &k, body, sizeof body - 1);
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
/* The drop tables: tests/vectors/drops.txt, drops-service.txt       */

static const char *const drop_cols[] = {"reason", "datagram", "name", NULL};
/* reason, datagram and name stand together in both files (check_drop_file) */
enum { DROP_REASON, DROP_DATAGRAM, DROP_NAME };
static const char *const service_cols[] = {"service", "reason", "datagram",
                                           "name", NULL};
enum { SVC_SERVICE, SVC_REASON, SVC_DATAGRAM, SVC_NAME };

/* The steps after beacon_verify's: verify passes what they drop. */
static int is_receive_step(beacon_reason_t r)
{
    return r == BEACON_DROP_WRONG_SERVICE ||
           r == BEACON_DROP_UNACCEPTABLE_URL || r == BEACON_DROP_REPLAYED_TS ||
           r == BEACON_DROP_TABLE_FULL;
}

/* bad_field names the key on a bad field (a field of version 1.1 whose
 * value this release checks: svc, route, lbfactor), and is absent on any
 * other verdict, whatever out held before. */
static void check_bad_field(const beacon_datagram_t *out, beacon_reason_t got,
                            const char *buf, size_t len, const char *name)
{
    if (got != BEACON_DROP_BAD_FIELD) {
        if (out->bad_field.ptr != NULL) {
            print_error("case: %s: bad_field set on %s\n", name,
                        beacon_reason_name(got));
        }
        assert_null(out->bad_field.ptr);
        return;
    }
    assert_non_null(out->bad_field.ptr);
    assert_true(out->bad_field.ptr > buf &&
                out->bad_field.ptr + out->bad_field.len < buf + len);
    assert_true(out->bad_field.ptr[out->bad_field.len] == '=');
    assert_true(
        (out->bad_field.len == 3 && memcmp(out->bad_field.ptr, "svc", 3) == 0) ||
        (out->bad_field.len == 3 && memcmp(out->bad_field.ptr, "ctx", 3) == 0) ||
        (out->bad_field.len == 5 && memcmp(out->bad_field.ptr, "route", 5) == 0) ||
        (out->bad_field.len == 8 && memcmp(out->bad_field.ptr, "lbfactor", 8) == 0) ||
        (out->bad_field.len == 5 && memcmp(out->bad_field.ptr, "state", 5) == 0));
}

/* One datagram through verify and receive, for a receiver of service
 * (NULL: none); counts its reason in seen. */
static void drop_row(beacon_table_t *t, const char *service,
                     const vec_field_t *reason, const vec_field_t *dg,
                     const char *name, unsigned line, unsigned *seen)
{
    beacon_reason_t want = reason_named(reason, line);
    beacon_key_t k = spec_hex_key();
    guarded_t g = guarded_copy(dg->text, dg->len);
    beacon_datagram_t out;
    beacon_event_t ev;
    beacon_reason_t got;

    memset(&out, 0xa5, sizeof out);
    got = beacon_verify(g.buf, dg->len, &k, NOW, SKEW, &out);
    assert_reason_equal(got, is_receive_step(want) ? BEACON_OK : want, name);
    check_bad_field(&out, got, g.buf, dg->len, name);
    beacon_table_init(t, BEACON_TABLE_CAPACITY, 10 * SEC, SKEW);
    beacon_table_set_service(t, service);
    memset(&ev, 0xa5, sizeof ev);
    got = beacon_receive(t, &k, g.buf, dg->len, NOW, &ev);
    assert_reason_equal(got, want, name);
    check_bad_field(&ev.dg, got, g.buf, dg->len, name);
    guarded_free(&g);
    if (got != BEACON_OK) {
        assert_int_equal(t->count, 0); /* a drop never touches the table */
    }
    seen[want]++;
}

/* Fails unless every reason of expected[0..n) had a row. */
static void assert_seen(const unsigned *seen, const beacon_reason_t *expected,
                        size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (seen[expected[i]] == 0) {
            print_error("no row for \"%s\"\n", beacon_reason_name(expected[i]));
        }
        assert_true(seen[expected[i]] > 0);
    }
}

/*
 * Every row of a drop file through drop_row(); the file's columns are
 * service (optional: service_col < 0 for none), reason, datagram, name,
 * with reason_col the first of the last three. Fails unless each reason of
 * expected[0..n) had a row.
 */
static void check_drop_file(const char *file, const char *const *cols,
                            size_t min_rows, int service_col, int reason_col,
                            const beacon_reason_t *expected, size_t n)
{
    vec_table_t rows = load_vectors(file, cols, min_rows);
    beacon_table_t *t = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
    unsigned seen[BEACON_REASON_COUNT] = {0};
    size_t i;

    assert_non_null(t);
    for (i = 0; i < rows.nrows; i++) {
        const vec_row_t *r = &rows.rows[i];

        drop_row(t, service_col < 0 ? NULL : r->col[service_col].text,
                 &r->col[reason_col], &r->col[reason_col + 1],
                 r->col[reason_col + 2].text, r->line, seen);
    }
    assert_seen(seen, expected, n);
    free(t);
    vec_free(&rows);
}

static void receiver_gives_each_drop_row_its_reason(void **state)
{
    /* What one datagram can earn from a receiver with an empty table;
     * oversize is too big for a line (see the 2049-byte tests below). */
    static const beacon_reason_t expected[] = {
        BEACON_OK, BEACON_DROP_EMBEDDED_NUL, BEACON_DROP_BAD_FRAME,
        BEACON_DROP_MAC_MISMATCH, BEACON_DROP_DUPLICATE_FIELD,
        BEACON_DROP_BAD_TS, BEACON_DROP_BAD_FIELD, BEACON_DROP_STALE_TS,
        BEACON_DROP_UNACCEPTABLE_URL,
    };

    (void)state;
    check_drop_file("drops.txt", drop_cols, 90, -1, DROP_REASON, expected,
                    ARRAY_LEN(expected));
}

/* The same for a receiver with a service: wrong service and where it
 * stands among the other checks. */
static void receiver_with_a_service_gives_each_row_its_reason(void **state)
{
    static const beacon_reason_t expected[] = {
        BEACON_OK, BEACON_DROP_MAC_MISMATCH, BEACON_DROP_DUPLICATE_FIELD,
        BEACON_DROP_BAD_FIELD, BEACON_DROP_STALE_TS,
        BEACON_DROP_WRONG_SERVICE,
    };

    (void)state;
    check_drop_file("drops-service.txt", service_cols, 15, SVC_SERVICE,
                    SVC_REASON, expected, ARRAY_LEN(expected));
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
    size_t blen = total - MAC_TAIL;
    char *body = malloc(blen);
    size_t len;

    assert_non_null(body);
    assert_true(blen > sizeof prefix);
    memcpy(body, prefix, sizeof prefix - 1);
    memset(body + sizeof prefix - 1, 'x', blen - (sizeof prefix - 1));
    len = sign_into(dg, dgsize, k, body, blen);
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
    assert_true(n < sizeof dg);
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

/* Key rotation: a receiver with several secrets accepts any of them. */
static void verify_any_accepts_a_datagram_signed_with_any_configured_key(void **state)
{
    beacon_key_t hk = spec_hex_key(), other;
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

/* ------------------------------------------------------------------ */
/* Reason names and ids                                                */

static void reason_names_are_the_spec_fragments(void **state)
{
    static const struct {
        beacon_reason_t reason;
        const char *name, *id;
    } rows[] = {
        {BEACON_OK, "ok", "ok"},
        {BEACON_DROP_OVERSIZE, "oversize datagram", "oversize"},
        {BEACON_DROP_EMBEDDED_NUL, "embedded NUL", "embedded_nul"},
        {BEACON_DROP_BAD_FRAME, "bad frame", "bad_frame"},
        {BEACON_DROP_MAC_MISMATCH, "mac mismatch", "mac_mismatch"},
        {BEACON_DROP_DUPLICATE_FIELD, "duplicate field", "duplicate_field"},
        {BEACON_DROP_BAD_TS, "bad ts", "bad_ts"},
        {BEACON_DROP_BAD_FIELD, "bad field", "bad_field"},
        {BEACON_DROP_STALE_TS, "stale ts", "stale_ts"},
        {BEACON_DROP_WRONG_SERVICE, "wrong service", "wrong_service"},
        {BEACON_DROP_UNACCEPTABLE_URL, "unacceptable url", "unacceptable_url"},
        {BEACON_DROP_REPLAYED_TS, "replayed/reordered ts", "replayed_ts"},
        {BEACON_DROP_TABLE_FULL, "member table full", "table_full"},
        {BEACON_DROP_URL_NOT_ALLOWED, "url not allowed", "url_not_allowed"},
        {BEACON_DROP_URL_NOT_CANONICAL, "url not canonical", "url_not_canonical"},
        {BEACON_DROP_REVOKED, "revoked", "revoked"},
    };
    size_t i;

    (void)state;
    assert_int_equal(ARRAY_LEN(rows), BEACON_REASON_COUNT);
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        assert_int_equal(rows[i].reason, i);
        assert_string_equal(beacon_reason_name(rows[i].reason), rows[i].name);
        assert_string_equal(beacon_reason_id(rows[i].reason), rows[i].id);
    }
    /* A url someone else owns is no drop any more (an action instead). */
    for (i = 0; i < BEACON_REASON_COUNT; i++) {
        assert_null(strstr(beacon_reason_name(i), "not managed"));
        assert_null(strstr(beacon_reason_id(i), "not_managed"));
    }
    /* Out of range: a name, never NULL or a neighbour's. */
    assert_string_equal(beacon_reason_name(BEACON_REASON_COUNT),
                        "unknown reason");
    assert_string_equal(beacon_reason_id(BEACON_REASON_COUNT), "unknown");
    assert_string_equal(beacon_reason_name((beacon_reason_t)-1),
                        "unknown reason");
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
        cmocka_unit_test(format_reproduces_the_spec_vectors),
        cmocka_unit_test(format_writes_fields_in_wire_order_and_omits_absent_ones),
        cmocka_unit_test(format_writes_route_and_lbfactor_after_ts),
        cmocka_unit_test(lbfactor_is_read_in_hundredths),
        cmocka_unit_test(format_rejects_values_it_cannot_put_on_the_wire),
        cmocka_unit_test(format_accepts_the_largest_18_digit_ts),
        cmocka_unit_test(format_refuses_a_pid_or_seq_of_19_digits),
        cmocka_unit_test(format_stops_at_the_datagram_limit_and_the_buffer_size),
        cmocka_unit_test(sequence_stamp_counts_and_never_goes_backwards),
        cmocka_unit_test(leaving_repeats_rise_within_a_second),
        cmocka_unit_test(sequences_sharing_their_ts_rise_across_them),
        cmocka_unit_test(a_stamped_sender_survives_its_clock_stepping_back),
        cmocka_unit_test(parse_decimal_takes_1_to_18_plain_digits),
        cmocka_unit_test(span_number_is_the_decimal_or_minus_one),
        cmocka_unit_test(only_state_leaving_is_leaving),
        cmocka_unit_test(service_names_take_1_to_63_of_a_small_alphabet),
        cmocka_unit_test(verify_accepts_every_spec_vector_under_its_key_only),
        cmocka_unit_test(receive_treats_v1_1_vectors_as_their_v1_selves),
        cmocka_unit_test(verify_spans_point_at_the_values_in_the_buffer),
        cmocka_unit_test(verify_unknown_keys_are_ignored_not_confused),
        cmocka_unit_test(receiver_gives_each_drop_row_its_reason),
        cmocka_unit_test(receiver_with_a_service_gives_each_row_its_reason),
        cmocka_unit_test(verify_accepts_2048_bytes_and_drops_2049_as_oversize),
        cmocka_unit_test(verify_checks_size_before_anything_else),
        cmocka_unit_test(verify_any_accepts_a_datagram_signed_with_any_configured_key),
        cmocka_unit_test(verify_mac_covers_every_signed_byte),
        cmocka_unit_test(verify_freshness_bound_is_inclusive_in_both_directions),
        cmocka_unit_test(reason_names_are_the_spec_fragments),
        cmocka_unit_test(every_reason_has_a_distinct_name_and_id),
    };

    return cmocka_run_group_tests_name("wire", tests, load_spec_vectors, NULL);
}
