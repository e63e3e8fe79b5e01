/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Helpers shared by the libbeacon unit tests. Header-only (static inline),
 * so each test stays one executable built from one .c file plus libbeacon.
 * Include this first: it asks for the POSIX declarations (mmap) before any
 * system header is read.
 */
#ifndef BEACON_TEST_COMMON_H
#define BEACON_TEST_COMMON_H

#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <unistd.h>

#include <apr_general.h>

#include "beacon.h"
#include "vectors.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Compares two reasons by name first, so a failure reads
 * "mac mismatch" != "duplicate field" rather than 4 != 5, then by value
 * (two reasons sharing a name must still fail). what names the case.
 */
#define assert_reason_equal(got, want, what)                                  \
    do {                                                                      \
        beacon_reason_t got_ = (got), want_ = (want);                         \
        if (got_ != want_) {                                                  \
            print_error("case: %s\n", (what));                                \
        }                                                                     \
        assert_string_equal(beacon_reason_name(got_),                         \
                            beacon_reason_name(want_));                       \
        assert_int_equal(got_, want_);                                        \
    } while (0)

/*
 * A copy of src[0..len) whose last byte sits just before an inaccessible
 * page, as picohttpparser's tests do: a parser that reads past len
 * crashes instead of passing by luck. Free with guarded_free().
 */
typedef struct {
    unsigned char *map;
    size_t maplen;
    char *buf;
} guarded_t;

static inline guarded_t guarded_copy(const void *src, size_t len)
{
    guarded_t g;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t data_pages = (len + page - 1) / page;

    if (data_pages == 0) {
        data_pages = 1;
    }
    g.maplen = (data_pages + 1) * page;
    g.map = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g.map != MAP_FAILED);
    assert_int_equal(mprotect(g.map + data_pages * page, page, PROT_NONE), 0);
    g.buf = (char *)g.map + data_pages * page - len;
    if (len > 0) {
        memcpy(g.buf, src, len);
    }
    return g;
}

static inline void guarded_free(guarded_t *g)
{
    munmap(g->map, g->maplen);
    g->map = NULL;
    g->buf = NULL;
}

/* Parses exactly 2 * n hex digits into out (test fixtures only). */
static inline void hex_to_bytes(const char *hex, unsigned char *out, size_t n)
{
    size_t i;

    assert_int_equal(strlen(hex), 2 * n);
    for (i = 0; i < n; i++) {
        unsigned int v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
}

/* The key of the wire format's first two test vectors. */
static inline beacon_key_t spec_hex_key(void)
{
    beacon_key_t k;
    hex_to_bytes("00112233445566778899aabbccddeeff", k.bytes, sizeof k.bytes);
    return k;
}

/*
 * Writes signed_part[0..len), then " mac=" and the correct tag in hex, into
 * out (NUL-terminated). Returns the datagram's length.
 */
static inline size_t sign_into(char *out, size_t outsize,
                               const beacon_key_t *key,
                               const char *signed_part, size_t len)
{
    unsigned char mac[BEACON_MAC_LEN];
    unsigned i;

    beacon_mac(key, signed_part, len, mac);
    assert_true(len + 5 + 2 * BEACON_MAC_LEN < outsize);
    memcpy(out, signed_part, len);
    memcpy(out + len, " mac=", 5);
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        snprintf(out + len + 5 + 2 * i, 3, "%02x", mac[i]);
    }
    return len + 5 + 2 * BEACON_MAC_LEN;
}

/*
 * The rows of tests/vectors/<name>, whose header must be cols. ctest sets
 * BEACON_VECTORS to that directory. Fails the test, never skips it, when
 * the variable is unset, the file is missing or damaged, or it holds fewer
 * than min_rows rows: a test that reads no vector proves nothing. Free
 * with vec_free().
 */
static inline vec_table_t load_vectors(const char *name,
                                       const char *const *cols,
                                       size_t min_rows)
{
    const char *dir = getenv("BEACON_VECTORS");
    char err[512];
    vec_table_t t;

    if (dir == NULL || dir[0] == '\0') {
        fail_msg("BEACON_VECTORS is not set: run the test with ctest, or "
                 "export BEACON_VECTORS=/path/to/tests/vectors");
    }
    if (vec_load(&t, dir, name, cols, err, sizeof err) != 0) {
        fail_msg("%s", err);
    }
    if (t.nrows < min_rows) {
        fail_msg("%s: %zu rows, expected at least %zu", t.path, t.nrows,
                 min_rows);
    }
    return t;
}

/* The reason whose log fragment is name; fails on a name no reason has. */
static inline beacon_reason_t reason_named(const vec_field_t *name,
                                           unsigned line)
{
    int i;

    for (i = 0; i < BEACON_REASON_COUNT; i++) {
        if (vec_is(name, beacon_reason_name((beacon_reason_t)i))) {
            return (beacon_reason_t)i;
        }
    }
    fail_msg("line %u: \"%s\" is no reason's name", line, name->text);
    return BEACON_REASON_COUNT;
}

/* A secret column's key; fails when the library refuses the secret. */
static inline beacon_key_t key_of_secret(const vec_field_t *secret,
                                         unsigned line)
{
    beacon_key_t k;
    const char *msg = beacon_key_parse(secret->text, &k);

    if (msg != NULL) {
        fail_msg("line %u: secret refused: %s", line, msg);
    }
    return k;
}

/*
 * One APR pool for a whole test program, made by the group setup and
 * destroyed by the group teardown: cmocka_run_group_tests_name(name, tests,
 * test_pool_setup, test_pool_teardown), then TEST_POOL in the tests.
 */
static inline apr_pool_t **test_pool_slot(void)
{
    static apr_pool_t *pool;

    return &pool;
}
#define TEST_POOL (*test_pool_slot())

static inline int test_pool_setup(void **state)
{
    (void)state;
    if (apr_initialize() != APR_SUCCESS) {
        return -1;
    }
    return apr_pool_create(test_pool_slot(), NULL) == APR_SUCCESS ? 0 : -1;
}

static inline int test_pool_teardown(void **state)
{
    (void)state;
    apr_pool_destroy(TEST_POOL);
    apr_terminate();
    return 0;
}

#endif /* BEACON_TEST_COMMON_H */
