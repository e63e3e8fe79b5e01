/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Options: each command's option_t table drives both apr_getopt_long and
 * its --help text, so that the help can never miss an option or list one
 * that is not taken.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <apr_strings.h>

#include "cli.h"

/* Prints text, each line after the first indented by indent columns. */
static void put_indented(const char *text, int indent)
{
    for (; *text; text++) {
        putchar(*text);
        if (*text == '\n') {
            printf("%*s", indent, "");
        }
    }
}

/* One option's entry: the name in 26 columns, then its help lines. */
static void print_option_help(const option_t *o)
{
    char head[64];
    int n;

    n = snprintf(head, sizeof(head), "  %s--%s%s%s",
                 o->optch == OPT_HELP ? "-h, " : "", o->name,
                 o->arg ? " " : "", o->arg ? o->arg : "");
    if (n > 24) {
        printf("%s\n%26s", head, "");
    }
    else {
        printf("%-26s", head);
    }
    put_indented(o->help, 26);
    putchar('\n');
}

void print_command_help(const command_t *cmd)
{
    const option_t *o;
    int width = (int)(strlen("usage: beaconctl ") + strlen(cmd->name) + 1);

    printf("usage: beaconctl %s", cmd->name);
    if (cmd->synopsis) {
        putchar(' ');
        put_indented(cmd->synopsis, width);
    }
    fputs("\n\n", stdout);
    put_indented(cmd->about, 0);
    fputs("\n\noptions:\n", stdout);
    for (o = cmd->options; o->name; o++) {
        print_option_help(o);
    }
}

/*
 * apr_getopt's error callback. APR formats "<command>: <problem>: <option>";
 * the problem becomes a usage error naming where the help is.
 */
static void getopt_error(void *arg, const char *fmt, ...)
{
    char msg[256];
    apr_size_t n;
    va_list ap;

    va_start(ap, fmt);
    apr_vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) {
        msg[--n] = '\0';
    }
    cmd_name = NULL; /* msg starts with it already */
    fail(EXIT_USAGE, "%s (see beaconctl %s --help)", msg, (const char *)arg);
}

/*
 * A secret given on the command line is refused before anything else
 * looks at it, and the message does not repeat it: it would already be
 * in every local user's ps output, and should not be in a log as well.
 */
static void refuse_secret_argument(int argc, const char *const *argv)
{
    int i;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--secret") == 0 ||
            strncmp(argv[i], "--secret=", 9) == 0) {
            fail(EXIT_USAGE, "there is no --secret option: a secret on the "
                 "command line is visible to every local user; use "
                 "--secret-file FILE, --secret-exec COMMAND or the "
                 "environment variable " SECRET_ENV);
        }
    }
}

void opts_init(opts_t *o, apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv)
{
    apr_getopt_option_t *table;
    int i, n = 0;

    refuse_secret_argument(argc, argv);
    while (cmd->options[n].name) {
        n++;
    }
    table = apr_pcalloc(p, sizeof(*table) * (apr_size_t)(n + 1));
    for (i = 0; i < n; i++) {
        table[i].name = cmd->options[i].name;
        table[i].optch = cmd->options[i].optch;
        table[i].has_arg = cmd->options[i].arg != NULL;
        table[i].description = cmd->options[i].help;
    }
    if (apr_getopt_init(&o->os, p, argc, argv) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    o->os->errfn = getopt_error;
    o->os->errarg = (void *)cmd->name;
    o->table = table;
    o->cmd = cmd;
    o->argc = argc;
}

static const option_t *option_of(const command_t *cmd, int optch)
{
    const option_t *opt;

    for (opt = cmd->options; opt->name; opt++) {
        if (opt->optch == optch) {
            return opt;
        }
    }
    return NULL;
}

/* Stores arg in the option's slot, or fails on a repeat. */
static void set_once(const option_t *opt, void *args, const char *arg)
{
    const char **slot = (const char **)((char *)args + opt->once - 1);

    if (*slot != NULL) {
        fail(EXIT_USAGE, "--%s may be given only once", opt->name);
    }
    *slot = arg;
}

static int next_option(opts_t *o, const char **arg)
{
    int optch;
    apr_status_t rv = apr_getopt_long(o->os, o->table, &optch, arg);

    if (rv == APR_EOF) {
        if (o->os->ind < o->argc) {
            fail(EXIT_USAGE, "unexpected argument '%s' (see beaconctl %s "
                 "--help)", o->os->argv[o->os->ind], o->cmd->name);
        }
        return 0;
    }
    if (rv != APR_SUCCESS) {
        /* getopt_error() has reported it and exited; this is a fallback */
        fail(EXIT_USAGE, "bad options (see beaconctl %s --help)",
             o->cmd->name);
    }
    if (optch == OPT_HELP) {
        print_command_help(o->cmd);
        flush_stdout();
        exit(0);
    }
    return optch;
}

int opts_next(opts_t *o, void *args, const char **arg)
{
    int optch;

    while ((optch = next_option(o, arg)) != 0) {
        const option_t *opt = option_of(o->cmd, optch);

        if (opt == NULL || opt->once == 0) {
            return optch;
        }
        set_once(opt, args, *arg);
    }
    return 0;
}
