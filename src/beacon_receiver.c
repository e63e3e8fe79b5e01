/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The receiver: one mod_watchdog singleton thread serves every server that
 * has ProxyBeaconListen. It waits on the sockets itself (bounded by the next
 * lease deadline and a short cap, so stop requests are seen within 100 ms)
 * rather than once per watchdog tick, so an announcement becomes a member
 * within milliseconds.
 *
 * Ownership moves between children (crash, idle reaping, restart): a new
 * owner adopts the members the registry marks as beacon's.
 */

#include "mod_proxy_beacon.h"

#include <apr_atomic.h>
#include <apr_poll.h>
#include <apr_shm.h>
#include <apr_portable.h>
#include <apr_strings.h>
#include <ap_listen.h>
#include <ap_mpm.h>
#include <mod_watchdog.h>

#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#define WATCHDOG_NAME "_proxy_beacon_"
#define WAIT_CAP apr_time_from_msec(100)
#define DRAIN_LIMIT 256                   /* datagrams per socket per wake */
#define RECV_BATCH 64                     /* datagrams per recvmmsg() */
#define RECV_BUFFER (4 * 1024 * 1024)     /* SO_RCVBUF asked for, bytes */
#define PUBLISH_EVERY apr_time_from_msec(100) /* renewals, at most */
#define DIRTY_RENEWED 1   /* only last-seen times changed */
#define DIRTY_CHANGED 2   /* a record came, went or changed state */
#define LOG_EVERY apr_time_from_sec(10)   /* per drop reason and receiver */
#define BIND_FAST_RETRY apr_time_from_sec(5) /* after taking ownership */
#define BIND_BACKOFF_MIN apr_time_from_sec(30)
#define BIND_BACKOFF_MAX apr_time_from_sec(600)
/* mod_watchdog's singleton: a new owner starts about 10 s after the old one
 * died, and senders announce every 5 s by default. */
#define HANDOFF_GAP apr_time_from_sec(15)

/* One recvmmsg() worth of datagrams, allocated once per owner: a flood costs
 * one system call per 64 datagrams and no allocation at all. */
typedef struct {
    struct mmsghdr msg[RECV_BATCH];
    struct iovec iov[RECV_BATCH];
    struct sockaddr_storage peer[RECV_BATCH];
    char buf[RECV_BATCH][BEACON_MAX_DATAGRAM + 1]; /* +1 exposes oversize */
} recv_batch;

/* At most one log line per LOG_EVERY for a thing a peer can repeat. */
typedef struct {
    apr_time_t last;
    unsigned suppressed;
} rate_limit;

struct beacon_receiver {
    server_rec *s;
    beacon_server_conf *conf;
    const char *bind_host;     /* NULL: all addresses */
    apr_port_t bind_port;
    const char *label;         /* "addr:port" for log lines */
    beacon_receiver *next;

    /* in every child, from child_init on */
    beacon_target *target;     /* NULL in log-only mode */

    /* in the watchdog owner only */
    beacon_table_t *table;
    apr_pool_t *sock_pool;
    apr_socket_t *sock;
    recv_batch *batch;
    apr_time_t next_bind;
    apr_interval_time_t bind_backoff;
    rate_limit drop_log[BEACON_REASON_COUNT];
    rate_limit no_slot_log;
    int buffer_reported;
    beacon_status_record *peer;  /* host/pid/seq by table index */
    int dirty;                   /* DIRTY_* since the last publish */
    apr_time_t published;        /* when the status copy was made */

    /* shared with every child */
    beacon_receiver_status *shared;
};

static beacon_receiver *receivers;
static unsigned receiver_count;
/*
 * The receiver's memory comes from the watchdog thread's own pool, never
 * from pchild: a child exits by destroying pchild and calling exit() while
 * the watchdog thread may still run (mod_watchdog's threads live in pconf
 * and are never joined in a child), so pchild memory can vanish under it.
 */
static apr_pool_t *owner_pool;      /* watchdog thread only */
static volatile int child_ready;    /* mod_proxy's child_init has run */
static volatile int stop_requested;
static volatile apr_uint32_t serving; /* inside serve_until_stopped() */
static int owner_started;
static apr_time_t owner_since;

/* ------------------------------------------------------------------ */
/* Configuration (post_config, parent)                                 */

/* ProxyBeaconListen's missing parts come from this server's address. */
static void inherit_address(beacon_receiver *r, apr_pool_t *p)
{
    const char *host = r->conf->listen_host;
    apr_port_t port = r->conf->listen_port;

    if (r->s->is_virtual && r->s->addrs) {
        if (host == NULL && r->s->addrs->host_addr) {
            apr_sockaddr_ip_get((char **)&host, r->s->addrs->host_addr);
        }
        if (port == 0) {
            port = r->s->addrs->host_port;
        }
    }
    else if (ap_listeners && ap_listeners->bind_addr) {
        if (host == NULL) {
            apr_sockaddr_ip_get((char **)&host, ap_listeners->bind_addr);
        }
        if (port == 0) {
            port = ap_listeners->bind_addr->port;
        }
    }
    if (host && (!strcmp(host, "0.0.0.0") || !strcmp(host, "::") ||
                 !strcmp(host, "*"))) {
        host = strchr(host, ':') ? "::" : NULL;
    }
    r->bind_host = host ? apr_pstrdup(p, host) : NULL;
    r->bind_port = port;
    r->label = apr_psprintf(p, "%s%s%s:%u", host && strchr(host, ':') ? "[" : "",
                            host ? host : "*",
                            host && strchr(host, ':') ? "]" : "",
                            (unsigned)port);
}

static apr_status_t register_watchdog(apr_pool_t *pconf, server_rec *s);

/* Anonymous, so only this generation's children (forked later) map it. */
static apr_status_t make_shared(beacon_receiver *r, apr_pool_t *pconf)
{
    apr_shm_t *shm;
    apr_status_t rv = apr_shm_create(&shm, sizeof(*r->shared), NULL, pconf);

    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, r->s, BCNLOGNO(00013)
                     "cannot create shared memory for the beacon status");
        return rv;
    }
    r->shared = apr_shm_baseaddr_get(shm);
    memset(r->shared, 0, sizeof(*r->shared));
    return APR_SUCCESS;
}

static const char *bal_name(const beacon_receiver *r)
{
    return r->conf->balancer_name;
}

/* The balancer and its registry; members the registry lists come back now,
 * before the first child of this generation serves a request. */
static apr_status_t attach_balancer(beacon_receiver *r, apr_pool_t *pconf)
{
    int restored;

    r->target = beacon_proxy_target(pconf, r->s, r->conf->balancer_name,
                                    r->bind_port);
    if (r->target == NULL) {
        return APR_EGENERAL;
    }
    restored = beacon_proxy_restore(r->target, pconf);
    if (restored > 0) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00011)
                     "restored %d member(s) of balancer://%s from the registry",
                     restored, bal_name(r));
    }
    return APR_SUCCESS;
}

apr_status_t beacon_receivers_post_config(apr_pool_t *pconf, apr_pool_t *ptemp,
                                          server_rec *main_s)
{
    beacon_receiver **tail = &receivers;
    server_rec *s;

    (void)ptemp;
    receivers = NULL;
    receiver_count = 0;
    for (s = main_s; s; s = s->next) {
        beacon_server_conf *conf = beacon_conf(s);
        beacon_receiver *r;

        if (!conf->listen_set) {
            continue;
        }
        r = apr_pcalloc(pconf, sizeof(*r));
        r->s = s;
        r->conf = conf;
        inherit_address(r, pconf);
        if (make_shared(r, pconf) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
        if (r->bind_port == 0) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00010)
                         "ProxyBeaconListen (%s): no port given and none to "
                         "inherit from this server", conf->where);
            return APR_EGENERAL;
        }
        if (conf->balancer_name && attach_balancer(r, pconf) != APR_SUCCESS) {
            return APR_EGENERAL;
        }
        if (conf->timeout > 0 && conf->timeout < HANDOFF_GAP) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, BCNLOGNO(00012)
                         "ProxyBeaconTimeout %" APR_TIME_T_FMT " ms is shorter "
                         "than a watchdog hand-off (about 10 s) plus the "
                         "senders' interval: announcements lost in a "
                         "hand-off can evict live members; 15 s or more is "
                         "safer", apr_time_as_msec(conf->timeout));
        }
        *tail = r;
        tail = &r->next;
        receiver_count++;
    }
    return receiver_count ? register_watchdog(pconf, main_s) : APR_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Logging helpers                                                     */

static const char *escaped_span(apr_pool_t *p, const beacon_span_t *span)
{
    if (span->ptr == NULL) {
        return "-";
    }
    return ap_escape_logitem(p, apr_pstrmemdup(p, span->ptr, span->len));
}

static const char *peer_label(apr_pool_t *p, const struct sockaddr_storage *peer,
                              socklen_t len)
{
    char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";

    getnameinfo((const struct sockaddr *)peer, len, host, sizeof(host), port,
                sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
    return apr_psprintf(p, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
}

/*
 * Whether a line may be logged now. If so, *suppressed says how many were
 * held back since the last one, and the count restarts.
 */
static int rate_allows(rate_limit *rl, apr_time_t now, unsigned *suppressed)
{
    if (rl->last != 0 && now - rl->last < LOG_EVERY) {
        rl->suppressed++;
        return 0;
    }
    *suppressed = rl->suppressed;
    rl->suppressed = 0;
    rl->last = now;
    return 1;
}

static const char *held_back(apr_pool_t *p, unsigned suppressed)
{
    return suppressed ? apr_psprintf(p, " (and %u more since the last report)",
                                     suppressed)
                      : "";
}

/* A peer controls how often drops happen: each reason is reported at most
 * once per LOG_EVERY per receiver, with the count it stands for. */
static void report_drop(beacon_receiver *r, beacon_reason_t reason,
                        const struct mmsghdr *msg, const beacon_event_t *ev,
                        apr_time_t now, apr_pool_t *p)
{
    const char *detail = "";
    unsigned suppressed;

    r->shared->dropped[reason]++;
    if (!rate_allows(&r->drop_log[reason], now, &suppressed)) {
        return;
    }
    if (reason == BEACON_DROP_UNACCEPTABLE_URL) {
        detail = apr_pstrcat(p, " '", escaped_span(p, &ev->dg.url), "'", NULL);
    }
    else if (reason == BEACON_DROP_NOT_MANAGED ||
             reason == BEACON_DROP_REPLAYED_TS ||
             reason == BEACON_DROP_TABLE_FULL) {
        detail = apr_pstrcat(p, " ", ev->url, NULL);
    }
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, r->s, BCNLOGNO(00020)
                 "%s: dropped datagram from %s: %s%s%s", r->label,
                 peer_label(p, msg->msg_hdr.msg_name, msg->msg_hdr.msg_namelen),
                 beacon_reason_name(reason), detail, held_back(p, suppressed));
}

/* ------------------------------------------------------------------ */
/* Acting on accepted announcements                                    */

static void add_member(beacon_receiver *r, beacon_record_t *rec,
                       apr_time_t now, apr_pool_t *p)
{
    beacon_add_result result = beacon_proxy_add(r->target, rec->url, owner_pool);

    switch (result) {
    case BEACON_ADD_DONE:
        beacon_table_added(rec);
        r->shared->events[BEACON_EV_ADDED]++;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00030)
                     "added backend %s to balancer://%s", rec->url,
                     bal_name(r));
        return;
    case BEACON_ADD_ADOPTED:
        beacon_table_added(rec);
        r->shared->events[BEACON_EV_READOPTED]++;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00031)
                     "re-adopted backend %s in balancer://%s", rec->url,
                     bal_name(r));
        return;
    case BEACON_ADD_NOT_OURS:
        beacon_table_not_managed(rec);
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, r->s, BCNLOGNO(00032)
                     "member not managed by beacon: %s is configured in "
                     "balancer://%s; left alone", rec->url, bal_name(r));
        return;
    default:
        break;
    }
    beacon_table_add_failed(rec, now);
    r->shared->events[BEACON_EV_ADD_FAILED]++;
    if (result == BEACON_ADD_NO_SLOT) {
        /* one line for the whole balancer, however many urls wait */
        unsigned suppressed;

        if (rate_allows(&r->no_slot_log, now, &suppressed)) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, r->s, BCNLOGNO(00037)
                         "cannot add backend %s to balancer://%s: no free "
                         "growth slot (raise growth= on the balancer, or "
                         "restart to reclaim slots); retrying in %"
                         APR_TIME_T_FMT " s%s", rec->url, bal_name(r),
                         apr_time_sec(rec->backoff),
                         held_back(p, suppressed));
        }
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, r->s, BCNLOGNO(00033)
                 "%s backend %s to balancer://%s; retrying in %" APR_TIME_T_FMT
                 " s", result == BEACON_ADD_NOT_CONFIRMED
                           ? "balancer add not confirmed for"
                           : "cannot add",
                 rec->url, bal_name(r), apr_time_sec(rec->backoff));
}

static void set_disabled(beacon_receiver *r, const char *url, int disabled,
                         const char *what, beacon_event_kind event)
{
    apr_status_t rv = beacon_proxy_set_disabled(r->target, url, disabled);

    r->shared->events[event]++;
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, r->s, BCNLOGNO(00034)
                     "cannot change backend %s in balancer://%s: it is gone "
                     "or not beacon's", url, bal_name(r));
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00035)
                 "%s backend %s%s%s", what, url,
                 disabled ? " from balancer://" : " in balancer://", bal_name(r));
}

static void act(beacon_receiver *r, const beacon_event_t *ev, apr_time_t now,
                apr_pool_t *p)
{
    if (ev->action != BEACON_ACT_NONE) {
        r->dirty = DIRTY_CHANGED;
    }
    switch (ev->action) {
    case BEACON_ACT_ADD:
        add_member(r, ev->rec, now, p);
        break;
    case BEACON_ACT_ENABLE:
        set_disabled(r, ev->url, 0, "re-enabled", BEACON_EV_REENABLED);
        break;
    case BEACON_ACT_DISABLE:
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00036)
                     "backend leaving %s", ev->url);
        set_disabled(r, ev->url, 1, "disabled", BEACON_EV_LEAVING);
        break;
    case BEACON_ACT_WAIT:
        ap_log_error(APLOG_MARK, APLOG_TRACE1, 0, r->s,
                     "%s: add of %s waits for its back-off", r->label, ev->url);
        break;
    default:
        ap_log_error(APLOG_MARK, APLOG_TRACE3, 0, r->s,
                     "%s: lease of %s renewed", r->label, ev->url);
        break;
    }
}

static apr_int64_t span_number(const beacon_span_t *span)
{
    apr_int64_t n = 0;
    apr_size_t i;

    if (span->ptr == NULL || span->len == 0 || span->len > 18) {
        return -1;
    }
    for (i = 0; i < span->len; i++) {
        if (span->ptr[i] < '0' || span->ptr[i] > '9') {
            return -1;
        }
        n = n * 10 + (span->ptr[i] - '0');
    }
    return n;
}

/* Who announced a record last, for the status pages. */
static void remember_sender(beacon_receiver *r, const beacon_event_t *ev)
{
    beacon_status_record *info;
    apr_size_t n;

    if (ev->rec == NULL) {
        return;
    }
    info = &r->peer[ev->rec - r->table->rec];
    n = ev->dg.host.ptr ? ev->dg.host.len : 0;
    if (n >= sizeof(info->host)) {
        n = sizeof(info->host) - 1;
    }
    memcpy(info->host, ev->dg.host.ptr ? ev->dg.host.ptr : "", n);
    info->host[n] = '\0';
    info->pid = span_number(&ev->dg.pid);
    info->seq = span_number(&ev->dg.seq);
    if (r->dirty < DIRTY_RENEWED) {
        r->dirty = DIRTY_RENEWED;
    }
}

static void handle_datagram(beacon_receiver *r, const struct mmsghdr *msg,
                            apr_pool_t *p)
{
    const char *buf = msg->msg_hdr.msg_iov->iov_base;
    apr_size_t len = msg->msg_len;
    apr_time_t now = apr_time_now();
    beacon_event_t ev;
    beacon_reason_t reason;

    reason = beacon_receive_any(r->table, r->conf->keys, r->conf->nkeys, buf,
                                len, now, &ev);
    if (reason == BEACON_OK || reason == BEACON_DROP_NOT_MANAGED) {
        remember_sender(r, &ev);
    }
    if (reason != BEACON_OK) {
        report_drop(r, reason, msg, &ev, now, p);
        return;
    }
    r->shared->events[BEACON_EV_ACCEPTED]++;
    if (r->target == NULL) {
        /* log-only mode: authenticated, so logging each is bounded by the
         * senders the operator gave the secret to */
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00040)
                     "%s: received: %s", r->label,
                     ap_escape_logitem(p, apr_pstrmemdup(p, buf, len)));
        return;
    }
    if (ev.rec == NULL) {
        r->shared->events[BEACON_EV_HEARTBEAT]++;
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, r->s, BCNLOGNO(00041)
                     "%s: heartbeat without url from host=%s pid=%s", r->label,
                     escaped_span(p, &ev.dg.host), escaped_span(p, &ev.dg.pid));
        return;
    }
    act(r, &ev, now, p);
}

/* ------------------------------------------------------------------ */
/* Sockets                                                             */

/* Linux caps SO_RCVBUF at net.core.rmem_max (208 KiB on a stock system,
 * about 1 ms of a flood): say so once, with the remedy. */
static void report_small_buffer(beacon_receiver *r)
{
    apr_os_sock_t fd;
    int granted = 0;
    socklen_t len = sizeof(granted);

    apr_os_sock_get(&fd, r->sock);
    if (r->buffer_reported ||
        getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &len) != 0 ||
        granted >= RECV_BUFFER) { /* Linux reports twice what it grants */
        return;
    }
    r->buffer_reported = 1;
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, r->s, BCNLOGNO(00055)
                 "%s: the kernel granted a %d KiB receive buffer of the %d KiB "
                 "asked for; to ride out floods, raise it with sysctl "
                 "net.core.rmem_max=%d", r->label, granted / 2048,
                 RECV_BUFFER / 1024, RECV_BUFFER);
}

static apr_status_t open_socket(beacon_receiver *r)
{
    apr_sockaddr_t *sa;
    apr_status_t rv;

    apr_pool_clear(r->sock_pool);
    rv = apr_sockaddr_info_get(&sa, r->bind_host, APR_UNSPEC, r->bind_port, 0,
                               r->sock_pool);
    if (rv == APR_SUCCESS) {
        rv = apr_socket_create(&r->sock, sa->family, SOCK_DGRAM, APR_PROTO_UDP,
                               r->sock_pool);
    }
    if (rv == APR_SUCCESS) {
        /* A larger buffer rides out bursts while the thread is busy. */
        apr_socket_opt_set(r->sock, APR_SO_RCVBUF, RECV_BUFFER);
        report_small_buffer(r);
        apr_socket_timeout_set(r->sock, 0);
        rv = apr_socket_bind(r->sock, sa);
    }
    if (rv != APR_SUCCESS) {
        r->sock = NULL;
        apr_pool_clear(r->sock_pool);
    }
    return rv;
}

static void open_sockets(apr_time_t now)
{
    beacon_receiver *r;

    for (r = receivers; r; r = r->next) {
        apr_status_t rv;

        if (r->sock || now < r->next_bind) {
            continue;
        }
        rv = open_socket(r);
        if (rv == APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00050)
                         "listening for beacons on udp %s%s%s", r->label,
                         r->target ? " for balancer://" : " (log-only: no "
                         "ProxyBeaconBalancer)",
                         r->target ? bal_name(r) : "");
            r->bind_backoff = 0;
            r->shared->listening = 1;
            continue;
        }
        /* The previous generation's owner may still hold the port for a
         * tick after a graceful restart: retry quickly at first. */
        if (now - owner_since < BIND_FAST_RETRY) {
            r->next_bind = now + WAIT_CAP;
            ap_log_error(APLOG_MARK, APLOG_DEBUG, rv, r->s, BCNLOGNO(00051)
                         "cannot bind udp %s yet; retrying", r->label);
            continue;
        }
        r->bind_backoff = r->bind_backoff ? r->bind_backoff * 2
                                          : BIND_BACKOFF_MIN;
        if (r->bind_backoff > BIND_BACKOFF_MAX) {
            r->bind_backoff = BIND_BACKOFF_MAX;
        }
        r->next_bind = now + r->bind_backoff;
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, r->s, BCNLOGNO(00052)
                     "cannot listen for beacons on udp %s; retrying in %"
                     APR_TIME_T_FMT " s", r->label,
                     apr_time_sec(r->bind_backoff));
    }
}

static recv_batch *make_batch(apr_pool_t *p)
{
    recv_batch *b = apr_pcalloc(p, sizeof(*b));
    int i;

    for (i = 0; i < RECV_BATCH; i++) {
        b->iov[i].iov_base = b->buf[i];
        b->iov[i].iov_len = sizeof(b->buf[i]);
        b->msg[i].msg_hdr.msg_iov = &b->iov[i];
        b->msg[i].msg_hdr.msg_iovlen = 1;
        b->msg[i].msg_hdr.msg_name = &b->peer[i];
    }
    return b;
}

/* Bounded work per wake: what is left waits for the next poll. */
static void drain(beacon_receiver *r, apr_pool_t *scratch)
{
    apr_os_sock_t fd;
    int handled = 0;

    apr_os_sock_get(&fd, r->sock);
    while (handled < DRAIN_LIMIT) {
        int i, n;

        for (i = 0; i < RECV_BATCH; i++) {
            r->batch->msg[i].msg_hdr.msg_namelen = sizeof(r->batch->peer[i]);
        }
        n = recvmmsg(fd, r->batch->msg, RECV_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                ap_log_error(APLOG_MARK, APLOG_DEBUG, APR_FROM_OS_ERROR(errno),
                             r->s, BCNLOGNO(00053) "%s: receive failed",
                             r->label);
            }
            return;
        }
        for (i = 0; i < n; i++) {
            handle_datagram(r, &r->batch->msg[i], scratch);
        }
        handled += n;
    }
}

/* ------------------------------------------------------------------ */
/* Leases                                                              */

static void expire(beacon_receiver *r, apr_time_t now)
{
    beacon_record_t *rec;
    unsigned cursor = 0, released;

    while ((rec = beacon_table_next_lapsed(r->table, now, &cursor)) != NULL) {
        r->dirty = DIRTY_CHANGED;
        if (r->target) {
            set_disabled(r, rec->url, 1, "evicted", BEACON_EV_EVICTED);
        }
    }
    released = beacon_table_release(r->table, now);
    if (released) {
        r->dirty = DIRTY_CHANGED;
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, r->s, BCNLOGNO(00054)
                     "%s: forgot %u silent non-member record(s)", r->label,
                     released);
    }
}

/*
 * Copies the table for the status pages in other children. A reader that
 * sees an odd or changed generation reads again (a sequence lock: the owner
 * is the only writer and never waits for a reader).
 */
static void publish(beacon_receiver *r, apr_time_t now)
{
    beacon_receiver_status *sh = r->shared;
    unsigned i, n = 0;

    /* Every accepted announcement renews a record: renewals are copied at
     * most every PUBLISH_EVERY, so a busy receiver's cost per wake stays
     * flat, while membership changes show at once. */
    if (r->dirty == 0 ||
        (r->dirty == DIRTY_RENEWED && now - r->published < PUBLISH_EVERY)) {
        return;
    }
    r->published = now;
    apr_atomic_inc32(&sh->generation);
    for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
        const beacon_record_t *rec = &r->table->rec[i];
        beacon_status_record *out;

        if (rec->state == BEACON_REC_FREE) {
            continue;
        }
        out = &sh->rec[n++];
        *out = r->peer[i];
        apr_cpystrn(out->url, rec->url, sizeof(out->url));
        out->last_ts = rec->high_ts;
        out->last_seen = rec->last_seen;
        out->retry_at = rec->retry_at;
        out->state = rec->state;
    }
    sh->nrecords = n;
    apr_atomic_inc32(&sh->generation);
    r->dirty = 0;
}

unsigned beacon_receiver_records(const beacon_receiver_status *shared,
                                 beacon_status_record *copy)
{
    /* apr_atomic_read32 takes no const; the generation is only read here */
    volatile apr_uint32_t *generation = (volatile apr_uint32_t *)&shared->generation;
    int attempt;

    for (attempt = 0; attempt < 100; attempt++) {
        apr_uint32_t before = apr_atomic_read32(generation);
        unsigned n = shared->nrecords;

        if (before & 1 || n > BEACON_TABLE_CAPACITY) {
            apr_sleep(100);
            continue;
        }
        memcpy(copy, shared->rec, n * sizeof(*copy));
        if (apr_atomic_read32(generation) == before) {
            return n;
        }
    }
    return 0;
}

int beacon_receiver_views(apr_pool_t *p, beacon_receiver_view **views)
{
    beacon_receiver *r;
    int n = 0;

    *views = apr_pcalloc(p, sizeof(**views) * (receiver_count + 1));
    for (r = receivers; r; r = r->next, n++) {
        (*views)[n].s = r->s;
        (*views)[n].conf = r->conf;
        (*views)[n].label = r->label;
        (*views)[n].target = r->target;
        (*views)[n].shared = r->shared;
    }
    return n;
}

static apr_interval_time_t wait_bound(apr_time_t now)
{
    apr_interval_time_t wait = WAIT_CAP;
    beacon_receiver *r;

    for (r = receivers; r; r = r->next) {
        apr_time_t due = beacon_table_next_deadline(r->table);

        if (due != 0 && due - now < wait) {
            wait = due > now ? due - now : 0;
        }
    }
    return wait;
}

/* ------------------------------------------------------------------ */
/* The watchdog thread                                                 */

static int should_stop(void)
{
    int state = AP_MPMQ_STOPPING;

    return stop_requested ||
           ap_mpm_query(AP_MPMQ_MPM_STATE, &state) != APR_SUCCESS ||
           state == AP_MPMQ_STOPPING;
}

static void take_ownership(apr_time_t now, apr_pool_t *p)
{
    beacon_receiver *r;

    for (r = receivers; r; r = r->next) {
        beacon_member *members;
        int i, n, adopted = 0;

        r->table = apr_palloc(owner_pool, sizeof(*r->table));
        beacon_table_init(r->table, r->conf->timeout, r->conf->max_skew);
        apr_pool_create(&r->sock_pool, owner_pool);
        r->batch = make_batch(owner_pool);
        r->peer = apr_pcalloc(owner_pool, sizeof(*r->peer) * BEACON_TABLE_CAPACITY);
        for (i = 0; i < BEACON_TABLE_CAPACITY; i++) {
            r->peer[i].pid = r->peer[i].seq = -1;
        }
        r->next_bind = now;
        r->shared->owner_pid = getpid();
        r->shared->listening = 0;
        r->dirty = DIRTY_CHANGED;
        if (r->target == NULL) {
            continue;
        }
        n = beacon_proxy_marked_members(r->target, p, &members);
        for (i = 0; i < n; i++) {
            if (beacon_table_adopt(r->table, members[i].url,
                                   members[i].disabled, now) == BEACON_OK) {
                adopted++;
            }
        }
        r->shared->events[BEACON_EV_TAKEN_OVER] += (apr_uint64_t)adopted;
        if (adopted > 0) {
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00060)
                         "took over %d existing member(s) of balancer://%s",
                         adopted, bal_name(r));
        }
    }
}

static apr_pollfd_t *poll_set(apr_pool_t *p, int *n)
{
    apr_pollfd_t *fds = apr_pcalloc(p, sizeof(*fds) * receiver_count);
    beacon_receiver *r;

    *n = 0;
    for (r = receivers; r; r = r->next) {
        if (r->sock) {
            fds[*n].p = p;
            fds[*n].desc_type = APR_POLL_SOCKET;
            fds[*n].reqevents = APR_POLLIN;
            fds[*n].desc.s = r->sock;
            fds[*n].client_data = r;
            (*n)++;
        }
    }
    return fds;
}

static void serve_until_stopped(void)
{
    apr_pool_t *scratch;

    apr_atomic_set32(&serving, 1);
    apr_pool_create(&scratch, owner_pool);
    while (!should_stop()) {
        apr_time_t now = apr_time_now();
        apr_int32_t ready = 0;
        apr_pollfd_t *fds;
        beacon_receiver *r;
        int i, n;

        open_sockets(now);
        fds = poll_set(scratch, &n);
        if (n == 0) {
            apr_sleep(wait_bound(now));
        }
        else if (apr_poll(fds, n, &ready, wait_bound(now)) == APR_SUCCESS) {
            for (i = 0; i < n; i++) {
                if (fds[i].rtnevents & APR_POLLIN) {
                    drain(fds[i].client_data, scratch);
                }
            }
        }
        now = apr_time_now();
        for (r = receivers; r; r = r->next) {
            expire(r, now);
            publish(r, now);
        }
        apr_pool_clear(scratch);
    }
    apr_pool_destroy(scratch);
    apr_atomic_set32(&serving, 0);
}

static apr_status_t watchdog_callback(int state, void *data, apr_pool_t *tick)
{
    (void)data;
    switch (state) {
    case AP_WATCHDOG_STATE_STARTING:
        beacon_block_stop_signals();
        owner_since = apr_time_now();
        break;
    case AP_WATCHDOG_STATE_RUNNING:
        /* The first tick can come before mod_proxy's child_init. */
        if (!child_ready) {
            break;
        }
        if (!owner_started) {
            owner_started = 1;
            apr_pool_create(&owner_pool, apr_pool_parent_get(tick));
            apr_pool_tag(owner_pool, "proxy_beacon_owner");
            take_ownership(apr_time_now(), tick);
        }
        serve_until_stopped();
        break;
    case AP_WATCHDOG_STATE_STOPPING:
        stop_requested = 1;
        break;
    }
    return APR_SUCCESS;
}

static apr_status_t register_watchdog(apr_pool_t *pconf, server_rec *s)
{
    APR_OPTIONAL_FN_TYPE(ap_watchdog_get_instance) *get_instance =
        APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance);
    APR_OPTIONAL_FN_TYPE(ap_watchdog_register_callback) *register_callback =
        APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_register_callback);
    ap_watchdog_t *watchdog;
    apr_status_t rv;

    if (!get_instance || !register_callback) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00070)
                     "mod_watchdog is required by ProxyBeaconListen");
        return APR_EGENERAL;
    }
    rv = get_instance(&watchdog, WATCHDOG_NAME, 0, 1, pconf);
    if (rv == APR_SUCCESS) {
        rv = register_callback(watchdog, WAIT_CAP, NULL, watchdog_callback);
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, BCNLOGNO(00071)
                     "mod_watchdog cannot run the beacon receiver with this "
                     "MPM: mod_proxy_beacon is INACTIVE, no backend will be "
                     "added");
    }
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Every child                                                         */

/*
 * Runs first when the child exits: the serving loop must be out of the
 * balancer before mod_proxy's child state goes. It notices within one poll
 * (100 ms at most); the wait is bounded in case it is stuck elsewhere.
 */
static apr_status_t stop_serving(void *data)
{
    int i;

    (void)data;
    stop_requested = 1;
    for (i = 0; i < 50 && apr_atomic_read32(&serving); i++) {
        apr_sleep(apr_time_from_msec(10));
    }
    return APR_SUCCESS;
}

void beacon_receivers_child_init(apr_pool_t *pchild, server_rec *s)
{
    (void)s;
    if (receivers) {
        apr_pool_pre_cleanup_register(pchild, NULL, stop_serving);
    }
    child_ready = 1;
}

/*
 * A balancer inherited by a virtual host shares its member list with the
 * main server's copy, but syncs only its own copy: sync ours on every
 * request so members added elsewhere are reachable from every vhost.
 */
int beacon_receivers_sync_request(server_rec *s)
{
    beacon_receiver *r;

    (void)s;
    for (r = receivers; r; r = r->next) {
        if (r->target) {
            beacon_proxy_sync(r->target);
        }
    }
    return DECLINED;
}
