/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* A receiver's UDP socket; see mod_proxy_beacon_inbox.h. */

#include "mod_proxy_beacon_inbox.h"

#include <apr_portable.h>
#include <apr_strings.h>

#include <errno.h>
#include <netdb.h>

#define DRAIN_LIMIT 256                   /* datagrams per socket per wake */
#define RECV_BATCH 64                     /* datagrams per recvmmsg() */
#define RECV_BUFFER (4 * 1024 * 1024)     /* SO_RCVBUF asked for, bytes */
#define BIND_FAST_RETRY apr_time_from_sec(5) /* after taking ownership */
#define BIND_FAST_EVERY apr_time_from_msec(100)
#define BIND_BACKOFF_MIN apr_time_from_sec(30)
#define BIND_BACKOFF_MAX apr_time_from_sec(600)

/* One recvmmsg() worth of datagrams, allocated once per owner. */
typedef struct {
    struct mmsghdr msg[RECV_BATCH];
    struct iovec iov[RECV_BATCH];
    struct sockaddr_storage peer[RECV_BATCH];
    char buf[RECV_BATCH][BEACON_MAX_DATAGRAM + 1]; /* +1 exposes oversize */
} recv_batch;

struct beacon_inbox {
    server_rec *s;
    const char *host;          /* NULL: all addresses */
    apr_port_t port;
    const char *label;
    apr_pool_t *pool;          /* the socket's; cleared on each bind */
    apr_socket_t *sock;
    int kept;                  /* sock is the parent's, not yet announced */
    recv_batch *batch;
    apr_time_t next_bind;
    apr_interval_time_t backoff;
    int buffer_reported;
};

/* A socket the parent keeps across generations, in its own subpool of the
 * process pool, so that closing it gives its memory back. */
typedef struct kept_socket kept_socket;
struct kept_socket {
    kept_socket *next;
    apr_pool_t *pool;
    const char *host;          /* NULL: all addresses */
    apr_port_t port;
    const char *label;
    apr_socket_t *sock;
    int claimed;               /* by a receiver of this generation */
};

struct beacon_kept_sockets {
    apr_pool_t *pool;          /* the process pool */
    kept_socket *list;
};

#define KEPT_KEY "mod_proxy_beacon kept sockets"

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

beacon_inbox *beacon_inbox_make(apr_pool_t *p, server_rec *s,
                                const char *host, apr_port_t port,
                                const char *label, apr_socket_t *kept)
{
    beacon_inbox *in = apr_pcalloc(p, sizeof(*in));

    in->s = s;
    in->host = host;
    in->port = port;
    in->label = label;
    in->sock = kept;
    in->kept = kept != NULL;
    apr_pool_create(&in->pool, p);
    in->batch = make_batch(p);
    return in;
}

apr_socket_t *beacon_inbox_socket(const beacon_inbox *in)
{
    return in->sock;
}

/* Linux caps SO_RCVBUF at net.core.rmem_max (208 KiB on a stock system,
 * about 1 ms of a flood): say so once, with the remedy. */
static void report_small_buffer(server_rec *s, const char *label,
                                apr_socket_t *sock, int *reported)
{
    apr_os_sock_t fd;
    int granted = 0;
    socklen_t len = sizeof(granted);

    apr_os_sock_get(&fd, sock);
    if (*reported ||
        getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &len) != 0 ||
        granted >= RECV_BUFFER) { /* Linux reports twice what it grants */
        return;
    }
    *reported = 1;
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, BCNLOGNO(00055)
                 "%s: the kernel granted a %d KiB receive buffer of the %d KiB "
                 "asked for; to ride out floods, raise it with sysctl "
                 "net.core.rmem_max=%d", label, granted / 2048,
                 RECV_BUFFER / 1024, RECV_BUFFER);
}

/* A non-blocking UDP socket bound to host:port, from p; *sock NULL when
 * it fails (p may then hold what was made: the caller clears it). */
static apr_status_t bind_socket(apr_pool_t *p, server_rec *s, const char *host,
                                apr_port_t port, const char *label,
                                int *reported, apr_socket_t **sock)
{
    apr_sockaddr_t *sa;
    apr_status_t rv;

    *sock = NULL;
    rv = apr_sockaddr_info_get(&sa, host, APR_UNSPEC, port, 0, p);
    if (rv == APR_SUCCESS) {
        rv = apr_socket_create(sock, sa->family, SOCK_DGRAM, APR_PROTO_UDP, p);
    }
    if (rv == APR_SUCCESS) {
        /* A larger buffer rides out bursts while the thread is busy, and
         * holds what arrives while the owner is handed over. */
        apr_socket_opt_set(*sock, APR_SO_RCVBUF, RECV_BUFFER);
        report_small_buffer(s, label, *sock, reported);
        apr_socket_timeout_set(*sock, 0);
        rv = apr_socket_bind(*sock, sa);
    }
    if (rv != APR_SUCCESS && *sock) {
        apr_socket_close(*sock);
        *sock = NULL;
    }
    return rv;
}

int beacon_inbox_open(beacon_inbox *in, apr_time_t now, apr_time_t since)
{
    apr_status_t rv;

    if (in->kept) {
        in->kept = 0;
        return 1;
    }
    if (in->sock || now < in->next_bind) {
        return 0;
    }
    apr_pool_clear(in->pool);
    rv = bind_socket(in->pool, in->s, in->host, in->port, in->label,
                     &in->buffer_reported, &in->sock);
    if (rv == APR_SUCCESS) {
        in->backoff = 0;
        return 1;
    }
    apr_pool_clear(in->pool);
    /* The previous generation's owner may still hold the port for a tick
     * after a graceful restart: retry quickly at first. */
    if (now - since < BIND_FAST_RETRY) {
        in->next_bind = now + BIND_FAST_EVERY;
        ap_log_error(APLOG_MARK, APLOG_DEBUG, rv, in->s, BCNLOGNO(00051)
                     "cannot bind udp %s yet; retrying", in->label);
        return 0;
    }
    in->backoff = in->backoff ? in->backoff * 2 : BIND_BACKOFF_MIN;
    if (in->backoff > BIND_BACKOFF_MAX) {
        in->backoff = BIND_BACKOFF_MAX;
    }
    in->next_bind = now + in->backoff;
    ap_log_error(APLOG_MARK, APLOG_ERR, rv, in->s, BCNLOGNO(00052)
                 "cannot listen for beacons on udp %s; retrying in %"
                 APR_TIME_T_FMT " s", in->label, apr_time_sec(in->backoff));
    return 0;
}

void beacon_inbox_drain(beacon_inbox *in, beacon_datagram_fn *fn, void *ctx,
                        apr_pool_t *scratch)
{
    recv_batch *b = in->batch;
    apr_os_sock_t fd;
    int handled = 0;

    apr_os_sock_get(&fd, in->sock);
    while (handled < DRAIN_LIMIT) {
        int i, n;

        for (i = 0; i < RECV_BATCH; i++) {
            b->msg[i].msg_hdr.msg_namelen = sizeof(b->peer[i]);
        }
        n = recvmmsg(fd, b->msg, RECV_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                ap_log_error(APLOG_MARK, APLOG_DEBUG, APR_FROM_OS_ERROR(errno),
                             in->s, BCNLOGNO(00053) "%s: receive failed",
                             in->label);
            }
            return;
        }
        for (i = 0; i < n; i++) {
            fn(ctx, b->buf[i], b->msg[i].msg_len, b->msg[i].msg_hdr.msg_name,
               b->msg[i].msg_hdr.msg_namelen, scratch);
        }
        handled += n;
    }
}

/* ------------------------------------------------------------------ */
/* The parent's sockets                                                */

beacon_kept_sockets *beacon_inbox_kept_begin(apr_pool_t *process_pool)
{
    beacon_kept_sockets *k = NULL;
    kept_socket *ks;

    apr_pool_userdata_get((void **)&k, KEPT_KEY, process_pool);
    if (k == NULL) {
        k = apr_pcalloc(process_pool, sizeof(*k));
        k->pool = process_pool;
        apr_pool_userdata_set(k, KEPT_KEY, apr_pool_cleanup_null, process_pool);
    }
    for (ks = k->list; ks; ks = ks->next) {
        ks->claimed = 0;
    }
    return k;
}

static int same_host(const char *a, const char *b)
{
    return a == NULL ? b == NULL : b != NULL && !strcmp(a, b);
}

apr_socket_t *beacon_inbox_kept_claim(beacon_kept_sockets *k, const char *host,
                                      apr_port_t port)
{
    kept_socket *ks;

    for (ks = k->list; ks; ks = ks->next) {
        if (!ks->claimed && ks->port == port && same_host(ks->host, host)) {
            ks->claimed = 1;
            return ks->sock;
        }
    }
    return NULL;
}

void beacon_inbox_kept_release(beacon_kept_sockets *k, server_rec *s)
{
    kept_socket **at = &k->list;

    while (*at) {
        kept_socket *ks = *at;

        if (ks->claimed) {
            at = &ks->next;
            continue;
        }
        *at = ks->next;
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, BCNLOGNO(00131)
                     "closed udp %s: no receiver of this configuration "
                     "listens there (the previous generation's children "
                     "hold it until they exit)", ks->label);
        apr_pool_destroy(ks->pool); /* closes the socket */
    }
}

apr_socket_t *beacon_inbox_kept_open(beacon_kept_sockets *k, server_rec *s,
                                     const char *host, apr_port_t port,
                                     const char *label)
{
    apr_pool_t *p;
    kept_socket *ks;
    apr_status_t rv;
    int reported = 0;

    apr_pool_create(&p, k->pool);
    apr_pool_tag(p, "proxy_beacon_socket");
    ks = apr_pcalloc(p, sizeof(*ks));
    ks->pool = p;
    ks->host = host ? apr_pstrdup(p, host) : NULL;
    ks->port = port;
    ks->label = apr_pstrdup(p, label);
    rv = bind_socket(p, s, host, port, label, &reported, &ks->sock);
    if (rv != APR_SUCCESS) {
        /* at a graceful restart to an address that overlaps the old one,
         * the old generation may still hold it: the owner binds it then */
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, BCNLOGNO(00130)
                     "cannot bind udp %s before the children start; the "
                     "receiver binds it itself, and what arrives while its "
                     "owner changes (a restart) can be lost", label);
        apr_pool_destroy(p);
        return NULL;
    }
    ks->claimed = 1;
    ks->next = k->list;
    k->list = ks;
    return ks->sock;
}

const char *beacon_inbox_peer_label(apr_pool_t *p, const struct sockaddr *peer,
                                    socklen_t len)
{
    char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";

    getnameinfo(peer, len, host, sizeof(host), port, sizeof(port),
                NI_NUMERICHOST | NI_NUMERICSERV);
    return apr_psprintf(p, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
}
