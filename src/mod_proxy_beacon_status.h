/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What beacon knows, for people and for scripts: "SetHandler
 * beacon-status" (HTML, ?json) and a section in mod_status's
 * server-status (?auto lines). Read-only.
 */
#ifndef MOD_PROXY_BEACON_STATUS_H
#define MOD_PROXY_BEACON_STATUS_H

#include "mod_proxy_beacon_util.h"

/* Registers the handler and the mod_status hook. */
void beacon_status_register_hooks(void);

#endif /* MOD_PROXY_BEACON_STATUS_H */
