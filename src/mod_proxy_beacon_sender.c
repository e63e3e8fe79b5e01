/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The sender: a backend with ProxyBeaconAddress announces its own origin to
 * every proxy named, from a mod_watchdog singleton, once at start-up and
 * then every ProxyBeaconInterval.
 *
 * A name may stand for a tier of proxies (a record per proxy): every
 * address it resolves to gets every announcement, one datagram signed for
 * all. The names are looked up again every interval by threads of their
 * own (mod_proxy_beacon_lookup.c), so this thread only signs and sends to
 * the addresses known: a slow resolver delays nobody's announcement.
 */

#include "mod_proxy_beacon_sender.h"
#include "mod_proxy_beacon_headroom.h"
#include "mod_proxy_beacon_lookup.h"

#include <apr_atomic.h>
#include <apr_network_io.h>
#include <apr_thread_mutex.h>
#include <apr_strings.h>
#include <ap_mpm.h>
#include <scoreboard.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <errno.h>
#include <unistd.h>

#ifndef SOCK_CLOEXEC
#define SOCK_CLOEXEC 0
#endif

#define SEND_ERROR_LOG_EVERY apr_time_from_sec(60) /* per sender */
#define TICK apr_time_from_msec(100)      /* mod_watchdog's own slice */
/* A second announcement this soon after start, so that one lost datagram
 * does not keep a new backend out for a whole interval. */
#define CATCH_UP apr_time_from_sec(1)
/* How long a child told to stop gracefully waits to see whether its
 * siblings were told too: they close their listeners within milliseconds. */
#define SIBLINGS_SETTLE apr_time_from_msec(300)

typedef struct beacon_sender beacon_sender;

/* One sending server: its proxies, its thread, its sequence. */
struct beacon_sender {
    server_rec *s;
    beacon_server_conf *conf;
    const char *hostname;
    beacon_sender_status *shared;
    /*
     * The addresses and the lock around every send. When a child exits,
     * mod_watchdog's threads are not joined (they live in pconf), so the
     * exit's state=leaving could cross a regular announcement that would
     * re-enable the member: the lock and the stopped flag make leaving the
     * last one. Nothing under the lock allocates or resolves, so it is
     * always released promptly (see send_leaving).
     */
    beacon_fanout_guard guard;
    beacon_sequence_t sequence;
    beacon_headroom *headroom; /* ProxyBeaconLBFactor auto; else NULL */
    apr_time_t next_due;       /* the next regular announcement */
    beacon_rate_limit error_log;
    volatile int owner;        /* this child holds the sender's singleton */
    int left;                  /* it said state=leaving */
    int sockets[2];            /* IPv4, IPv6; opened at the first send */
    beacon_sender *next;
};

/* What one announcement did, reported once the lock is released. */
typedef struct {
    beacon_sender *snd;
    int len;                   /* of the datagram; -1: could not format */
    unsigned reached, failed, unresolved;
    apr_status_t error;        /* the first failure's */
    char failed_at[BEACON_SOCKADDR_TEXT_MAX]; /* where it failed */
    const char *failed_name;                   /* for which name */
} send_outcome;

static beacon_sender *senders;
static int sender_count;
static volatile int child_ready;    /* this child has run child_init */
static int retiring_alone;          /* siblings serve on: no departure */
static apr_time_t left_at;          /* the first state=leaving went out */
static pthread_t repeater;          /* repeats it while requests drain */
static int repeater_running;        /* until joined */

/*
 * beacon_fanout_send's delivery: one socket per address family, reused,
 * no pool: send_leaving may run in a signal handler, where nothing may
 * allocate.
 */
static apr_status_t send_one(void *ctx, unsigned name,
                             const beacon_sockaddr_t *to, const char *buf,
                             apr_size_t len)
{
    send_outcome *out = ctx;
    int *fd = &out->snd->sockets[to->u.sa.sa_family == AF_INET6];
    apr_status_t rv = APR_SUCCESS;

    if (*fd < 0) {
        *fd = socket(to->u.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    }
    if (*fd < 0 || sendto(*fd, buf, len, 0, &to->u.sa, to->len) < 0) {
        rv = APR_FROM_OS_ERROR(errno);
    }
    if (rv != APR_SUCCESS && out->failed++ == 0) {
        out->error = rv;
        out->failed_name = out->snd->guard.fanout->names[name].spec;
        beacon_sockaddr_text(to, out->failed_at, sizeof(out->failed_at));
    }
    return rv;
}

/* Signs the next announcement into buf; returns its length, or -1
 * (logged by the caller) when the host name does not fit. */
static int sign_next(beacon_sender *snd, const char *state, apr_time_t now,
                     char *buf, apr_size_t size)
{
    beacon_announcement_t a;
    char factor[BEACON_LBFACTOR_TEXT_MAX];

    memset(&a, 0, sizeof(a)); /* a field this sender does not know: absent */
    a.url = snd->conf->advertise;
    a.svc = snd->conf->service;
    /* in the leaving one too: the receiver ignores them there, and one
     * announcement like every other is one less case */
    a.route = snd->conf->route.value;
    a.lbfactor = snd->headroom ? beacon_lbfactor_format(factor,
                                                        snd->headroom->factor)
                               : snd->conf->lbfactor.value;
    a.ctx = snd->conf->ctx.value;
    a.host = snd->hostname;
    a.pid = getpid();
    a.state = state;
    beacon_sequence_stamp(&snd->sequence, now, &a);
    return beacon_format(buf, size, &a, &snd->conf->keys[0]);
}

/* Names with no address to send to: their lookups failed. */
static unsigned count_unresolved(const beacon_fanout_t *f)
{
    unsigned i, n = 0;

    for (i = 0; i < f->nnames; i++) {
        n += f->names[i].state == BEACON_NAME_FAILED;
    }
    return n;
}

/* Signs one announcement and sends it to every address; the caller holds
 * the lock. */
static void announce_locked(beacon_sender *snd, const char *state, char *buf,
                            send_outcome *out)
{
    apr_time_t now = apr_time_now();

    memset(out, 0, sizeof(*out));
    out->snd = snd;
    out->len = sign_next(snd, state, now, buf, BEACON_MAX_DATAGRAM + 1);
    if (out->len < 0) {
        return;
    }
    out->reached = beacon_fanout_send(snd->guard.fanout, buf,
                                      (apr_size_t)out->len, send_one, out);
    if (snd->headroom) {
        snd->shared->lbfactor = snd->headroom->factor;
    }
    out->unresolved = count_unresolved(snd->guard.fanout);
    apr_atomic_add32(&snd->shared->sent, out->reached);
    apr_atomic_add32(&snd->shared->errors, out->failed + out->unresolved);
    if (out->reached) {
        snd->shared->last_sent = now;
    }
}

/* The first name that has no address, for the log. */
static const beacon_fanout_name_t *first_unresolved(const beacon_fanout_t *f)
{
    unsigned i;

    for (i = 0; i < f->nnames; i++) {
        if (f->names[i].state == BEACON_NAME_FAILED) {
            return &f->names[i];
        }
    }
    return NULL;
}

/* After the lock is released: a failure costs a log line, no more. (The
 * name without an address is read without the lock, for the log only: a
 * lookup that changes it meanwhile makes the line one lookup old.) */
static void report(const send_outcome *out, const char *buf)
{
    beacon_sender *snd = out->snd;
    const beacon_fanout_name_t *lost;
    unsigned suppressed;

    if (out->len < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, snd->s, BCNLOGNO(00100)
                     "cannot format an announcement (host name '%s' too "
                     "long or not printable?)", snd->hostname);
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_TRACE2, 0, snd->s, "sent %.*s to %u "
                 "address%s", out->len, buf, out->reached,
                 out->reached == 1 ? "" : "es");
    if ((out->failed == 0 && out->unresolved == 0) ||
        !beacon_decide_rate_allows(&snd->error_log, apr_time_now(),
                                 SEND_ERROR_LOG_EVERY, &suppressed)) {
        return;
    }
    if (out->failed) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, out->error, snd->s,
                     BCNLOGNO(00101) "cannot send beacon to %s (%s; %u of "
                     "%u addresses failed; next report in 60 s at most)",
                     out->failed_at, out->failed_name, out->failed,
                     out->failed + out->reached);
    }
    lost = first_unresolved(snd->guard.fanout);
    if (lost) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, lost->last_error, snd->s,
                     BCNLOGNO(00112) "cannot send beacon to %s: it does not "
                     "resolve (%u name%s without an address; next report in "
                     "60 s at most)", lost->spec, out->unresolved,
                     out->unresolved == 1 ? "" : "s");
    }
}

/* A regular announcement, unless the child has said leaving. */
static void announce(beacon_sender *snd)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    send_outcome out;

    apr_thread_mutex_lock(snd->guard.lock);
    if (snd->guard.stopped) {
        apr_thread_mutex_unlock(snd->guard.lock);
        return;
    }
    snd->guard.found_new = 0;
    announce_locked(snd, NULL, buf, &out);
    apr_thread_mutex_unlock(snd->guard.lock);
    report(&out, buf);
}

/* A lookup added an address: that proxy hears now, not an interval later. */
static int found_new(beacon_sender *snd)
{
    int found;

    apr_thread_mutex_lock(snd->guard.lock);
    found = snd->guard.found_new;
    apr_thread_mutex_unlock(snd->guard.lock);
    return found;
}

/* Called every TICK; announces when due. */
static apr_status_t sender_callback(int state, void *data, apr_pool_t *p)
{
    beacon_sender *snd = data;
    apr_interval_time_t interval = snd->conf->interval.value;
    apr_time_t now = apr_time_now();

    (void)p;
    if (snd->headroom && state != AP_WATCHDOG_STATE_STOPPING) {
        beacon_headroom_sample(snd->headroom, now); /* before the first */
    }
    switch (state) {
    case AP_WATCHDOG_STATE_STARTING:
        snd->owner = 1;
        snd->shared->owner_pid = getpid();
        beacon_util_block_stop_signals(); /* the lookup threads inherit it */
        beacon_lookup_start_all(&snd->guard);
        /* the first announcement goes out now (to the addresses given as
         * such; the names' follow as their lookups find them) */
        announce(snd);
        snd->next_due = now + (interval < CATCH_UP ? interval : CATCH_UP);
        break;
    case AP_WATCHDOG_STATE_RUNNING:
        if (now >= snd->next_due || found_new(snd)) {
            announce(snd);
            if (now >= snd->next_due) {
                snd->next_due = now + interval;
            }
        }
        break;
    }
    return APR_SUCCESS;
}

/*
 * A restart, graceful or not, is no departure: the parent keeps the
 * listeners open, and the next generation's owner announces within
 * milliseconds. Saying leaving then would take every backend of a fleet
 * out of rotation at once when log rotation restarts them all at the same
 * minute.
 */
static int server_restarting(void)
{
    return beacon_util_generation_replaced();
}

/* A sibling of this child's generation is alive and still accepts. */
static int a_sibling_serves(int my_generation, int limit)
{
    pid_t me = getpid();
    int i;

    for (i = 0; i < limit; i++) {
        process_score *ps = ap_get_scoreboard_process(i);

        if (ps->pid != 0 && ps->pid != me && ps->generation == my_generation &&
            !ps->quiescing && (kill(ps->pid, 0) == 0 || errno == EPERM)) {
            return 1;
        }
    }
    return 0;
}

/*
 * event and worker stop one child gracefully for idle reaping and
 * MaxConnectionsPerChild, and every child for a graceful stop: the child
 * cannot tell which. But on a stop every sibling closes its listeners
 * (and says so in the scoreboard, "quiescing") within milliseconds of
 * this one; a retired child's siblings keep accepting. Saying leaving
 * then would take a serving backend out of rotation until another child
 * takes the sender's singleton, which mod_watchdog delays by 10 s.
 */
static int only_this_child_retires(void)
{
    apr_time_t until = apr_time_now() + SIBLINGS_SETTLE;
    int my_generation, limit;

    if (ap_scoreboard_image == NULL ||
        ap_mpm_query(AP_MPMQ_GENERATION, &my_generation) != APR_SUCCESS ||
        ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &limit) != APR_SUCCESS) {
        return 0;
    }
    while (a_sibling_serves(my_generation, limit)) {
        if (apr_time_now() >= until) {
            return 1;
        }
        apr_sleep(apr_time_from_msec(10));
    }
    return 0;
}

static int owns_a_sender(void)
{
    beacon_sender *snd;

    for (snd = senders; snd; snd = snd->next) {
        if (snd->owner) {
            return 1;
        }
    }
    return 0;
}

/* One more state=leaving from every sender that said it. */
static void say_leaving_again(void)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    beacon_sender *snd;

    for (snd = senders; snd; snd = snd->next) {
        send_outcome out;

        if (!snd->left) {
            continue;
        }
        apr_thread_mutex_lock(snd->guard.lock);
        announce_locked(snd, BEACON_STATE_LEAVING, buf, &out);
        apr_thread_mutex_unlock(snd->guard.lock);
        report(&out, buf);
    }
}

/* The repeats of state=leaving still due, each at its time; returns
 * within a second of the first. Nothing here allocates. */
static void repeat_leaving(void)
{
    unsigned i;

    for (i = 0; i < BEACON_LEAVING_REPEATS; i++) {
        apr_sleep(beacon_leaving_repeat_wait(left_at, i, apr_time_now()));
        say_leaving_again();
    }
}

static void *repeater_main(void *arg)
{
    (void)arg;
    beacon_util_block_stop_signals();
    repeat_leaving();
    return NULL;
}

/*
 * After the first state=leaving: the repeats. A graceful stop of event or
 * worker (from a thread, never a signal handler) hands them to a thread
 * of their own, so that they go out while requests drain, and the exit
 * waits for it only for what is left of the second. Anywhere else (a
 * stop that is not graceful, prefork's signal handlers) the child sends
 * them itself before it exits, at most a second later.
 */
static void schedule_repeats(int in_thread)
{
    left_at = apr_time_now();
    if (in_thread && pthread_create(&repeater, NULL, repeater_main, NULL) == 0) {
        repeater_running = 1;
        return;
    }
    repeat_leaving();
}

static void finish_repeats(void)
{
    if (repeater_running) {
        pthread_join(repeater, NULL);
        repeater_running = 0;
    }
}

/*
 * Runs once the child is told to stop (stop, restart, idle reaping), and
 * again, doing nothing, when it exits. The MPMs may run it in a signal
 * handler (prefork always can; event and worker before child_init), so it
 * allocates nothing and resolves nothing: the leaving datagram goes to
 * every address of the last good sets. The lock's holder never waits on
 * anything this thread could hold (announce and the lookups take it
 * around signing, sendto and copying only, and their threads block the
 * stop signals). The repeats follow (schedule_repeats), in a thread of
 * their own only when repeat_in_thread says this is one.
 */
static void send_leaving(int repeat_in_thread)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    beacon_sender *snd;
    int leaving, said_any = 0;

    if (!child_ready) {
        /* told to stop before child_init: no sender ever ran here */
        return;
    }
    leaving = !retiring_alone && !server_restarting();
    for (snd = senders; snd; snd = snd->next) {
        send_outcome out;
        int said = 0;

        apr_thread_mutex_lock(snd->guard.lock);
        snd->guard.stopped = 1;
        if (snd->owner && leaving) {
            announce_locked(snd, BEACON_STATE_LEAVING, buf, &out);
            said = snd->left = 1;
        }
        snd->owner = 0;
        apr_thread_mutex_unlock(snd->guard.lock);
        if (said) {
            report(&out, buf);
            said_any = 1;
        }
    }
    if (said_any) {
        schedule_repeats(repeat_in_thread);
    }
}

/* The child's exit: the last chance to say leaving, and the end of the
 * repeats. */
static apr_status_t send_leaving_at_exit(void *data)
{
    (void)data;
    send_leaving(0);
    finish_repeats();
    return APR_SUCCESS;
}

/* Every name of the server's ProxyBeaconAddress, in shared memory, so
 * that the status pages of every child see the owner's addresses. */
static beacon_fanout_t *make_fanout(apr_pool_t *pconf, server_rec *s,
                                    const apr_array_header_t *targets)
{
    unsigned n = (unsigned)targets->nelts, i;
    beacon_fanout_t *f = beacon_shm_create(pconf, s, beacon_fanout_size(n));

    if (f == NULL) {
        return NULL;
    }
    beacon_fanout_init(f, n);
    for (i = 0; i < n; i++) {
        const beacon_dest *d = &APR_ARRAY_IDX(targets, i, beacon_dest);

        beacon_fanout_name(f, i, d->spec, d->host, d->port);
    }
    return f;
}

#define KEPT_TS_KEY "mod_proxy_beacon last ts"

/*
 * The last ts any sender of this httpd issued, in shared memory the
 * parent makes once, in the process pool: every child of every
 * generation stamps from it, so that ts keeps rising across graceful and
 * plain restarts and owner changes even when the clock stepped back (a
 * proxy would drop the new owner's announcements as replays for the
 * length of the step). A stop loses it with the parent.
 */
static volatile apr_uint64_t *kept_last_ts(server_rec *s)
{
    apr_pool_t *pool = s->process->pool;
    void *ts = NULL;

    apr_pool_userdata_get(&ts, KEPT_TS_KEY, pool);
    if (ts == NULL && (ts = beacon_shm_create(pool, s, sizeof(apr_uint64_t)))) {
        apr_pool_userdata_set(ts, KEPT_TS_KEY, apr_pool_cleanup_null, pool);
    }
    return ts;
}

/* The sender's state and its watchdog singleton. */
static apr_status_t start_sender(apr_pool_t *pconf, beacon_sender *snd,
                                 int index)
{
    apr_status_t rv;

    snd->shared = beacon_shm_create(pconf, snd->s, sizeof(*snd->shared));
    snd->guard.fanout = make_fanout(pconf, snd->s, snd->conf->targets);
    snd->sequence.shared_ts = kept_last_ts(snd->s);
    if (snd->shared == NULL || snd->guard.fanout == NULL ||
        snd->sequence.shared_ts == NULL) {
        return APR_EGENERAL;
    }
    if (beacon_config_lbfactor_auto(snd->conf)) {
        snd->headroom = apr_pcalloc(pconf, sizeof(*snd->headroom));
    }
    snd->guard.s = snd->s;
    snd->guard.interval = snd->conf->interval.value;
    snd->sockets[0] = snd->sockets[1] = -1;
    rv = apr_thread_mutex_create(&snd->guard.lock, APR_THREAD_MUTEX_DEFAULT,
                                 pconf);
    if (rv == APR_SUCCESS) {
        rv = beacon_util_watchdog_start(pconf,
                                        apr_psprintf(pconf, "_proxy_beacon_sender_%d",
                                                     index),
                                   TICK, snd, sender_callback);
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, snd->s, BCNLOGNO(00103)
                     "mod_watchdog cannot run the beacon sender with this "
                     "MPM: this backend will NOT announce itself (%s)",
                     snd->conf->where);
    }
    return APR_SUCCESS;
}

apr_status_t beacon_sender_post_config(apr_pool_t *pconf, server_rec *main_s)
{
    beacon_sender **tail = &senders;
    char hostname[APRMAXHOSTLEN + 1] = "";
    server_rec *s;

    senders = NULL;
    sender_count = 0;
    apr_gethostname(hostname, sizeof(hostname), pconf);
    for (s = main_s; s; s = s->next) {
        beacon_server_conf *conf = beacon_config_role(s, main_s);
        beacon_sender *snd;

        if (conf == NULL || conf->targets == NULL) {
            continue;
        }
        snd = apr_pcalloc(pconf, sizeof(*snd));
        snd->s = s;
        snd->conf = conf;
        snd->hostname = hostname[0] ? apr_pstrdup(pconf, hostname) : NULL;
        if (conf->advertise == NULL) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, BCNLOGNO(00104)
                         "ProxyBeaconAdvertise is not set (%s): this server "
                         "sends heartbeats only and joins no balancer",
                         conf->where);
        }
        if (start_sender(pconf, snd, sender_count) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
        *tail = snd;
        tail = &snd->next;
        sender_count++;
    }
    return APR_SUCCESS;
}

void beacon_sender_child_init(apr_pool_t *pchild)
{
    if (senders) {
        apr_pool_cleanup_register(pchild, NULL, send_leaving_at_exit,
                                  apr_pool_cleanup_null);
    }
    child_ready = 1;
}

/*
 * The MPM tells a child to stop before the child closes its listeners and
 * long before it exits: a graceful stop waits for every request in flight.
 * Saying state=leaving only at exit left the proxy sending new requests to
 * a backend whose port already refused them; saying it now takes the
 * member out of rotation while the backend still accepts. A child retired
 * while its siblings serve on says nothing (only_this_child_retires).
 */
void beacon_sender_child_stopping(apr_pool_t *pchild, int graceful)
{
    (void)pchild;
    if (!senders) {
        return;
    }
    /* graceful: event and worker, from a thread, never a signal handler;
     * before child_init no sender is owned and send_leaving returns at
     * once */
    if (graceful && owns_a_sender() && !server_restarting()) {
        retiring_alone = only_this_child_retires();
        if (retiring_alone) {
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, senders->s, BCNLOGNO(00106)
                         "this child retires while its siblings serve: no "
                         "state=leaving, another child takes the "
                         "announcements over");
        }
    }
    send_leaving(graceful);
}

int beacon_sender_views(apr_pool_t *p, const server_rec *only,
                        beacon_sender_view **views)
{
    beacon_sender *snd;
    int n = 0;

    *views = apr_pcalloc(p, sizeof(**views) * (sender_count + 1));
    for (snd = senders; snd; snd = snd->next) {
        if (!beacon_util_view_shows(only, snd->s)) {
            continue;
        }
        (*views)[n].s = snd->s;
        (*views)[n].conf = snd->conf;
        (*views)[n].shared = snd->shared;
        (*views)[n].fanout = apr_palloc(p, beacon_fanout_size(
                                              snd->guard.fanout->nnames));
        beacon_fanout_read(snd->guard.fanout, (*views)[n].fanout);
        n++;
    }
    return n;
}
