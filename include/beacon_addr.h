/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: datagram endpoints, "host:port" (lib/beacon_addr.c).
 */
#ifndef BEACON_ADDR_H
#define BEACON_ADDR_H

#include "beacon_common.h"

#include <apr_network_io.h>
#include <apr_pools.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of beacon_parse_host_port(). */
#define BEACON_HP_ANY_HOST      0x1 /* "", "*" or a missing host: *host = NULL */
#define BEACON_HP_PORT_OPTIONAL 0x2 /* a missing port: *port = 0 */
#define BEACON_HP_PORT_ZERO     0x4 /* port 0 is allowed (any free port) */

/*
 * Where datagrams go or come from: "host:port", an IPv6 literal in
 * brackets ("[::1]:5555"), an optional leading scheme ("udp://", "tcp://",
 * as httpd's Listen takes it) ignored. *host is allocated from p. Returns
 * NULL, or a static message saying what is wrong; no IPv6 scope ("%eth0")
 * is accepted.
 */
const char *beacon_parse_host_port(apr_pool_t *p, const char *spec,
                                   unsigned flags, char **host,
                                   apr_port_t *port);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_ADDR_H */
