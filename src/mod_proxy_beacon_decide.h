/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The balancer wing's decisions, apart from their effects: what an
 * announcement changes in a member, which of httpd's flags a state sets,
 * how an add ends, when a route is given up, when a slot is safe to
 * recycle, what beacon writes of maxattempts, and the rate gate of the
 * lines a peer can trigger. Each takes plain values (a registry entry, a
 * view of a slot, what a backend announced) and returns a plan, which
 * mod_proxy_beacon_balancer.c and mod_proxy_beacon_recycle.c carry out
 * through mod_proxy_beacon_worker.c. No httpd header: its unit tests
 * (tests/unit/test_decide.c) build it with APR alone.
 */
#ifndef MOD_PROXY_BEACON_DECIDE_H
#define MOD_PROXY_BEACON_DECIDE_H

#include "mod_proxy_beacon_entry.h"

/* ------------------------------------------------------------------ */
/* The balancer wing's vocabulary                                      */

/* A member's slot in the balancer's shared memory, which every process
 * reads on each request (httpd's proxy_worker_shared). */
typedef struct beacon_slot beacon_slot;

/* httpd's status flags of a member, by beacon's names (the values are
 * httpd's; mod_proxy_beacon_worker.c checks that they are). */
#define BEACON_W_IGNORE_ERRORS 0x0002u /* I */
#define BEACON_W_DRAIN         0x0004u /* N */
#define BEACON_W_DISABLED      0x0020u /* D */
#define BEACON_W_STOPPED       0x0040u /* S */
#define BEACON_W_IN_ERROR      0x0080u /* E */
#define BEACON_W_HOT_STANDBY   0x0100u /* H */
#define BEACON_W_HC_FAIL       0x0400u /* C */
#define BEACON_W_HOT_SPARE     0x0800u /* R */

/* The flags balancer-manager gives the admin; Disabled is beacon's. */
#define BEACON_ADMIN_FLAGS                                              \
    (BEACON_W_STOPPED | BEACON_W_DRAIN | BEACON_W_HOT_STANDBY |         \
     BEACON_W_HOT_SPARE | BEACON_W_IGNORE_ERRORS)

/* A reserved slot no member holds: out of rotation and stopped. */
#define BEACON_PLACEHOLDER_FLAGS (BEACON_W_DISABLED | BEACON_W_STOPPED)

/*
 * What beacon's policy reads of a member's slot, taken in one go. The
 * strings point into shared memory: read them under the balancer's locks
 * (or in the owner, which alone writes them) and copy what is kept.
 */
typedef struct {
    const char *name;        /* the member's url, as httpd names it */
    const char *route;       /* "" when it has none */
    int lbfactor;            /* hundredths */
    apr_uint32_t status;     /* BEACON_W_* and httpd's others */
    apr_uint64_t elected;    /* requests httpd elected it for, ever */
    apr_size_t busy;         /* requests on it now (httpd's count) */
    apr_interval_time_t timeout;      /* its own, else httpd's Timeout */
    apr_interval_time_t conn_timeout; /* its own, else timeout */
    apr_interval_time_t acquire;      /* 0 when it has none */
    apr_interval_time_t address_ttl;  /* how long a child caches its address */
    int renamable;           /* nothing of it lives outside the slot (no
                              * unix socket, no health check) */
    int expiry_unknown;      /* it caches addresses, and this httpd keeps no
                              * epoch to tell when they expire */
    apr_time_t addresses_expire_at; /* wall clock when every child's
                              * cached address has expired; 0: none */
} beacon_slot_view;
/* A look at a member's slot before changing it: the slot, and the other
 * member of this child's list that holds route, when one is asked for
 * and the slot has another route. */
typedef struct {
    beacon_slot_view self;
    beacon_slot *holder;          /* NULL: none, or no route asked */
    beacon_slot_view holder_view; /* when holder */
} beacon_slot_look;
/* What a change of a member's slot writes, all of it in one go (under the
 * balancer's locks), as balancer-manager edits a member. */
typedef struct {
    apr_uint32_t set, clear;  /* status flags, nothing else of the word */
    const char *route;        /* the member's new route; NULL: unchanged */
    beacon_slot *route_from;  /* a member that gives route up, or NULL */
    int lbfactor;             /* hundredths; 0: unchanged */
    int enable;               /* back into rotation (after the rest): D
                               * cleared, and its error state made due for
                               * retry, since the announcement is fresh
                               * evidence that the backend is up */
} beacon_slot_change;

/* What a backend announces of itself besides its url (wire format 1.1):
 * the backend owns these; what it does not announce is the admin's. */
typedef struct {
    char route[BEACON_ROUTE_MAX + 1]; /* "": not announced */
    int lbfactor;                     /* hundredths; 0: not announced */
    beacon_wire_state_t state;        /* draining: N, standby: H (1.2) */
    int claims;                       /* the balancer routes contexts, and
                                       * this announcement says which the
                                       * member serves (ctx, below) */
    beacon_span_t ctx;                /* ctx=, checked; absent: none */
} beacon_member_attrs;

typedef enum {
    BEACON_ADD_DONE,          /* created, shared, initialized, confirmed */
    BEACON_ADD_RECYCLED,      /* took the slot of a long-gone member */
    BEACON_ADD_ADOPTED,       /* existed already, created by beacon: enabled */
    BEACON_ADD_NOT_OURS,      /* a member beacon did not create */
    BEACON_ADD_NO_SLOT,       /* growth exhausted */
    BEACON_ADD_FAILED,        /* httpd refused; details logged */
    BEACON_ADD_NOT_CONFIRMED  /* added, but not found afterwards */
} beacon_add_result;

/* ------------------------------------------------------------------ */
/* What an announcement changes                                        */

/* The flag an announced state asks for (wire format 1.2): draining is
 * httpd's drain (N), standby its hot standby (H); any other state none. */
apr_uint32_t beacon_decide_state_flags(beacon_wire_state_t state);

/*
 * Whether the member holding a route gives it up to a member whose
 * backend announces it: only when beacon took the holder out of rotation
 * (holder: its registry entry; NULL, not beacon's) and nothing of the
 * admin's is on it (status: its slot's flags). A departed backend's
 * replacement announcing the same jvmRoute gets it; a member in rotation,
 * or one the admin configured or stopped, keeps it.
 */
int beacon_decide_route_given_up(const beacon_entry *holder,
                                 apr_uint32_t status);

/*
 * What the backend's announcement attrs asks at now of its member, entry
 * e, as look saw its slot, into *c (zeroed first; c->enable is the
 * caller's). It is compared with the member as it is, not with the last
 * announcement: a value the member lost (a restart gave back an older
 * one, an admin typed another) is set again. A load factor is set when
 * beacon_decide_load_applies. The state sets what the slot lacks and
 * clears what an earlier announced state set (e->announced_flags) and it
 * no longer asks for; never an admin's flag. A leaving announces no state
 * (the member goes out of rotation). holder: the registry entry of
 * look->holder (NULL: none, or not beacon's). Returns 1 when the route is
 * refused (another member keeps it).
 */
int beacon_decide_attrs(const beacon_slot_look *look,
                        const beacon_entry *holder, const beacon_entry *e,
                        const beacon_member_attrs *attrs,
                        apr_interval_time_t slowstart, apr_time_t now,
                        beacon_slot_change *c);

/* ------------------------------------------------------------------ */
/* Load a backend reports (its lbfactor, changing)                     */

/* A reported factor replaces the one in force when it differs by at least
 * this share of it (percent), or once the last change is this old: a
 * load that wavers a little moves the factor at most every 10 s, a real
 * change at once. */
#define BEACON_LOAD_STEP 5
#define BEACON_LOAD_SETTLE apr_time_from_sec(10)

/* A change of a member's factor is logged at info when its factor had
 * not changed for this long (a changed static value), else at debug (a
 * backend reporting its load): 1,000 members reporting every second
 * write no line at info. */
#define BEACON_LOAD_QUIET apr_time_from_sec(60)

/* Whether announced (hundredths) replaces current at now, the member's
 * factor having last changed at changed_at (0: never). */
int beacon_decide_load_applies(int announced, int current,
                               apr_time_t changed_at, apr_time_t now);

/* Whether a change of the factor at now is a load report's (logged at
 * debug) rather than a changed static value's (info). */
int beacon_decide_load_is_report(apr_time_t changed_at, apr_time_t now);

/* Whether c changes anything of the slot. */
int beacon_decide_changes_slot(const beacon_slot_change *c);

/* The flags an announced state has set once c is applied, from announced
 * (what it had set before). */
apr_uint32_t beacon_decide_announced_after(apr_uint32_t announced,
                                           const beacon_slot_change *c);

/*
 * Beacon takes a member out of rotation (disabled) or puts it back, into
 * *c (zeroed first): out, only D, and what an announced state set
 * (announced; it would hold recycling back as an admin's flag does):
 * Stopped, Drain and health-check failures are the admin's. Back, D
 * cleared and its error state made due for retry. Returns the flags an
 * announced state has set afterwards: none once out.
 */
apr_uint32_t beacon_decide_rotation(int disabled, apr_uint32_t announced,
                                    beacon_slot_change *c);

/* The same in the entry e: when it went out (now) and how often httpd had
 * elected it then (elected, for recycling's G1); back in rotation, it is
 * no longer forgotten. */
void beacon_decide_mark_out(beacon_entry *e, int out, apr_uint64_t elected,
                            apr_time_t now);

/* An accepted announcement with replay timestamp ts heard at now, into
 * entry e: a member's mark rises and its last-heard time is now; a
 * replay mark (BEACON_ENTRY_MARK, a url whose slot went to another)
 * changes only when ts is newer. */
void beacon_decide_heard(beacon_entry *e, apr_int64_t ts, apr_time_t now);

/* ------------------------------------------------------------------ */
/* Slow start                                                          */

/* A member that joins, or returns to rotation after an eviction, a
 * leaving or a drain, gets this share of its factor (percent; Envoy's
 * floor) and the whole of it over the slow start, in steps of
 * max(1 s, slow start / BEACON_RAMP_STEPS) (HAProxy's 5 %). */
#define BEACON_RAMP_FLOOR 10
#define BEACON_RAMP_STEPS 20

/* The share of its factor (percent) a member whose slow start of
 * duration began at since gets at now: 100 when there is none (since or
 * duration 0) or it is over. A clock stepped back starts it again. */
int beacon_decide_ramp_percent(apr_time_t since, apr_interval_time_t duration,
                               apr_time_t now);

/* factor (hundredths) at percent of itself, at least 1.00. */
int beacon_decide_ramped(int factor, int percent);

/* The factor a slow start leads to: the one announced (attrs, may be
 * NULL), else the one e kept when it began, else current (the slot's). */
int beacon_decide_ramp_base(const beacon_entry *e,
                            const beacon_member_attrs *attrs, int current);

/* A slow start of e begins at now: the factor it leads to is not yet
 * known, unless a slow start was under way (its slot holds a step). */
void beacon_decide_ramp_start(beacon_entry *e, apr_time_t now);

/* The first step of the slow start e just began, its slot's factor being
 * current: the factor to set; e keeps the factor it leads to. */
int beacon_decide_ramp_first(beacon_entry *e, int current);

/* The entry's slow start once a plan made with it is applied: it keeps
 * the factor it leads to, and ends when over. */
void beacon_decide_ramp_after(beacon_entry *e, const beacon_member_attrs *attrs,
                              int current, apr_interval_time_t slowstart,
                              apr_time_t now);

/* A restart is no join: a member it restores ends its slow start with its
 * whole factor (what the restart gives back of the slot, e->admin). */
void beacon_decide_ramp_restart(beacon_entry *e);

/* ------------------------------------------------------------------ */
/* How an add ends                                                     */

typedef enum {
    BEACON_JOIN_RESERVED,  /* took a free reserved slot (a placeholder) */
    BEACON_JOIN_GROWTH,    /* defined in a free growth slot, not yet
                            * initialized nor listed */
    BEACON_JOIN_RECYCLED,  /* took the slot of a long-gone member */
    BEACON_JOIN_ADOPTED    /* found in the list, beacon's own */
} beacon_join_way;

/* The one ending of every add, by the way it found its slot. */
typedef struct {
    beacon_add_result result;
    int enable;    /* put in rotation after its attributes */
    int commit;    /* still to be made a member (httpd's init and list) */
    int recount;   /* the balancer has one member more: maxattempts */
    int confirm;   /* found in the list afterwards, or NOT_CONFIRMED */
    int ramp;      /* a new member: a slow start, when one is configured */
} beacon_join_plan;

void beacon_decide_join(beacon_join_way way, beacon_join_plan *plan);

/*
 * maxattempts as httpd sets it for static members (members minus one),
 * for a balancer beacon fills at runtime, only while the value is
 * beacon's: one the configuration set before beacon wrote any (written <
 * 0), or one typed into balancer-manager (which writes the value, not the
 * flag that puts it in effect) differs from written, what beacon wrote
 * last, and is the admin's. Returns 0 when nothing is to be set (fewer
 * than two members), else 1 with *value: members - 1, for beacon to
 * write and keep as written; or -1, the admin's, only put in effect.
 */
int beacon_decide_failover(int members, apr_int32_t written, int max_attempts,
                           int in_effect, int *value);

/* ------------------------------------------------------------------ */
/* When a slot is safe to recycle (mod_proxy_beacon_recycle.c says why) */

/* A slot that is beacon's to rename: a member beacon took out of
 * rotation, with nothing of the admin's on it, and nothing httpd keeps
 * outside the slot (health checks, a unix socket). */
int beacon_decide_recyclable(const beacon_entry *e, const beacon_slot_view *v);

/* G1's span: longer than a request elected before the slot left rotation
 * may still be connecting, and than a child may cache its address. */
apr_interval_time_t beacon_decide_quiet_span(const beacon_slot_view *v);

typedef enum {
    BEACON_GATE_OPEN,   /* may be renamed now */
    BEACON_GATE_WAIT,   /* not yet: ready_at says when, when known */
    BEACON_GATE_NEVER   /* not beacon's, or no way to tell when caches
                         * expire */
} beacon_gate_state;

typedef struct {
    beacon_gate_state state;
    apr_time_t ready_at;  /* WAIT: when it may open; 0 unknown */
    int drift;            /* OPEN with busy requests counted long after it
                           * left rotation: httpd's count drifted */
    int restart;          /* a request was elected to it since it left
                           * rotation: the owner restarts G1's clock at now
                           * (e->out_since, e->elected_at_out) */
} beacon_gate;

/* Whether e's slot, as v shows it, may be renamed at now; only the owner
 * restarts G1's clock (others wait and look again). */
void beacon_decide_recycle_gate(const beacon_entry *e,
                                const beacon_slot_view *v, apr_time_t now,
                                int owner, beacon_gate *g);

/* ------------------------------------------------------------------ */
/* The balancer's lbmethod                                             */

/*
 * Why lbmethod (httpd's provider name, as ProxySet lbmethod= names it)
 * serves a balancer beacon feeds badly, as a clause for apache2 -t's
 * warning: backends announce their load as lbfactor= and a slow start
 * ramps it, so a method that ignores lbfactor, or herds new and recycled
 * members, undoes both. NULL when it serves them (byrequests, httpd's
 * default), and for a method beacon cannot judge (another module's).
 */
const char *beacon_decide_lbmethod_flaw(const char *lbmethod);

/* ------------------------------------------------------------------ */
/* Lines a peer can trigger                                            */

/* At most one log line per BEACON_LOG_EVERY for a thing a peer can repeat. */
#define BEACON_LOG_EVERY apr_time_from_sec(10)

typedef struct {
    apr_time_t last;
    unsigned suppressed;
} beacon_rate_limit;

/*
 * Whether a line may be logged at now, at most once per every. If so,
 * *suppressed says how many were held back since the last one, and the
 * count restarts. A clock stepped back ends the quiet period.
 */
int beacon_decide_rate_allows(beacon_rate_limit *rl, apr_time_t now,
                              apr_interval_time_t every, unsigned *suppressed);

#endif /* MOD_PROXY_BEACON_DECIDE_H */
