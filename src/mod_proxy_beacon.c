/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * mod_proxy_beacon: backends announce themselves over signed UDP and become
 * members of a mod_proxy_balancer balancer; silent ones leave rotation.
 *
 * This file is the one place that knows every part: the module record,
 * the hooks, and the checks across directives and modules, which run in
 * check_config so that "apache2 -t" reports every mistake an operator can
 * make in the configuration. The parts, and which way they depend: the map
 * of src/ in docs/development.md.
 */

#include "mod_proxy_beacon_balancer.h"
#include "mod_proxy_beacon_config.h"
#include "mod_proxy_beacon_receiver.h"
#include "mod_proxy_beacon_routing.h"
#include "mod_proxy_beacon_sender.h"
#include "mod_proxy_beacon_slots.h"
#include "mod_proxy_beacon_status.h"
#include "mod_proxy_beacon_worker.h"

#include <ap_mpm.h>
#include <ap_provider.h>
#include <ap_slotmem.h>
#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <mpm_common.h>

/* ------------------------------------------------------------------ */
/* Cross-directive checks: they run under "apache2 -t" too             */

/* Balancer i against those before it: one service, one balancer. */
static const char *service_clash(apr_pool_t *p, const beacon_server_conf *conf,
                                 int i)
{
    const char *service = beacon_config_balancer_service(conf, i);
    int j;

    for (j = 0; j < i; j++) {
        const char *other = beacon_config_balancer_service(conf, j);

        if (service && other && strcmp(service, other) == 0) {
            return apr_psprintf(p, "ProxyBeaconBalancer: service %s is already "
                                "the service of balancer://%s", service,
                                beacon_config_balancer_at(conf, j)->name);
        }
        if (service == NULL && other == NULL) {
            return apr_psprintf(p, "ProxyBeaconBalancer: balancer://%s already "
                                "takes the announcements without a service; "
                                "give balancer://%s a service=",
                                beacon_config_balancer_at(conf, j)->name,
                                beacon_config_balancer_at(conf, i)->name);
        }
    }
    return NULL;
}

/* Balancer i against those before it: no context both may claim, or its
 * route would depend on which member spoke last (nested ones coexist). */
static const char *contexts_clash(apr_pool_t *p, const beacon_server_conf *conf,
                                  int i)
{
    const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);
    unsigned ia, ib;
    int j;

    for (j = 0; bc->contexts && j < i; j++) {
        const beacon_balancer_conf *other = beacon_config_balancer_at(conf, j);

        if (other->contexts &&
            beacon_allow_conflict(other->contexts, bc->contexts, &ia, &ib)) {
            return apr_psprintf(p, "ProxyBeaconBalancer: contexts=%s of "
                                "balancer://%s and %s of balancer://%s claim "
                                "the same contexts (only contexts nested in "
                                "each other may be in two balancers)",
                                bc->contexts->entry[ib].text, bc->name,
                                other->contexts->entry[ia].text, other->name);
        }
    }
    return NULL;
}

/* The receiver's balancer must be defined in its server. */
static const char *undefined_balancer(apr_pool_t *p, server_rec *s,
                                      const char *name)
{
    if (beacon_worker_balancer_defined(p, s, name)) {
        return NULL;
    }
    return apr_psprintf(p, "ProxyBeaconBalancer: balancer://%s is not defined "
                        "in this server (define it with <Proxy balancer://%s> "
                        "or ProxyPass)", name, name);
}

/* Every ProxyBeaconBalancer line of a receiver: its balancer exists in
 * this server, each service has one balancer, and no context two. */
static const char *balancers_problem(apr_pool_t *p, server_rec *s,
                                     beacon_server_conf *conf)
{
    int i, n = beacon_config_balancer_count(conf);
    const char *problem;

    if (conf->service && n > 1) {
        return "ProxyBeaconService names the service of a receiver's only "
               "balancer: with several, give each its service= on its "
               "ProxyBeaconBalancer line";
    }
    if (conf->service && n == 1 && beacon_config_balancer_at(conf, 0)->service) {
        return "ProxyBeaconService and ProxyBeaconBalancer service= both "
               "name the balancer's service: keep one";
    }
    if (beacon_config_receiver_slots(conf) > BEACON_RECEIVER_SLOTS_MAX) {
        return apr_psprintf(p, "ProxyBeaconBalancer: the balancers of one "
                            "receiver reserve at most %d slots= in all, "
                            "these %u", BEACON_RECEIVER_SLOTS_MAX,
                            beacon_config_receiver_slots(conf));
    }
    for (i = 0; i < n; i++) {
        const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);

        if ((problem = undefined_balancer(p, s, bc->name)) != NULL ||
            (problem = service_clash(p, conf, i)) != NULL ||
            (problem = contexts_clash(p, conf, i)) != NULL) {
            conf->where = bc->where;
            return problem;
        }
    }
    return NULL;
}

/* The key ring a receiver's configuration gives, made in p as check_config
 * looks at it (beacon_config_receiver_ring's ring, lane and default lane;
 * err: NULL, or what the ring refused). */
typedef struct {
    beacon_ring_t *ring;
    int *lane;
    int none;
    const char *err;
} receiver_keys;

static receiver_keys keys_of_receiver(apr_pool_t *p,
                                      const beacon_server_conf *conf)
{
    receiver_keys k;

    k.ring = apr_palloc(p, sizeof(*k.ring));
    k.lane = apr_palloc(p, sizeof(int) *
                           (apr_size_t)(beacon_config_balancer_count(conf) + 1));
    k.err = beacon_config_receiver_ring(conf, k.ring, k.lane, &k.none);
    return k;
}

/* What the key ring refuses of a receiver's keys, services and
 * revocations (more than it holds), now rather than at its start. */
static const char *ring_problem(apr_pool_t *p, const beacon_server_conf *conf)
{
    receiver_keys k = keys_of_receiver(p, conf);

    return k.err ? apr_pstrcat(p, "the receiver's keys: ", k.err, NULL) : NULL;
}

static const char *receiver_problem(apr_pool_t *p, server_rec *s,
                                    beacon_server_conf *conf)
{
    const char *problem;

    if (conf->nkeys == 0) {
        return "ProxyBeaconSecret is required";
    }
    if (!beacon_worker_linked()) {
        return "mod_proxy is required by ProxyBeaconListen: load it "
               "before mod_proxy_beacon";
    }
    if (!ap_find_linked_module("mod_proxy_balancer.c")) {
        return "mod_proxy_balancer is required by ProxyBeaconListen";
    }
    if (!APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance)) {
        return "mod_watchdog is required by ProxyBeaconListen";
    }
    if (!ap_lookup_provider(AP_SLOTMEM_PROVIDER_GROUP, "shm",
                            AP_SLOTMEM_PROVIDER_VERSION)) {
        return "mod_slotmem_shm is required by ProxyBeaconListen";
    }
    if (conf->forget.set && conf->forget.value > 0 &&
        (conf->forget.value <= conf->timeout.value ||
         conf->forget.value <= 2 * conf->max_skew.value)) {
        /* a forgotten member's replay mark is gone: only a silence longer
         * than 2 x MaxSkew makes every datagram it sent stale */
        return apr_psprintf(p, "ProxyBeaconForget %" APR_TIME_T_FMT " s must "
                            "be longer than ProxyBeaconTimeout and than twice "
                            "ProxyBeaconMaxSkew (or 0: never)",
                            apr_time_sec(conf->forget.value));
    }
    if ((problem = beacon_params_check(p, s, conf->member_params)) != NULL) {
        return problem;
    }
    if ((problem = balancers_problem(p, s, conf)) != NULL) {
        return problem;
    }
    return ring_problem(p, conf); /* what the lines above do not say */
}

/* A receiver's balancer as check_config compares it with the others. */
typedef struct {
    const void *identity;
    const char *name;
    const char *where;
} balancer_seen;

/* A receiver as check_config compares it with the others. */
typedef struct {
    const char *host;          /* NULL: every address */
    apr_port_t port;
    const char *where;
} receiver_seen;

/* Two sockets on one port clash when either takes every address. */
static int same_udp(const receiver_seen *a, const receiver_seen *b)
{
    return a->port == b->port &&
           (a->host == NULL || b->host == NULL || !strcmp(a->host, "::") ||
            !strcmp(b->host, "::") || !strcmp(a->host, b->host));
}

/* A balancer of this receiver that another receiver feeds already: each
 * would call the other's members someone else's. Added to seen. */
static const char *balancer_clash(apr_pool_t *p, server_rec *s,
                                  beacon_server_conf *conf,
                                  apr_array_header_t *seen)
{
    int i, j;

    for (i = 0; i < beacon_config_balancer_count(conf); i++) {
        const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);
        balancer_seen me = {beacon_worker_balancer_identity(p, s, bc->name), bc->name,
                            bc->where};

        for (j = 0; j < seen->nelts; j++) {
            const balancer_seen *other = &APR_ARRAY_IDX(seen, j, balancer_seen);

            if (me.identity && me.identity == other->identity) {
                conf->where = bc->where;
                return apr_psprintf(p, "ProxyBeaconBalancer: balancer://%s has a "
                                    "receiver already (%s); one balancer takes "
                                    "one receiver", bc->name, other->where);
            }
        }
        APR_ARRAY_PUSH(seen, balancer_seen) = me;
    }
    return NULL;
}

/*
 * What cannot work with the receivers already seen: two on one UDP port
 * (the second would retry its bind for ever) or two managing one balancer.
 * The receiver itself is added to seen.
 */
static const char *receiver_clash(apr_pool_t *p, server_rec *s,
                                  beacon_server_conf *conf,
                                  apr_array_header_t *seen,
                                  apr_array_header_t *balancers)
{
    receiver_seen me = {NULL, 0, conf->where};
    int i;

    beacon_receiver_address(p, s, conf, &me.host, &me.port);
    if (me.port == 0) {
        return "ProxyBeaconListen: no port given and none to inherit from "
               "this server";
    }
    for (i = 0; i < seen->nelts; i++) {
        const receiver_seen *other = &APR_ARRAY_IDX(seen, i, receiver_seen);

        if (same_udp(&me, other)) {
            return apr_psprintf(p, "ProxyBeaconListen: udp %s is taken by "
                                "the receiver of %s already",
                                beacon_receiver_label(p, me.host, me.port),
                                other->where);
        }
    }
    APR_ARRAY_PUSH(seen, receiver_seen) = me;
    return balancer_clash(p, s, conf, balancers);
}

/*
 * mod_info's /server-info?config prints every directive with its
 * arguments: an inline secret there is readable by whoever may see that
 * page. Said once per configuration.
 */
static void warn_secret_on_server_info(server_rec *main_s)
{
    server_rec *s;

    if (!ap_find_linked_module("mod_info.c")) {
        return;
    }
    for (s = main_s; s; s = s->next) {
        const beacon_server_conf *conf = beacon_config_role(s, main_s);

        if (conf && conf->inline_secret && (conf->listen_set || conf->targets)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, main_s, BCNLOGNO(00082)
                         "ProxyBeaconSecret is written in the configuration "
                         "(%s) and mod_info is loaded: /server-info?config "
                         "shows it to whoever may read that page; use "
                         "ProxyBeaconSecret file:/path", conf->inline_secret);
            return;
        }
    }
}

/* A receiver's balancer without growth slots can take no member. */
static void warn_no_growth(apr_pool_t *p, server_rec *s,
                           const beacon_server_conf *conf)
{
    int i;

    for (i = 0; i < beacon_config_balancer_count(conf); i++) {
        const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);

        if (bc->slots == 0 && beacon_worker_balancer_growth(p, s, bc->name) == 0) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00083)
                         "ProxyBeaconBalancer: balancer://%s has no growth "
                         "slots, so no announced backend can join it; give it "
                         "some with slots=N on this line, or ProxySet growth=N "
                         "(%s)",
                         bc->name, bc->where);
        }
    }
}

/* A balancer beacon feeds, balanced by a method that undoes the lbfactor
 * its backends announce (load reports, slow start): which works instead. */
static void warn_lbmethod(apr_pool_t *p, server_rec *s,
                          const beacon_server_conf *conf)
{
    int i;

    for (i = 0; i < beacon_config_balancer_count(conf); i++) {
        const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);
        const char *lbmethod = beacon_worker_balancer_lbmethod(p, s, bc->name);
        const char *flaw = beacon_decide_lbmethod_flaw(lbmethod);

        if (flaw) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00220)
                         "ProxyBeaconBalancer: balancer://%s uses lbmethod=%s, "
                         "which serves the lbfactors its backends announce "
                         "badly (load reports, slow start): %s; use "
                         "lbmethod=byrequests (%s)", bc->name, lbmethod, flaw,
                         bc->where);
        }
    }
}

/* Services of one receiver that share a key are not kept apart: a holder
 * of that key can announce into either balancer. */
static void warn_shared_keys(apr_pool_t *p, server_rec *s,
                             const beacon_server_conf *conf)
{
    receiver_keys k = keys_of_receiver(p, conf);
    const beacon_ring_t *ring = k.ring;
    const int *lane = k.lane;
    const char *host;
    apr_port_t port;
    int a, b, none = k.none;

    if (k.err != NULL || !beacon_ring_shared_key(ring, &a, &b)) {
        return;
    }
    if (a < 0 && ring->service[b].nkeys == 0 && none >= 0) {
        /* the usual way in: a service line that forgot its secret= */
        const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, lane[b]);

        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00191)
                     "ProxyBeaconBalancer: balancer://%s (service=%s) has no "
                     "secret= and shares the receiver's ProxyBeaconSecret "
                     "with balancer://%s (no service=): anyone who holds it "
                     "can announce into both; give balancer://%s its own "
                     "secret= (%s)", bc->name, ring->service[b].name,
                     beacon_config_balancer_at(conf, none)->name, bc->name, bc->where);
        return;
    }
    beacon_receiver_address(p, s, conf, &host, &port);
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00143)
                 "ProxyBeaconBalancer: services %s and %s of receiver udp %s "
                 "share a key: no isolation between them (anyone who holds it "
                 "can announce into both); give each its own secret= (%s)",
                 a < 0 ? "(the receiver's ProxyBeaconSecret)" : ring->service[a].name,
                 ring->service[b].name, beacon_receiver_label(p, host, port),
                 beacon_config_balancer_at(conf, lane[b])->where);
}

/* What a receiver's configuration works with but will surprise. */
static void warn_about_receivers(apr_pool_t *p, server_rec *main_s)
{
    server_rec *s;

    for (s = main_s; s; s = s->next) {
        const beacon_server_conf *conf = beacon_config_role(s, main_s);

        if (conf && conf->listen_set) {
            warn_no_growth(p, s, conf);
            warn_lbmethod(p, s, conf);
            warn_shared_keys(p, s, conf);
        }
    }
}

/* A sender that advertises an address every receiver refuses unless its
 * ProxyBeaconAllow names it (link-local, unspecified, ...): it would
 * announce for ever and never join. */
static void warn_about_senders(server_rec *main_s)
{
    server_rec *s;

    for (s = main_s; s; s = s->next) {
        const beacon_server_conf *conf = beacon_config_role(s, main_s);
        const char *why;

        if (conf && conf->targets && conf->advertise &&
            (why = beacon_reach_refusal(NULL, conf->advertise, NULL)) != NULL) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00158)
                         "ProxyBeaconAdvertise %s: %s: receivers drop its "
                         "announcements (url not allowed)%s", conf->advertise,
                         why, beacon_url_is_reserved(conf->advertise)
                                  ? "" : " unless their ProxyBeaconAllow lists it");
        }
    }
}

/*
 * Warnings about a configuration that works but will surprise: said by
 * "apache2 -t" (from check_config), and in the error log of a server that
 * starts or restarts (from post_config: when check_config runs, the error
 * log is not open yet).
 */
static void warn_about_config(apr_pool_t *p, server_rec *main_s)
{
    warn_secret_on_server_info(main_s);
    warn_about_receivers(p, main_s);
    warn_about_senders(main_s);
}

/*
 * What only a sender announces of itself (ProxyBeaconRoute, -LBFactor,
 * -Contexts), named in a server that is none, where it would be ignored
 * without a word: the problem, with conf->where at its directive; NULL if
 * none is.
 */
static const char *announced_without_sender(apr_pool_t *p,
                                            beacon_server_conf *conf)
{
    const struct {
        const beacon_announced *field;
        const char *directive;
    } announced[] = {{&conf->route, "ProxyBeaconRoute"},
                     {&conf->lbfactor, "ProxyBeaconLBFactor"},
                     {&conf->ctx, "ProxyBeaconContexts"}};
    apr_size_t i;

    for (i = 0; i < sizeof(announced) / sizeof(announced[0]); i++) {
        if (announced[i].field->value) {
            conf->where = announced[i].field->where;
            return apr_pstrcat(p, announced[i].directive, " needs "
                               "ProxyBeaconAddress in the same server", NULL);
        }
    }
    return NULL;
}

/* What is wrong with the configuration of s, conf->where at the
 * directive named (as check_config reports it), or NULL. */
static const char *server_problem(apr_pool_t *p, server_rec *s,
                                  beacon_server_conf *conf,
                                  apr_array_header_t *seen,
                                  apr_array_header_t *balancers)
{
    const char *problem;

    if (conf->listen_set && conf->targets) {
        return "ProxyBeaconListen and ProxyBeaconAddress cannot both be set "
               "in one server: a server is a receiver or a sender";
    }
    if (!conf->targets &&
        (problem = announced_without_sender(p, conf)) != NULL) {
        return problem;
    }
    if (conf->listen_set) {
        problem = receiver_problem(p, s, conf);
        return problem ? problem
                       : receiver_clash(p, s, conf, seen, balancers);
    }
    if (conf->targets && conf->nkeys == 0) {
        return "ProxyBeaconSecret is required";
    }
    if (conf->targets && (conf->masters & 1u)) {
        return "ProxyBeaconSecret: a sender signs with its first secret, "
               "and derive: makes it a master, which signs nothing: give "
               "this backend its member key (beaconctl derive-key "
               "--service SVC --url URL prints it)";
    }
    if (conf->targets && !APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance)) {
        return "mod_watchdog is required by ProxyBeaconAddress";
    }
    if (beacon_config_balancer_count(conf) > 0) {
        conf->where = beacon_config_balancer_at(conf, 0)->where;
        return "ProxyBeaconBalancer needs ProxyBeaconListen in the same "
               "server";
    }
    return NULL;
}

static int check_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                        server_rec *main_s)
{
    apr_array_header_t *seen = apr_array_make(ptemp, 4, sizeof(receiver_seen));
    apr_array_header_t *balancers = apr_array_make(ptemp, 4, sizeof(balancer_seen));
    server_rec *s;
    apr_size_t shm = 0;
    int rc = OK;

    (void)pconf;
    (void)plog;
    if (ap_state_query(AP_SQ_RUN_MODE) != AP_SQ_RM_NORMAL) {
        warn_about_config(ptemp, main_s);
    }
    for (s = main_s; s; s = s->next) {
        beacon_server_conf *conf = beacon_config_role(s, main_s);
        const char *problem;

        if (conf == NULL) {
            continue;
        }
        problem = server_problem(ptemp, s, conf, seen, balancers);
        if (problem) {
            ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s, BCNLOGNO(00080)
                         "%s (%s)", problem, conf->where);
            rc = !OK;
        }
        if (conf->listen_set) {
            shm += beacon_receiver_shm(conf);
        }
    }
    if (shm > BEACON_SHM_MAX) {
        /* each balancer holds 256 urls besides its slots=: thousands of
         * balancers would take GiB nobody means to give */
        ap_log_error(APLOG_MARK, APLOG_EMERG, 0, main_s, BCNLOGNO(00211)
                     "ProxyBeaconBalancer: the receivers' balancers would "
                     "take %" APR_SIZE_T_FMT " MiB of shared memory, more "
                     "than %" APR_SIZE_T_FMT " MiB: feed fewer balancers "
                     "from them or reserve fewer slots=",
                     shm / BEACON_MIB, BEACON_SHM_MAX / BEACON_MIB);
        rc = !OK;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* Hooks                                                               */

static int post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                       server_rec *s)
{
    (void)plog;
    /* The first pass only checks the configuration; nothing to set up. */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    warn_about_config(ptemp, s);
    if (beacon_receiver_post_config(pconf, s) != APR_SUCCESS ||
        beacon_sender_post_config(pconf, s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

/* On an httpd that keeps a member's address for ever (before 2.4.59),
 * a reserved slot is taken once: said at start, once per balancer. */
static void note_slots_taken_once(server_rec *s, const beacon_balancer_conf *bc)
{
    if (!beacon_worker_addresses_expire()) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, BCNLOGNO(00155)
                     "balancer://%s reserves %d slots: on this httpd (older "
                     "than 2.4.59, which keeps a member's address for ever) "
                     "each is taken once, and a slot whose member left is "
                     "not given to another url before a restart", bc->name,
                     bc->slots);
    }
}

/*
 * Runs before mod_proxy_balancer's post_config, which gives each member
 * of a balancer its shared slot: the reserved slots (slots=) are defined
 * here, as members the configuration names, so that they get theirs.
 */
static int reserve_slots(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                         server_rec *main_s)
{
    server_rec *s;
    int i;

    (void)plog;
    (void)ptemp;
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK; /* no shared memory is set up in the first pass */
    }
    for (s = main_s; s; s = s->next) {
        const beacon_server_conf *conf = beacon_config_role(s, main_s);

        for (i = 0; conf && conf->listen_set && i < beacon_config_balancer_count(conf);
             i++) {
            const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);
            const char *err;

            if (bc->slots == 0) {
                continue;
            }
            err = beacon_slots_define(pconf, s, bc->name, bc->slots,
                                      conf->member_params);
            if (err != NULL) {
                ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, BCNLOGNO(00156)
                             "cannot reserve the slots of balancer://%s: %s "
                             "(%s)", bc->name, err, bc->where);
                return HTTP_INTERNAL_SERVER_ERROR;
            }
            note_slots_taken_once(s, bc);
        }
    }
    return OK;
}

/* Registered after mod_slotmem_shm's post_config: see
 * beacon_receiver_keep_at_stop. */
static int keep_at_stop(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                        server_rec *s)
{
    (void)plog;
    (void)ptemp;
    (void)s;
    if (ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG) {
        beacon_receiver_keep_at_stop(pconf);
    }
    return OK;
}

static void child_init(apr_pool_t *pchild, server_rec *s)
{
    (void)s;
    beacon_receiver_child_init(pchild);
    beacon_sender_child_init(pchild);
}

static int sync_on_request(request_rec *r)
{
    (void)r;
    beacon_receiver_sync_all();
    return DECLINED;
}

static void register_hooks(apr_pool_t *p)
{
    /* after mod_proxy and the balancer set up their state */
    static const char *const after_proxy[] = {"mod_proxy.c",
                                              "mod_proxy_balancer.c", NULL};
    /* mod_watchdog starts its instances in its own post_config: a
     * callback registered after that never runs */
    static const char *const before_watchdog[] = {"mod_watchdog.c", NULL};
    /* the balancer's shared slots are given out there */
    static const char *const before_balancer[] = {"mod_proxy_balancer.c", NULL};
    /* its pconf cleanup must run before mod_slotmem_shm's */
    static const char *const after_slotmem[] = {"mod_slotmem_shm.c", NULL};

    (void)p;
    ap_hook_check_config(check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(reserve_slots, NULL, before_balancer, APR_HOOK_MIDDLE);
    ap_hook_post_config(post_config, after_proxy, before_watchdog,
                        APR_HOOK_MIDDLE);
    ap_hook_post_config(keep_at_stop, after_slotmem, NULL, APR_HOOK_REALLY_LAST);
    ap_hook_child_init(child_init, after_proxy, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_stopping(beacon_sender_child_stopping, NULL, NULL,
                           APR_HOOK_MIDDLE);
    ap_hook_post_read_request(sync_on_request, NULL, NULL, APR_HOOK_MIDDLE);
    beacon_status_register_hooks();
    beacon_routing_register_hooks();
}

/* Not AP_DECLARE_MODULE: mod_proxy_beacon_util.h has APLOG_USE_MODULE. */
module AP_MODULE_DECLARE_DATA proxy_beacon_module = {
    STANDARD20_MODULE_STUFF,
    beacon_config_create_dir,    /* per-directory config creator */
    beacon_config_merge_dir,     /* dir config merger */
    beacon_config_create_server, /* server config creator */
    beacon_config_merge_server,  /* server config merger */
    beacon_cmds,               /* command table */
    register_hooks,     /* set up other request processing hooks */
    AP_MODULE_FLAG_NONE /* flags */
};
