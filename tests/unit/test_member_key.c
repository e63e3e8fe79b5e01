/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Member keys (wire format, version 1.3): beacon_member_key_derive() on
 * the rows of tests/vectors/member-keys.txt, whose keys and datagrams were
 * computed outside this library (tests/integration/beacon_wire.py's
 * member_key and sign); a master is hex: only (beacon_key_parse_as and
 * beacon_key_parse_file_as with BEACON_KEY_USE_MASTER). Which urls are
 * canonical (beacon_url_is_canonical) is test_url.c's, on urls.txt.
 */
#include "test_common.h"

static const char *const member_cols[] = {"master", "service", "url", "key",
                                          "datagram", "name", NULL};
enum { MK_MASTER, MK_SERVICE, MK_URL, MK_KEY, MK_DATAGRAM, MK_NAME };

#define MAX_SKEW apr_time_from_sec(30)

/* The rows: at least the six kinds the file was made with. */
static vec_table_t load_member_keys(void)
{
    return load_vectors("member-keys.txt", member_cols, 6);
}

static beacon_key_t master_of(const vec_row_t *r)
{
    beacon_key_t master;
    const char *msg = beacon_key_parse_as(r->col[MK_MASTER].text,
                                          BEACON_KEY_USE_MASTER, &master);

    if (msg != NULL) {
        fail_msg("line %u: master refused: %s", r->line, msg);
    }
    return master;
}

/* The row's key, derived from its master, service and url, each an
 * exact-length copy before a guard page: no byte past them is read. */
static beacon_key_t derive_row(const vec_row_t *r)
{
    beacon_key_t master = master_of(r), key;
    const vec_field_t *svc = &r->col[MK_SERVICE], *url = &r->col[MK_URL];
    guarded_t gs = guarded_copy(svc->text, svc->len);
    guarded_t gu = guarded_copy(url->text, url->len);

    memset(key.bytes, 0xa5, sizeof key.bytes);
    assert_int_equal(beacon_member_key_derive(&master, gs.buf, svc->len,
                                              gu.buf, url->len, &key), 0);
    guarded_free(&gs);
    guarded_free(&gu);
    return key;
}

/* The ts of a row's datagram, the receiver's clock for it. */
static apr_time_t ts_of(const vec_row_t *r)
{
    const char *ts = strstr(r->col[MK_DATAGRAM].text, " ts=");
    apr_int64_t n;

    assert_non_null(ts);
    ts += 4;
    assert_true(beacon_parse_decimal(ts, strcspn(ts, " "), &n));
    return (apr_time_t)n;
}

static int span_is(const beacon_span_t *s, const vec_field_t *f)
{
    return s->ptr != NULL ? s->len == f->len && memcmp(s->ptr, f->text,
                                                       f->len) == 0
                          : f->len == 0;
}

static void each_row_derives_its_key(void **state)
{
    vec_table_t t = load_member_keys();
    size_t i;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *r = &t.rows[i];
        unsigned char want[BEACON_KEY_LEN];
        beacon_key_t key = derive_row(r);

        if (vec_hex(&r->col[MK_KEY], want, sizeof want) != 0) {
            fail_msg("%s:%u: key is not 32 hex digits", t.path, r->line);
        }
        if (memcmp(key.bytes, want, sizeof want) != 0) {
            print_error("case: %s\n", r->col[MK_NAME].text);
        }
        assert_memory_equal(key.bytes, want, sizeof want);
    }
    vec_free(&t);
}

/* Each row's datagram verifies under the row's key, and says the row's
 * url and service: the bytes the key was derived from. */
static void each_datagram_verifies_under_its_member_key(void **state)
{
    vec_table_t t = load_member_keys();
    size_t i;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *r = &t.rows[i];
        const vec_field_t *dg = &r->col[MK_DATAGRAM];
        beacon_key_t key = derive_row(r);
        beacon_datagram_t out;

        assert_reason_equal(beacon_verify(dg->text, dg->len, &key, ts_of(r),
                                          MAX_SKEW, &out),
                            BEACON_OK, r->col[MK_NAME].text);
        assert_true(span_is(&out.url, &r->col[MK_URL]));
        assert_true(span_is(&out.svc, &r->col[MK_SERVICE]));
        /* and the url column is the form a key is derived for */
        assert_true(beacon_url_is_canonical(r->col[MK_URL].text,
                                            r->col[MK_URL].len));
    }
    vec_free(&t);
}

/* A member key announces only its own member: every other row's
 * datagram, and its own under the master, is a mac mismatch. */
static void a_member_key_verifies_no_other_member(void **state)
{
    vec_table_t t = load_member_keys();
    size_t i, j;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *r = &t.rows[i];
        beacon_key_t key = derive_row(r), master = master_of(r);
        beacon_datagram_t out;

        assert_reason_equal(beacon_verify(r->col[MK_DATAGRAM].text,
                                          r->col[MK_DATAGRAM].len, &master,
                                          ts_of(r), MAX_SKEW, &out),
                            BEACON_DROP_MAC_MISMATCH, "under the master");
        for (j = 0; j < t.nrows; j++) {
            const vec_field_t *dg = &t.rows[j].col[MK_DATAGRAM];

            if (j == i) {
                continue;
            }
            assert_reason_equal(beacon_verify(dg->text, dg->len, &key,
                                              ts_of(&t.rows[j]), MAX_SKEW,
                                              &out),
                                BEACON_DROP_MAC_MISMATCH, r->col[MK_NAME].text);
        }
    }
    vec_free(&t);
}

/* L's NULs keep svc and url apart: a byte moved from one to the other,
 * or an empty service against none at all, is another key. */
static void the_input_is_unambiguous(void **state)
{
    beacon_key_t master = spec_hex_key(), a, b;

    (void)state;
    assert_int_equal(beacon_member_key_derive(&master, "shop", 4,
                                              "http://h", 8, &a), 0);
    assert_int_equal(beacon_member_key_derive(&master, "sho", 3,
                                              "phttp://h", 9, &b), 0);
    assert_memory_not_equal(a.bytes, b.bytes, sizeof a.bytes);
    assert_int_equal(beacon_member_key_derive(&master, "", 0,
                                              "http://h", 8, &a), 0);
    assert_int_equal(beacon_member_key_derive(&master, NULL, 0,
                                              "http://h", 8, &b), 0);
    assert_memory_equal(a.bytes, b.bytes, sizeof a.bytes);
    /* the two halves are two different tags */
    assert_memory_not_equal(a.bytes, a.bytes + BEACON_MAC_LEN,
                            BEACON_MAC_LEN);
}

/* Up to BEACON_MAX_DATAGRAM bytes of svc and url together, read exactly;
 * one more is refused with out untouched. out may be the master. */
static void input_is_bounded_and_out_may_be_the_master(void **state)
{
    static char url[BEACON_MAX_DATAGRAM + 1];
    beacon_key_t master = spec_hex_key(), key, same;
    guarded_t g;

    (void)state;
    memset(url, 'u', sizeof url);
    g = guarded_copy(url, BEACON_MAX_DATAGRAM);
    assert_int_equal(beacon_member_key_derive(&master, "", 0, g.buf,
                                              BEACON_MAX_DATAGRAM, &key), 0);
    guarded_free(&g);
    g = guarded_copy(url, BEACON_MAX_DATAGRAM - 4);
    assert_int_equal(beacon_member_key_derive(&master, "shop", 4, g.buf,
                                              BEACON_MAX_DATAGRAM - 4, &key),
                     0);
    guarded_free(&g);

    memset(key.bytes, 0xa5, sizeof key.bytes);
    same = key;
    assert_int_equal(beacon_member_key_derive(&master, "", 0, url,
                                              BEACON_MAX_DATAGRAM + 1, &key),
                     -1);
    assert_int_equal(beacon_member_key_derive(&master, "s", 1, url,
                                              BEACON_MAX_DATAGRAM, &key),
                     -1);
    assert_int_equal(beacon_member_key_derive(&master, url, (apr_size_t)-1,
                                              url, 1, &key), -1);
    assert_memory_equal(key.bytes, same.bytes, sizeof key.bytes);

    assert_int_equal(beacon_member_key_derive(&master, "shop", 4,
                                              "http://h", 8, &key), 0);
    assert_int_equal(beacon_member_key_derive(&master, "shop", 4,
                                              "http://h", 8, &master), 0);
    assert_memory_equal(master.bytes, key.bytes, sizeof key.bytes);
}

/* ------------------------------------------------------------------ */
/* A master is hex: only                                               */

static void a_master_is_hex_only(void **state)
{
    static const char *const refused[] = {
        "a-long-random-shared-cluster-secret", /* a passphrase */
        "00112233445566778899aabbccddeeff",    /* hex digits, no hex: */
        "hex:0011", "hex:00112233445566778899aabbccddeefg", "",
    };
    static const char file[] = "a-long-random-shared-cluster-secret\n";
    beacon_key_t key, want = spec_hex_key();
    const char *msg;
    size_t i;

    (void)state;
    assert_null(beacon_key_parse_as("hex:00112233445566778899AABBCCDDEEFF",
                                    BEACON_KEY_USE_MASTER, &key));
    assert_memory_equal(key.bytes, want.bytes, sizeof key.bytes);
    for (i = 0; i < ARRAY_LEN(refused); i++) {
        memset(key.bytes, 0xa5, sizeof key.bytes);
        msg = beacon_key_parse_as(refused[i], BEACON_KEY_USE_MASTER, &key);
        if (msg == NULL) {
            print_error("case: \"%s\": accepted as a master\n", refused[i]);
        }
        assert_non_null(msg);
        assert_null(strchr(msg, '\n'));
        assert_true(strstr(msg, "cluster-secret") == NULL);
        assert_int_equal(key.bytes[0], 0xa5);
    }
    msg = beacon_key_parse_as(refused[0], BEACON_KEY_USE_MASTER, &key);
    assert_non_null(strstr(msg, "passphrase is refused for a master"));
    /* the same text is a key's passphrase, and a secret file's */
    assert_null(beacon_key_parse_as(refused[0], BEACON_KEY_USE_MAC, &key));
    assert_null(beacon_key_parse_file(file, sizeof file - 1, &key));
    msg = beacon_key_parse_file_as(file, sizeof file - 1,
                                   BEACON_KEY_USE_MASTER, &key);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "passphrase is refused for a master"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_row_derives_its_key),
        cmocka_unit_test(each_datagram_verifies_under_its_member_key),
        cmocka_unit_test(a_member_key_verifies_no_other_member),
        cmocka_unit_test(the_input_is_unambiguous),
        cmocka_unit_test(input_is_bounded_and_out_may_be_the_master),
        cmocka_unit_test(a_master_is_hex_only),
    };

    return cmocka_run_group_tests_name("member_key", tests, NULL, NULL);
}
