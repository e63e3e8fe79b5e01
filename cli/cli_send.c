/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl send: announces a backend that is not httpd, once or every
 * interval, and says state=leaving on SIGTERM or SIGINT. What goes in a
 * datagram, its seq and its ts are libbeacon's (beacon_format,
 * beacon_sequence_stamp); this file schedules and delivers.
 */

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <apr_network_io.h>
#include <apr_strings.h>
#include <apr_tables.h>

#include "cli.h"

#define MIN_INTERVAL apr_time_from_msec(1)
#define REPORT_EVERY apr_time_from_sec(60) /* per failing target */

/* The options as given, before any is checked. */
typedef struct {
    apr_array_header_t *specs; /* --to, const char * each */
    const char *url, *host, *service, *route, *lbfactor, *interval;
    const char *secret_file;
    int once, verbose;
} send_args_t;

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
const option_t send_options[] = {
    {"to", OPT_TO, "HOST:PORT",
     "a proxy's ProxyBeaconListen address; repeat it for\n"
     "several proxies. A leading scheme (udp://, tcp://)\n"
     "is ignored; IPv6 in brackets, [::1]:5555. Names\n"
     "are looked up again for every datagram.", 0},
    {"url", OPT_URL, "URL",
     "this backend's origin, scheme://host[:port], as\n"
     "the proxy should reach it; sent in canonical form.\n"
     "Without it only heartbeats are sent, which a proxy\n"
     "logs but never adds to a balancer.", ONCE(send_args_t, url)},
    {"host", OPT_HOST, "NAME",
     "the host= field (informational); default: this\n"
     "machine's host name", ONCE(send_args_t, host)},
    {"service", OPT_SERVICE, "NAME",
     "the service this backend belongs to (svc=), the\n"
     "proxies' ProxyBeaconService: 1 to 63 of A-Z a-z\n"
     "0-9 . _ -. A proxy of another service drops it",
     ONCE(send_args_t, service)},
    ROUTE_OPTION(ONCE(send_args_t, route)),
    LBFACTOR_OPTION(ONCE(send_args_t, lbfactor)),
    {"interval", OPT_INTERVAL, "SECONDS",
     "time between announcements, default 5; fractions\n"
     "(0.5) and the units s and ms (500ms) are accepted",
     ONCE(send_args_t, interval)},
    {"once", OPT_ONCE, NULL,
     "send one announcement and exit: 0 if it went to at\n"
     "least one proxy, 1 if to none", 0},
    {"verbose", OPT_VERBOSE, NULL,
     "print each datagram sent, and to where, on\n"
     "standard output", 0},
    SECRET_FILE_OPTION(ONCE(send_args_t, secret_file)),
    HELP_OPTION,
    OPTIONS_END};

typedef struct {
    const char *spec;       /* as given, for messages */
    char *host;
    apr_port_t port;
    apr_time_t reported_at; /* last error line; 0: none yet */
    int reported;           /* an error line is out, no recovery line yet */
} target_t;

typedef struct {
    target_t *targets;
    int ntargets;
    beacon_key_t key;
    beacon_announcement_t a;  /* url, host and pid; seq, ts stamped */
    beacon_sequence_t seq;    /* one for all: each target gets the same
                               * datagram, so each sees seq and ts rise */
    apr_interval_time_t interval;
    int verbose;
    int once;
    char url[BEACON_URL_MAX]; /* a.url points here */
    char hostname[APRMAXHOSTLEN + 1];
} sender_t;

/* ------------------------------------------------------------------ */
/* Sending                                                             */

/* Reports a target's failure, at most once per REPORT_EVERY. */
static void target_failed(const sender_t *s, target_t *t, apr_time_t now,
                          const char *what, apr_status_t rv)
{
    char ebuf[120];

    /* (a clock stepped back ends the quiet minute rather than extend it) */
    if (t->reported_at != 0 && now >= t->reported_at &&
        now - t->reported_at < REPORT_EVERY) {
        return;
    }
    t->reported_at = now;
    t->reported = 1;
    warn("to %s: %s: %s%s", t->spec, what, errstr(rv, ebuf, sizeof(ebuf)),
         s->once ? "" : " (retrying; reported once a minute at most)");
}

/*
 * Sends buf to one target; 1 if it went out. The name is resolved each
 * time, so a proxy that moves is followed; a failure costs a
 * rate-limited line, nothing more.
 */
static int send_to(const sender_t *s, target_t *t, const char *buf,
                   apr_size_t len, apr_time_t now, apr_pool_t *tick)
{
    apr_sockaddr_t *sa;
    apr_socket_t *sock;
    apr_size_t n = len;
    apr_status_t rv;

    rv = apr_sockaddr_info_get(&sa, t->host, APR_UNSPEC, t->port, 0, tick);
    if (rv != APR_SUCCESS) {
        target_failed(s, t, now, apr_psprintf(tick, "cannot resolve %s",
                                              t->host), rv);
        return 0;
    }
    rv = apr_socket_create(&sock, sa->family, SOCK_DGRAM, APR_PROTO_UDP,
                           tick);
    if (rv != APR_SUCCESS) {
        target_failed(s, t, now, "cannot create a socket", rv);
        return 0;
    }
    rv = apr_socket_sendto(sock, sa, 0, buf, &n);
    apr_socket_close(sock);
    if (rv == APR_SUCCESS && n != len) {
        rv = APR_EGENERAL;
    }
    if (rv != APR_SUCCESS) {
        target_failed(s, t, now, "cannot send", rv);
        return 0;
    }
    if (t->reported) {
        t->reported = 0;
        warn("to %s: sending again", t->spec);
    }
    return 1;
}

/*
 * Formats one announcement (state NULL or BEACON_STATE_LEAVING) and sends
 * it to every target. Returns how many targets it reached.
 */
static int announce(sender_t *s, const char *state, apr_pool_t *tick)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    apr_time_t now = apr_time_now();
    int len, i, sent = 0;

    beacon_sequence_stamp(&s->seq, now, &s->a);
    s->a.state = state;
    len = beacon_format(buf, sizeof(buf), &s->a, &s->key);
    if (len < 0) {
        /* check_length() tried the longest datagram before the first send */
        fail(EXIT_RUNTIME, "cannot format an announcement");
    }
    for (i = 0; i < s->ntargets; i++) {
        if (!send_to(s, &s->targets[i], buf, (apr_size_t)len, now, tick)) {
            continue;
        }
        sent++;
        if (s->verbose) {
            printf("sent to %s: %s\n", s->targets[i].spec, buf);
            flush_stdout();
        }
    }
    apr_pool_clear(tick);
    return sent;
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */

static void parse_send_options(apr_pool_t *p, const command_t *cmd, int argc,
                               const char *const *argv, send_args_t *args)
{
    const char *arg;
    opts_t o;
    int optch;

    memset(args, 0, sizeof(*args));
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
        }
    }
}

/* --to, --once and --interval: where to and how often. */
static void setup_schedule(apr_pool_t *p, const send_args_t *args,
                           sender_t *s)
{
    int i;

    if (args->specs->nelts == 0) {
        fail(EXIT_USAGE, "--to HOST:PORT is required (see beaconctl send "
             "--help)");
    }
    if (args->once && args->interval) {
        fail(EXIT_USAGE, "--once and --interval exclude each other");
    }
    s->interval = BEACON_DEFAULT_INTERVAL;
    if (args->interval && (!parse_duration(args->interval, &s->interval) ||
                           s->interval < MIN_INTERVAL)) {
        fail(EXIT_USAGE, "--interval '%s': expected seconds of at least "
             "0.001, e.g. 5, 0.5 or 500ms", args->interval);
    }
    s->ntargets = args->specs->nelts;
    s->targets = apr_pcalloc(p, sizeof(target_t) * (apr_size_t)s->ntargets);
    for (i = 0; i < s->ntargets; i++) {
        target_t *t = &s->targets[i];
        const char *err;

        t->spec = APR_ARRAY_IDX(args->specs, i, const char *);
        err = beacon_parse_host_port(p, t->spec, 0, &t->host, &t->port);
        if (err) {
            fail(EXIT_USAGE, "--to '%s': %s", t->spec, err);
        }
    }
}

/* The longest datagram this run can send must fit: found now, not at
 * the first send or, worse, at the leaving one. */
static void check_length(sender_t *s)
{
    char trial[BEACON_MAX_DATAGRAM + 1];
    beacon_announcement_t a = s->a;

    a.seq = BEACON_DECIMAL_MAX;
    a.ts = BEACON_DECIMAL_MAX;
    a.state = BEACON_STATE_LEAVING;
    if (beacon_format(trial, sizeof(trial), &a, &s->key) < 0) {
        fail(EXIT_USAGE, "--url, --host, --service, --route and --lbfactor "
             "make a datagram longer than %d bytes", BEACON_MAX_DATAGRAM);
    }
}

/* --url, --host, --service, --route, --lbfactor, the pid and the key:
 * what every datagram says. */
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
    s->a.pid = (apr_int64_t)getpid();
    load_key(p, args->secret_file, &s->key);
    check_length(s);
}

/* ------------------------------------------------------------------ */
/* The command                                                         */

/* Announces every interval until a stop signal, then says leaving. */
static void send_loop(apr_pool_t *p, sender_t *s, apr_pool_t *tick)
{
    apr_time_t next;

    catch_stop_signals(p);
    next = apr_time_now();
    for (;;) {
        apr_time_t now;

        announce(s, NULL, tick);
        /* a fixed schedule, not interval after each send: no drift */
        next += s->interval;
        now = apr_time_now();
        if (next <= now || next - now > s->interval) {
            next = now + s->interval; /* late, or the clock stepped */
        }
        if (wait_until(p, next, s->interval)) {
            break;
        }
    }
    announce(s, BEACON_STATE_LEAVING, tick);
}

int run_send(apr_pool_t *p, const command_t *cmd, int argc,
             const char *const *argv)
{
    send_args_t args;
    apr_pool_t *tick;
    sender_t sender, *s = &sender;
    int status = 0;

    memset(s, 0, sizeof(*s)); /* also the sequence: seq from 0 */
    parse_send_options(p, cmd, argc, argv, &args);
    s->once = args.once;
    s->verbose = args.verbose;
    setup_schedule(p, &args, s);
    setup_announcement(p, &args, s);
    if (args.url == NULL) {
        warn("no --url: sending heartbeats only, which no proxy adds to a "
             "balancer");
    }
    if (apr_pool_create(&tick, p) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    if (s->once) {
        /* no leaving datagram here: a signal simply ends the program */
        status = announce(s, NULL, tick) > 0 ? 0 : EXIT_RUNTIME;
    }
    else {
        send_loop(p, s, tick);
    }
    beacon_wipe(&s->key, sizeof(s->key));
    return status;
}
