/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: the configuration side, as far as it runs without
 * httpd. The directive handlers themselves (src/mod_proxy_beacon.c) need a
 * cmd_parms, pools and a server_rec, so they are not linked here; what they
 * do with their argument is libbeacon's, and that is fuzzed here in the
 * way the handlers call it, followed through to the wire:
 *
 *   first byte % 4 == 1 ('A'): ProxyBeaconAdvertise <arg>
 *       set_advertise(): beacon_url_canonicalize(arg, strlen(arg), ...);
 *       an accepted url is then announced as the sender does
 *       (beacon_format) and must be received (beacon_receive) as itself.
 *   first byte % 4 == 3 ('S'): ProxyBeaconSecret <arg>
 *       set_secret(): beacon_key_parse(arg); an accepted key must sign a
 *       datagram that verifies under it and under no other key.
 *   first byte % 4 == 2 ('F'): ProxyBeaconSecret file:<path>, the file's
 *       bytes: read_secret_file() keeps at most 1023 bytes, cuts at the
 *       first CR or LF (and so, as a C string, at a NUL), then as 'S'.
 *   first byte % 4 == 0 ('H'): the sender's host name (ServerName or the
 *       machine's): beacon_format() must refuse it exactly when it is not
 *       a printable, space-free value or the datagram would pass 2048
 *       bytes, and otherwise produce a datagram that verifies with that
 *       host.
 *
 * The argument is the rest of the input up to its first NUL, as httpd
 * passes a directive argument. Not covered here: ProxyBeaconListen,
 * ProxyBeaconAddress (apr_parse_addr_port), ProxyBeaconBalancer and the
 * interval directives (ap_timeout_parameter_parse), which are httpd's or
 * APR's parsing; they are exercised by tests/integration instead.
 */
#include "fuzz_common.h"

#define SECRET_LINE_MAX 1024 /* set_secret()'s line[] */

static beacon_key_t spec_key;
static beacon_table_t table;

/* The wire format's rule for a field value, written out again on purpose:
 * beacon_format() calls beacon_value_is_valid(), so checking it against
 * that same function could not fail. */
static int value_is_valid(const char *v)
{
    if (*v == '\0') {
        return 0;
    }
    for (; *v; v++) {
        if (*v <= ' ' || *v > '~') {
            return 0;
        }
    }
    return 1;
}

static void advertise(const char *arg)
{
    char canonical[BEACON_URL_MAX];
    char buf[BEACON_MAX_DATAGRAM + 1];
    beacon_announcement_t a = {NULL, "fuzz-host", 4242, 1, FUZZ_NOW, NULL};
    beacon_event_t ev;
    beacon_reason_t r;
    const char *err;
    int n;

    err = beacon_url_canonicalize(arg, strlen(arg), canonical, sizeof(canonical));
    if (err != NULL) {
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "message");
        return;
    }
    fuzz_check_fixed_point(canonical);

    /* The sender announces conf->advertise: it must be sendable ... */
    a.url = canonical;
    n = beacon_format(buf, sizeof(buf), &a, &spec_key);
    FUZZ_CHECK(n > 0, "accepted ProxyBeaconAdvertise \"%s\" cannot be "
               "formatted", canonical);
    FUZZ_CHECK((size_t)n == strlen(buf), "format length %d", n);

    /* ... and received as the same member. */
    beacon_table_init(&table, FUZZ_TIMEOUT, FUZZ_SKEW);
    r = beacon_receive(&table, &spec_key, buf, (size_t)n, FUZZ_NOW, &ev);
    FUZZ_CHECK(r == BEACON_OK, "own announcement of \"%s\" dropped: %s",
               canonical, beacon_reason_name(r));
    FUZZ_CHECK(strcmp(ev.url, canonical) == 0,
               "advertised \"%s\", received as \"%s\"", canonical, ev.url);
    FUZZ_CHECK(ev.rec != NULL && ev.action == BEACON_ACT_ADD,
               "first announcement not an add (action %d)", (int)ev.action);

    /* state=leaving from the same sender, later: disables nothing that was
     * never added, and is not a replay. */
    a.ts = FUZZ_NOW + 1;
    a.state = "leaving";
    n = beacon_format(buf, sizeof(buf), &a, &spec_key);
    FUZZ_CHECK(n > 0, "leaving announcement cannot be formatted");
    r = beacon_receive(&table, &spec_key, buf, (size_t)n, FUZZ_NOW, &ev);
    FUZZ_CHECK(r == BEACON_OK && ev.action == BEACON_ACT_NONE,
               "leaving before added: %s, action %d", beacon_reason_name(r),
               (int)ev.action);
}

static void secret(const char *arg)
{
    beacon_announcement_t a = {"http://10.0.0.5:8080", "web-1", 4242, 17,
                               FUZZ_NOW, NULL};
    char buf[BEACON_MAX_DATAGRAM + 1];
    beacon_datagram_t dg;
    beacon_key_t k;
    beacon_reason_t r;
    const char *err;
    int n;

    err = beacon_key_parse(arg, &k);
    if (err != NULL) {
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "message");
        return;
    }
    n = beacon_format(buf, sizeof(buf), &a, &k);
    FUZZ_CHECK(n > 0, "cannot sign with an accepted key");
    r = beacon_verify(buf, (size_t)n, &k, FUZZ_NOW, FUZZ_SKEW, &dg);
    FUZZ_CHECK(r == BEACON_OK, "own datagram dropped: %s", beacon_reason_name(r));
    r = beacon_verify(buf, (size_t)n, &spec_key, FUZZ_NOW, FUZZ_SKEW, &dg);
    if (memcmp(&k, &spec_key, sizeof(k)) == 0) {
        FUZZ_CHECK(r == BEACON_OK, "same key, %s", beacon_reason_name(r));
    }
    else {
        FUZZ_CHECK(r == BEACON_DROP_MAC_MISMATCH, "another key's datagram: %s",
                   beacon_reason_name(r));
    }
}

/* read_secret_file(): up to size - 1 bytes, then the first line. */
static void secret_file(const char *content, size_t len)
{
    char line[SECRET_LINE_MAX];
    size_t n = len < sizeof(line) - 1 ? len : sizeof(line) - 1;

    memcpy(line, content, n);
    line[n] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    secret(line);
}

static void host(const char *name)
{
    static const char url[] = "http://10.0.0.5:8080";
    beacon_announcement_t a = {url, NULL, 4242, 17, FUZZ_NOW, NULL};
    char *buf = malloc(BEACON_MAX_DATAGRAM + 1);
    beacon_datagram_t dg;
    beacon_reason_t r;
    size_t want;
    int n;

    FUZZ_CHECK(buf != NULL, "out of memory");
    a.host = name;
    n = beacon_format(buf, BEACON_MAX_DATAGRAM + 1, &a, &spec_key);
    /* "BEACON url=... host=<name> pid=4242 seq=17 ts=<16 digits> mac=<16>" */
    want = strlen("BEACON url=") + strlen(url) + strlen(" host=") +
           strlen(name) + strlen(" pid=4242 seq=17 ts=1796000000000000") +
           MAC_TAIL_LEN;
    if (!value_is_valid(name) || want > BEACON_MAX_DATAGRAM) {
        FUZZ_CHECK(n == -1, "host of %zu bytes formatted (%d)", strlen(name), n);
        free(buf);
        return;
    }
    FUZZ_CHECK(n > 0 && (size_t)n == want, "host of %zu bytes: %d, want %zu",
               strlen(name), n, want);
    r = beacon_verify(buf, (size_t)n, &spec_key, FUZZ_NOW, FUZZ_SKEW, &dg);
    FUZZ_CHECK(r == BEACON_OK, "own datagram dropped: %s", beacon_reason_name(r));
    FUZZ_CHECK(dg.host.ptr != NULL && dg.host.len == strlen(name) &&
                   memcmp(dg.host.ptr, name, dg.host.len) == 0,
               "host span is not the name");
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    char *arg;

    if (!ready) {
        spec_key = fuzz_key(FUZZ_HEX_KEY);
        ready = 1;
    }
    if (size == 0) {
        return 0;
    }
    arg = fuzz_cstr(data + 1, size - 1);
    switch (data[0] % 4) {
    case 1:
        advertise(arg);
        break;
    case 3:
        secret(arg);
        break;
    case 2:
        secret_file((const char *)data + 1, size - 1);
        break;
    default:
        host(arg);
        break;
    }
    free(arg);
    return 0;
}
