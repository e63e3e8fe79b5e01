/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The balancer wing's decisions (src/mod_proxy_beacon_decide.c), which
 * the module carries out on httpd's balancer: what an announcement
 * changes in a member, the flags a state sets, how a route is given up,
 * taking a member out of rotation and back, the replay mark, how each
 * way of adding ends, maxattempts, when a slot may be recycled, and the
 * rate gate of lines a peer can trigger. Built here with APR alone: the
 * file includes no httpd header.
 */
#include "test_common.h"

#include <apr_strings.h>

#include "mod_proxy_beacon_decide.h"

#define SEC(n) ((apr_interval_time_t)(n) * APR_USEC_PER_SEC)
#define T0 ((apr_time_t)APR_INT64_C(1796000000000000))

#define D BEACON_W_DISABLED
#define N BEACON_W_DRAIN
#define H BEACON_W_HOT_STANDBY
#define S BEACON_W_STOPPED
#define E BEACON_W_IN_ERROR
#define I BEACON_W_IGNORE_ERRORS
#define C BEACON_W_HC_FAIL

/* ------------------------------------------------------------------ */
/* What an announcement changes                                        */

static void a_state_asks_for_one_flag_at_most(void **state)
{
    static const struct {
        beacon_wire_state_t state;
        apr_uint32_t flags;
    } cases[] = {
        {BEACON_WIRE_NONE, 0},
        {BEACON_WIRE_DRAINING, N},
        {BEACON_WIRE_STANDBY, H},
        {BEACON_WIRE_LEAVING, 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        assert_int_equal(beacon_decide_state_flags(cases[i].state),
                         cases[i].flags);
    }
}

static void a_route_is_given_up_only_by_a_member_beacon_took_out(void **state)
{
    static const struct {
        int beacons;        /* the holder has a registry entry */
        int out;            /* beacon took it out of rotation */
        apr_uint32_t status;
        int gives_up;
    } cases[] = {
        {1, 1, D, 1},          /* departed: its replacement takes it */
        {1, 1, D | E, 1},      /* in error too: still beacon's */
        {1, 1, D | C, 1},      /* a failed health check is no admin flag */
        {1, 0, D, 0},          /* the admin disabled it, not beacon */
        {1, 1, 0, 0},          /* back in rotation (the admin enabled it) */
        {1, 1, D | S, 0},      /* the admin stopped it */
        {1, 1, D | N, 0},      /* draining */
        {1, 1, D | H, 0},      /* a hot standby */
        {1, 1, D | I, 0},      /* ignore-errors */
        {0, 0, D, 0},          /* a configured member keeps its route */
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_entry e = {0};

        e.out = (apr_uint32_t)cases[i].out;
        if (beacon_decide_route_given_up(cases[i].beacons ? &e : NULL,
                                         cases[i].status) != cases[i].gives_up) {
            print_error("case %zu\n", i);
            fail();
        }
    }
}

typedef struct {
    const char *what;
    /* the member's slot */
    const char *route;
    int lbfactor;
    apr_uint32_t status;
    apr_uint32_t announced;    /* flags an earlier announced state set */
    /* another member holding the route asked for */
    int holder;                /* 0 none, 1 beacon's and out, 2 in rotation */
    /* the announcement */
    const char *want_route;
    int want_lbfactor;
    beacon_wire_state_t want_state;
    /* the plan */
    int refused;
    const char *route_set;     /* NULL: unchanged */
    int taken;                 /* route_from is the holder */
    int lbfactor_set;
    apr_uint32_t set, clear;
} attrs_case;

static const attrs_case attrs_cases[] = {
    {"nothing differs", "w1", 100, 0, 0, 0, "w1", 100, BEACON_WIRE_NONE,
     0, NULL, 0, 0, 0, 0},
    {"nothing announced", "w1", 100, 0, 0, 0, "", 0, BEACON_WIRE_NONE,
     0, NULL, 0, 0, 0, 0},
    {"a new route", "", 100, 0, 0, 0, "w1", 0, BEACON_WIRE_NONE,
     0, "w1", 0, 0, 0, 0},
    {"a route the admin changed is set again", "admin", 100, 0, 0, 0, "w1",
     0, BEACON_WIRE_NONE, 0, "w1", 0, 0, 0, 0},
    {"a route held by a member in rotation is refused", "", 100, 0, 0, 2,
     "w1", 0, BEACON_WIRE_NONE, 1, NULL, 0, 0, 0, 0},
    {"a route held by a departed member is taken", "", 100, 0, 0, 1, "w1", 0,
     BEACON_WIRE_NONE, 0, "w1", 1, 0, 0, 0},
    {"refused route, lbfactor still applied", "", 100, 0, 0, 2, "w1", 250,
     BEACON_WIRE_NONE, 1, NULL, 0, 250, 0, 0},
    {"a new lbfactor", "w1", 100, 0, 0, 0, "w1", 300, BEACON_WIRE_NONE,
     0, NULL, 0, 300, 0, 0},
    {"draining sets N", "w1", 100, 0, 0, 0, "", 0, BEACON_WIRE_DRAINING,
     0, NULL, 0, 0, N, 0},
    {"draining again sets nothing", "w1", 100, N, N, 0, "", 0,
     BEACON_WIRE_DRAINING, 0, NULL, 0, 0, 0, 0},
    {"N lost to a restart is set again", "w1", 100, 0, N, 0, "", 0,
     BEACON_WIRE_DRAINING, 0, NULL, 0, 0, N, 0},
    {"active again clears the announced N", "w1", 100, N, N, 0, "", 0,
     BEACON_WIRE_NONE, 0, NULL, 0, 0, 0, N},
    {"an admin's N is never cleared", "w1", 100, N, 0, 0, "", 0,
     BEACON_WIRE_NONE, 0, NULL, 0, 0, 0, 0},
    {"standby after draining swaps the flags", "w1", 100, N, N, 0, "", 0,
     BEACON_WIRE_STANDBY, 0, NULL, 0, 0, H, N},
    {"leaving announces no state", "w1", 100, N, N, 0, "", 0,
     BEACON_WIRE_LEAVING, 0, NULL, 0, 0, 0, 0},
};

static void an_announcement_changes_what_differs_from_the_member(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(attrs_cases); i++) {
        const attrs_case *k = &attrs_cases[i];
        static char somewhere;
        beacon_slot *other = (beacon_slot *)&somewhere; /* an identity */
        beacon_member_attrs attrs = {0};
        beacon_entry holder = {0}, me = {0};
        beacon_slot_look look = {0};
        beacon_slot_change c;
        int refused;

        look.self.route = k->route;
        look.self.lbfactor = k->lbfactor;
        look.self.status = k->status;
        if (k->holder) {
            look.holder = other;
            look.holder_view.route = k->want_route;
            look.holder_view.status = D;
            holder.out = k->holder == 1;
            if (k->holder == 2) {
                look.holder_view.status = 0;
            }
        }
        apr_cpystrn(attrs.route, k->want_route, sizeof(attrs.route));
        attrs.lbfactor = k->want_lbfactor;
        attrs.state = k->want_state;

        me.announced_flags = k->announced;
        print_message("%s\n", k->what);
        refused = beacon_decide_attrs(&look, k->holder ? &holder : NULL, &me,
                                      &attrs, 0, T0, &c);
        assert_int_equal(refused, k->refused);
        if (k->route_set) {
            assert_non_null(c.route);
            assert_string_equal(c.route, k->route_set);
        }
        else {
            assert_null(c.route);
        }
        assert_ptr_equal(c.route_from, k->taken ? other : NULL);
        assert_int_equal(c.lbfactor, k->lbfactor_set);
        assert_int_equal(c.set, k->set);
        assert_int_equal(c.clear, k->clear);
        assert_int_equal(c.enable, 0);
        assert_int_equal(beacon_decide_changes_slot(&c),
                         k->route_set || k->lbfactor_set || k->set || k->clear);
    }
}

static void no_attributes_plan_no_change(void **state)
{
    beacon_slot_look look = {0};
    beacon_entry me = {0};
    beacon_slot_change c;

    (void)state;
    memset(&c, 0xff, sizeof(c));
    look.self.route = "w1";
    me.announced_flags = N;
    assert_int_equal(beacon_decide_attrs(&look, NULL, &me, NULL, 0, T0, &c), 0);
    assert_false(beacon_decide_changes_slot(&c));
    c.enable = 1; /* putting it back in rotation is a change by itself */
    assert_true(beacon_decide_changes_slot(&c));
}

static void the_entry_keeps_the_flags_an_announced_state_set(void **state)
{
    static const struct {
        apr_uint32_t before, set, clear, after;
    } cases[] = {
        {0, N, 0, N},
        {N, 0, N, 0},
        {N, H, N, H},
        {N, 0, 0, N},
        {N | H, 0, H, N},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_slot_change c = {0};

        c.set = cases[i].set;
        c.clear = cases[i].clear;
        assert_int_equal(beacon_decide_announced_after(cases[i].before, &c),
                         cases[i].after);
    }
}

static void a_reported_load_moves_the_factor_by_steps_or_after_a_while(void **state)
{
    static const struct {
        const char *what;
        int announced, current;
        apr_interval_time_t since;  /* now - last change; -1: never */
        int applies, is_report;
    } cases[] = {
        {"the same", 5000, 5000, SEC(100), 0, 0},
        {"the first change since it joined", 5100, 5000, -1, 1, 0},
        {"5 % at once", 5250, 5000, SEC(1), 1, 1},
        {"5 % down at once", 4750, 5000, SEC(1), 1, 1},
        {"4.98 % waits", 5249, 5000, SEC(1), 0, 1},
        {"2 % waits 10 s", 5100, 5000, SEC(9), 0, 1},
        {"2 % after 10 s", 5100, 5000, SEC(10), 1, 1},
        {"a static value changed after a minute", 5100, 5000, SEC(60), 1, 0},
        {"a clock stepped back", 5100, 5000, -SEC(5), 1, 0},
        {"1.00 to 1.05", 105, 100, SEC(1), 1, 1},
        {"1.00 to 1.04", 104, 100, SEC(1), 0, 1},
        {"100 to 1", 100, 10000, SEC(1), 1, 1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        apr_time_t changed_at = cases[i].since == -1 ? 0 : T0 - cases[i].since;

        print_message("%s\n", cases[i].what);
        assert_int_equal(beacon_decide_load_applies(cases[i].announced,
                                                    cases[i].current,
                                                    changed_at, T0),
                         cases[i].applies);
        assert_int_equal(beacon_decide_load_is_report(changed_at, T0),
                         cases[i].is_report);
    }
}

static void a_load_factor_waits_in_the_plan_of_an_announcement(void **state)
{
    beacon_slot_look look = {0};
    beacon_member_attrs attrs = {0};
    beacon_entry me = {0};
    beacon_slot_change c;

    (void)state;
    look.self.route = "";
    look.self.lbfactor = 5000;
    attrs.lbfactor = 5100;
    me.lbfactor_changed_at = T0 - SEC(2);
    beacon_decide_attrs(&look, NULL, &me, &attrs, 0, T0, &c);
    assert_int_equal(c.lbfactor, 0);
    beacon_decide_attrs(&look, NULL, &me, &attrs, 0, T0 + SEC(8), &c);
    assert_int_equal(c.lbfactor, 5100);
    attrs.lbfactor = 6000;
    beacon_decide_attrs(&look, NULL, &me, &attrs, 0, T0, &c);
    assert_int_equal(c.lbfactor, 6000);
}

/* ------------------------------------------------------------------ */
/* Out of rotation and back                                            */

static void out_of_rotation_beacon_sets_d_and_clears_only_its_own(void **state)
{
    static const struct {
        int disabled;
        apr_uint32_t announced;
        apr_uint32_t set, clear;
        int enable;
        apr_uint32_t announced_after;
    } cases[] = {
        {1, 0, D, 0, 0, 0},
        {1, N, D, N, 0, 0},       /* draining: N goes with the backend */
        {1, H, D, H, 0, 0},
        {0, 0, 0, 0, 1, 0},
        {0, N, 0, 0, 1, N},       /* back: an announced N stays */
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_slot_change c;
        apr_uint32_t after = beacon_decide_rotation(cases[i].disabled,
                                                    cases[i].announced, &c);

        assert_int_equal(c.set, cases[i].set);
        assert_int_equal(c.clear, cases[i].clear);
        assert_int_equal(c.enable, cases[i].enable);
        assert_null(c.route);
        assert_int_equal(c.lbfactor, 0);
        assert_int_equal(after, cases[i].announced_after);
        /* never an admin's flag, whatever was announced */
        assert_int_equal(c.clear & (S | I), 0);
    }
}

static void the_entry_remembers_when_beacon_took_it_out(void **state)
{
    static const struct {
        int was_out, forgotten, out;
        apr_uint64_t elected;
        int out_after, forgotten_after;
        apr_time_t since_after;     /* T0: now; 5: kept */
        apr_uint64_t elected_after;
    } cases[] = {
        {0, 0, 1, 42, 1, 0, T0, 42},   /* taken out now */
        {1, 1, 1, 99, 1, 1, 5, 7},     /* out already: the clock runs on */
        {1, 1, 0, 99, 0, 0, 5, 7},     /* back: no longer forgotten */
        {0, 0, 0, 99, 0, 0, 5, 7},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_entry e = {0};

        e.out = (apr_uint32_t)cases[i].was_out;
        e.forgotten = (apr_uint32_t)cases[i].forgotten;
        e.out_since = 5;
        e.elected_at_out = 7;
        beacon_decide_mark_out(&e, cases[i].out, cases[i].elected, T0);
        assert_int_equal(e.out, cases[i].out_after);
        assert_int_equal(e.forgotten, cases[i].forgotten_after);
        assert_int_equal(e.out_since, cases[i].since_after);
        assert_int_equal(e.elected_at_out, cases[i].elected_after);
    }
}

static void a_member_is_heard_and_a_mark_only_rises(void **state)
{
    static const struct {
        beacon_entry_state kind;
        apr_int64_t high, ts;
        apr_int64_t high_after;
        apr_time_t heard_after;     /* T0: now; 1: kept */
    } cases[] = {
        {BEACON_ENTRY_MEMBER, 10, 11, 11, T0},
        {BEACON_ENTRY_MEMBER, 10, 10, 10, T0}, /* the table took it: heard */
        {BEACON_ENTRY_MEMBER, 10, 9, 10, T0},
        {BEACON_ENTRY_MARK, 10, 11, 11, T0},
        {BEACON_ENTRY_MARK, 10, 10, 10, 1},    /* a replay moves nothing */
        {BEACON_ENTRY_MARK, 10, 9, 10, 1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_entry e = {0};

        e.state = cases[i].kind;
        e.high_ts = cases[i].high;
        e.last_heard = 1;
        beacon_decide_heard(&e, cases[i].ts, T0);
        assert_int_equal(e.high_ts, cases[i].high_after);
        assert_int_equal(e.last_heard, cases[i].heard_after);
    }
}

/* ------------------------------------------------------------------ */
/* Slow start                                                          */

static void a_slow_start_climbs_from_a_tenth_in_whole_steps(void **state)
{
    static const struct {
        apr_interval_time_t duration, at; /* at: now - since; -1: no ramp */
        int percent;
    } cases[] = {
        {SEC(20), 0, 10},
        {SEC(20), SEC(1) - 1, 10},        /* a step is a whole second */
        {SEC(20), SEC(1), 14},            /* 10 + 90 x 1/20 = 14.5 */
        {SEC(20), SEC(10), 55},
        {SEC(20), SEC(19), 95},
        {SEC(20), SEC(20), 100},          /* over */
        {SEC(20), SEC(600), 100},
        {SEC(5), SEC(1), 28},             /* steps of 1 s, not 250 ms */
        {SEC(5), SEC(1) / 2, 10},
        {SEC(200), SEC(9), 10},           /* steps of 10 s */
        {SEC(200), SEC(10), 14},
        {SEC(20), -SEC(3), 10},           /* a clock stepped back: again */
        {0, SEC(1), 100},                 /* no slow start configured */
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        if (beacon_decide_ramp_percent(T0, cases[i].duration, T0 + cases[i].at)
            != cases[i].percent) {
            print_error("case %zu\n", i);
        }
        assert_int_equal(beacon_decide_ramp_percent(T0, cases[i].duration,
                                                    T0 + cases[i].at),
                         cases[i].percent);
    }
    assert_int_equal(beacon_decide_ramp_percent(0, SEC(20), T0), 100);
}

static void a_ramped_factor_is_a_share_and_at_least_one(void **state)
{
    static const struct {
        int factor, percent, ramped;
    } cases[] = {
        {10000, 10, 1000}, {10000, 55, 5500}, {10000, 100, 10000},
        {5000, 14, 700}, {100, 10, 100}, {250, 10, 100}, {1500, 10, 150},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        assert_int_equal(beacon_decide_ramped(cases[i].factor, cases[i].percent),
                         cases[i].ramped);
    }
}

static void a_slow_start_leads_to_the_announced_or_the_kept_factor(void **state)
{
    beacon_member_attrs attrs = {0};
    beacon_entry e = {0};

    (void)state;
    assert_int_equal(beacon_decide_ramp_base(&e, NULL, 300), 300);
    e.ramp_base = 500;
    assert_int_equal(beacon_decide_ramp_base(&e, NULL, 300), 500);
    assert_int_equal(beacon_decide_ramp_base(&e, &attrs, 300), 500);
    attrs.lbfactor = 2000;
    assert_int_equal(beacon_decide_ramp_base(&e, &attrs, 300), 2000);

    /* begun, stepped, restarted under way, ended */
    memset(&e, 0, sizeof(e));
    e.ramp_base = 77;
    beacon_decide_ramp_start(&e, T0);
    assert_int_equal(e.ramp_since, T0);
    assert_int_equal(e.ramp_base, 0);
    beacon_decide_ramp_after(&e, NULL, 400, SEC(20), T0);
    assert_int_equal(e.ramp_base, 400);
    beacon_decide_ramp_start(&e, T0 + SEC(5)); /* its slot holds a step */
    assert_int_equal(e.ramp_base, 400);
    beacon_decide_ramp_after(&e, &attrs, 60, SEC(20), T0 + SEC(6));
    assert_int_equal(e.ramp_base, 2000);
    beacon_decide_ramp_after(&e, NULL, 60, SEC(20), T0 + SEC(25));
    assert_int_equal(e.ramp_since, 0);
    assert_int_equal(e.ramp_base, 0);
}

static void a_slow_start_plans_its_steps_past_the_load_threshold(void **state)
{
    static const struct {
        apr_interval_time_t at;
        int current, announced, planned;   /* planned 0: no change */
    } cases[] = {
        {0, 10000, 0, 1000},          /* joins: a tenth of its own */
        {SEC(1), 1000, 0, 1400},
        {SEC(1), 1400, 0, 0},
        {SEC(19), 9050, 0, 9500},     /* 4.97 %: a step all the same */
        {SEC(20), 9500, 0, 10000},    /* over: the whole */
        {SEC(10), 5500, 5000, 2750},  /* the ramp caps what load asks */
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_slot_look look = {0};
        beacon_member_attrs attrs = {0};
        beacon_entry e = {0};
        beacon_slot_change c;

        e.ramp_since = T0;
        e.ramp_base = cases[i].at ? 10000 : 0;
        e.lbfactor_changed_at = T0 + cases[i].at; /* damping would hold it */
        look.self.route = "";
        look.self.lbfactor = cases[i].current;
        attrs.lbfactor = cases[i].announced;
        beacon_decide_attrs(&look, NULL, &e, &attrs, SEC(20), T0 + cases[i].at, &c);
        assert_int_equal(c.lbfactor, cases[i].planned);
        beacon_decide_attrs(&look, NULL, &e, NULL, SEC(20), T0 + cases[i].at, &c);
        /* a step alone (once a second): towards the factor it kept */
        assert_int_equal(c.lbfactor, cases[i].announced ? 0 : cases[i].planned);
    }
}

static void a_member_back_in_rotation_starts_at_a_tenth(void **state)
{
    beacon_entry e = {0};

    (void)state;
    beacon_decide_ramp_start(&e, T0);
    assert_int_equal(beacon_decide_ramp_first(&e, 4000), 400);
    assert_int_equal(e.ramp_base, 4000);
    /* evicted in the middle of a slow start: its slot holds a step */
    beacon_decide_ramp_start(&e, T0 + SEC(3));
    assert_int_equal(beacon_decide_ramp_first(&e, 1300), 400);
    assert_int_equal(e.ramp_base, 4000);
}

static void a_restart_ends_a_slow_start_with_the_whole_factor(void **state)
{
    beacon_entry e = {0};

    (void)state;
    e.ramp_since = T0;
    e.ramp_base = 4000;
    e.admin.saved = 1;
    e.admin.lbfactor = 1300; /* a step, kept by the last second's look */
    beacon_decide_ramp_restart(&e);
    assert_int_equal(e.admin.lbfactor, 4000);
    assert_int_equal(e.ramp_since, 0);
    assert_int_equal(e.ramp_base, 0);
    /* none under way: the admin's own value stays */
    e.admin.lbfactor = 1300;
    beacon_decide_ramp_restart(&e);
    assert_int_equal(e.admin.lbfactor, 1300);
}

/* ------------------------------------------------------------------ */
/* How an add ends                                                     */

static void every_way_of_adding_ends_as_its_plan_says(void **state)
{
    static const struct {
        beacon_join_way way;
        beacon_join_plan plan;
    } cases[] = {
        /*                        result        enable commit recount confirm ramp */
        {BEACON_JOIN_RESERVED, {BEACON_ADD_DONE, 1, 0, 1, 1, 1}},
        {BEACON_JOIN_GROWTH, {BEACON_ADD_DONE, 0, 1, 1, 1, 1}},
        {BEACON_JOIN_RECYCLED, {BEACON_ADD_RECYCLED, 1, 0, 0, 1, 1}},
        {BEACON_JOIN_ADOPTED, {BEACON_ADD_ADOPTED, 1, 0, 0, 0, 0}},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_join_plan plan;

        memset(&plan, 0xff, sizeof(plan));
        beacon_decide_join(cases[i].way, &plan);
        assert_int_equal(plan.result, cases[i].plan.result);
        assert_int_equal(plan.enable, cases[i].plan.enable);
        assert_int_equal(plan.commit, cases[i].plan.commit);
        assert_int_equal(plan.recount, cases[i].plan.recount);
        assert_int_equal(plan.confirm, cases[i].plan.confirm);
        assert_int_equal(plan.ramp, cases[i].plan.ramp);
        /* a worker httpd has not initialized is never enabled: commit
         * does it, after its attributes */
        assert_false(plan.commit && plan.enable);
    }
}

static void maxattempts_follows_the_members_while_it_is_beacons(void **state)
{
    static const struct {
        const char *what;
        int members;
        apr_int32_t written;
        int max_attempts, in_effect;
        int sets, value;
    } cases[] = {
        {"one member: nothing to fail over to", 1, -1, 0, 0, 0, 0},
        {"no member", 0, 5, 5, 1, 0, 0},
        {"first count", 2, -1, 0, 0, 1, 1},
        {"grows with the members", 5, 3, 3, 1, 1, 4},
        {"shrinks too", 3, 4, 4, 1, 1, 2},
        {"configured before beacon wrote any", 4, -1, 2, 1, 1, -1},
        {"in effect at 0 before beacon wrote any", 4, -1, 0, 1, 1, -1},
        {"typed into balancer-manager", 4, 3, 7, 1, 1, -1},
        {"typed 0 into balancer-manager", 4, 3, 0, 0, 1, -1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        int value = 12345;

        print_message("%s\n", cases[i].what);
        assert_int_equal(beacon_decide_failover(cases[i].members,
                                                cases[i].written,
                                                cases[i].max_attempts,
                                                cases[i].in_effect, &value),
                         cases[i].sets);
        if (cases[i].sets) {
            assert_int_equal(value, cases[i].value);
        }
        else {
            assert_int_equal(value, 12345);
        }
    }
}

/* ------------------------------------------------------------------ */
/* When a slot is safe to recycle                                      */

/* A slot out of rotation since T0 with nothing on it, under default
 * timeouts: connect 5 s, acquire none, timeout 60 s, addresses cached 5 s
 * (so G1's span is 6 s). */
static void quiet_slot(beacon_entry *e, beacon_slot_view *v)
{
    memset(e, 0, sizeof(*e));
    memset(v, 0, sizeof(*v));
    e->state = BEACON_ENTRY_MEMBER;
    e->out = 1;
    e->out_since = T0;
    e->elected_at_out = 100;
    v->status = D;
    v->elected = 100;
    v->timeout = SEC(60);
    v->conn_timeout = SEC(5);
    v->address_ttl = SEC(5);
    v->renamable = 1;
}

static void only_beacons_own_quiet_slots_are_candidates(void **state)
{
    static const struct {
        const char *what;
        beacon_entry_state kind;
        int out;
        apr_uint32_t status;
        int renamable;
        int candidate;
    } cases[] = {
        {"out of rotation by beacon", BEACON_ENTRY_MEMBER, 1, D, 1, 1},
        {"in error too", BEACON_ENTRY_MEMBER, 1, D | E, 1, 1},
        {"the admin enabled it", BEACON_ENTRY_MEMBER, 1, 0, 1, 0},
        {"not taken out by beacon", BEACON_ENTRY_MEMBER, 0, D, 1, 0},
        {"stopped by the admin", BEACON_ENTRY_MEMBER, 1, D | S, 1, 0},
        {"draining", BEACON_ENTRY_MEMBER, 1, D | N, 1, 0},
        {"hot standby", BEACON_ENTRY_MEMBER, 1, D | H, 1, 0},
        {"a health check or unix socket", BEACON_ENTRY_MEMBER, 1, D, 0, 0},
        {"being renamed", BEACON_ENTRY_RECYCLING, 1, D, 1, 0},
        {"a replay mark", BEACON_ENTRY_MARK, 1, D, 1, 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_slot_view v;
        beacon_entry e;

        quiet_slot(&e, &v);
        e.state = cases[i].kind;
        e.out = (apr_uint32_t)cases[i].out;
        v.status = cases[i].status;
        v.renamable = cases[i].renamable;
        print_message("%s\n", cases[i].what);
        assert_int_equal(beacon_decide_recyclable(&e, &v), cases[i].candidate);
    }
}

static void g1_outlasts_connecting_and_address_caching(void **state)
{
    static const struct {
        apr_interval_time_t conn, acquire, ttl, span;
    } cases[] = {
        {SEC(5), 0, SEC(5), SEC(6)},
        {SEC(5), SEC(10), SEC(5), SEC(16)},   /* acquire waits count */
        {SEC(1), 0, SEC(30), SEC(31)},        /* caching lasts longer */
        {SEC(3600), SEC(3600), SEC(5), SEC(7201)},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_slot_view v = {0};

        v.conn_timeout = cases[i].conn;
        v.acquire = cases[i].acquire;
        v.address_ttl = cases[i].ttl;
        assert_int_equal(beacon_decide_quiet_span(&v), cases[i].span);
    }
}

static void a_slot_is_recycled_only_when_every_gate_holds(void **state)
{
    static const struct {
        const char *what;
        apr_interval_time_t at;     /* now - T0 */
        int owner;
        apr_uint64_t elected;       /* 100: none since it left rotation */
        apr_size_t busy;
        apr_interval_time_t expire; /* addresses_expire_at - T0; 0: none */
        int unknown;                /* expiry_unknown */
        beacon_gate_state gate;
        apr_interval_time_t ready;  /* ready_at - T0, when WAIT; -1: 0 */
        int drift, restart;
    } cases[] = {
        {"G1 waits 6 s", SEC(2), 1, 100, 0, 0, 0, BEACON_GATE_WAIT, SEC(6), 0, 0},
        {"G1 holds at 6 s", SEC(6), 1, 100, 0, 0, 0, BEACON_GATE_OPEN, 0, 0, 0},
        {"elected since: the owner restarts G1", SEC(60), 1, 101, 0, 0, 0,
         BEACON_GATE_WAIT, SEC(66), 0, 1},
        {"elected since: others only wait", SEC(60), 0, 101, 0, 0, 0,
         BEACON_GATE_WAIT, -1, 0, 0},
        {"G2: busy waits twice the timeout", SEC(10), 1, 100, 1, 0, 0,
         BEACON_GATE_WAIT, SEC(126), 0, 0},
        {"G2: busy long after is drift", SEC(126), 1, 100, 3, 0, 0,
         BEACON_GATE_OPEN, 0, 1, 0},
        {"G3: addresses still cached", SEC(10), 1, 100, 0, SEC(20), 0,
         BEACON_GATE_WAIT, SEC(20), 0, 0},
        {"G3: drift, yet cached", SEC(130), 1, 100, 1, SEC(200), 0,
         BEACON_GATE_WAIT, SEC(200), 0, 0},
        {"G3 holds", SEC(30), 1, 100, 0, SEC(20), 0, BEACON_GATE_OPEN, 0, 0, 0},
        {"no way to tell when caches expire", SEC(600), 1, 100, 0, 0, 1,
         BEACON_GATE_NEVER, -1, 0, 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_slot_view v;
        beacon_entry e;
        beacon_gate g;

        quiet_slot(&e, &v);
        v.elected = cases[i].elected;
        v.busy = cases[i].busy;
        v.addresses_expire_at = cases[i].expire ? T0 + cases[i].expire : 0;
        v.expiry_unknown = cases[i].unknown;
        print_message("%s\n", cases[i].what);
        beacon_decide_recycle_gate(&e, &v, T0 + cases[i].at, cases[i].owner, &g);
        assert_int_equal(g.state, cases[i].gate);
        if (cases[i].gate == BEACON_GATE_WAIT) {
            assert_int_equal(g.ready_at,
                             cases[i].ready < 0 ? 0 : T0 + cases[i].ready);
        }
        assert_int_equal(g.drift, cases[i].drift);
        assert_int_equal(g.restart, cases[i].restart);
        /* the decision writes nothing: restarting is the owner's */
        assert_int_equal(e.out_since, T0);
        assert_int_equal(e.elected_at_out, 100);
    }
}

static void a_slot_beacon_does_not_own_never_opens(void **state)
{
    beacon_slot_view v;
    beacon_entry e;
    beacon_gate g;

    (void)state;
    quiet_slot(&e, &v);
    v.status = D | S;
    beacon_decide_recycle_gate(&e, &v, T0 + SEC(3600), 1, &g);
    assert_int_equal(g.state, BEACON_GATE_NEVER);
    assert_int_equal(g.ready_at, 0);
}

/* ------------------------------------------------------------------ */
/* The balancer's lbmethod                                             */

static void only_the_stock_methods_that_undo_lbfactor_are_flawed(void **state)
{
    static const struct {
        const char *lbmethod;
        const char *says;     /* in the clause; NULL: no warning */
    } cases[] = {
        {"bybusyness", "only to break ties"},
        {"bybusyness", "new member"},
        {"bytraffic", "never aged"},
        {"bytraffic", "new or recycled member"},
        {"heartbeat", "static BalancerMembers only"},
        {"heartbeat", "ignores lbfactor"},
        {"byrequests", NULL},   /* the one that works */
        {NULL, NULL},           /* none read */
        {"", NULL},
        {"cluster", NULL},      /* another module's: not ours to judge */
        {"ByBusyness", NULL},   /* not a name httpd's lookup finds */
        {"bybusynes", NULL},
        {"bybusynesss", NULL},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        const char *flaw = beacon_decide_lbmethod_flaw(cases[i].lbmethod);

        if ((flaw == NULL) != (cases[i].says == NULL) ||
            (flaw && strstr(flaw, cases[i].says) == NULL)) {
            print_error("case %zu: %s\n", i, flaw ? flaw : "(none)");
            fail();
        }
    }
}

/* ------------------------------------------------------------------ */
/* Lines a peer can trigger                                            */

static void one_line_per_period_and_the_count_of_those_held_back(void **state)
{
    static const struct {
        apr_interval_time_t at;     /* now - T0 */
        int allowed;
        unsigned suppressed;        /* when allowed */
    } steps[] = {
        {0, 1, 0},
        {SEC(1), 0, 0},
        {SEC(9), 0, 0},
        {SEC(10), 1, 2},            /* the period is over: 2 held back */
        {SEC(10), 0, 0},
        {SEC(5), 1, 1},             /* the clock stepped back */
        {SEC(14), 0, 0},
        {SEC(15), 1, 1},
        {SEC(100), 1, 0},
    };
    beacon_rate_limit rl = {0};
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(steps); i++) {
        unsigned suppressed = 777;
        int allowed = beacon_decide_rate_allows(&rl, T0 + steps[i].at,
                                                BEACON_LOG_EVERY, &suppressed);

        if (allowed != steps[i].allowed) {
            print_error("step %zu\n", i);
        }
        assert_int_equal(allowed, steps[i].allowed);
        assert_int_equal(suppressed, steps[i].allowed ? steps[i].suppressed
                                                      : 777);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_state_asks_for_one_flag_at_most),
        cmocka_unit_test(a_route_is_given_up_only_by_a_member_beacon_took_out),
        cmocka_unit_test(an_announcement_changes_what_differs_from_the_member),
        cmocka_unit_test(no_attributes_plan_no_change),
        cmocka_unit_test(the_entry_keeps_the_flags_an_announced_state_set),
        cmocka_unit_test(a_reported_load_moves_the_factor_by_steps_or_after_a_while),
        cmocka_unit_test(a_load_factor_waits_in_the_plan_of_an_announcement),
        cmocka_unit_test(out_of_rotation_beacon_sets_d_and_clears_only_its_own),
        cmocka_unit_test(the_entry_remembers_when_beacon_took_it_out),
        cmocka_unit_test(a_member_is_heard_and_a_mark_only_rises),
        cmocka_unit_test(a_slow_start_climbs_from_a_tenth_in_whole_steps),
        cmocka_unit_test(a_ramped_factor_is_a_share_and_at_least_one),
        cmocka_unit_test(a_slow_start_leads_to_the_announced_or_the_kept_factor),
        cmocka_unit_test(a_slow_start_plans_its_steps_past_the_load_threshold),
        cmocka_unit_test(a_member_back_in_rotation_starts_at_a_tenth),
        cmocka_unit_test(a_restart_ends_a_slow_start_with_the_whole_factor),
        cmocka_unit_test(every_way_of_adding_ends_as_its_plan_says),
        cmocka_unit_test(maxattempts_follows_the_members_while_it_is_beacons),
        cmocka_unit_test(only_beacons_own_quiet_slots_are_candidates),
        cmocka_unit_test(g1_outlasts_connecting_and_address_caching),
        cmocka_unit_test(a_slot_is_recycled_only_when_every_gate_holds),
        cmocka_unit_test(a_slot_beacon_does_not_own_never_opens),
        cmocka_unit_test(only_the_stock_methods_that_undo_lbfactor_are_flawed),
        cmocka_unit_test(one_line_per_period_and_the_count_of_those_held_back),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
