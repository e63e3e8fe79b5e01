/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* Helpers the receiver and the sender share; see mod_proxy_beacon_util.h. */

#include "mod_proxy_beacon_util.h"

#include <apr_strings.h>
#include <ap_mpm.h>
#include <mpm_common.h>
#include <scoreboard.h>
#include <pthread.h>
#include <signal.h>

const char *beacon_util_held_back(apr_pool_t *p, unsigned suppressed)
{
    return suppressed ? apr_psprintf(p, " (and %u more since the last report)",
                                     suppressed)
                      : "";
}

const char *beacon_util_refused_by(apr_pool_t *p, const beacon_reach_gate_t *gate,
                                   int by_balancer, const char *balancer)
{
    if (by_balancer < 0) {
        return ""; /* no list refused it (a reserved slot's name) */
    }
    if (by_balancer) {
        return apr_pstrcat(p, " (allow= of ", balancer, ")", NULL);
    }
    return gate->receiver ? " (ProxyBeaconAllow)" : "";
}

apr_status_t beacon_util_watchdog_start(apr_pool_t *pconf, const char *name,
                                        apr_interval_time_t interval, void *data,
                                        ap_watchdog_callback_fn_t *callback)
{
    APR_OPTIONAL_FN_TYPE(ap_watchdog_get_instance) *get_instance =
        APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance);
    APR_OPTIONAL_FN_TYPE(ap_watchdog_register_callback) *register_callback =
        APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_register_callback);
    ap_watchdog_t *watchdog;
    apr_status_t rv;

    /* a singleton: one child of the generation runs it at a time */
    rv = get_instance(&watchdog, name, 0, 1, pconf);
    if (rv == APR_SUCCESS) {
        rv = register_callback(watchdog, interval, data, callback);
    }
    return rv;
}

void beacon_util_block_stop_signals(void)
{
    sigset_t stop;

    sigemptyset(&stop);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, AP_SIG_GRACEFUL);
    sigaddset(&stop, AP_SIG_GRACEFUL_STOP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
}

int beacon_util_generation_replaced(void)
{
    int my_generation;

    return ap_scoreboard_image != NULL &&
           ap_mpm_query(AP_MPMQ_GENERATION, &my_generation) == APR_SUCCESS &&
           ap_scoreboard_image->global->running_generation != my_generation;
}

int beacon_util_view_shows(const server_rec *only, const server_rec *s)
{
    return only == NULL || s == only;
}
