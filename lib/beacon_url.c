/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Member identity: one canonical form per origin, so that equal origins
 * are one member wherever a receiver keeps them. The result is also the
 * name a receiver gives the member, so anything a proxy would read as a
 * path, a socket or userinfo is refused here rather than half-accepted
 * there.
 */

#define _POSIX_C_SOURCE 200809L /* inet_pton, inet_ntop */

#include <string.h>
#include <arpa/inet.h>

#include "beacon.h"

/*
 * What httpd can hold of a member (mod_proxy.h of 2.4): a scheme of at
 * most PROXY_WORKER_MAX_SCHEME_SIZE - 1 = 15 bytes, a hostname of at most
 * PROXY_RFC1035_HOSTNAME_SIZE - 1 = 255 (a longer one makes
 * ap_proxy_define_worker_ex fail: a child of the proxy died of it), and a
 * name of at most PROXY_WORKER_EXT_NAME_SIZE - 1 = 383. A host is held to
 * a DNS name's 253 bytes, well inside; the longest canonical url follows.
 */
#define MAX_SCHEME_LEN 15
#define MAX_HOST_LEN 253
#define MAX_PORT 65535
#define HTTPD_NAME_EX_SIZE 384 /* PROXY_WORKER_EXT_NAME_SIZE */

/* scheme "://" host ":65535" and the NUL fit the table's url and httpd's
 * name_ex, so no canonical url is ever refused or cut for its length. */
_Static_assert(MAX_SCHEME_LEN + 3 + MAX_HOST_LEN + 6 + 1 <= BEACON_URL_MAX,
               "a canonical url must fit in BEACON_URL_MAX");
_Static_assert(BEACON_URL_MAX <= HTTPD_NAME_EX_SIZE,
               "a canonical url must fit in httpd's worker name_ex");

typedef struct {
    const char *p, *end;
} cursor_t;

/*
 * The schemes httpd proxies to a balancer member (mod_proxy_http,
 * _wstunnel, _http2, _ajp, _fcgi, _scgi, _uwsgi), each with the port a url
 * without one means: httpd 2.4's ap_proxy_port_of_scheme (APR-util's
 * apr_uri_port_of_scheme for http and https, then mod_proxy's own table:
 * fcgi 8000, ajp 8009, scgi 4000, h2c and ws 80, h2 and wss 443). That is
 * the port ap_proxy_define_worker_ex drops when it names a worker, so a
 * receiver names a member exactly as httpd does. uwsgi is in neither
 * table (mod_proxy_uwsgi's 3031 applies to requests, not to workers):
 * httpd keeps its port in the name and connects to port 0 without one, so
 * its port is always kept and must be given.
 */
typedef struct {
    const char *name;
    unsigned default_port; /* 0: none; the url must give its port */
} scheme_t;

static const scheme_t schemes[] = {
    {"http", 80},  {"https", 443}, {"ws", 80},    {"wss", 443},
    {"h2", 443},   {"h2c", 80},    {"ajp", 8009}, {"fcgi", 8000},
    {"scgi", 4000}, {"uwsgi", 0},
};

static const scheme_t *scheme_named(const char *name)
{
    apr_size_t i;

    for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        if (strcmp(name, schemes[i].name) == 0) {
            return &schemes[i];
        }
    }
    return NULL;
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A registered name: letters, digits and the unreserved - . _ ~ only. */
static int is_name_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' ||
           c == '~';
}

static const char *parse_scheme(cursor_t *c, const scheme_t **scheme)
{
    char name[MAX_SCHEME_LEN + 1];
    apr_size_t n = 0;

    if (c->p == c->end || !is_alpha(*c->p)) {
        return "the url must start with a scheme (http://...)";
    }
    while (c->p < c->end && (is_alpha(*c->p) || is_digit(*c->p) ||
                             *c->p == '+' || *c->p == '-' || *c->p == '.')) {
        if (n == MAX_SCHEME_LEN) {
            return "the scheme is longer than 15 bytes";
        }
        name[n++] = lower(*c->p++);
    }
    name[n] = '\0';
    if (strcmp(name, "unix") == 0) {
        return "the unix: socket form is not allowed";
    }
    if (c->end - c->p < 3 || memcmp(c->p, "://", 3) != 0) {
        return "the url must have the form scheme://host[:port]";
    }
    if ((*scheme = scheme_named(name)) == NULL) {
        return "the scheme is not one httpd proxies to a member (http, https, "
               "ws, wss, h2, h2c, ajp, fcgi, scgi, uwsgi)";
    }
    c->p += 3;
    return NULL;
}

/* An IPv6 literal in brackets, rewritten in RFC 5952 form. */
static const char *parse_ipv6(cursor_t *c, char *host, apr_size_t hostsize)
{
    const char *close = memchr(c->p, ']', (apr_size_t)(c->end - c->p));
    char literal[INET6_ADDRSTRLEN + 1];
    unsigned char addr[16];
    apr_size_t n;

    if (close == NULL) {
        return "an IPv6 literal lacks its closing ]";
    }
    n = (apr_size_t)(close - (c->p + 1));
    if (n == 0 || n >= sizeof(literal)) {
        return "an IPv6 literal is malformed";
    }
    memcpy(literal, c->p + 1, n);
    literal[n] = '\0';
    if (inet_pton(AF_INET6, literal, addr) != 1 ||
        inet_ntop(AF_INET6, addr, literal, sizeof(literal)) == NULL) {
        return "an IPv6 literal is malformed";
    }
    n = strlen(literal);
    if (n + 3 > hostsize) {
        return "the host is too long";
    }
    host[0] = '[';
    memcpy(host + 1, literal, n);
    host[n + 1] = ']';
    host[n + 2] = '\0';
    c->p = close + 1;
    return NULL;
}

static const char *parse_name(cursor_t *c, char *host, apr_size_t hostsize)
{
    apr_size_t n = 0;

    while (c->p < c->end && *c->p != ':' && *c->p != '/' && *c->p != '?' &&
           *c->p != '#') {
        if (!is_name_char(*c->p)) {
            return "the host holds a character that is not allowed";
        }
        if (n == MAX_HOST_LEN || n + 1 == hostsize) {
            return "the host is longer than 253 bytes";
        }
        host[n++] = lower(*c->p++);
    }
    if (n == 0) {
        return "the host is missing";
    }
    host[n] = '\0';
    return NULL;
}

/* ":port" if present; *port stays 0 when absent. */
static const char *parse_port(cursor_t *c, unsigned *port)
{
    unsigned long n = 0;
    const char *start;

    if (c->p == c->end || *c->p != ':') {
        return NULL;
    }
    start = ++c->p;
    while (c->p < c->end && is_digit(*c->p)) {
        n = n * 10 + (unsigned long)(*c->p++ - '0');
        if (n > MAX_PORT) {
            return "the port is above 65535";
        }
    }
    if (c->p == start || (c->p < c->end && *c->p != '/' && *c->p != '?' &&
                          *c->p != '#')) {
        return "the port is not a decimal number";
    }
    if (n == 0) {
        return "the port is 0";
    }
    *port = (unsigned)n;
    return NULL;
}

/* What may follow the authority: nothing, or a single '/'. */
static const char *check_rest(cursor_t *c)
{
    if (c->p < c->end && *c->p == '/') {
        c->p++;
    }
    if (c->p == c->end) {
        return NULL;
    }
    switch (*c->p) {
    case '?':
        return "a query is not allowed";
    case '#':
        return "a fragment is not allowed";
    default:
        return "a path is not allowed (only the origin, scheme://host[:port])";
    }
}

static const char *check_no_userinfo(const cursor_t *c)
{
    const char *p;

    for (p = c->p; p < c->end && *p != '/' && *p != '?' && *p != '#'; p++) {
        if (*p == '@') {
            return "userinfo (user@) is not allowed";
        }
    }
    return NULL;
}

static const char *check_printable(const char *url, apr_size_t len)
{
    apr_size_t i;

    for (i = 0; i < len; i++) {
        if (url[i] <= ' ' || url[i] > '~') {
            return "the url holds a space or a non-printable byte";
        }
    }
    return NULL;
}

static const char *write_origin(const scheme_t *scheme, const char *host,
                                unsigned port, char *out, apr_size_t outsize)
{
    apr_size_t slen = strlen(scheme->name), hlen = strlen(host), n;
    char portbuf[8] = "";
    apr_size_t plen = 0;

    if (port == 0 && scheme->default_port == 0) {
        return "a uwsgi url needs a port (httpd knows no default port for "
               "uwsgi)";
    }
    if (port != 0 && port != scheme->default_port) {
        char *p = portbuf + sizeof(portbuf) - 1;

        *p = '\0';
        do {
            *--p = (char)('0' + port % 10);
            port /= 10;
        } while (port > 0);
        *--p = ':';
        plen = strlen(p);
        memmove(portbuf, p, plen + 1);
    }
    n = slen + 3 + hlen + plen;
    if (n + 1 > outsize) {
        return "the url is too long";
    }
    memcpy(out, scheme->name, slen);
    memcpy(out + slen, "://", 3);
    memcpy(out + slen + 3, host, hlen);
    memcpy(out + slen + 3 + hlen, portbuf, plen);
    out[n] = '\0';
    return NULL;
}

const char *beacon_url_canonicalize(const char *url, apr_size_t len, char *out,
                                    apr_size_t outsize)
{
    const scheme_t *scheme = NULL;
    char host[BEACON_URL_MAX];
    cursor_t c = {url, url + len};
    unsigned port = 0;
    const char *err;

    if ((err = check_printable(url, len)) != NULL ||
        (err = parse_scheme(&c, &scheme)) != NULL) {
        return err;
    }
    if ((err = check_no_userinfo(&c)) != NULL) {
        return err;
    }
    if (c.p < c.end && *c.p == '[') {
        err = parse_ipv6(&c, host, sizeof(host));
    }
    else {
        err = parse_name(&c, host, sizeof(host));
    }
    if (err != NULL || (err = parse_port(&c, &port)) != NULL ||
        (err = check_rest(&c)) != NULL) {
        return err;
    }
    return write_origin(scheme, host, port, out, outsize);
}

int beacon_url_is_canonical(const char *url, apr_size_t len)
{
    char out[BEACON_URL_MAX];

    return beacon_url_canonicalize(url, len, out, sizeof(out)) == NULL &&
           strlen(out) == len && memcmp(out, url, len) == 0;
}
