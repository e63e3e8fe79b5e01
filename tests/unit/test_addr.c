/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beacon_parse_host_port(): where datagrams go or come from, as
 * ProxyBeaconListen, ProxyBeaconAddress and beaconctl's --bind and --to
 * take it. One table: the spelling, the flags, and the host and port it
 * gives, or the words the refusal must contain.
 */
#include "test_common.h"

#include <apr_general.h>

#define ANY BEACON_HP_ANY_HOST
#define OPT BEACON_HP_PORT_OPTIONAL
#define ZERO BEACON_HP_PORT_ZERO

typedef struct {
    const char *name;
    const char *spec;
    unsigned flags;
    const char *host;   /* expected; NULL = any host (with ANY) */
    apr_port_t port;
    const char *error;  /* non-NULL: refused, and the message says this */
} host_port_row_t;

static const host_port_row_t rows[] = {
    /* Accepted */
    {"an IPv4 address and a port", "10.0.0.1:5555", 0, "10.0.0.1", 5555, NULL},
    {"a name and a port", "proxy.example.com:5555", 0, "proxy.example.com",
     5555, NULL},
    {"an IPv6 address in brackets", "[::1]:5555", 0, "::1", 5555, NULL},
    {"an IPv6 address with an embedded IPv4 one", "[::ffff:10.0.0.1]:80", 0,
     "::ffff:10.0.0.1", 80, NULL},
    {"port 1", "h:1", 0, "h", 1, NULL},
    {"port 65535", "h:65535", 0, "h", 65535, NULL},
    {"leading zeros in a port", "h:005555", 0, "h", 5555, NULL},
    {"udp:// is skipped", "udp://10.0.0.1:5555", 0, "10.0.0.1", 5555, NULL},
    {"UDP:// is skipped too", "UDP://10.0.0.1:5555", 0, "10.0.0.1", 5555, NULL},
    {"an underscore in a name", "proxy_1.local:5555", 0, "proxy_1.local",
     5555, NULL},
    {"tcp:// is skipped", "tcp://[::1]:5555", 0, "::1", 5555, NULL},

    /* Flags */
    {"a missing port, where it is optional", "localhost", OPT, "localhost", 0,
     NULL},
    {"a bracketed address without a port, where it is optional", "[::1]", OPT,
     "::1", 0, NULL},
    {"port 0 where it is allowed", "h:0", ZERO, "h", 0, NULL},
    {"*:0 is any host, any port", "*:0", ANY | ZERO, NULL, 0, NULL},
    {"* is any host", "*:5555", ANY, NULL, 5555, NULL},
    {"an empty host is any host", ":5555", ANY, NULL, 5555, NULL},
    {"nothing at all is any host and no port", "", ANY | OPT, NULL, 0, NULL},
    {"[::] is an address, not any host", "[::]:5555", ANY, "::", 5555, NULL},

    /* Refused: ports */
    {"a missing port", "localhost", 0, NULL, 0, "HOST:PORT"},
    {"a missing port after brackets", "[::1]", 0, NULL, 0, "HOST:PORT"},
    {"port 0", "h:0", 0, NULL, 0, "1 to 65535"},
    {"port 65536", "h:65536", 0, NULL, 0, "1 to 65535"},
    {"port 65536 where 0 is allowed", "h:65536", ZERO, NULL, 0, "0 to 65535"},
    {"an empty port, even where the port is optional", "h:", OPT, NULL, 0,
     "port"},
    {"a signed port", "h:+80", 0, NULL, 0, "port"},
    {"a negative port", "h:-1", 0, NULL, 0, "port"},
    {"a port with a letter", "h:8a", 0, NULL, 0, "port"},
    {"a port of 20 digits", "h:18446744073709551696", 0, NULL, 0, "port"},

    /* Refused: hosts */
    {"* without the any-host flag", "*:0", ZERO, NULL, 0, "host is missing"},
    {"an empty host without the any-host flag", ":5555", 0, NULL, 0,
     "host is missing"},
    {"a bare IPv6 address with a port", "::1:5555", 0, NULL, 0, "brackets"},
    {"two ports", "10.0.0.1:5555:1", 0, NULL, 0, "brackets"},
    {"an IPv6 scope", "[fe80::1%eth0]:5555", 0, NULL, 0, "scope"},
    {"an IPv6 scope without brackets", "fe80::1%eth0", OPT, NULL, 0,
     "brackets"},
    {"a name in brackets", "[localhost]:5555", 0, NULL, 0, "IPv6"},
    {"empty brackets", "[]:5555", ANY, NULL, 0, "IPv6"},
    {"a star in brackets", "[*]:5555", ANY, NULL, 0, "IPv6"},
    {"an unclosed bracket", "[::1:5555", 0, NULL, 0, "]"},
    {"junk after the bracket", "[::1]x", OPT, NULL, 0, "HOST:PORT"},
    {"a path", "h/x:80", 0, NULL, 0, "HOST:PORT"},
    {"a space", "h x:80", 0, NULL, 0, "HOST:PORT"},
    {"a percent sign in a name", "h%x:80", 0, NULL, 0, "HOST:PORT"},
    {"a tab in a name", "h\tx:80", 0, NULL, 0, "HOST:PORT"},

    /* Refused: schemes */
    {"a scheme starting with a digit", "1udp://h:1", 0, NULL, 0, "udp://"},
    {"an empty scheme", "://h:1", 0, NULL, 0, "udp://"},
    {"a scheme with an underscore", "u_p://h:1", 0, NULL, 0, "udp://"},
    {"http:// is no way to reach a receiver", "http://h:5555", 0, NULL, 0,
     "udp://"},
};

static void check_accepted(const host_port_row_t *r, const char *err,
                           const char *host, apr_port_t port)
{
    if (err != NULL) {
        print_error("case: %s: refused with \"%s\"\n", r->name, err);
    }
    assert_null(err);
    if (r->host == NULL) {
        if (host != NULL) {
            print_error("case: %s: host \"%s\", want any\n", r->name, host);
        }
        assert_null(host);
    }
    else {
        assert_non_null(host);
        assert_string_equal(host, r->host);
    }
    if (port != r->port) {
        print_error("case: %s: port %u\n", r->name, (unsigned)port);
    }
    assert_int_equal(port, r->port);
}

static void each_spelling_gives_its_host_and_port_or_a_reason(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const host_port_row_t *r = &rows[i];
        char sentinel[] = "untouched";
        char *host = sentinel;
        apr_port_t port = 4242;
        const char *err = beacon_parse_host_port(TEST_POOL, r->spec, r->flags,
                                                 &host, &port);

        if (r->error == NULL) {
            check_accepted(r, err, host, port);
            continue;
        }
        if (err == NULL || strstr(err, r->error) == NULL) {
            print_error("case: %s: \"%s\", want a message with \"%s\"\n",
                        r->name, err ? err : "(accepted)", r->error);
        }
        assert_non_null(err);
        assert_non_null(strstr(err, r->error));
    }
}

/* The host is the pool's copy: the caller's string may go away. */
static void the_host_is_a_copy_in_the_pool(void **state)
{
    char spec[] = "proxy.example.com:5555";
    char *host = NULL;
    apr_port_t port = 0;

    (void)state;
    assert_null(beacon_parse_host_port(TEST_POOL, spec, 0, &host, &port));
    assert_true(host < spec || host >= spec + sizeof spec);
    memset(spec, 'x', sizeof spec - 1);
    assert_string_equal(host, "proxy.example.com");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_spelling_gives_its_host_and_port_or_a_reason),
        cmocka_unit_test(the_host_is_a_copy_in_the_pool),
    };

    return cmocka_run_group_tests_name("addr", tests, test_pool_setup,
                                       test_pool_teardown);
}
