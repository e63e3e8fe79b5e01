/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* Helpers shared by libbeacon's sources; not part of the public API. */
#ifndef BEACON_PRIVATE_H
#define BEACON_PRIVATE_H

#include "beacon.h"

/* 0-15 for a hex digit of either case, -1 otherwise. */
int beacon_hex_value(char c);

/* Whether s[0..len) holds only [A-Za-z0-9._-]: a word that reads the same
 * in a log line, a directive and a status page (service names, host
 * names of datagram endpoints). Lengths are the caller's rule. */
int beacon_is_word(const char *s, apr_size_t len);

/* svc= and route=: 1 to max bytes of a word. */
int beacon_word_span_is_valid(const char *s, apr_size_t len, apr_size_t max);

/* A macro's value as a string literal, for static messages that name a
 * bound ("more than " BEACON_STR(BEACON_ALLOW_MAX_ENTRIES) " entries"). */
#define BEACON_STR_(x) #x
#define BEACON_STR(x) BEACON_STR_(x)

#endif /* BEACON_PRIVATE_H */
