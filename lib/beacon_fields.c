/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The values of a datagram's fields (wire format 1.1 and 1.2): what a
 * value, a word, a service name, a route, a load factor and a state may
 * be. The sender (beacon_format), the receiver (steps 4 and 5), the key
 * ring (service names) and the table (a service's records) all ask here.
 */

#include <string.h>

#include "beacon.h"
#include "beacon_private.h"

int beacon_value_is_valid(const char *v)
{
    if (*v == '\0') {
        return 0;
    }
    for (; *v; v++) {
        if (*v <= ' ' || *v > '~') {
            return 0;
        }
    }
    return 1;
}

int beacon_is_word(const char *s, apr_size_t len)
{
    apr_size_t i;

    for (i = 0; i < len; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) {
            return 0;
        }
    }
    return 1;
}

int beacon_word_span_is_valid(const char *s, apr_size_t len, apr_size_t max)
{
    return len > 0 && len <= max && beacon_is_word(s, len);
}

static int word_is_valid(const char *name, apr_size_t max)
{
    apr_size_t n = 0;

    if (name == NULL) {
        return 0;
    }
    while (n <= max && name[n] != '\0') {
        n++; /* no further than one byte past the longest name */
    }
    return beacon_word_span_is_valid(name, n, max);
}

int beacon_service_is_valid(const char *name)
{
    return word_is_valid(name, BEACON_SERVICE_MAX);
}

int beacon_route_is_valid(const char *route)
{
    return word_is_valid(route, BEACON_ROUTE_MAX);
}

int beacon_lbfactor_parse(const char *s, apr_size_t len)
{
    apr_size_t i = 0, decimals = 0;
    int hundredths = 0, seen_point = 0;

    if (s == NULL || len == 0 || len > sizeof("100.00") - 1) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (s[i] == '.' && !seen_point && i > 0 && i + 1 < len) {
            seen_point = 1;
        }
        else if (s[i] >= '0' && s[i] <= '9' && (!seen_point || decimals < 2)) {
            hundredths = hundredths * 10 + (s[i] - '0');
            decimals += seen_point;
        }
        else {
            return -1;
        }
    }
    for (; decimals < 2; decimals++) {
        hundredths *= 10;
    }
    return hundredths >= BEACON_LBFACTOR_MIN && hundredths <= BEACON_LBFACTOR_MAX
               ? hundredths
               : -1;
}

static const char *const wire_states[] = {
    [BEACON_WIRE_NONE] = "",
    [BEACON_WIRE_LEAVING] = BEACON_STATE_LEAVING,
    [BEACON_WIRE_DRAINING] = BEACON_STATE_DRAINING,
    [BEACON_WIRE_STANDBY] = BEACON_STATE_STANDBY,
};

#define NWIRE_STATES (sizeof(wire_states) / sizeof(wire_states[0]))

int beacon_wire_state_parse(const char *s, apr_size_t len)
{
    unsigned i;

    for (i = BEACON_WIRE_LEAVING; s != NULL && i < NWIRE_STATES; i++) {
        if (len == strlen(wire_states[i]) && memcmp(s, wire_states[i], len) == 0) {
            return (int)i;
        }
    }
    return -1;
}

const char *beacon_wire_state_name(beacon_wire_state_t state)
{
    return (unsigned)state < NWIRE_STATES ? wire_states[state] : "";
}
