/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What the status pages show, whatever their format: the receivers'
 * records as this child derives them (time since the last announcement,
 * lease left, httpd's flags), their counts, and the names of beacon's
 * events. The request is served by any child; the data comes from the
 * shared memory the watchdog owners publish to, and the worker flags from
 * the balancer as this child sees it.
 */
#ifndef MOD_PROXY_BEACON_VIEW_H
#define MOD_PROXY_BEACON_VIEW_H

#include "mod_proxy_beacon_receiver.h"
#include "mod_proxy_beacon_sender.h"

/* The events' keys in JSON ("added") and in ?auto ("Added"). */
extern const char *const beacon_event_ids[BEACON_EV_COUNT];
extern const char *const beacon_event_keys[BEACON_EV_COUNT];

/* A record's state as the pages name it ("active", "evicted", ...). */
const char *beacon_view_state_name(apr_int32_t state);

double beacon_view_seconds(apr_interval_time_t t);

/* One record as shown: the shared copy plus what this child derives. */
typedef struct {
    const beacon_status_record *rec;
    double since;         /* seconds since the last announcement */
    double lease_left;    /* < 0: no lease (timeout 0, or not active) */
    double retry_in;      /* < 0: no retry pending */
    const char *flags;    /* httpd's worker flags, NULL when no worker */
    int lbfactor;         /* the factor in force, hundredths; 0: no worker */
    int slow_start;       /* a slow start's share of it now, percent; 0:
                           * none */
    int ours;             /* created by beacon: the "Bcn" mark */
} beacon_shown_record;

typedef struct {
    const beacon_receiver_view *v;
    beacon_shown_record *rows;
    unsigned nrows;
    unsigned active, evicted, pending, not_managed;
    int growth_used, growth_free; /* -1 in log-only mode */
    int growth_recyclable;        /* slots of long-gone members, now */
    int reserved, reserved_free;  /* slots=, and of those the free ones
                                   * (placeholders); -1 in log-only mode */
} beacon_shown_receiver;

/*
 * The receivers of server only (NULL: every server), as shown; returns
 * how many. with_flags: also httpd's flags of each member, which take the
 * balancer's lock and a walk of its members per receiver.
 */
int beacon_view_gather(request_rec *r, const server_rec *only, int with_flags,
                       beacon_shown_receiver **shown);

/* A member that claims a routed context, and its state as the records
 * show it ("active", "evicted", "leaving", ...). */
typedef struct {
    const char *url;
    const char *state;
} beacon_shown_claimant;

/* A context routed in a receiver's virtual host: where it goes, and who
 * claims it. */
typedef struct {
    const char *context;
    const char *balancer;           /* "balancer://NAME" */
    beacon_shown_claimant *members;
    int nmembers;
} beacon_shown_context;

/* The contexts the shown receivers' virtual hosts route, by virtual host
 * then context; returns how many. */
int beacon_view_contexts(request_rec *r, const beacon_shown_receiver *shown,
                         int n, beacon_shown_context **contexts);

/* Whether word is one of the words of httpd's flag text ("Init Dis Stop "),
 * the words of mod_proxy's proxy_wstat_tbl (proxy_util.c). */
int beacon_view_has_flag(const char *flags, const char *word);

/*
 * Whether an administrator holds the member out of normal rotation,
 * whatever its lease says: httpd's Stopped, Drain, hot standby or hot
 * spare (balancer-manager's S, N, H, R, which beacon never sets), or
 * Disabled where it is not beacon's (on a member beacon does not manage,
 * or on an active one, whose Disabled beacon cleared). Not the error and
 * health-check flags: those are httpd's, not a person's.
 */
int beacon_view_admin_held(const beacon_shown_record *row);

/* httpd's flag text without its trailing space ("Init Ok "). */
const char *beacon_view_trimmed(apr_pool_t *p, const char *flags);

/* A load factor in hundredths as httpd writes it ("2.50", from p). */
const char *beacon_view_factor(apr_pool_t *p, int hundredths);

/* "balancer://NAME" of a receiver, or NULL in log-only mode. */
const char *beacon_view_balancer(apr_pool_t *p, const beacon_receiver_view *v);

/* A sender's ProxyBeaconAddress names, space-separated. */
const char *beacon_view_targets(apr_pool_t *p, const beacon_server_conf *conf);

/* A reach list's entries, space-separated; NULL for none (the receiver's
 * defaults, or no narrowing by the balancer). */
const char *beacon_view_allow(apr_pool_t *p, const beacon_reach_t *reach);

#endif /* MOD_PROXY_BEACON_VIEW_H */
