/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Private header of the mod_proxy_beacon adapter. Every adapter source
 * includes it first, so that all their log lines belong to the module and
 * "LogLevel proxy_beacon:debug" works.
 *
 * The adapter glues libbeacon to httpd: configuration, the mod_watchdog
 * thread, the UDP socket and mod_proxy_balancer. Protocol decisions are
 * libbeacon's; nothing here parses a datagram.
 */
#ifndef MOD_PROXY_BEACON_H
#define MOD_PROXY_BEACON_H

#include <httpd.h>
#include <http_config.h>
#include <http_log.h>

#include "beacon.h"

APLOG_USE_MODULE(proxy_beacon);

/* Our own tag space, in APLOGNO's shape: "BCN00012: ". */
#define BCNLOGNO(n) "BCN" #n ": "

#define BEACON_DEFAULT_MAX_SKEW apr_time_from_sec(30)
#define BEACON_DEFAULT_INTERVAL apr_time_from_sec(5)
#define BEACON_MAX_SENDER_TARGETS 16

/* Per-server configuration. Receiver and sender roles are never inherited
 * into virtual hosts; the secret and the timings are. */
typedef struct {
    /* receiver */
    int listen_set;
    const char *listen_host;   /* NULL: inherit this server's address */
    apr_port_t listen_port;    /* 0: inherit this server's port */
    const char *balancer_name; /* bare name; NULL: log-only mode */
    const char *balancer_where;   /* "file:line" for config-time errors */
    apr_interval_time_t timeout;  /* 0 = add-only */
    int timeout_set;
    apr_interval_time_t max_skew;
    int max_skew_set;

    /* sender */
    apr_array_header_t *targets;  /* const char * "host:port" */
    const char *advertise;        /* canonical url, or NULL */
    apr_interval_time_t interval;
    int interval_set;

    /* both: senders sign with keys[0], receivers accept any of them */
    beacon_key_t keys[BEACON_MAX_KEYS];
    unsigned nkeys;
    const char *where;            /* "file:line" of the role directive */
} beacon_server_conf;

typedef struct beacon_receiver beacon_receiver;

/* mod_proxy_beacon.c */
beacon_server_conf *beacon_conf(const server_rec *s);

/* beacon_proxy.c: everything that touches mod_proxy and the balancer. */
typedef enum {
    BEACON_ADD_DONE,          /* created, shared, initialized, confirmed */
    BEACON_ADD_ADOPTED,       /* existed already, created by beacon: enabled */
    BEACON_ADD_NOT_OURS,      /* a member beacon did not create */
    BEACON_ADD_NO_SLOT,       /* growth exhausted */
    BEACON_ADD_FAILED,        /* httpd refused; details logged */
    BEACON_ADD_NOT_CONFIRMED  /* added, but not found afterwards */
} beacon_add_result;

/* Whether mod_proxy's functions resolved (it was loaded before us). */
int beacon_proxy_linked(void);
/* Config-time check of the receiver's balancer; NULL or an error message. */
const char *beacon_proxy_check_balancer(apr_pool_t *p, server_rec *s,
                                        const char *name);
/* The balancer's current members as beacon sees them, for adoption. */
typedef struct {
    const char *url;
    int disabled;
} beacon_member;

typedef struct beacon_target beacon_target;

/* In post_config: the receiver's balancer and its registry of members. */
beacon_target *beacon_proxy_target(apr_pool_t *pconf, server_rec *s,
                                   const char *balancer_name, apr_port_t port);
/* In post_config, before any child exists: puts back the members the
 * persisted registry lists, so a restart loses none. Returns how many. */
int beacon_proxy_restore(beacon_target *t, apr_pool_t *pconf);
void beacon_proxy_sync(beacon_target *t);
beacon_add_result beacon_proxy_add(beacon_target *t, const char *url,
                                   apr_pool_t *worker_pool);
apr_status_t beacon_proxy_set_disabled(beacon_target *t, const char *url,
                                       int disabled);
/* Members carrying beacon's mark; returns how many were written. */
int beacon_proxy_marked_members(beacon_target *t, apr_pool_t *p,
                                beacon_member **members);
/* Growth of the balancer: slots in use by runtime members, and free. */
void beacon_proxy_growth(beacon_target *t, int *used, int *free_slots);
/* httpd's flag text for a member ("Init Ok "), or NULL when absent. */
const char *beacon_proxy_worker_flags(beacon_target *t, const char *url,
                                      apr_pool_t *p);

/* ------------------------------------------------------------------ */
/* What every child may read: written by the owner of the watchdog only,
 * read by the status pages in any child. Anonymous shared memory made in
 * post_config, so all children of a generation map the same block.      */

typedef enum {
    BEACON_EV_ACCEPTED,   /* authenticated, fresh, not replayed */
    BEACON_EV_HEARTBEAT,  /* accepted without url */
    BEACON_EV_ADDED,
    BEACON_EV_READOPTED,
    BEACON_EV_ADD_FAILED,
    BEACON_EV_EVICTED,
    BEACON_EV_REENABLED,
    BEACON_EV_LEAVING,
    BEACON_EV_TAKEN_OVER, /* members adopted by a new owner */
    BEACON_EV_COUNT
} beacon_event_kind;

typedef struct {
    char url[BEACON_URL_MAX];
    char host[64];            /* as announced: escape before display */
    apr_int64_t pid, seq;     /* -1 when not announced */
    apr_int64_t last_ts;
    apr_time_t last_seen, retry_at;
    apr_int32_t state;        /* beacon_state_t */
} beacon_status_record;

typedef struct {
    volatile apr_uint32_t generation; /* odd while the owner writes rec[] */
    apr_uint32_t nrecords;
    apr_int64_t owner_pid;            /* 0 until a child owns the receiver */
    apr_int32_t listening;
    apr_uint64_t dropped[BEACON_REASON_COUNT];
    apr_uint64_t events[BEACON_EV_COUNT];
    beacon_status_record rec[BEACON_TABLE_CAPACITY];
} beacon_receiver_status;

typedef struct {
    volatile apr_uint32_t sent, errors; /* atomic: lanes may run anywhere */
    apr_time_t last_sent;
    apr_int64_t owner_pid;              /* of the lane that started last */
} beacon_sender_status;

/* A receiver or sender as the status pages show it. */
typedef struct {
    server_rec *s;
    const beacon_server_conf *conf;
    const char *label;                 /* listen address */
    beacon_target *target;             /* NULL in log-only mode */
    const beacon_receiver_status *shared;
} beacon_receiver_view;

typedef struct {
    server_rec *s;
    const beacon_server_conf *conf;
    const beacon_sender_status *shared;
} beacon_sender_view;

/* beacon_receiver.c */
int beacon_receiver_views(apr_pool_t *p, beacon_receiver_view **views);
/* A consistent copy of the owner's records; returns how many. */
unsigned beacon_receiver_records(const beacon_receiver_status *shared,
                                 beacon_status_record *copy);
apr_status_t beacon_receivers_post_config(apr_pool_t *pconf, apr_pool_t *ptemp,
                                          server_rec *s);
void beacon_receivers_child_init(apr_pool_t *pchild, server_rec *s);
int beacon_receivers_sync_request(server_rec *s);

/* mod_proxy_beacon.c */
void beacon_block_stop_signals(void);

/* beacon_sender.c */
const char *beacon_sender_check_target(apr_pool_t *p, const char *spec);
apr_status_t beacon_senders_post_config(apr_pool_t *pconf, server_rec *s);
void beacon_senders_child_init(apr_pool_t *pchild);
void beacon_senders_child_stopping(apr_pool_t *pchild, int graceful);
int beacon_sender_views(apr_pool_t *p, beacon_sender_view **views);

/* beacon_status.c */
void beacon_status_register_hooks(void);

#endif /* MOD_PROXY_BEACON_H */
