/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl send: announces a backend that is not httpd, once or every
 * interval, and says state=leaving on SIGTERM or SIGINT, repeated within
 * the first second. What goes in a datagram, its seq and its ts are
 * libbeacon's (beacon_format, beacon_sequence_stamp); where it goes,
 * every address of every --to, is cli_fanout.c's. This file signs one
 * datagram per announcement and keeps the schedule; its sender (options,
 * setup, one announcement, the leaving) is drain's too (cli_drain.c).
 */

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <apr_strings.h>
#include <apr_tables.h>

#include "cli.h"

#define MIN_INTERVAL apr_time_from_msec(1)

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
const option_t send_options[] = {
    SENDER_OPTIONS,
    {"lbfactor-command", OPT_LBFACTOR_COMMAND, "CMD",
     "the load factor from the first line CMD prints:\n"
     "run by /bin/sh -c before each announcement, for\n"
     "half the interval at most (0.1 to 2 s; then its\n"
     "process group is killed), the line checked as\n"
     "--lbfactor is. A command that fails, prints\n"
     "nothing or no factor keeps the last good factor\n"
     "(none before the first), said once on stderr",
     ONCE(send_args_t, lbfactor_command)},
    {"lbfactor-from", OPT_LBFACTOR_FROM, "loadavg",
     "the load factor from the 1-minute load average\n"
     "over the online CPUs, u (at most 1): 100 - 90 u,\n"
     "from 100 idle to 10 saturated, each announcement",
     ONCE(send_args_t, lbfactor_from)},
    {"state", OPT_STATE, "STATE",
     "draining or standby (state=, version 1.2): every\n"
     "announcement says it; the member takes only its\n"
     "sticky requests, or is a hot standby. The last\n"
     "one, on a stop signal, says leaving",
     ONCE(send_args_t, state)},
    {"once", OPT_ONCE, NULL,
     "send one announcement and exit: 0 if it went to at\n"
     "least one address, 1 if to none", 0},
    SENDER_OPTIONS_TAIL};

unsigned sender_announce(sender_t *s, const char *state)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    int len;

    beacon_sequence_stamp(&s->seq, apr_time_now(), &s->a);
    s->a.state = state;
    len = beacon_format(buf, sizeof(buf), &s->a, &s->key);
    if (len < 0) {
        /* check_length() tried the longest datagram before the first send */
        fail(EXIT_RUNTIME, "cannot format an announcement");
    }
    return fanout_deliver(s->fc, buf, (apr_size_t)len,
                          state != NULL &&
                              strcmp(state, BEACON_STATE_LEAVING) == 0);
}

void sender_say_leaving(sender_t *s)
{
    apr_time_t first = apr_time_now();
    unsigned i;

    sender_announce(s, BEACON_STATE_LEAVING);
    for (i = 0; i < BEACON_LEAVING_REPEATS; i++) {
        apr_sleep(beacon_leaving_repeat_wait(first, i, apr_time_now()));
        sender_announce(s, BEACON_STATE_LEAVING);
    }
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */

void parse_sender_options(apr_pool_t *p, const command_t *cmd, int argc,
                          const char *const *argv, send_args_t *args)
{
    const char *arg;
    opts_t o;
    int optch;

    args->specs = apr_array_make(p, 4, sizeof(const char *));
    opts_init(&o, p, cmd, argc, argv);
    while ((optch = opts_next(&o, args, &arg)) != 0) {
        switch (optch) {
        case OPT_TO:
            APR_ARRAY_PUSH(args->specs, const char *) = arg;
            break;
        case OPT_ONCE:
            args->once = 1;
            break;
        case OPT_VERBOSE:
            args->verbose = 1;
            break;
        case OPT_SECRET_FILE:
        case OPT_SECRET_EXEC:
            take_secret_arg(&args->secret, optch, arg);
            break;
        }
    }
}

/* --to, --once, --interval and --verbose: where to, how often, what is
 * said. */
static void setup_schedule(const send_args_t *args, sender_t *s)
{
    apr_interval_time_t interval = BEACON_DEFAULT_INTERVAL;

    if (args->specs->nelts == 0) {
        fail(EXIT_USAGE, "--to HOST:PORT is required (see beaconctl send "
             "--help)");
    }
    if (args->once && args->interval) {
        fail(EXIT_USAGE, "--once and --interval exclude each other");
    }
    if (args->interval && (!parse_duration(args->interval, &interval) ||
                           interval < MIN_INTERVAL)) {
        fail(EXIT_USAGE, "--interval '%s': expected seconds of at least "
             "0.001, e.g. 5, 0.5 or 500ms", args->interval);
    }
    s->fc = fanout_make(args->specs, interval, args->once, args->verbose);
    s->interval = interval;
    s->once = args->once;
}

/* The longest datagram this run can send must fit: found now, not at
 * the first send or, worse, at the leaving one. */
static void check_length(sender_t *s, int lbfactor_varies)
{
    char trial[BEACON_MAX_DATAGRAM + 1];
    beacon_announcement_t a = s->a;

    if (lbfactor_varies) {
        a.lbfactor = "100.00"; /* the longest a source may give */
    }
    a.seq = BEACON_DECIMAL_MAX;
    a.ts = BEACON_DECIMAL_MAX;
    a.state = BEACON_STATE_DRAINING; /* the longest state */
    if (beacon_format(trial, sizeof(trial), &a, &s->key) < 0) {
        fail(EXIT_USAGE, "--url, --host, --service, --ctx, --route and "
             "the lbfactor make a datagram longer than %d bytes",
             BEACON_MAX_DATAGRAM);
    }
}

/* --url, --host, --service, --ctx, --route, --lbfactor, the pid and the
 * key: what every datagram says. */
static void setup_announcement(apr_pool_t *p, const send_args_t *args,
                               sender_t *s)
{
    if (args->url) {
        canonical_url(args->url, s->url);
        s->a.url = s->url;
    }
    if (args->host) {
        check_field("host", args->host);
        s->a.host = args->host;
    }
    else if (apr_gethostname(s->hostname, sizeof(s->hostname), p) ==
             APR_SUCCESS && beacon_value_is_valid(s->hostname)) {
        s->a.host = s->hostname;
    }
    /* else: host= is informational; leave it out */
    set_v11_fields(&s->a, args->service, args->route, args->lbfactor);
    set_ctx_field(&s->a, args->ctx);
    s->a.pid = (apr_int64_t)getpid();
    load_key(p, &args->secret, &s->key);
    check_length(s, args->lbfactor_command || args->lbfactor_from);
}

void setup_sender(apr_pool_t *p, const send_args_t *args, sender_t *s)
{
    setup_schedule(args, s);
    setup_announcement(p, args, s);
    if (args->url == NULL) {
        warn("no --url: sending heartbeats only, which no proxy adds to a "
             "balancer");
    }
}

void sender_start(apr_pool_t *p, sender_t *s, apr_pool_t *scratch)
{
    catch_stop_signals(p);
    fanout_resolve_all(s->fc, scratch);
    fanout_start_lookups(s->fc);
}

/* ------------------------------------------------------------------ */
/* The command                                                         */

/*
 * Announces every interval until a stop signal, then says leaving to the
 * addresses known then. The names are looked up once before the first
 * datagram, then by their threads.
 */
static void send_loop(apr_pool_t *p, sender_t *s, const char *state,
                      load_source_t *load, apr_pool_t *scratch)
{
    apr_interval_time_t interval = s->interval;
    apr_time_t next;
    wait_t w;

    sender_start(p, s, scratch);
    next = apr_time_now();
    do {
        if (load) {
            load_source_update(load, &s->a, s->interval);
        }
        sender_announce(s, state);
        /* a fixed schedule, not interval after each send: no drift */
        next = next_due(next, interval);
        /* a lookup found a new address: everyone hears now, on top of
         * the schedule, which stays */
        while ((w = wait_until(p, next, interval)) == WAIT_WOKEN) {
            sender_announce(s, state);
        }
    } while (w != WAIT_STOP);
    sender_say_leaving(s);
}

int run_send(apr_pool_t *p, const command_t *cmd, int argc,
             const char *const *argv)
{
    send_args_t args;
    apr_pool_t *scratch;
    sender_t sender, *s = &sender;
    load_source_t *load;
    int status = 0;

    memset(s, 0, sizeof(*s)); /* also the sequence: seq from 0 */
    memset(&args, 0, sizeof(args));
    parse_sender_options(p, cmd, argc, argv, &args);
    if (args.state) {
        check_state(args.state, 0);
    }
    load = load_source_make(p, &args);
    setup_sender(p, &args, s);
    if (apr_pool_create(&scratch, p) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    if (s->once) {
        /* no leaving datagram here: a signal simply ends the program */
        fanout_resolve_all(s->fc, scratch);
        if (load) {
            load_source_update(load, &s->a, s->interval);
        }
        status = sender_announce(s, args.state) > 0 ? 0 : EXIT_RUNTIME;
    }
    else {
        send_loop(p, s, args.state, load, scratch);
    }
    beacon_wipe(&s->key, sizeof(s->key));
    return status;
}
