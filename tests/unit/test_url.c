/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beacon_url_canonicalize(): member identity. Equal origins must give one
 * canonical string (one member), and everything the wire format rejects
 * must be rejected with a message. Every row runs on an exact-length copy
 * ending before a guard page, so no row may read past len.
 */
#include "test_common.h"

typedef struct {
    const char *name;
    const char *in;
    const char *want; /* NULL: rejected */
} url_row_t;

static const url_row_t rows[] = {
    /* One member, three spellings (the wire format's example) */
    {"scheme and host are lower-cased and :80 dropped",
     "HTTP://App.Example.com:80", "http://app.example.com"},
    {"one trailing slash is ignored",
     "http://app.example.com/", "http://app.example.com"},
    {"the canonical form is its own canonical form",
     "http://app.example.com", "http://app.example.com"},
    {"all at once", "HtTpS://App.EXAMPLE.com:443/", "https://app.example.com"},
    {"an IPv4 host is kept", "http://10.0.0.5:8080", "http://10.0.0.5:8080"},
    {"a trailing slash after a port is ignored",
     "http://10.0.0.5:8080/", "http://10.0.0.5:8080"},
    {"a host with a hyphen and digits", "http://WEB-1:8080", "http://web-1:8080"},

    /* Default ports dropped ... */
    {"http drops 80", "http://h:80", "http://h"},
    {"https drops 443", "https://h:443", "https://h"},
    {"ws drops 80", "ws://h:80", "ws://h"},
    {"wss drops 443", "wss://h:443", "wss://h"},
    {"h2c drops 80", "h2c://h:80", "h2c://h"},
    {"h2 drops 443", "h2://h:443", "h2://h"},
    {"ajp drops 8009", "ajp://h:8009", "ajp://h"},
    /* ... only for their own scheme */
    {"http keeps 443", "http://h:443", "http://h:443"},
    {"https keeps 80", "https://h:80", "https://h:80"},
    {"ws keeps 443", "ws://h:443", "ws://h:443"},
    {"wss keeps 80", "wss://h:80", "wss://h:80"},
    {"h2c keeps 443", "h2c://h:443", "h2c://h:443"},
    {"h2 keeps 80", "h2://h:80", "h2://h:80"},
    {"ajp keeps 80", "ajp://h:80", "ajp://h:80"},
    {"http keeps 8009", "http://h:8009", "http://h:8009"},
    {"http keeps 8080", "http://h:8080", "http://h:8080"},
    {"port 1 is a port", "http://h:1", "http://h:1"},
    {"port 65535 is a port", "http://h:65535", "http://h:65535"},

    /* Port spelling */
    {"leading zeros in a port are dropped", "http://h:08080", "http://h:8080"},
    {"a default port with leading zeros is still the default",
     "http://h:0080", "http://h"},

    /* IPv6: equal addresses are one member, RFC 5952 form */
    {"IPv6 loopback", "http://[::1]:8080", "http://[::1]:8080"},
    {"IPv6 loopback written out in full",
     "http://[0:0:0:0:0:0:0:1]:8080", "http://[::1]:8080"},
    {"IPv6 with leading zeros and an upper-case scheme",
     "HTTP://[::0001]:8080", "http://[::1]:8080"},
    {"IPv6 hex digits are lower-cased",
     "http://[2001:DB8::A]", "http://[2001:db8::a]"},
    {"IPv6 with all groups and zeros written out",
     "http://[2001:0db8:0000:0000:0000:0000:0000:0001]:8080",
     "http://[2001:db8::1]:8080"},
    {"IPv6 compresses the longest zero run",
     "http://[1:0:0:2:0:0:0:3]", "http://[1:0:0:2::3]"},
    {"IPv6 compresses the first of two equal zero runs",
     "http://[2001:db8:0:0:1:0:0:1]", "http://[2001:db8::1:0:0:1]"},
    {"IPv6 never compresses a single zero group",
     "http://[2001:db8:0:1:1:1:1:1]", "http://[2001:db8:0:1:1:1:1:1]"},
    {"IPv6 unspecified address", "http://[::]:8080", "http://[::]:8080"},
    {"IPv6 with the scheme's default port", "http://[::1]:80", "http://[::1]"},
    {"IPv6 with a trailing slash", "https://[::1]:443/", "https://[::1]"},

    /* Rejected: paths, queries, fragments */
    {"a path is rejected", "http://h/x", NULL},
    {"a path after a port is rejected", "http://h:8080/x", NULL},
    {"a double slash is rejected", "http://h//", NULL},
    {"a path with a trailing slash is rejected", "http://h/x/", NULL},
    {"a query is rejected", "http://h?x=1", NULL},
    {"a query after the slash is rejected", "http://h/?x=1", NULL},
    {"an empty query is rejected", "http://h?", NULL},
    {"a fragment is rejected", "http://h#f", NULL},
    {"a fragment after the slash is rejected", "http://h/#f", NULL},

    /* Rejected: userinfo */
    {"userinfo is rejected", "http://u@h", NULL},
    {"userinfo with a password is rejected", "http://u:p@h:80", NULL},
    {"an empty userinfo is rejected", "http://@h", NULL},

    /* Rejected: ports */
    {"port 0 is rejected", "http://h:0", NULL},
    {"port 000 is port 0", "http://h:000", NULL},
    {"port 65536 is rejected", "http://h:65536", NULL},
    {"a port that overflows 64 bits is rejected",
     "http://h:18446744073709551696", NULL},
    {"a port with a letter is rejected", "http://h:8a", NULL},
    {"a hex port is rejected", "http://h:0x50", NULL},
    {"a signed port is rejected", "http://h:+80", NULL},
    {"a negative port is rejected", "http://h:-1", NULL},
    {"an empty port is rejected", "http://h:", NULL},
    {"an empty port after IPv6 is rejected", "http://[::1]:", NULL},
    {"two ports are rejected", "http://h:80:80", NULL},

    /* Rejected: missing host, scheme or form */
    {"a missing host is rejected", "http://", NULL},
    {"a port without a host is rejected", "http://:80", NULL},
    {"a slash without a host is rejected", "http:///", NULL},
    {"no scheme is rejected", "h:80", NULL},
    {"a bare host is rejected", "h", NULL},
    {"an empty scheme is rejected", "://h", NULL},
    {"a scheme-relative url is rejected", "//h", NULL},
    {"a scheme without // is rejected", "http:h", NULL},
    {"an empty string is rejected", "", NULL},
    {"the unix socket form is rejected", "unix:/run/x.sock|http://h", NULL},

    /* Rejected: bytes */
    {"a control byte is rejected", "http://h\x01", NULL},
    {"DEL is rejected", "http://h\x7f", NULL},
    {"a non-ASCII byte is rejected", "http://h\xc3\xa9", NULL},
    {"a space is rejected", "http://h x", NULL},
    {"a tab is rejected", "http://h\t", NULL},
    {"a trailing newline is rejected", "http://h\n", NULL},

    /* Rejected: IPv6 syntax */
    {"bare IPv6 without brackets is rejected", "http://::1", NULL},
    {"bare IPv6 with a port is rejected", "http://2001:db8::1:8080", NULL},
    {"an unterminated bracket is rejected", "http://[::1", NULL},
    {"an unterminated bracket with a port is rejected", "http://[::1:8080",
     NULL},
    {"junk after the bracket is rejected", "http://[::1]x", NULL},
    {"empty brackets are rejected", "http://[]", NULL},
    {"a non-hex IPv6 group is rejected", "http://[::g]", NULL},
    {"nine IPv6 groups are rejected", "http://[1:2:3:4:5:6:7:8:9]", NULL},
    {"a name in brackets is rejected", "http://[h]", NULL},
};

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
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const url_row_t *r = &rows[i];
        char out[BEACON_URL_MAX];
        const char *msg;

        memset(out, 'Z', sizeof out);
        msg = canon_guarded(r->in, strlen(r->in), out, sizeof out);
        if (r->want != NULL) {
            if (msg != NULL) {
                print_error("case: %s: rejected with \"%s\"\n", r->name, msg);
            }
            assert_null(msg);
            if (strcmp(out, r->want) != 0) {
                print_error("case: %s\n", r->name);
            }
            assert_string_equal(out, r->want);
        } else {
            if (msg == NULL) {
                print_error("case: %s: accepted as \"%.*s\"\n", r->name,
                            (int)sizeof out, out);
            }
            assert_non_null(msg);
            assert_true(msg[0] != '\0');
        }
    }
}

/* Canonicalizing a canonical url changes nothing. */
static void canonical_urls_are_fixed_points(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        char out[BEACON_URL_MAX];
        const char *msg;

        if (rows[i].want == NULL) {
            continue;
        }
        msg = canon_guarded(rows[i].want, strlen(rows[i].want), out, sizeof out);
        if (msg != NULL || strcmp(out, rows[i].want) != 0) {
            print_error("case: canonical form of \"%s\"\n", rows[i].name);
        }
        assert_null(msg);
        assert_string_equal(out, rows[i].want);
    }
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(canonicalization_table),
        cmocka_unit_test(canonical_urls_are_fixed_points),
        cmocka_unit_test(result_must_fit_in_outsize),
        cmocka_unit_test(only_len_bytes_are_read),
        cmocka_unit_test(len_is_honoured_in_an_unterminated_buffer),
    };

    return cmocka_run_group_tests_name("url", tests, NULL, NULL);
}
