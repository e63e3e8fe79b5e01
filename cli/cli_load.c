/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl send's lbfactor from the backend's load: the first line of
 * --lbfactor-command's output, or --lbfactor-from loadavg (the 1-minute
 * load average over the online CPUs, mapped by libbeacon's
 * beacon_lbfactor_from_utilization, which the module's ProxyBeaconLBFactor
 * auto shares). Asked before each announcement; what it gives is checked
 * by the lbfactor= rule (beacon_lbfactor_parse, --lbfactor's), and a
 * failure keeps the last good value.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <apr_strings.h>

#include "cli.h"

#define LOADAVG_FILE "/proc/loadavg"
#define BOUND_MIN apr_time_from_msec(100)
#define BOUND_MAX apr_time_from_sec(2)
/* A first line longer than this holds no factor ("100.00" is 6 bytes). */
#define LINE_READ 64

struct load_source {
    const char *what;    /* the option, for messages */
    const char *command; /* NULL: the load average */
    char value[BEACON_LBFACTOR_TEXT_MAX]; /* the last good one; "" none */
    int failing;
    apr_pool_t *scratch; /* a round's messages */
};

/* How long a command may run in a round of interval: half of it, within
 * BOUND_MIN and BOUND_MAX. Half keeps the schedule: the announcement it
 * precedes is late by the bound at most, within its interval. */
static apr_interval_time_t command_bound(apr_interval_time_t interval)
{
    apr_interval_time_t bound = interval / 2;

    return bound < BOUND_MIN ? BOUND_MIN : bound > BOUND_MAX ? BOUND_MAX
                                                             : bound;
}

load_source_t *load_source_make(apr_pool_t *p, const send_args_t *args)
{
    load_source_t *ls;
    int given = (args->lbfactor != NULL) + (args->lbfactor_command != NULL) +
                (args->lbfactor_from != NULL);

    if (given > 1) {
        fail(EXIT_USAGE, "--lbfactor, --lbfactor-command and --lbfactor-from "
             "exclude each other: give one (a fixed factor, a command that "
             "prints it, or loadavg)");
    }
    if (args->lbfactor_command == NULL && args->lbfactor_from == NULL) {
        return NULL;
    }
    if (args->lbfactor_command && args->lbfactor_command[0] == '\0') {
        fail(EXIT_USAGE, "--lbfactor-command: empty; give a command that "
             "prints the factor, e.g. --lbfactor-command 'cat /run/load'");
    }
    if (args->lbfactor_from && strcmp(args->lbfactor_from, "loadavg") != 0) {
        check_field("lbfactor-from", args->lbfactor_from); /* printable */
        fail(EXIT_USAGE, "--lbfactor-from '%s': the only source is loadavg "
             "(or give --lbfactor-command CMD)", args->lbfactor_from);
    }
    ls = apr_pcalloc(p, sizeof(*ls));
    ls->command = args->lbfactor_command;
    ls->what = ls->command ? "--lbfactor-command" : "--lbfactor-from loadavg";
    if (apr_pool_create(&ls->scratch, p) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    return ls;
}

/* The first line of what the command prints, checked by the lbfactor=
 * rule: its hundredths, or -1 with *why. */
static int from_command(load_source_t *ls, apr_interval_time_t bound,
                        const char **why)
{
    char buf[LINE_READ];
    char *argv[4];
    const char *nl;
    apr_size_t len = 0, n;
    int h;

    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = apr_pstrdup(ls->scratch, ls->command);
    argv[3] = NULL;
    *why = beacon_exec_read(ls->scratch, argv, "the command", bound, buf,
                            sizeof(buf), &len);
    if (*why != NULL) {
        return -1;
    }
    nl = memchr(buf, '\n', len);
    n = nl ? (apr_size_t)(nl - buf) : len;
    if (n > 0 && buf[n - 1] == '\r') {
        n--;
    }
    if (n == 0) {
        *why = "the command printed nothing";
        return -1;
    }
    h = (nl != NULL || len < sizeof(buf)) ? beacon_lbfactor_parse(buf, n)
                                          : -1; /* a line cut short */
    if (h < 0) {
        *why = "the command printed no load factor (its first line must be "
               "1 to 100 with at most two decimals, the lbfactor= rule)";
    }
    return h;
}

/* The 1-minute load average over the online CPUs, mapped: hundredths,
 * or -1 with *why. */
static int from_loadavg(load_source_t *ls, const char **why)
{
    FILE *f = fopen(LOADAVG_FILE, "r");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    char line[128];
    char *end = NULL;
    double load = -1;
    int got;

    if (f == NULL) {
        *why = apr_psprintf(ls->scratch, "cannot read " LOADAVG_FILE ": %s",
                            strerror(errno));
        return -1;
    }
    got = fgets(line, sizeof(line), f) != NULL;
    if (fclose(f) != 0) {
        got = 0;
    }
    if (got) {
        load = strtod(line, &end); /* "0.42 0.30 0.25 1/123 4567" */
    }
    if (!got || end == line || *end != ' ' || !(load >= 0)) {
        *why = "no load average in " LOADAVG_FILE;
        return -1;
    }
    return beacon_lbfactor_from_utilization(load / (double)(ncpu > 0 ? ncpu
                                                                       : 1));
}

void load_source_update(load_source_t *ls, beacon_announcement_t *a,
                        apr_interval_time_t interval)
{
    const char *why = NULL;
    char text[BEACON_LBFACTOR_TEXT_MAX];
    int h;

    apr_pool_clear(ls->scratch);
    h = ls->command ? from_command(ls, command_bound(interval), &why)
                    : from_loadavg(ls, &why);
    if (h >= 0 && beacon_lbfactor_format(text, h) != NULL) {
        memcpy(ls->value, text, sizeof(text));
        if (ls->failing) {
            warn("%s: succeeds again: lbfactor=%s", ls->what, ls->value);
            ls->failing = 0;
        }
    }
    else if (!ls->failing) {
        if (ls->value[0] != '\0') {
            warn("%s: %s; keeping lbfactor=%s until it succeeds", ls->what,
                 why ? why : "no factor", ls->value);
        }
        else {
            warn("%s: %s; sending no lbfactor until it succeeds", ls->what,
                 why ? why : "no factor");
        }
        ls->failing = 1;
    }
    a->lbfactor = ls->value[0] != '\0' ? ls->value : NULL;
}
