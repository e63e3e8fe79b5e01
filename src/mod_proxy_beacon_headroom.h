/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * ProxyBeaconLBFactor auto: the factor a sender announces from its own
 * server's headroom. Ten times a second (the sender's tick) it counts the
 * busy workers in the scoreboard as mod_heartbeat does, divides them by
 * MaxRequestWorkers, smooths that (libbeacon's beacon_load_average_add)
 * and maps it (beacon_lbfactor_from_utilization): 100 idle, 10 saturated.
 */
#ifndef MOD_PROXY_BEACON_HEADROOM_H
#define MOD_PROXY_BEACON_HEADROOM_H

#include <httpd.h>

#include "beacon.h"

typedef struct {
    beacon_load_average_t average;
    volatile apr_int32_t factor; /* hundredths; 0 until the first sample.
                                  * Read by any thread (the leaving is
                                  * sent from a signal handler): one
                                  * aligned word, never torn. */
} beacon_headroom;

/* Takes a sample of the scoreboard at now and updates h->factor; returns
 * it (0 while the scoreboard cannot be read: nothing changes). */
int beacon_headroom_sample(beacon_headroom *h, apr_time_t now);

#endif /* MOD_PROXY_BEACON_HEADROOM_H */
