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

#include "mod_proxy_beacon_receiver.h"
#include "mod_proxy_beacon_members.h"

#include <apr_atomic.h>
#include <apr_poll.h>
#include <apr_strings.h>
#include <ap_listen.h>
#include <ap_mpm.h>

#include <unistd.h>

#define WATCHDOG_NAME "_proxy_beacon_"
#define WAIT_CAP apr_time_from_msec(100)
/* mod_watchdog's singleton: a new owner starts about 10 s after the old one
 * died, and senders announce every 5 s by default. */
#define HANDOFF_GAP apr_time_from_sec(15)

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

static int is_wildcard(const char *host)
{
    return !strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !strcmp(host, "*");
}

void beacon_receiver_address(apr_pool_t *p, server_rec *s,
                             const beacon_server_conf *conf, const char **host,
                             apr_port_t *port)
{
    apr_sockaddr_t *own = NULL;

    *host = conf->listen_host;
    *port = conf->listen_port;
    if (s->is_virtual && s->addrs) {
        own = s->addrs->host_addr;
        if (*port == 0) {
            *port = s->addrs->host_port;
        }
    }
    else if (ap_listeners && ap_listeners->bind_addr) {
        own = ap_listeners->bind_addr;
        if (*port == 0) {
            *port = own->port;
        }
    }
    if (*host == NULL && own) {
        apr_sockaddr_ip_get((char **)host, own);
    }
    if (*host && is_wildcard(*host)) {
        *host = strchr(*host, ':') ? "::" : NULL;
    }
    *host = *host ? apr_pstrdup(p, *host) : NULL;
}

const char *beacon_receiver_label(apr_pool_t *p, const char *host,
                                  apr_port_t port)
{
    int v6 = host && strchr(host, ':');

    return apr_psprintf(p, "%s%s%s:%u", v6 ? "[" : "", host ? host : "*",
                        v6 ? "]" : "", (unsigned)port);
}

/* The balancer and its registry; members the registry lists come back now,
 * before the first child of this generation serves a request. */
/*
 * What names a receiver across restarts, and no other: its virtual host
 * (name and address) and its bind address. Two virtual hosts with
 * balancers of one name, each with its own receiver, keep their members
 * apart.
 */
static const char *registry_key(apr_pool_t *p, const beacon_receiver *r)
{
    const char *vhost = "main";
    char *ip = NULL;

    if (r->s->is_virtual && r->s->addrs) {
        apr_sockaddr_ip_get(&ip, r->s->addrs->host_addr);
        vhost = apr_psprintf(p, "%s@%s:%u",
                             r->s->server_hostname ? r->s->server_hostname : "",
                             ip ? ip : "*", (unsigned)r->s->addrs->host_port);
    }
    /* a listener's only balancer keeps the name it always had */
    return apr_psprintf(p, "vhost %s, udp %s%s%s", vhost, r->label,
                        r->listener->nlanes > 1 ? ", balancer " : "",
                        r->listener->nlanes > 1 ? r->bal->name : "");
}

/* The key set of r's balancer in its listener's ring. */
static int ring_set_of(const beacon_receiver *r)
{
    int set = r->service ? beacon_ring_find(r->listener->ring, r->service,
                                            strlen(r->service))
                         : -1;

    return set >= 0 ? set : BEACON_SERVICE_DEFAULT;
}

static apr_status_t attach_balancer(beacon_receiver *r, apr_pool_t *pconf)
{
    beacon_member_policy policy = {r->conf->timeout.value,
                                   beacon_config_forget_interval(r->conf),
                                   2 * r->conf->max_skew.value,
                                   r->conf->member_params, r->bal->slots,
                                   beacon_config_balancer_capacity(r->bal),
                                   {r->conf->allow, r->bal->allow, NULL},
                                   r->bal->contexts,
                                   r->bal->slowstart.set
                                       ? r->bal->slowstart.value
                                       : r->conf->slowstart.value,
                                   r->listener->ring, ring_set_of(r)};
    int restored, forgotten;

    r->target = beacon_balancer_open(pconf, r->s, r->bal->name,
                                     registry_key(pconf, r), &policy);
    if (r->target == NULL) {
        return APR_EGENERAL;
    }
    restored = beacon_balancer_restore(r->target, pconf, &forgotten);
    if (restored > 0 || forgotten > 0) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00011)
                     "restored %d member(s) of balancer://%s from the "
                     "registry; forgot %d silent past ProxyBeaconForget",
                     restored, r->bal->name, forgotten);
    }
    return APR_SUCCESS;
}

static void warn_short_timeout(const beacon_receiver *r)
{
    apr_interval_time_t timeout = r->conf->timeout.value;

    if (timeout > 0 && timeout < HANDOFF_GAP) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, r->s, BCNLOGNO(00012)
                     "ProxyBeaconTimeout %" APR_TIME_T_FMT " ms is shorter "
                     "than a watchdog hand-off (about 10 s) plus the "
                     "senders' interval: announcements lost in a "
                     "hand-off can evict live members; 15 s or more is "
                     "safer", apr_time_as_msec(timeout));
    }
}

/* The shared memory of a receiver's lane of capacity urls: its status
 * records, and with a balancer its registry and claims. */
static apr_size_t lane_shm(unsigned capacity, int balancer)
{
    return beacon_shm_status_size(capacity) +
           (balancer ? beacon_registry_bytes(capacity) : 0);
}

apr_size_t beacon_receiver_shm(const beacon_server_conf *conf)
{
    int i, n = beacon_config_balancer_count(conf);
    apr_size_t bytes = n ? 0 : lane_shm(beacon_config_balancer_capacity(NULL), 0);

    for (i = 0; i < n; i++) {
        bytes += lane_shm(beacon_config_balancer_capacity(
                              beacon_config_balancer_at(conf, i)), 1);
    }
    return bytes;
}

/* Receiver i of listener l (its balancer i; log-only: none). */
static beacon_receiver *make_lane(apr_pool_t *pconf, beacon_receiver *l, int i)
{
    beacon_receiver *r = i == 0 ? l : apr_pcalloc(pconf, sizeof(*r));
    unsigned capacity;

    r->s = l->s;
    r->conf = l->conf;
    r->bind_host = l->bind_host;
    r->bind_port = l->bind_port;
    r->label = l->label;
    r->listener = l;
    if (beacon_config_balancer_count(l->conf) > 0) {
        r->bal = beacon_config_balancer_at(l->conf, i);
        r->service = beacon_config_balancer_service(l->conf, i);
    }
    else {
        r->service = l->conf->service;
    }
    capacity = beacon_config_balancer_capacity(r->bal);
    r->shared = beacon_shm_status_create(pconf, r->s, capacity);
    if (r->bal) {
        /* what memory grows with is the operator's to see: slots= */
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00210)
                     "balancer://%s holds %u urls: %" APR_SIZE_T_FMT " KiB "
                     "of shared memory (status records, member registry, "
                     "claims)", r->bal->name, capacity,
                     lane_shm(capacity, 1) / 1024);
    }
    l->lanes[i] = r;
    return r->shared ? r : NULL;
}

/* The route table of listener l's balancers that route contexts, made
 * before any child exists: every child finds it in the virtual host's
 * configuration. */
static apr_status_t open_routes(apr_pool_t *pconf, beacon_receiver *l)
{
    beacon_route_lane *lanes;
    int i, failed;

    lanes = apr_pcalloc(pconf, sizeof(*lanes) * (apr_size_t)l->nlanes);
    for (i = 0; i < l->nlanes; i++) {
        const beacon_balancer_conf *bal = l->lanes[i]->bal;

        if (bal == NULL) {
            return APR_SUCCESS; /* log-only: one lane, no balancer */
        }
        lanes[i].name = bal->name;
        lanes[i].contexts = bal->contexts;
        lanes[i].target = l->lanes[i]->target;
        lanes[i].entries = beacon_config_balancer_capacity(bal);
    }
    l->routes = beacon_routes_table_open(pconf, l->s, l->label, lanes, l->nlanes,
                                   &failed);
    l->conf->routes = l->routes;
    return failed ? APR_EGENERAL : APR_SUCCESS;
}

/* One ProxyBeaconListen: its receivers, one per balancer, appended at
 * *tail; NULL when one of them cannot be had (logged). */
static beacon_receiver *make_listener(apr_pool_t *pconf, server_rec *s,
                                      beacon_server_conf *conf,
                                      beacon_receiver ***tail)
{
    beacon_receiver *l = apr_pcalloc(pconf, sizeof(*l));
    const char *err;
    int i;

    l->s = s;
    l->conf = conf;
    /* check_config made sure there is a port */
    beacon_receiver_address(pconf, s, conf, &l->bind_host, &l->bind_port);
    l->label = beacon_receiver_label(pconf, l->bind_host, l->bind_port);
    l->nlanes = beacon_config_balancer_count(conf) > 0
                    ? beacon_config_balancer_count(conf) : 1;
    l->lanes = apr_pcalloc(pconf, sizeof(beacon_receiver *) * (apr_size_t)l->nlanes);
    l->lane_of = apr_pcalloc(pconf, sizeof(int) * (apr_size_t)l->nlanes);
    l->ring = apr_palloc(pconf, sizeof(*l->ring));
    if ((err = beacon_config_receiver_ring(conf, l->ring, l->lane_of,
                                           &l->default_lane)) != NULL) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00144)
                     "the receiver of udp %s cannot verify its services: %s",
                     l->label, err);
        return NULL;
    }
    for (i = 0; i < l->nlanes; i++) {
        beacon_receiver *r = make_lane(pconf, l, i);

        if (r == NULL || (r->bal && attach_balancer(r, pconf) != APR_SUCCESS)) {
            return NULL;
        }
        **tail = r;
        *tail = &r->next;
        receiver_count++;
    }
    warn_short_timeout(l);
    return open_routes(pconf, l) == APR_SUCCESS ? l : NULL;
}

/*
 * The receivers' sockets, bound by the parent and kept in the process
 * pool across generations (as httpd keeps its listeners), found again by
 * bind address; a socket no receiver names any more is closed first, so
 * that its address is free for a new one as soon as the old children exit.
 */
static void keep_sockets(apr_pool_t *process_pool, server_rec *main_s)
{
    beacon_kept_sockets *kept = beacon_inbox_kept_begin(process_pool);
    beacon_receiver *r;

    for (r = receivers; r; r = r->next) {
        if (r->listener == r) {
            r->sock = beacon_inbox_kept_claim(kept, r->bind_host, r->bind_port);
        }
    }
    beacon_inbox_kept_release(kept, main_s);
    for (r = receivers; r; r = r->next) {
        if (r->listener == r && r->sock == NULL) {
            r->sock = beacon_inbox_kept_open(kept, r->s, r->bind_host, r->bind_port,
                                             r->label);
        }
    }
}

static apr_status_t register_watchdog(apr_pool_t *pconf, server_rec *s);

apr_status_t beacon_receiver_post_config(apr_pool_t *pconf, server_rec *main_s)
{
    apr_pool_t *process_pool = main_s->process->pool; /* outlives pconf */
    beacon_receiver **tail = &receivers;
    server_rec *s;

    receivers = NULL;
    receiver_count = 0;
    for (s = main_s; s; s = s->next) {
        beacon_server_conf *conf = beacon_config_role(s, main_s);

        if (conf == NULL || !conf->listen_set) {
            continue;
        }
        if (make_listener(pconf, s, conf, &tail) == NULL) {
            return APR_EGENERAL;
        }
    }
    keep_sockets(process_pool, main_s);
    if (receiver_count && !beacon_worker_addresses_expire()) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, main_s, BCNLOGNO(00092)
                     "this httpd is older than 2.4.59 and keeps backend "
                     "addresses for ever: growth slots are not recycled, "
                     "each new url needs a free one");
    }
    return receiver_count ? register_watchdog(pconf, main_s) : APR_SUCCESS;
}

/*
 * The owner keeps the admin's settings once a second; an edit typed into
 * balancer-manager, or a route announced, in the second before a graceful
 * restart or a stop would be lost. So the parent takes them once more as
 * the generation ends: in a cleanup of pconf registered after
 * mod_slotmem_shm's own, which therefore runs first (last in, first out),
 * while the balancer's and the registry's shared memory are still there
 * and before the registry is written to its persisted file. Only the
 * parent that registered it acts.
 */
typedef struct {
    beacon_receiver *receivers;
    pid_t parent;
} stop_keeper;

static apr_status_t keep_at_stop(void *data)
{
    const stop_keeper *k = data;
    beacon_receiver *r;

    if (getpid() != k->parent) {
        return APR_SUCCESS;
    }
    for (r = k->receivers; r; r = r->next) {
        if (r->target) {
            beacon_balancer_keep_at_stop(r->target);
        }
    }
    return APR_SUCCESS;
}

void beacon_receiver_keep_at_stop(apr_pool_t *pconf)
{
    stop_keeper *k;

    if (receivers == NULL) {
        return;
    }
    k = apr_palloc(pconf, sizeof(*k));
    k->receivers = receivers;
    k->parent = getpid();
    apr_pool_cleanup_register(pconf, k, keep_at_stop, apr_pool_cleanup_null);
}

/* ------------------------------------------------------------------ */
/* The watchdog thread                                                 */

/*
 * Once a restart has begun, the next generation's owner reads the socket
 * the parent keeps: what arrives from then on waits in its buffer, so
 * that it is applied to what the new generation restores, not to the
 * balancer of this one, which is being replaced.
 */
static int should_stop(void)
{
    int state = AP_MPMQ_STOPPING;

    return stop_requested || beacon_util_generation_replaced() ||
           ap_mpm_query(AP_MPMQ_MPM_STATE, &state) != APR_SUCCESS ||
           state == AP_MPMQ_STOPPING;
}

/* " for balancer://a, balancer://b (service s)", or log-only's words. */
static const char *listens_for(apr_pool_t *p, const beacon_receiver *l)
{
    const char *what = "";
    int i;

    if (l->bal == NULL) {
        return " (log-only: no ProxyBeaconBalancer)";
    }
    for (i = 0; i < l->nlanes; i++) {
        const beacon_receiver *r = l->lanes[i];

        what = apr_pstrcat(p, what, i ? ", " : " for ", "balancer://",
                           r->bal->name, r->service ? " (service " : "",
                           r->service ? r->service : "", r->service ? ")" : "",
                           NULL);
    }
    return what;
}

static void open_sockets(apr_time_t now, apr_pool_t *p)
{
    beacon_receiver *r;
    int i;

    for (r = receivers; r; r = r->next) {
        if (r->listener != r || !beacon_inbox_open(r->inbox, now, owner_since)) {
            continue;
        }
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, r->s, BCNLOGNO(00050)
                     "listening for beacons on udp %s%s", r->label,
                     listens_for(p, r));
        for (i = 0; i < r->nlanes; i++) {
            r->lanes[i]->shared->listening = 1;
        }
    }
}

static apr_pollfd_t *poll_set(apr_pool_t *p, int *n)
{
    apr_pollfd_t *fds = apr_pcalloc(p, sizeof(*fds) * receiver_count);
    beacon_receiver *r;

    *n = 0;
    for (r = receivers; r; r = r->next) {
        apr_socket_t *sock = r->listener == r ? beacon_inbox_socket(r->inbox)
                                              : NULL;

        if (sock) {
            fds[*n].p = p;
            fds[*n].desc_type = APR_POLL_SOCKET;
            fds[*n].reqevents = APR_POLLIN;
            fds[*n].desc.s = sock;
            fds[*n].client_data = r;
            (*n)++;
        }
    }
    return fds;
}

static void wait_until(apr_time_t due, apr_time_t now, apr_interval_time_t *wait)
{
    if (due != 0 && due - now < *wait) {
        *wait = due > now ? due - now : 0;
    }
}

/* How long the loop may wait: until the next lease deadline or route
 * rebuild, at most WAIT_CAP, so that a stop request is seen promptly. */
static apr_interval_time_t wait_bound(apr_time_t now)
{
    apr_interval_time_t wait = WAIT_CAP;
    beacon_receiver *r;

    for (r = receivers; r; r = r->next) {
        wait_until(beacon_table_next_deadline(r->table), now, &wait);
        wait_until(beacon_members_due(r), now, &wait);
    }
    return wait;
}

/* One wake of the loop: bind what is due, wait, read, expire, publish. */
static void serve_once(apr_pool_t *scratch)
{
    apr_time_t now = apr_time_now();
    apr_int32_t ready = 0;
    apr_pollfd_t *fds;
    beacon_receiver *r;
    int i, n;

    open_sockets(now, scratch);
    fds = poll_set(scratch, &n);
    if (n == 0) {
        apr_sleep(wait_bound(now));
    }
    else if (apr_poll(fds, n, &ready, wait_bound(now)) == APR_SUCCESS &&
             !should_stop()) {
        for (i = 0; i < n; i++) {
            if (fds[i].rtnevents & APR_POLLIN) {
                r = fds[i].client_data;
                beacon_inbox_drain(r->inbox, beacon_members_handle, r, scratch);
            }
        }
    }
    now = apr_time_now();
    for (r = receivers; r; r = r->next) {
        beacon_members_tick(r, now, scratch);
    }
}

static void serve_until_stopped(void)
{
    apr_pool_t *scratch;

    apr_atomic_set32(&serving, 1);
    apr_pool_create(&scratch, owner_pool);
    while (!should_stop()) {
        serve_once(scratch);
        apr_pool_clear(scratch);
    }
    apr_pool_destroy(scratch);
    apr_atomic_set32(&serving, 0);
}

static apr_status_t destroy_owner_pool(void *pool)
{
    apr_pool_destroy(pool);
    return APR_SUCCESS;
}

/*
 * The owner's memory has an allocator of its own, so that it goes back to
 * the system, not to a free list, when the watchdog thread ends (at a
 * graceful stop, before the child's last requests are done): nothing a
 * request thread may still use can live here, and a sanitizer sees it if
 * something does.
 */
static void make_owner_pool(apr_pool_t *tick)
{
    apr_allocator_t *allocator;

    apr_allocator_create(&allocator);
    apr_allocator_max_free_set(allocator, 1); /* keep no free nodes */
    apr_pool_create_unmanaged_ex(&owner_pool, NULL, allocator);
    apr_allocator_owner_set(allocator, owner_pool);
    apr_pool_tag(owner_pool, "proxy_beacon_owner");
    apr_pool_cleanup_register(apr_pool_parent_get(tick), owner_pool,
                              destroy_owner_pool, apr_pool_cleanup_null);
}

static void take_ownership(apr_pool_t *tick)
{
    apr_time_t now = apr_time_now();
    beacon_receiver *r;

    make_owner_pool(tick);
    for (r = receivers; r; r = r->next) {
        beacon_members_start(r, owner_pool, now, tick);
    }
}

static apr_status_t watchdog_callback(int state, void *data, apr_pool_t *tick)
{
    (void)data;
    switch (state) {
    case AP_WATCHDOG_STATE_STARTING:
        beacon_util_block_stop_signals();
        owner_since = apr_time_now();
        break;
    case AP_WATCHDOG_STATE_RUNNING:
        /* The first tick can come before mod_proxy's child_init. */
        if (!child_ready) {
            break;
        }
        if (!owner_started) {
            owner_started = 1;
            /* adopting touches the balancer too: a child stopping now
             * waits for it as for the serving loop (stop_serving) */
            apr_atomic_set32(&serving, 1);
            take_ownership(tick);
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
    apr_status_t rv = beacon_util_watchdog_start(pconf, WATCHDOG_NAME, WAIT_CAP,
                                                 NULL, watchdog_callback);

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

void beacon_receiver_child_init(apr_pool_t *pchild)
{
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
void beacon_receiver_sync_all(void)
{
    beacon_receiver *r;

    for (r = receivers; r; r = r->next) {
        if (r->target) {
            beacon_balancer_sync(r->target);
        }
    }
}

int beacon_receiver_views(apr_pool_t *p, const server_rec *only,
                          beacon_receiver_view **views)
{
    beacon_receiver *r;
    int n = 0;

    *views = apr_pcalloc(p, sizeof(**views) * (receiver_count + 1));
    for (r = receivers; r; r = r->next) {
        if (!beacon_util_view_shows(only, r->s)) {
            continue;
        }
        (*views)[n].s = r->s;
        (*views)[n].conf = r->conf;
        (*views)[n].label = r->label;
        (*views)[n].balancer = r->bal ? r->bal->name : NULL;
        (*views)[n].service = r->service;
        (*views)[n].allow = r->bal ? r->bal->allow : NULL;
        (*views)[n].shares_listener = r->listener->nlanes > 1;
        (*views)[n].target = r->target;
        (*views)[n].shared = r->shared;
        n++;
    }
    return n;
}
