/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: the configuration side, as far as it runs without
 * httpd. The directive handlers themselves (src/) need a cmd_parms, pools
 * and a server_rec, so they are not linked here; what they do with their
 * argument is libbeacon's, and that is fuzzed here in the way the handlers
 * call it, followed through to the wire:
 *
 *   first byte 'L': ProxyBeaconListen / ProxyBeaconAddress (and beaconctl
 *       --bind / --to): beacon_parse_host_port(); the second byte's low
 *       three bits are the BEACON_HP_* flags, the rest is the argument.
 *       The verdict is deterministic, more flags never refuse what fewer
 *       accepted, and an accepted host and port written back as
 *       HOST:PORT ([HOST]:PORT for IPv6) parse as themselves.
 *   first byte 'V': ProxyBeaconService (and beaconctl --service):
 *       beacon_service_is_valid() must agree with the rule restated here
 *       (1 to 63 of [A-Za-z0-9._-]); beacon_format() writes svc= exactly
 *       for a valid name, and a receiver of that service accepts the
 *       datagram while one of another service, or of none but the
 *       datagram has no svc, drops it as wrong service.
 *   otherwise, by first byte % 4:
 *   1 ('A'): ProxyBeaconAdvertise <arg>
 *       beacon_url_canonicalize(arg, strlen(arg), ...); an accepted url is
 *       then announced as the sender does (beacon_format) and must be
 *       received (beacon_receive) as itself.
 *   3 ('S'): ProxyBeaconSecret <arg>
 *       beacon_key_parse(arg); an accepted key must sign a datagram that
 *       verifies under it and under no other key.
 *   2 ('F'): ProxyBeaconSecret file:<path> and beaconctl --secret-file,
 *       the file's bytes: beacon_key_parse_file() must agree with the
 *       secret-file rule restated here (first line, one CR before its end
 *       dropped, at most 4096 bytes, no NUL, no other CR), then as 'S'.
 *   0 ('H'): the sender's host name (ServerName or the machine's):
 *       beacon_format() must refuse it exactly when it is not a printable,
 *       space-free value or the datagram would pass 2048 bytes, and
 *       otherwise produce a datagram that verifies with that host.
 *
 * The argument is the rest of the input up to its first NUL, as httpd
 * passes a directive argument ('F' takes every byte, as a file holds
 * them). Not covered here: ProxyBeaconBalancer and the interval
 * directives (ap_timeout_parameter_parse), which are httpd's parsing;
 * tests/integration exercises them.
 */
#define _POSIX_C_SOURCE 200809L /* inet_pton */

#include "fuzz_common.h"

#include <arpa/inet.h>

#include <apr_general.h>

#define SECRET_LINE_MAX 4096 /* the secret-file rule's limit, restated */
#define HP_FLAGS (BEACON_HP_ANY_HOST | BEACON_HP_PORT_OPTIONAL | \
                  BEACON_HP_PORT_ZERO)

static beacon_key_t spec_key;
static beacon_table_t *table; /* of BEACON_TABLE_CAPACITY, made once */
static apr_pool_t *pool;

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
    beacon_announcement_t a = {NULL, "fuzz-host", 4242, 1, FUZZ_NOW, NULL,
                               NULL, NULL, NULL, NULL};
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
    beacon_table_init(table, BEACON_TABLE_CAPACITY, FUZZ_TIMEOUT, FUZZ_SKEW);
    r = beacon_receive(table, &spec_key, buf, (size_t)n, FUZZ_NOW, &ev);
    if (r == BEACON_DROP_URL_NOT_ALLOWED) {
        /* an address no backend has: every receiver's defaults refuse it */
        FUZZ_CHECK(beacon_reach_refusal(NULL, canonical, NULL) != NULL &&
                       table->count == 0,
                   "own announcement of \"%s\" not allowed", canonical);
        return;
    }
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
    r = beacon_receive(table, &spec_key, buf, (size_t)n, FUZZ_NOW, &ev);
    FUZZ_CHECK(r == BEACON_OK && ev.action == BEACON_ACT_NONE,
               "leaving before added: %s, action %d", beacon_reason_name(r),
               (int)ev.action);
}

static void secret(const char *arg)
{
    beacon_announcement_t a = {"http://10.0.0.5:8080", "web-1", 4242, 17,
                               FUZZ_NOW, NULL, NULL, NULL, NULL, NULL};
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

/*
 * The secret-file rule, written out again on purpose (the library's
 * version is what is checked): the first line's length after one CR
 * before its end is dropped, or -1 when the rule refuses the line.
 */
static long rule_line_length(const char *content, size_t len)
{
    const char *lf = memchr(content, '\n', len);
    size_t n = lf ? (size_t)(lf - content) : len;

    if (n > 0 && content[n - 1] == '\r') {
        n--;
    }
    if (n > SECRET_LINE_MAX || memchr(content, '\0', n) != NULL ||
        memchr(content, '\r', n) != NULL) {
        return -1;
    }
    return (long)n;
}

static void secret_file(const char *content, size_t len)
{
    char *copy = fuzz_dup(content, len);
    long n = rule_line_length(content, len);
    beacon_key_t k, want;
    const char *err, *want_err = "the rule refuses the line";
    char *line;

    memset(&k, 0xa5, sizeof(k));
    err = beacon_key_parse_file(copy, len, &k);
    free(copy);
    if (n >= 0) {
        line = fuzz_cstr((const uint8_t *)content, (size_t)n);
        want_err = beacon_key_parse(line, &want);
        if (want_err == NULL) {
            secret(line); /* the key signs and verifies, as 'S' */
        }
        free(line);
    }
    FUZZ_CHECK((err == NULL) == (want_err == NULL),
               "secret file: library says \"%s\", the rule \"%s\"",
               err ? err : "ok", want_err ? want_err : "ok");
    if (err == NULL) {
        FUZZ_CHECK(memcmp(&k, &want, sizeof(k)) == 0,
                   "secret file gives another key than its line");
    }
    else {
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "message");
    }
}

/* A host the parser hands out: non-empty, no path or space, and an IPv6
 * address (without a scope) whenever it holds a colon. */
static int host_is_plausible(const char *got)
{
    unsigned char addr[16];

    if (got[0] == '\0' || strpbrk(got, "/ ") != NULL) {
        return 0;
    }
    return strchr(got, ':') == NULL ||
           (strchr(got, '%') == NULL && inet_pton(AF_INET6, got, addr) == 1);
}

/* An accepted host (got) and port written back as a user would write
 * them: they must parse as themselves. */
static void host_port_round_trip(const char *got, apr_port_t port,
                                 unsigned flags)
{
    char spec[600];
    char *again = NULL;
    apr_port_t port2 = 1;
    const char *err;

    if (got == NULL || strlen(got) > 500) {
        return;
    }
    (void)snprintf(spec, sizeof(spec), strchr(got, ':') ? "[%s]:%u" : "%s:%u",
                   got, (unsigned)port);
    err = beacon_parse_host_port(pool, spec, flags | BEACON_HP_PORT_ZERO,
                                 &again, &port2);
    FUZZ_CHECK(err == NULL, "\"%s\" is refused: %s", spec, err);
    FUZZ_CHECK(again != NULL && strcmp(again, got) == 0 && port2 == port,
               "\"%s\" parses as %s port %u", spec, again ? again : "(any)",
               (unsigned)port2);
}

static void host_port(unsigned flags, const char *arg)
{
    char *got = NULL, *again_host = NULL, *any_host = NULL;
    apr_port_t port = 1, port2 = 1, port3 = 1;
    const char *err, *err2, *err3;

    err = beacon_parse_host_port(pool, arg, flags, &got, &port);
    err2 = beacon_parse_host_port(pool, arg, flags, &again_host, &port2);
    FUZZ_CHECK((err == NULL) == (err2 == NULL), "not deterministic");
    err3 = beacon_parse_host_port(pool, arg, HP_FLAGS, &any_host, &port3);
    if (err != NULL) {
        FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "message");
        return;
    }
    FUZZ_CHECK(err3 == NULL, "refused with every flag (%s), accepted with "
               "flags %u", err3, flags);
    FUZZ_CHECK(port == port3 &&
                   ((got == NULL && any_host == NULL) ||
                    (got && any_host && strcmp(got, any_host) == 0)),
               "more flags change the result");
    FUZZ_CHECK(got != NULL || (flags & BEACON_HP_ANY_HOST),
               "any host without BEACON_HP_ANY_HOST");
    FUZZ_CHECK(port != 0 ||
                   (flags & (BEACON_HP_PORT_ZERO | BEACON_HP_PORT_OPTIONAL)),
               "port 0 without BEACON_HP_PORT_ZERO or _OPTIONAL");
    FUZZ_CHECK(got == NULL || host_is_plausible(got), "host \"%s\"", got);
    host_port_round_trip(got, port, flags);
}

static void host(const char *name)
{
    static const char url[] = "http://10.0.0.5:8080";
    beacon_announcement_t a = {url, NULL, 4242, 17, FUZZ_NOW, NULL,
                               NULL, NULL, NULL, NULL};
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

/* The service rule, restated: beacon_service_is_valid is under test. */
static int service_is_valid(const char *name)
{
    size_t n = strlen(name), i;

    for (i = 0; i < n; i++) {
        if (!((name[i] >= 'a' && name[i] <= 'z') ||
              (name[i] >= 'A' && name[i] <= 'Z') ||
              (name[i] >= '0' && name[i] <= '9') || name[i] == '.' ||
              name[i] == '_' || name[i] == '-')) {
            return 0;
        }
    }
    return n >= 1 && n <= BEACON_SERVICE_MAX;
}

/* One datagram through a receiver of service (NULL: none). */
static beacon_reason_t receive_as(const char *service, const char *buf,
                                  int n)
{
    beacon_event_t ev;

    beacon_table_init(table, BEACON_TABLE_CAPACITY, FUZZ_TIMEOUT, FUZZ_SKEW);
    beacon_table_set_service(table, service);
    return beacon_receive(table, &spec_key, buf, (size_t)n, FUZZ_NOW, &ev);
}

static void service(const char *name)
{
    beacon_announcement_t a = {"http://10.0.0.5:8080", NULL, -1, -1, FUZZ_NOW,
                               NULL, NULL, NULL, NULL, NULL};
    char buf[BEACON_MAX_DATAGRAM + 1];
    int valid = service_is_valid(name), n;
    beacon_reason_t r;

    FUZZ_CHECK(beacon_service_is_valid(name) == valid,
               "service \"%s\": library says %d", name, !valid);
    a.svc = name;
    n = beacon_format(buf, sizeof(buf), &a, &spec_key);
    if (!valid) {
        FUZZ_CHECK(n == -1, "invalid svc formatted");
        return;
    }
    FUZZ_CHECK(n > 0, "valid svc \"%s\" not formatted", name);
    r = receive_as(name, buf, n);
    FUZZ_CHECK(r == BEACON_OK, "own service: %s", beacon_reason_name(r));
    r = receive_as(NULL, buf, n);
    FUZZ_CHECK(r == BEACON_OK, "no service: %s", beacon_reason_name(r));
    r = receive_as(strcmp(name, "other") == 0 ? "another" : "other", buf, n);
    FUZZ_CHECK(r == BEACON_DROP_WRONG_SERVICE, "another service: %s",
               beacon_reason_name(r));
    a.svc = NULL;
    n = beacon_format(buf, sizeof(buf), &a, &spec_key);
    r = receive_as(name, buf, n);
    FUZZ_CHECK(r == BEACON_DROP_WRONG_SERVICE, "no svc: %s",
               beacon_reason_name(r));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    char *arg;

    if (!ready) {
        spec_key = fuzz_key(FUZZ_HEX_KEY);
        FUZZ_CHECK(apr_initialize() == APR_SUCCESS &&
                       apr_pool_create(&pool, NULL) == APR_SUCCESS,
                   "APR");
        table = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
        FUZZ_CHECK(table != NULL, "table");
        ready = 1;
    }
    if (size == 0) {
        return 0;
    }
    if (data[0] == 'L') {
        arg = fuzz_cstr(size > 2 ? data + 2 : data, size > 2 ? size - 2 : 0);
        host_port(size > 1 ? data[1] & HP_FLAGS : 0, arg);
        apr_pool_clear(pool);
        free(arg);
        return 0;
    }
    arg = fuzz_cstr(data + 1, size - 1);
    if (data[0] == 'V') {
        service(arg);
        free(arg);
        return 0;
    }
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
