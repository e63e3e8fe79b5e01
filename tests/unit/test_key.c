/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beacon_key_parse(): the two ProxyBeaconSecret forms of the wire format
 * ("hex:" + 32 hex digits, or a passphrase of >= 16 bytes whose SHA-1's
 * first 16 bytes are the key) and the configuration errors.
 *
 * Expected passphrase keys were computed outside APR (sha1sum / Python
 * hashlib) and are written out as hex.
 */
#include "test_common.h"

/* A key filled with a pattern no valid secret here produces. */
static void poison(beacon_key_t *key)
{
    memset(key->bytes, 0xa5, sizeof key->bytes);
}

static void assert_poisoned(const beacon_key_t *key, const char *what)
{
    unsigned char pattern[BEACON_KEY_LEN];

    memset(pattern, 0xa5, sizeof pattern);
    if (memcmp(key->bytes, pattern, sizeof pattern) != 0) {
        print_error("key written on error: %s\n", what);
    }
    assert_memory_equal(key->bytes, pattern, sizeof pattern);
}

/* ------------------------------------------------------------------ */
/* Accepted secrets                                                    */

typedef struct {
    const char *name;
    const char *secret;
    const char *key_hex; /* the expected 16 key bytes */
} good_row_t;

static const good_row_t good_rows[] = {
    {"hex form in lower case gives exactly those bytes",
     "hex:00112233445566778899aabbccddeeff",
     "00112233445566778899aabbccddeeff"},
    {"hex form in upper case gives the same bytes",
     "hex:00112233445566778899AABBCCDDEEFF",
     "00112233445566778899aabbccddeeff"},
    {"hex form in mixed case gives the same bytes",
     "hex:00112233445566778899aAbBcCdDeEfF",
     "00112233445566778899aabbccddeeff"},
    {"hex form keeps byte order (no reversal, no nibble swap)",
     "hex:0123456789abcdeffedcba9876543210",
     "0123456789abcdeffedcba9876543210"},
    {"hex form with all zero bytes is a key like any other",
     "hex:00000000000000000000000000000000",
     "00000000000000000000000000000000"},
    {"passphrase of the wire format's test vector",
     "a-long-random-shared-cluster-secret",
     "350dda9f6098771e041755b6923de06e"},
    {"passphrase of exactly 16 bytes is accepted",
     "0123456789abcdef",
     "fe5567e8d769550852182cdf69d74bb1"},
    {"32 hex digits without the hex: prefix are a passphrase, not raw bytes",
     "00112233445566778899aabbccddeeff",
     "2ab31b2b0c25d5f6cbc9e082f80ab7cd"},
    {"passphrase length counts bytes: 8 two-byte UTF-8 characters are 16",
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
     "bd967b1a512026a922783ddab62b614b"},
    {"a 100-byte passphrase hashes all its bytes",
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "50e483690ec481f4af7f6fb524b2b99e"},
    {"a passphrase mentioning hex: later on is still a passphrase",
     "hex-like but not hex: a long passphrase",
     "ad18ef90c32c5fa3fd4a13aeab4cd156"},
};

static void accepted_secrets_give_the_expected_key(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(good_rows); i++) {
        const good_row_t *r = &good_rows[i];
        beacon_key_t key;
        unsigned char want[BEACON_KEY_LEN];
        const char *msg;

        poison(&key);
        hex_to_bytes(r->key_hex, want, sizeof want);
        msg = beacon_key_parse(r->secret, &key);
        if (msg != NULL) {
            print_error("case: %s: rejected with \"%s\"\n", r->name, msg);
        }
        assert_null(msg);
        if (memcmp(key.bytes, want, sizeof want) != 0) {
            print_error("case: %s: wrong key bytes\n", r->name);
        }
        assert_memory_equal(key.bytes, want, sizeof want);
    }
}

/* ------------------------------------------------------------------ */
/* Rejected secrets                                                    */

typedef struct {
    const char *name;
    const char *secret;
} bad_row_t;

static const bad_row_t bad_rows[] = {
    {"empty secret", ""},
    {"passphrase of 15 bytes", "0123456789abcde"},
    {"passphrase of 15 bytes that looks like 8 characters",
     "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9x"},
    {"a single byte", "x"},
    {"hex: with no digits", "hex:"},
    {"hex: with 31 digits", "hex:00112233445566778899aabbccddeef"},
    {"hex: with 33 digits", "hex:00112233445566778899aabbccddeeff0"},
    {"hex: with 64 digits", "hex:00112233445566778899aabbccddeeff"
                            "00112233445566778899aabbccddeeff"},
    {"hex: with a non-hex digit at the end",
     "hex:00112233445566778899aabbccddeefg"},
    {"hex: with a non-hex digit at the start",
     "hex:z0112233445566778899aabbccddeeff"},
    {"hex: with a space inside", "hex:0011223344556677 899aabbccddeeff"},
    {"hex: with a leading space", "hex: 00112233445566778899aabbccddeeff"},
    {"hex: with a trailing space", "hex:00112233445566778899aabbccddeeff "},
    {"hex: with a trailing newline", "hex:00112233445566778899aabbccddeeff\n"},
    {"hex: with a 0x prefix", "hex:0x112233445566778899aabbccddeeff"},
};

/*
 * True when msg contains any 8-byte window of secret: the message may say
 * "hex:" or "16 bytes", but must not echo the secret or a piece of it.
 */
static int leaks_secret(const char *msg, const char *secret)
{
    size_t n = strlen(secret), i;
    char window[9];

    if (n < sizeof window - 1) {
        return 0;
    }
    for (i = 0; i + 8 <= n; i++) {
        memcpy(window, secret + i, 8);
        window[8] = '\0';
        if (strstr(msg, window) != NULL) {
            return 1;
        }
    }
    return 0;
}

static void rejected_secrets_give_a_message_and_leave_the_key_alone(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(bad_rows); i++) {
        const bad_row_t *r = &bad_rows[i];
        beacon_key_t key;
        const char *msg;

        poison(&key);
        msg = beacon_key_parse(r->secret, &key);
        if (msg == NULL) {
            print_error("case: %s: accepted\n", r->name);
        }
        assert_non_null(msg);
        if (msg[0] == '\0') {
            print_error("case: %s: empty message\n", r->name);
        }
        assert_true(msg[0] != '\0');
        /* One line, fit for a configuration error. */
        assert_null(strchr(msg, '\n'));
        if (leaks_secret(msg, r->secret)) {
            print_error("case: %s: message \"%s\" quotes the secret\n",
                        r->name, msg);
        }
        assert_false(leaks_secret(msg, r->secret));
        assert_poisoned(&key, r->name);
    }
}

/*
 * Parsing is a pure function of the secret: a rejected secret in between
 * leaves no trace, and the same secret gives the same key twice.
 */
static void parsing_is_repeatable(void **state)
{
    beacon_key_t a, b;

    (void)state;
    poison(&a);
    memset(b.bytes, 0x5a, sizeof b.bytes);
    assert_null(beacon_key_parse("a-long-random-shared-cluster-secret", &a));
    assert_non_null(beacon_key_parse("0123456789abcde", &b));
    assert_null(beacon_key_parse("a-long-random-shared-cluster-secret", &b));
    assert_memory_equal(a.bytes, b.bytes, sizeof a.bytes);
}

static void key_wipe_leaves_no_key_material(void **state)
{
    beacon_key_t k;
    const unsigned char zero[BEACON_KEY_LEN] = {0};

    (void)state;
    assert_null(beacon_key_parse("hex:00112233445566778899aabbccddeeff", &k));
    assert_true(memcmp(k.bytes, zero, sizeof(zero)) != 0);
    beacon_key_wipe(&k);
    assert_memory_equal(k.bytes, zero, sizeof(zero));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_wipe_leaves_no_key_material),
        cmocka_unit_test(accepted_secrets_give_the_expected_key),
        cmocka_unit_test(rejected_secrets_give_a_message_and_leave_the_key_alone),
        cmocka_unit_test(parsing_is_repeatable),
    };

    return cmocka_run_group_tests_name("key", tests, NULL, NULL);
}
