/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl listen: receives datagrams and prints, one line each, what a
 * proxy with the same secrets and max skew would decide. The decision is
 * beacon_verify_ring()'s and beacon_receive_verified()'s, the very calls
 * the module makes, on a ring of the same keys and masters; this file
 * only says it.
 */

#include <stdio.h>
#include <string.h>

#include <apr_network_io.h>
#include <apr_poll.h>
#include <apr_strings.h>

#include "cli.h"

#define SHOWN_BYTES 160 /* of a dropped datagram, escaped */

/* The options as given, before any is checked. */
typedef struct {
    const char *bind, *max_skew, *count, *service;
    beacon_reach_t *allow;                 /* every --allow; NULL: none */
    secret_arg_t secrets[BEACON_MAX_KEYS]; /* none: the environment */
    unsigned nsecrets;
} listen_args_t;

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
const option_t listen_options[] = {
    {"bind", OPT_BIND, "ADDR:PORT",
     "the UDP address to receive on (required). ADDR\n"
     "may be * or empty for every address, PORT 0 for\n"
     "any free port: the first line names the address.",
     ONCE(listen_args_t, bind)},
    {"max-skew", OPT_MAX_SKEW, "SECONDS",
     "how far a timestamp may be from this machine's\n"
     "clock, default 30 (ProxyBeaconMaxSkew's default);\n"
     "fractions and the units s and ms are accepted",
     ONCE(listen_args_t, max_skew)},
    {"count", OPT_COUNT, "N",
     "exit after N datagrams; default: run until SIGINT\n"
     "or SIGTERM", ONCE(listen_args_t, count)},
    {"service", OPT_SERVICE, "NAME",
     "decide as a proxy with ProxyBeaconService NAME:\n"
     "a datagram whose svc= is not NAME, or that has\n"
     "none, is dropped as wrong service",
     ONCE(listen_args_t, service)},
    {"allow", OPT_ALLOW, "LIST",
     "decide as a proxy with ProxyBeaconAllow: a url\n"
     "must point at an entry of LIST (comma-separated:\n"
     "networks 10.0.0.0/8, addresses, names, *.suffix,\n"
     "source for the sender's own address), by the\n"
     "proxy's very rule; names are matched as written,\n"
     "never resolved. Repeat it to add entries. Without\n"
     "it, the defaults: any url but link-local,\n"
     "unspecified, multicast and broadcast addresses", 0},
    SECRET_FILE_OPTION(0), /* once per secret */
    SECRET_EXEC_OPTION(0),
    {"master-file", OPT_MASTER_FILE, "FILE",
     "as --secret-file, for a master (derive mode, as\n"
     "ProxyBeaconSecret derive:file:): a datagram is\n"
     "verified with the member key derived for its svc=\n"
     "and url=, and one whose url is not in canonical\n"
     "form, or that has none, is refused. hex: only.\n"
     "Keys and masters: 4 at most, any verifies.\n"
     "Without any of these options, " SECRET_ENV "\n"
     "(derive: before it, derive:hex:, derive:file:\n"
     "or derive:exec:, makes it a master)", 0},
    {"master-exec", OPT_MASTER_EXEC, "COMMAND",
     "as --secret-exec, for a master (as\n"
     "ProxyBeaconSecret derive:exec:)", 0},
    HELP_OPTION,
    OPTIONS_END};

typedef struct {
    beacon_table_t *table;
    beacon_ring_t *ring;                /* the keys and masters, --service */
    unsigned nkeys;                     /* keys and masters */
    apr_interval_time_t max_skew;
    const beacon_reach_t *allow;        /* --allow; NULL: the defaults */
    apr_int64_t count;                  /* datagrams to take; 0: no end */
    apr_socket_t *sock;
    apr_pool_t *p;
} listener_t;

/* ------------------------------------------------------------------ */
/* One line per datagram                                               */

static void format_peer(const apr_sockaddr_t *sa, char *out, apr_size_t size)
{
    char ip[64] = "?";

    apr_sockaddr_ip_getbuf(ip, sizeof(ip), (apr_sockaddr_t *)sa);
    if (strchr(ip, ':')) {
        apr_snprintf(out, size, "[%s]:%u", ip, (unsigned)sa->port);
    }
    else {
        apr_snprintf(out, size, "%s:%u", ip, (unsigned)sa->port);
    }
}

static void put_span(const char *key, const beacon_span_t *v)
{
    if (v->ptr) {
        printf(" %s=", key);
        put_escaped(v->ptr, v->len, BEACON_MAX_DATAGRAM);
    }
}

static void put_datagram(const char *buf, apr_size_t len)
{
    fputs(": \"", stdout);
    put_escaped(buf, len, SHOWN_BYTES);
    putchar('"');
}

static void put_stale_detail(const listener_t *l, const beacon_event_t *ev,
                             apr_time_t now)
{
    apr_int64_t skew = ev->dg.ts - (apr_int64_t)now;

    printf(": ts=%" APR_INT64_T_FMT " is %.3f s %s this clock (max skew "
           "%s)", ev->dg.ts,
           (double)(skew < 0 ? -skew : skew) / APR_USEC_PER_SEC,
           skew < 0 ? "behind" : "ahead of",
           format_duration(l->p, l->max_skew));
}

/* What the member keys of a mac mismatch under masters were derived for:
 * the datagram's svc= (none: the empty service) and url=, unverified. */
static void put_derived_for(const beacon_datagram_t *dg)
{
    fputs(" (member key derived for svc=", stdout);
    if (dg->unverified_svc.ptr && dg->unverified_svc.len > 0) {
        put_escaped(dg->unverified_svc.ptr, dg->unverified_svc.len,
                    SHOWN_BYTES);
    }
    else {
        fputs("(none)", stdout);
    }
    fputs(" url=", stdout);
    put_escaped(dg->unverified_url.ptr, dg->unverified_url.len, SHOWN_BYTES);
    putchar(')');
}

/* The url of a datagram refused under masters, and the canonical form
 * the member should announce, or why there is none. */
static void put_not_canonical(const beacon_span_t *url)
{
    char canonical[BEACON_URL_MAX];
    const char *err;

    if (url->ptr == NULL) {
        fputs(": no url=", stdout);
        return;
    }
    fputs(": url=", stdout);
    put_escaped(url->ptr, url->len, SHOWN_BYTES);
    err = beacon_url_canonicalize(url->ptr, url->len, canonical,
                                  sizeof(canonical));
    if (err) {
        printf(" (%s)", err);
    }
    else {
        printf(" (canonical: %s)", canonical);
    }
}

/* The detail after "dropped <reason> from <peer>". */
static void put_drop_detail(const listener_t *l, beacon_reason_t reason,
                            const beacon_event_t *ev, const char *buf,
                            apr_size_t len, apr_time_t now)
{
    char tmp[BEACON_URL_MAX];
    beacon_record_t *rec;

    switch (reason) {
    case BEACON_DROP_OVERSIZE:
        printf(": more than %d bytes", BEACON_MAX_DATAGRAM);
        break;
    case BEACON_DROP_MAC_MISMATCH:
        if (ev->dg.unverified_url.ptr) { /* under masters */
            put_derived_for(&ev->dg);
        }
        else {
            fputs(l->nkeys > 1 ? " (not signed with any of these secrets?)"
                               : " (not signed with this secret?)", stdout);
        }
        put_datagram(buf, len);
        break;
    case BEACON_DROP_URL_NOT_CANONICAL:
        put_not_canonical(&ev->dg.unverified_url);
        break;
    case BEACON_DROP_STALE_TS:
        put_stale_detail(l, ev, now);
        break;
    case BEACON_DROP_WRONG_SERVICE:
        if (ev->dg.svc.ptr) {
            fputs(": svc=", stdout);
            put_escaped(ev->dg.svc.ptr, ev->dg.svc.len, SHOWN_BYTES);
        }
        else {
            fputs(": no svc", stdout);
        }
        printf(" (this receiver is for %s)", l->table->service);
        break;
    case BEACON_DROP_UNACCEPTABLE_URL:
        fputs(": url=", stdout);
        put_escaped(ev->dg.url.ptr, ev->dg.url.len, SHOWN_BYTES);
        printf(" (%s)", beacon_url_canonicalize(ev->dg.url.ptr, ev->dg.url.len,
                                                tmp, sizeof(tmp)));
        break;
    case BEACON_DROP_REPLAYED_TS:
        printf(": url=%s ts=%" APR_INT64_T_FMT, ev->url, ev->dg.ts);
        if ((rec = beacon_table_find(l->table, ev->url)) != NULL) {
            printf(", last accepted ts=%" APR_INT64_T_FMT, rec->high_ts);
        }
        break;
    case BEACON_DROP_TABLE_FULL:
        printf(": url=%s", ev->url);
        break;
    case BEACON_DROP_URL_NOT_ALLOWED:
        printf(": url=%s (%s)", ev->url, ev->refusal ? ev->refusal : "?");
        break;
    default: /* embedded NUL, bad frame, duplicate field, bad ts, bad field */
        put_datagram(buf, len);
        break;
    }
}

/* "accepted ..." for an announcement or a heartbeat. */
static void put_accepted(beacon_event_t *ev, const char *peer)
{
    if (ev->rec) {
        printf("accepted url=%s", ev->url);
    }
    else {
        fputs("accepted heartbeat", stdout);
    }
    put_span("host", &ev->dg.host);
    put_span("pid", &ev->dg.pid);
    put_span("seq", &ev->dg.seq);
    printf(" ts=%" APR_INT64_T_FMT, ev->dg.ts);
    put_span("svc", &ev->dg.svc);
    put_span("ctx", &ev->dg.ctx);
    put_span("route", &ev->dg.route);
    put_span("lbfactor", &ev->dg.lbfactor);
    put_span("state", &ev->dg.state);
    printf(" from %s", peer);
    if (ev->rec) {
        printf(" -> %s", beacon_action_name(ev->action));
        if (ev->action == BEACON_ACT_ADD) {
            beacon_table_added(ev->rec); /* as if the add succeeded */
        }
    }
}

/* The sender's address, for "source" entries; NULL if not IP. */
static const struct sockaddr *source_of(const apr_sockaddr_t *from)
{
    if (from->family == APR_INET) {
        return (const struct sockaddr *)&from->sa.sin;
    }
#if APR_HAVE_IPV6
    if (from->family == APR_INET6) {
        return (const struct sockaddr *)&from->sa.sin6;
    }
#endif
    return NULL;
}

/* One line for one datagram: what a receiver would decide. */
static void report(listener_t *l, const char *buf, apr_size_t len,
                   const apr_sockaddr_t *from)
{
    apr_time_t now = apr_time_now();
    beacon_reach_gate_t gate;
    beacon_event_t ev;
    beacon_reason_t reason;
    char peer[128];

    format_peer(from, peer, sizeof(peer));
    gate.receiver = l->allow; /* NULL: the defaults, as a proxy without */
    gate.balancer = NULL;     /* ProxyBeaconAllow; no balancer narrows */
    gate.source = source_of(from);
    memset(&ev, 0, sizeof(ev));
    reason = beacon_verify_ring(buf, len, l->ring, now, l->max_skew, &ev.dg);
    if (reason == BEACON_OK) {
        reason = beacon_receive_verified(l->table, now, &gate, &ev);
    }
    if (reason == BEACON_OK) {
        put_accepted(&ev, peer);
    }
    else {
        printf("dropped %s", beacon_reason_name(reason));
        if (ev.dg.bad_field.ptr) { /* "bad field svc", as the module logs */
            putchar(' ');
            put_escaped(ev.dg.bad_field.ptr, ev.dg.bad_field.len, SHOWN_BYTES);
        }
        printf(" from %s", peer);
        put_drop_detail(l, reason, &ev, buf, len, now);
    }
    putchar('\n');
    flush_stdout();
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */

static void parse_listen_options(apr_pool_t *p, const command_t *cmd,
                                 int argc, const char *const *argv,
                                 listen_args_t *args)
{
    const char *arg;
    opts_t o;
    int optch;

    memset(args, 0, sizeof(*args));
    opts_init(&o, p, cmd, argc, argv);
    /* the only options not stored by opts_next: --allow, and one per
     * secret during a rotation, as ProxyBeaconSecret */
    while ((optch = opts_next(&o, args, &arg)) != 0) {
        if (optch == OPT_ALLOW) { /* repeatable: the lists add up */
            if (args->allow == NULL) {
                args->allow = apr_palloc(p, sizeof(*args->allow));
                beacon_reach_init(args->allow);
            }
            add_allow_list(p, args->allow, arg);
            continue;
        }
        if (args->nsecrets == BEACON_MAX_KEYS) {
            fail(EXIT_USAGE, "--secret-file, --secret-exec, --master-file "
                 "and --master-exec: at most %d secrets", BEACON_MAX_KEYS);
        }
        take_secret_arg(&args->secrets[args->nsecrets++], optch, arg);
    }
}

/*
 * The ring of a proxy with these secrets (ProxyBeaconSecret, derive: for
 * a master) and ProxyBeaconService service (NULL: none), as the module
 * makes it: the service takes the default keys and masters, and a
 * datagram without svc= is a wrong service.
 */
static beacon_ring_t *make_ring(apr_pool_t *p, const secret_arg_t *secrets,
                                unsigned nkeys, const char *service)
{
    beacon_ring_t *ring = apr_palloc(p, sizeof(*ring));
    beacon_key_t keys[BEACON_MAX_KEYS];
    unsigned i, masters = 0;

    for (i = 0; i < nkeys; i++) {
        if (load_key_or_master(p, &secrets[i], &keys[i])) {
            masters |= 1u << i;
        }
    }
    beacon_ring_init(ring, keys, nkeys);
    beacon_wipe(keys, sizeof(keys));
    beacon_ring_set_masters(ring, BEACON_SERVICE_DEFAULT, masters);
    if (service) {
        check_service(service);
        if (beacon_ring_add(ring, service, NULL, 0) != NULL) {
            fail(EXIT_USAGE, "--service %s: not a service", service);
        }
        beacon_ring_require_service(ring, 1);
    }
    return ring;
}

/* --max-skew, --count and the keys: how datagrams are judged. */
static void setup_listener(apr_pool_t *p, const listen_args_t *args,
                           listener_t *l)
{
    l->p = p;
    l->allow = args->allow;
    l->max_skew = BEACON_DEFAULT_MAX_SKEW;
    if (args->max_skew && (!parse_duration(args->max_skew, &l->max_skew) ||
                           l->max_skew <= 0)) {
        fail(EXIT_USAGE, "--max-skew '%s': expected positive seconds, e.g. "
             "30, 2.5 or 500ms", args->max_skew);
    }
    if (args->count && (!beacon_parse_decimal(args->count,
                                              strlen(args->count),
                                              &l->count) ||
                        l->count == 0)) {
        fail(EXIT_USAGE, "--count '%s': expected a positive number",
             args->count);
    }
    /* no --secret-file nor --secret-exec: one key, from the environment
     * (secrets[0] empty) */
    l->nkeys = args->nsecrets > 0 ? args->nsecrets : 1;
    l->ring = make_ring(p, args->secrets, l->nkeys, args->service);
    /* 0: no lease, the default */
    l->table = beacon_table_make(p, BEACON_TABLE_CAPACITY, 0, l->max_skew);
    if (args->service) { /* the ring decides; the lines name it */
        beacon_table_set_service(l->table, args->service);
    }
}

/* A non-blocking UDP socket bound to --bind; where holds its address. */
static void open_socket(apr_pool_t *p, const char *bind_arg, const char *host,
                        apr_port_t port, listener_t *l, char *where,
                        apr_size_t size)
{
    apr_sockaddr_t *sa, *local;
    apr_status_t rv;
    char ebuf[120];

    rv = apr_sockaddr_info_get(&sa, host, APR_UNSPEC, port, 0, p);
    if (rv == APR_SUCCESS) {
        rv = apr_socket_create(&l->sock, sa->family, SOCK_DGRAM,
                               APR_PROTO_UDP, p);
    }
    if (rv != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "--bind %s: %s", bind_arg,
             errstr(rv, ebuf, sizeof(ebuf)));
    }
#if APR_HAVE_IPV6
    if (host == NULL && sa->family == APR_INET6) {
        (void)apr_socket_opt_set(l->sock, APR_IPV6_V6ONLY, 0); /* IPv4 too */
    }
#endif
    if ((rv = apr_socket_bind(l->sock, sa)) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "cannot bind %s: %s", bind_arg,
             errstr(rv, ebuf, sizeof(ebuf)));
    }
    apr_socket_opt_set(l->sock, APR_SO_NONBLOCK, 1);
    apr_socket_timeout_set(l->sock, 0);
    if (apr_socket_addr_get(&local, APR_LOCAL, l->sock) == APR_SUCCESS) {
        format_peer(local, where, size); /* port 0: the one the kernel chose */
    }
    else {
        apr_cpystrn(where, bind_arg, size);
    }
}

/* ------------------------------------------------------------------ */
/* The command                                                         */

/* The --allow entries as libbeacon reads them back, for the first line;
 * "" without --allow. */
static const char *allow_text(apr_pool_t *p, const beacon_reach_t *allow)
{
    apr_size_t size = (apr_size_t)BEACON_REACH_MAX_ENTRIES *
                      (BEACON_REACH_NAME_MAX + 3);
    char *buf;

    if (allow == NULL) {
        return "";
    }
    buf = apr_palloc(p, size);
    return beacon_reach_text(allow, buf, size);
}

/* Reports what is queued. --count and a stop signal end it between
 * lines, never within one. */
static void drain(listener_t *l, apr_sockaddr_t *from, apr_int64_t *seen)
{
    char buf[BEACON_MAX_DATAGRAM + 1]; /* one more: oversize is detected */
    char ebuf[120];

    while (!stop_requested() && (l->count == 0 || *seen < l->count)) {
        apr_size_t len = sizeof(buf);
        apr_status_t rv = apr_socket_recvfrom(from, l->sock, 0, buf, &len);

        if (APR_STATUS_IS_EAGAIN(rv) || APR_STATUS_IS_EINTR(rv)) {
            return;
        }
        if (rv != APR_SUCCESS) {
            /* e.g. an ICMP error on some systems: not fatal */
            warn("receive: %s", errstr(rv, ebuf, sizeof(ebuf)));
            return;
        }
        report(l, buf, len, from);
        (*seen)++;
    }
}

/* Waits for datagrams or a stop signal, whichever comes first. */
static void listen_loop(listener_t *l)
{
    apr_sockaddr_t *from = apr_pcalloc(l->p, sizeof(*from));
    apr_int64_t seen = 0;
    apr_pollfd_t pfds[2];
    char ebuf[120];

    memset(pfds, 0, sizeof(pfds));
    pfds[0].p = l->p;
    pfds[0].desc_type = APR_POLL_SOCKET;
    pfds[0].reqevents = APR_POLLIN;
    pfds[0].desc.s = l->sock;
    pfds[1] = stop_pollfd(l->p);
    while (!stop_requested() && (l->count == 0 || seen < l->count)) {
        apr_int32_t n;
        apr_status_t rv = apr_poll(pfds, 2, &n, -1);

        if (rv != APR_SUCCESS && !APR_STATUS_IS_EINTR(rv) &&
            !APR_STATUS_IS_TIMEUP(rv)) {
            fail(EXIT_RUNTIME, "poll: %s", errstr(rv, ebuf, sizeof(ebuf)));
        }
        drain(l, from, &seen);
    }
}

int run_listen(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv)
{
    listen_args_t args;
    listener_t l;
    const char *err;
    char where[128];
    char *host;
    apr_port_t port;

    memset(&l, 0, sizeof(l));
    parse_listen_options(p, cmd, argc, argv, &args);
    if (args.bind == NULL) {
        fail(EXIT_USAGE, "--bind ADDR:PORT is required (see beaconctl listen "
             "--help)");
    }
    err = beacon_parse_host_port(p, args.bind,
                                 BEACON_HP_ANY_HOST | BEACON_HP_PORT_ZERO,
                                 &host, &port);
    if (err != NULL) {
        fail(EXIT_USAGE, "--bind '%s': %s", args.bind, err);
    }
    setup_listener(p, &args, &l);
    open_socket(p, args.bind, host, port, &l, where, sizeof(where));
    catch_stop_signals(p);
    printf("listening on %s (max skew %s%s%s%s%s)\n", where,
           format_duration(p, l.max_skew),
           l.table->service[0] ? ", service " : "", l.table->service,
           l.allow ? ", allow " : "", allow_text(p, l.allow));
    flush_stdout();
    listen_loop(&l);
    apr_socket_close(l.sock);
    beacon_wipe(l.ring, sizeof(*l.ring));
    return 0;
}
