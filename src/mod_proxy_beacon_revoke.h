/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Revocation: the member urls a receiver refuses whatever key signs them
 * (ProxyBeaconRevoke for every service, revoke= for one balancer's), a
 * deny-list for a member key that leaked from a live backend. Written
 * here, checked by libbeacon's key ring before the MAC
 * (beacon_ring_revoke), and at a restart by the restore of each balancer.
 */
#ifndef MOD_PROXY_BEACON_REVOKE_H
#define MOD_PROXY_BEACON_REVOKE_H

#include "mod_proxy_beacon_util.h"

/* A list of revoked urls: canonical (beacon_url_canonicalize), each once. */
typedef apr_array_header_t beacon_revoked;

/* The urls of ProxyBeaconRevoke (one) or revoke= (a ","-separated list)
 * into *list (made when NULL); NULL, or the error naming what of urls is
 * no member url, for the directive what. */
const char *beacon_revoke_add(cmd_parms *cmd, beacon_revoked **list,
                              const char *urls, const char *what);

/* A virtual host's list: the main server's and its own. */
beacon_revoked *beacon_revoke_merge(apr_pool_t *p, beacon_revoked *base,
                                    beacon_revoked *add);

/* Every url of list revoked in set of ring (beacon_ring_revoke); NULL, or
 * what the ring refused (more than it holds). */
const char *beacon_revoke_into_ring(beacon_ring_t *ring, int set,
                                    const beacon_revoked *list);

#endif /* MOD_PROXY_BEACON_REVOKE_H */
