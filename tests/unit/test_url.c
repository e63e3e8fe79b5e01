/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beacon_url_canonicalize(): member identity. Equal origins must give one
 * canonical string (one member), and everything the wire format rejects
 * must be rejected with a message: the rows of tests/vectors/urls.txt.
 * Every row runs on an exact-length copy ending before a guard page, so no
 * row may read past len.
 */
#include "test_common.h"

static const char *const url_cols[] = {"url", "canonical", "name", NULL};
enum { URL_IN, URL_CANONICAL, URL_NAME };

/* The rows of tests/vectors/urls.txt: at least the 80 the table had when
 * it moved there, accepted and refused ones both. */
static vec_table_t load_urls(void)
{
    vec_table_t t = load_vectors("urls.txt", url_cols, 80);
    size_t i, refused = 0;

    for (i = 0; i < t.nrows; i++) {
        refused += vec_is(&t.rows[i].col[URL_CANONICAL], "refused");
    }
    assert_true(refused >= 30 && t.nrows - refused >= 30);
    return t;
}

static const char *canon_guarded(const char *in, size_t len, char *out,
                                 size_t outsize)
{
    guarded_t g = guarded_copy(in, len);
    const char *msg = beacon_url_canonicalize(g.buf, len, out, outsize);

    guarded_free(&g);
    return msg;
}

static void canonicalization_table(void **state)
{
    vec_table_t t = load_urls();
    size_t i;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *r = &t.rows[i];
        const char *name = r->col[URL_NAME].text;
        char out[BEACON_URL_MAX];
        const char *msg;

        memset(out, 'Z', sizeof out);
        msg = canon_guarded(r->col[URL_IN].text, r->col[URL_IN].len, out,
                            sizeof out);
        if (!vec_is(&r->col[URL_CANONICAL], "refused")) {
            if (msg != NULL) {
                print_error("case: %s: rejected with \"%s\"\n", name, msg);
            }
            assert_null(msg);
            if (strcmp(out, r->col[URL_CANONICAL].text) != 0) {
                print_error("case: %s\n", name);
            }
            assert_string_equal(out, r->col[URL_CANONICAL].text);
        } else {
            if (msg == NULL) {
                print_error("case: %s: accepted as \"%.*s\"\n", name,
                            (int)sizeof out, out);
            }
            assert_non_null(msg);
            assert_true(msg[0] != '\0');
        }
    }
    vec_free(&t);
}

/* Canonicalizing a canonical url changes nothing. */
static void canonical_urls_are_fixed_points(void **state)
{
    vec_table_t t = load_urls();
    size_t i;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        const vec_field_t *want = &t.rows[i].col[URL_CANONICAL];
        char out[BEACON_URL_MAX];
        const char *msg;

        if (vec_is(want, "refused")) {
            continue;
        }
        msg = canon_guarded(want->text, want->len, out, sizeof out);
        if (msg != NULL || strcmp(out, want->text) != 0) {
            print_error("case: canonical form of \"%s\"\n",
                        t.rows[i].col[URL_NAME].text);
        }
        assert_null(msg);
        assert_string_equal(out, want->text);
    }
    vec_free(&t);
}

/* A result must fit in outsize - 1 bytes, and fitting is about the result. */
static void result_must_fit_in_outsize(void **state)
{
    static const char canon[] = "http://app.example.com"; /* 22 bytes */
    static const char longer[] = "HTTP://App.Example.com:80/";
    char out[64];

    (void)state;
    assert_null(canon_guarded(canon, strlen(canon), out, sizeof canon));
    assert_string_equal(out, canon);

    assert_non_null(canon_guarded(canon, strlen(canon), out, sizeof canon - 1));
    assert_non_null(canon_guarded(canon, strlen(canon), out, 1));

    /* The input is 26 bytes, its canonical form 22: it fits in 23. */
    assert_null(canon_guarded(longer, strlen(longer), out, sizeof canon));
    assert_string_equal(out, canon);
    assert_non_null(canon_guarded(longer, strlen(longer), out, sizeof canon - 1));

    /* Nothing written past outsize. */
    memset(out, 'Z', sizeof out);
    (void)canon_guarded(canon, strlen(canon), out, 10);
    assert_int_equal(out[10], 'Z');
    assert_int_equal(out[sizeof out - 1], 'Z');
}

typedef struct {
    const char *name;
    const char *buf; /* more bytes than len */
    size_t len;
    const char *want; /* NULL: rejected */
} len_row_t;

/* The input need not be NUL-terminated: only buf[0..len) counts. */
static void only_len_bytes_are_read(void **state)
{
    static const len_row_t len_rows[] = {
        {"a path beyond len is not seen", "http://h:8080/pathgarbage", 13,
         "http://h:8080"},
        {"a default port and slash then junk",
         "HTTP://App.Example.com:80/ trailing", 26, "http://app.example.com"},
        {"an IPv6 literal cut at its bracket", "http://[::1]:8080]]]", 17,
         "http://[::1]:8080"},
        {"a port cut to nothing is an empty port", "http://h:80", 9, NULL},
        {"a bracket cut before it closes", "http://[::1]", 11, NULL},
        {"a NUL inside len is a non-printable byte", "http://h\0ost", 12, NULL},
        {"len 0 is an empty url", "http://h", 0, NULL},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(len_rows); i++) {
        const len_row_t *r = &len_rows[i];
        char out[BEACON_URL_MAX];
        /* guarded_copy copies exactly len bytes: the rest is unreadable. */
        const char *msg = canon_guarded(r->buf, r->len, out, sizeof out);

        if (r->want != NULL) {
            if (msg != NULL) {
                print_error("case: %s: rejected with \"%s\"\n", r->name, msg);
            }
            assert_null(msg);
            assert_string_equal(out, r->want);
        } else {
            if (msg == NULL) {
                print_error("case: %s: accepted as \"%s\"\n", r->name, out);
            }
            assert_non_null(msg);
        }
    }
}

/* The same string with a trailing garbage suffix in a plain buffer. */
static void len_is_honoured_in_an_unterminated_buffer(void **state)
{
    char in[32];
    char out[BEACON_URL_MAX];

    (void)state;
    memset(in, '/', sizeof in);
    memcpy(in, "http://H:443", 12);
    assert_null(beacon_url_canonicalize(in, 12, out, sizeof out));
    assert_string_equal(out, "http://h:443");
    assert_non_null(beacon_url_canonicalize(in, 14, out, sizeof out));
}

typedef struct {
    const char *url;
    const char *message; /* a part of it */
} message_row_t;

/*
 * What a refusal says, for the rules that keep a member within what httpd
 * can hold: its hostname_ex is 256 bytes with the NUL, its scheme 16, and
 * it proxies a member only by one of ten schemes.
 */
static void refusals_say_which_limit_or_scheme(void **state)
{
    static const message_row_t rows[] = {
        {"balancer://cluster", "the scheme is not one httpd proxies to a "
                               "member (http, https, ws, wss, h2, h2c, ajp, "
                               "fcgi, scgi, uwsgi)"},
        {"FTP://h", "not one httpd proxies to a member"},
        {"abcdefghijklmnop://h", "the scheme is longer than 15 bytes"},
        {"unix:/run/x.sock|http://h", "the unix: socket form"},
        {"uwsgi://h", "a uwsgi url needs a port"},
    };
    char host[300], url[320], out[BEACON_URL_MAX];
    const char *msg;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        msg = canon_guarded(rows[i].url, strlen(rows[i].url), out, sizeof out);
        if (msg == NULL || strstr(msg, rows[i].message) == NULL) {
            print_error("case: %s: \"%s\"\n", rows[i].url, msg ? msg : "(ok)");
        }
        assert_non_null(msg);
        assert_non_null(strstr(msg, rows[i].message));
    }
    /* 253 bytes are a host; 254 to 292 (once accepted, then fatal to an
     * httpd child) are not. */
    for (i = 253; i <= 292; i++) {
        memset(host, 'h', i);
        host[i] = '\0';
        (void)snprintf(url, sizeof url, "http://%s:8080", host);
        msg = canon_guarded(url, strlen(url), out, sizeof out);
        if (i == 253) {
            assert_null(msg);
            continue;
        }
        assert_non_null(msg);
        assert_string_equal(msg, "the host is longer than 253 bytes");
    }
}

/*
 * beacon_url_is_canonical, the form a member key is derived for: a row's
 * url is canonical exactly when it is accepted and is its own canonical
 * form; every canonical column is. An exact-length copy: len is obeyed.
 */
static int canonical_guarded(const char *url, size_t len)
{
    guarded_t g = guarded_copy(url, len);
    int yes = beacon_url_is_canonical(g.buf, len);

    guarded_free(&g);
    return yes;
}

static void is_canonical_agrees_with_the_table(void **state)
{
    vec_table_t t = load_urls();
    size_t i, canonical = 0, not_canonical = 0;

    (void)state;
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *r = &t.rows[i];
        const vec_field_t *in = &r->col[URL_IN], *out = &r->col[URL_CANONICAL];
        int refused = vec_is(out, "refused");
        int want = !refused && in->len == out->len &&
                   memcmp(in->text, out->text, in->len) == 0;

        if (canonical_guarded(in->text, in->len) != want) {
            print_error("case: %s: is_canonical says %d\n",
                        r->col[URL_NAME].text, !want);
        }
        assert_int_equal(canonical_guarded(in->text, in->len), want);
        if (!refused) {
            assert_true(canonical_guarded(out->text, out->len));
        }
        canonical += (size_t)want;
        not_canonical += (size_t)!want;
    }
    assert_true(canonical >= 10 && not_canonical >= 30);
    /* a prefix of a canonical url is not it, nor is it with a byte more */
    assert_false(beacon_url_is_canonical("http://h:80", 9));
    assert_true(beacon_url_is_canonical("http://h:8080", 13));
    assert_false(beacon_url_is_canonical("http://h:8080/", 14));
    vec_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(canonicalization_table),
        cmocka_unit_test(canonical_urls_are_fixed_points),
        cmocka_unit_test(result_must_fit_in_outsize),
        cmocka_unit_test(only_len_bytes_are_read),
        cmocka_unit_test(len_is_honoured_in_an_unterminated_buffer),
        cmocka_unit_test(refusals_say_which_limit_or_scheme),
        cmocka_unit_test(is_canonical_agrees_with_the_table),
    };

    return cmocka_run_group_tests_name("url", tests, NULL, NULL);
}
