/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: beacon_url_canonicalize() on arbitrary bytes (the url
 * field of a verified datagram is attacker-chosen for anyone holding the
 * key, and ProxyBeaconAdvertise is its configuration-side twin).
 *
 * The input buffer is exact (libFuzzer's), so reading past len is caught,
 * and every output buffer is a heap block of exactly outsize bytes, so is
 * writing past outsize. Invariants:
 *  - accepted: the result is NUL-terminated within outsize, printable with
 *    no space, "scheme://..." with a lower-case scheme;
 *  - the canonical form is a fixed point (idempotence), and so is it with
 *    one trailing '/' appended, and the input in upper or lower case gives
 *    the same member (scheme, host and IPv6 hex digits are case-blind);
 *  - fitting is about the result: it fits in exactly strlen + 1 bytes and
 *    not in one byte less; with a small outsize (0 to 39, from the input's
 *    length) a refused url stays refused and an accepted one is accepted
 *    exactly when it fits;
 *  - refused: a static, non-empty, one-line message.
 */
#include "fuzz_common.h"

static char *canon_into(const char *in, size_t len, size_t outsize,
                        const char **err)
{
    char *out = malloc(outsize); /* exact: ASan sees a write past outsize */

    FUZZ_CHECK(out != NULL || outsize == 0, "out of memory");
    *err = beacon_url_canonicalize(in, len, out, outsize);
    return out;
}

static void check_message(const char *err, const char *in, size_t len)
{
    FUZZ_CHECK(err[0] != '\0', "empty message");
    FUZZ_CHECK(strchr(err, '\n') == NULL, "message with a newline: %s", err);
    FUZZ_CHECK(err < in || err >= in + len, "message points into the input");
}

static void check_same_member(const char *in, size_t len, const char *canonical,
                              int upper)
{
    char *cased = fuzz_dup(in, len);
    const char *err;
    char *out;
    size_t i;

    for (i = 0; i < len; i++) {
        char c = cased[i];

        if (upper && c >= 'a' && c <= 'z') {
            cased[i] = (char)(c - 'a' + 'A');
        }
        else if (!upper && c >= 'A' && c <= 'Z') {
            cased[i] = (char)(c - 'A' + 'a');
        }
    }
    out = canon_into(cased, len, BEACON_URL_MAX, &err);
    FUZZ_CHECK(err == NULL, "the %s-case spelling of an accepted url is "
               "refused: %s", upper ? "upper" : "lower", err);
    FUZZ_CHECK(strcmp(out, canonical) == 0, "%s case gives \"%s\", not \"%s\"",
               upper ? "upper" : "lower", out, canonical);
    free(out);
    free(cased);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    const char *err, *err2;
    char *out, *small;
    size_t n, i, small_outsize;

    out = canon_into(in, size, BEACON_URL_MAX, &err);
    /* A small output buffer (0 to 39 bytes, from the input's length). */
    small_outsize = size % 40;
    small = canon_into(in, size, small_outsize, &err2);

    if (err != NULL) {
        check_message(err, in, size);
        FUZZ_CHECK(err2 != NULL, "refused with %d bytes, accepted with %zu: %s",
                   BEACON_URL_MAX, small_outsize, err);
        free(small);
        free(out);
        return 0;
    }

    n = strnlen(out, BEACON_URL_MAX);
    FUZZ_CHECK(n < BEACON_URL_MAX, "result not terminated within outsize");
    for (i = 0; i < n; i++) {
        FUZZ_CHECK(out[i] > ' ' && out[i] <= '~', "byte 0x%02x at %zu in \"%s\"",
                   (unsigned char)out[i], i, out);
        FUZZ_CHECK(!(out[i] >= 'A' && out[i] <= 'Z') || strstr(out, "://") <
                       out + i,
                   "upper-case scheme in \"%s\"", out);
    }
    FUZZ_CHECK(strstr(out, "://") != NULL, "no :// in \"%s\"", out);

    if (n + 1 <= small_outsize) {
        FUZZ_CHECK(err2 == NULL && strcmp(small, out) == 0,
                   "fits in %zu bytes, yet: %s", small_outsize, err2 ? err2 : small);
    }
    else {
        FUZZ_CHECK(err2 != NULL, "%zu-byte result accepted in %zu bytes", n,
                   small_outsize);
        check_message(err2, in, size);
    }
    free(small);

    /* Fits in exactly n + 1, not in n. */
    small = canon_into(in, size, n + 1, &err2);
    FUZZ_CHECK(err2 == NULL && memcmp(small, out, n + 1) == 0,
               "does not fit in strlen + 1: %s", err2);
    free(small);
    small = canon_into(in, size, n, &err2);
    FUZZ_CHECK(err2 != NULL, "fits in strlen bytes");
    free(small);

    /* Idempotence, with and without one trailing slash. */
    fuzz_check_fixed_point(out);
    {
        char *slash = malloc(n + 1);
        char *again;

        FUZZ_CHECK(slash != NULL, "out of memory");
        memcpy(slash, out, n);
        slash[n] = '/';
        again = canon_into(slash, n + 1, BEACON_URL_MAX, &err2);
        FUZZ_CHECK(err2 == NULL && strcmp(again, out) == 0,
                   "\"%s/\" is not the member \"%s\": %s", out, out,
                   err2 ? err2 : again);
        free(again);
        free(slash);
    }

    /* Case-blind: upper- and lower-casing the whole input. */
    check_same_member(in, size, out, 1);
    check_same_member(in, size, out, 0);

    free(out);
    return 0;
}
