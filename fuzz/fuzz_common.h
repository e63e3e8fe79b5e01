/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Helpers shared by the libFuzzer targets in fuzz/. Header-only, so each
 * target is one .c file plus libbeacon's sources (see fuzz/Makefile).
 *
 * A broken invariant is reported with FUZZ_CHECK: it prints what failed
 * and aborts, which libFuzzer records as a crash with the input saved.
 */
#ifndef BEACON_FUZZ_COMMON_H
#define BEACON_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beacon.h"

/* The wire format's test-vector key and clock: the seed datagrams under
 * fuzz/corpus/ are signed with this key and fresh at this time. */
#define FUZZ_HEX_KEY "hex:00112233445566778899aabbccddeeff"
#define FUZZ_NOW ((apr_time_t)APR_INT64_C(1796000000000000))
#define FUZZ_SKEW ((apr_interval_time_t)30 * APR_USEC_PER_SEC)
#define FUZZ_TIMEOUT ((apr_interval_time_t)10 * APR_USEC_PER_SEC)

#define MAC_TAIL_LEN (5 + 2 * BEACON_MAC_LEN) /* " mac=" + 16 hex */

#define FUZZ_CHECK(cond, ...)                                                 \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "\nFUZZ INVARIANT BROKEN at %s:%d: %s\n  ",       \
                    __FILE__, __LINE__, #cond);                               \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            abort();                                                          \
        }                                                                     \
    } while (0)

static inline beacon_key_t fuzz_key(const char *secret)
{
    beacon_key_t k;
    const char *err = beacon_key_parse(secret, &k);

    FUZZ_CHECK(err == NULL, "fixed key %s: %s", secret, err);
    return k;
}

/* A malloc'd copy of data[0..len) with nothing after it, so ASan catches
 * any read past len (libFuzzer's own buffer is exact too; copies are not).
 * Zeroed, so the one byte of an empty copy is no garbage value either. */
static inline char *fuzz_dup(const void *data, size_t len)
{
    char *p = calloc(1, len ? len : 1);

    FUZZ_CHECK(p != NULL, "out of memory");
    if (len) {
        memcpy(p, data, len);
    }
    return p;
}

/* A malloc'd NUL-terminated string of data up to its first NUL, as httpd
 * hands a directive argument to its parser. */
static inline char *fuzz_cstr(const uint8_t *data, size_t len)
{
    const uint8_t *nul = memchr(data, '\0', len);
    size_t n = nul ? (size_t)(nul - data) : len;
    char *s = malloc(n + 1);

    FUZZ_CHECK(s != NULL, "out of memory");
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/*
 * signed_part[0..len) followed by " mac=" and its correct tag under key,
 * in a malloc'd buffer of exactly the datagram's length (not terminated).
 * upper: write the hex digits in upper case (receivers accept either).
 */
static inline char *fuzz_sign(const char *signed_part, size_t len,
                              const beacon_key_t *key, int upper,
                              size_t *outlen)
{
    static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
    const char *hex = upper ? up : lo;
    unsigned char mac[BEACON_MAC_LEN];
    char *dg = malloc(len + MAC_TAIL_LEN);
    size_t i;

    FUZZ_CHECK(dg != NULL, "out of memory");
    memcpy(dg, signed_part, len);
    memcpy(dg + len, " mac=", 5);
    beacon_mac(key, signed_part, len, mac);
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        dg[len + 5 + 2 * i] = hex[mac[i] >> 4];
        dg[len + 5 + 2 * i + 1] = hex[mac[i] & 0xf];
    }
    *outlen = len + MAC_TAIL_LEN;
    return dg;
}

/* Whether a canonical url is a fixed point of beacon_url_canonicalize. */
static inline void fuzz_check_fixed_point(const char *canonical)
{
    char again[BEACON_URL_MAX];
    size_t n = strlen(canonical);
    char *copy = fuzz_dup(canonical, n);
    const char *err = beacon_url_canonicalize(copy, n, again, sizeof(again));

    FUZZ_CHECK(err == NULL, "canonical url \"%s\" is refused: %s", canonical,
               err);
    FUZZ_CHECK(strcmp(again, canonical) == 0,
               "canonical url \"%s\" re-canonicalizes to \"%s\"", canonical,
               again);
    free(copy);
}

/*
 * docs/wire-format.md's rules for contexts written out again, for the
 * targets to hold libbeacon's against (fuzz_allow, fuzz_routes).
 */
static inline int fuzz_seg_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' ||
           c == '-';
}

/* A context: "/" or "/seg" repeated, a segment not "." or "..", at most
 * BEACON_CTX_PATH_MAX bytes. */
static inline int fuzz_ref_context(const char *s, size_t len)
{
    size_t i = 0;

    if (len == 0 || len > BEACON_CTX_PATH_MAX || s[0] != '/') {
        return 0;
    }
    if (len == 1) {
        return 1;
    }
    while (i < len) {
        size_t start = ++i;

        while (i < len && fuzz_seg_char(s[i])) {
            i++;
        }
        if (i < len && s[i] != '/') {
            return 0;
        }
        if (i == start || (i - start == 1 && s[start] == '.') ||
            (i - start == 2 && s[start] == '.' && s[start + 1] == '.')) {
            return 0;
        }
    }
    return 1;
}

/* Whether the context ctx (valid) matches path: "/" every path that
 * starts with "/", any other the path itself and the path followed by
 * "/" (a ";" is no boundary: paths matched are servlet paths). */
static inline int fuzz_ref_matches(const char *ctx, size_t clen,
                                   const char *path, size_t plen)
{
    if (clen == 1) {
        return plen >= 1 && path[0] == '/';
    }
    return plen >= clen && memcmp(path, ctx, clen) == 0 &&
           (plen == clen || path[clen] == '/');
}

#endif /* BEACON_FUZZ_COMMON_H */
