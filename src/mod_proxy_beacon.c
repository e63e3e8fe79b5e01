/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * mod_proxy_beacon: backends announce themselves over signed UDP and become
 * members of a mod_proxy_balancer balancer; silent ones leave rotation.
 *
 * This file holds the module record, the directives and the hooks. Every
 * mistake an operator can make in the configuration is reported by
 * "apache2 -t", from the directive handlers or from check_config.
 */

#include "mod_proxy_beacon.h"

#include <apr_strings.h>
#include <ap_provider.h>
#include <ap_slotmem.h>
#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <mpm_common.h>
#include <mod_watchdog.h>
#include <pthread.h>
#include <signal.h>

beacon_server_conf *beacon_conf(const server_rec *s)
{
    return ap_get_module_config(s->module_config, &proxy_beacon_module);
}

static const char *where_of(cmd_parms *cmd)
{
    return apr_psprintf(cmd->pool, "%s:%d", cmd->directive->filename,
                        cmd->directive->line_num);
}

/* Key material leaves no trace in memory httpd frees at a restart. */
static apr_status_t wipe_keys(void *data)
{
    beacon_server_conf *conf = data;
    unsigned i;

    for (i = 0; i < BEACON_MAX_KEYS; i++) {
        beacon_key_wipe(&conf->keys[i]);
    }
    return APR_SUCCESS;
}

static void *create_server_conf(apr_pool_t *p, server_rec *s)
{
    beacon_server_conf *conf = apr_pcalloc(p, sizeof(*conf));

    (void)s;
    conf->max_skew = BEACON_DEFAULT_MAX_SKEW;
    conf->interval = BEACON_DEFAULT_INTERVAL;
    return conf;
}

/* Roles (listen, balancer, targets, advertise) belong to the server that
 * names them; the secret and the timings are inherited. */
static void *merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    beacon_server_conf *base = basev, *add = addv;
    beacon_server_conf *conf = apr_pmemdup(p, add, sizeof(*conf));

    if (add->nkeys == 0) {
        memcpy(conf->keys, base->keys, sizeof(conf->keys));
        conf->nkeys = base->nkeys;
    }
    if (conf->nkeys) {
        apr_pool_cleanup_register(p, conf, wipe_keys, apr_pool_cleanup_null);
    }
    if (!add->timeout_set) {
        conf->timeout = base->timeout;
        conf->timeout_set = base->timeout_set;
    }
    if (!add->max_skew_set) {
        conf->max_skew = base->max_skew;
        conf->max_skew_set = base->max_skew_set;
    }
    if (!add->interval_set) {
        conf->interval = base->interval;
        conf->interval_set = base->interval_set;
    }
    return conf;
}

/* ------------------------------------------------------------------ */
/* Directives                                                          */

static beacon_server_conf *cmd_conf(cmd_parms *cmd)
{
    return beacon_conf(cmd->server);
}

/* "tcp://host:port" is accepted like "host:port", as in httpd's Listen. */
static const char *strip_scheme(const char *arg)
{
    const char *sep = strstr(arg, "://");

    return sep ? sep + 3 : arg;
}

static const char *parse_port(cmd_parms *cmd, const char *s, apr_port_t *port)
{
    char *end;
    apr_int64_t n = apr_strtoi64(s, &end, 10);

    if (*s < '0' || *s > '9' || *end != '\0' || n < 1 || n > 65535) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a port (1-65535)",
                            cmd->cmd->name, s);
    }
    *port = (apr_port_t)n;
    return NULL;
}

/* "[addr][:port]": either part may be missing; IPv6 in brackets. */
static const char *parse_listen_address(cmd_parms *cmd, const char *arg,
                                        const char **host, apr_port_t *port)
{
    char *addr = NULL, *scope = NULL;
    apr_port_t p = 0;

    arg = strip_scheme(arg);
    if (arg[0] == ':') {
        *host = NULL;
        return parse_port(cmd, arg + 1, port);
    }
    if (apr_parse_addr_port(&addr, &scope, &p, arg, cmd->pool) != APR_SUCCESS ||
        addr == NULL || scope != NULL) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not [address][:port]",
                            cmd->cmd->name, arg);
    }
    *host = addr;
    *port = p;
    return NULL;
}

static const char *set_listen(cmd_parms *cmd, void *dummy, int argc,
                              char *const argv[])
{
    beacon_server_conf *conf = cmd_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);

    (void)dummy;
    if (err) {
        return err;
    }
    if (conf->listen_set) {
        return "ProxyBeaconListen: may only be given once per server";
    }
    if (argc > 1) {
        return "ProxyBeaconListen: takes at most one [address][:port]";
    }
    if (argc == 1 && (err = parse_listen_address(cmd, argv[0], &conf->listen_host,
                                                 &conf->listen_port))) {
        return err;
    }
    conf->listen_set = 1;
    conf->where = where_of(cmd);
    return NULL;
}

static const char *set_balancer(cmd_parms *cmd, void *dummy, const char *arg)
{
    beacon_server_conf *conf = cmd_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);

    (void)dummy;
    if (err) {
        return err;
    }
    if (strncasecmp(arg, "balancer://", 11) == 0) {
        arg += 11;
    }
    if (*arg == '\0' || strchr(arg, '/')) {
        return "ProxyBeaconBalancer: expects a balancer name, e.g. 'cluster' "
               "or 'balancer://cluster'";
    }
    conf->balancer_name = apr_pstrdup(cmd->pool, arg);
    conf->balancer_where = where_of(cmd);
    return NULL;
}

static const char *parse_interval(cmd_parms *cmd, const char *arg,
                                  apr_interval_time_t *out, int allow_zero)
{
    apr_interval_time_t t;

    if (ap_timeout_parameter_parse(arg, &t, "s") != APR_SUCCESS || t < 0 ||
        (t == 0 && !allow_zero)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a %sinterval (e.g. 30, "
                            "30s, 500ms)", cmd->cmd->name, arg,
                            allow_zero ? "" : "positive ");
    }
    *out = t;
    return NULL;
}

static const char *set_timeout(cmd_parms *cmd, void *dummy, const char *arg)
{
    beacon_server_conf *conf = cmd_conf(cmd);

    (void)dummy;
    conf->timeout_set = 1;
    return parse_interval(cmd, arg, &conf->timeout, 1);
}

static const char *set_max_skew(cmd_parms *cmd, void *dummy, const char *arg)
{
    beacon_server_conf *conf = cmd_conf(cmd);

    (void)dummy;
    conf->max_skew_set = 1;
    return parse_interval(cmd, arg, &conf->max_skew, 0);
}

/*
 * "file:/path": the secret is the file's first line, read now, while the
 * server still runs as root, so the file can be 0600 and the configuration
 * world-readable. The line is wiped once parsed.
 */
static const char *read_secret_file(cmd_parms *cmd, const char *name,
                                    char *line, apr_size_t size)
{
    const char *path = ap_server_root_relative(cmd->temp_pool, name);
    apr_finfo_t finfo = {0};
    apr_file_t *f;
    apr_size_t n = size - 1;
    apr_status_t rv;

    if (path == NULL || *name == '\0') {
        return "ProxyBeaconSecret: file: needs a path";
    }
    rv = apr_file_open(&f, path, APR_FOPEN_READ, 0, cmd->temp_pool);
    if (rv == APR_SUCCESS) {
        rv = apr_file_info_get(&finfo, APR_FINFO_PROT, f);
        if (rv == APR_SUCCESS) {
            rv = apr_file_read(f, line, &n);
        }
        apr_file_close(f);
    }
    if (rv != APR_SUCCESS && !APR_STATUS_IS_EOF(rv)) {
        return apr_psprintf(cmd->pool, "ProxyBeaconSecret: cannot read %s: %pm",
                            path, &rv);
    }
    line[APR_STATUS_IS_EOF(rv) ? 0 : n] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (finfo.protection & APR_FPROT_WREAD) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, cmd->server, BCNLOGNO(00081)
                     "ProxyBeaconSecret: %s is readable by every user; make it "
                     "readable by root only (chmod 600)", path);
    }
    return NULL;
}

static const char *set_secret(cmd_parms *cmd, void *dummy, const char *arg)
{
    beacon_server_conf *conf = cmd_conf(cmd);
    char line[1024];
    const char *err = NULL;

    (void)dummy;
    if (conf->nkeys == BEACON_MAX_KEYS) {
        return "ProxyBeaconSecret: at most 4 per server (the first signs, "
               "a receiver accepts any)";
    }
    if (strncmp(arg, "file:", 5) == 0) {
        err = read_secret_file(cmd, arg + 5, line, sizeof(line));
        arg = line;
    }
    if (err == NULL && (err = beacon_key_parse(arg, &conf->keys[conf->nkeys]))) {
        err = apr_pstrcat(cmd->pool, "ProxyBeaconSecret: ", err, NULL);
    }
    beacon_wipe(line, sizeof(line)); /* the stack copy of a file's secret */
    if (err) {
        return err;
    }
    if (conf->nkeys++ == 0) {
        apr_pool_cleanup_register(cmd->pool, conf, wipe_keys,
                                  apr_pool_cleanup_null);
    }
    return NULL;
}

static const char *set_address(cmd_parms *cmd, void *dummy, int argc,
                               char *const argv[])
{
    beacon_server_conf *conf = cmd_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);
    int i;

    (void)dummy;
    if (err) {
        return err;
    }
    if (argc < 1 || argc > BEACON_MAX_SENDER_TARGETS) {
        return "ProxyBeaconAddress: expects 1 to 16 host:port targets";
    }
    if (conf->targets == NULL) {
        conf->targets = apr_array_make(cmd->pool, argc, sizeof(const char *));
    }
    for (i = 0; i < argc; i++) {
        const char *target = strip_scheme(argv[i]);

        if ((err = beacon_sender_check_target(cmd->temp_pool, target))) {
            return apr_psprintf(cmd->pool, "%s ('%s')", err, argv[i]);
        }
        APR_ARRAY_PUSH(conf->targets, const char *) = target;
    }
    conf->where = where_of(cmd);
    return NULL;
}

static const char *set_advertise(cmd_parms *cmd, void *dummy, const char *arg)
{
    beacon_server_conf *conf = cmd_conf(cmd);
    char canonical[BEACON_URL_MAX];
    const char *err;

    (void)dummy;
    err = beacon_url_canonicalize(arg, strlen(arg), canonical, sizeof(canonical));
    if (err) {
        return apr_psprintf(cmd->pool, "ProxyBeaconAdvertise: '%s': %s",
                            ap_escape_logitem(cmd->temp_pool, arg), err);
    }
    conf->advertise = apr_pstrdup(cmd->pool, canonical);
    return NULL;
}

static const char *set_interval(cmd_parms *cmd, void *dummy, const char *arg)
{
    beacon_server_conf *conf = cmd_conf(cmd);

    (void)dummy;
    conf->interval_set = 1;
    return parse_interval(cmd, arg, &conf->interval, 0);
}

static const command_rec beacon_cmds[] = {
    AP_INIT_TAKE_ARGV("ProxyBeaconListen", set_listen, NULL, RSRC_CONF,
        "[address][:port]: receive beacons on this UDP address; missing "
        "parts are this server's own"),
    AP_INIT_TAKE1("ProxyBeaconBalancer", set_balancer, NULL, RSRC_CONF,
        "the balancer (name or balancer://name) announced backends join; "
        "without it the receiver only logs"),
    AP_INIT_TAKE1("ProxyBeaconTimeout", set_timeout, NULL, RSRC_CONF,
        "silence after which a member is disabled (default 0: never)"),
    AP_INIT_TAKE1("ProxyBeaconMaxSkew", set_max_skew, NULL, RSRC_CONF,
        "how far an announcement's timestamp may be from the clock "
        "(default 30s)"),
    AP_INIT_TAKE1("ProxyBeaconSecret", set_secret, NULL, RSRC_CONF,
        "shared secret: hex: and 32 hex digits, a passphrase of 16 bytes or "
        "more, or file:/path holding either; up to 4 (the first signs)"),
    AP_INIT_TAKE_ARGV("ProxyBeaconAddress", set_address, NULL, RSRC_CONF,
        "host:port [host:port ...]: the proxies this backend announces "
        "itself to"),
    AP_INIT_TAKE1("ProxyBeaconAdvertise", set_advertise, NULL, RSRC_CONF,
        "this backend's origin as the proxies should reach it, "
        "scheme://host[:port]"),
    AP_INIT_TAKE1("ProxyBeaconInterval", set_interval, NULL, RSRC_CONF,
        "time between announcements (default 5s)"),
    {NULL}
};

/* ------------------------------------------------------------------ */
/* Cross-directive checks: they run under "apache2 -t" too             */

static const char *receiver_problem(apr_pool_t *p, server_rec *s,
                                    beacon_server_conf *conf)
{
    if (conf->nkeys == 0) {
        return "ProxyBeaconSecret is required";
    }
    if (!beacon_proxy_linked()) {
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
    if (conf->balancer_name) {
        return beacon_proxy_check_balancer(p, s, conf->balancer_name);
    }
    return NULL;
}

static int check_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                        server_rec *main_s)
{
    server_rec *s;
    int rc = OK;

    (void)pconf;
    (void)plog;
    for (s = main_s; s; s = s->next) {
        beacon_server_conf *conf = beacon_conf(s);
        const char *problem = NULL;

        if (conf->listen_set && conf->targets) {
            problem = "ProxyBeaconListen and ProxyBeaconAddress cannot both "
                      "be set in one server: a server is a receiver or a "
                      "sender";
        }
        else if (conf->listen_set) {
            problem = receiver_problem(ptemp, s, conf);
        }
        else if (conf->targets && conf->nkeys == 0) {
            problem = "ProxyBeaconSecret is required";
        }
        else if (conf->targets &&
                 !APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance)) {
            problem = "mod_watchdog is required by ProxyBeaconAddress";
        }
        else if (conf->balancer_name) {
            problem = "ProxyBeaconBalancer needs ProxyBeaconListen in the "
                      "same server";
            conf->where = conf->balancer_where;
        }
        if (problem) {
            ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s, BCNLOGNO(00080)
                         "%s (%s)", problem, conf->where);
            rc = !OK;
        }
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
    if (beacon_receivers_post_config(pconf, ptemp, s) != APR_SUCCESS ||
        beacon_senders_post_config(pconf, s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

/*
 * For the watchdog threads that run our callbacks. prefork's children
 * stop from the handlers of these signals, which run the child_stopping
 * hook and the child's cleanups; they must run on the main thread, never
 * on a thread that holds a lane's lock or is inside the receiver's loop.
 * event and worker block them in every thread already.
 */
void beacon_block_stop_signals(void)
{
    sigset_t stop;

    sigemptyset(&stop);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, AP_SIG_GRACEFUL);
    sigaddset(&stop, AP_SIG_GRACEFUL_STOP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
}

static void child_init(apr_pool_t *pchild, server_rec *s)
{
    beacon_receivers_child_init(pchild, s);
    beacon_senders_child_init(pchild);
}

static int sync_on_request(request_rec *r)
{
    return beacon_receivers_sync_request(r->server);
}

static void register_hooks(apr_pool_t *p)
{
    /* after mod_proxy and the balancer set up their child state */
    static const char *const after_proxy[] = {"mod_proxy.c",
                                              "mod_proxy_balancer.c", NULL};

    (void)p;
    ap_hook_check_config(check_config, NULL, NULL, APR_HOOK_MIDDLE);
    /* after the balancer shared its workers, and before mod_watchdog's
     * post_config (APR_HOOK_LAST), or the callback registered never runs */
    ap_hook_post_config(post_config, after_proxy, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(child_init, after_proxy, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_stopping(beacon_senders_child_stopping, NULL, NULL,
                           APR_HOOK_MIDDLE);
    ap_hook_post_read_request(sync_on_request, NULL, NULL, APR_HOOK_MIDDLE);
    beacon_status_register_hooks();
}

/* Not AP_DECLARE_MODULE: mod_proxy_beacon.h already has APLOG_USE_MODULE. */
module AP_MODULE_DECLARE_DATA proxy_beacon_module = {
    STANDARD20_MODULE_STUFF,
    NULL,               /* per-directory config creator */
    NULL,               /* dir config merger */
    create_server_conf, /* server config creator */
    merge_server_conf,  /* server config merger */
    beacon_cmds,        /* command table */
    register_hooks,     /* set up other request processing hooks */
    AP_MODULE_FLAG_NONE /* flags */
};
