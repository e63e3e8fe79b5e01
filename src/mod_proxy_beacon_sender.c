/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The sender: a backend with ProxyBeaconAddress announces its own origin to
 * every proxy named, from mod_watchdog singletons, once at start-up and
 * then every ProxyBeaconInterval. It needs no proxy module at all.
 *
 * Each proxy named gets a lane: a watchdog instance, so a thread, of its
 * own, with its own seq and ts. A name that does not resolve, or resolves
 * slowly, then delays only its own proxy's announcements, never another
 * proxy's, another server's or the receiver's.
 */

#include "mod_proxy_beacon_sender.h"

#include <apr_atomic.h>
#include <apr_network_io.h>
#include <apr_thread_mutex.h>
#include <apr_strings.h>
#include <ap_mpm.h>
#include <scoreboard.h>
#include <signal.h>
#include <sys/socket.h>
#include <errno.h>
#include <unistd.h>

#ifndef SOCK_CLOEXEC
#define SOCK_CLOEXEC 0
#endif

#define SEND_ERROR_LOG_EVERY apr_time_from_sec(60) /* per lane */
#define TICK apr_time_from_msec(100)      /* mod_watchdog's own slice */
/* A second announcement this soon after start, so that one lost datagram
 * does not keep a new backend out for a whole interval. */
#define CATCH_UP apr_time_from_sec(1)
/* How long a child told to stop gracefully waits to see whether its
 * siblings were told too: they close their listeners within milliseconds. */
#define SIBLINGS_SETTLE apr_time_from_msec(300)

typedef struct beacon_sender beacon_sender;

/* One proxy of one sending server. */
typedef struct beacon_lane beacon_lane;
struct beacon_lane {
    beacon_sender *snd;
    const beacon_dest *dest;   /* the proxy, as configured */
    beacon_sequence_t sequence;
    apr_time_t next_due;       /* the next regular announcement */
    beacon_rate_limit error_log;
    volatile int owner;        /* this child holds the lane's singleton */
    /*
     * Taken around the signing and sending of every announcement. When a
     * child exits, mod_watchdog's threads are not joined (they live in
     * pconf), so the exit's state=leaving could cross a regular
     * announcement that would re-enable the member: the lock and the flag
     * make leaving the last one. Nothing under it allocates or resolves,
     * so it is always released promptly (see send_leaving).
     */
    apr_thread_mutex_t *lock;
    int stopped;
    /* where the last announcement went: the leaving one goes there too */
    struct sockaddr_storage last_addr;
    socklen_t last_addr_len;   /* 0: nothing sent yet */
    beacon_lane *next;         /* all lanes, of every sender */
};

struct beacon_sender {
    server_rec *s;
    beacon_server_conf *conf;
    const char *hostname;
    beacon_sender_status *shared;
    beacon_sender *next;
};

static beacon_sender *senders;
static beacon_lane *lanes;
static int sender_count;
static volatile int child_ready;    /* this child has run child_init */
static int retiring_alone;          /* siblings serve on: no departure */

static void count_send(beacon_sender *snd, apr_status_t rv, apr_time_t now)
{
    if (rv == APR_SUCCESS) {
        apr_atomic_inc32(&snd->shared->sent);
        snd->shared->last_sent = now;
    }
    else {
        apr_atomic_inc32(&snd->shared->errors);
    }
}

/* System calls only, no pool: send_leaving may run in a signal handler,
 * where nothing may allocate. */
static apr_status_t send_to(const struct sockaddr *addr, socklen_t addr_len,
                            const char *buf, int len)
{
    apr_status_t rv = APR_SUCCESS;
    int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || sendto(fd, buf, (size_t)len, 0, addr, addr_len) < 0) {
        rv = APR_FROM_OS_ERROR(errno);
    }
    if (fd >= 0) {
        close(fd);
    }
    return rv;
}

/* Signs the lane's next announcement into buf; returns its length, or -1
 * (logged by the caller) when the host name does not fit. */
static int sign_next(beacon_lane *lane, const char *state, apr_time_t now,
                     char *buf, apr_size_t size)
{
    beacon_sender *snd = lane->snd;
    beacon_announcement_t a;

    memset(&a, 0, sizeof(a)); /* a field this sender does not know: absent */
    a.url = snd->conf->advertise;
    a.svc = snd->conf->service;
    /* in the leaving one too: the receiver ignores them there, and one
     * announcement like every other is one less case */
    a.route = snd->conf->route.value;
    a.lbfactor = snd->conf->lbfactor.value;
    a.host = snd->hostname;
    a.pid = getpid();
    a.state = state;
    beacon_sequence_stamp(&lane->sequence, now, &a);
    return beacon_format(buf, size, &a, &snd->conf->keys[0]);
}

/* Signs and sends one announcement to addr; the caller holds the lock. */
static apr_status_t announce_to(beacon_lane *lane, const char *state,
                                const struct sockaddr *addr,
                                socklen_t addr_len, char *buf, int *len)
{
    apr_time_t now = apr_time_now();
    apr_status_t rv;

    *len = sign_next(lane, state, now, buf, BEACON_MAX_DATAGRAM + 1);
    if (*len < 0) {
        return APR_EINVAL;
    }
    rv = send_to(addr, addr_len, buf, *len);
    count_send(lane->snd, rv, now);
    return rv;
}

/* After the lock is released: a failure costs a log line, no more. */
static void report(beacon_lane *lane, apr_status_t rv, const char *buf,
                   int len)
{
    beacon_sender *snd = lane->snd;
    unsigned suppressed;

    if (len < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, snd->s, BCNLOGNO(00100)
                     "cannot format an announcement (host name '%s' too "
                     "long or not printable?)", snd->hostname);
        return;
    }
    if (rv == APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_TRACE2, 0, snd->s, "sent %.*s to %s",
                     len, buf, lane->dest->spec);
        return;
    }
    if (beacon_rate_allows(&lane->error_log, apr_time_now(),
                           SEND_ERROR_LOG_EVERY, &suppressed)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, snd->s, BCNLOGNO(00101)
                     "cannot send beacon to %s (next report in 60 s at "
                     "most)", lane->dest->spec);
    }
}

/*
 * A regular announcement. The name is resolved before the lock is taken,
 * on every announcement, so a proxy that moves is followed; a name that
 * does not resolve costs this lane's thread only.
 */
static void announce(beacon_lane *lane, apr_pool_t *p)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    apr_sockaddr_t *sa;
    apr_status_t rv;
    int len = 0;

    rv = apr_sockaddr_info_get(&sa, lane->dest->host, APR_UNSPEC,
                               lane->dest->port, 0, p);
    if (rv != APR_SUCCESS) {
        count_send(lane->snd, rv, apr_time_now());
        report(lane, rv, buf, len);
        return;
    }
    apr_thread_mutex_lock(lane->lock);
    if (lane->stopped) {
        apr_thread_mutex_unlock(lane->lock);
        return;
    }
    rv = announce_to(lane, NULL, (const struct sockaddr *)&sa->sa, sa->salen,
                     buf, &len);
    if (rv == APR_SUCCESS) {
        memcpy(&lane->last_addr, &sa->sa, (size_t)sa->salen);
        lane->last_addr_len = sa->salen;
    }
    apr_thread_mutex_unlock(lane->lock);
    report(lane, rv, buf, len);
}

/* Called every TICK; announces when due. */
static apr_status_t lane_callback(int state, void *data, apr_pool_t *p)
{
    beacon_lane *lane = data;
    apr_interval_time_t interval = lane->snd->conf->interval.value;
    apr_time_t now = apr_time_now();

    switch (state) {
    case AP_WATCHDOG_STATE_STARTING:
        lane->owner = 1;
        lane->snd->shared->owner_pid = getpid();
        beacon_block_stop_signals();
        /* the first announcement goes out now, not one interval later */
        announce(lane, p);
        lane->next_due = now + (interval < CATCH_UP ? interval : CATCH_UP);
        break;
    case AP_WATCHDOG_STATE_RUNNING:
        if (now >= lane->next_due) {
            announce(lane, p);
            lane->next_due = now + interval;
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
 * minute. The parent moves running_generation before it tells the
 * children to stop, so a child that sees it moved is being replaced.
 */
static int server_restarting(void)
{
    int my_generation;

    return ap_scoreboard_image != NULL &&
           ap_mpm_query(AP_MPMQ_GENERATION, &my_generation) == APR_SUCCESS &&
           ap_scoreboard_image->global->running_generation != my_generation;
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

static int owns_a_lane(void)
{
    beacon_lane *lane;

    for (lane = lanes; lane; lane = lane->next) {
        if (lane->owner) {
            return 1;
        }
    }
    return 0;
}

/*
 * Runs once the child is told to stop (stop, restart, idle reaping), and
 * again, doing nothing, when it exits. The MPMs may run it in a signal
 * handler (prefork always can; event and worker before child_init), so it
 * allocates nothing and resolves nothing: the leaving datagram goes to
 * the address the last announcement went to. The lock's holder never
 * waits on anything this thread could hold (announce takes it around
 * signing and sendto only, and the lanes' threads block the stop signals).
 */
static apr_status_t send_leaving(void *data)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    beacon_lane *lane;
    int leaving;

    (void)data;
    if (!child_ready) {
        /* told to stop before child_init: no lane ever ran in this child */
        return APR_SUCCESS;
    }
    leaving = !retiring_alone && !server_restarting();
    for (lane = lanes; lane; lane = lane->next) {
        apr_status_t rv = APR_SUCCESS;
        int len = -1;

        apr_thread_mutex_lock(lane->lock);
        lane->stopped = 1;
        if (lane->owner && leaving && lane->last_addr_len > 0) {
            rv = announce_to(lane, BEACON_STATE_LEAVING,
                             (const struct sockaddr *)&lane->last_addr,
                             lane->last_addr_len, buf, &len);
        }
        lane->owner = 0;
        apr_thread_mutex_unlock(lane->lock);
        if (len >= 0 || rv != APR_SUCCESS) {
            report(lane, rv, buf, len);
        }
    }
    return APR_SUCCESS;
}

static apr_status_t start_lane(apr_pool_t *pconf, beacon_lane *lane, int index)
{
    apr_status_t rv;

    rv = apr_thread_mutex_create(&lane->lock, APR_THREAD_MUTEX_DEFAULT, pconf);
    if (rv == APR_SUCCESS) {
        rv = beacon_watchdog_start(pconf,
                                   apr_psprintf(pconf, "_proxy_beacon_sender_%d",
                                                index),
                                   TICK, lane, lane_callback);
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, lane->snd->s, BCNLOGNO(00103)
                     "mod_watchdog cannot run the beacon sender with this "
                     "MPM: this backend will NOT announce itself to %s",
                     lane->dest->spec);
    }
    return APR_SUCCESS;
}

/* A lane per proxy the sender names, each with its own thread. */
static apr_status_t add_lanes(apr_pool_t *pconf, beacon_sender *snd,
                              int *index)
{
    int i;

    for (i = 0; i < snd->conf->targets->nelts; i++) {
        beacon_lane *lane = apr_pcalloc(pconf, sizeof(*lane));

        lane->snd = snd;
        lane->dest = &APR_ARRAY_IDX(snd->conf->targets, i, beacon_dest);
        if (start_lane(pconf, lane, (*index)++) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
        lane->next = lanes;
        lanes = lane;
    }
    return APR_SUCCESS;
}

apr_status_t beacon_senders_post_config(apr_pool_t *pconf, server_rec *main_s)
{
    beacon_sender **tail = &senders;
    char hostname[APRMAXHOSTLEN + 1] = "";
    server_rec *s;
    int index = 0;

    senders = NULL;
    lanes = NULL;
    sender_count = 0;
    apr_gethostname(hostname, sizeof(hostname), pconf);
    for (s = main_s; s; s = s->next) {
        beacon_server_conf *conf = beacon_role_conf(s, main_s);
        beacon_sender *snd;

        if (conf == NULL || conf->targets == NULL) {
            continue;
        }
        snd = apr_pcalloc(pconf, sizeof(*snd));
        snd->shared = beacon_shm_create(pconf, s, sizeof(*snd->shared));
        if (snd->shared == NULL) {
            return APR_EGENERAL;
        }
        snd->s = s;
        snd->conf = conf;
        snd->hostname = hostname[0] ? apr_pstrdup(pconf, hostname) : NULL;
        if (conf->advertise == NULL) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, BCNLOGNO(00104)
                         "ProxyBeaconAdvertise is not set (%s): this server "
                         "sends heartbeats only and joins no balancer",
                         conf->where);
        }
        if (add_lanes(pconf, snd, &index) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
        *tail = snd;
        tail = &snd->next;
        sender_count++;
    }
    return APR_SUCCESS;
}

void beacon_senders_child_init(apr_pool_t *pchild)
{
    if (lanes) {
        apr_pool_cleanup_register(pchild, NULL, send_leaving,
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
void beacon_senders_child_stopping(apr_pool_t *pchild, int graceful)
{
    (void)pchild;
    if (!lanes) {
        return;
    }
    /* graceful: event and worker, from a thread, never a signal handler;
     * before child_init no lane is owned and send_leaving returns at once */
    if (graceful && owns_a_lane() && !server_restarting()) {
        retiring_alone = only_this_child_retires();
        if (retiring_alone) {
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, senders->s, BCNLOGNO(00106)
                         "this child retires while its siblings serve: no "
                         "state=leaving, another child takes the "
                         "announcements over");
        }
    }
    send_leaving(NULL);
}

int beacon_sender_views(apr_pool_t *p, const server_rec *only,
                        beacon_sender_view **views)
{
    beacon_sender *snd;
    int n = 0;

    *views = apr_pcalloc(p, sizeof(**views) * (sender_count + 1));
    for (snd = senders; snd; snd = snd->next) {
        if (only && snd->s != only) {
            continue;
        }
        (*views)[n].s = snd->s;
        (*views)[n].conf = snd->conf;
        (*views)[n].shared = snd->shared;
        n++;
    }
    return n;
}
