/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Inside the balancer adapter: the machinery that
 * mod_proxy_beacon_balancer.c, _recycle.c and _restore.c share
 * (mod_proxy_beacon_target.c). Nothing else includes this.
 */
#ifndef MOD_PROXY_BEACON_TARGET_H
#define MOD_PROXY_BEACON_TARGET_H

#include "mod_proxy_beacon_balancer.h"
#include "mod_proxy_beacon_registry.h"

#include <mod_proxy.h>

struct beacon_target {
    server_rec *s;
    proxy_server_conf *conf;
    proxy_balancer *b;
    beacon_registry *registry;
    beacon_member_policy policy;
};

/* The flags balancer-manager gives the admin; Disabled is beacon's. */
#define BEACON_ADMIN_FLAGS                                                  \
    (PROXY_WORKER_STOPPED | PROXY_WORKER_DRAIN | PROXY_WORKER_HOT_STANDBY | \
     PROXY_WORKER_HOT_SPARE | PROXY_WORKER_IGNORE_ERRORS)

/* Whether this httpd expires cached backend addresses (2.4.59 and later),
 * which renaming a slot relies on. */
int beacon_target_addresses_expire(void);

/* The registry entry of url in t's balancer, or NULL: beacon's members
 * are those that have one. */
beacon_entry *beacon_target_entry(const beacon_target *t, const char *url);

/* Whether a worker's name is the member canonical url names (the admin
 * may spell a BalancerMember otherwise). */
int beacon_target_names(const char *name, const char *url);

/* This child's worker named url, or NULL. */
proxy_worker *beacon_target_find(const beacon_target *t, const char *url);

/* The shared slot entry e names, when it still holds e's member (same
 * salted hash), else NULL. */
proxy_worker_shared *beacon_target_slot(const beacon_target *t,
                                        const beacon_entry *e);

/* The balancer's locks, logged when one fails: the thread lock alone
 * (this child's member list), or balancer-manager's order, the thread
 * lock then the global lock (anything shared). */
apr_status_t beacon_target_thread_lock(beacon_target *t);
void beacon_target_thread_unlock(beacon_target *t);
apr_status_t beacon_target_lock(beacon_target *t);
void beacon_target_unlock(beacon_target *t);

/* This child's member list, current and held still under the thread
 * lock; beacon_target_thread_unlock() after. */
apr_status_t beacon_target_lock_members(beacon_target *t);

/*
 * Defines url in the balancer with a growth slot of its own, as
 * balancer-manager's add does, with beacon's member settings and a salted
 * identity hash; initializing it is the caller's business. NULL on
 * failure, with *result and *why (from p) saying why, nothing left behind.
 */
proxy_worker *beacon_target_share_new(beacon_target *t, const char *url,
                                      apr_pool_t *p, beacon_add_result *result,
                                      const char **why);

/*
 * Appends w, whole, to this child's member list. Request threads walk the
 * list without a lock (httpd's election, balancer-manager's pages), so the
 * slot is written before the count that makes it visible, and a full list
 * is replaced by a bigger copy (from pool) rather than grown in place; the
 * old one stays valid for a walk in progress. Under the thread lock.
 */
void beacon_target_list(proxy_balancer *b, proxy_worker *w, apr_pool_t *pool);

/* Takes w off this child's member list; and undoes a partial add (its
 * slot released when have_slot). */
void beacon_target_unlist(proxy_balancer *b, const proxy_worker *w);
void beacon_target_forget_worker(proxy_balancer *b, const proxy_worker *w,
                                 proxy_worker_shared *shm, int have_slot,
                                 unsigned idx);

/* maxattempts as httpd sets it for static members, while the value is
 * beacon's (not the configuration's, nor typed into balancer-manager). */
void beacon_target_count_failover(beacon_target *t);

/* Registry bookkeeping: where e's member lives; and beacon taking it out
 * of rotation or back (when, and httpd's elected count then). */
void beacon_target_note_slot(beacon_entry *e, const proxy_worker_shared *shm);
void beacon_target_mark_out(beacon_entry *e, const proxy_worker_shared *shm,
                            int out);

/* Under the balancer's locks: gives the member of e (slot shm) the route
 * and load factor its backend announces, where the member's differ. A
 * route another member has is taken from it when beacon took that one
 * out of rotation (logged at info); else refused (logged at most every
 * 10 s per member) and tried again with the next announcement. Logs each
 * change. */
void beacon_target_apply_attrs(beacon_target *t, beacon_entry *e,
                               proxy_worker_shared *shm,
                               const beacon_member_attrs *attrs);

/* Whether attrs say something the member in slot shm does not have. */
int beacon_target_attrs_differ(const proxy_worker_shared *shm,
                               const beacon_member_attrs *attrs);

/* Sets or clears Disabled, and nothing else, of a shared status word. */
void beacon_target_set_disabled_flag(proxy_worker_shared *shm, int disabled);

#endif /* MOD_PROXY_BEACON_TARGET_H */
