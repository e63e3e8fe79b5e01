/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The member registry of one receiver: which members of its balancer
 * beacon created, and what a restart or a new owner must know of each to
 * put it back as it was (in or out of rotation, when it was last heard,
 * its replay high-water mark, the settings an admin gave it in
 * balancer-manager, a rename under way). It lives in shared memory, so it
 * outlives the child that wrote it (a status bit would not: other
 * processes rewrite a worker's status without locks), and mod_slotmem_shm
 * persists it across restarts and stops.
 *
 * Written by the receiver's owner (its own entries' last-heard times and
 * marks) and otherwise under the balancer's global mutex, or in the parent
 * before any child exists.
 */
#ifndef MOD_PROXY_BEACON_REGISTRY_H
#define MOD_PROXY_BEACON_REGISTRY_H

#include "mod_proxy_beacon_entry.h"
#include "mod_proxy_beacon_util.h"

typedef struct beacon_registry beacon_registry;

/*
 * In post_config: the registry of entries entries (its balancer's
 * capacity) of the receiver whose identity is key (its virtual host and
 * bind address), found again under the same name after a restart. A
 * persisted file that is not whole (cut, or its digest wrong) is set
 * aside first, logged; a sound one of another number of entries (slots=
 * changed) is carried into the new registry, logged. NULL (logged) when
 * shared memory cannot be had.
 */
beacon_registry *beacon_registry_open(apr_pool_t *pconf, server_rec *s,
                                      const char *key, unsigned entries);

/* The bytes of shared memory a registry of entries entries takes (its
 * entries and their claims, as mod_slotmem_shm lays them out). */
apr_size_t beacon_registry_bytes(unsigned entries);

/* The entries the registry holds. */
unsigned beacon_registry_size(const beacon_registry *reg);

/* The header, made new when it is missing or of another layout. */
beacon_registry_header *beacon_registry_header_of(const beacon_registry *reg);

/* Entry i (0 to beacon_registry_size - 1) when it is in use and sound
 * (this layout, its strings terminated), else NULL. */
beacon_entry *beacon_registry_entry(const beacon_registry *reg, unsigned i);

/* This process writes the registry from now on (a new owner): what
 * another wrote is looked up afresh. The lookups by url below are the
 * owner's (they use its index of the entries). */
void beacon_registry_own(const beacon_registry *reg);

/* An entry was made to name another url in place (a recycled slot's):
 * the lookups by url see it. */
void beacon_registry_renamed(const beacon_registry *reg);

/* The entry of member url in balancer (a replay mark is none), or NULL. */
beacon_entry *beacon_registry_find(const beacon_registry *reg,
                                   const char *balancer, const char *url);

/* The member entry of url, trying entry *hint first and leaving where it
 * was found in *hint (-1: none): the datagram path's lookup. */
beacon_entry *beacon_registry_find_hinted(const beacon_registry *reg,
                                          const char *balancer,
                                          const char *url, int *hint);

/* A new entry for url, a member in rotation, in place of url's replay
 * mark if it has one; else in a free entry, else in the place of the
 * oldest replay mark. NULL when the registry is full. */
beacon_entry *beacon_registry_put(const beacon_registry *reg,
                                  const char *balancer, const char *url);

/* The replay mark of url in balancer, or NULL. */
beacon_entry *beacon_registry_find_mark(const beacon_registry *reg,
                                        const char *balancer, const char *url);

/* Keeps e's replay mark (its high_ts as of its last_heard) in an entry of
 * its own before e's slot goes to another url: raised if url has one,
 * else in a free entry; NULL when none is free (the mark is then only
 * the owner's). */
beacon_entry *beacon_registry_put_mark(const beacon_registry *reg,
                                       const beacon_entry *e);

int beacon_registry_has_room(const beacon_registry *reg);

void beacon_registry_forget(beacon_entry *e);

/* The contexts member entry i claimed in its latest announcement that
 * said (ctx=, as announced: "/shop,/cart"); "" when it claims none, or i
 * is no member entry. Kept with the registry, so a restart keeps them. */
const char *beacon_registry_claims(const beacon_registry *reg, unsigned i);

/* A member and the contexts it claims (beacon_registry_claims). */
typedef struct {
    const char *url;
    const char *ctx;        /* as announced: "/shop,/cart" */
} beacon_claim;

/* The members of balancer that claim contexts, evicted and leaving ones
 * included (their routes stay until they are forgotten); returns how
 * many were written into *claims (from p). */
int beacon_registry_claims_in(const beacon_registry *reg, const char *balancer,
                              apr_pool_t *p, beacon_claim **claims);

/* Sets entry i's claims to value[0..len) ("" claims none); returns
 * whether they changed. The owner's only. */
int beacon_registry_claim(const beacon_registry *reg, unsigned i,
                          const char *value, apr_size_t len);

/* Frees the entries that are neither free nor sound (another layout, an
 * unterminated string); returns how many. */
unsigned beacon_registry_damaged(const beacon_registry *reg);

#endif /* MOD_PROXY_BEACON_REGISTRY_H */
