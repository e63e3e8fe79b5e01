/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: a backend's load as the lbfactor it announces
 * (lib/beacon_load.c). One mapping for every sender that measures its
 * utilization: beaconctl send --lbfactor-from loadavg (the 1-minute load
 * average over the online CPUs) and the module's ProxyBeaconLBFactor auto
 * (the scoreboard's busy workers over MaxRequestWorkers).
 *
 * The mapping, in hundredths (the unit of lbfactor=):
 *
 *     u' = u clamped to [0, 1]          (NaN counts as 1: saturated)
 *     factor = 100.00 - 90.00 * u'      (rounded to a hundredth)
 *
 * so an idle backend announces 100, a saturated one 10, and one at half
 * its capacity 55. Why this one:
 *
 *   - Linear, gain 0.9. A backend that reports its own utilization closes
 *     a loop: a lower factor brings fewer requests, which lowers its
 *     utilization, which raises its factor (mod_cluster's headroom,
 *     100 - load, is this loop; design note load-and-identity.md 1.5).
 *     The steeper the mapping, the larger the swing one report causes; a
 *     knee (full factor up to 70 %, then falling fast) puts its steepest
 *     part exactly where a busy fleet sits. A straight line is the
 *     gentlest mapping that still moves requests from a busier member to
 *     a less busy one. Members at the same utilization announce the same
 *     factor, and requests settle near where utilizations are equal.
 *   - A floor of 10, never 0 (mod_cluster's MODCLUSTER-322 drove a
 *     factor to 0). A saturated member keeps a tenth of an idle one's
 *     share, as Envoy's slow start keeps 10 % and HAProxy advises weights
 *     from 10 to 100: it is not starved, so its own signal stays fresh,
 *     and a 10:1 range bounds the swing between two reports.
 *   - No smoothing in the mapping. The load average is already a
 *     one-minute moving average; the scoreboard is not, and auto smooths
 *     it first (beacon_load_average_add, below).
 *
 * A sender that knows its throughput too could announce a capacity,
 * requests per second over utilization (gRPC's and Envoy's weighted
 * round robin), which does not feed back; utilization alone cannot.
 */
#ifndef BEACON_LOAD_H
#define BEACON_LOAD_H

#include "beacon_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The factor of a saturated backend, in hundredths: 10.00. */
#define BEACON_LOAD_FACTOR_FLOOR 1000

/* The factor for utilization u (0 idle, 1 saturated; clamped), in
 * hundredths: BEACON_LOAD_FACTOR_FLOOR to BEACON_LBFACTOR_MAX. */
int beacon_lbfactor_from_utilization(double u);

/*
 * The smoothing ProxyBeaconLBFactor auto puts between the scoreboard and
 * the mapping: a moving average of utilization samples taken at any
 * times, each weighted by the time since the one before,
 *
 *     w = dt / (BEACON_LOAD_SMOOTHING + dt)
 *     average' = average + w * (sample - average)
 *
 * (a first-order low-pass filter, time constant BEACON_LOAD_SMOOTHING:
 * sampled often, as auto does ten times a second, the average has moved
 * 63 % of the way after a step in about that long, and 95 % in three
 * times it; one sample after a gap that long weighs a half). A constant
 * input gives that constant exactly, so a steady backend announces a
 * steady factor; the first sample is the average.
 *
 * Why 5 s: the scoreboard is a snapshot (how many workers are busy this
 * instant) and a saturated backend's count jumps with every request that
 * ends; sampled ten times a second, 5 s averages about fifty snapshots,
 * while a backend that saturates still announces a factor lowered by
 * more than the receivers' 5 % threshold within a second (mod_cluster
 * smooths over ten reports, halving every report: 10 s at its default).
 */
#define BEACON_LOAD_SMOOTHING apr_time_from_sec(5)

typedef struct {
    double utilization; /* the average, 0 to 1 */
    apr_time_t at;      /* of the last sample; 0: none yet */
} beacon_load_average_t;

/*
 * Adds the utilization sample u (clamped to [0, 1]; NaN counts as 1) taken
 * at now, and returns the new average. A sample no later than the last
 * one moves nothing (a clock set back); it only restarts the interval.
 */
double beacon_load_average_add(beacon_load_average_t *avg, double u,
                               apr_time_t now);

/* "100.00" and its NUL: the longest factor beacon_lbfactor_format
 * writes. */
#define BEACON_LBFACTOR_TEXT_MAX 7

/*
 * Writes hundredths as lbfactor= carries it, without trailing zeros
 * ("55", "77.5", "10.09"), into buf (BEACON_LBFACTOR_TEXT_MAX bytes) and
 * returns buf; NULL when hundredths is outside BEACON_LBFACTOR_MIN to
 * BEACON_LBFACTOR_MAX. beacon_lbfactor_parse reads it back as itself.
 */
const char *beacon_lbfactor_format(char *buf, int hundredths);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_LOAD_H */
