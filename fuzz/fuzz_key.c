/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: beacon_key_parse() on arbitrary NUL-terminated strings
 * (the input up to its first NUL, as httpd hands ProxyBeaconSecret's
 * argument over). Invariants:
 *  - accepted: "hex:" + exactly 32 hex digits giving exactly those bytes,
 *    or anything else of at least 16 bytes giving SHA-1's first 16 bytes;
 *    and nothing else is accepted;
 *  - refused: *key untouched, a static non-empty one-line message that
 *    does not point into the secret;
 *  - deterministic.
 */
#include <apr_sha1.h>

#include "fuzz_common.h"
/* the tests' own hex reader: independent of libbeacon, by path */
#include "../tests/unit/vectors.h"

/* The key the wire format says secret gives, independently; 0 = refused. */
static int expected_key(const char *secret, unsigned char want[BEACON_KEY_LEN])
{
    size_t len = strlen(secret), i;

    if (strncmp(secret, "hex:", 4) == 0) {
        if (len != 4 + 2 * BEACON_KEY_LEN) {
            return 0;
        }
        for (i = 0; i < BEACON_KEY_LEN; i++) {
            int hi = vec_hex_digit(secret[4 + 2 * i]);
            int lo = vec_hex_digit(secret[4 + 2 * i + 1]);

            if (hi < 0 || lo < 0) {
                return 0;
            }
            want[i] = (unsigned char)(hi << 4 | lo);
        }
        return 1;
    }
    if (len < 16) {
        return 0;
    }
    {
        unsigned char digest[APR_SHA1_DIGESTSIZE];
        apr_sha1_ctx_t sha;

        apr_sha1_init(&sha);
        apr_sha1_update_binary(&sha, (const unsigned char *)secret,
                               (unsigned int)len);
        apr_sha1_final(digest, &sha);
        memcpy(want, digest, BEACON_KEY_LEN);
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *secret = fuzz_cstr(data, size);
    size_t len = strlen(secret);
    unsigned char want[BEACON_KEY_LEN];
    beacon_key_t k, k2;
    const char *err, *err2;
    int ok;

    memset(&k, 0xa5, sizeof(k));
    err = beacon_key_parse(secret, &k);
    ok = expected_key(secret, want);
    if (ok) {
        FUZZ_CHECK(err == NULL, "refused (%s) a secret of %zu bytes the wire "
                   "format accepts", err, len);
        FUZZ_CHECK(memcmp(k.bytes, want, BEACON_KEY_LEN) == 0,
                   "wrong key bytes for a secret of %zu bytes", len);
    }
    else {
        size_t i;

        FUZZ_CHECK(err != NULL, "accepted a secret of %zu bytes the wire "
                   "format refuses", len);
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL,
                   "message \"%s\"", err);
        FUZZ_CHECK(err < secret || err > secret + len,
                   "message points into the secret");
        for (i = 0; i < sizeof(k.bytes); i++) {
            FUZZ_CHECK(k.bytes[i] == 0xa5, "key written on error (byte %zu)", i);
        }
    }

    memset(&k2, 0x5a, sizeof(k2));
    err2 = beacon_key_parse(secret, &k2);
    FUZZ_CHECK((err == NULL) == (err2 == NULL), "not deterministic");
    if (err == NULL) {
        FUZZ_CHECK(memcmp(&k, &k2, sizeof(k)) == 0, "not deterministic");
    }
    free(secret);
    return 0;
}
