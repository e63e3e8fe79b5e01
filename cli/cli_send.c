/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl send: announces a backend that is not httpd, once or every
 * interval, and says state=leaving on SIGTERM or SIGINT. What goes in a
 * datagram, its seq and its ts are libbeacon's (beacon_format,
 * beacon_sequence_stamp), and so is where it goes: all --to form one
 * fan-out (beacon_fanout_t), in which a name stands for every address it
 * resolves to, and what a failed lookup keeps is the library's rule. This
 * file schedules and delivers: one datagram signed per announcement, sent
 * through beacon_fanout_send on one socket per address family, and the
 * lookups made where no announcement waits for them (a thread per name),
 * with what they change said on stderr.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <apr_network_io.h>
#include <apr_strings.h>
#include <apr_tables.h>
#include <apr_thread_mutex.h>
#include <apr_thread_proc.h>

#include "cli.h"

#define MIN_INTERVAL apr_time_from_msec(1)
#define REPORT_EVERY apr_time_from_sec(60) /* per name and kind of line */
#define RETRYING " (retrying; reported once a minute at most)"
/* "A, B, C": every address of a name, as beacon_sockaddr_text writes it */
#define LIST_MAX (BEACON_FANOUT_MAX_ADDRS * (BEACON_SOCKADDR_TEXT_MAX + 2))

/* The options as given, before any is checked. */
typedef struct {
    apr_array_header_t *specs; /* --to, const char * each */
    const char *url, *host, *service, *route, *lbfactor, *interval;
    secret_arg_t secret;
    int once, verbose;
} send_args_t;

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
const option_t send_options[] = {
    {"to", OPT_TO, "HOST:PORT",
     "a proxy's ProxyBeaconListen address; repeat it for\n"
     "several proxies. A leading scheme (udp://, tcp://)\n"
     "is ignored; IPv6 in brackets, [::1]:5555. Every\n"
     "address a name resolves to (A and AAAA) gets each\n"
     "datagram; names are looked up again every\n"
     "interval. A literal address is used as is.", 0},
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
     "least one address, 1 if to none", 0},
    {"verbose", OPT_VERBOSE, NULL,
     "print each datagram sent, and to where, on\n"
     "standard output; and on standard error the\n"
     "addresses of a name whenever they change", 0},
    SECRET_FILE_OPTION(0),
    SECRET_EXEC_OPTION(0),
    HELP_OPTION,
    OPTIONS_END};

typedef struct fanout_ctx fanout_ctx_t;

/* What was said of a name that the sending loop and the name's lookups
 * both touch, under fanout_ctx_t.lock. */
typedef struct {
    apr_time_t send_told; /* the last "cannot send" line; 0: none yet */
    int failing;          /* a problem line is out, no "sending again" yet */
    int failed_now;       /* a send to one of its addresses failed in the
                           * datagram being sent */
} name_log_t;

/* The lookups of one name: the start-up round's, then its thread's. */
typedef struct {
    fanout_ctx_t *fc;
    unsigned i;                  /* the name's index in fc->fanout */
    const char *host;
    apr_port_t port;
    apr_time_t resolve_told;     /* the last "cannot resolve" line */
    apr_time_t lost_told;        /* the last "no address" line */
    int cut_told;                /* "more than 64" is said once */
    beacon_lookup_t found;       /* the last lookup */
} resolver_t;

/*
 * Every --to, shared by the sending loop and the lookup threads. It lives
 * in an unmanaged pool, which apr_terminate() does not free: the threads
 * are abandoned at exit, not joined (one may be stuck in getaddrinfo),
 * and one that wakes while the process ends must find its memory there.
 */
struct fanout_ctx {
    apr_thread_mutex_t *lock;    /* around fanout, log and stopped */
    beacon_fanout_t *fanout;
    name_log_t *log;             /* one per name */
    resolver_t *resolvers;       /* one per name; a literal's is unused */
    int stopped;                 /* leaving went out: no update after it */
    apr_interval_time_t interval;
    int once, verbose;
    /* The sending loop's alone: a UDP socket per address family, opened
     * at the first datagram of its family and kept (never one per
     * datagram); -1 until then. */
    int fd4, fd6;
};

#if defined(__SANITIZE_ADDRESS__)
/* For make check-sanitize: the fan-out's unmanaged pools are left to the
 * exit on purpose (see fanout_ctx_t), which LeakSanitizer would report;
 * its built-in suppressions, read at exit, say so. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:apr_pool_create_unmanaged_ex\n";
}

/* (and quietly: stderr is part of what the CLI tests check) */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}
#endif

typedef struct {
    fanout_ctx_t *fc;
    beacon_key_t key;
    beacon_announcement_t a;  /* url, host and pid; seq, ts stamped */
    beacon_sequence_t seq;    /* one for all: each address gets the same
                               * datagram, so each sees seq and ts rise */
    char url[BEACON_URL_MAX]; /* a.url points here */
    char hostname[APRMAXHOSTLEN + 1];
} sender_t;

/* Whether a line last said at *told may be said again at now; if so,
 * *told = now. (A clock stepped back ends the quiet minute rather than
 * extend it.) */
static int may_tell(apr_time_t *told, apr_time_t now)
{
    if (*told != 0 && now >= *told && now - *told < REPORT_EVERY) {
        return 0;
    }
    *told = now;
    return 1;
}

static const char *plural_es(unsigned n)
{
    return n == 1 ? "" : "es";
}

/* The next time of a fixed schedule (no drift from the time each round
 * takes), or interval from now when late or when the clock stepped. */
static apr_time_t next_due(apr_time_t due, apr_interval_time_t interval)
{
    apr_time_t now = apr_time_now();

    due += interval;
    if (due <= now || due - now > interval) {
        due = now + interval;
    }
    return due;
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */

/* The socket of to's family, opened once; -1 (errno set) when it cannot
 * be, which the next datagram tries again. */
static int socket_for(fanout_ctx_t *fc, const beacon_sockaddr_t *to)
{
    int *fd = to->u.sa.sa_family == AF_INET6 ? &fc->fd6 : &fc->fd4;

    if (*fd < 0) {
        *fd = socket(to->u.sa.sa_family, SOCK_DGRAM, 0);
    }
    return *fd;
}

/* A failed send costs its name a line a minute at most, not one per
 * datagram; the name is not sending well again until a round without. */
static void send_failed(fanout_ctx_t *fc, unsigned i,
                        const beacon_sockaddr_t *to, apr_status_t rv)
{
    name_log_t *log = &fc->log[i];
    char text[BEACON_SOCKADDR_TEXT_MAX], ebuf[120];

    log->failed_now = 1;
    if (!may_tell(&log->send_told, apr_time_now())) {
        return;
    }
    log->failing = 1;
    warn("to %s: cannot send to %s: %s%s", fc->fanout->names[i].spec,
         beacon_sockaddr_text(to, text, sizeof(text)),
         errstr(rv, ebuf, sizeof(ebuf)), fc->once ? "" : RETRYING);
}

static void print_sent(const fanout_ctx_t *fc, unsigned name,
                       const beacon_sockaddr_t *to, const char *buf,
                       apr_size_t len)
{
    char text[BEACON_SOCKADDR_TEXT_MAX];

    printf("sent to %s (%s): %.*s\n",
           beacon_sockaddr_text(to, text, sizeof(text)),
           fc->fanout->names[name].spec, (int)len, buf);
    flush_stdout();
}

/* beacon_fanout_send's delivery to one address, under the lock. */
static apr_status_t send_one(void *ctx, unsigned name,
                             const beacon_sockaddr_t *to, const char *buf,
                             apr_size_t len)
{
    fanout_ctx_t *fc = ctx;
    int fd = socket_for(fc, to);
    ssize_t n = -1;
    apr_status_t rv;

    if (fd >= 0) {
        do { /* a signal in the middle is no failure of the address */
            n = sendto(fd, buf, len, 0, &to->u.sa, (socklen_t)to->len);
        } while (n < 0 && errno == EINTR);
    }
    if (n < 0) {
        rv = APR_FROM_OS_ERROR(errno);
    }
    else {
        rv = (apr_size_t)n == len ? APR_SUCCESS : APR_EGENERAL;
    }
    if (rv != APR_SUCCESS) {
        send_failed(fc, name, to, rv);
    }
    else if (fc->verbose) {
        print_sent(fc, name, to, buf, len);
    }
    return rv;
}

/* A name that had a problem line recovers once its lookup works again
 * and a datagram went to all its addresses: said once. */
static void tell_recoveries(fanout_ctx_t *fc)
{
    unsigned i;

    for (i = 0; i < fc->fanout->nnames; i++) {
        const beacon_fanout_name_t *name = &fc->fanout->names[i];
        name_log_t *log = &fc->log[i];

        if (log->failing && !log->failed_now && name->naddrs > 0 &&
            name->state == BEACON_NAME_RESOLVED) {
            log->failing = 0;
            warn("to %s: sending again", name->spec);
        }
    }
}

/*
 * Sends one datagram to every address known; returns how many took it.
 * The last one (leaving) stops the lookups' updates, so that it goes to
 * the set the run ends with and nothing changes after it. Nothing under
 * the lock resolves: a lookup thread waits for it a datagram's time.
 */
static unsigned deliver(fanout_ctx_t *fc, const char *buf, apr_size_t len,
                        int last)
{
    unsigned i, reached;

    apr_thread_mutex_lock(fc->lock);
    fc->stopped |= last;
    for (i = 0; i < fc->fanout->nnames; i++) {
        fc->log[i].failed_now = 0;
    }
    reached = beacon_fanout_send(fc->fanout, buf, len, send_one, fc);
    tell_recoveries(fc);
    apr_thread_mutex_unlock(fc->lock);
    return reached;
}

/*
 * Formats one announcement (state NULL or BEACON_STATE_LEAVING) and sends
 * it to every address. Returns how many it reached.
 */
static unsigned announce(sender_t *s, const char *state)
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
    return deliver(s->fc, buf, (apr_size_t)len, state != NULL);
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */

/* What a lookup calls for on stderr. */
enum {
    TELL_SET = 1,        /* the set changed (--verbose) */
    TELL_CUT = 2,        /* more than BEACON_FANOUT_MAX_ADDRS */
    TELL_KEPT = 4,       /* failed; the last set is kept */
    TELL_LOST = 8,       /* failed once too often; the set is gone */
    TELL_UNRESOLVED = 16 /* failed, with no set to keep */
};
#define TELL_TROUBLE (TELL_KEPT | TELL_LOST | TELL_UNRESOLVED)

/* An update and its lines: decided under the lock, said after it, so
 * that a slow stderr never holds up a datagram. */
typedef struct {
    beacon_fanout_name_t name; /* as the update left it */
    beacon_fanout_change_t change;
    unsigned tell;             /* TELL_* */
} news_t;

static unsigned decide(resolver_t *r, const news_t *news)
{
    const beacon_fanout_change_t *c = &news->change;
    apr_time_t now = apr_time_now();
    unsigned tell = 0;

    if (r->fc->verbose && (c->added || (c->removed && !c->lost))) {
        tell |= TELL_SET;
    }
    if (c->cut && !r->cut_told) {
        r->cut_told = 1;
        tell |= TELL_CUT;
    }
    if (c->kept) {
        tell |= may_tell(&r->resolve_told, now) ? TELL_KEPT : 0;
    }
    else if (c->lost) {
        tell |= may_tell(&r->lost_told, now) ? TELL_LOST : 0;
    }
    else if (news->name.state == BEACON_NAME_FAILED) {
        tell |= may_tell(&r->resolve_told, now) ? TELL_UNRESOLVED : 0;
    }
    return tell;
}

static const char *address_list(const beacon_fanout_name_t *name, char *buf,
                                apr_size_t size)
{
    char text[BEACON_SOCKADDR_TEXT_MAX];
    apr_size_t used = 0;
    unsigned i;

    buf[0] = '\0';
    for (i = 0; i < name->naddrs && used + 1 < size; i++) {
        used += apr_snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                             beacon_sockaddr_text(&name->addrs[i].to, text,
                                                  sizeof(text)));
    }
    return buf;
}

static void tell_news(const resolver_t *r, const news_t *news)
{
    const beacon_fanout_name_t *name = &news->name;
    char list[LIST_MAX], ebuf[120];

    if (news->tell & TELL_SET) {
        warn("to %s: %u address%s: %s", name->spec, name->naddrs,
             plural_es(name->naddrs), address_list(name, list, sizeof(list)));
    }
    if (news->tell & TELL_CUT) {
        warn("to %s: resolves to %u addresses; sending to the first %d only",
             name->spec, name->naddrs + news->change.cut,
             BEACON_FANOUT_MAX_ADDRS);
    }
    if (news->tell & TELL_KEPT) {
        warn("to %s: cannot resolve (%s): keeping its %u address%s for up "
             "to %d intervals", name->spec,
             errstr(name->last_error, ebuf, sizeof(ebuf)), name->naddrs,
             plural_es(name->naddrs), BEACON_FANOUT_KEEP_ROUNDS);
    }
    if (news->tell & TELL_LOST) {
        warn("to %s: no address for %d intervals; not sending to it until "
             "it resolves", name->spec, BEACON_FANOUT_KEEP_ROUNDS);
    }
    if (news->tell & TELL_UNRESOLVED) {
        warn("to %s: cannot resolve (%s)%s", name->spec,
             errstr(name->last_error, ebuf, sizeof(ebuf)),
             r->fc->once ? "" : RETRYING);
    }
}

/* Applies r->found under the lock; 0 once leaving went out. */
static int apply(resolver_t *r, news_t *news)
{
    fanout_ctx_t *fc = r->fc;

    apr_thread_mutex_lock(fc->lock);
    if (fc->stopped) {
        apr_thread_mutex_unlock(fc->lock);
        return 0;
    }
    beacon_fanout_update(fc->fanout, r->i, &r->found, &news->change);
    news->name = fc->fanout->names[r->i];
    news->tell = decide(r, news);
    if (news->tell & TELL_TROUBLE) {
        fc->log[r->i].failing = 1; /* "sending again" once it recovers */
    }
    apr_thread_mutex_unlock(fc->lock);
    return 1;
}

typedef enum { RESOLVE_SAME, RESOLVE_ADDED, RESOLVE_STOPPED } resolve_t;

/* One lookup of r's name, which may block for long: never under the
 * lock. RESOLVE_ADDED when it found an address new to the name. */
static resolve_t resolve(resolver_t *r, apr_pool_t *scratch)
{
    news_t news;

    beacon_lookup(&r->found, r->host, r->port, scratch);
    apr_pool_clear(scratch);
    if (!apply(r, &news)) {
        return RESOLVE_STOPPED;
    }
    tell_news(r, &news);
    return news.change.added ? RESOLVE_ADDED : RESOLVE_SAME;
}

/* Every name looked up once, before the first datagram: until then no
 * address of a name is known. */
static void resolve_all(fanout_ctx_t *fc, apr_pool_t *scratch)
{
    unsigned i;

    for (i = 0; i < fc->fanout->nnames; i++) {
        if (!fc->fanout->names[i].literal) {
            (void)resolve(&fc->resolvers[i], scratch);
        }
    }
}

/*
 * A name's lookups after the first, every interval, in a thread of its
 * own. One that finds a new address wakes the sending loop: that proxy
 * hears now, not an interval later. The thread ends once leaving went
 * out, or is abandoned at exit in whatever it is doing.
 */
static void *APR_THREAD_FUNC resolver_main(apr_thread_t *thread, void *data)
{
    resolver_t *r = data;
    apr_pool_t *scratch;
    apr_time_t due = apr_time_now();
    resolve_t got;

    if (apr_pool_create(&scratch, apr_thread_pool_get(thread)) !=
        APR_SUCCESS) {
        return NULL;
    }
    do {
        apr_time_t now;

        due = next_due(due, r->fc->interval);
        now = apr_time_now();
        if (due > now) {
            apr_sleep(due - now);
        }
        got = resolve(r, scratch);
        if (got == RESOLVE_ADDED) {
            wake_waiter();
        }
    } while (got != RESOLVE_STOPPED);
    return NULL;
}

/* A detached thread with an unmanaged pool of its own: it shares no
 * allocator with another thread, and nothing it uses is freed at exit. */
static apr_status_t start_resolver(resolver_t *r)
{
    apr_pool_t *own;
    apr_threadattr_t *attr;
    apr_thread_t *thread;
    apr_status_t rv;

    rv = apr_pool_create_unmanaged_ex(&own, NULL, NULL);
    if (rv == APR_SUCCESS) {
        rv = apr_threadattr_create(&attr, own);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_threadattr_detach_set(attr, 1);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_thread_create(&thread, attr, resolver_main, r, own);
    }
    return rv;
}

/* A thread per name to look up. They start with SIGTERM and SIGINT
 * blocked, so that the handler runs in this thread and ends its wait. */
static void start_resolvers(fanout_ctx_t *fc)
{
    unsigned i;
    char ebuf[120];

    block_stop_signals();
    for (i = 0; i < fc->fanout->nnames; i++) {
        apr_status_t rv;

        if (fc->fanout->names[i].literal) {
            continue;
        }
        rv = start_resolver(&fc->resolvers[i]);
        if (rv != APR_SUCCESS) {
            fail(EXIT_RUNTIME, "cannot start the lookups of %s: %s",
                 fc->fanout->names[i].spec, errstr(rv, ebuf, sizeof(ebuf)));
        }
    }
    unblock_stop_signals();
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
        case OPT_SECRET_FILE:
        case OPT_SECRET_EXEC:
            take_secret_arg(&args->secret, optch, arg);
            break;
        }
    }
}

/* Where one --to goes: its name in the fan-out, and its lookups. The
 * strings are copied into up, the fan-out's own pool. */
static void add_name(fanout_ctx_t *fc, apr_pool_t *up, unsigned i,
                     const char *given)
{
    resolver_t *r = &fc->resolvers[i];
    const char *spec = apr_pstrdup(up, given);
    const char *err;
    char *host;

    err = beacon_parse_host_port(up, spec, 0, &host, &r->port);
    if (err) {
        fail(EXIT_USAGE, "--to '%s': %s", spec, err);
    }
    r->fc = fc;
    r->i = i;
    r->host = host;
    beacon_fanout_name(fc->fanout, i, spec, host, r->port);
}

/* Every --to as one fan-out, with its lock, in an unmanaged pool (see
 * fanout_ctx_t). */
static fanout_ctx_t *make_fanout(const apr_array_header_t *specs)
{
    unsigned i, n = (unsigned)specs->nelts;
    apr_pool_t *up;
    fanout_ctx_t *fc = NULL;
    apr_status_t rv;
    char ebuf[120];

    rv = apr_pool_create_unmanaged_ex(&up, NULL, NULL);
    if (rv == APR_SUCCESS) {
        fc = apr_pcalloc(up, sizeof(*fc));
        rv = apr_thread_mutex_create(&fc->lock, APR_THREAD_MUTEX_DEFAULT, up);
    }
    if (rv != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "cannot set up the sending: %s",
             errstr(rv, ebuf, sizeof(ebuf)));
    }
    fc->fanout = apr_palloc(up, beacon_fanout_size(n));
    beacon_fanout_init(fc->fanout, n);
    fc->log = apr_pcalloc(up, sizeof(name_log_t) * n);
    fc->resolvers = apr_pcalloc(up, sizeof(resolver_t) * n);
    fc->fd4 = fc->fd6 = -1;
    for (i = 0; i < n; i++) {
        add_name(fc, up, i, APR_ARRAY_IDX(specs, i, const char *));
    }
    return fc;
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
    s->fc = make_fanout(args->specs);
    s->fc->interval = interval;
    s->fc->once = args->once;
    s->fc->verbose = args->verbose;
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
    load_key(p, &args->secret, &s->key);
    check_length(s);
}

/* ------------------------------------------------------------------ */
/* The command                                                         */

/*
 * Announces every interval until a stop signal, then says leaving to the
 * addresses known then. The names are looked up once before the first
 * datagram, then by their threads.
 */
static void send_loop(apr_pool_t *p, sender_t *s, apr_pool_t *scratch)
{
    apr_interval_time_t interval = s->fc->interval;
    apr_time_t next;
    wait_t w;

    catch_stop_signals(p);
    resolve_all(s->fc, scratch);
    start_resolvers(s->fc);
    next = apr_time_now();
    do {
        announce(s, NULL);
        /* a fixed schedule, not interval after each send: no drift */
        next = next_due(next, interval);
        /* a lookup found a new address: everyone hears now, on top of
         * the schedule, which stays */
        while ((w = wait_until(p, next, interval)) == WAIT_WOKEN) {
            announce(s, NULL);
        }
    } while (w != WAIT_STOP);
    announce(s, BEACON_STATE_LEAVING);
}

int run_send(apr_pool_t *p, const command_t *cmd, int argc,
             const char *const *argv)
{
    send_args_t args;
    apr_pool_t *scratch;
    sender_t sender, *s = &sender;
    int status = 0;

    memset(s, 0, sizeof(*s)); /* also the sequence: seq from 0 */
    parse_send_options(p, cmd, argc, argv, &args);
    setup_schedule(&args, s);
    setup_announcement(p, &args, s);
    if (args.url == NULL) {
        warn("no --url: sending heartbeats only, which no proxy adds to a "
             "balancer");
    }
    if (apr_pool_create(&scratch, p) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    if (s->fc->once) {
        /* no leaving datagram here: a signal simply ends the program */
        resolve_all(s->fc, scratch);
        status = announce(s, NULL) > 0 ? 0 : EXIT_RUNTIME;
    }
    else {
        send_loop(p, s, scratch);
    }
    beacon_wipe(&s->key, sizeof(s->key));
    return status;
}
