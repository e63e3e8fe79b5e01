/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A backend's load as the lbfactor it announces: the mapping from
 * utilization (include/beacon_load.h says which and why) and the factor
 * written as the wire writes it.
 */

#include <apr_strings.h>

#include "beacon.h"

/* u in [0, 1]: above 1, +inf or NaN is saturated. */
static double clamped(double u)
{
    if (!(u <= 1.0)) {
        return 1.0;
    }
    return u < 0.0 ? 0.0 : u;
}

int beacon_lbfactor_from_utilization(double u)
{
    double span = BEACON_LBFACTOR_MAX - BEACON_LOAD_FACTOR_FLOOR;

    u = clamped(u);
    /* at least 0.5 before the cut: rounds to the nearest hundredth */
    return (int)(BEACON_LBFACTOR_MAX - span * u + 0.5);
}

double beacon_load_average_add(beacon_load_average_t *avg, double u,
                               apr_time_t now)
{
    u = clamped(u);
    if (avg->at == 0) {
        avg->utilization = u;
    }
    else if (now > avg->at) {
        double dt = (double)(now - avg->at);

        avg->utilization += dt / (BEACON_LOAD_SMOOTHING + dt) *
                            (u - avg->utilization);
    }
    avg->at = now;
    return avg->utilization;
}

const char *beacon_lbfactor_format(char *buf, int hundredths)
{
    int whole = hundredths / 100, cents = hundredths % 100;

    if (hundredths < BEACON_LBFACTOR_MIN || hundredths > BEACON_LBFACTOR_MAX) {
        return NULL;
    }
    if (cents == 0) {
        apr_snprintf(buf, BEACON_LBFACTOR_TEXT_MAX, "%d", whole);
    }
    else if (cents % 10 == 0) {
        apr_snprintf(buf, BEACON_LBFACTOR_TEXT_MAX, "%d.%d", whole, cents / 10);
    }
    else {
        apr_snprintf(buf, BEACON_LBFACTOR_TEXT_MAX, "%d.%02d", whole, cents);
    }
    return buf;
}
