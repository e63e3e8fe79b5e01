/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The secret: ProxyBeaconSecret's forms, the secret-file rule, the MAC,
 * and a member's key derived from a master (wire format, version 1.3).
 */

#include <string.h>

#include <apr_file_info.h>
#include <apr_file_io.h>
#include <apr_sha1.h>
#include <apr_siphash.h>
#include <apr_strings.h>

#include "beacon.h"
#include "beacon_private.h"

#define HEX_PREFIX "hex:"
#define HEX_PREFIX_LEN 4
#define MIN_PASSPHRASE_LEN 16
#define STRINGIFY(x) #x
#define DECIMAL(x) STRINGIFY(x)

const char *beacon_key_parse_as(const char *secret, beacon_key_use_t use,
                                beacon_key_t *key)
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

        if (use == BEACON_KEY_USE_MASTER) {
            /* SHA-1 of a text is open to guessing offline, and a master
             * minted every member's key */
            return "a master must be hex: and 32 hex digits; a passphrase "
                   "is refused for a master";
        }
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

const char *beacon_key_parse(const char *secret, beacon_key_t *key)
{
    return beacon_key_parse_as(secret, BEACON_KEY_USE_MAC, key);
}

const char *beacon_key_parse_file_as(const char *buf, apr_size_t len,
                                     beacon_key_use_t use, beacon_key_t *key)
{
    char line[BEACON_SECRET_LINE_MAX + 1];
    const char *lf = len ? memchr(buf, '\n', len) : NULL;
    apr_size_t n = lf ? (apr_size_t)(lf - buf) : len;
    const char *err;

    if (n > 0 && buf[n - 1] == '\r') {
        n--; /* the CR of a CRLF line end */
    }
    if (n > BEACON_SECRET_LINE_MAX) {
        return "the first line is longer than "
               DECIMAL(BEACON_SECRET_LINE_MAX) " bytes";
    }
    if (memchr(buf, '\0', n) != NULL) {
        /* a passphrase cut at the NUL would be a different key */
        return "the first line holds a NUL byte";
    }
    if (memchr(buf, '\r', n) != NULL) {
        /* one tool could end the line there and another not */
        return "the first line holds a CR that does not end it";
    }
    memcpy(line, buf, n);
    line[n] = '\0';
    err = beacon_key_parse_as(line, use, key);
    beacon_wipe(line, sizeof(line));
    return err;
}

const char *beacon_key_parse_file(const char *buf, apr_size_t len,
                                  beacon_key_t *key)
{
    return beacon_key_parse_file_as(buf, len, BEACON_KEY_USE_MAC, key);
}

static const char *io_error(apr_pool_t *p, const char *path, apr_status_t rv)
{
    char msg[120];

    return apr_psprintf(p, "cannot read %s: %s", path,
                        apr_strerror(rv, msg, sizeof(msg)));
}

const char *beacon_key_read_file_as(apr_pool_t *p, const char *path,
                                    beacon_key_use_t use, beacon_key_t *key,
                                    apr_finfo_t *info)
{
    char buf[BEACON_SECRET_READ_MAX];
    apr_size_t len = 0;
    apr_finfo_t finfo;
    apr_file_t *f;
    apr_status_t rv;
    const char *err;

    rv = apr_file_open(&f, path, APR_FOPEN_READ, APR_FPROT_OS_DEFAULT, p);
    if (rv != APR_SUCCESS) {
        return io_error(p, path, rv);
    }
    memset(&finfo, 0, sizeof(finfo));
    /* only for the caller's warnings: finfo.valid says what is known */
    (void)apr_file_info_get(&finfo, APR_FINFO_PROT | APR_FINFO_OWNER, f);
    rv = apr_file_read_full(f, buf, sizeof(buf), &len);
    apr_file_close(f);
    if (rv != APR_SUCCESS && !APR_STATUS_IS_EOF(rv)) {
        beacon_wipe(buf, sizeof(buf));
        return io_error(p, path, rv);
    }
    if (info) {
        *info = finfo;
    }
    err = beacon_key_parse_file_as(buf, len, use, key);
    beacon_wipe(buf, sizeof(buf));
    return err;
}

const char *beacon_key_read_file(apr_pool_t *p, const char *path,
                                 beacon_key_t *key, apr_finfo_t *info)
{
    return beacon_key_read_file_as(p, path, BEACON_KEY_USE_MAC, key, info);
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

/* A member's key: L = MEMBER_LABEL 0x00 SVC 0x00 URL, and the two
 * SipHash-2-4 calls on 0x01 || L and 0x02 || L. */
#define MEMBER_LABEL "beacon-member-v1"
#define MEMBER_LABEL_LEN (sizeof(MEMBER_LABEL) - 1)

_Static_assert(2 * BEACON_MAC_LEN == BEACON_KEY_LEN,
               "a member key is two SipHash-2-4 tags");

int beacon_member_key_derive(const beacon_key_t *master, const char *svc,
                             apr_size_t svc_len, const char *url,
                             apr_size_t url_len, beacon_key_t *out)
{
    /* 0x01 or 0x02, then L: no allocation, and svc and url of one
     * datagram always fit */
    unsigned char buf[1 + MEMBER_LABEL_LEN + 1 + BEACON_MAX_DATAGRAM + 1];
    apr_size_t n = 1 + MEMBER_LABEL_LEN + 1;
    unsigned char derived[BEACON_KEY_LEN]; /* out may be master */

    if (svc_len > BEACON_MAX_DATAGRAM ||
        url_len > BEACON_MAX_DATAGRAM - svc_len) {
        return -1;
    }
    memcpy(buf + 1, MEMBER_LABEL, MEMBER_LABEL_LEN + 1); /* and its NUL */
    if (svc_len > 0) {
        memcpy(buf + n, svc, svc_len);
        n += svc_len;
    }
    buf[n++] = 0x00;
    if (url_len > 0) {
        memcpy(buf + n, url, url_len);
        n += url_len;
    }
    /* apr_siphash24_auth writes each tag as LE64 */
    buf[0] = 0x01;
    beacon_mac(master, buf, n, derived);
    buf[0] = 0x02;
    beacon_mac(master, buf, n, derived + BEACON_MAC_LEN);
    memcpy(out->bytes, derived, sizeof(derived));
    beacon_wipe(derived, sizeof(derived));
    return 0;
}

void beacon_key_format(const beacon_key_t *key,
                       char out[BEACON_KEY_TEXT_SIZE])
{
    static const char digits[] = "0123456789abcdef";
    apr_size_t i;

    memcpy(out, HEX_PREFIX, HEX_PREFIX_LEN);
    for (i = 0; i < BEACON_KEY_LEN; i++) {
        out[HEX_PREFIX_LEN + 2 * i] = digits[key->bytes[i] >> 4];
        out[HEX_PREFIX_LEN + 2 * i + 1] = digits[key->bytes[i] & 0xf];
    }
    out[HEX_PREFIX_LEN + 2 * BEACON_KEY_LEN] = '\0';
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
