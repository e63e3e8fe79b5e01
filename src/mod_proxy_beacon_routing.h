/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Routing requests by announced contexts: a translate_name hook that
 * sends a request of a receiver's virtual host whose path lies in a
 * context a member claims to that member's balancer, path unchanged, as
 * a ProxyPass to balancer://name would; static configuration first.
 */
#ifndef MOD_PROXY_BEACON_ROUTING_H
#define MOD_PROXY_BEACON_ROUTING_H

#include "mod_proxy_beacon_util.h"

void beacon_routing_register_hooks(void);

#endif /* MOD_PROXY_BEACON_ROUTING_H */
