/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The balancer wing's decisions; see mod_proxy_beacon_decide.h. Nothing
 * here reads a clock, a lock or shared memory: every input is a value,
 * and every effect is the caller's.
 */

#include "mod_proxy_beacon_decide.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* What an announcement changes                                        */

apr_uint32_t beacon_decide_state_flags(beacon_wire_state_t state)
{
    switch (state) {
    case BEACON_WIRE_DRAINING: return BEACON_W_DRAIN;
    case BEACON_WIRE_STANDBY:  return BEACON_W_HOT_STANDBY;
    default:                   return 0;
    }
}

int beacon_decide_route_given_up(const beacon_entry *holder,
                                 apr_uint32_t status)
{
    return holder != NULL && holder->out && (status & BEACON_W_DISABLED) &&
           !(status & BEACON_ADMIN_FLAGS);
}

/* The factor a plan sets, into c->lbfactor: a slow start's step (and its
 * end) at once, a reported load as beacon_decide_load_applies. */
static void plan_factor(const beacon_slot_view *v, const beacon_entry *e,
                        const beacon_member_attrs *attrs,
                        apr_interval_time_t slowstart, apr_time_t now,
                        beacon_slot_change *c)
{
    if (e->ramp_since) {
        int want = beacon_decide_ramped(
            beacon_decide_ramp_base(e, attrs, v->lbfactor),
            beacon_decide_ramp_percent(e->ramp_since, slowstart, now));

        c->lbfactor = want != v->lbfactor ? want : 0;
    }
    else if (attrs && attrs->lbfactor &&
             beacon_decide_load_applies(attrs->lbfactor, v->lbfactor,
                                        e->lbfactor_changed_at, now)) {
        c->lbfactor = attrs->lbfactor;
    }
}

int beacon_decide_attrs(const beacon_slot_look *look,
                        const beacon_entry *holder, const beacon_entry *e,
                        const beacon_member_attrs *attrs,
                        apr_interval_time_t slowstart, apr_time_t now,
                        beacon_slot_change *c)
{
    const beacon_slot_view *v = &look->self;
    int refused = 0;

    memset(c, 0, sizeof(*c));
    plan_factor(v, e, attrs, slowstart, now, c);
    if (attrs == NULL) {
        return 0;
    }
    if (attrs->route[0] && strcmp(attrs->route, v->route) != 0) {
        /* stickiness must name one member: the later one goes without */
        refused = look->holder &&
                  !beacon_decide_route_given_up(holder,
                                                look->holder_view.status);
        if (!refused) {
            c->route = attrs->route;
            c->route_from = look->holder;
        }
    }
    if (attrs->state != BEACON_WIRE_LEAVING) {
        apr_uint32_t asked = beacon_decide_state_flags(attrs->state);

        c->set = asked & ~v->status;
        c->clear = e->announced_flags & ~asked;
    }
    return refused;
}

/* A clock stepped back makes the last change as old as can be. */
static int changed_long_ago(apr_time_t changed_at, apr_time_t now,
                            apr_interval_time_t span)
{
    return changed_at == 0 || now < changed_at || now - changed_at >= span;
}

int beacon_decide_load_applies(int announced, int current,
                               apr_time_t changed_at, apr_time_t now)
{
    int delta = announced > current ? announced - current : current - announced;

    return delta != 0 &&
           (delta * 100 >= current * BEACON_LOAD_STEP ||
            changed_long_ago(changed_at, now, BEACON_LOAD_SETTLE));
}

int beacon_decide_load_is_report(apr_time_t changed_at, apr_time_t now)
{
    return !changed_long_ago(changed_at, now, BEACON_LOAD_QUIET);
}

int beacon_decide_changes_slot(const beacon_slot_change *c)
{
    return c->route || c->lbfactor || c->set || c->clear || c->enable;
}

apr_uint32_t beacon_decide_announced_after(apr_uint32_t announced,
                                           const beacon_slot_change *c)
{
    return (announced & ~c->clear) | c->set;
}

apr_uint32_t beacon_decide_rotation(int disabled, apr_uint32_t announced,
                                    beacon_slot_change *c)
{
    memset(c, 0, sizeof(*c));
    c->enable = !disabled;
    if (!disabled) {
        return announced;
    }
    c->set = BEACON_W_DISABLED;
    c->clear = announced;
    return 0;
}

void beacon_decide_mark_out(beacon_entry *e, int out, apr_uint64_t elected,
                            apr_time_t now)
{
    if (out && !e->out) {
        e->out_since = now;
        e->elected_at_out = elected;
    }
    e->out = out != 0;
    if (!out) {
        e->forgotten = 0;
    }
}

void beacon_decide_heard(beacon_entry *e, apr_int64_t ts, apr_time_t now)
{
    if (e->state == BEACON_ENTRY_MARK) {
        if (ts > e->high_ts) {
            e->high_ts = ts;
            e->last_heard = now;
        }
        return;
    }
    if (ts > e->high_ts) {
        e->high_ts = ts;
    }
    e->last_heard = now;
}

/* ------------------------------------------------------------------ */
/* Slow start                                                          */

int beacon_decide_ramp_percent(apr_time_t since, apr_interval_time_t duration,
                               apr_time_t now)
{
    apr_interval_time_t step = duration / BEACON_RAMP_STEPS, done;

    if (since == 0 || duration <= 0 || now - since >= duration) {
        return 100;
    }
    if (now < since) {
        return BEACON_RAMP_FLOOR;
    }
    if (step < apr_time_from_sec(1)) {
        step = apr_time_from_sec(1);
    }
    done = (now - since) / step * step; /* whole steps only */
    return BEACON_RAMP_FLOOR + (int)((100 - BEACON_RAMP_FLOOR) * done / duration);
}

int beacon_decide_ramped(int factor, int percent)
{
    int ramped = (int)((apr_int64_t)factor * percent / 100);

    return ramped > 100 ? ramped : 100;
}

int beacon_decide_ramp_base(const beacon_entry *e,
                            const beacon_member_attrs *attrs, int current)
{
    if (attrs && attrs->lbfactor) {
        return attrs->lbfactor;
    }
    return e->ramp_base ? e->ramp_base : current;
}

void beacon_decide_ramp_start(beacon_entry *e, apr_time_t now)
{
    if (e->ramp_since == 0) {
        e->ramp_base = 0; /* else the one a ramp under way leads to */
    }
    e->ramp_since = now;
}

int beacon_decide_ramp_first(beacon_entry *e, int current)
{
    e->ramp_base = beacon_decide_ramp_base(e, NULL, current);
    return beacon_decide_ramped(e->ramp_base, BEACON_RAMP_FLOOR);
}

void beacon_decide_ramp_after(beacon_entry *e, const beacon_member_attrs *attrs,
                              int current, apr_interval_time_t slowstart,
                              apr_time_t now)
{
    if (e->ramp_since == 0) {
        return;
    }
    if (beacon_decide_ramp_percent(e->ramp_since, slowstart, now) == 100) {
        e->ramp_since = 0;
        e->ramp_base = 0;
        return;
    }
    e->ramp_base = beacon_decide_ramp_base(e, attrs, current);
}

void beacon_decide_ramp_restart(beacon_entry *e)
{
    if (e->ramp_since && e->ramp_base && e->admin.saved) {
        e->admin.lbfactor = e->ramp_base;
    }
    e->ramp_since = 0;
    e->ramp_base = 0;
}

/* ------------------------------------------------------------------ */
/* How an add ends                                                     */

void beacon_decide_join(beacon_join_way way, beacon_join_plan *plan)
{
    /* A growth slot's worker is not initialized until commit: what its
     * backend announces is set before any request can use it, and commit
     * puts it in rotation. The others are in the list already. */
    static const beacon_join_plan plans[] = {
        [BEACON_JOIN_RESERVED] = {BEACON_ADD_DONE, 1, 0, 1, 1, 1},
        [BEACON_JOIN_GROWTH]   = {BEACON_ADD_DONE, 0, 1, 1, 1, 1},
        [BEACON_JOIN_RECYCLED] = {BEACON_ADD_RECYCLED, 1, 0, 0, 1, 1},
        /* a member a restart put back: no join, no slow start */
        [BEACON_JOIN_ADOPTED]  = {BEACON_ADD_ADOPTED, 1, 0, 0, 0, 0},
    };

    *plan = plans[way];
}

int beacon_decide_failover(int members, apr_int32_t written, int max_attempts,
                           int in_effect, int *value)
{
    int admins;

    if (members < 2) {
        return 0;
    }
    admins = written >= 0 ? max_attempts != written
                          : in_effect || max_attempts != 0;
    *value = admins ? -1 : members - 1;
    return 1;
}

/* ------------------------------------------------------------------ */
/* When a slot is safe to recycle                                      */

#define MARGIN apr_time_from_sec(1)

int beacon_decide_recyclable(const beacon_entry *e, const beacon_slot_view *v)
{
    return e->state == BEACON_ENTRY_MEMBER && e->out &&
           (v->status & BEACON_W_DISABLED) &&
           !(v->status & BEACON_ADMIN_FLAGS) && v->renamable;
}

/* No sum here or in the gate can overflow: ProxyBeaconMemberParams
 * bounds connectiontimeout and acquire to an hour and timeout to a day
 * (mod_proxy_beacon_params.c), address_ttl is beacon's own 5 s, so
 * out_since + this span + twice the timeout is a wall-clock time at most
 * about 2 days and 2 hours ahead. */
apr_interval_time_t beacon_decide_quiet_span(const beacon_slot_view *v)
{
    apr_interval_time_t connecting = v->conn_timeout + v->acquire + MARGIN;
    apr_interval_time_t caching = v->address_ttl + MARGIN;

    return connecting > caching ? connecting : caching;
}

static void gate_waits(beacon_gate *g, apr_time_t until)
{
    g->state = BEACON_GATE_WAIT;
    g->ready_at = until;
}

void beacon_decide_recycle_gate(const beacon_entry *e,
                                const beacon_slot_view *v, apr_time_t now,
                                int owner, beacon_gate *g)
{
    apr_time_t out_since = e->out_since;
    apr_time_t quiet_until;

    memset(g, 0, sizeof(*g));
    if (!beacon_decide_recyclable(e, v) || v->expiry_unknown) {
        g->state = BEACON_GATE_NEVER;
        return;
    }
    if (v->elected != e->elected_at_out) {
        if (!owner) {
            g->state = BEACON_GATE_WAIT; /* only the owner restarts it */
            return;
        }
        g->restart = 1;
        out_since = now;
    }
    quiet_until = out_since + beacon_decide_quiet_span(v);
    if (now < quiet_until) {
        gate_waits(g, quiet_until);
        return;
    }
    if (v->busy > 0) {
        apr_time_t drift_after = quiet_until + 2 * v->timeout;

        if (now < drift_after) {
            gate_waits(g, drift_after);
            return;
        }
        g->drift = 1;
    }
    if (now < v->addresses_expire_at) {
        g->drift = 0;
        gate_waits(g, v->addresses_expire_at);
        return;
    }
    g->state = BEACON_GATE_OPEN;
}

/* ------------------------------------------------------------------ */
/* The balancer's lbmethod                                             */

const char *beacon_decide_lbmethod_flaw(const char *lbmethod)
{
    /* httpd's stock methods, by the names they register (a lookup is
     * exact, so no other spelling is theirs) */
    static const struct {
        const char *name;
        const char *flaw;
    } flawed[] = {
        {"bybusyness", "it uses lbfactor only to break ties between members "
                       "equally busy, and sends a new member (busy 0) every "
                       "request until its count catches up"},
        {"bytraffic", "it compares the bytes each member has moved since it "
                      "was created, never aged: a new or recycled member "
                      "takes all traffic until its count catches up"},
        {"heartbeat", "it balances static BalancerMembers only, by what "
                      "mod_heartmonitor hears, and ignores lbfactor"},
    };
    size_t i;

    for (i = 0; lbmethod && i < sizeof(flawed) / sizeof(flawed[0]); i++) {
        if (strcmp(lbmethod, flawed[i].name) == 0) {
            return flawed[i].flaw;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Lines a peer can trigger                                            */

int beacon_decide_rate_allows(beacon_rate_limit *rl, apr_time_t now,
                              apr_interval_time_t every, unsigned *suppressed)
{
    if (rl->last != 0 && now >= rl->last && now - rl->last < every) {
        rl->suppressed++;
        return 0;
    }
    *suppressed = rl->suppressed;
    rl->suppressed = 0;
    rl->last = now;
    return 1;
}
