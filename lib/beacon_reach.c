/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Reach: which hosts an announced url may point at (ProxyBeaconAllow,
 * allow=, beaconctl --allow). One rule for the receiver and beaconctl;
 * the entries and the defaults are described in beacon_reach.h. Every
 * address is held as 16 bytes, an IPv4 one in its IPv4-mapped form with
 * a flag, so that ::ffff:169.254.169.254 is 169.254.169.254 wherever it
 * is written.
 */

#define _POSIX_C_SOURCE 200809L /* inet_pton, inet_ntop */

#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <apr_strings.h>

#include "beacon_private.h"

#define V4_PREFIX 96 /* where an IPv4 address starts in its mapped form */

typedef struct {
    unsigned char addr[16];
    int ipv4;
} address_t;

static const unsigned char mapped_head[12] = {0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0xff, 0xff};

static void from_ipv4(address_t *a, const unsigned char v4[4])
{
    memcpy(a->addr, mapped_head, sizeof(mapped_head));
    memcpy(a->addr + 12, v4, 4);
    a->ipv4 = 1;
}

/* An IPv6 address, or the IPv4 address it maps. */
static void from_ipv6(address_t *a, const unsigned char v6[16])
{
    memcpy(a->addr, v6, 16);
    a->ipv4 = memcmp(v6, mapped_head, sizeof(mapped_head)) == 0;
}

/* Whether addr lies in net/prefix (a prefix of the 16 bytes). */
static int in_prefix(const unsigned char *addr, const unsigned char *net,
                     unsigned prefix)
{
    unsigned whole = prefix / 8, rest = prefix % 8;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));

    if (memcmp(addr, net, whole) != 0) {
        return 0;
    }
    return rest == 0 || ((addr[whole] ^ net[whole]) & mask) == 0;
}

/* Whether no bit past prefix is set. */
static int is_network(const unsigned char *net, unsigned prefix)
{
    unsigned i;

    for (i = prefix; i < 128; i++) {
        if (net[i / 8] & (0x80 >> (i % 8))) {
            return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* The defaults                                                        */

typedef struct {
    int ipv4;
    unsigned char net[16];
    unsigned prefix;
    const char *what;
} refused_range_t;

#define V4(a, b, c, d) {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d}

static const refused_range_t refused_ranges[] = {
    {1, V4(169, 254, 0, 0), V4_PREFIX + 16,
     "a link-local address (169.254.0.0/16), refused by default"},
    {1, V4(0, 0, 0, 0), V4_PREFIX + 32,
     "the unspecified address (0.0.0.0), refused by default"},
    {1, V4(224, 0, 0, 0), V4_PREFIX + 4,
     "a multicast address (224.0.0.0/4), refused by default"},
    {1, V4(255, 255, 255, 255), V4_PREFIX + 32,
     "the broadcast address (255.255.255.255), refused by default"},
    {0, {0xfe, 0x80}, 10, "a link-local address (fe80::/10), refused by default"},
    {0, {0}, 128, "the unspecified address (::), refused by default"},
    {0, {0xff}, 8, "a multicast address (ff00::/8), refused by default"},
};

static const refused_range_t *refused_range_of(const address_t *a)
{
    apr_size_t i;

    for (i = 0; i < sizeof(refused_ranges) / sizeof(refused_ranges[0]); i++) {
        const refused_range_t *r = &refused_ranges[i];

        if (r->ipv4 == a->ipv4 && in_prefix(a->addr, r->net, r->prefix)) {
            return r;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Reading addresses                                                   */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static char lower(char c)
{
    if (c >= 'A' && c <= 'Z') {
        return (char)(c - 'A' + 'a');
    }
    return c;
}

/* One part of an inet_aton address: decimal, 0x hex or 0 octal; 0 when
 * it is none, or above limit. */
static int aton_part(const char *s, apr_size_t len, apr_uint64_t limit,
                     apr_uint64_t *value)
{
    unsigned base = 10;
    apr_size_t i = 0;
    apr_uint64_t v = 0;

    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (len == 2) {
            return 0; /* "0x" and no digit: inet_aton reads no number */
        }
        base = 16;
        i = 2;
    }
    else if (len >= 2 && s[0] == '0') {
        base = 8;
        i = 1;
    }
    if (len == 0) {
        return 0;
    }
    for (; i < len; i++) {
        int d = beacon_hex_value(s[i]);

        if (d < 0 || (unsigned)d >= base) {
            return 0;
        }
        v = v * base + (unsigned)d;
        if (v > limit) {
            return 0;
        }
    }
    *value = v;
    return 1;
}

/*
 * An IPv4 address in any form inet_aton reads (and so getaddrinfo,
 * without asking DNS): 1 to 4 parts, each decimal, hex or octal, the
 * last filling the bytes left ("127.1", "2852039166").
 */
static int parse_ipv4_any(const char *s, apr_size_t len, unsigned char out[4])
{
    apr_uint64_t parts[4] = {0}, value = 0, last_limit;
    unsigned n = 0, i;
    apr_size_t start = 0, k;

    for (k = 0; k <= len; k++) {
        if (k < len && s[k] != '.') {
            continue;
        }
        if (n == 4 || !aton_part(s + start, k - start, 0xffffffffu, &parts[n])) {
            return 0;
        }
        n++;
        start = k + 1;
    }
    last_limit = 0xffffffffu >> (8 * (n - 1));
    for (i = 0; i + 1 < n; i++) {
        if (parts[i] > 255) {
            return 0;
        }
        value |= parts[i] << (8 * (3 - i));
    }
    if (parts[n - 1] > last_limit) {
        return 0;
    }
    value |= parts[n - 1];
    for (i = 0; i < 4; i++) {
        out[i] = (unsigned char)(value >> (8 * (3 - i)));
    }
    return 1;
}

/* inet_pton of s[0..len) (no NUL needed, none allowed: inet_pton would
 * stop there): 1 when it is an address of af. */
static int pton(int af, const char *s, apr_size_t len, unsigned char *out)
{
    char text[INET6_ADDRSTRLEN];

    if (len == 0 || len >= sizeof(text) || memchr(s, '\0', len) != NULL) {
        return 0;
    }
    memcpy(text, s, len);
    text[len] = '\0';
    return inet_pton(af, text, out) == 1;
}

/* ------------------------------------------------------------------ */
/* Entries                                                             */

/* A host name: labels of letters, digits, "-", "_" and "~" (what the
 * identity rules let a url's host hold), none empty. */
static int is_host_name(const char *s, apr_size_t len)
{
    apr_size_t i, label = 0;

    if (len == 0 || len > BEACON_REACH_NAME_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        char c = s[i];

        if (c == '.') {
            if (label == 0) {
                return 0;
            }
            label = 0;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              is_digit(c) || c == '-' || c == '_' || c == '~')) {
            return 0;
        }
        label++;
    }
    return label > 0;
}

/* A name without its one trailing "." (the same DNS name). */
static apr_size_t without_root_dot(const char *s, apr_size_t len)
{
    return len > 1 && s[len - 1] == '.' ? len - 1 : len;
}

static void set_name(beacon_reach_entry_t *e, const char *prefix,
                     const char *s, apr_size_t len)
{
    apr_size_t plen = strlen(prefix), i;

    memcpy(e->name, prefix, plen);
    for (i = 0; i < len; i++) {
        e->name[plen + i] = lower(s[i]);
    }
    e->len = plen + len;
    e->name[e->len] = '\0';
}

static const char *parse_prefix(const char *s, apr_size_t len, unsigned max,
                                unsigned *prefix)
{
    apr_size_t i;
    unsigned v = 0;

    if (len == 0 || len > 3) {
        return "a prefix length is 0 to 32 (IPv4) or 0 to 128 (IPv6), in "
               "decimal";
    }
    for (i = 0; i < len; i++) {
        if (!is_digit(s[i])) {
            return "a prefix length is 0 to 32 (IPv4) or 0 to 128 (IPv6), in "
                   "decimal";
        }
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > max) {
        return max == 32 ? "an IPv4 prefix length is at most 32"
                         : "an IPv6 prefix length is at most 128";
    }
    *prefix = v;
    return NULL;
}

/* addr[/prefix], IPv4 (four decimal numbers) or IPv6 (no brackets). */
static const char *parse_network(const char *s, apr_size_t len,
                                 beacon_reach_entry_t *e)
{
    const char *slash = memchr(s, '/', len);
    apr_size_t alen = slash ? (apr_size_t)(slash - s) : len;
    unsigned char v4[4], v6[16];
    address_t a;
    unsigned prefix;
    const char *err;

    if (memchr(s, ':', alen) != NULL) {
        if (!pton(AF_INET6, s, alen, v6)) {
            return "not an IPv6 address (written without brackets: fd00::/8)";
        }
        from_ipv6(&a, v6);
        prefix = 128;
        if (slash && (err = parse_prefix(slash + 1, len - alen - 1, 128,
                                         &prefix)) != NULL) {
            return err;
        }
        if (a.ipv4 && prefix < V4_PREFIX) {
            a.ipv4 = 0; /* wider than the mapped range: an IPv6 network */
        }
    }
    else {
        if (!pton(AF_INET, s, alen, v4)) {
            return "not an IPv4 address as four decimal numbers (10.0.0.0/8)";
        }
        from_ipv4(&a, v4);
        prefix = 32;
        if (slash && (err = parse_prefix(slash + 1, len - alen - 1, 32,
                                         &prefix)) != NULL) {
            return err;
        }
        prefix += V4_PREFIX;
    }
    if (!is_network(a.addr, prefix)) {
        return "the address has bits set past its prefix length (10.0.0.0/8, "
               "not 10.1.0.0/8)";
    }
    e->kind = BEACON_REACH_NETWORK;
    e->ipv4 = a.ipv4;
    memcpy(e->addr, a.addr, 16);
    e->prefix = prefix;
    return NULL;
}

/* Whether s[0..len) is written as an address would be: digits, dots and
 * a prefix, or any inet_aton form (0x7f.1), or an IPv6 address. */
static int looks_like_address(const char *s, apr_size_t len)
{
    const char *slash = memchr(s, '/', len);
    apr_size_t alen = slash ? (apr_size_t)(slash - s) : len, i;
    unsigned char v4[4];
    int plain = alen > 0;

    if (memchr(s, ':', alen) != NULL) {
        return 1;
    }
    for (i = 0; i < alen; i++) {
        plain = plain && (is_digit(s[i]) || s[i] == '.');
    }
    /* with a root dot too: a url's host is read without it */
    return plain || slash != NULL ||
           parse_ipv4_any(s, without_root_dot(s, alen), v4);
}

static const char *parse_entry(const char *s, apr_size_t len,
                               beacon_reach_entry_t *e)
{
    memset(e, 0, sizeof(*e));
    if (len == 0) {
        return "an empty entry";
    }
    if (len == 6 && strncasecmp(s, "source", 6) == 0) {
        e->kind = BEACON_REACH_SOURCE;
        return NULL;
    }
    if (memchr(s, '*', len) != NULL) {
        if (len < 3 || s[0] != '*' || s[1] != '.' ||
            !is_host_name(s + 2, without_root_dot(s + 2, len - 2))) {
            return "a wildcard is a leading \"*.\" before a host name "
                   "(*.svc.cluster.local)";
        }
        e->kind = BEACON_REACH_SUFFIX;
        set_name(e, ".", s + 2, without_root_dot(s + 2, len - 2));
        return NULL;
    }
    if (s[0] == '[') {
        return "an IPv6 address is written without brackets (fd00::/8)";
    }
    if (looks_like_address(s, len)) {
        return parse_network(s, len, e);
    }
    if (!is_host_name(s, without_root_dot(s, len))) {
        return "neither an IP network, a host name, *.suffix nor \"source\"";
    }
    e->kind = BEACON_REACH_NAME;
    set_name(e, "", s, without_root_dot(s, len));
    return NULL;
}

static int same_entry(const beacon_reach_entry_t *a,
                      const beacon_reach_entry_t *b)
{
    if (a->kind != b->kind) {
        return 0;
    }
    if (a->kind == BEACON_REACH_NETWORK) {
        return a->ipv4 == b->ipv4 && a->prefix == b->prefix &&
               memcmp(a->addr, b->addr, 16) == 0;
    }
    return a->len == b->len && memcmp(a->name, b->name, a->len) == 0;
}

void beacon_reach_init(beacon_reach_t *reach)
{
    reach->n = 0;
}

const char *beacon_reach_add(beacon_reach_t *reach, const char *entry,
                             apr_size_t len)
{
    beacon_reach_entry_t e;
    const char *err = parse_entry(entry, len, &e);
    unsigned i;

    if (err != NULL) {
        return err;
    }
    for (i = 0; i < reach->n; i++) {
        if (same_entry(&reach->entry[i], &e)) {
            return NULL;
        }
    }
    if (reach->n == BEACON_REACH_MAX_ENTRIES) {
        return "more than " BEACON_STR(BEACON_REACH_MAX_ENTRIES) " entries";
    }
    reach->entry[reach->n++] = e;
    return NULL;
}

static const char *add_to(void *reach, const char *entry, apr_size_t len)
{
    return beacon_reach_add(reach, entry, len);
}

const char *beacon_reach_add_list(beacon_reach_t *reach, const char *list,
                                  apr_size_t len, beacon_span_t *bad)
{
    unsigned before = reach->n;
    const char *err = beacon_each_entry(list, len, add_to, reach, bad);

    if (err != NULL) {
        reach->n = before;
    }
    return err;
}

/* ------------------------------------------------------------------ */
/* Matching                                                            */

typedef struct {
    int is_address;
    address_t a;
    const char *name; /* not an address: the name, without a root dot */
    apr_size_t len;
} host_t;

/* The host of a canonical url: scheme://host[:port], IPv6 in brackets. */
static int host_of(const char *url, host_t *h)
{
    const char *p = strstr(url, "://"), *end;
    unsigned char v4[4], v6[16];

    memset(h, 0, sizeof(*h));
    if (p == NULL) {
        return 0;
    }
    p += 3;
    if (*p == '[') {
        end = strchr(p, ']');
        if (end == NULL || !pton(AF_INET6, p + 1, (apr_size_t)(end - p - 1), v6)) {
            return 0;
        }
        h->is_address = 1;
        from_ipv6(&h->a, v6);
        return 1;
    }
    end = strchr(p, ':');
    h->name = p;
    h->len = without_root_dot(p, end ? (apr_size_t)(end - p) : strlen(p));
    if (parse_ipv4_any(h->name, h->len, v4)) {
        h->is_address = 1;
        from_ipv4(&h->a, v4);
    }
    return h->len > 0;
}

static int source_address(const struct sockaddr *sa, address_t *a)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

        from_ipv4(a, (const unsigned char *)&sin->sin_addr);
        return 1;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

        from_ipv6(a, sin6->sin6_addr.s6_addr);
        return 1;
    }
    return 0;
}

static int name_matches(const beacon_reach_entry_t *e, const host_t *h)
{
    if (e->kind == BEACON_REACH_NAME) {
        return h->len == e->len && strncasecmp(h->name, e->name, e->len) == 0;
    }
    /* ".suffix": the name ends with it and has a label before it */
    return h->len > e->len &&
           strncasecmp(h->name + h->len - e->len, e->name, e->len) == 0;
}

/* Whether entry e allows the address a; floor: the prefix an entry
 * needs (a refused range's; 0 when a is in none). */
static int address_matches(const beacon_reach_entry_t *e, const address_t *a,
                           unsigned floor, const struct sockaddr *source)
{
    address_t from;

    switch (e->kind) {
    case BEACON_REACH_NETWORK:
        return e->ipv4 == a->ipv4 && e->prefix >= floor &&
               in_prefix(a->addr, e->addr, e->prefix);
    case BEACON_REACH_SOURCE:
        if (floor != 0) {
            return 0;
        }
        if (source == NULL) {
            return 1; /* nothing to compare: any IP literal */
        }
        return source_address(source, &from) && from.ipv4 == a->ipv4 &&
               memcmp(from.addr, a->addr, 16) == 0;
    default:
        return 0;
    }
}

/* Why no list allows a reserved slot's name. */
#define RESERVED_WHY "a reserved slot's name (" BEACON_RESERVED_DOMAIN "), never a member's"

int beacon_url_is_reserved(const char *url)
{
    static const char domain[] = BEACON_RESERVED_DOMAIN;
    apr_size_t dlen = sizeof(domain) - 1, len;
    const char *host = strstr(url, "://");

    if (host == NULL || host[3] == '[') {
        return 0;
    }
    host += 3;
    len = strcspn(host, ":/?#");
    /* every trailing "." (one is the same DNS name; more a name that a
     * resolver refuses, but still this one to the eye and to httpd) */
    while (len > 0 && host[len - 1] == '.') {
        len--;
    }
    return len >= dlen && strncasecmp(host + len - dlen, domain, dlen) == 0 &&
           (len == dlen || host[len - dlen - 1] == '.');
}

const char *beacon_reach_refusal(const beacon_reach_t *reach, const char *url,
                                 const struct sockaddr *source)
{
    const refused_range_t *range = NULL;
    host_t h;
    unsigned i;

    if (!host_of(url, &h)) {
        return "not a canonical url";
    }
    if (beacon_url_is_reserved(url)) {
        return RESERVED_WHY; /* before any list: none can allow it */
    }
    if (h.is_address) {
        range = refused_range_of(&h.a);
    }
    if (reach == NULL) {
        return range ? range->what : NULL;
    }
    for (i = 0; i < reach->n; i++) {
        const beacon_reach_entry_t *e = &reach->entry[i];

        if (h.is_address ? address_matches(e, &h.a, range ? range->prefix : 0,
                                           source)
                         : (e->kind == BEACON_REACH_NAME ||
                            e->kind == BEACON_REACH_SUFFIX) &&
                               name_matches(e, &h)) {
            return NULL;
        }
    }
    return range ? range->what : "no entry allows it";
}

const char *beacon_reach_gate_refusal(const beacon_reach_gate_t *gate,
                                      const char *url, int *by_balancer)
{
    const char *why;

    if (by_balancer != NULL) {
        *by_balancer = 0;
    }
    if (beacon_url_is_reserved(url)) {
        if (by_balancer != NULL) {
            *by_balancer = -1; /* no list refused it: none may allow it */
        }
        return RESERVED_WHY;
    }
    if (gate == NULL) {
        return beacon_reach_refusal(NULL, url, NULL);
    }
    if ((why = beacon_reach_refusal(gate->receiver, url, gate->source)) != NULL ||
        gate->balancer == NULL) {
        return why;
    }
    if ((why = beacon_reach_refusal(gate->balancer, url, gate->source)) != NULL &&
        by_balancer != NULL) {
        *by_balancer = 1;
    }
    return why;
}

/* ------------------------------------------------------------------ */
/* Writing entries back                                                */

static void entry_text(const beacon_reach_entry_t *e, char *out,
                       apr_size_t size)
{
    char addr[INET6_ADDRSTRLEN];
    unsigned shown = e->prefix;

    switch (e->kind) {
    case BEACON_REACH_SOURCE:
        apr_cpystrn(out, "source", size);
        return;
    case BEACON_REACH_NAME:
        /* the host named "source" with its root dot, or it reads back as
         * the keyword */
        apr_snprintf(out, size, "%s%s", e->name,
                     strcmp(e->name, "source") == 0 ? "." : "");
        return;
    case BEACON_REACH_SUFFIX:
        apr_snprintf(out, size, "*%s", e->name);
        return;
    default:
        break;
    }
    if (e->ipv4) {
        inet_ntop(AF_INET, e->addr + 12, addr, sizeof(addr));
        shown -= V4_PREFIX;
    }
    else {
        inet_ntop(AF_INET6, e->addr, addr, sizeof(addr));
    }
    if (e->prefix == 128) { /* one address */
        apr_cpystrn(out, addr, size);
    }
    else {
        apr_snprintf(out, size, "%s/%u", addr, shown);
    }
}

const char *beacon_reach_text(const beacon_reach_t *reach, char *buf,
                              apr_size_t bufsize)
{
    apr_size_t used = 0;
    unsigned i;

    if (bufsize == 0) {
        return buf;
    }
    buf[0] = '\0';
    for (i = 0; reach != NULL && i < reach->n && used + 1 < bufsize; i++) {
        if (i > 0) {
            buf[used++] = ' ';
            buf[used] = '\0';
        }
        entry_text(&reach->entry[i], buf + used, bufsize - used);
        used += strlen(buf + used);
    }
    return buf;
}
