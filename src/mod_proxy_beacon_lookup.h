/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A sender's name lookups: every ProxyBeaconAddress name that is not an
 * IP address is looked up again every interval, each in a thread of its
 * own, so that a slow or dead resolver never delays an announcement to an
 * address already known, nor the leaving one. What a lookup changes
 * (libbeacon's fan-out rules) goes into the sender's set under its lock.
 */
#ifndef MOD_PROXY_BEACON_LOOKUP_H
#define MOD_PROXY_BEACON_LOOKUP_H

#include <apr_thread_mutex.h>

#include "mod_proxy_beacon_util.h"

/* What a sender shares with its lookup threads. */
typedef struct {
    server_rec *s;                /* for the log */
    beacon_fanout_t *fanout;      /* in shared memory: status pages read it */
    apr_interval_time_t interval; /* between lookups of a name */
    /* Taken around every change and every send of the set; nothing under
     * it allocates, resolves or waits. */
    apr_thread_mutex_t *lock;
    int stopped;                  /* under lock: the lookups end */
    int found_new;                /* under lock: an address was added */
} beacon_fanout_guard;

/*
 * Starts the lookup threads of g's names, in the child that sends. They
 * block the stop signals, as the watchdog's threads do, and end at
 * their next turn once g->stopped is set. A name whose thread cannot start
 * is logged and never looked up.
 */
void beacon_lookup_start_all(beacon_fanout_guard *g);

#endif /* MOD_PROXY_BEACON_LOOKUP_H */
