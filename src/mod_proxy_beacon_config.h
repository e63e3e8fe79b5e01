/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The directives and the per-server configuration they fill. Each
 * directive checks its own value (so "apache2 -t" reports it with file and
 * line); checks across directives and modules run in check_config
 * (mod_proxy_beacon.c).
 */
#ifndef MOD_PROXY_BEACON_CONFIG_H
#define MOD_PROXY_BEACON_CONFIG_H

#include "mod_proxy_beacon_params.h"
#include "mod_proxy_beacon_revoke.h"
#include "mod_proxy_beacon_util.h"

#define BEACON_MAX_SENDER_TARGETS 16

/* A proxy a sender announces to, as ProxyBeaconAddress names it. */
typedef struct {
    const char *spec;  /* "host:port" as configured, for messages */
    char *host;
    apr_port_t port;
} beacon_dest;

/* A time the configuration may leave to the default or inherit. */
#define BEACON_DEFAULT_FORGET apr_time_from_sec(3600)

typedef struct {
    apr_interval_time_t value;
    int set;                      /* given in this server */
} beacon_interval;

/* What a sender announces of itself besides its url (route=, lbfactor=),
 * as written in the configuration: the wire carries it as it is. */
typedef struct {
    const char *value;            /* NULL: not announced */
    const char *where;            /* "file:line", for config-time errors */
} beacon_announced;

/* One ProxyBeaconBalancer line: a balancer a receiver feeds, the service
 * whose announcements go to it (NULL: those that name none), and the keys
 * that service's datagrams are verified with (none: the receiver's). */
typedef struct {
    const char *name;             /* bare balancer name */
    const char *service;          /* service=, or NULL */
    beacon_key_t keys[BEACON_MAX_KEYS]; /* secret= */
    unsigned nkeys;
    unsigned masters;             /* bit i: keys[i] is a master (derive:) */
    beacon_revoked *revoked;      /* revoke=, or NULL */
    beacon_allow_t *contexts;     /* contexts= its members may claim; NULL:
                                   * it routes none, and ctx= is ignored */
    int slots;                    /* slots=: member slots reserved at start
                                   * (placeholders); 0: none, growth only */
    beacon_reach_t *allow;        /* allow=: narrows the receiver's
                                   * ProxyBeaconAllow; NULL: no narrowing */
    beacon_interval slowstart;    /* slowstart=: the receiver's when unset */
    const char *where;            /* "file:line" for config-time errors */
} beacon_balancer_conf;

/* Per-server configuration. Receiver and sender roles are never inherited
 * into virtual hosts; the secret and the timings are. */
typedef struct {
    /* receiver */
    int listen_set;
    const char *listen_host;   /* NULL: inherit this server's address */
    apr_port_t listen_port;    /* 0: inherit this server's port */
    apr_array_header_t *balancers; /* beacon_balancer_conf; NULL: log-only */
    beacon_interval timeout;      /* 0 = add-only */
    beacon_interval max_skew;
    beacon_interval forget;       /* 0 = never; see beacon_config_forget_interval */
    beacon_interval slowstart;    /* ProxyBeaconSlowStart; 0: none */
    beacon_member_params *member_params; /* ProxyBeaconMemberParams, or NULL */
    beacon_reach_t *allow;        /* ProxyBeaconAllow, or NULL: the defaults
                                   * (beacon_reach_t); inherited */
    struct beacon_route_table *routes; /* its route table, from post_config on
                                   * (mod_proxy_beacon_routes.h); NULL:
                                   * it routes no contexts */

    /* sender */
    apr_array_header_t *targets;  /* beacon_dest */
    const char *advertise;        /* canonical url, or NULL */
    beacon_announced route;       /* ProxyBeaconRoute */
    beacon_announced lbfactor;    /* ProxyBeaconLBFactor: a factor, or
                                   * BEACON_LBFACTOR_AUTO */
    beacon_announced ctx;         /* ProxyBeaconContexts, joined: ctx= */
    apr_array_header_t *contexts; /* its paths (const char *), each once */
    beacon_interval interval;

    beacon_revoked *revoked;      /* ProxyBeaconRevoke, or NULL; a virtual
                                   * host's adds to the main server's */

    /* both: senders sign with keys[0], receivers accept any of them */
    beacon_key_t keys[BEACON_MAX_KEYS];
    unsigned nkeys;
    unsigned masters;             /* bit i: keys[i] is a master (derive:):
                                   * receivers only */
    const char *inline_secret;    /* "file:line" of a secret in the config */
    const char *service;          /* ProxyBeaconService, or NULL; a role's */
    const char *where;            /* "file:line" of the role directive */
} beacon_server_conf;

beacon_server_conf *beacon_config_of(const server_rec *s);

/* ProxyBeaconLBFactor auto: the sender announces its own load
 * (mod_proxy_beacon_sender.c says how). */
#define BEACON_LBFACTOR_AUTO "auto"
int beacon_config_lbfactor_auto(const beacon_server_conf *conf);

/* The receiver's ProxyBeaconBalancer lines, and line i of them. */
int beacon_config_balancer_count(const beacon_server_conf *conf);
const beacon_balancer_conf *beacon_config_balancer_at(const beacon_server_conf *conf,
                                                      int i);

/* The service of balancer i: its service=, else, for a receiver's only
 * balancer, ProxyBeaconService (what that directive always meant); NULL:
 * the balancer of the announcements that name no service. */
const char *beacon_config_balancer_service(const beacon_server_conf *conf, int i);

/*
 * The key ring a receiver verifies with (wire format 1.2): its
 * ProxyBeaconSecret keys, and a service for each balancer that has one,
 * with its secret= keys; lane[k] is the balancer of ring service k, and
 * *default_lane the balancer without a service (-1: none, and a datagram
 * without svc= is a wrong service). lane has room for every balancer.
 * NULL, or what the ring refused.
 */
const char *beacon_config_receiver_ring(const beacon_server_conf *conf,
                                        beacon_ring_t *ring, int *lane,
                                        int *default_lane);

/* slots= bounds: a balancer reserves 1 to BEACON_SLOTS_MAX, a receiver
 * BEACON_RECEIVER_SLOTS_MAX in all (its tables are sized from them). */
#define BEACON_SLOTS_MAX 5000
#define BEACON_RECEIVER_SLOTS_MAX 20000

/* The shared memory the receivers' balancers may take in all (status
 * records, registries, claims): past it apache2 -t refuses, as a
 * configuration nobody means (2,000 balancers of one slot). */
#define BEACON_MIB ((apr_size_t)1024 * 1024)
#define BEACON_SHM_MAX (1024 * BEACON_MIB)

/* The urls one balancer of a receiver tracks at once (its member table,
 * registry and status records): BEACON_TABLE_CAPACITY for members in
 * growth slots, urls waiting for a slot and replay marks, plus its own
 * reserved slots; bc NULL: a log-only receiver's. Another balancer's
 * slots= is never this one's to hold, so each is sized by what it can
 * hold and a slot costs the same however many services share the
 * receiver. */
unsigned beacon_config_balancer_capacity(const beacon_balancer_conf *bc);

/* The slots= of a receiver's balancers, in all. */
unsigned beacon_config_receiver_slots(const beacon_server_conf *conf);

/* ProxyBeaconForget as set, else its default: an hour, or longer than the
 * lease plus twice the skew window when those are longer. */
apr_interval_time_t beacon_config_forget_interval(const beacon_server_conf *conf);

/*
 * The configuration of s if s has a role of its own to play: NULL for a
 * virtual host that names none of the module's directives, to which httpd
 * hands the main server's configuration itself (roles included; roles are
 * never inherited).
 */
beacon_server_conf *beacon_config_role(const server_rec *s,
                                       const server_rec *main_s);

/* Per directory: what the beacon-status handler shows there. */
typedef struct {
    int status_scope;   /* BEACON_SCOPE_*; unset: the virtual host's */
} beacon_dir_conf;

#define BEACON_SCOPE_UNSET 0
#define BEACON_SCOPE_VHOST 1   /* the receivers and senders of r->server */
#define BEACON_SCOPE_SERVER 2  /* those of every virtual host */

/* Whether the status page at r shows every virtual host's receivers. */
int beacon_config_status_shows_all(const request_rec *r);

/* For the module record. */
extern const command_rec beacon_cmds[];
void *beacon_config_create_server(apr_pool_t *p, server_rec *s);
void *beacon_config_merge_server(apr_pool_t *p, void *basev, void *addv);
void *beacon_config_create_dir(apr_pool_t *p, char *dir);
void *beacon_config_merge_dir(apr_pool_t *p, void *basev, void *addv);

#endif /* MOD_PROXY_BEACON_CONFIG_H */
