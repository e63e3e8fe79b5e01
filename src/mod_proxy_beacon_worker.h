/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * httpd's worker primitives, the one part of the module that calls into
 * mod_proxy (mod_proxy_beacon_worker.c): finding a balancer and its
 * members, the balancer's locks, and defining a worker in a growth slot
 * as balancer-manager does. No policy of beacon's: what to add, when to
 * take a member out of rotation, is mod_proxy_beacon_balancer.c's. This
 * header brings mod_proxy.h with it.
 */
#ifndef MOD_PROXY_BEACON_WORKER_H
#define MOD_PROXY_BEACON_WORKER_H

#include "mod_proxy_beacon_params.h"
#include "mod_proxy_beacon_registry.h"

#include <mod_proxy.h>

/* One of httpd's balancers, as beacon reaches it. */
typedef struct {
    server_rec *s;
    proxy_server_conf *conf;
    proxy_balancer *b;
} beacon_workers;

/* The flags balancer-manager gives the admin; Disabled is beacon's. */
#define BEACON_ADMIN_FLAGS                                                  \
    (PROXY_WORKER_STOPPED | PROXY_WORKER_DRAIN | PROXY_WORKER_HOT_STANDBY | \
     PROXY_WORKER_HOT_SPARE | PROXY_WORKER_IGNORE_ERRORS)

/* Whether mod_proxy's functions resolved (it was loaded before us). */
int beacon_worker_linked(void);

/* Whether this httpd expires cached backend addresses (2.4.59 and later),
 * which renaming a slot relies on. */
int beacon_worker_addresses_expire(void);

/* balancer://name as the configuration of s defines it, or NULL. */
proxy_balancer *beacon_worker_balancer(apr_pool_t *p, server_rec *s,
                                       const char *name);

/* In post_config: ws is balancer://name of s; 0 when it has no shared
 * memory (yet). */
int beacon_worker_open(beacon_workers *ws, apr_pool_t *pconf, server_rec *s,
                       const char *name);

/* Whether a worker's name is the member canonical url names (the admin
 * may spell a BalancerMember otherwise). */
int beacon_worker_names(const char *name, const char *url);

/* This child's worker named url, or NULL. */
proxy_worker *beacon_worker_find(const beacon_workers *ws, const char *url);

/* The shared slot registry entry e names, when it still holds e's member
 * (same salted hash), else NULL; and noting in e where its member lives,
 * for a restart or a recycling to find it. */
proxy_worker_shared *beacon_worker_slot(const beacon_workers *ws,
                                        const beacon_entry *e);
void beacon_worker_note_slot(beacon_entry *e, const proxy_worker_shared *shm);

/* The balancer's locks, logged when one fails: the thread lock alone
 * (this child's member list), or balancer-manager's order, the thread
 * lock then the global lock (anything shared). */
apr_status_t beacon_worker_thread_lock(beacon_workers *ws);
void beacon_worker_thread_unlock(beacon_workers *ws);
apr_status_t beacon_worker_lock(beacon_workers *ws);
void beacon_worker_unlock(beacon_workers *ws);

/* This child's member list, current and held still under the thread
 * lock; beacon_worker_thread_unlock() after. */
apr_status_t beacon_worker_lock_members(beacon_workers *ws);

/* This child's member list made current (under the thread lock); and,
 * taking that lock itself, only when other processes changed the
 * balancer, as a request would. */
void beacon_worker_sync(beacon_workers *ws);
void beacon_worker_pick_up(beacon_workers *ws);

/*
 * Defines url in the balancer with a growth slot of its own, as
 * balancer-manager's add does, with beacon's member settings, params and
 * a salted identity hash; initializing it is the caller's business. NULL
 * on failure, with *no_slot set when growth is exhausted and *why (from
 * p) saying why, nothing left behind.
 */
proxy_worker *beacon_worker_share_new(beacon_workers *ws,
                                      const beacon_member_params *params,
                                      const char *url, apr_pool_t *p,
                                      int *no_slot, const char **why);

/* httpd's reading of url (scheme, host, port), as a worker it pushes
 * nowhere (from p); NULL when httpd refuses it. */
proxy_worker *beacon_worker_template(apr_pool_t *p, const char *url);

/* httpd's initialization of a worker share_new defined. */
apr_status_t beacon_worker_initialize(beacon_workers *ws, proxy_worker *w);

/*
 * Appends w, whole, to this child's member list. Request threads walk the
 * list without a lock (httpd's election, balancer-manager's pages), so the
 * slot is written before the count that makes it visible, and a full list
 * is replaced by a bigger copy (from pool) rather than grown in place; the
 * old one stays valid for a walk in progress. Under the thread lock.
 */
void beacon_worker_list(proxy_balancer *b, proxy_worker *w, apr_pool_t *pool);

/* Tells the other children that w was added: they sync on their next
 * request. */
void beacon_worker_publish(beacon_workers *ws, proxy_worker *w);

/* Takes w off this child's member list; and undoes a partial add (its
 * slot released when have_slot). */
void beacon_worker_unlist(proxy_balancer *b, const proxy_worker *w);
void beacon_worker_forget(proxy_balancer *b, const proxy_worker *w,
                          proxy_worker_shared *shm, int have_slot,
                          unsigned idx);

/* Sets or clears Disabled, and nothing else, of a shared status word. */
void beacon_worker_set_disabled(proxy_worker_shared *shm, int disabled);

/* Sets the flags in set and clears those in clear, nothing else, of a
 * shared status word, as beacon_worker_set_disabled does. */
void beacon_worker_set_flags(proxy_worker_shared *shm, apr_uint32_t set,
                             apr_uint32_t clear);

/* Growth slots of the balancer in use by runtime members, and free. */
void beacon_worker_growth(const beacon_workers *ws, int *used, int *free_slots);

/* httpd's flag text for a member ("Init Ok "), or NULL when absent. */
const char *beacon_worker_flags(beacon_workers *ws, const char *url,
                                apr_pool_t *p);

#endif /* MOD_PROXY_BEACON_WORKER_H */
