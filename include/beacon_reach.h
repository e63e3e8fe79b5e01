/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: reach, the hosts an announced url may point at
 * (ProxyBeaconAllow, allow=; lib/beacon_reach.c).
 */
#ifndef BEACON_REACH_H
#define BEACON_REACH_H

#include "beacon_common.h"

#include <apr_network_io.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Reach: what an announced url may point at (ProxyBeaconAllow, allow=) */

/*
 * The hosts a receiver lets announced urls point at, so that a holder of
 * the secret cannot aim the proxy at whatever it can reach. Entries, one
 * per argument (ProxyBeaconAllow, beaconctl --allow) or ","-separated
 * (allow=):
 *
 *   10.0.0.0/8, fd00::/8   an IP network: an IPv4 address as four decimal
 *                          numbers, an IPv6 address without brackets,
 *                          "/" and a prefix length (no bits set past it)
 *   10.1.2.3, ::1          one address
 *   api.internal           a host name, exactly (case-insensitive; one
 *                          trailing "." ignored)
 *   *.svc.cluster.local    any name under that suffix, at any depth, never
 *                          the suffix itself
 *   source                 an IP literal equal to the address the datagram
 *                          came from
 *
 * A url is allowed when one entry allows it. Names are matched as text,
 * never resolved: a name entry allows a name, never an address, and a
 * network or "source" allows an IP literal, never a name. The host of a
 * url is an IP literal when getaddrinfo would read it as one without
 * asking DNS: an IPv6 literal, or an IPv4 address in any inet_aton form
 * ("127.1", "2852039166", "0xa9.0xfe.0xa9.0xfe"), so that no spelling of
 * an address passes as a name. An IPv4-mapped IPv6 address
 * (::ffff:169.254.169.254) is its IPv4 address, in urls, in sources and
 * in entries (::ffff:10.0.0.0/104 is 10.0.0.0/8). Other IPv6 forms of an
 * IPv4 address (the deprecated IPv4-compatible ::a.b.c.d, NAT64's
 * 64:ff9b::/96) are IPv6 addresses: Linux does not route the former to
 * IPv4, and the latter goes through a translator the network chose.
 *
 * The defaults refuse what no backend's address is: link-local
 * (169.254.0.0/16, fe80::/10, where cloud metadata services answer),
 * unspecified (0.0.0.0, ::, which a connect takes to the proxy host
 * itself), multicast (224.0.0.0/4, ff00::/8) and the IPv4 broadcast
 * address. Without a list (reach NULL) every other url is allowed. A list
 * allows only what its entries allow, and an address of those ranges only
 * through a network entry inside the range (169.254.169.254, or
 * 169.254.0.0/16 itself): 0.0.0.0/0 or "source" never opens them.
 *
 * A plain block with no pointers, filled at configuration time, then
 * only read.
 */
#define BEACON_REACH_MAX_ENTRIES 64
#define BEACON_REACH_NAME_MAX 253

typedef enum {
    BEACON_REACH_NETWORK = 1, /* addr/prefix */
    BEACON_REACH_NAME,        /* name, exactly */
    BEACON_REACH_SUFFIX,      /* name is ".suffix": any name ending so */
    BEACON_REACH_SOURCE       /* the datagram's source address */
} beacon_reach_kind_t;

typedef struct {
    beacon_reach_kind_t kind;
    int ipv4;                  /* NETWORK: an IPv4 network, in addr as
                                * ::ffff:a.b.c.d with prefix + 96 */
    unsigned char addr[16];
    unsigned prefix;           /* 0 to 128 */
    char name[BEACON_REACH_NAME_MAX + 2]; /* lower case, NUL-terminated */
    apr_size_t len;            /* of name */
} beacon_reach_entry_t;

typedef struct {
    unsigned n;
    beacon_reach_entry_t entry[BEACON_REACH_MAX_ENTRIES];
} beacon_reach_t;

/* An empty list: it allows nothing. */
void beacon_reach_init(beacon_reach_t *reach);

/*
 * Adds one entry, entry[0..len), to reach. NULL, or a static message
 * saying why it is none (an IPv4 address not in four decimal numbers, a
 * prefix that is too long or leaves bits set, a "*" anywhere but a
 * leading "*.", a name that is not a host name, one entry past
 * BEACON_REACH_MAX_ENTRIES); reach is then unchanged. An entry given
 * twice counts once.
 */
const char *beacon_reach_add(beacon_reach_t *reach, const char *entry,
                             apr_size_t len);

/* beacon_reach_add for each ","-separated entry of list[0..len); on an
 * error, *bad (when not NULL) is the entry's span and reach is as it was
 * before the call. */
const char *beacon_reach_add_list(beacon_reach_t *reach, const char *list,
                                  apr_size_t len, beacon_span_t *bad);

/*
 * The domain a receiver names its placeholder members under
 * (http://slot-K.beacon.invalid: reserved slots, ProxyBeaconBalancer
 * slots=N); .invalid never resolves (RFC 6761).
 */
#define BEACON_RESERVED_DOMAIN "beacon.invalid"

/*
 * Whether the host of the canonical url is BEACON_RESERVED_DOMAIN or a
 * name under it, in any case and with any trailing "."s: a member named
 * so would pass for a free reserved slot, so no list allows one.
 */
int beacon_url_is_reserved(const char *url);

/*
 * Whether reach (NULL: the defaults) allows the canonical url
 * (beacon_url_canonicalize's output) sent from source: NULL, or a static
 * message saying why not ("a link-local address", "no entry allows it";
 * a reserved slot's name, beacon_url_is_reserved, whatever reach says).
 * source is the datagram's sender (AF_INET or AF_INET6); NULL where there
 * is none to compare (a member restored from the registry), and "source"
 * then allows any IP literal.
 */
const char *beacon_reach_refusal(const beacon_reach_t *reach, const char *url,
                                 const struct sockaddr *source);

/* The entries of reach as written back ("10.0.0.0/8 *.internal source"),
 * space-separated, into buf: NUL-terminated, cut at bufsize; buf. */
const char *beacon_reach_text(const beacon_reach_t *reach, char *buf,
                              apr_size_t bufsize);

/* What one announcement is checked against before its table (step 7):
 * the receiver's list and the balancer's, which narrows it (both must
 * allow the url), and where the datagram came from. */
typedef struct {
    const beacon_reach_t *receiver; /* NULL: the defaults */
    const beacon_reach_t *balancer; /* NULL: no narrowing */
    const struct sockaddr *source;  /* NULL: none (see beacon_reach_refusal) */
} beacon_reach_gate_t;

/* The gate's verdict on a canonical url: NULL when both lists allow it,
 * else why, with *by_balancer (when not NULL) 1 when the balancer's list
 * refused it, 0 the receiver's (or its defaults), -1 no list: a reserved
 * slot's name (beacon_url_is_reserved), which none may allow. */
const char *beacon_reach_gate_refusal(const beacon_reach_gate_t *gate,
                                      const char *url, int *by_balancer);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_REACH_H */
