/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A backend's load as the lbfactor it announces: the mapping from
 * utilization (include/beacon_load.h says which and why) and the factor
 * written as the wire writes it.
 */

#include <apr_strings.h>

#include "beacon.h"

int beacon_lbfactor_from_utilization(double u)
{
    double span = BEACON_LBFACTOR_MAX - BEACON_LOAD_FACTOR_FLOOR;

    if (!(u <= 1.0)) {
        u = 1.0; /* above 1, +inf or NaN: saturated */
    }
    else if (u < 0.0) {
        u = 0.0;
    }
    /* at least 0.5 before the cut: rounds to the nearest hundredth */
    return (int)(BEACON_LBFACTOR_MAX - span * u + 0.5);
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
