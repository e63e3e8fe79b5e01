/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * ProxyBeaconMemberParams: the BalancerMember parameters the proxy gives
 * every member beacon adds (timeouts, pool sizes, lbset, initial flags,
 * health checks), checked at configuration time and given to a worker
 * before it is shared, so that no request sees a member without them.
 */
#ifndef MOD_PROXY_BEACON_PARAMS_H
#define MOD_PROXY_BEACON_PARAMS_H

#include "mod_proxy_beacon_util.h"

struct proxy_worker; /* httpd's (mod_proxy.h), given params */

typedef struct beacon_member_params beacon_member_params;

/* Whether v is a whole decimal number in [min, max], into *out (atoi
 * would take "5x" as 5). */
int beacon_params_whole_number(const char *v, apr_int64_t min, apr_int64_t max,
                               apr_int64_t *out);

/*
 * Adds one "key=value" to *params (made from p when NULL); NULL, or an
 * error naming the key. The health-check keys (hc...) are mod_proxy_hcheck's
 * and checked by beacon_params_check, once every module's directives are
 * read.
 */
const char *beacon_params_add(apr_pool_t *p, beacon_member_params **params,
                              const char *arg);

/* In check_config: the health-check keys, by mod_proxy_hcheck's own
 * rules for server s; NULL or an error naming the key. */
const char *beacon_params_check(apr_pool_t *p, server_rec *s,
                                const beacon_member_params *params);

/* Gives params to a worker being defined, before it is shared (params may
 * be NULL: nothing). s is the receiver's server (health-check templates). */
void beacon_params_apply(apr_pool_t *p, server_rec *s,
                         const beacon_member_params *params,
                         struct proxy_worker *w);

#endif /* MOD_PROXY_BEACON_PARAMS_H */
