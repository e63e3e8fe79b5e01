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

#include "mod_proxy_beacon_util.h"

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
    char unused[BEACON_SLOT_ROUTE_SIZE]; /* version 3's announced route */
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

/* Sets entry i's claims to value[0..len) ("" claims none); returns
 * whether they changed. The owner's only. */
int beacon_registry_claim(const beacon_registry *reg, unsigned i,
                          const char *value, apr_size_t len);

/* Frees the entries that are neither free nor sound (another layout, an
 * unterminated string); returns how many. */
unsigned beacon_registry_damaged(const beacon_registry *reg);

#endif /* MOD_PROXY_BEACON_REGISTRY_H */
