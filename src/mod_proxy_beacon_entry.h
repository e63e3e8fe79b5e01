/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The member registry's persisted layout (mod_proxy_beacon_registry.h):
 * what one entry keeps of a member beacon created, and the registry's
 * header. Plain values and no httpd header, so that the balancer wing's
 * decisions (mod_proxy_beacon_decide.h) read an entry as their unit tests
 * write one.
 */
#ifndef MOD_PROXY_BEACON_ENTRY_H
#define MOD_PROXY_BEACON_ENTRY_H

#include "beacon.h"

#include <stddef.h>

/* The registry is a persisted layout: the sizes of its copies of httpd's
 * fields are fixed here (mod_proxy_beacon_worker.c checks them against
 * httpd's), so that no httpd header changes it. */
#define BEACON_SLOT_ROUTE_SIZE 64     /* a member's route, redirect, hcuri */
#define BEACON_SLOT_SCHEME_SIZE 16    /* its hcexpr */
#define BEACON_BALANCER_NAME_SIZE 96  /* "balancer://name" */

/* A member's claimed contexts as ctx= carries them, with the NUL. */
#define BEACON_CLAIMS_SIZE (BEACON_CTX_MAX_PATHS * (BEACON_CTX_PATH_MAX + 1))

/* What balancer-manager lets an admin set on a member, kept so that a
 * restart gives it back (BalancerPersist or not). */
typedef struct {
    int saved;                 /* the fields below were taken */
    unsigned int flags;        /* the admin's status flags (ADMIN_FLAGS) */
    int lbfactor;
    int lbset;
    apr_int32_t method;        /* httpd's hcmethod_t */
    apr_interval_time_t interval;
    int passes;
    int fails;
    char route[BEACON_SLOT_ROUTE_SIZE];
    char redirect[BEACON_SLOT_ROUTE_SIZE];
    char hcuri[BEACON_SLOT_ROUTE_SIZE];
    char hcexpr[BEACON_SLOT_SCHEME_SIZE];
} beacon_admin_settings;

typedef enum {
    BEACON_ENTRY_MEMBER = 1,   /* a member, named url */
    BEACON_ENTRY_RECYCLING,    /* slot being renamed from url to next_url */
    BEACON_ENTRY_MARK          /* no member: the replay mark (high_ts, as of
                                * last_heard) of a url whose slot went to
                                * another, kept until it is stale */
} beacon_entry_state;

typedef struct {
    apr_uint32_t magic;        /* the layout's mark; anything else: free */
    apr_uint32_t version;
    apr_uint32_t state;        /* beacon_entry_state */
    apr_uint32_t out;          /* beacon took it out of rotation */
    apr_uint32_t forgotten;    /* silent past ProxyBeaconForget */
    apr_int32_t slot;          /* its growth slot (shm index) */
    apr_uint32_t hash_def;     /* its salted identity hash */
    apr_uint32_t hash_fnv;
    apr_time_t last_heard;     /* wall clock of its last announcement */
    apr_time_t out_since;      /* wall clock when beacon took it out */
    apr_uint64_t elected_at_out; /* httpd's elected count then */
    apr_int64_t high_ts;       /* its replay high-water mark */
    beacon_admin_settings admin;
    apr_uint32_t announced_flags; /* N or H that an announced state set */
    apr_time_t route_refused_at; /* last "route already used" line */
    apr_time_t lbfactor_changed_at; /* the last change of its factor that
                               * an announcement made; 0: none yet */
    apr_time_t ramp_since;     /* a slow start began (wall clock); 0: none */
    apr_int32_t ramp_base;     /* the factor it leads to; 0: not yet known */
    apr_int32_t ramp_unused;
    char unused[BEACON_SLOT_ROUTE_SIZE - 2 * sizeof(apr_time_t) -
                2 * sizeof(apr_int32_t)]; /* with the 4 fields above:
                               * version 3's announced route */
    char balancer[BEACON_BALANCER_NAME_SIZE];
    char url[BEACON_URL_MAX];
    char next_url[BEACON_URL_MAX];
} beacon_entry;

/* The registry as a whole: its layout's version, and what beacon wrote
 * of the balancer itself, so that a change the admin made since is told
 * from beacon's own (what the balancer's shared state cannot say). */
typedef struct {
    apr_uint32_t magic;        /* the header's mark */
    apr_uint32_t version;
    apr_int32_t max_attempts;  /* maxattempts beacon set last; -1: never */
} beacon_registry_header;

/* Version 4's layout: the field carved out of unused[] keeps its size. */
_Static_assert(offsetof(beacon_entry, balancer) -
                   offsetof(beacon_entry, lbfactor_changed_at) ==
               BEACON_SLOT_ROUTE_SIZE, "an entry's layout is persisted");

#endif /* MOD_PROXY_BEACON_ENTRY_H */
