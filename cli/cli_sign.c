/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl sign: prints one signed datagram, for scripts and test
 * vectors. Every field is written as given (the url canonicalized, as
 * send does it); beacon_format() decides what a datagram may hold.
 */

#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The options as given, before any is checked. */
typedef struct {
    const char *url, *host, *pid, *seq, *ts, *service, *route, *lbfactor;
    const char *state, *ctx;
    secret_arg_t secret;
} sign_args_t;

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
const option_t sign_options[] = {
    {"url", OPT_URL, "URL",
     "the url= field, checked and canonicalized as send\n"
     "does it", ONCE(sign_args_t, url)},
    {"host", OPT_HOST, "NAME", "the host= field", ONCE(sign_args_t, host)},
    {"pid", OPT_PID, "N", "the pid= field", ONCE(sign_args_t, pid)},
    {"seq", OPT_SEQ, "N", "the seq= field", ONCE(sign_args_t, seq)},
    {"ts", OPT_TS, "USEC",
     "the ts= field (required): microseconds since the\n"
     "epoch, or 'now' for this machine's clock", ONCE(sign_args_t, ts)},
    {"service", OPT_SERVICE, "NAME",
     "the svc= field: the service the datagram is for,\n"
     "1 to 63 of A-Z a-z 0-9 . _ -", ONCE(sign_args_t, service)},
    CTX_OPTION(ONCE(sign_args_t, ctx)),
    ROUTE_OPTION(ONCE(sign_args_t, route)),
    LBFACTOR_OPTION(ONCE(sign_args_t, lbfactor)),
    {"state", OPT_STATE, "STATE",
     "the state= field: leaving, draining or standby",
     ONCE(sign_args_t, state)},
    SECRET_FILE_OPTION(0),
    SECRET_EXEC_OPTION(0),
    HELP_OPTION,
    OPTIONS_END};

static void parse_sign_options(apr_pool_t *p, const command_t *cmd, int argc,
                               const char *const *argv, sign_args_t *args)
{
    const char *arg;
    opts_t o;
    int optch;

    memset(args, 0, sizeof(*args));
    opts_init(&o, p, cmd, argc, argv);
    /* every other option of sign is given once: stored by opts_next */
    while ((optch = opts_next(&o, args, &arg)) != 0) {
        take_secret_arg(&args->secret, optch, arg);
    }
}

/* --ts, --pid, --seq: the wire's own decimal rule, so that sign cannot
 * write a number a receiver would refuse. */
static apr_int64_t number_option(const char *name, const char *arg)
{
    apr_int64_t n;

    if (!beacon_parse_decimal(arg, strlen(arg), &n)) {
        fail(EXIT_USAGE, "--%s '%s': expected a decimal number of 1 to %d "
             "digits", name, arg, BEACON_DECIMAL_MAX_DIGITS);
    }
    return n;
}

int run_sign(apr_pool_t *p, const command_t *cmd, int argc,
             const char *const *argv)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    char canonical[BEACON_URL_MAX];
    beacon_announcement_t a;
    beacon_key_t key;
    sign_args_t args;
    int len;

    parse_sign_options(p, cmd, argc, argv, &args);
    if (args.ts == NULL) {
        fail(EXIT_USAGE, "--ts USEC is required (see beaconctl sign --help)");
    }
    memset(&a, 0, sizeof(a));
    a.ts = strcmp(args.ts, "now") == 0 ? (apr_int64_t)apr_time_now()
                                       : number_option("ts", args.ts);
    a.pid = args.pid ? number_option("pid", args.pid) : -1;
    a.seq = args.seq ? number_option("seq", args.seq) : -1;
    if (args.url) {
        canonical_url(args.url, canonical);
        a.url = canonical;
    }
    if (args.host) {
        check_field("host", args.host);
        a.host = args.host;
    }
    set_v11_fields(&a, args.service, args.route, args.lbfactor);
    set_ctx_field(&a, args.ctx);
    if (args.state) {
        check_state(args.state, 1);
        a.state = args.state;
    }
    load_key(p, &args.secret, &key);
    len = beacon_format(buf, sizeof(buf), &a, &key);
    beacon_wipe(&key, sizeof(key));
    if (len < 0) {
        fail(EXIT_USAGE, "the datagram would be longer than %d bytes",
             BEACON_MAX_DATAGRAM);
    }
    printf("%s\n", buf);
    flush_stdout();
    return 0;
}
