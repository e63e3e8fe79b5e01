/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The ownership registry: which members of a balancer beacon created. It
 * lives in shared memory, so that the mark outlives the child that wrote
 * it (a status bit would not: other processes rewrite a worker's status
 * without locks), and mod_slotmem_shm persists it across restarts and
 * stops, so that beacon's members come back before the first request of a
 * new generation. Written only under the balancer's global mutex.
 */
#ifndef MOD_PROXY_BEACON_REGISTRY_H
#define MOD_PROXY_BEACON_REGISTRY_H

#include "mod_proxy_beacon_util.h"

#define BEACON_REGISTRY_SIZE BEACON_TABLE_CAPACITY /* entries */

typedef struct beacon_registry beacon_registry;

/* In post_config: the registry of the receiver of balancer_name on port,
 * found again under the same name after a restart; NULL (logged) when
 * shared memory cannot be had. */
beacon_registry *beacon_registry_open(apr_pool_t *pconf, server_rec *s,
                                      const char *balancer_name,
                                      apr_port_t port);

/* Whether beacon created url in balancer (httpd's name of it). */
int beacon_registry_has(const beacon_registry *reg, const char *balancer,
                        const char *url);

/* Marks url as beacon's, in rotation; 0 when the registry is full. */
int beacon_registry_put(const beacon_registry *reg, const char *balancer,
                        const char *url);

/* Records whether beacon took url out of rotation (evicted, leaving), so
 * that a restart restores it as it was. */
void beacon_registry_set_out(const beacon_registry *reg, const char *balancer,
                             const char *url, int out);

int beacon_registry_has_room(const beacon_registry *reg);

/* Entry i (0 to BEACON_REGISTRY_SIZE - 1): its url when it marks a member
 * of balancer, else NULL (*out, when not NULL, says whether the member was
 * out of rotation); and forgetting it. */
const char *beacon_registry_url(const beacon_registry *reg, unsigned i,
                                const char *balancer, int *out);
void beacon_registry_forget(const beacon_registry *reg, unsigned i);

/* Frees the entries that are neither free nor of this layout (a persisted
 * file of an older release, or damaged); returns how many. */
unsigned beacon_registry_damaged(const beacon_registry *reg);

#endif /* MOD_PROXY_BEACON_REGISTRY_H */
