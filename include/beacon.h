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
#ifndef BEACON_H
#define BEACON_H

#include <stddef.h>

#include <apr.h>
#include <apr_file_info.h>
#include <apr_network_io.h>
#include <apr_pools.h>
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

/*
 * A sender says state=leaving once, then BEACON_LEAVING_REPEATS times
 * more within the first second, each a new announcement (its own seq and
 * ts), so that one lost datagram does not keep a departed backend in
 * rotation. A receiver takes a repeat for a member already out of
 * rotation as nothing new. beacon_leaving_repeat_at(i) is when repeat i
 * (from 0) is due, counted from the first; 0 past the last.
 */
#define BEACON_LEAVING_REPEATS 3
apr_interval_time_t beacon_leaving_repeat_at(unsigned i);

/* How long a sender that said leaving first at first waits, at now,
 * before repeat i: 0 once it is due, and never longer than its offset
 * (a clock stepped back meanwhile does not hold the exit). */
apr_interval_time_t beacon_leaving_repeat_wait(apr_time_t first, unsigned i,
                                               apr_time_t now);

/* ------------------------------------------------------------------ */
/* Values                                                              */

/*
 * A plain decimal of 1 to BEACON_DECIMAL_MAX_DIGITS digits, no sign, no
 * space: the wire's ts, pid and seq, and every count a tool takes. Returns
 * 1 and sets *out, or 0 (out untouched) for anything else.
 */
int beacon_parse_decimal(const char *s, apr_size_t len, apr_int64_t *out);

/* Flags of beacon_parse_host_port(). */
#define BEACON_HP_ANY_HOST      0x1 /* "", "*" or a missing host: *host = NULL */
#define BEACON_HP_PORT_OPTIONAL 0x2 /* a missing port: *port = 0 */
#define BEACON_HP_PORT_ZERO     0x4 /* port 0 is allowed (any free port) */

/*
 * Where datagrams go or come from: "host:port", an IPv6 literal in
 * brackets ("[::1]:5555"), an optional leading scheme ("udp://", "tcp://",
 * as httpd's Listen takes it) ignored. *host is allocated from p. Returns
 * NULL, or a static message saying what is wrong; no IPv6 scope ("%eth0")
 * is accepted.
 */
const char *beacon_parse_host_port(apr_pool_t *p, const char *spec,
                                   unsigned flags, char **host,
                                   apr_port_t *port);

/* ------------------------------------------------------------------ */
/* Key                                                                 */

typedef struct {
    unsigned char bytes[BEACON_KEY_LEN];
} beacon_key_t;

/*
 * Parses a ProxyBeaconSecret value: "hex:" followed by exactly 32 hex digits,
 * or a passphrase of at least 16 bytes (key = first 16 bytes of its SHA-1).
 * Returns NULL on success, else a static one-line message fit for a
 * configuration error; it never contains the secret. *key is untouched on
 * error.
 */
const char *beacon_key_parse(const char *secret, beacon_key_t *key);

/*
 * The secret-file rule, the same for ProxyBeaconSecret file:/path and
 * beaconctl --secret-file: the secret is the file's first line, up to its
 * LF (or the end of the file), one CR right before that end dropped. The line
 * may hold at most BEACON_SECRET_LINE_MAX bytes, and no NUL and no other
 * CR (either would make one tool read another key than the other). The
 * line is then parsed as beacon_key_parse() does.
 */
#define BEACON_SECRET_LINE_MAX 4096

/* The rule on the first len bytes of a file (the caller read at least
 * BEACON_SECRET_READ_MAX of them, or the whole file). Returns NULL, or a
 * static message that never holds the secret. */
#define BEACON_SECRET_READ_MAX (BEACON_SECRET_LINE_MAX + 2) /* + CR LF */
const char *beacon_key_parse_file(const char *buf, apr_size_t len,
                                  beacon_key_t *key);

/*
 * Reads path and applies the rule: the file's bytes never outlive the
 * call (wiped). *info, when not NULL, gets what the file system says of
 * the file's permissions and owner (APR_FINFO_PROT | APR_FINFO_OWNER;
 * info->valid says which it could tell), so that a caller can warn about
 * a file others can read. Returns NULL, or a message from p (an I/O error
 * names the path).
 */
const char *beacon_key_read_file(apr_pool_t *p, const char *path,
                                 beacon_key_t *key, apr_finfo_t *info);

/*
 * Where a secret comes from, as ProxyBeaconSecret and beaconctl take it:
 *   file:PATH          the secret-file rule on PATH
 *   exec:PATH [ARGS]   the first line PATH prints, as httpd's own exec:
 *                      (SSLPassPhraseDialog, AuthLDAPBindPassword)
 *   anything else      the secret itself (hex: or a passphrase)
 * The prefixes in any case. A value that starts with another WORD: and a
 * slash ("pass:/...", a misspelt "fiel:/...") is refused: it looks like a
 * source, and taken as a passphrase it would fail only at runtime, as a
 * mac mismatch on every announcement. So is env: in any case, with or
 * without a slash, with the hint to httpd's ${NAME} and BEACON_SECRET.
 */
typedef enum {
    BEACON_SECRET_INLINE,
    BEACON_SECRET_FILE,
    BEACON_SECRET_EXEC
} beacon_secret_source_t;

/* Sets *source and *rest (past the prefix); NULL, or a static message
 * naming the accepted forms. */
const char *beacon_secret_source(const char *value,
                                 beacon_secret_source_t *source,
                                 const char **rest);

#define BEACON_SECRET_EXEC_LIMIT apr_time_from_sec(10)

/*
 * Runs command ("PATH [ARGS]", split as a shell would split words, no
 * shell run) and applies the secret-file rule to what it prints. Its
 * standard error is the caller's; its output never outlives the call. It
 * gets fds 0 to 2 only and leads a process group of its own, which is
 * killed whole at limit, and what is left of it once the program exits:
 * a background child must not keep the output or the caller's stderr
 * (something that must run on detaches with setsid).
 * A program that fails, prints nothing or runs past limit (then killed)
 * is an error. Returns NULL, or a message from p that never holds the
 * output.
 */
const char *beacon_key_exec(apr_pool_t *p, const char *command,
                            apr_interval_time_t limit, beacon_key_t *key);

/* Zeroes a key so that freed memory keeps no key material. */
void beacon_key_wipe(beacon_key_t *key);

/* Zeroes len bytes at p in a way the optimizer keeps (secrets on a stack). */
void beacon_wipe(void *p, apr_size_t len);

/* The 8-byte SipHash-2-4 tag of buf[0..len) under key. */
void beacon_mac(const beacon_key_t *key, const void *buf, apr_size_t len,
                unsigned char mac[BEACON_MAC_LEN]);

/* ------------------------------------------------------------------ */
/* Sender                                                              */

typedef struct {
    const char *url;   /* origin, or NULL for a heartbeat without url */
    const char *host;  /* sender's host name, or NULL to omit */
    apr_int64_t pid;   /* sender's pid, or < 0 to omit */
    apr_int64_t seq;   /* counter, or < 0 to omit */
    apr_int64_t ts;    /* microseconds since the epoch, >= 0 */
    const char *state; /* a BEACON_STATE_* value, or NULL to omit */
    const char *svc;   /* the service it is meant for (v1.1), or NULL */
    const char *route; /* its route for sticky sessions (v1.1), or NULL */
    const char *lbfactor; /* its load factor (v1.1), or NULL */
    const char *ctx;   /* its contexts, "/shop,/cart" (v1.2), or NULL */
} beacon_announcement_t;

/* Whether name can be a service (svc=): 1 to BEACON_SERVICE_MAX bytes of
 * [A-Za-z0-9._-]. */
int beacon_service_is_valid(const char *name);

/* Whether route can be a member's route (route=): 1 to BEACON_ROUTE_MAX
 * bytes of [A-Za-z0-9._-]. */
int beacon_route_is_valid(const char *route);

/*
 * A load factor (lbfactor=) as the wire writes it, "1" to "100" with at
 * most two decimals ("2.5", "0.5" is too small): in hundredths
 * (BEACON_LBFACTOR_MIN to BEACON_LBFACTOR_MAX, as httpd keeps a member's
 * loadfactor), or -1 when it is not one.
 */
int beacon_lbfactor_parse(const char *s, apr_size_t len);

/* Whether v can be a field's value: non-empty, printable ASCII, no space. */
int beacon_value_is_valid(const char *v);

/*
 * Writes the signed datagram for a into buf (NUL-terminated) in the wire
 * order url, host, pid, seq, ts, svc, ctx, route, lbfactor, state, mac.
 * Returns its length, or -1 when a value is empty or holds a space or a
 * non-printable byte, svc, ctx, route, lbfactor or state breaks its rule
 * (beacon_service_is_valid, beacon_ctx_parse, beacon_route_is_valid,
 * beacon_lbfactor_parse, beacon_wire_state_parse), ts, pid or seq is above
 * BEACON_DECIMAL_MAX, or the datagram would exceed BEACON_MAX_DATAGRAM or
 * bufsize - 1.
 */
int beacon_format(char *buf, apr_size_t bufsize, const beacon_announcement_t *a,
                  const beacon_key_t *key);

/*
 * A sender's sequencing: seq counts from 0 with every announcement, and
 * ts is the wall clock, made strictly increasing (max(now, last + 1)) so
 * that a clock stepped back cannot make a receiver drop the sender as a
 * replay. Zero-initialize; one per stream of datagrams a receiver sees
 * (a sender that sends one datagram to several proxies may share one).
 *
 * shared_ts, when set, keeps the last ts instead of last_ts: memory that
 * outlives the sequence and that other sequences may share, at once or
 * one after another (shared memory of a parent process whose children
 * take turns sending), so that ts rises across all of them. It is read
 * and raised atomically.
 */
typedef struct {
    apr_int64_t next_seq;
    apr_int64_t last_ts;
    volatile apr_uint64_t *shared_ts;
} beacon_sequence_t;

/* Sets a->seq and a->ts for the next announcement, sent at now. */
void beacon_sequence_stamp(beacon_sequence_t *s, apr_time_t now,
                           beacon_announcement_t *a);

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
    BEACON_REASON_COUNT
} beacon_reason_t;

/* The log fragment of a reason ("mac mismatch"); "ok" for BEACON_OK. */
const char *beacon_reason_name(beacon_reason_t reason);

/* A stable identifier for counters and status keys ("mac_mismatch"). */
const char *beacon_reason_id(beacon_reason_t reason);

/* ------------------------------------------------------------------ */
/* Receiver: steps 1 to 5 of the wire format                           */

typedef struct {
    const char *ptr; /* into the caller's datagram buffer; NULL = absent */
    apr_size_t len;
} beacon_span_t;

/* The service of a datagram that goes to the receiver's default (no
 * service, or a ring without services): beacon_datagram_t.service. */
#define BEACON_SERVICE_DEFAULT (-1)

typedef struct {
    beacon_span_t url, host, pid, seq, state, svc, route, lbfactor, ctx;
    apr_int64_t ts;
    beacon_span_t bad_field; /* BEACON_DROP_BAD_FIELD: the field's key */
    /* beacon_verify_ring: the index of the ring's service svc= names, or
     * BEACON_SERVICE_DEFAULT; always BEACON_SERVICE_DEFAULT otherwise. */
    int service;
} beacon_datagram_t;

/* What state= says. */
typedef enum {
    BEACON_WIRE_NONE = 0, /* no state=: a normal announcement */
    BEACON_WIRE_LEAVING,  /* state=leaving */
    BEACON_WIRE_DRAINING, /* state=draining: httpd's N flag */
    BEACON_WIRE_STANDBY   /* state=standby: httpd's H flag */
} beacon_wire_state_t;

/* The state a state= value names (s[0..len)), or -1 for any other value
 * (a verified datagram never has one: it is a bad field state). */
int beacon_wire_state_parse(const char *s, apr_size_t len);

/* "leaving", "draining", "standby"; "" for BEACON_WIRE_NONE. */
const char *beacon_wire_state_name(beacon_wire_state_t state);

/* The state a verified datagram announces. */
beacon_wire_state_t beacon_datagram_state(const beacon_datagram_t *dg);

/* Whether the datagram says state=leaving. */
int beacon_datagram_is_leaving(const beacon_datagram_t *dg);

/* An informational number (pid, seq) as announced, or -1 when absent or
 * not a plain decimal (the MAC vouches for the sender, not for its use
 * of the field). */
apr_int64_t beacon_span_number(const beacon_span_t *span);

/*
 * Checks buf[0..len) in the wire format's order: size, NUL, frame (at
 * most BEACON_MAX_FIELDS fields), MAC (constant time, before any field is
 * interpreted), duplicate fields, ts syntax, the values of the version 1.1
 * and 1.2 fields this version knows (svc, ctx, route, lbfactor, state, in
 * that order; out->bad_field names the first that is bad), and freshness (|ts - now| <= max_skew, both in microseconds).
 * On BEACON_OK, out's spans point into buf (which need not be
 * NUL-terminated); on a drop, out is unspecified but for bad_field.
 */
beacon_reason_t beacon_verify(const char *buf, apr_size_t len,
                              const beacon_key_t *key, apr_time_t now,
                              apr_interval_time_t max_skew,
                              beacon_datagram_t *out);

/*
 * beacon_verify with any of keys[0..nkeys) (1 to BEACON_MAX_KEYS), for key
 * rotation: a datagram passes if its MAC matches one of them. A forged
 * datagram costs one MAC per key.
 */
beacon_reason_t beacon_verify_any(const char *buf, apr_size_t len,
                                  const beacon_key_t *keys, unsigned nkeys,
                                  apr_time_t now, apr_interval_time_t max_skew,
                                  beacon_datagram_t *out);

/* ------------------------------------------------------------------ */
/* Key ring: one receiver, many services, each with keys of its own    */

#define BEACON_RING_MAX_SERVICES 256
#define BEACON_RING_BUCKETS 512  /* power of two, 2 x services */

typedef struct {
    char name[BEACON_SERVICE_MAX + 1];
    apr_size_t len;
    beacon_key_t keys[BEACON_MAX_KEYS];
    unsigned nkeys;          /* 0: the ring's default keys */
    apr_uint32_t hash;
    apr_int16_t next;        /* bucket chain, index or -1 */
} beacon_ring_service_t;

/*
 * What a receiver verifies with (wire format 1.2, key selection): the
 * default keys (ProxyBeaconSecret) and its services, each with a name and
 * optionally keys of its own. Filled at configuration time, then only
 * read; a plain block (no pointers), the caller places it where it likes.
 */
typedef struct {
    beacon_key_t keys[BEACON_MAX_KEYS]; /* the default keys */
    unsigned nkeys;
    int require_svc;         /* with services: no svc= is a wrong service */
    unsigned nservices;
    apr_int16_t bucket[BEACON_RING_BUCKETS];
    beacon_ring_service_t service[BEACON_RING_MAX_SERVICES];
} beacon_ring_t;

/* A ring with the default keys[0..nkeys) (0 to BEACON_MAX_KEYS; with none,
 * only a service's own keys verify anything) and no service. */
void beacon_ring_init(beacon_ring_t *ring, const beacon_key_t *keys,
                      unsigned nkeys);

/*
 * Adds the service name (beacon_service_is_valid) with its own
 * keys[0..nkeys) (0 to BEACON_MAX_KEYS; 0: the default keys verify it).
 * Its index is the number of services added before it. Returns NULL, or a
 * static message: an invalid name, a name already in the ring, too many
 * keys or services.
 */
const char *beacon_ring_add(beacon_ring_t *ring, const char *name,
                            const beacon_key_t *keys, unsigned nkeys);

/* Whether a datagram without svc= is a wrong service on a ring with
 * services (a receiver with no balancer outside its services, or one
 * ProxyBeaconService). Off after beacon_ring_init: such a datagram goes
 * to BEACON_SERVICE_DEFAULT. */
void beacon_ring_require_service(beacon_ring_t *ring, int required);

/* The index of the service named name[0..len) (byte for byte), or -1.
 * A hash lookup: it does not grow with the number of services. */
int beacon_ring_find(const beacon_ring_t *ring, const char *name,
                     apr_size_t len);

/* The keys a datagram for service (an index, or BEACON_SERVICE_DEFAULT)
 * is verified with: its own, or the default ones; *nkeys says how many. */
const beacon_key_t *beacon_ring_keys(const beacon_ring_t *ring, int service,
                                     unsigned *nkeys);

/*
 * Two services that share a key, so that neither is isolated from the
 * other (two without keys of their own share the default ones), or a
 * service that shares a default key with the datagrams without svc=
 * (*a == -1): its own keys hold one, or, unless
 * beacon_ring_require_service, it has none of its own. 1 with *a < *b
 * set to the first such pair, or 0.
 */
int beacon_ring_shared_key(const beacon_ring_t *ring, int *a, int *b);

/*
 * beacon_verify with key selection: after the frame check, the bytes of
 * the first svc= token, unparsed and untrusted, pick the key set
 * (beacon_ring_keys of the service they name; the default keys when they
 * name none, or there is no svc=), and only that set is tried: one MAC per
 * key of it, however many services the ring has. Then steps 4 and 5 as
 * beacon_verify, and step 6: on a ring with services, an svc= that names
 * none of them, or no svc= under beacon_ring_require_service, is
 * BEACON_DROP_WRONG_SERVICE. On BEACON_OK out->service is the index of
 * the service svc= names, or BEACON_SERVICE_DEFAULT.
 */
beacon_reason_t beacon_verify_ring(const char *buf, apr_size_t len,
                                   const beacon_ring_t *ring, apr_time_t now,
                                   apr_interval_time_t max_skew,
                                   beacon_datagram_t *out);

/* ------------------------------------------------------------------ */
/* Contexts (ctx=, wire format 1.2): request paths a member serves      */

/* Whether path[0..len) is one context: "/" or "/seg(/seg)*", a segment
 * 1 or more of [A-Za-z0-9._~-] and not "." or "..", no trailing "/", at
 * most BEACON_CTX_PATH_MAX bytes. */
int beacon_context_is_valid(const char *path, apr_size_t len);

/*
 * The paths of a ctx= value ("/shop,/cart"): 1 to BEACON_CTX_MAX_PATHS
 * valid contexts separated by ",". Returns how many, each a span into
 * value, or -1 when the value breaks the rule (paths then unspecified).
 */
int beacon_ctx_parse(const char *value, apr_size_t len,
                     beacon_span_t paths[BEACON_CTX_MAX_PATHS]);

/* The contexts of a verified datagram into paths; 0 without ctx=. */
unsigned beacon_datagram_contexts(const beacon_datagram_t *dg,
                                  beacon_span_t paths[BEACON_CTX_MAX_PATHS]);

/*
 * The servlet path of the request path path[0..len): the path a servlet
 * container serves for it, and the one contexts are matched on. Every
 * segment's path parameters (";" up to the next "/": "/shop;jsessionid=1"
 * is "/shop", "/a;x/b" is "/a/b") removed, runs of "/" made one, and "."
 * and ".." segments resolved, also when a parameter follows them (".;x",
 * "..;x": Tomcat serves "/a/..;/b" as "/b"). Nothing decoded. Written to
 * out, which has room for len + 1 bytes (it may be path itself),
 * NUL-terminated; returns its length, or -1 when path does not start
 * with "/" or a ".." goes above the root ("/..;/x").
 */
apr_ssize_t beacon_servlet_path(const char *path, apr_size_t len, char *out);

/*
 * Whether the context ctx[0..ctxlen) matches the servlet path
 * path[0..pathlen) (beacon_servlet_path): "/shop" matches "/shop" and
 * "/shop/...", never "/shopping" nor "/shop;x" (a path that still holds
 * a parameter is not a servlet path); "/" matches every path that starts
 * with "/". Bytes compared as they are (case counts, nothing decoded).
 */
int beacon_context_matches(const char *ctx, apr_size_t ctxlen,
                           const char *path, apr_size_t pathlen);

/* The index of the longest of ctxs[0..n) that matches path (the first of
 * equals), or -1 when none does. */
int beacon_context_best(const beacon_span_t *ctxs, unsigned n,
                        const char *path, apr_size_t pathlen);

/* ------------------------------------------------------------------ */
/* Allow-lists (contexts=LIST of ProxyBeaconBalancer)                  */

// (Line comments here: a delegation is written with "/" and "*", which
// a block comment cannot hold.)
//
// The contexts a balancer's members may claim: "/shop,/apps/*,/".
// Entries are separated by "," (no spaces), each at most
// BEACON_CTX_PATH_MAX bytes, at most BEACON_ALLOW_MAX_ENTRIES of them
// (a repeated entry counts once):
//
//   /shop     exactly the context /shop (beacon_context_is_valid)
//   /apps/*   a delegation: any context strictly under /apps (/apps/x,
//             /apps/x/y), never /apps itself
//   /*        any context but "/": "/" is allowed only when named, so
//             that no delegation hands out the catch-all by accident
//   /         exactly "/"
//
// "*" stands only as a whole last segment: "/apps*", "/a/*/b", "*" and
// "/a/**" are refused, and so is "//*" (the root's delegation is "/*"). A plain block with no pointers: the caller places
// it where it likes (a configuration pool) and may copy it.
#define BEACON_ALLOW_MAX_ENTRIES 64

typedef struct {
    char text[BEACON_CTX_PATH_MAX + 1]; /* as written, NUL-terminated */
    apr_size_t len;                     /* of text */
    int delegation;                     /* a delegation: text is BASE + "/" + "*" */
} beacon_allow_entry_t;

typedef struct {
    unsigned n;
    beacon_allow_entry_t entry[BEACON_ALLOW_MAX_ENTRIES];
} beacon_allow_t;

/* An empty list: it permits nothing. */
void beacon_allow_init(beacon_allow_t *allow);

/*
 * Adds the entries of list[0..len) to allow (a second contexts= adds to
 * the first). Returns NULL, or a static message for the first bad entry
 * (an empty one, one that is neither a context nor a delegation, a
 * misplaced "*", one past BEACON_ALLOW_MAX_ENTRIES), with *bad (when not
 * NULL) its span in list; allow is then as it was before the call:
 * nothing half-applied.
 */
const char *beacon_allow_add(beacon_allow_t *allow, const char *list,
                             apr_size_t len, beacon_span_t *bad);

/* Whether the context ctx[0..len) lies in allow: an entry names it, or a
 * delegation holds it. 0 for what is not a valid context. */
int beacon_allow_permits(const beacon_allow_t *allow, const char *ctx,
                         apr_size_t len);

/* The index of the first of paths[0..n) that allow does not permit, or
 * -1 when it permits them all: a datagram is applied whole or dropped
 * whole (context not allowed). */
int beacon_allow_refused(const beacon_allow_t *allow, const beacon_span_t *paths,
                         unsigned n);

// Two balancers of one virtual host may not both be allowed one same
// context: its route would depend on which member spoke last. Contexts
// strictly nested in each other are different contexts, and the longest
// match decides a request, so those coexist. "Strictly nested" for a
// delegation: what it holds lies below its base, not at it, so it
// conflicts with an entry only where both hold one same context.
//
//   /shop    and /shop         conflict (the same context)
//   /shop    and /shop/admin   coexist (nested: /shop/admin/x goes to the
//                              second, /shop/x to the first)
//   /apps/*  and /apps/x       conflict (the delegation holds /apps/x)
//   /apps/*  and /apps         coexist (/apps is not under /apps)
//   /apps/*  and /apps/x/*     conflict (both hold /apps/x/y)
//   /apps/*  and /shop/*       coexist
//   /*       and /shop         conflict
//   /*       and /             coexist ("/" is not under "/")
//
// Returns 1 with *ia and *ib (when not NULL) the first conflicting pair,
// a's entry first, so that the error can name both; 0 when a and b
// coexist.
int beacon_allow_conflict(const beacon_allow_t *a, const beacon_allow_t *b,
                          unsigned *ia, unsigned *ib);

/* ------------------------------------------------------------------ */
/* Reach: what an announced url may point at (ProxyBeaconAllow, allow=) */

/*
 * The hosts a receiver lets announced urls point at, so that a holder of
 * the secret cannot aim the proxy at whatever it can reach. Entries, one
 * per argument (ProxyBeaconAllow, beaconctl --allow) or ","-separated
 * (allow=):
 *
 *   10.0.0.0/8, fd00::/8   an IP network: an IPv4 address as four decimal
 *                          numbers, an IPv6 address without brackets,
 *                          "/" and a prefix length (no bits set past it)
 *   10.1.2.3, ::1          one address
 *   api.internal           a host name, exactly (case-insensitive; one
 *                          trailing "." ignored)
 *   *.svc.cluster.local    any name under that suffix, at any depth, never
 *                          the suffix itself
 *   source                 an IP literal equal to the address the datagram
 *                          came from
 *
 * A url is allowed when one entry allows it. Names are matched as text,
 * never resolved: a name entry allows a name, never an address, and a
 * network or "source" allows an IP literal, never a name. The host of a
 * url is an IP literal when getaddrinfo would read it as one without
 * asking DNS: an IPv6 literal, or an IPv4 address in any inet_aton form
 * ("127.1", "2852039166", "0xa9.0xfe.0xa9.0xfe"), so that no spelling of
 * an address passes as a name. An IPv4-mapped IPv6 address
 * (::ffff:169.254.169.254) is its IPv4 address, in urls, in sources and
 * in entries (::ffff:10.0.0.0/104 is 10.0.0.0/8). Other IPv6 forms of an
 * IPv4 address (the deprecated IPv4-compatible ::a.b.c.d, NAT64's
 * 64:ff9b::/96) are IPv6 addresses: Linux does not route the former to
 * IPv4, and the latter goes through a translator the network chose.
 *
 * The defaults refuse what no backend's address is: link-local
 * (169.254.0.0/16, fe80::/10, where cloud metadata services answer),
 * unspecified (0.0.0.0, ::, which a connect takes to the proxy host
 * itself), multicast (224.0.0.0/4, ff00::/8) and the IPv4 broadcast
 * address. Without a list (reach NULL) every other url is allowed. A list
 * allows only what its entries allow, and an address of those ranges only
 * through a network entry inside the range (169.254.169.254, or
 * 169.254.0.0/16 itself): 0.0.0.0/0 or "source" never opens them.
 *
 * A plain block with no pointers, filled at configuration time, then
 * only read.
 */
#define BEACON_REACH_MAX_ENTRIES 64
#define BEACON_REACH_NAME_MAX 253

typedef enum {
    BEACON_REACH_NETWORK = 1, /* addr/prefix */
    BEACON_REACH_NAME,        /* name, exactly */
    BEACON_REACH_SUFFIX,      /* name is ".suffix": any name ending so */
    BEACON_REACH_SOURCE       /* the datagram's source address */
} beacon_reach_kind_t;

typedef struct {
    beacon_reach_kind_t kind;
    int ipv4;                  /* NETWORK: an IPv4 network, in addr as
                                * ::ffff:a.b.c.d with prefix + 96 */
    unsigned char addr[16];
    unsigned prefix;           /* 0 to 128 */
    char name[BEACON_REACH_NAME_MAX + 2]; /* lower case, NUL-terminated */
    apr_size_t len;            /* of name */
} beacon_reach_entry_t;

typedef struct {
    unsigned n;
    beacon_reach_entry_t entry[BEACON_REACH_MAX_ENTRIES];
} beacon_reach_t;

/* An empty list: it allows nothing. */
void beacon_reach_init(beacon_reach_t *reach);

/*
 * Adds one entry, entry[0..len), to reach. NULL, or a static message
 * saying why it is none (an IPv4 address not in four decimal numbers, a
 * prefix that is too long or leaves bits set, a "*" anywhere but a
 * leading "*.", a name that is not a host name, one entry past
 * BEACON_REACH_MAX_ENTRIES); reach is then unchanged. An entry given
 * twice counts once.
 */
const char *beacon_reach_add(beacon_reach_t *reach, const char *entry,
                             apr_size_t len);

/* beacon_reach_add for each ","-separated entry of list[0..len); on an
 * error, *bad (when not NULL) is the entry's span and reach is as it was
 * before the call. */
const char *beacon_reach_add_list(beacon_reach_t *reach, const char *list,
                                  apr_size_t len, beacon_span_t *bad);

/*
 * The domain a receiver names its placeholder members under
 * (http://slot-K.beacon.invalid: reserved slots, ProxyBeaconBalancer
 * slots=N); .invalid never resolves (RFC 6761).
 */
#define BEACON_RESERVED_DOMAIN "beacon.invalid"

/*
 * Whether the host of the canonical url is BEACON_RESERVED_DOMAIN or a
 * name under it, in any case and with any trailing "."s: a member named
 * so would pass for a free reserved slot, so no list allows one.
 */
int beacon_url_is_reserved(const char *url);

/*
 * Whether reach (NULL: the defaults) allows the canonical url
 * (beacon_url_canonicalize's output) sent from source: NULL, or a static
 * message saying why not ("a link-local address", "no entry allows it";
 * a reserved slot's name, beacon_url_is_reserved, whatever reach says).
 * source is the datagram's sender (AF_INET or AF_INET6); NULL where there
 * is none to compare (a member restored from the registry), and "source"
 * then allows any IP literal.
 */
const char *beacon_reach_refusal(const beacon_reach_t *reach, const char *url,
                                 const struct sockaddr *source);

/* The entries of reach as written back ("10.0.0.0/8 *.internal source"),
 * space-separated, into buf: NUL-terminated, cut at bufsize; buf. */
const char *beacon_reach_text(const beacon_reach_t *reach, char *buf,
                              apr_size_t bufsize);

/* What one announcement is checked against before its table (step 7):
 * the receiver's list and the balancer's, which narrows it (both must
 * allow the url), and where the datagram came from. */
typedef struct {
    const beacon_reach_t *receiver; /* NULL: the defaults */
    const beacon_reach_t *balancer; /* NULL: no narrowing */
    const struct sockaddr *source;  /* NULL: none (see beacon_reach_refusal) */
} beacon_reach_gate_t;

/* ------------------------------------------------------------------ */
/* Route image: the request path lookup, shared between processes      */

/*
 * The contexts of one virtual host and where each goes, as one process
 * (the receiver) builds them into memory it shares, and others (the
 * children serving requests) read, mapped at another address: a flat
 * byte image of offsets, never pointers, immutable once built. A new
 * table is a new image in another buffer, published behind the caller's
 * generation counter, so a reader never locks and never sees a table
 * rewritten under it.
 *
 * Layout (host byte order; the image starts 4-byte aligned):
 *   beacon_routes_header_t, padded to 64 bytes
 *   nbuckets x beacon_routes_bucket_t  open addressing, a power of two
 *   nroutes  x beacon_routes_entry_t   in the order they were given
 *   names                              each context and a NUL
 *
 * A context's home bucket is its beacon_routes_hash modulo nbuckets; it
 * sits there or, when that is full, in the next ones (header max_probe
 * says how many at most: 1 unless the builder found no seed of
 * BEACON_ROUTES_SEEDS that gave every context a place at home). A lookup
 * hashes each prefix of the request path that ends at a segment boundary
 * and probes it, longest first: its cost grows with the path's depth
 * (at most its first BEACON_CTX_PATH_MAX bytes, no context is longer),
 * never with the number of contexts. The seeds are against bad luck, not
 * malice: a member that holds a key and names contexts chosen to collide
 * can at worst make lookups read max_probe buckets each.
 */
#define BEACON_ROUTES_MAGIC 0x52434542u /* "BECR" read little-endian */
#define BEACON_ROUTES_VERSION 1
#define BEACON_ROUTES_MAX 65536         /* routes in one image */
#define BEACON_ROUTES_BUCKET_SLOTS 8    /* a bucket is one 64-byte line */
#define BEACON_ROUTES_SEEDS 4

typedef struct {
    apr_uint32_t magic;       /* BEACON_ROUTES_MAGIC */
    apr_uint32_t version;     /* BEACON_ROUTES_VERSION */
    apr_uint32_t size;        /* bytes of the whole image */
    apr_uint32_t seed;        /* of beacon_routes_hash, as the build chose */
    apr_uint32_t nroutes;
    apr_uint32_t nbuckets;
    apr_uint32_t max_probe;   /* buckets the longest probe reads, >= 1 */
    apr_uint32_t buckets_off; /* each offset from the image's start */
    apr_uint32_t routes_off;
    apr_uint32_t names_off;
    apr_uint32_t names_len;
} beacon_routes_header_t;

/* Slots fill from 0; the first ref 0 ends the bucket. A bucket with a
 * free slot ends every probe that reaches it. */
typedef struct {
    apr_uint32_t hash[BEACON_ROUTES_BUCKET_SLOTS]; /* of the route in ref */
    apr_uint32_t ref[BEACON_ROUTES_BUCKET_SLOTS];  /* route index + 1; 0 free */
} beacon_routes_bucket_t;

typedef struct {
    apr_uint32_t hash;        /* beacon_routes_hash of the name */
    apr_uint32_t value;       /* the caller's: opaque to the library */
    apr_uint32_t name_off;    /* from names_off */
    apr_uint16_t name_len;    /* without the NUL */
    apr_uint16_t balancer;    /* the caller's index of the balancer */
} beacon_routes_entry_t;

/* One route to build: a valid context (beacon_context_is_valid), each
 * context once in a table. */
typedef struct {
    const char *ctx;
    apr_size_t len;
    apr_uint16_t balancer;
    apr_uint32_t value;
} beacon_routes_spec_t;

/* The hash the image is built with: part of its format (its version). */
apr_uint32_t beacon_routes_hash(apr_uint32_t seed, const char *s,
                                apr_size_t len);

/* The default number of buckets for n routes: a power of two with room
 * for four times n (two a bucket on average), so that every context
 * nearly always finds room at home. */
unsigned beacon_routes_buckets(unsigned n);

/*
 * The bytes an image of n routes needs whose contexts hold names bytes
 * in all, in nbuckets buckets (0: beacon_routes_buckets(n)); 0 when no
 * image can hold them (n above BEACON_ROUTES_MAX, more than
 * BEACON_ROUTES_BUCKET_SLOTS per bucket, nbuckets not a power of two).
 */
apr_size_t beacon_routes_image_size(unsigned n, apr_size_t names,
                                    unsigned nbuckets);

/*
 * Builds the image of specs[0..n) into buf (size bytes, 4-byte aligned),
 * in nbuckets buckets (0: the default; a caller may ask for fewer, a
 * test for collisions). seed starts the hash (pass a random one: it is
 * kept in the image); the build tries BEACON_ROUTES_SEEDS seeds from it
 * for one-bucket probes and keeps the best. Returns NULL, or a static
 * message: a bad context, one context twice, a buffer too small or
 * misaligned, a count image_size refuses. Only buf is written.
 */
const char *beacon_routes_build(void *buf, apr_size_t size,
                                const beacon_routes_spec_t *specs, unsigned n,
                                unsigned nbuckets, apr_uint32_t seed);

/*
 * Whether the size bytes at image are an image this version reads: the
 * magic, the version, the layout its counts give and its size within
 * size, every route's name a valid context within the names and of its
 * hash, every bucket's refs and hashes those of its routes, and every
 * route found where its probe looks. A reader calls it once on an image
 * it did not build, before any lookup; NULL, or a static message saying
 * what is wrong. O(n): not for every request.
 */
const char *beacon_routes_check(const void *image, apr_size_t size);

/*
 * The route of the longest context in image (checked, immutable) that
 * matches the request path path[0..len) (not NUL-terminated) by
 * beacon_context_matches, or NULL. Reads buckets only: no allocation, no
 * lock. *probes (when not NULL) gets the number of buckets read.
 */
const beacon_routes_entry_t *beacon_routes_lookup(const void *image,
                                                  const char *path,
                                                  apr_size_t len,
                                                  unsigned *probes);

/* The number of routes, route i (0 to count - 1, in the order built),
 * and a route's context, NUL-terminated (status pages). */
unsigned beacon_routes_count(const void *image);
const beacon_routes_entry_t *beacon_routes_at(const void *image, unsigned i);
const char *beacon_routes_name(const void *image,
                               const beacon_routes_entry_t *route);

/* ------------------------------------------------------------------ */
/* Route board: the current route image, shared, read without a lock    */

/*
 * Memory shared between processes (apr_shm; mapped at the same address
 * or another) holding the current route table as an immutable image
 * behind a generation counter. One writer process (the receiver; the
 * caller serialises its calls) publishes a new table; any number of
 * reader threads, in any process, look up on every request: a reader
 * never locks, never allocates, never waits for the writer, and never
 * returns an answer that is not wholly one published table's.
 *
 * Two image buffers: the writer builds a table into the one readers are
 * not sent to, then publishes it with the next generation; the old one
 * stays as it was until the publication after. Each buffer has a
 * sequence counter, odd while it is written (a seqlock): a reader that
 * was in a buffer while it was rewritten sees the counter change and
 * reads again from the current one. What it read meanwhile goes through
 * O(1) checks of the image's header and a bounds check of every index,
 * so a torn image can never make it read outside the buffer. A writer
 * that dies mid-build leaves the current table as it was.
 */
#define BEACON_BOARD_TRIES 4096 /* reads a reader tries before giving up */

/* The image capacity that holds up to n routes whose contexts hold names
 * bytes in all (beacon_routes_image_size with the default buckets), or 0
 * when no image can hold them. */
apr_size_t beacon_board_capacity(unsigned n, apr_size_t names);

/* The bytes of a board whose two buffers hold an image of image_capacity
 * bytes each; 0 when the capacity cannot hold an empty table or exceeds
 * 256 MiB. */
apr_size_t beacon_board_size(apr_size_t image_capacity);

/*
 * Makes mem (size bytes, 8-byte aligned as apr_shm_baseaddr_get's is)
 * a board publishing the empty table as generation 1; before any reader
 * maps it. NULL, or a static message (a capacity beacon_board_size
 * refuses, memory too small or misaligned).
 */
const char *beacon_board_init(void *mem, apr_size_t size,
                              apr_size_t image_capacity);

/*
 * Writer: builds specs[0..n) (beacon_routes_build's rules, seed its) into
 * the buffer readers are not sent to, then publishes it as the next
 * generation, which *generation (when not NULL) gets. NULL, or a static
 * message: routes that need more than the capacity, or what
 * beacon_routes_build refuses; nothing is published then, and the
 * current table and generation stay.
 */
const char *beacon_board_publish(void *board, const beacon_routes_spec_t *specs,
                                 unsigned n, apr_uint32_t seed,
                                 apr_uint32_t *generation);

/* The current table's generation (1 after init, one more a publish). */
apr_uint32_t beacon_board_generation(const void *board);

typedef struct {
    apr_uint16_t balancer;   /* the route's, as published */
    apr_uint32_t value;
    apr_uint32_t ctx_len;    /* of the context that matched: path[0..ctx_len) */
    apr_uint32_t generation; /* of the table the hit came from */
} beacon_board_hit_t;

/*
 * Reader: 1 with *hit (a copy) when the longest context of the current
 * table matches path[0..len) (beacon_context_matches' rule, as
 * beacon_routes_lookup), 0 when none does; -1, *hit untouched, when mem
 * is no board, when its current image is corrupt (read whole and still
 * not an image), or when BEACON_BOARD_TRIES reads in a row were each cut
 * by a publication (a writer publishing without pause, faster than a
 * lookup): a caller routes nothing then, as for 0, and may log it.
 * Never locks, never allocates.
 */
int beacon_board_lookup(const void *board, const char *path, apr_size_t len,
                        beacon_board_hit_t *hit);

/*
 * Reader, for status pages: copies the current image, read whole, into
 * buf (4-byte aligned; bufsize >= the board's image capacity always
 * suffices) and returns buf, which beacon_routes_check passed, with its
 * generation in *generation (when not NULL); NULL when buf is too small
 * or lookup would give -1. Then beacon_routes_count/at/name list it.
 */
const void *beacon_board_copy(const void *board, void *buf, apr_size_t bufsize,
                              apr_uint32_t *generation);

/* ------------------------------------------------------------------ */
/* Member identity                                                     */

/*
 * Canonicalizes an origin scheme://host[:port][/] into out (NUL-terminated):
 * scheme and host lower-cased, the scheme's default port dropped (httpd's:
 * http 80, https 443, ws 80, wss 443, h2 443, h2c 80, ajp 8009, fcgi 8000,
 * scgi 4000; uwsgi has none, so its port is required), one trailing '/'
 * ignored, an IPv6 literal rewritten in its RFC 5952 form. The result is
 * what httpd names the worker of that url, and fits it: at most 267 bytes.
 * Returns NULL on success, else a static message saying what is wrong
 * ("a path is not allowed", ...). Rejected: schemes httpd does not proxy
 * to a balancer member (all but the ten above, balancer:// among them),
 * hosts longer than 253 bytes, paths other than "/", queries, fragments,
 * userinfo, ports that are 0, above 65535 or not decimal, a missing host,
 * non-printable bytes, the "unix:" socket form, and results longer than
 * outsize - 1.
 */
const char *beacon_url_canonicalize(const char *url, apr_size_t len, char *out,
                                    apr_size_t outsize);

/* ------------------------------------------------------------------ */
/* Lease and replay table                                              */

typedef enum {
    BEACON_REC_FREE = 0,    /* slot unused */
    BEACON_REC_NEW,         /* accepted, not yet added */
    BEACON_REC_PENDING,     /* add failed; retry after retry_at */
    BEACON_REC_ACTIVE,      /* a member in rotation, lease running */
    BEACON_REC_EVICTED,     /* lease lapsed or leaving: disabled */
    BEACON_REC_NOT_MANAGED  /* the caller declined it: someone else's url */
} beacon_state_t;

/* The state's name for people ("pending add", "not managed"). */
const char *beacon_state_name(beacon_state_t state);

/* What the caller must do to the balancer after an accepted announcement. */
typedef enum {
    BEACON_ACT_NONE = 0,  /* nothing: a leaving from a url never added */
    BEACON_ACT_RENEW,     /* the lease of a member in rotation runs on */
    BEACON_ACT_ADD,       /* create the member; report with added/add_failed */
    BEACON_ACT_ENABLE,    /* back into rotation: it was evicted and is back */
    BEACON_ACT_DISABLE,   /* out of rotation: it announced state=leaving */
    BEACON_ACT_WAIT,      /* an add failed recently; back-off not over */
    BEACON_ACT_NOT_MANAGED /* leave alone: the caller declined this url */
} beacon_action_t;

/* The action's name as beaconctl listen prints it ("add", "renew",
 * "ignore" for NONE). */
const char *beacon_action_name(beacon_action_t action);

typedef struct {
    char url[BEACON_URL_MAX];  /* canonical url, the key */
    beacon_state_t state;
    apr_int64_t high_ts;       /* replay high-water mark; 0 = none yet */
    apr_time_t last_seen;      /* receiver clock at the last acceptance */
    apr_time_t retry_at;       /* PENDING: earliest next add */
    apr_interval_time_t backoff; /* PENDING: the current back-off */
    apr_uint32_t hash;
    apr_int32_t next;          /* bucket chain (or free list), index or -1 */
    apr_int32_t self;          /* its own index: its table is found from it */
    apr_int32_t older, newer;  /* its deadline list, by last_seen; or -1 */
    apr_int32_t list;          /* which deadline list (the table's own) */
} beacon_record_t;

#define BEACON_TABLE_MAX_CAPACITY 65536 /* a larger table is refused */
#define BEACON_BACKOFF_MIN apr_time_from_sec(1)
#define BEACON_BACKOFF_MAX apr_time_from_sec(64)

/* A chain of records by index, oldest last_seen first. */
typedef struct {
    apr_int32_t head, tail;    /* -1 when empty */
} beacon_table_list_t;

#define BEACON_TABLE_LISTS 3   /* in rotation, not, lapsed (beacon_table.c) */

/*
 * A table of a capacity chosen at init, in one block the caller places
 * where it likes (pool, heap): a header, then the records, then the hash
 * buckets (a power of two, at least 2 x capacity). Records are linked by
 * index, never by pointer, so the table may be copied byte for byte
 * (beacon_table_size bytes).
 *
 * Every operation on one record (find, accept, insert, release, a state
 * change) is O(1) at any capacity, and so are the housekeeping calls when
 * nothing is due: the records in use are kept in lists ordered by
 * last_seen, one per deadline rule, so the next deadline is a list's head
 * and a lapse or release takes heads only. (A record whose last_seen is
 * older than its list's newest, after a clock step back or a remembered
 * mark, is placed by a walk from the newest end.)
 */
typedef struct {
    apr_uint32_t capacity;     /* records */
    apr_uint32_t nbuckets;     /* power of two, >= 2 x capacity */
    apr_int32_t free_head;     /* chain of free slots through rec[].next */
    unsigned count;            /* records in use */
    apr_interval_time_t timeout;  /* lease; 0 = never evict */
    apr_interval_time_t max_skew; /* release after > 2 x max_skew of silence */
    beacon_table_list_t lists[BEACON_TABLE_LISTS];
    char service[BEACON_SERVICE_MAX + 1]; /* svc= required; "" = any or none */
    beacon_record_t rec[];     /* capacity of them, then nbuckets heads */
} beacon_table_t;

/* The bytes of a table of capacity records; 0 when capacity is 0 or more
 * than BEACON_TABLE_MAX_CAPACITY (refused). Linear in capacity. */
apr_size_t beacon_table_size(unsigned capacity);

/* Makes the beacon_table_size(capacity) bytes at t an empty table; the
 * bytes may hold anything before. capacity must be one that
 * beacon_table_size accepts. */
void beacon_table_init(beacon_table_t *t, unsigned capacity,
                       apr_interval_time_t timeout,
                       apr_interval_time_t max_skew);

/* An empty table of capacity records in p; NULL when capacity is refused. */
beacon_table_t *beacon_table_make(apr_pool_t *p, unsigned capacity,
                                  apr_interval_time_t timeout,
                                  apr_interval_time_t max_skew);

/* The records the table holds at most. */
unsigned beacon_table_capacity(const beacon_table_t *t);

/* The index of rec in its table (0 to capacity - 1): for arrays that the
 * caller keeps beside the table. */
unsigned beacon_table_index(const beacon_record_t *rec);

/*
 * The service this receiver is (ProxyBeaconService): from now on a
 * datagram must name it in svc=, or it is dropped as BEACON_DROP_WRONG_SERVICE
 * before its url or timestamp touch the table. NULL or "" accepts any
 * datagram, with or without svc=. service must be valid
 * (beacon_service_is_valid).
 */
void beacon_table_set_service(beacon_table_t *t, const char *service);

beacon_record_t *beacon_table_find(beacon_table_t *t, const char *url);

/*
 * Step 8 and the state machine for one verified announcement of canonical
 * url with timestamp ts, received at now. Creates the record if new
 * (BEACON_DROP_TABLE_FULL when all are in use); BEACON_DROP_REPLAYED_TS
 * unless ts > the record's high-water mark. On BEACON_OK the lease is
 * renewed, *rec points to the record and *action says what to do; leaving
 * is non-zero for state=leaving. A NOT_MANAGED record gives
 * BEACON_ACT_NOT_MANAGED (its high-water mark and last_seen advance too,
 * which times its release). state=leaving from a url never
 * added (NEW, PENDING) changes nothing. A url of BEACON_URL_MAX bytes or more
 * gives BEACON_DROP_UNACCEPTABLE_URL.
 */
beacon_reason_t beacon_table_accept(beacon_table_t *t, const char *url,
                                    apr_int64_t ts, int leaving, apr_time_t now,
                                    beacon_record_t **rec,
                                    beacon_action_t *action);

/* Outcome of BEACON_ACT_ADD: ACTIVE, or PENDING with a doubled back-off. */
void beacon_table_added(beacon_record_t *rec);
void beacon_table_add_failed(beacon_record_t *rec, apr_time_t now);
/* The caller will not manage this url (someone else owns it): its later
 * announcements give BEACON_ACT_NOT_MANAGED until the record is released. */
void beacon_table_not_managed(beacon_record_t *rec);

/*
 * Returns the next ACTIVE record whose lease lapsed at now (silent for
 * more than timeout), after marking it EVICTED: the caller takes it out of
 * rotation. Start with *cursor = 0; NULL when there are no more.
 * Never returns anything when timeout is 0.
 */
beacon_record_t *beacon_table_next_lapsed(beacon_table_t *t, apr_time_t now,
                                          unsigned *cursor);

/*
 * Releases the records that are not members in rotation (NEW, PENDING,
 * EVICTED, NOT_MANAGED) once silent for more than 2 x max_skew: by then
 * every datagram they accepted is stale, so dropping the high-water mark
 * admits no replay. Returns how many were released.
 */
unsigned beacon_table_release(beacon_table_t *t, apr_time_t now);

/*
 * The earliest time at which a lease lapses or a record can be released;
 * 0 when nothing is due. (A pending add is retried on the member's next
 * announcement after retry_at, so it sets no deadline.)
 */
apr_time_t beacon_table_next_deadline(const beacon_table_t *t);

/*
 * Adopts an existing beacon member (watchdog hand-off, restart): a record
 * with a fresh lease from now, ACTIVE, or EVICTED when it is disabled,
 * and high_ts as its high-water mark (the last one the caller kept; 0 if
 * none), so that no datagram accepted before is accepted again. Returns
 * BEACON_OK, or BEACON_DROP_TABLE_FULL; an existing record is left as it
 * is.
 */
beacon_reason_t beacon_table_adopt(beacon_table_t *t, const char *url,
                                   int disabled, apr_int64_t high_ts,
                                   apr_time_t now);

/*
 * A url that is no member any more (its slot went to another url) but
 * whose replay mark a new owner must keep (watchdog hand-off, restart): a
 * NEW record with high_ts as its high-water mark and last_seen as its last
 * acceptance, so that it is released 2 x max_skew after that, when every
 * datagram it accepted is stale; its next fresh announcement adds it
 * anew. An existing record only has its mark raised to high_ts. Returns
 * BEACON_OK, or BEACON_DROP_TABLE_FULL.
 */
beacon_reason_t beacon_table_remember(beacon_table_t *t, const char *url,
                                      apr_int64_t high_ts, apr_time_t last_seen);

/*
 * An add failed for want of room that the caller knows frees at ready_at
 * (a member's slot that may be reused then): PENDING until ready_at when
 * that is sooner than the back-off beacon_table_add_failed would give.
 */
void beacon_table_add_deferred(beacon_record_t *rec, apr_time_t now,
                               apr_time_t ready_at);

/*
 * The member url is no longer in the balancer (its place went to another
 * url): its record, if any, is NEW again, so its next announcement adds
 * it anew; the high-water mark stays.
 */
void beacon_table_unlisted(beacon_table_t *t, const char *url);

/* ------------------------------------------------------------------ */
/* Fan-out: a sender's datagrams to every address of every proxy name  */

#define BEACON_FANOUT_MAX_ADDRS 64  /* addresses used per name; more are cut */
#define BEACON_FANOUT_KEEP_ROUNDS 3 /* failed lookups a name keeps its set */
#define BEACON_SOCKADDR_TEXT_MAX 56 /* "[v6]:port" and its NUL */

/* One destination, as sendto() takes it. */
typedef struct {
    union {
        struct sockaddr sa;
        struct sockaddr_in sin;
        struct sockaddr_in6 sin6;
    } u;
    apr_uint32_t len;          /* of u as used: sin's or sin6's size */
} beacon_sockaddr_t;

/* "127.0.0.2:5555" or "[::1]:5555" into buf; returns buf. */
const char *beacon_sockaddr_text(const beacon_sockaddr_t *a, char *buf,
                                 apr_size_t size);

/* What one lookup of a name found. */
typedef struct {
    apr_status_t status;       /* APR_SUCCESS, or why nothing was found */
    unsigned n;                /* addrs[0..n): distinct, in the resolver's order */
    unsigned cut;              /* answers past the cap (a repeat counts again) */
    beacon_sockaddr_t addrs[BEACON_FANOUT_MAX_ADDRS];
} beacon_lookup_t;

/*
 * Looks host up: every A and AAAA address, each once, the first
 * BEACON_FANOUT_MAX_ADDRS kept; as the system resolver's AI_ADDRCONFIG
 * has it, AAAA records only on a host with an IPv6 address (besides
 * ::1), A records only on one with an IPv4 address. The one step of the fan-out that blocks
 * (DNS): callers run it where no announcement waits for it. Scratch memory
 * from p. Nothing found is APR_ENOENT.
 */
void beacon_lookup(beacon_lookup_t *r, const char *host, apr_port_t port,
                   apr_pool_t *p);

/* Adds one address a resolver found to r (r->n and r->cut start at 0):
 * one already there is skipped, one past the cap counted in r->cut. */
void beacon_lookup_add(beacon_lookup_t *r, const beacon_sockaddr_t *a);

typedef enum {
    BEACON_NAME_PENDING = 0,   /* not looked up yet */
    BEACON_NAME_RESOLVED,      /* the last lookup found addresses */
    BEACON_NAME_KEPT,          /* lookups fail; the last good set is used */
    BEACON_NAME_FAILED         /* no address: never found, or kept too long */
} beacon_name_state_t;

/* "pending", "resolved", "kept" or "failed", as status pages say it. */
const char *beacon_name_state_name(beacon_name_state_t state);

typedef struct {
    beacon_sockaddr_t to;
    apr_uint32_t sent, errors; /* datagrams sent to it, and failed */
    int duplicate;             /* an earlier name or entry has it: not sent */
} beacon_fanout_addr_t;

typedef struct {
    const char *spec;          /* as configured, for messages */
    const char *host;
    apr_port_t port;
    int literal;               /* an IP address: used as is, never looked up */
    beacon_name_state_t state;
    unsigned failed_rounds;    /* lookups failed in a row */
    apr_uint32_t lookup_failures; /* in all */
    apr_status_t last_error;   /* of the last failed lookup */
    unsigned cut;              /* answers past the cap, last good lookup */
    unsigned naddrs;
    beacon_fanout_addr_t addrs[BEACON_FANOUT_MAX_ADDRS];
} beacon_fanout_name_t;

/* "A, B, C": every address of name, each as beacon_sockaddr_text writes
 * it, cut short to fit size; returns buf. BEACON_ADDRESS_LIST_MAX holds
 * them all. */
#define BEACON_ADDRESS_LIST_MAX \
    (BEACON_FANOUT_MAX_ADDRS * (BEACON_SOCKADDR_TEXT_MAX + 2))
const char *beacon_fanout_name_addresses(const beacon_fanout_name_t *name,
                                         char *buf, apr_size_t size);

/*
 * Every proxy one sender names, with the addresses each resolves to and
 * what was sent to each. A plain block (the module keeps it in shared
 * memory for the status pages), written by one thread at a time under
 * the caller's lock; readers elsewhere use beacon_fanout_read.
 */
typedef struct {
    volatile apr_uint32_t version; /* odd while an update writes */
    unsigned nnames;
    beacon_fanout_name_t names[1]; /* nnames of them */
} beacon_fanout_t;

/* Bytes for a fan-out of nnames names (at least 1). */
apr_size_t beacon_fanout_size(unsigned nnames);

/* Makes f (beacon_fanout_size(nnames) bytes) an empty fan-out. */
void beacon_fanout_init(beacon_fanout_t *f, unsigned nnames);

/*
 * Names destination i. An IP address is resolved here, once; any other
 * host waits for beacon_fanout_update. spec and host must outlive f.
 */
void beacon_fanout_name(beacon_fanout_t *f, unsigned i, const char *spec,
                        const char *host, apr_port_t port);

/* What an update changed, for the caller's log. */
typedef struct {
    unsigned added, removed;   /* addresses */
    unsigned cut;              /* found past the cap, not used */
    int kept;                  /* the lookup failed; the set stays */
    int lost;                  /* failed once too often: the set is dropped */
} beacon_fanout_change_t;

/*
 * Applies a lookup of name i. Found addresses replace the set (those that
 * stay keep their counts); a failed or empty lookup keeps the last good
 * set for BEACON_FANOUT_KEEP_ROUNDS lookups in a row, then drops it. An
 * address two names share is sent to once, for the first name.
 */
void beacon_fanout_update(beacon_fanout_t *f, unsigned i,
                          const beacon_lookup_t *r,
                          beacon_fanout_change_t *change);

/* Sends one datagram to one address of f->names[name]: APR_SUCCESS, or
 * why not. */
typedef apr_status_t (*beacon_send_fn)(void *ctx, unsigned name,
                                       const beacon_sockaddr_t *to,
                                       const char *buf, apr_size_t len);

/*
 * Sends buf once to every address of every name (duplicates once),
 * counting each address's sent and errors; returns how many got it.
 * Allocates nothing: the leaving datagram may go from a signal handler.
 */
unsigned beacon_fanout_send(beacon_fanout_t *f, const char *buf,
                            apr_size_t len, beacon_send_fn send, void *ctx);

/* A consistent copy of f, which another thread may update meanwhile;
 * copy has beacon_fanout_size(f->nnames) bytes. */
void beacon_fanout_read(const beacon_fanout_t *f, beacon_fanout_t *copy);

/* ------------------------------------------------------------------ */
/* All receiver steps at once                                          */

typedef struct {
    beacon_datagram_t dg;
    char url[BEACON_URL_MAX]; /* canonical url; "" for a heartbeat */
    beacon_record_t *rec;     /* NULL for a heartbeat */
    beacon_action_t action;
    /* With BEACON_DROP_REPLAYED_TS: the ts is the one last accepted for
     * this url, so this is a second copy of that very announcement (a
     * proxy a sender reaches at two addresses, or the network), not a
     * replay of an older one. Still dropped. */
    int second_copy;
    /* With BEACON_DROP_URL_NOT_ALLOWED: why (beacon_reach_refusal's
     * message), and whether the balancer's list refused it (1) or the
     * receiver's (0). */
    const char *refusal;
    int refused_by_balancer;
} beacon_event_t;

/*
 * Steps 1 to 8 of the wire format for one datagram: beacon_verify, the
 * table's service (step 6, BEACON_DROP_WRONG_SERVICE, heartbeats too),
 * then (when a url is present) beacon_url_canonicalize, the reach gate
 * (BEACON_DROP_URL_NOT_ALLOWED, before the table: a refused url creates
 * no record and moves no mark) and beacon_table_accept.
 * A heartbeat (no url) gives BEACON_OK with ev->rec NULL and no action.
 * beacon_receive checks the default reach.
 */
beacon_reason_t beacon_receive(beacon_table_t *t, const beacon_key_t *key,
                               const char *buf, apr_size_t len, apr_time_t now,
                               beacon_event_t *ev);

/* beacon_receive accepting any of keys[0..nkeys), as beacon_verify_any,
 * with gate's reach (NULL: the defaults, no source). */
beacon_reason_t beacon_receive_any(beacon_table_t *t, const beacon_key_t *keys,
                                   unsigned nkeys, const char *buf,
                                   apr_size_t len, apr_time_t now,
                                   const beacon_reach_gate_t *gate,
                                   beacon_event_t *ev);

/*
 * Steps 7 and 8 for a datagram beacon_verify_ring passed, in ev->dg: its
 * url canonicalized, checked against gate (NULL: the defaults, no
 * source) and accepted into t, the table of the balancer that
 * ev->dg.service picks (t's own service is not checked: the ring did).
 * ev's other fields are set as beacon_receive sets them; a heartbeat
 * gives BEACON_OK with ev->rec NULL.
 */
beacon_reason_t beacon_receive_verified(beacon_table_t *t, apr_time_t now,
                                        const beacon_reach_gate_t *gate,
                                        beacon_event_t *ev);

/* The gate's verdict on a canonical url: NULL when both lists allow it,
 * else why, with *by_balancer (when not NULL) 1 when the balancer's list
 * refused it, 0 the receiver's (or its defaults), -1 no list: a reserved
 * slot's name (beacon_url_is_reserved), which none may allow. */
const char *beacon_reach_gate_refusal(const beacon_reach_gate_t *gate,
                                      const char *url, int *by_balancer);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_H */
