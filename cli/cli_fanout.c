/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl send's fan-out: all --to form one libbeacon fan-out
 * (beacon_fanout_t), in which a name stands for every address it resolves
 * to, and what a failed lookup keeps is the library's rule. This file
 * delivers one datagram to every address, through beacon_fanout_send on
 * one socket per address family, and makes the lookups where no
 * announcement waits for them (a thread per name), with what they change
 * said on stderr. cli_send.c signs and schedules.
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

#define REPORT_EVERY apr_time_from_sec(60) /* per name and kind of line */
#define RETRYING " (retrying; reported once a minute at most)"

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

/* (shared with cli_send.c's schedule: see cli.h) */
apr_time_t next_due(apr_time_t due, apr_interval_time_t interval)
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
unsigned fanout_deliver(fanout_ctx_t *fc, const char *buf, apr_size_t len,
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

static void tell_news(const resolver_t *r, const news_t *news)
{
    const beacon_fanout_name_t *name = &news->name;
    char list[BEACON_ADDRESS_LIST_MAX], ebuf[120];

    if (news->tell & TELL_SET) {
        warn("to %s: %u address%s: %s", name->spec, name->naddrs,
             plural_es(name->naddrs),
             beacon_fanout_name_addresses(name, list, sizeof(list)));
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
void fanout_resolve_all(fanout_ctx_t *fc, apr_pool_t *scratch)
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
    apr_status_t rv;

    rv = apr_pool_create_unmanaged_ex(&own, NULL, NULL);
    if (rv == APR_SUCCESS) {
        rv = beacon_lookup_thread_start(own, resolver_main, r);
    }
    return rv;
}

/* A thread per name to look up. They start with SIGTERM and SIGINT
 * blocked, so that the handler runs in this thread and ends its wait. */
void fanout_start_lookups(fanout_ctx_t *fc)
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

fanout_ctx_t *fanout_make(const apr_array_header_t *specs,
                          apr_interval_time_t interval, int once, int verbose)
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
    fc->interval = interval;
    fc->once = once;
    fc->verbose = verbose;
    for (i = 0; i < n; i++) {
        add_name(fc, up, i, APR_ARRAY_IDX(specs, i, const char *));
    }
    return fc;
}
