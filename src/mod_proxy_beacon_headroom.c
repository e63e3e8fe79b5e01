/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* The factor ProxyBeaconLBFactor auto announces; see
 * mod_proxy_beacon_headroom.h. */

#include "mod_proxy_beacon_headroom.h"

#include <ap_mpm.h>
#include <scoreboard.h>

/* A worker that serves a connection: not waiting for one, not started,
 * not gone, not being retired (mod_status counts a graceful one idle). */
static int worker_busy(int status)
{
    return status != SERVER_READY && status != SERVER_DEAD &&
           status != SERVER_STARTING && status != SERVER_IDLE_KILL &&
           status != SERVER_GRACEFUL;
}

/*
 * The busy workers of this generation's serving children over
 * MaxRequestWorkers (the MPM's children times their threads), into *u;
 * 0, or -1 when the scoreboard or the MPM cannot say. A child closing
 * its listeners (quiescing) takes no new connection: its workers are no
 * part of what this server can still take.
 */
static int busy_share(double *u)
{
    int server_limit, thread_limit, daemons, threads, generation, i, j;
    int busy = 0;

    if (ap_scoreboard_image == NULL ||
        ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &server_limit) ||
        ap_mpm_query(AP_MPMQ_HARD_LIMIT_THREADS, &thread_limit) ||
        ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons) ||
        ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) ||
        ap_mpm_query(AP_MPMQ_GENERATION, &generation) ||
        daemons < 1 || threads < 1) {
        return -1;
    }
    for (i = 0; i < server_limit; i++) {
        process_score *ps = ap_get_scoreboard_process(i);

        if (ps->pid == 0 || ps->quiescing || ps->generation != generation) {
            continue;
        }
        for (j = 0; j < thread_limit; j++) {
            busy += worker_busy(ap_get_scoreboard_worker_from_indexes(i, j)->status);
        }
    }
    *u = (double)busy / ((double)daemons * threads);
    return 0;
}

int beacon_headroom_sample(beacon_headroom *h, apr_time_t now)
{
    double u;

    if (busy_share(&u) == 0) {
        h->factor = beacon_lbfactor_from_utilization(
            beacon_load_average_add(&h->average, u, now));
    }
    return h->factor;
}
