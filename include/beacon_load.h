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
 *   - No smoothing here: the function is pure. The load average is
 *     already a one-minute moving average; the scoreboard is not, and
 *     auto is to smooth it before it maps.
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
