/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* ProxyBeaconSecret parsing and the MAC. */

#include <string.h>

#include <apr_sha1.h>
#include <apr_siphash.h>

#include "beacon.h"
#include "beacon_private.h"

#define HEX_PREFIX "hex:"
#define HEX_PREFIX_LEN 4
#define MIN_PASSPHRASE_LEN 16

const char *beacon_key_parse(const char *secret, beacon_key_t *key)
{
    beacon_key_t parsed;
    apr_size_t len;

    if (secret == NULL || *secret == '\0') {
        return "the secret is empty";
    }
    len = strlen(secret);
    if (strncmp(secret, HEX_PREFIX, HEX_PREFIX_LEN) == 0) {
        const char *hex = secret + HEX_PREFIX_LEN;
        apr_size_t i;

        if (len - HEX_PREFIX_LEN != 2 * BEACON_KEY_LEN) {
            return "a hex: secret must have exactly 32 hex digits";
        }
        for (i = 0; i < BEACON_KEY_LEN; i++) {
            int hi = beacon_hex_value(hex[2 * i]);
            int lo = beacon_hex_value(hex[2 * i + 1]);

            if (hi < 0 || lo < 0) {
                return "a hex: secret may hold only hex digits";
            }
            parsed.bytes[i] = (unsigned char)(hi << 4 | lo);
        }
    }
    else {
        unsigned char digest[APR_SHA1_DIGESTSIZE];
        apr_sha1_ctx_t sha;

        if (len < MIN_PASSPHRASE_LEN) {
            return "a passphrase secret must be at least 16 bytes "
                   "(or use hex: and 32 hex digits)";
        }
        apr_sha1_init(&sha);
        apr_sha1_update_binary(&sha, (const unsigned char *)secret,
                               (unsigned int)len);
        apr_sha1_final(digest, &sha);
        memcpy(parsed.bytes, digest, BEACON_KEY_LEN);
        beacon_wipe(digest, sizeof(digest));
        beacon_wipe(&sha, sizeof(sha));
    }
    *key = parsed;
    beacon_wipe(&parsed, sizeof(parsed));
    return NULL;
}

void beacon_key_wipe(beacon_key_t *key)
{
    beacon_wipe(key, sizeof(*key));
}

void beacon_mac(const beacon_key_t *key, const void *buf, apr_size_t len,
                unsigned char mac[BEACON_MAC_LEN])
{
    apr_siphash24_auth(mac, buf, len, key->bytes);
}

/* Digit value + 1, so that the zero default marks a non-hex byte. A table:
 * the receiver reads 32 hex digits per datagram, forged ones included. */
static const unsigned char hex_plus_one[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,
    ['5'] = 6,  ['6'] = 7,  ['7'] = 8,  ['8'] = 9,  ['9'] = 10,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int beacon_hex_value(char c)
{
    return (int)hex_plus_one[(unsigned char)c] - 1;
}

void beacon_wipe(void *p, apr_size_t len)
{
    /* A volatile pointer keeps the compiler from dropping the stores. */
    volatile unsigned char *v = p;

    while (len--) {
        *v++ = 0;
    }
}
