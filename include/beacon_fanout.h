/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: fan-out, a sender's datagrams to every address of every
 * proxy name (lib/beacon_fanout.c).
 */
#ifndef BEACON_FANOUT_H
#define BEACON_FANOUT_H

#include "beacon_common.h"

#include <apr_network_io.h>
#include <apr_pools.h>
#include <apr_thread_proc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Fan-out: a sender's datagrams to every address of every proxy name  */

#define BEACON_FANOUT_MAX_ADDRS 64  /* addresses used per name; more are cut */
#define BEACON_FANOUT_KEEP_ROUNDS 3 /* failed lookups a name keeps its set */
#define BEACON_SOCKADDR_TEXT_MAX 56 /* "[v6]:port" and its NUL */

/* One destination, as sendto() takes it. */
typedef struct {
    union {
        struct sockaddr sa;
        struct sockaddr_in sin;
        struct sockaddr_in6 sin6;
    } u;
    apr_uint32_t len;          /* of u as used: sin's or sin6's size */
} beacon_sockaddr_t;

/* "127.0.0.2:5555" or "[::1]:5555" into buf; returns buf. */
const char *beacon_sockaddr_text(const beacon_sockaddr_t *a, char *buf,
                                 apr_size_t size);

/* What one lookup of a name found. */
typedef struct {
    apr_status_t status;       /* APR_SUCCESS, or why nothing was found */
    unsigned n;                /* addrs[0..n): distinct, in the resolver's order */
    unsigned cut;              /* answers past the cap (a repeat counts again) */
    beacon_sockaddr_t addrs[BEACON_FANOUT_MAX_ADDRS];
} beacon_lookup_t;

/*
 * Looks host up: every A and AAAA address, each once, the first
 * BEACON_FANOUT_MAX_ADDRS kept; as the system resolver's AI_ADDRCONFIG
 * has it, AAAA records only on a host with an IPv6 address (besides
 * ::1), A records only on one with an IPv4 address. The one step of the fan-out that blocks
 * (DNS): callers run it where no announcement waits for it. Scratch memory
 * from p. Nothing found is APR_ENOENT.
 */
void beacon_lookup(beacon_lookup_t *r, const char *host, apr_port_t port,
                   apr_pool_t *p);

/* Adds one address a resolver found to r (r->n and r->cut start at 0):
 * one already there is skipped, one past the cap counted in r->cut. */
void beacon_lookup_add(beacon_lookup_t *r, const beacon_sockaddr_t *a);

typedef enum {
    BEACON_NAME_PENDING = 0,   /* not looked up yet */
    BEACON_NAME_RESOLVED,      /* the last lookup found addresses */
    BEACON_NAME_KEPT,          /* lookups fail; the last good set is used */
    BEACON_NAME_FAILED         /* no address: never found, or kept too long */
} beacon_name_state_t;

/* "pending", "resolved", "kept" or "failed", as status pages say it. */
const char *beacon_name_state_name(beacon_name_state_t state);

typedef struct {
    beacon_sockaddr_t to;
    apr_uint32_t sent, errors; /* datagrams sent to it, and failed */
    int duplicate;             /* an earlier name or entry has it: not sent */
} beacon_fanout_addr_t;

typedef struct {
    const char *spec;          /* as configured, for messages */
    const char *host;
    apr_port_t port;
    int literal;               /* an IP address: used as is, never looked up */
    beacon_name_state_t state;
    unsigned failed_rounds;    /* lookups failed in a row */
    apr_uint32_t lookup_failures; /* in all */
    apr_status_t last_error;   /* of the last failed lookup */
    unsigned cut;              /* answers past the cap, last good lookup */
    unsigned naddrs;
    beacon_fanout_addr_t addrs[BEACON_FANOUT_MAX_ADDRS];
} beacon_fanout_name_t;

/* "A, B, C": every address of name, each as beacon_sockaddr_text writes
 * it, cut short to fit size; returns buf. BEACON_ADDRESS_LIST_MAX holds
 * them all. */
#define BEACON_ADDRESS_LIST_MAX \
    (BEACON_FANOUT_MAX_ADDRS * (BEACON_SOCKADDR_TEXT_MAX + 2))
const char *beacon_fanout_name_addresses(const beacon_fanout_name_t *name,
                                         char *buf, apr_size_t size);

/*
 * Every proxy one sender names, with the addresses each resolves to and
 * what was sent to each. A plain block (the module keeps it in shared
 * memory for the status pages), written by one thread at a time under
 * the caller's lock; readers elsewhere use beacon_fanout_read.
 */
typedef struct {
    volatile apr_uint32_t version; /* odd while an update writes */
    unsigned nnames;
    beacon_fanout_name_t names[1]; /* nnames of them */
} beacon_fanout_t;

/* Bytes for a fan-out of nnames names (at least 1). */
apr_size_t beacon_fanout_size(unsigned nnames);

/* Makes f (beacon_fanout_size(nnames) bytes) an empty fan-out. */
void beacon_fanout_init(beacon_fanout_t *f, unsigned nnames);

/*
 * Names destination i. An IP address is resolved here, once; any other
 * host waits for beacon_fanout_update. spec and host must outlive f.
 */
void beacon_fanout_name(beacon_fanout_t *f, unsigned i, const char *spec,
                        const char *host, apr_port_t port);

/* What an update changed, for the caller's log. */
typedef struct {
    unsigned added, removed;   /* addresses */
    unsigned cut;              /* found past the cap, not used */
    int kept;                  /* the lookup failed; the set stays */
    int lost;                  /* failed once too often: the set is dropped */
} beacon_fanout_change_t;

/*
 * Applies a lookup of name i. Found addresses replace the set (those that
 * stay keep their counts); a failed or empty lookup keeps the last good
 * set for BEACON_FANOUT_KEEP_ROUNDS lookups in a row, then drops it. An
 * address two names share is sent to once, for the first name.
 */
void beacon_fanout_update(beacon_fanout_t *f, unsigned i,
                          const beacon_lookup_t *r,
                          beacon_fanout_change_t *change);

/* Sends one datagram to one address of f->names[name]: APR_SUCCESS, or
 * why not. */
typedef apr_status_t (*beacon_send_fn)(void *ctx, unsigned name,
                                       const beacon_sockaddr_t *to,
                                       const char *buf, apr_size_t len);

/*
 * Sends buf once to every address of every name (duplicates once),
 * counting each address's sent and errors; returns how many got it.
 * Allocates nothing: the leaving datagram may go from a signal handler.
 */
unsigned beacon_fanout_send(beacon_fanout_t *f, const char *buf,
                            apr_size_t len, beacon_send_fn send, void *ctx);

/* A consistent copy of f, which another thread may update meanwhile;
 * copy has beacon_fanout_size(f->nnames) bytes. */
void beacon_fanout_read(const beacon_fanout_t *f, beacon_fanout_t *copy);

/*
 * Starts fn(thread, arg) in a detached thread, for a lookup that may block
 * for as long as DNS takes: nothing waits for it at exit. own is an
 * unmanaged pool (apr_pool_create_unmanaged_ex) the caller made for this
 * thread alone and gives over to it, so that it shares no allocator with
 * another thread. Used by the module's and beaconctl's lookups alike.
 */
apr_status_t beacon_lookup_thread_start(apr_pool_t *own, apr_thread_start_t fn,
                                        void *arg);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_FANOUT_H */
