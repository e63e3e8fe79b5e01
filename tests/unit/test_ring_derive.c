/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Member keys on the receiver (wire format 1.3): a ring's key sets with
 * masters (beacon_ring_set_masters), beacon_verify_ring deriving each
 * member's key from the first svc= and url= tokens (beacon_first_tokens),
 * the drops url not canonical and revoked (beacon_ring_revoke,
 * beacon_ring_is_revoked), beacon_ring_shared_key with masters, and the
 * derive: prefix (beacon_secret_use). Every datagram here is made by
 * beacon_format under a key from beacon_member_key_derive, or read from
 * tests/vectors/member-keys.txt; the derivation itself is
 * test_member_key.c's, key selection without masters test_ring.c's.
 */
#include "test_common.h"

#include "../../lib/beacon_private.h" /* beacon_first_tokens */

#define NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)

#define U1 "http://10.0.0.5:8080"
#define U2 "http://10.0.0.6:8080"

/* Three masters (the vectors' two and one of no ring) and two plain keys. */
static beacon_key_t master_a, master_b, master_c, plain, plain2;

static beacon_key_t key_of(const char *secret, beacon_key_use_t use)
{
    beacon_key_t k;
    const char *msg = beacon_key_parse_as(secret, use, &k);

    if (msg != NULL) {
        fail_msg("%s: %s", secret, msg);
    }
    return k;
}

static int setup_keys(void **state)
{
    (void)state;
    master_a = key_of("hex:00112233445566778899aabbccddeeff",
                      BEACON_KEY_USE_MASTER);
    master_b = key_of("hex:0f1e2d3c4b5a69788796a5b4c3d2e1f0",
                      BEACON_KEY_USE_MASTER);
    master_c = key_of("hex:c0c1c2c3c4c5c6c7c8c9cacbcccdcecf",
                      BEACON_KEY_USE_MASTER);
    plain = key_of("hex:ffeeddccbbaa99887766554433221100", BEACON_KEY_USE_MAC);
    plain2 = key_of("hex:a1a2a3a4a5a6a7a8a9aaabacadaeafb0", BEACON_KEY_USE_MAC);
    return 0;
}

/* The member key master gives svc (NULL: none) and url (NULL: none). */
static beacon_key_t member(const beacon_key_t *master, const char *svc,
                           const char *url)
{
    beacon_key_t k;

    assert_int_equal(beacon_member_key_derive(master, svc,
                                              svc ? strlen(svc) : 0, url,
                                              url ? strlen(url) : 0, &k),
                     0);
    return k;
}

typedef struct {
    char buf[BEACON_MAX_DATAGRAM + 1];
    size_t len;
} datagram_t;

/* beacon_format's announcement of url and svc (NULL: none) with state
 * (NULL: none), fresh at NOW, signed with key. */
static datagram_t announce(const beacon_key_t *key, const char *url,
                           const char *svc, const char *state)
{
    beacon_announcement_t a;
    datagram_t d;
    int n;

    memset(&a, 0, sizeof a);
    a.url = url;
    a.host = "web-1";
    a.pid = 4242;
    a.seq = 1;
    a.ts = NOW;
    a.svc = svc;
    a.state = state;
    n = beacon_format(d.buf, sizeof d.buf, &a, key);
    assert_true(n > 0);
    d.len = (size_t)n;
    return d;
}

/* A member's own datagram: signed with the key master gives it. */
static datagram_t member_says(const beacon_key_t *master, const char *svc,
                              const char *url, const char *state)
{
    beacon_key_t k = member(master, svc, url);

    return announce(&k, url, svc, state);
}

/* body (a signed part) with its tag under key. */
static datagram_t signed_with(const beacon_key_t *key, const char *body)
{
    datagram_t d;

    d.len = sign_into(d.buf, sizeof d.buf, key, body, strlen(body));
    return d;
}

/* d's signed part, NUL-terminated, into body. */
static void body_of(const datagram_t *d, char *body, size_t size)
{
    size_t n = d->len - (5 + 2 * BEACON_MAC_LEN);

    assert_true(n < size);
    memcpy(body, d->buf, n);
    body[n] = '\0';
}

/* A verdict on a copy of the datagram before a guard page, kept with the
 * copy so that out's spans can be read; done() frees it. */
typedef struct {
    guarded_t g;
    beacon_datagram_t out;
    beacon_reason_t reason;
} verdict_t;

static verdict_t verify_at(const beacon_ring_t *r, const datagram_t *d,
                           apr_time_t now)
{
    verdict_t v;

    v.g = guarded_copy(d->buf, d->len);
    memset(&v.out, 0xa5, sizeof v.out); /* nothing left from before */
    v.reason = beacon_verify_ring(v.g.buf, d->len, r, now, SKEW, &v.out);
    return v;
}

static void done(verdict_t *v)
{
    guarded_free(&v->g);
}

static beacon_reason_t verify(const beacon_ring_t *r, const datagram_t *d)
{
    verdict_t v = verify_at(r, d, NOW);

    done(&v);
    return v.reason;
}

/* Whether span s holds exactly s2[0..n), or is absent when s2 is NULL. */
static int span_holds(const beacon_span_t *s, const char *s2, size_t n)
{
    if (s2 == NULL) {
        return s->ptr == NULL && s->len == 0;
    }
    return s->ptr != NULL && s->len == n && memcmp(s->ptr, s2, n) == 0;
}

static int span_is(const beacon_span_t *s, const char *str)
{
    return span_holds(s, str, str ? strlen(str) : 0);
}

/* A ring on the heap (it is some 120 KB) with the default keys[0..n),
 * masters as given. */
static beacon_ring_t *new_ring(const beacon_key_t *keys, unsigned n,
                               unsigned masters)
{
    beacon_ring_t *r = malloc(sizeof *r);

    assert_non_null(r);
    beacon_ring_init(r, keys, n);
    beacon_ring_set_masters(r, BEACON_SERVICE_DEFAULT, masters);
    return r;
}

/* Adds service name with keys[0..n) and masters; its index. */
static int add(beacon_ring_t *r, const char *name, const beacon_key_t *keys,
               unsigned n, unsigned masters)
{
    int i = (int)r->nservices;

    assert_null(beacon_ring_add(r, name, keys, n));
    beacon_ring_set_masters(r, i, masters);
    return i;
}

/* The ring most tests use: master_a as the default master, "shop" with
 * master_a of its own, "cart" with master_b, "web" with no keys of its
 * own (so master_a, the default, with svc=web). */
enum { SHOP, CART, WEB };
static beacon_ring_t *shop_cart_web(void)
{
    beacon_ring_t *r = new_ring(&master_a, 1, 1);

    assert_int_equal(add(r, "shop", &master_a, 1, 1), SHOP);
    assert_int_equal(add(r, "cart", &master_b, 1, 1), CART);
    assert_int_equal(add(r, "web", NULL, 0, 0), WEB);
    return r;
}

#define expect(r, d, want, what) assert_reason_equal(verify((r), (d)), (want), (what))

/* ------------------------------------------------------------------ */
/* The vectors through a ring                                          */

static const char *const member_cols[] = {"master", "service", "url", "key",
                                          "datagram", "name", NULL};
enum { MK_MASTER, MK_SERVICE, MK_URL, MK_KEY, MK_DATAGRAM, MK_NAME };

static apr_time_t ts_of(const vec_field_t *dg)
{
    const char *ts = strstr(dg->text, " ts=");
    apr_int64_t n;

    assert_non_null(ts);
    ts += 4;
    assert_true(beacon_parse_decimal(ts, strcspn(ts, " "), &n));
    return (apr_time_t)n;
}

/* A ring where master sits where the row's datagram looks: the default
 * set for a row without a service, else that service's own set (beside
 * another service with a plain key, and a plain default key). *set says
 * which. */
static beacon_ring_t *ring_for_row(const vec_row_t *row,
                                   const beacon_key_t *master, unsigned masters,
                                   int *set)
{
    beacon_ring_t *r;

    if (row->col[MK_SERVICE].len == 0) {
        r = new_ring(master, 1, masters);
        add(r, "other", &plain2, 1, 0);
        *set = BEACON_SERVICE_DEFAULT;
    }
    else {
        r = new_ring(&plain, 1, 0);
        add(r, "other", &plain2, 1, 0);
        *set = add(r, row->col[MK_SERVICE].text, master, 1, masters);
    }
    return r;
}

static void vector_rows_verify_through_a_ring_holding_their_master(void **state)
{
    vec_table_t t = load_vectors("member-keys.txt", member_cols, 6);
    size_t i;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *row = &t.rows[i];
        const vec_field_t *dgf = &row->col[MK_DATAGRAM];
        const vec_field_t *svc = &row->col[MK_SERVICE], *url = &row->col[MK_URL];
        const char *want_svc = svc->len ? svc->text : NULL;
        const char *name = row->col[MK_NAME].text;
        beacon_key_t master = key_of(row->col[MK_MASTER].text,
                                     BEACON_KEY_USE_MASTER);
        beacon_key_t wrong = master;
        datagram_t d;
        beacon_ring_t *r;
        verdict_t v;
        int set;

        assert_true(dgf->len < sizeof d.buf);
        memcpy(d.buf, dgf->text, dgf->len);
        d.len = dgf->len;

        /* its master: accepted, with the bytes the key was derived for */
        r = ring_for_row(row, &master, 1, &set);
        v = verify_at(r, &d, ts_of(dgf));
        assert_reason_equal(v.reason, BEACON_OK, name);
        assert_true(span_holds(&v.out.url, url->text, url->len));
        assert_true(span_holds(&v.out.svc, want_svc, svc->len));
        assert_int_equal(v.out.service, set);
        assert_null(v.out.unverified_url.ptr);
        done(&v);
        free(r);

        /* another master in its place: a mac mismatch that says what the
         * member keys tried were derived for */
        wrong.bytes[0] ^= 1;
        r = ring_for_row(row, &wrong, 1, &set);
        v = verify_at(r, &d, ts_of(dgf));
        assert_reason_equal(v.reason, BEACON_DROP_MAC_MISMATCH, name);
        assert_true(span_holds(&v.out.unverified_url, url->text, url->len));
        assert_true(span_holds(&v.out.unverified_svc, want_svc, svc->len));
        done(&v);
        free(r);

        /* its master as a plain key: a mismatch with nothing derived */
        r = ring_for_row(row, &master, 0, &set);
        v = verify_at(r, &d, ts_of(dgf));
        assert_reason_equal(v.reason, BEACON_DROP_MAC_MISMATCH, name);
        assert_null(v.out.unverified_url.ptr);
        assert_null(v.out.unverified_svc.ptr);
        done(&v);
        free(r);
    }
    vec_free(&t);
}

/* ------------------------------------------------------------------ */
/* A member key announces its own member only                          */

static void a_member_key_announces_its_own_member_only(void **state)
{
    beacon_ring_t *r = shop_cart_web();
    beacon_key_t k = member(&master_a, "shop", U1);
    datagram_t d;
    verdict_t v;

    (void)state;
    d = announce(&k, U1, "shop", NULL);
    expect(r, &d, BEACON_OK, "its own url and svc");
    d = announce(&k, U1, "shop", "leaving");
    expect(r, &d, BEACON_OK, "its own leaving");

    d = announce(&k, U2, "shop", NULL);
    v = verify_at(r, &d, NOW);
    assert_reason_equal(v.reason, BEACON_DROP_MAC_MISMATCH, "another url");
    assert_true(span_is(&v.out.unverified_url, U2));
    assert_true(span_is(&v.out.unverified_svc, "shop"));
    done(&v);
    d = announce(&k, U2, "shop", "leaving");
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "leaving for another member");
    d = announce(&k, "http://10.0.0.5:8081", "shop", NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "another port");

    /* another svc: each set derives for the svc= it reads */
    d = announce(&k, U1, "cart", NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "svc=cart");
    d = announce(&k, U1, "web", NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "svc=web, the default master");
    d = announce(&k, U1, NULL, NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "no svc");
    d = announce(&k, U1, "nosuch", NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "svc of no service");

    /* the same master, each member with its own key */
    d = member_says(&master_a, "web", U1, NULL);
    v = verify_at(r, &d, NOW);
    assert_reason_equal(v.reason, BEACON_OK, "svc=web's member key");
    assert_int_equal(v.out.service, WEB);
    done(&v);
    d = member_says(&master_a, NULL, U1, "leaving");
    v = verify_at(r, &d, NOW);
    assert_reason_equal(v.reason, BEACON_OK, "no svc, the default set");
    assert_int_equal(v.out.service, BEACON_SERVICE_DEFAULT);
    done(&v);
    d = member_says(&master_b, "cart", U2, NULL);
    expect(r, &d, BEACON_OK, "cart's own master");
    d = member_says(&master_a, "cart", U2, NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "cart under shop's master");
    /* a member key of the default master for an svc no service has gets
     * past the MAC, and is then a wrong service */
    d = member_says(&master_a, "nosuch", U1, NULL);
    expect(r, &d, BEACON_DROP_WRONG_SERVICE, "svc of no service, its key");
    /* a master signs nothing itself */
    d = announce(&master_a, U1, "shop", NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "signed with the master");
    free(r);
}

/* ------------------------------------------------------------------ */
/* Url not canonical                                                   */

static void a_url_not_canonical_is_dropped_before_any_derivation(void **state)
{
    static const struct {
        const char *url, *canonical;
    } rows[] = {
        {"http://Web-1.Example:8080", "http://web-1.example:8080"},
        {"HTTP://10.0.0.5:8080", U1},
        {"http://10.0.0.5:80", "http://10.0.0.5"},
        {"https://app.example.com:443", "https://app.example.com"},
        {"ajp://10.0.0.5:8009", "ajp://10.0.0.5"},
        {"http://10.0.0.5:8080/", U1},
        {"http://[2001:DB8::5]:8080", "http://[2001:db8::5]:8080"},
        {"http://[2001:db8:0:0::5]:8080", "http://[2001:db8::5]:8080"},
    };
    static const char *const svcs[] = {NULL, "shop", "web"};
    beacon_ring_t *r = shop_cart_web(), *keys = new_ring(&plain, 1, 0);
    char canonical[BEACON_URL_MAX];
    datagram_t d;
    verdict_t v;
    size_t i, j;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const char *url = rows[i].url;

        /* each is a member's url, in another than its canonical form */
        assert_null(beacon_url_canonicalize(url, strlen(url), canonical,
                                            sizeof canonical));
        assert_string_equal(canonical, rows[i].canonical);
        assert_false(beacon_url_is_canonical(url, strlen(url)));
        for (j = 0; j < ARRAY_LEN(svcs); j++) {
            /* signed with the key derived for these very bytes, and for
             * the canonical form: neither is tried */
            d = member_says(&master_a, svcs[j], url, NULL);
            v = verify_at(r, &d, NOW);
            assert_reason_equal(v.reason, BEACON_DROP_URL_NOT_CANONICAL, url);
            /* what it claimed, for the log */
            assert_true(span_is(&v.out.unverified_url, url));
            assert_true(span_is(&v.out.unverified_svc, svcs[j]));
            done(&v);
            {
                beacon_key_t k = member(&master_a, svcs[j], rows[i].canonical);

                d = announce(&k, url, svcs[j], NULL);
                expect(r, &d, BEACON_DROP_URL_NOT_CANONICAL, url);
            }
            /* the canonical form itself passes */
            d = member_says(&master_a, svcs[j], rows[i].canonical, NULL);
            expect(r, &d, BEACON_OK, rows[i].canonical);
        }
        /* a set without masters takes any form (it is canonicalized
         * after the MAC, by the receiver) */
        d = announce(&plain, url, NULL, NULL);
        expect(keys, &d, BEACON_OK, url);
    }
    /* no url= at all: a heartbeat has no member key */
    for (j = 0; j < ARRAY_LEN(svcs); j++) {
        d = member_says(&master_a, svcs[j], NULL, NULL);
        v = verify_at(r, &d, NOW);
        assert_reason_equal(v.reason, BEACON_DROP_URL_NOT_CANONICAL, "no url");
        assert_null(v.out.unverified_url.ptr);
        assert_true(span_is(&v.out.unverified_svc, svcs[j]));
        done(&v);
        d = member_says(&master_a, svcs[j], "not-a-url", NULL);
        expect(r, &d, BEACON_DROP_URL_NOT_CANONICAL, "not a url");
    }
    d = announce(&plain, NULL, NULL, NULL);
    expect(keys, &d, BEACON_OK, "a heartbeat under a plain key");
    free(keys);
    free(r);
}

/* ------------------------------------------------------------------ */
/* The first svc= and url=, and a second of either                     */

static void first_tokens_are_the_first_exact_keys(void **state)
{
    static const struct {
        const char *body, *svc, *url;
    } rows[] = {
        {"BEACON url=a svc=b", "b", "a"},
        {"BEACON svc=b url=a url=c svc=d", "b", "a"},
        {"BEACON urlx=a svcx=b xurl=c url=d", NULL, "d"},
        {"BEACON host=url=a pad=svc=b", NULL, NULL},
        {"BEACON url_=a svc2=b svc=c", "c", NULL},
        {"BEACON url==a svc=x=y", "x=y", "=a"},
        {"BEACON", NULL, NULL},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        size_t n = strlen(rows[i].body);
        guarded_t g = guarded_copy(rows[i].body, n);
        beacon_span_t svc, url;

        beacon_first_tokens(g.buf, n, &svc, &url);
        if (!span_is(&svc, rows[i].svc) || !span_is(&url, rows[i].url)) {
            print_error("case: %s\n", rows[i].body);
        }
        assert_true(span_is(&svc, rows[i].svc));
        assert_true(span_is(&url, rows[i].url));
        guarded_free(&g);
    }
}

/* On BEACON_OK, out's url and svc are the first tokens' own bytes, the
 * ones the member key was derived for. */
/* Where text first starts in d (no NUL to stop a strstr: the bytes
 * alone count, as in the guarded copy). */
static size_t offset_of(const datagram_t *d, const char *text)
{
    size_t i, n = strlen(text);

    for (i = 0; i + n <= d->len; i++) {
        if (memcmp(d->buf + i, text, n) == 0) {
            return i;
        }
    }
    fail_msg("no '%s' in the datagram", text);
    return 0;
}

static void verified_url_and_svc_are_the_bytes_derived_for(void **state)
{
    static const char *const svcs[] = {NULL, "shop", "web"};
    beacon_ring_t *r = shop_cart_web();
    size_t j;

    (void)state;
    for (j = 0; j < ARRAY_LEN(svcs); j++) {
        datagram_t d = member_says(&master_a, svcs[j], U1, "leaving");
        verdict_t v = verify_at(r, &d, NOW);
        beacon_span_t svc, url;

        assert_reason_equal(v.reason, BEACON_OK, "a member");
        beacon_first_tokens(v.g.buf, d.len - (5 + 2 * BEACON_MAC_LEN), &svc,
                            &url);
        assert_ptr_equal(v.out.url.ptr, url.ptr);
        assert_int_equal(v.out.url.len, url.len);
        assert_ptr_equal(v.out.svc.ptr, svc.ptr);
        assert_int_equal(v.out.svc.len, svc.len);
        assert_ptr_equal(url.ptr, v.g.buf + offset_of(&d, " url=") + 5);
        assert_true(span_is(&v.out.url, U1));
        assert_true(span_is(&v.out.svc, svcs[j]));
        done(&v);
    }
    free(r);
}

/* A second url= or svc=, before or after the first one a key would be
 * derived for, is a duplicate field: signed with the member key of the
 * first tokens, it gets past the MAC and no further. */
static void a_second_url_or_svc_is_a_duplicate_field(void **state)
{
    beacon_ring_t *r = shop_cart_web();
    char body[BEACON_MAX_DATAGRAM], variant[BEACON_MAX_DATAGRAM + 64];
    const char *rest;
    datagram_t d = member_says(&master_a, "shop", U1, NULL);
    beacon_key_t k;
    size_t i;
    struct {
        const char *name;
        const char *svc, *url; /* the first tokens of the variant */
    } rows[] = {
        {"the same url again, after", "shop", U1},
        {"another url after", "shop", U1},
        {"another url before", "shop", U2},
        {"the same svc again, after", "shop", U1},
        {"another svc after", "shop", U1},
        {"another svc before", "cart", U1},
        {"no svc, a second url after", NULL, U1},
    };

    (void)state;
    body_of(&d, body, sizeof body);
    rest = body + strlen("BEACON ");
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        switch (i) {
        case 0: snprintf(variant, sizeof variant, "%s url=" U1, body); break;
        case 1: snprintf(variant, sizeof variant, "%s url=" U2, body); break;
        case 2: snprintf(variant, sizeof variant, "BEACON url=" U2 " %s", rest); break;
        case 3: snprintf(variant, sizeof variant, "%s svc=shop", body); break;
        case 4: snprintf(variant, sizeof variant, "%s svc=cart", body); break;
        case 5: snprintf(variant, sizeof variant, "BEACON svc=cart %s", rest); break;
        default:
            snprintf(variant, sizeof variant,
                     "BEACON url=" U1 " ts=1796000000000000 url=" U2);
            break;
        }
        k = rows[i].svc && strcmp(rows[i].svc, "cart") == 0
                ? member(&master_b, "cart", rows[i].url)
                : member(&master_a, rows[i].svc, rows[i].url);
        d = signed_with(&k, variant);
        expect(r, &d, BEACON_DROP_DUPLICATE_FIELD, rows[i].name);
        /* under any other member's key, a mismatch: the MAC comes first */
        k.bytes[0] ^= 1;
        d = signed_with(&k, variant);
        expect(r, &d, BEACON_DROP_MAC_MISMATCH, rows[i].name);
    }
    free(r);
}

/* ------------------------------------------------------------------ */
/* Several keys in a set                                               */

static void two_masters_each_verify_their_members(void **state)
{
    const beacon_key_t two[] = {master_a, master_b};
    const beacon_key_t four[] = {plain, master_a, plain2, master_b};
    beacon_ring_t *r = new_ring(two, 2, 3);
    datagram_t d;
    int shop = add(r, "shop", four, 4, 0xa);

    (void)state;
    d = member_says(&master_a, NULL, U1, NULL);
    expect(r, &d, BEACON_OK, "default, the first master");
    d = member_says(&master_b, NULL, U2, NULL);
    expect(r, &d, BEACON_OK, "default, the second master");
    d = member_says(&master_b, NULL, U1, "leaving");
    expect(r, &d, BEACON_OK, "default, the second master, leaving");
    d = member_says(&master_c, NULL, U1, NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "default, a third master");

    d = member_says(&master_a, "shop", U1, NULL);
    expect(r, &d, BEACON_OK, "shop, master at index 1");
    d = member_says(&master_b, "shop", U2, NULL);
    expect(r, &d, BEACON_OK, "shop, master at index 3");
    d = announce(&plain, U1, "shop", NULL);
    expect(r, &d, BEACON_OK, "shop, plain key at index 0");
    d = announce(&plain2, U1, "shop", NULL);
    expect(r, &d, BEACON_OK, "shop, plain key at index 2");
    d = member_says(&master_c, "shop", U1, NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "shop, a third master");
    d = member_says(&plain, "shop", U1, NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "shop, a plain key as master");

    /* masters flipped: the plain keys now derive, the masters sign */
    beacon_ring_set_masters(r, shop, 0x5);
    d = member_says(&plain2, "shop", U1, NULL);
    expect(r, &d, BEACON_OK, "shop, plain2 made a master");
    d = member_says(&master_b, "shop", U2, NULL);
    expect(r, &d, BEACON_DROP_MAC_MISMATCH, "shop, master_b no longer one");
    d = announce(&master_b, U2, "shop", NULL);
    expect(r, &d, BEACON_OK, "shop, master_b as a plain key");
    free(r);
}

static void a_mixed_set_accepts_plain_keys_and_members(void **state)
{
    const beacon_key_t orders[2][2] = {{plain, master_a}, {master_a, plain}};
    const unsigned masks[2] = {2, 1};
    size_t i;

    (void)state;
    for (i = 0; i < 2; i++) {
        beacon_ring_t *r = new_ring(orders[i], 2, masks[i]);
        datagram_t d;
        verdict_t v;

        d = announce(&plain, U1, NULL, NULL);
        expect(r, &d, BEACON_OK, "the plain key");
        d = announce(&plain, "HTTP://10.0.0.5:8080/", NULL, NULL);
        expect(r, &d, BEACON_OK, "the plain key, a url in any form");
        d = announce(&plain, NULL, NULL, NULL);
        expect(r, &d, BEACON_OK, "the plain key, a heartbeat");
        d = member_says(&master_a, NULL, U1, NULL);
        expect(r, &d, BEACON_OK, "a member key");
        d = member_says(&master_a, NULL, "HTTP://10.0.0.5:8080/", NULL);
        expect(r, &d, BEACON_DROP_URL_NOT_CANONICAL, "a member, not canonical");
        d = announce(&master_a, U1, NULL, NULL);
        v = verify_at(r, &d, NOW);
        assert_reason_equal(v.reason, BEACON_DROP_MAC_MISMATCH, "the master");
        assert_true(span_is(&v.out.unverified_url, U1));
        assert_true(span_is(&v.out.unverified_svc, NULL));
        done(&v);
        d = member_says(&plain, NULL, U1, NULL);
        expect(r, &d, BEACON_DROP_MAC_MISMATCH, "the plain key as a master");
        free(r);
    }
}

/* Only a member key vouches that the url is canonical (the check before
 * its MAC): step 7 then takes it as it is, and the table names the same
 * member as when it canonicalizes. */
static void only_a_member_key_marks_the_url_canonical(void **state)
{
    const beacon_key_t keys[2] = {plain, master_a};
    beacon_ring_t *r = new_ring(keys, 2, 2);
    const char *urls[2] = {U1, "HTTP://10.0.0.5:8080/"};
    size_t i;

    (void)state;
    for (i = 0; i < 2; i++) {
        datagram_t d = announce(&plain, urls[i], NULL, NULL);
        verdict_t v = verify_at(r, &d, NOW);

        assert_reason_equal(v.reason, BEACON_OK, "the plain key");
        assert_int_equal(v.out.url_is_canonical, 0);
        done(&v);
    }
    {
        datagram_t d = member_says(&master_a, NULL, U1, NULL);
        verdict_t v = verify_at(r, &d, NOW);

        assert_reason_equal(v.reason, BEACON_OK, "a member key");
        assert_int_equal(v.out.url_is_canonical, 1);
        done(&v);
    }
    free(r);
}

/* ------------------------------------------------------------------ */
/* Revocation                                                          */

/* A datagram of url and svc correctly signed for r's sets (shop_cart_web),
 * and the same forged. */
static void expect_both(const beacon_ring_t *r, const char *svc,
                        const char *url, beacon_reason_t want,
                        const char *what)
{
    const beacon_key_t *m = svc && strcmp(svc, "cart") == 0 ? &master_b
                                                             : &master_a;
    datagram_t d = member_says(m, svc, url, NULL);

    if (want == BEACON_OK && svc && strcmp(svc, "nosuch") == 0) {
        want = BEACON_DROP_WRONG_SERVICE;
    }
    expect(r, &d, want, what);
    d = announce(&plain, url, svc, NULL);
    expect(r, &d, want == BEACON_DROP_REVOKED ? want : BEACON_DROP_MAC_MISMATCH,
           what);
}

static void a_url_is_revoked_in_its_set_only(void **state)
{
    beacon_ring_t *r = shop_cart_web();

    (void)state;
    assert_false(beacon_ring_is_revoked(r, SHOP, U1, strlen(U1)));
    assert_null(beacon_ring_revoke(r, SHOP, U1));
    assert_true(beacon_ring_is_revoked(r, SHOP, U1, strlen(U1)));
    assert_false(beacon_ring_is_revoked(r, CART, U1, strlen(U1)));
    assert_false(beacon_ring_is_revoked(r, BEACON_SERVICE_DEFAULT, U1,
                                        strlen(U1)));
    assert_false(beacon_ring_is_revoked(r, SHOP, U2, strlen(U2)));
    expect_both(r, "shop", U1, BEACON_DROP_REVOKED, "revoked in shop");
    {
        datagram_t d = announce(&plain, "HTTP://10.0.0.5:8080/", "shop", NULL);
        verdict_t v = verify_at(r, &d, NOW);

        /* named as it was spelt, for the log */
        assert_reason_equal(v.reason, BEACON_DROP_REVOKED, "another spelling");
        assert_true(span_is(&v.out.unverified_url, "HTTP://10.0.0.5:8080/"));
        assert_true(span_is(&v.out.unverified_svc, "shop"));
        done(&v);
    }
    expect_both(r, "shop", U2, BEACON_OK, "shop, another url");
    expect_both(r, "cart", U1, BEACON_OK, "cart");
    expect_both(r, "web", U1, BEACON_OK, "web (the default keys)");
    expect_both(r, NULL, U1, BEACON_OK, "no svc");

    /* in the default set: the datagrams that go to it (no svc=, or one
     * no service has), not those of a service without keys of its own */
    assert_null(beacon_ring_revoke(r, BEACON_SERVICE_DEFAULT, U2));
    expect_both(r, NULL, U2, BEACON_DROP_REVOKED, "revoked in the default");
    expect_both(r, "nosuch", U2, BEACON_DROP_REVOKED, "svc of no service");
    expect_both(r, "web", U2, BEACON_OK, "web");
    expect_both(r, "shop", U2, BEACON_OK, "shop");
    free(r);
}

static void a_url_revoked_in_every_set_is_dropped_whatever_svc_says(void **state)
{
    static const char *const svcs[] = {NULL, "shop", "cart", "web", "nosuch"};
    static const int sets[] = {BEACON_SERVICE_DEFAULT, SHOP, CART, WEB};
    beacon_ring_t *r = shop_cart_web();
    size_t i;

    (void)state;
    assert_null(beacon_ring_revoke(r, BEACON_RING_EVERY_SET, U1));
    for (i = 0; i < ARRAY_LEN(sets); i++) {
        assert_true(beacon_ring_is_revoked(r, sets[i], U1, strlen(U1)));
        assert_false(beacon_ring_is_revoked(r, sets[i], U2, strlen(U2)));
    }
    for (i = 0; i < ARRAY_LEN(svcs); i++) {
        expect_both(r, svcs[i], U1, BEACON_DROP_REVOKED, "every set");
        expect_both(r, svcs[i], U2, BEACON_OK, "another url");
    }
    /* and on a ring of plain keys alone */
    free(r);
    r = new_ring(&plain, 1, 0);
    assert_null(beacon_ring_revoke(r, BEACON_RING_EVERY_SET, U1));
    {
        datagram_t d = announce(&plain, U1, NULL, NULL);

        expect(r, &d, BEACON_DROP_REVOKED, "plain keys");
        d = announce(&plain, U2, NULL, NULL);
        expect(r, &d, BEACON_OK, "plain keys, another url");
    }
    free(r);
}

/* Revoked in any spelling, found in any spelling. */
static void a_revoked_url_is_revoked_in_every_spelling(void **state)
{
    static const char *const spellings[] = {
        "https://app.example.com", "HTTPS://App.Example.COM:443/",
        "https://APP.example.com/", "https://app.example.com:443",
    };
    beacon_ring_t *r = shop_cart_web(), *p = new_ring(&plain, 1, 0);
    size_t i, j;

    (void)state;
    assert_null(beacon_ring_revoke(r, SHOP, spellings[1]));
    assert_null(beacon_ring_revoke(p, BEACON_SERVICE_DEFAULT, spellings[2]));
    assert_int_equal(r->nrevoked, 1);
    assert_string_equal(r->revoked[0].url, spellings[0]);
    for (i = 0; i < ARRAY_LEN(spellings); i++) {
        const char *u = spellings[i];
        datagram_t d;

        assert_true(beacon_ring_is_revoked(r, SHOP, u, strlen(u)));
        assert_true(beacon_ring_is_revoked(p, BEACON_SERVICE_DEFAULT, u,
                                           strlen(u)));
        /* before the canonical check and the MAC */
        d = member_says(&master_a, "shop", u, NULL);
        expect(r, &d, BEACON_DROP_REVOKED, u);
        d = announce(&plain, u, NULL, NULL);
        expect(p, &d, BEACON_DROP_REVOKED, u);
        /* a spelling twice is one revocation */
        for (j = 0; j < ARRAY_LEN(spellings); j++) {
            assert_null(beacon_ring_revoke(r, SHOP, spellings[j]));
        }
        assert_int_equal(r->nrevoked, 1);
    }
    /* a length is a length: the bytes after it are not read */
    assert_false(beacon_ring_is_revoked(r, SHOP, "https://app.example.comX",
                                        strlen("https://app.example.co")));
    assert_true(beacon_ring_is_revoked(r, SHOP, "https://app.example.com/X",
                                       strlen("https://app.example.com/")));
    free(p);
    free(r);
}

static void revoke_refuses_bad_urls_bad_sets_and_more_than_the_limit(void **state)
{
    static const char *const bad[] = {
        "", "10.0.0.5:8080", "http://", "http://u@10.0.0.5", "http://h/path",
        "http://h?q", "balancer://b", "http://h:0", "http://h:65536",
    };
    beacon_ring_t *r = shop_cart_web();
    char url[64], canonical[BEACON_URL_MAX];
    const char *msg;
    unsigned i;

    (void)state;
    assert_false(beacon_ring_is_revoked(r, BEACON_SERVICE_DEFAULT, U1,
                                        strlen(U1)));
    assert_false(beacon_ring_is_revoked(r, BEACON_SERVICE_DEFAULT, NULL, 0));
    for (i = 0; i < ARRAY_LEN(bad); i++) {
        assert_non_null(beacon_url_canonicalize(bad[i], strlen(bad[i]),
                                                canonical, sizeof canonical));
        msg = beacon_ring_revoke(r, BEACON_SERVICE_DEFAULT, bad[i]);
        if (msg == NULL) {
            print_error("case: \"%s\": revoked\n", bad[i]);
        }
        assert_non_null(msg);
        assert_non_null(beacon_ring_revoke(r, BEACON_RING_EVERY_SET, bad[i]));
    }
    assert_int_equal(r->nrevoked, 0);
    assert_non_null(beacon_ring_revoke(r, (int)r->nservices, U1));
    assert_non_null(beacon_ring_revoke(r, -3, U1));
    assert_non_null(beacon_ring_revoke(r, 300, U1));
    assert_int_equal(r->nrevoked, 0);

    /* twice is once */
    assert_null(beacon_ring_revoke(r, SHOP, U1));
    assert_null(beacon_ring_revoke(r, SHOP, U1));
    assert_int_equal(r->nrevoked, 1);
    /* the same url in another set is another revocation */
    assert_null(beacon_ring_revoke(r, CART, U1));
    assert_int_equal(r->nrevoked, 2);

    for (i = 2; i < BEACON_RING_MAX_REVOKED; i++) {
        snprintf(url, sizeof url, "http://10.1.%u.%u:8080", i / 256, i % 256);
        assert_null(beacon_ring_revoke(r, (int)(i % 4) - 2, url));
    }
    assert_int_equal(r->nrevoked, BEACON_RING_MAX_REVOKED);
    msg = beacon_ring_revoke(r, SHOP, "http://one-too-many");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "256"));
    assert_int_equal(r->nrevoked, BEACON_RING_MAX_REVOKED);
    assert_false(beacon_ring_is_revoked(r, SHOP, "http://one-too-many",
                                        strlen("http://one-too-many")));
    /* one already there is still no error when full */
    assert_null(beacon_ring_revoke(r, SHOP, "HTTP://10.0.0.5:8080/"));
    /* and every one of them is found */
    for (i = 2; i < BEACON_RING_MAX_REVOKED; i++) {
        int set = (int)(i % 4) - 2;

        snprintf(url, sizeof url, "http://10.1.%u.%u:8080", i / 256, i % 256);
        assert_true(beacon_ring_is_revoked(
            r, set == BEACON_RING_EVERY_SET ? CART : set, url, strlen(url)));
    }
    free(r);
}

/* ------------------------------------------------------------------ */
/* Shared keys, the derive: prefix                                     */

static void a_master_in_both_sets_is_not_a_shared_key(void **state)
{
    beacon_ring_t *r;
    int a = 99, b = 99;

    (void)state;
    /* the same master in the default set and two services */
    r = new_ring(&master_a, 1, 1);
    add(r, "shop", &master_a, 1, 1);
    add(r, "cart", &master_a, 1, 1);
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 0);
    /* a master in one set and the same bytes as a key in another */
    beacon_ring_set_masters(r, 1, 0);
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 1);
    assert_int_equal(a, -1);
    assert_int_equal(b, 1);
    free(r);

    r = new_ring(&plain, 1, 0);
    add(r, "shop", &master_a, 1, 1);
    add(r, "cart", &master_a, 1, 0);
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 1);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    free(r);

    /* masters at different indexes are still the same master */
    {
        const beacon_key_t ka[] = {master_a, plain}, kb[] = {plain2, master_a};

        r = new_ring(&master_c, 1, 1);
        add(r, "shop", ka, 2, 1);
        add(r, "cart", kb, 2, 2);
        assert_int_equal(beacon_ring_shared_key(r, &a, &b), 0);
        /* a plain key shared beside is shared */
        add(r, "api", &plain, 1, 0);
        assert_int_equal(beacon_ring_shared_key(r, &a, &b), 1);
        assert_int_equal(a, 0);
        assert_int_equal(b, 2);
        free(r);
    }
    /* a service without keys of its own takes the default's masters:
     * the default set and it share them (unless svc= is required) */
    r = new_ring(&master_a, 1, 1);
    add(r, "web", NULL, 0, 0);
    assert_int_equal(beacon_ring_shared_key(r, &a, &b), 0);
    free(r);
}

static void derive_prefix_makes_a_master_in_any_case(void **state)
{
    static const struct {
        const char *value;
        beacon_key_use_t use;
        size_t skip;
    } rows[] = {
        {"derive:hex:00112233445566778899aabbccddeeff", BEACON_KEY_USE_MASTER, 7},
        {"DERIVE:file:/etc/beacon/master", BEACON_KEY_USE_MASTER, 7},
        {"Derive:exec:/usr/local/bin/master --x", BEACON_KEY_USE_MASTER, 7},
        {"derive:", BEACON_KEY_USE_MASTER, 7},
        {"hex:00112233445566778899aabbccddeeff", BEACON_KEY_USE_MAC, 0},
        {"file:/etc/beacon/derive:x", BEACON_KEY_USE_MAC, 0},
        {"derive", BEACON_KEY_USE_MAC, 0},
        {"derive-hex:0011", BEACON_KEY_USE_MAC, 0},
        {" derive:hex:00", BEACON_KEY_USE_MAC, 0},
        {"", BEACON_KEY_USE_MAC, 0},
    };
    beacon_key_use_t use;
    const char *rest;
    beacon_key_t k;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        use = (beacon_key_use_t)99;
        rest = NULL;
        beacon_secret_use(rows[i].value, &use, &rest);
        if (use != rows[i].use || rest != rows[i].value + rows[i].skip) {
            print_error("case: \"%s\"\n", rows[i].value);
        }
        assert_int_equal(use, rows[i].use);
        assert_ptr_equal(rest, rows[i].value + rows[i].skip);
    }
    /* what is left is read as a master: hex only */
    beacon_secret_use(rows[0].value, &use, &rest);
    assert_null(beacon_key_parse_as(rest, use, &k));
    assert_memory_equal(k.bytes, master_a.bytes, sizeof k.bytes);
    beacon_secret_use("derive:a-long-random-shared-cluster-secret", &use, &rest);
    assert_non_null(beacon_key_parse_as(rest, use, &k));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vector_rows_verify_through_a_ring_holding_their_master),
        cmocka_unit_test(a_member_key_announces_its_own_member_only),
        cmocka_unit_test(a_url_not_canonical_is_dropped_before_any_derivation),
        cmocka_unit_test(first_tokens_are_the_first_exact_keys),
        cmocka_unit_test(verified_url_and_svc_are_the_bytes_derived_for),
        cmocka_unit_test(a_second_url_or_svc_is_a_duplicate_field),
        cmocka_unit_test(two_masters_each_verify_their_members),
        cmocka_unit_test(a_mixed_set_accepts_plain_keys_and_members),
        cmocka_unit_test(only_a_member_key_marks_the_url_canonical),
        cmocka_unit_test(a_url_is_revoked_in_its_set_only),
        cmocka_unit_test(a_url_revoked_in_every_set_is_dropped_whatever_svc_says),
        cmocka_unit_test(a_revoked_url_is_revoked_in_every_spelling),
        cmocka_unit_test(revoke_refuses_bad_urls_bad_sets_and_more_than_the_limit),
        cmocka_unit_test(a_master_in_both_sets_is_not_a_shared_key),
        cmocka_unit_test(derive_prefix_makes_a_master_in_any_case),
    };

    return cmocka_run_group_tests_name("ring_derive", tests, setup_keys, NULL);
}
