/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl drain: takes a backend out of rotation gently. It announces
 * state=draining (the member keeps only its sticky requests) every
 * interval until --for is up, or --until-command exits 0 (its sessions
 * are gone), then says state=leaving and exits. The sender, its options
 * and its datagrams are send's (cli_send.c); this file keeps the drain's
 * clock and its command.
 */

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <apr_thread_proc.h>

#include "cli.h"

/* How often a running --until-command is looked at between two
 * announcements: its exit ends the drain within this. */
#define COMMAND_POLL apr_time_from_msec(50)

typedef struct {
    send_args_t send; /* first: send's option slots fit here */
    const char *for_time, *until;
} drain_args_t;

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
const option_t drain_options[] = {
    {"for", OPT_FOR, "DURATION",
     "how long to drain at most (required): seconds,\n"
     "fractions and the units s and ms, as --interval",
     ONCE(drain_args_t, for_time)},
    {"until-command", OPT_UNTIL_COMMAND, "CMD",
     "end the drain early once CMD exits 0 (its sessions\n"
     "are gone): run by /bin/sh -c at the start, and\n"
     "again after each announcement while it exits\n"
     "non-zero; still running at the end, it gets\n"
     "SIGTERM", ONCE(drain_args_t, until)},
    SENDER_OPTIONS,
    SENDER_OPTIONS_TAIL};

/* --until-command: the process, while one runs. */
typedef struct {
    const char *command;
    apr_proc_t proc;
    int running, warned;
    apr_pool_t *p;
} until_t;

static void start_command(until_t *u)
{
    const char *args[2];
    apr_procattr_t *attr;
    apr_status_t rv;
    char ebuf[120];

    args[0] = u->command;
    args[1] = NULL;
    rv = apr_procattr_create(&attr, u->p);
    if (rv == APR_SUCCESS) {
        rv = apr_procattr_cmdtype_set(attr, APR_SHELLCMD);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_proc_create(&u->proc, u->command, args, NULL, attr, u->p);
    }
    if (rv != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "--until-command: cannot run it: %s",
             errstr(rv, ebuf, sizeof(ebuf)));
    }
    u->running = 1;
}

/* Whether the command has exited 0 by now. One that failed is warned
 * about once, and started again at the next announcement. */
static int command_succeeded(until_t *u)
{
    apr_exit_why_e why;
    int code;

    if (!u->running ||
        apr_proc_wait(&u->proc, &code, &why, APR_NOWAIT) != APR_CHILD_DONE) {
        return 0;
    }
    u->running = 0;
    if (APR_PROC_CHECK_EXIT(why) && code == 0) {
        return 1;
    }
    if (!u->warned) {
        warn("--until-command %s %d; running it again after each "
             "announcement", APR_PROC_CHECK_EXIT(why) ? "exited" : "died of "
             "signal", code);
        u->warned = 1;
    }
    return 0;
}

static void stop_command(until_t *u)
{
    apr_exit_why_e why;
    int code;

    if (u->running) {
        apr_proc_kill(&u->proc, SIGTERM);
        apr_proc_wait(&u->proc, &code, &why, APR_WAIT);
        u->running = 0;
    }
}

typedef enum { DRAIN_TIME_UP, DRAIN_COMMAND, DRAIN_STOPPED } drain_end_t;

/*
 * Waits until next (the next announcement), the end or a stop signal,
 * looking at the command every COMMAND_POLL. A lookup's news is
 * announced at once, as send does.
 */
static int wait_round(apr_pool_t *p, sender_t *s, until_t *u, apr_time_t next,
                      apr_time_t end, drain_end_t *why)
{
    for (;;) {
        apr_time_t now = apr_time_now();
        apr_time_t until = next < end ? next : end;
        wait_t w;

        if (u->command && until - now > COMMAND_POLL) {
            until = now + COMMAND_POLL;
        }
        w = wait_until(p, until, s->interval);
        if (w == WAIT_STOP) {
            *why = DRAIN_STOPPED;
            return 1;
        }
        if (u->command && command_succeeded(u)) {
            *why = DRAIN_COMMAND;
            return 1;
        }
        if (apr_time_now() >= end) {
            *why = DRAIN_TIME_UP;
            return 1;
        }
        if (w == WAIT_WOKEN) {
            sender_announce(s, BEACON_STATE_DRAINING);
        }
        if (apr_time_now() >= next) {
            return 0;
        }
    }
}

static drain_end_t drain_loop(apr_pool_t *p, sender_t *s, until_t *u,
                              apr_interval_time_t length)
{
    apr_time_t next = apr_time_now(), end = next + length;
    drain_end_t why;

    if (u->command) {
        start_command(u);
    }
    do {
        sender_announce(s, BEACON_STATE_DRAINING);
        next = next_due(next, s->interval);
        if (u->command && !u->running) {
            start_command(u);
        }
    } while (!wait_round(p, s, u, next, end, &why));
    return why;
}

static apr_interval_time_t drain_length(const drain_args_t *args)
{
    apr_interval_time_t length;

    if (args->for_time == NULL) {
        fail(EXIT_USAGE, "--for DURATION is required (see beaconctl drain "
             "--help)");
    }
    if (!parse_duration(args->for_time, &length) || length <= 0) {
        fail(EXIT_USAGE, "--for '%s': expected positive seconds, e.g. 300, "
             "2.5 or 500ms", args->for_time);
    }
    return length;
}

int run_drain(apr_pool_t *p, const command_t *cmd, int argc,
              const char *const *argv)
{
    static const char *const ends[] = {
        [DRAIN_TIME_UP] = "--for is up",
        [DRAIN_COMMAND] = "--until-command exited 0",
        [DRAIN_STOPPED] = "stopped by a signal",
    };
    drain_args_t args;
    apr_pool_t *scratch;
    sender_t sender, *s = &sender;
    until_t u;
    apr_interval_time_t length;
    apr_time_t start;
    drain_end_t why;

    memset(s, 0, sizeof(*s)); /* also the sequence: seq from 0 */
    memset(&args, 0, sizeof(args));
    memset(&u, 0, sizeof(u));
    parse_sender_options(p, cmd, argc, argv, &args.send);
    length = drain_length(&args);
    setup_sender(p, &args.send, s);
    if (apr_pool_create(&scratch, p) != APR_SUCCESS ||
        apr_pool_create(&u.p, p) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    u.command = args.until;
    sender_start(p, s, scratch);
    start = apr_time_now();
    why = drain_loop(p, s, &u, length);
    sender_say_leaving(s);
    stop_command(&u);
    warn("drained for %s: %s; said leaving",
         format_duration(p, apr_time_now() - start), ends[why]);
    beacon_wipe(&s->key, sizeof(s->key));
    return 0;
}
