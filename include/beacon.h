/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: the protocol core of mod_proxy_beacon.
 *
 * Wire format v1 (the contract: docs/wire-format.md):
 *
 *   BEACON url=<origin> host=<name> pid=<n> seq=<n> ts=<usec> mac=<16 hex>
 *
 * This library knows the protocol and nothing of httpd: it depends on APR
 * and APR-util only (SipHash-2-4 and SHA-1 come from APR-util). It never
 * allocates on the datagram path, keeps no global state, and takes the
 * clock from its caller, so every time-dependent decision can be tested.
 * It returns outcomes; logging is the caller's business.
 */
/*
 * This header is the whole library: it includes one header per subject,
 * each self-contained (it compiles alone; the build checks that), which a
 * file that needs one subject only may include instead.
 */
#ifndef BEACON_H
#define BEACON_H

#include "beacon_common.h"  /* limits, defaults, drop reasons, spans */
#include "beacon_addr.h"    /* "host:port" of datagram endpoints */
#include "beacon_key.h"     /* keys, secret files, the MAC */
#include "beacon_secret.h"  /* file:, exec: or inline secrets */
#include "beacon_wire.h"    /* the wire format: sender and steps 1 to 5 */
#include "beacon_ring.h"    /* a receiver's services and their keys */
#include "beacon_context.h" /* ctx=: the request paths a member serves */
#include "beacon_allow.h"   /* contexts=: a balancer's allow-list */
#include "beacon_reach.h"   /* allow=: the hosts a url may point at */
#include "beacon_routes.h"  /* the route image */
#include "beacon_board.h"   /* the route board: the current image, shared */
#include "beacon_url.h"     /* a member's identity, its canonical url */
#include "beacon_table.h"   /* the lease and replay table */
#include "beacon_receive.h" /* all receiver steps at once */
#include "beacon_fanout.h"  /* a sender's datagrams to every proxy address */
#include "beacon_load.h"    /* a backend's load as its lbfactor */
#include "beacon_exec.h"    /* a program's first output, bounded in time */

#endif /* BEACON_H */
