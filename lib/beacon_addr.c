/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Datagram endpoints as people write them: ProxyBeaconListen and
 * ProxyBeaconAddress on httpd, --bind and --to in beaconctl. One parser,
 * so that a spelling one of them takes is never refused by another.
 */

#define _POSIX_C_SOURCE 200809L /* inet_pton */

#include <string.h>
#include <strings.h>
#include <arpa/inet.h>

#include <apr_strings.h>

#include "beacon.h"
#include "beacon_private.h"

#define MAX_PORT 65535

/* Past an optional "udp://" or "tcp://" (httpd's Listen takes the
 * latter); NULL for any other text before "://". */
static const char *skip_scheme(const char *spec)
{
    const char *sep = strstr(spec, "://");

    if (sep == NULL) {
        return spec;
    }
    if (sep - spec == 3 && (strncasecmp(spec, "udp", 3) == 0 ||
                            strncasecmp(spec, "tcp", 3) == 0)) {
        return sep + 3;
    }
    return NULL;
}

/* Splits "[v6]", "[v6]:port", "host", "host:port" into host and port text
 * (port NULL when absent); NULL, or what is wrong. */
static const char *split(const char *s, const char **host, apr_size_t *hlen,
                         const char **port)
{
    const char *colon;

    if (*s == '[') {
        const char *close = strchr(s, ']');

        if (close == NULL) {
            return "an IPv6 address lacks its closing ]";
        }
        *host = s + 1;
        *hlen = (apr_size_t)(close - *host);
        if (close[1] != '\0' && close[1] != ':') {
            return "expected HOST:PORT";
        }
        *port = close[1] == ':' ? close + 2 : NULL;
        return NULL;
    }
    colon = strchr(s, ':');
    if (colon && strchr(colon + 1, ':')) {
        return "expected HOST:PORT, an IPv6 address in brackets";
    }
    *host = s;
    *hlen = colon ? (apr_size_t)(colon - s) : strlen(s);
    *port = colon ? colon + 1 : NULL;
    return NULL;
}

static const char *check_ipv6(apr_pool_t *p, const char *host, apr_size_t len)
{
    unsigned char addr[16];

    if (memchr(host, '%', len) != NULL) {
        return "an IPv6 scope (%...) is not supported";
    }
    if (len == 0 || inet_pton(AF_INET6, apr_pstrmemdup(p, host, len), addr) != 1) {
        return "not an IPv6 address in brackets";
    }
    return NULL;
}

static const char *parse_port(const char *text, unsigned flags,
                              apr_port_t *port)
{
    apr_int64_t n;
    int zero_ok = (flags & BEACON_HP_PORT_ZERO) != 0;

    if (text == NULL) {
        if (flags & BEACON_HP_PORT_OPTIONAL) {
            *port = 0;
            return NULL;
        }
        return "expected HOST:PORT";
    }
    if (!beacon_parse_decimal(text, strlen(text), &n) || n > MAX_PORT ||
        (n == 0 && !zero_ok)) {
        return zero_ok ? "the port must be a number from 0 to 65535"
                       : "the port must be a number from 1 to 65535";
    }
    *port = (apr_port_t)n;
    return NULL;
}

const char *beacon_parse_host_port(apr_pool_t *p, const char *spec,
                                   unsigned flags, char **host,
                                   apr_port_t *port)
{
    const char *s = skip_scheme(spec), *h, *port_text, *err;
    apr_size_t hlen;

    if (s == NULL) {
        return "only udp:// or tcp:// may come before the address";
    }
    if ((err = split(s, &h, &hlen, &port_text)) != NULL) {
        return err;
    }
    if (*s == '[' && (err = check_ipv6(p, h, hlen)) != NULL) {
        return err;
    }
    if ((err = parse_port(port_text, flags, port)) != NULL) {
        return err;
    }
    if (hlen == 0 || (hlen == 1 && *h == '*' && *s != '[')) {
        if (!(flags & BEACON_HP_ANY_HOST)) {
            return "the host is missing";
        }
        *host = NULL;
        return NULL;
    }
    if (*s != '[' && !beacon_is_word(h, hlen)) {
        return "expected HOST:PORT, a host of letters, digits, '-', '.' "
               "and '_'";
    }
    *host = apr_pstrmemdup(p, h, hlen);
    return NULL;
}
