/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What every part of the mod_proxy_beacon adapter shares, and nothing
 * more: the module's log identity, the rate limit for lines a peer can
 * trigger (its rule is mod_proxy_beacon_decide.h's), and the watchdog
 * plumbing the receiver and the sender both use.
 * Every adapter source includes it (directly or through its own header),
 * so that all their log lines belong to the module and
 * "LogLevel proxy_beacon:debug" works.
 *
 * The adapter glues libbeacon to httpd; protocol decisions are
 * libbeacon's, and nothing in src/ parses a datagram.
 */
#ifndef MOD_PROXY_BEACON_UTIL_H
#define MOD_PROXY_BEACON_UTIL_H

#include <httpd.h>
#include <http_config.h>
#include <http_log.h>
#include <mod_watchdog.h>

#include "beacon.h"
#include "mod_proxy_beacon_decide.h"

APLOG_USE_MODULE(proxy_beacon);

/* Our own tag space, in APLOGNO's shape: "BCN00012: ". httpd's AH
 * numbers are httpd's. */
#define BCNLOGNO(n) "BCN" #n ": "


/* " (and N more since the last report)", or "" when none were held. */
const char *beacon_util_held_back(apr_pool_t *p, unsigned suppressed);

/* Whose list refused a url, for the line that says so: " (allow= of
 * balancer://NAME)", " (ProxyBeaconAllow)", or "" when the defaults or
 * no list (by_balancer < 0: a reserved slot's name) did (their message
 * says so). balancer: "balancer://NAME". */
const char *beacon_util_refused_by(apr_pool_t *p, const beacon_reach_gate_t *gate,
                                   int by_balancer, const char *balancer);

/*
 * Registers callback on a mod_watchdog singleton of its own, called every
 * interval. check_config has made sure mod_watchdog is loaded. A failure
 * (an MPM mod_watchdog cannot serve) is logged by the caller, which knows
 * what it costs.
 */
apr_status_t beacon_util_watchdog_start(apr_pool_t *pconf, const char *name,
                                        apr_interval_time_t interval, void *data,
                                        ap_watchdog_callback_fn_t *callback);

/*
 * For the watchdog threads that run our callbacks. prefork's children
 * stop from the handlers of the stop signals, which run the
 * child_stopping hook and the child's cleanups; they must run on the main
 * thread, never on a thread that holds a sender's lock or is inside the
 * receiver's loop. event and worker block them in every thread already.
 */
void beacon_util_block_stop_signals(void);

/*
 * In a child: whether the parent has begun a restart (graceful or not)
 * that replaces this child's generation. The parent moves
 * running_generation before it tells the children to stop, so this is
 * true from the first moment of a restart.
 */
int beacon_util_generation_replaced(void);

/*
 * Whether a status view for only shows what server s runs: every
 * server's with only NULL (BEACON_SCOPE_SERVER), else s's alone. The one
 * rule for the receivers' views and the senders'.
 */
int beacon_util_view_shows(const server_rec *only, const server_rec *s);

#endif /* MOD_PROXY_BEACON_UTIL_H */
