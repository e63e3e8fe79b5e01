/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beacon_mac() against the known answers of the SipHash paper, read from
 * tests/vectors/siphash24.txt: key 00 01 .. 0f, message i = the bytes
 * 00 01 .. (i-1) for i = 0..63, tag as the 8 bytes the reference
 * implementation writes (little-endian).
 *
 * The expected tags were copied from vectors_sip64 in veorq/SipHash
 * vectors.h (the authors' reference code); they are not computed here, so
 * a wrong round count, a wrong finalization constant or a big-endian tag
 * all fail.
 */
#include "test_common.h"

#define SIP_VECTORS 64
#define MAX_MESSAGE 64

static const char *const sip_cols[] = {"key", "message", "tag", NULL};
enum { SIP_KEY, SIP_MESSAGE, SIP_TAG };

typedef struct {
    beacon_key_t key;
    unsigned char msg[MAX_MESSAGE];
    size_t len;
    unsigned char tag[BEACON_MAC_LEN];
} sip_vector_t;

static sip_vector_t vectors[SIP_VECTORS];

/* All 64 rows, exactly, in the paper's order (message i is i bytes). */
static int load_sip_vectors(void **state)
{
    vec_table_t t = load_vectors("siphash24.txt", sip_cols, SIP_VECTORS);
    size_t i;

    (void)state;
    assert_int_equal(t.nrows, SIP_VECTORS);
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *r = &t.rows[i];
        sip_vector_t *v = &vectors[i];

        v->len = r->col[SIP_MESSAGE].len / 2;
        if (v->len != i ||
            vec_hex(&r->col[SIP_KEY], v->key.bytes, BEACON_KEY_LEN) != 0 ||
            vec_hex(&r->col[SIP_MESSAGE], v->msg, v->len) != 0 ||
            vec_hex(&r->col[SIP_TAG], v->tag, BEACON_MAC_LEN) != 0) {
            fail_msg("%s:%u: not vector %zu of the paper", t.path, r->line, i);
        }
    }
    vec_free(&t);
    return 0;
}

static void assert_tag(const unsigned char *mac, size_t i, const char *how)
{
    if (memcmp(mac, vectors[i].tag, BEACON_MAC_LEN) != 0) {
        print_error("vector %zu (message of %zu bytes)%s\n", i, vectors[i].len,
                    how);
    }
    assert_memory_equal(mac, vectors[i].tag, BEACON_MAC_LEN);
}

static void siphash24_matches_all_64_paper_vectors(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < SIP_VECTORS; i++) {
        unsigned char mac[BEACON_MAC_LEN];

        memset(mac, 0xee, sizeof mac);
        beacon_mac(&vectors[i].key, vectors[i].msg, vectors[i].len, mac);
        assert_tag(mac, i, "");
    }
}

/*
 * The messages are prefixes of one another, so an implementation that
 * reads past len gets another tag. Datagrams arrive at any address: the
 * same vectors from a buffer at an odd offset, ending just before an
 * inaccessible page (no over-read).
 */
static void siphash24_vectors_hold_for_unaligned_guarded_input(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < SIP_VECTORS; i++) {
        unsigned char mac[BEACON_MAC_LEN];
        unsigned char shifted[MAX_MESSAGE + 1];
        guarded_t g;

        /* One leading byte, so the message lands at odd alignment. */
        shifted[0] = 0xaa;
        memcpy(shifted + 1, vectors[i].msg, vectors[i].len);
        g = guarded_copy(shifted, vectors[i].len + 1);
        beacon_mac(&vectors[i].key, g.buf + 1, vectors[i].len, mac);
        guarded_free(&g);
        assert_tag(mac, i, " from an unaligned guarded buffer");
    }
}

/* The key is used: flipping one key bit changes the tag of vector 8. */
static void a_different_key_gives_a_different_tag(void **state)
{
    const sip_vector_t *v = &vectors[8];
    unsigned char mac[BEACON_MAC_LEN];
    unsigned b;

    (void)state;
    for (b = 0; b < BEACON_KEY_LEN; b++) {
        beacon_key_t key = v->key;

        key.bytes[b] ^= 0x01;
        beacon_mac(&key, v->msg, v->len, mac);
        if (memcmp(mac, v->tag, BEACON_MAC_LEN) == 0) {
            print_error("key byte %u ignored\n", b);
        }
        assert_memory_not_equal(mac, v->tag, BEACON_MAC_LEN);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(siphash24_matches_all_64_paper_vectors),
        cmocka_unit_test(siphash24_vectors_hold_for_unaligned_guarded_input),
        cmocka_unit_test(a_different_key_gives_a_different_tag),
    };

    return cmocka_run_group_tests_name("siphash", tests, load_sip_vectors,
                                       NULL);
}
