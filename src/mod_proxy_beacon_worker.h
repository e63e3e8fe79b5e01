/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * httpd's worker primitives, the one part of the module that calls into
 * mod_proxy or reads its structures (mod_proxy_beacon_worker.c; only
 * mod_proxy_beacon_params.c also sets a worker's fields): finding
 * a balancer and its members, the balancer's locks, defining a worker in
 * a growth slot as balancer-manager does, and every read or write of a
 * member's shared slot. No policy of beacon's: what to add, when to take
 * a member out of rotation, is mod_proxy_beacon_balancer.c's, when a slot
 * may be renamed mod_proxy_beacon_recycle.c's, what a restart gives back
 * mod_proxy_beacon_restore.c's.
 *
 * This header needs no mod_proxy.h (which files include it: the seam rule
 * in docs/development.md): its users see httpd's balancer, its workers
 * and their shared slots only as the handles below.
 */
#ifndef MOD_PROXY_BEACON_WORKER_H
#define MOD_PROXY_BEACON_WORKER_H

#include "mod_proxy_beacon_decide.h"
#include "mod_proxy_beacon_params.h"
#include "mod_proxy_beacon_registry.h"

/* One of httpd's balancers, as beacon reaches it. */
typedef struct beacon_worker_balancer beacon_worker_balancer;


/* A worker of this process (httpd's proxy_worker): one beacon is defining,
 * or one httpd read from url as a template. */
typedef struct proxy_worker beacon_worker;


/* The BEACON_ADMIN_FLAGS of flags as balancer-manager's letters ("NH"),
 * for a log line. */
const char *beacon_worker_admin_letters(apr_pool_t *p, unsigned int flags);


/* ------------------------------------------------------------------ */
/* The balancer                                                        */

/* Whether mod_proxy's functions resolved (it was loaded before us). */
int beacon_worker_linked(void);

/* Whether this httpd expires cached backend addresses (2.4.59 and later),
 * which renaming a slot relies on. */
int beacon_worker_addresses_expire(void);

/* At configuration time, balancer://name as the configuration of s
 * defines it: whether it does, what makes it one balancer (virtual hosts
 * that inherit it share it and get the same value), and its growth
 * (ProxySet growth, BalancerGrowth; -1 when undefined). */
int beacon_worker_balancer_defined(apr_pool_t *p, server_rec *s,
                                   const char *name);
const void *beacon_worker_balancer_identity(apr_pool_t *p, server_rec *s,
                                            const char *name);
int beacon_worker_balancer_growth(apr_pool_t *p, server_rec *s,
                                  const char *name);

/* At configuration time, the lbmethod of balancer://name of s, by the
 * name its provider registered ("byrequests", httpd's default, when
 * none is set); NULL when it is undefined. */
const char *beacon_worker_balancer_lbmethod(apr_pool_t *p, server_rec *s,
                                            const char *name);

/* What mod_proxy's own translation would make of request r (ProxyPass
 * in r's <Location>, then the server's, in its order; those mapped
 * encoded were decided before translation): OK when one routes it (r is
 * then proxied as that ProxyPass says), DECLINED when one excludes it
 * ("!"), BEACON_NO_STATIC_ROUTE when none matches. Static configuration
 * always wins over an announced context. */
#define BEACON_NO_STATIC_ROUTE (-100)
int beacon_worker_static_route(request_rec *r);

/* Whether any of those ProxyPass ("!" included) would match r were its
 * path uri; r itself is left as it is. */
int beacon_worker_static_match(request_rec *r, char *uri);

/* In post_config: balancer://name of s (from pconf); NULL when it has no
 * shared memory (yet). */
beacon_worker_balancer *beacon_worker_open(apr_pool_t *pconf, server_rec *s,
                                           const char *name);

/* The balancer's name ("balancer://web"), and the receiver's server. */
const char *beacon_worker_balancer_name(const beacon_worker_balancer *ws);
server_rec *beacon_worker_server(const beacon_worker_balancer *ws);

/* Growth slots of the balancer in use by runtime members, and free. */
void beacon_worker_growth(const beacon_worker_balancer *ws, int *used, int *free_slots);

/* maxattempts in the balancer's shared state, and whether it is in
 * effect, with the members of this child's list it applies to (returned);
 * and setting it (value < 0: only putting it in effect). */
int beacon_worker_failover(const beacon_worker_balancer *ws, int *max_attempts,
                           int *in_effect);
void beacon_worker_set_failover(beacon_worker_balancer *ws, int max_attempts);

/* ------------------------------------------------------------------ */
/* Locks and this child's member list                                  */

/* The balancer's locks, logged when one fails: the thread lock alone
 * (this child's member list), or balancer-manager's order, the thread
 * lock then the global lock (anything shared). */
apr_status_t beacon_worker_thread_lock(beacon_worker_balancer *ws);
void beacon_worker_thread_unlock(beacon_worker_balancer *ws);
void beacon_worker_unlock(beacon_worker_balancer *ws);

/* Both locks, with this child's member list made current: what every
 * change of a member starts with. beacon_worker_unlock() after. */
apr_status_t beacon_worker_hold(beacon_worker_balancer *ws);

/* This child's member list, current and held still under the thread
 * lock; beacon_worker_thread_unlock() after. */
apr_status_t beacon_worker_lock_members(beacon_worker_balancer *ws);

/* Picks up members other processes added, as a request would (taking the
 * thread lock itself, only when the balancer changed). */
void beacon_worker_pick_up(beacon_worker_balancer *ws);

/* Whether a worker's name is the member canonical url names (the admin
 * may spell a BalancerMember otherwise). */
int beacon_worker_names(const char *name, const char *url);

/* The slot of this child's member named url, or NULL. */
beacon_slot *beacon_worker_find(beacon_worker_balancer *ws, const char *url);

/* Whether url is a member of this child's list, initialized. */
int beacon_worker_confirmed(beacon_worker_balancer *ws, const char *url);

/* From now on this process's watchdog thread finds members by an index
 * (built now, under the thread lock) rather than by a walk: for the
 * receiver's owner, which alone renames slots, and for the parent as it
 * restores members (no child exists yet). */
void beacon_worker_index(beacon_worker_balancer *ws);

/* Members of this child's list: how many, and the slot of the i-th. */
int beacon_worker_count(const beacon_worker_balancer *ws);
beacon_slot *beacon_worker_at(const beacon_worker_balancer *ws, int i);

/* A member named url other than the slot kept: one the configuration
 * names (BalancerMember), not beacon's. */
int beacon_worker_configured(beacon_worker_balancer *ws, const char *url,
                             const beacon_slot *kept);

/* ------------------------------------------------------------------ */
/* Slots                                                               */

/* The shared slot registry entry e names, when it still holds e's member
 * (same salted hash), else NULL; and noting in e where its member lives,
 * for a restart or a recycling to find it. */
beacon_slot *beacon_worker_slot(const beacon_worker_balancer *ws, const beacon_entry *e);
void beacon_worker_note_slot(beacon_entry *e, const beacon_slot *slot);

/* What the policy reads of a slot. */
void beacon_worker_view(const beacon_slot *slot, beacon_slot_view *v);


void beacon_worker_look(const beacon_worker_balancer *ws, const beacon_slot *slot,
                        const char *route, beacon_slot_look *look);


void beacon_worker_apply(beacon_slot *slot, const beacon_slot_change *c);

/* The admin's settings of a slot into *kept, when they differ from it
 * (returns 1), and a slot given them back (nothing when never taken). */
int beacon_worker_take_admin(beacon_admin_settings *kept,
                             const beacon_slot *slot);
void beacon_worker_give_admin(beacon_slot *slot, const beacon_admin_settings *a);

/* In post_config, before any child exists: a restored member's slot in
 * rotation (out: not), and free of the last generation's address expiry
 * (which would hold recycling back). */
void beacon_worker_restart_slot(beacon_slot *slot, int out);

/* In post_config: e's slot, brought back by BalancerPersist, released
 * (and taken off the list); nothing when e has none. */
void beacon_worker_drop_slot(beacon_worker_balancer *ws, const beacon_entry *e);

/* ------------------------------------------------------------------ */
/* Defining and renaming members                                       */

/*
 * Defines url in the balancer with a growth slot of its own, as
 * balancer-manager's add does, with beacon's member settings, params and
 * a salted identity hash; not yet in any list, nor initialized. NULL on
 * failure, with *no_slot set when growth is exhausted and *why (from p)
 * saying why, nothing left behind.
 */
beacon_worker *beacon_worker_share_new(beacon_worker_balancer *ws,
                                       const beacon_member_params *params,
                                       const char *url, apr_pool_t *p,
                                       int *no_slot, const char **why);

/*
 * At configuration time (post_config, before mod_proxy_balancer's sets up
 * the balancer's shared memory): url defined in balancer://name of s as a
 * BalancerMember line defines one, with beacon's member settings and
 * params, out of rotation and stopped (BEACON_PLACEHOLDER_FLAGS). NULL,
 * or why not (from p).
 */
const char *beacon_worker_define_reserved(apr_pool_t *p, server_rec *s,
                                          const char *name,
                                          const beacon_member_params *params,
                                          const char *url);

/* The identity hash httpd gives a configured member named url (its
 * "def" hash, as a registry entry keeps it). */
apr_uint32_t beacon_worker_identity_of(const char *url);

/* The shared slot of a worker share_new defined. */
beacon_slot *beacon_worker_slot_of(beacon_worker *w);

/*
 * Makes a worker share_new defined a member: initialized, on this child's
 * list, and told to the other children (they sync on their next request).
 * On failure (*why from p) it is undone as if never defined.
 */
apr_status_t beacon_worker_commit(beacon_worker_balancer *ws, beacon_worker *w,
                                  apr_pool_t *p, const char **why);

/* In post_config (no child yet): appends w to the list, uninitialized, as
 * httpd's own configuration does with its members. */
void beacon_worker_list(beacon_worker_balancer *ws, beacon_worker *w);

/* httpd's reading of url (scheme, host, port) with params, as a worker it
 * pushes nowhere (from p); NULL when httpd refuses it. */
beacon_worker *beacon_worker_template(const beacon_worker_balancer *ws,
                                      const beacon_member_params *params,
                                      const char *url, apr_pool_t *p);

/* Whether the slot's backend is at the template's host and port: a pooled
 * connection to it would pass httpd's check whatever the scheme. */
int beacon_worker_same_origin(const beacon_slot *slot,
                              const beacon_worker *tmpl);

/* Renames a slot in place to the template's url, clearing what belonged
 * to the old member (mod_proxy_beacon_recycle.c says when that is safe). */
void beacon_worker_rename(beacon_worker_balancer *ws, beacon_slot *slot,
                          const beacon_worker *tmpl);

/* A member as a status page shows it. */
typedef struct {
    const char *flags;  /* httpd's flag text ("Init Ok ") */
    int lbfactor;       /* the factor in force, hundredths */
    int slow_start;     /* percent of its factor a slow start gives it now;
                         * 0: none (mod_proxy_beacon_balancer.c's) */
} beacon_member_shown;

/* Every member of this child's list as a status page shows it
 * (beacon_member_shown), by canonical url (from p): one walk for a whole
 * page. */
apr_hash_t *beacon_worker_members_shown(beacon_worker_balancer *ws,
                                        apr_pool_t *p);

#endif /* MOD_PROXY_BEACON_WORKER_H */
