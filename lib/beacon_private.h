/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* Helpers shared by libbeacon's sources; not part of the public API. */
#ifndef BEACON_PRIVATE_H
#define BEACON_PRIVATE_H

#include "beacon.h"

/* 0-15 for a hex digit of either case, -1 otherwise. */
int beacon_hex_value(char c);

#endif /* BEACON_PRIVATE_H */
