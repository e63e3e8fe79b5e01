/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: what its subjects share: the protocol's limits and
 * defaults, the drop reasons (lib/beacon_wire.c names them) and spans.
 * Part of beacon.h, which includes every subject.
 */
#ifndef BEACON_COMMON_H
#define BEACON_COMMON_H

#include <stddef.h>

#include <apr.h>
#include <apr_time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BEACON_KEY_LEN 16          /* SipHash-2-4 key, bytes */
#define BEACON_MAC_LEN 8           /* SipHash-2-4 tag, bytes */
#define BEACON_MAX_DATAGRAM 2048   /* larger datagrams are dropped whole */
#define BEACON_URL_MAX 300         /* canonical url incl. NUL; longer = unacceptable */
#define BEACON_DECIMAL_MAX_DIGITS 18 /* ts, pid, seq: 1 to 18 decimal digits */
#define BEACON_DECIMAL_MAX APR_INT64_C(999999999999999999) /* the largest */
#define BEACON_TABLE_CAPACITY 256  /* urls a table tracks by default, at least */
#define BEACON_MAX_KEYS 4          /* secrets a receiver accepts at once */
#define BEACON_MAX_FIELDS 32       /* key=value tokens before mac=; more: bad frame */
#define BEACON_SERVICE_MAX 63      /* svc=: 1 to 63 of [A-Za-z0-9._-] */
#define BEACON_ROUTE_MAX 63        /* route=: the same rule */
#define BEACON_LBFACTOR_MIN 100    /* lbfactor=, in hundredths: 1.00 ... */
#define BEACON_LBFACTOR_MAX 10000  /* ... to 100.00 */

/* The defaults both ends assume: a sender's interval between
 * announcements, and how far a receiver lets a timestamp stray from its
 * clock. The module's directives and beaconctl start from these. */
#define BEACON_DEFAULT_INTERVAL apr_time_from_sec(5)
#define BEACON_DEFAULT_MAX_SKEW apr_time_from_sec(30)

/* The values of the state= field. leaving (1.1): the sender is stopping,
 * and the receiver takes the member out of rotation at once. draining and
 * standby (1.2): the member stays, with httpd's drain (N) or hot-standby
 * (H) flag. */
#define BEACON_STATE_LEAVING "leaving"
#define BEACON_STATE_DRAINING "draining"
#define BEACON_STATE_STANDBY "standby"

/* ctx= (1.2): 1 to BEACON_CTX_MAX_PATHS paths, each of at most
 * BEACON_CTX_PATH_MAX bytes. */
#define BEACON_CTX_MAX_PATHS 16
#define BEACON_CTX_PATH_MAX 80
/* beacon_context_is_valid's rule in words, for the messages of those that
 * apply it (beaconctl, the module's directive). */
#define BEACON_CONTEXT_RULE \
    "/ or /seg[/seg...], a segment 1 or more of A-Z a-z 0-9 . _ ~ - (not . " \
    "or ..), at most 80 bytes"

/* ------------------------------------------------------------------ */
/* Outcomes                                                            */

/* One value per drop reason; beacon_reason_name() gives the log fragment. */
typedef enum {
    BEACON_OK = 0,
    BEACON_DROP_OVERSIZE,         /* "oversize datagram" */
    BEACON_DROP_EMBEDDED_NUL,     /* "embedded NUL" */
    BEACON_DROP_BAD_FRAME,        /* "bad frame" */
    BEACON_DROP_MAC_MISMATCH,     /* "mac mismatch" */
    BEACON_DROP_DUPLICATE_FIELD,  /* "duplicate field" */
    BEACON_DROP_BAD_TS,           /* "bad ts" */
    BEACON_DROP_BAD_FIELD,        /* "bad field" (v1.1 field, bad value) */
    BEACON_DROP_STALE_TS,         /* "stale ts" */
    BEACON_DROP_WRONG_SERVICE,    /* "wrong service" */
    BEACON_DROP_UNACCEPTABLE_URL, /* "unacceptable url" */
    BEACON_DROP_REPLAYED_TS,      /* "replayed/reordered ts" */
    BEACON_DROP_TABLE_FULL,       /* "member table full" */
    BEACON_DROP_URL_NOT_ALLOWED,  /* "url not allowed" (beacon_reach_t) */
    BEACON_DROP_URL_NOT_CANONICAL, /* "url not canonical" (member keys) */
    BEACON_DROP_REVOKED,          /* "revoked" (beacon_ring_revoke) */
    BEACON_REASON_COUNT
} beacon_reason_t;

/* The log fragment of a reason ("mac mismatch"); "ok" for BEACON_OK. */
const char *beacon_reason_name(beacon_reason_t reason);

/* A stable identifier for counters and status keys ("mac_mismatch"). */
const char *beacon_reason_id(beacon_reason_t reason);

/* ------------------------------------------------------------------ */
/* Spans                                                               */

typedef struct {
    const char *ptr; /* into the caller's datagram buffer; NULL = absent */
    apr_size_t len;
} beacon_span_t;

#ifdef __cplusplus
}
#endif
#endif /* BEACON_COMMON_H */
