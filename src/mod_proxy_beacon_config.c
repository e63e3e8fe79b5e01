/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The directives: each parses its value strictly and says what is wrong
 * in one line naming the directive, so "apache2 -t" reports it with file
 * and line. Values that are protocol (secrets, urls, addresses) are
 * checked by libbeacon's rules, the same that beaconctl applies.
 */

#include "mod_proxy_beacon_config.h"

#include <apr_strings.h>
#include <http_core.h>

beacon_server_conf *beacon_config_of(const server_rec *s)
{
    return ap_get_module_config(s->module_config, &proxy_beacon_module);
}

beacon_server_conf *beacon_config_role(const server_rec *s,
                                       const server_rec *main_s)
{
    beacon_server_conf *conf = beacon_config_of(s);

    return s == main_s || conf != beacon_config_of(main_s) ? conf : NULL;
}

int beacon_config_balancer_count(const beacon_server_conf *conf)
{
    return conf->balancers ? conf->balancers->nelts : 0;
}

const beacon_balancer_conf *beacon_config_balancer_at(const beacon_server_conf *conf,
                                                      int i)
{
    return &((const beacon_balancer_conf *)conf->balancers->elts)[i];
}

const char *beacon_config_balancer_service(const beacon_server_conf *conf, int i)
{
    const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);

    return bc->service ? bc->service
                       : beacon_config_balancer_count(conf) == 1 ? conf->service : NULL;
}

unsigned beacon_config_balancer_capacity(const beacon_balancer_conf *bc)
{
    return BEACON_TABLE_CAPACITY + (bc ? (unsigned)bc->slots : 0);
}

unsigned beacon_config_receiver_slots(const beacon_server_conf *conf)
{
    unsigned slots = 0;
    int i;

    for (i = 0; i < beacon_config_balancer_count(conf); i++) {
        slots += (unsigned)beacon_config_balancer_at(conf, i)->slots;
    }
    return slots;
}

const char *beacon_config_receiver_ring(const beacon_server_conf *conf,
                                        beacon_ring_t *ring, int *lane,
                                        int *default_lane)
{
    int i, n = beacon_config_balancer_count(conf);
    const char *err;

    beacon_ring_init(ring, conf->keys, conf->nkeys);
    beacon_ring_set_masters(ring, BEACON_SERVICE_DEFAULT, conf->masters);
    *default_lane = -1;
    for (i = 0; i < n; i++) {
        const beacon_balancer_conf *bc = beacon_config_balancer_at(conf, i);
        const char *service = beacon_config_balancer_service(conf, i);
        int set = (int)ring->nservices;

        if (service == NULL) {
            *default_lane = i;
            set = BEACON_SERVICE_DEFAULT;
        }
        else if ((err = beacon_ring_add(ring, service, bc->keys, bc->nkeys)) != NULL) {
            return err;
        }
        else {
            lane[set] = i;
            beacon_ring_set_masters(ring, set, bc->masters);
        }
        if ((err = beacon_revoke_into_ring(ring, set, bc->revoked)) != NULL) {
            return err;
        }
    }
    if ((err = beacon_revoke_into_ring(ring, BEACON_RING_EVERY_SET,
                                       conf->revoked)) != NULL) {
        return err;
    }
    if (n == 0 && conf->service &&
        (err = beacon_ring_add(ring, conf->service, NULL, 0)) != NULL) {
        return err; /* log-only, as ProxyBeaconService always was */
    }
    beacon_ring_require_service(ring, ring->nservices > 0 && *default_lane < 0);
    return NULL;
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
    int b;
    unsigned i;

    for (i = 0; i < BEACON_MAX_KEYS; i++) {
        beacon_key_wipe(&conf->keys[i]);
    }
    for (b = 0; b < beacon_config_balancer_count(conf); b++) {
        beacon_balancer_conf *bc = &((beacon_balancer_conf *)conf->balancers->elts)[b];

        for (i = 0; i < BEACON_MAX_KEYS; i++) {
            beacon_key_wipe(&bc->keys[i]);
        }
    }
    return APR_SUCCESS;
}

void *beacon_config_create_server(apr_pool_t *p, server_rec *s)
{
    beacon_server_conf *conf = apr_pcalloc(p, sizeof(*conf));

    (void)s;
    conf->max_skew.value = BEACON_DEFAULT_MAX_SKEW;
    conf->interval.value = BEACON_DEFAULT_INTERVAL;
    return conf;
}

/* Roles (listen, balancer, targets, advertise, what a sender announces of
 * itself) belong to the server that names them; the secret and the
 * timings are inherited. */
void *beacon_config_merge_server(apr_pool_t *p, void *basev, void *addv)
{
    beacon_server_conf *base = basev, *add = addv;
    beacon_server_conf *conf = apr_pmemdup(p, add, sizeof(*conf));

    if (add->nkeys == 0) {
        memcpy(conf->keys, base->keys, sizeof(conf->keys));
        conf->nkeys = base->nkeys;
        conf->masters = base->masters;
        conf->inline_secret = base->inline_secret;
    }
    conf->revoked = beacon_revoke_merge(p, base->revoked, add->revoked);
    if (conf->nkeys) {
        apr_pool_cleanup_register(p, conf, wipe_keys, apr_pool_cleanup_null);
    }
    conf->timeout = add->timeout.set ? add->timeout : base->timeout;
    conf->max_skew = add->max_skew.set ? add->max_skew : base->max_skew;
    conf->forget = add->forget.set ? add->forget : base->forget;
    conf->slowstart = add->slowstart.set ? add->slowstart : base->slowstart;
    conf->member_params = add->member_params ? add->member_params
                                             : base->member_params;
    conf->allow = add->allow ? add->allow : base->allow;
    conf->interval = add->interval.set ? add->interval : base->interval;
    return conf;
}

void *beacon_config_create_dir(apr_pool_t *p, char *dir)
{
    (void)dir;
    return apr_pcalloc(p, sizeof(beacon_dir_conf));
}

void *beacon_config_merge_dir(apr_pool_t *p, void *basev, void *addv)
{
    beacon_dir_conf *base = basev, *add = addv;
    beacon_dir_conf *conf = apr_pmemdup(p, add, sizeof(*conf));

    if (add->status_scope == BEACON_SCOPE_UNSET) {
        conf->status_scope = base->status_scope;
    }
    return conf;
}

int beacon_config_status_shows_all(const request_rec *r)
{
    const beacon_dir_conf *conf =
        ap_get_module_config(r->per_dir_config, &proxy_beacon_module);

    return conf->status_scope == BEACON_SCOPE_SERVER;
}

static beacon_server_conf *cmd_conf(cmd_parms *cmd)
{
    return beacon_config_of(cmd->server);
}

/* ------------------------------------------------------------------ */
/* Receiver                                                            */

static const char *set_listen(cmd_parms *cmd, void *dummy, int argc,
                              char *const argv[])
{
    beacon_server_conf *conf = cmd_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);
    char *host = NULL;

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
    if (argc == 1) {
        err = beacon_parse_host_port(cmd->pool, argv[0],
                                     BEACON_HP_ANY_HOST | BEACON_HP_PORT_OPTIONAL,
                                     &host, &conf->listen_port);
        if (err) {
            return apr_psprintf(cmd->pool, "ProxyBeaconListen: '%s' is not "
                                "[address][:port]: %s", argv[0], err);
        }
    }
    conf->listen_host = host;
    conf->listen_set = 1;
    conf->where = where_of(cmd);
    return NULL;
}

/*
 * ProxyBeaconTimeout, ProxyBeaconMaxSkew, ProxyBeaconForget,
 * ProxyBeaconInterval: one setter,
 * cmd->info says which field and its bounds. The upper bounds are far
 * beyond any use and keep every deadline (a clock value plus a few of
 * these) inside the 64-bit microsecond range.
 */
typedef struct {
    apr_size_t offset;          /* of the beacon_interval */
    int zero_ok;                /* 0 means "never" (the timeout) */
    apr_interval_time_t max;
    const char *max_text;
} interval_directive;

#define DAY apr_time_from_sec(24 * 3600)

static interval_directive timeout_of_receiver = {
    APR_OFFSETOF(beacon_server_conf, timeout), 1, 366 * DAY, "a year"};
static interval_directive max_skew_of_receiver = {
    APR_OFFSETOF(beacon_server_conf, max_skew), 0, DAY, "a day"};
apr_interval_time_t beacon_config_forget_interval(const beacon_server_conf *conf)
{
    apr_interval_time_t longer;

    if (conf->forget.set) {
        return conf->forget.value;
    }
    /* the default, unless the lease or the skew window call for longer */
    longer = conf->timeout.value + 2 * conf->max_skew.value + apr_time_from_sec(1);
    return longer > BEACON_DEFAULT_FORGET ? longer : BEACON_DEFAULT_FORGET;
}

static interval_directive forget_of_receiver = {
    APR_OFFSETOF(beacon_server_conf, forget), 1, 366 * DAY, "a year"};
static interval_directive slowstart_of_receiver = {
    APR_OFFSETOF(beacon_server_conf, slowstart), 1, DAY, "a day"};
static interval_directive interval_of_sender = {
    APR_OFFSETOF(beacon_server_conf, interval), 0, DAY, "a day"};

static const char *set_interval(cmd_parms *cmd, void *dummy, const char *arg)
{
    const interval_directive *rule = cmd->info;
    beacon_interval *slot = (beacon_interval *)((char *)cmd_conf(cmd) +
                                                rule->offset);
    apr_interval_time_t t;

    (void)dummy;
    if (ap_timeout_parameter_parse(arg, &t, "s") != APR_SUCCESS || t < 0 ||
        (t == 0 && !rule->zero_ok)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not %s interval (e.g. 30, "
                            "30s, 500ms)", cmd->cmd->name, arg,
                            rule->zero_ok ? "an" : "a positive");
    }
    if (t > rule->max) {
        return apr_psprintf(cmd->pool, "%s: '%s' is more than %s, the most "
                            "it may be", cmd->cmd->name, arg, rule->max_text);
    }
    slot->value = t;
    slot->set = 1;
    return NULL;
}


/* ------------------------------------------------------------------ */
/* Both                                                                */

/*
 * "file:/path": the secret is read now, while the server still runs as
 * root, so the file can be 0600 and the configuration world-readable.
 * What counts as the secret in the file is libbeacon's rule, the one
 * beaconctl --secret-file follows.
 */
/*
 * Who besides root can learn the secret from its file: anyone when every
 * user may read it, the file's group when the group may, and its owner
 * when that is not root (the user httpd starts as). NULL when nobody.
 */
static const char *secret_file_exposure(apr_pool_t *p, const apr_finfo_t *info)
{
    const char *who = NULL;

    if ((info->valid & APR_FINFO_PROT) && (info->protection & APR_FPROT_WREAD)) {
        who = "every user";
    }
    else if ((info->valid & APR_FINFO_PROT) &&
             (info->protection & APR_FPROT_GREAD)) {
        who = apr_psprintf(p, "its group (gid %ld)", (long)info->group);
    }
    if ((info->valid & APR_FINFO_USER) && info->user != 0) {
        who = apr_psprintf(p, "%s%sits owner (uid %ld)", who ? who : "",
                           who ? " and " : "", (long)info->user);
    }
    return who;
}

static const char *read_secret_file(cmd_parms *cmd, const char *name,
                                    beacon_key_use_t use,
                                    beacon_key_t *key)
{
    const char *path = ap_server_root_relative(cmd->temp_pool, name);
    const char *err, *who;
    apr_finfo_t info;

    if (path == NULL || *name == '\0') {
        return "file: needs a path";
    }
    err = beacon_key_read_file_as(cmd->temp_pool, path, use, key, &info);
    if (err == NULL &&
        (who = secret_file_exposure(cmd->temp_pool, &info)) != NULL) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, cmd->server, BCNLOGNO(00081)
                     "ProxyBeaconSecret: %s is readable by %s; make it owned "
                     "and readable by root only (chown root, chmod 600)",
                     path, who);
    }
    return err;
}

/* One key from a secret in any of ProxyBeaconSecret's forms; *inline_secret
 * set when it was written in the configuration itself, *master when it is
 * a master (derive:). NULL or why not. */
static const char *read_key(cmd_parms *cmd, const char *arg,
                            beacon_key_t *key, int *inline_secret,
                            unsigned *master)
{
    beacon_secret_source_t source;
    beacon_key_use_t use;
    const char *err, *rest;

    beacon_secret_use(arg, &use, &arg);
    *master = use == BEACON_KEY_USE_MASTER;
    err = beacon_secret_source(arg, &source, &rest);
    if (err == NULL && source == BEACON_SECRET_FILE) {
        err = read_secret_file(cmd, rest, use, key);
    }
    else if (err == NULL && source == BEACON_SECRET_EXEC) {
        /* now, while httpd is still root, as httpd's own exec: */
        err = beacon_key_exec_as(cmd->temp_pool, rest,
                                 BEACON_SECRET_EXEC_LIMIT, use, key);
    }
    else if (err == NULL) {
        err = beacon_key_parse_as(rest, use, key);
        *inline_secret = 1;
    }
    return err;
}

static const char *set_secret(cmd_parms *cmd, void *dummy, const char *arg)
{
    beacon_server_conf *conf = cmd_conf(cmd);
    int inline_secret = 0;
    unsigned master;
    const char *err;

    (void)dummy;
    if (conf->nkeys == BEACON_MAX_KEYS) {
        return "ProxyBeaconSecret: at most 4 per server (the first signs, "
               "a receiver accepts any)";
    }
    err = read_key(cmd, arg, &conf->keys[conf->nkeys], &inline_secret,
                   &master);
    if (err) {
        return apr_pstrcat(cmd->pool, "ProxyBeaconSecret: ", err, NULL);
    }
    conf->masters |= master << conf->nkeys;
    if (inline_secret && conf->inline_secret == NULL) {
        conf->inline_secret = where_of(cmd);
    }
    if (conf->nkeys++ == 0) {
        apr_pool_cleanup_register(cmd->pool, conf, wipe_keys,
                                  apr_pool_cleanup_null);
    }
    return NULL;
}

/* The rule of svc= and route= (beacon_service_is_valid,
 * beacon_route_is_valid), for messages, with libbeacon's bound. (Not
 * APR_STRINGIFY: the linter, which reads no APR header, could not expand
 * it inside a string.) */
#define DIGITS_OF(n) #n
#define DECIMAL(n) DIGITS_OF(n)
#define NAME_RULE(max) \
    "1 to " DECIMAL(max) " letters, digits, '.', '_' or '-'"

/*
 * A value the datagrams carry as written (svc=, route=, lbfactor=): NULL,
 * or the one-line error naming the directive, the value and the rule it
 * breaks. valid is libbeacon's answer, the one every receiver gives.
 */
static const char *check_wire_value(cmd_parms *cmd, const char *arg,
                                    int valid, const char *what)
{
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);

    if (err == NULL && !valid) {
        err = apr_psprintf(cmd->pool, "%s: '%s' is not %s", cmd->cmd->name,
                           ap_escape_logitem(cmd->temp_pool, arg), what);
    }
    return err;
}

/* ProxyBeaconMemberParams key=value ...: each pair in turn. */
static const char *set_member_param(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    (void)dummy;
    return beacon_params_add(cmd->pool, &cmd_conf(cmd)->member_params, arg);
}

/*
 * The service a receiver is, or a sender announces to (svc=): a capture
 * of one service's announcement cannot be replayed to another's receiver
 * that shares the secret. Like the roles, not inherited.
 */
static const char *set_service(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = check_wire_value(
        cmd, arg, beacon_service_is_valid(arg),
        "a service name (" NAME_RULE(BEACON_SERVICE_MAX) ")");

    (void)dummy;
    if (err == NULL) {
        cmd_conf(cmd)->service = apr_pstrdup(cmd->pool, arg);
    }
    return err;
}

/* ------------------------------------------------------------------ */
/* Sender                                                              */

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
        conf->targets = apr_array_make(cmd->pool, argc, sizeof(beacon_dest));
    }
    for (i = 0; i < argc; i++) {
        beacon_dest *d = apr_array_push(conf->targets);

        err = beacon_parse_host_port(cmd->pool, argv[i], 0, &d->host, &d->port);
        if (err) {
            return apr_psprintf(cmd->pool, "ProxyBeaconAddress: expects "
                                "host:port ('%s': %s)", argv[i], err);
        }
        d->spec = argv[i];
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

/*
 * ProxyBeaconRoute, ProxyBeaconLBFactor: what a sender announces of itself
 * (route=, lbfactor=), which the receivers apply to its member. One
 * setter, cmd->info says which field and libbeacon's rule for it. Like
 * the roles, they belong to the server that names them.
 */
typedef struct {
    apr_size_t offset;                   /* of the beacon_announced */
    int (*is_valid)(const char *value);
    const char *what;                    /* a valid value, for messages */
} announced_directive;

static int lbfactor_is_valid(const char *value)
{
    return strcmp(value, BEACON_LBFACTOR_AUTO) == 0 ||
           beacon_lbfactor_parse(value, strlen(value)) >= 0;
}

int beacon_config_lbfactor_auto(const beacon_server_conf *conf)
{
    return conf->lbfactor.value &&
           strcmp(conf->lbfactor.value, BEACON_LBFACTOR_AUTO) == 0;
}

static announced_directive route_of_sender = {
    APR_OFFSETOF(beacon_server_conf, route), beacon_route_is_valid,
    "a route (" NAME_RULE(BEACON_ROUTE_MAX) ")"};
static announced_directive lbfactor_of_sender = {
    APR_OFFSETOF(beacon_server_conf, lbfactor), lbfactor_is_valid,
    "a load factor (1 to 100 with at most two decimals, e.g. 2.5, "
    "or " BEACON_LBFACTOR_AUTO ")"};

static const char *set_announced(cmd_parms *cmd, void *dummy, const char *arg)
{
    const announced_directive *rule = cmd->info;
    beacon_announced *slot = (beacon_announced *)((char *)cmd_conf(cmd) +
                                                  rule->offset);
    const char *err = check_wire_value(cmd, arg, rule->is_valid(arg),
                                       rule->what);

    (void)dummy;
    if (err == NULL) {
        slot->value = apr_pstrdup(cmd->pool, arg);
        slot->where = where_of(cmd);
    }
    return err;
}

/* contexts=LIST: the contexts the balancer's members may claim
 * (libbeacon's allow-list rule); a second one adds to the first. */
static const char *add_contexts(cmd_parms *cmd, beacon_balancer_conf *bc,
                                const char *list)
{
    beacon_span_t bad;
    const char *err;

    if (bc->contexts == NULL) {
        bc->contexts = apr_palloc(cmd->pool, sizeof(*bc->contexts));
        beacon_allow_init(bc->contexts);
    }
    if ((err = beacon_allow_add(bc->contexts, list, strlen(list), &bad)) == NULL) {
        return NULL;
    }
    return apr_psprintf(cmd->pool, "%s: '%s'", err,
                        ap_escape_logitem(cmd->temp_pool,
                                          apr_pstrmemdup(cmd->temp_pool,
                                                         bad.ptr, bad.len)));
}

/* One path of ProxyBeaconContexts into conf's, unless it is there. */
static const char *add_context(cmd_parms *cmd, beacon_server_conf *conf,
                               const char *path)
{
    int i;

    if (!beacon_context_is_valid(path, strlen(path))) {
        return apr_psprintf(cmd->pool, "ProxyBeaconContexts: '%s' is not a "
                            "context (" BEACON_CONTEXT_RULE ")",
                            ap_escape_logitem(cmd->temp_pool, path));
    }
    for (i = 0; i < conf->contexts->nelts; i++) {
        if (strcmp(APR_ARRAY_IDX(conf->contexts, i, const char *), path) == 0) {
            return NULL; /* named twice: it counts once, as on the wire */
        }
    }
    if (conf->contexts->nelts == BEACON_CTX_MAX_PATHS) {
        return apr_psprintf(cmd->pool, "ProxyBeaconContexts: '%s' is one path "
                            "too many: at most " DECIMAL(BEACON_CTX_MAX_PATHS)
                            " in a server", path);
    }
    APR_ARRAY_PUSH(conf->contexts, const char *) = apr_pstrdup(cmd->pool, path);
    return NULL;
}

/*
 * ProxyBeaconContexts PATH [PATH ...], repeatable: the contexts a sender
 * announces it serves (ctx=), every line's paths together. Each path
 * passes libbeacon's rule and there are at most BEACON_CTX_MAX_PATHS, so
 * their join is a ctx= value the wire accepts (asserted). Like the
 * roles, they belong to the server that names them.
 */
static const char *set_contexts(cmd_parms *cmd, void *dummy, int argc,
                                char *const argv[])
{
    beacon_server_conf *conf = cmd_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];
    int i;

    (void)dummy;
    if (err == NULL && argc == 0) {
        err = "ProxyBeaconContexts: expects 1 to "
              DECIMAL(BEACON_CTX_MAX_PATHS) " paths, e.g. /shop /cart";
    }
    if (conf->contexts == NULL) {
        conf->contexts = apr_array_make(cmd->pool, BEACON_CTX_MAX_PATHS,
                                        sizeof(const char *));
    }
    for (i = 0; err == NULL && i < argc; i++) {
        err = add_context(cmd, conf, argv[i]);
    }
    if (err) {
        return err;
    }
    conf->ctx.value = apr_array_pstrcat(cmd->pool, conf->contexts, ',');
    ap_assert(beacon_ctx_parse(conf->ctx.value, strlen(conf->ctx.value),
                               paths) == conf->contexts->nelts);
    if (conf->ctx.where == NULL) {
        conf->ctx.where = where_of(cmd);
    }
    return NULL;
}

/* The entry of a reach list that libbeacon refused, with why. */
static const char *reach_error(cmd_parms *cmd, const char *what,
                               const char *entry, apr_size_t len,
                               const char *why)
{
    return apr_psprintf(cmd->pool, "%s entry '%s': %s", what,
                        ap_escape_logitem(cmd->temp_pool,
                                          apr_pstrmemdup(cmd->temp_pool,
                                                         entry, len)),
                        why);
}

static beacon_reach_t *new_reach(apr_pool_t *p)
{
    beacon_reach_t *reach = apr_palloc(p, sizeof(*reach));

    beacon_reach_init(reach);
    return reach;
}

/* allow=LIST: what the balancer's members may point at, within the
 * receiver's ProxyBeaconAllow; a second one adds to the first. */
static const char *add_allow(cmd_parms *cmd, beacon_balancer_conf *bc,
                             const char *list)
{
    beacon_span_t bad;
    const char *err;

    if (bc->allow == NULL) {
        bc->allow = new_reach(cmd->pool);
    }
    if ((err = beacon_reach_add_list(bc->allow, list, strlen(list), &bad)) == NULL) {
        return NULL;
    }
    return reach_error(cmd, "ProxyBeaconBalancer: allow=", bad.ptr, bad.len,
                       err);
}

/* ProxyBeaconRevoke URL [URL ...], repeatable: member urls no key
 * speaks for, in any service of the receiver. */
static const char *set_revoke(cmd_parms *cmd, void *dummy, const char *url)
{
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);

    (void)dummy;
    return err ? err : beacon_revoke_add(cmd, &cmd_conf(cmd)->revoked, url,
                                         "ProxyBeaconRevoke:");
}

/*
 * ProxyBeaconAllow ENTRY [ENTRY ...], repeatable: the hosts announced
 * urls may point at (libbeacon's reach rule). Inherited, like the secret,
 * by virtual hosts that give none.
 */
static const char *set_allow(cmd_parms *cmd, void *dummy, int argc,
                             char *const argv[])
{
    beacon_server_conf *conf = cmd_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);
    int i;

    (void)dummy;
    if (err == NULL && argc == 0) {
        err = "ProxyBeaconAllow: expects one or more entries: networks "
              "(10.0.0.0/8), addresses, host names, *.suffix, source";
    }
    if (err) {
        return err;
    }
    if (conf->allow == NULL) {
        conf->allow = new_reach(cmd->pool);
    }
    for (i = 0; i < argc; i++) {
        if ((err = beacon_reach_add(conf->allow, argv[i], strlen(argv[i])))) {
            return reach_error(cmd, "ProxyBeaconAllow:", argv[i],
                               strlen(argv[i]), err);
        }
    }
    return NULL;
}

/* slowstart=DURATION: the balancer's own ProxyBeaconSlowStart. */
static const char *set_slowstart(beacon_balancer_conf *bc, const char *v)
{
    apr_interval_time_t t;

    if (ap_timeout_parameter_parse(v, &t, "s") != APR_SUCCESS || t < 0 ||
        t > DAY) {
        return "expects a duration of at most a day (e.g. 30, 30s, 500ms; 0: "
               "none)";
    }
    bc->slowstart.value = t;
    bc->slowstart.set = 1;
    return NULL;
}

/* slots=N: member slots the balancer reserves at start. */
static const char *set_slots(beacon_balancer_conf *bc, const char *v)
{
    apr_int64_t n;

    if (!beacon_params_whole_number(v, 1, BEACON_SLOTS_MAX, &n)) {
        return "expects a number of slots from 1 to " DECIMAL(BEACON_SLOTS_MAX);
    }
    bc->slots = (int)n;
    return NULL;
}

static const char *balancer_option(cmd_parms *cmd, beacon_balancer_conf *bc,
                                   const char *arg)
{
    const char *err = NULL;
    int inline_secret = 0;
    unsigned master;

    if (strncmp(arg, "service=", 8) == 0 && bc->service == NULL) {
        if (beacon_service_is_valid(arg + 8)) {
            bc->service = apr_pstrdup(cmd->pool, arg + 8);
        }
        else {
            err = "not a service name (" NAME_RULE(BEACON_SERVICE_MAX) ")";
        }
    }
    else if (strncmp(arg, "secret=", 7) == 0 && bc->nkeys < 2) {
        err = read_key(cmd, arg + 7, &bc->keys[bc->nkeys], &inline_secret,
                       &master);
        if (err == NULL) {
            bc->masters |= master << bc->nkeys++;
        }
    }
    else if (strncmp(arg, "contexts=", 9) == 0) {
        err = add_contexts(cmd, bc, arg + 9);
    }
    else if (strncmp(arg, "slots=", 6) == 0 && bc->slots == 0) {
        err = set_slots(bc, arg + 6);
    }
    else if (strncmp(arg, "allow=", 6) == 0) {
        return add_allow(cmd, bc, arg + 6);
    }
    else if (strncmp(arg, "slowstart=", 10) == 0 && !bc->slowstart.set) {
        err = set_slowstart(bc, arg + 10);
    }
    else if (strncmp(arg, "revoke=", 7) == 0) {
        return beacon_revoke_add(cmd, &bc->revoked, arg + 7,
                                 "ProxyBeaconBalancer: revoke=");
    }
    else {
        err = "not an option (service=NAME once, secret=SECRET at most "
              "twice, contexts=LIST, slots=N once, allow=LIST, "
              "slowstart=DURATION once, revoke=LIST)";
    }
    if (err) {
        /* a secret= value is never echoed */
        return apr_psprintf(cmd->pool, "ProxyBeaconBalancer: %s: %s",
                            strncmp(arg, "secret=", 7) == 0
                                ? "secret="
                                : ap_escape_logitem(cmd->temp_pool, arg),
                            err);
    }
    return NULL;
}

/* ProxyBeaconBalancer NAME [service=SVC] [secret=SECRET ...], repeatable:
 * the balancers one receiver feeds, each with its service and keys. */
static const char *set_balancer(cmd_parms *cmd, void *dummy, int argc,
                                char *const argv[])
{
    beacon_server_conf *conf = cmd_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);
    const char *name = argc > 0 ? argv[0] : "";
    beacon_balancer_conf *bc;
    int i;

    (void)dummy;
    if (err) {
        return err;
    }
    if (strncasecmp(name, "balancer://", 11) == 0) {
        name += 11;
    }
    if (*name == '\0' || strchr(name, '/')) {
        return "ProxyBeaconBalancer: expects a balancer name, e.g. 'cluster' "
               "or 'balancer://cluster'";
    }
    for (i = 0; i < beacon_config_balancer_count(conf); i++) {
        if (strcmp(beacon_config_balancer_at(conf, i)->name, name) == 0) {
            return apr_psprintf(cmd->pool, "ProxyBeaconBalancer: balancer://%s "
                                "is named twice in this server", name);
        }
    }
    if (conf->balancers == NULL) {
        conf->balancers = apr_array_make(cmd->pool, 2, sizeof(*bc));
        apr_pool_cleanup_register(cmd->pool, conf, wipe_keys,
                                  apr_pool_cleanup_null);
    }
    bc = apr_array_push(conf->balancers);
    memset(bc, 0, sizeof(*bc));
    bc->name = apr_pstrdup(cmd->pool, name);
    bc->where = where_of(cmd);
    for (i = 1; i < argc; i++) {
        if ((err = balancer_option(cmd, bc, argv[i])) != NULL) {
            return err;
        }
    }
    return NULL;
}

/*
 * Whose receivers and senders beacon-status shows: by default those of the
 * virtual host that answers (as balancer-manager shows its balancers), so
 * that a tenant's page shows no other tenant's backends.
 */
static const char *set_status_scope(cmd_parms *cmd, void *dirconf,
                                    const char *arg)
{
    beacon_dir_conf *conf = dirconf;

    (void)cmd;
    if (strcasecmp(arg, "vhost") == 0) {
        conf->status_scope = BEACON_SCOPE_VHOST;
    }
    else if (strcasecmp(arg, "server") == 0) {
        conf->status_scope = BEACON_SCOPE_SERVER;
    }
    else {
        return "ProxyBeaconStatusScope: expects vhost (this virtual host's "
               "receivers and senders) or server (every virtual host's)";
    }
    return NULL;
}

const command_rec beacon_cmds[] = {
    AP_INIT_TAKE_ARGV("ProxyBeaconListen", set_listen, NULL, RSRC_CONF,
        "[address][:port]: receive beacons on this UDP address; missing "
        "parts are this server's own"),
    AP_INIT_TAKE_ARGV("ProxyBeaconBalancer", set_balancer, NULL, RSRC_CONF,
        "NAME [service=SVC] [secret=SECRET ...] [contexts=LIST] [slots=N] "
        "[slowstart=DURATION] "
        "[allow=LIST] [revoke=LIST]: a "
        "balancer (name or balancer://name) announced backends join, those "
        "of service SVC (verified with its own secrets) or, without "
        "service=, those that name none, claiming only the contexts of "
        "LIST, in N member slots reserved at start, pointing only where "
        "allow= and ProxyBeaconAllow allow; "
        "repeatable, one per service; without it the receiver only logs"),
    AP_INIT_ITERATE("ProxyBeaconRevoke", set_revoke, NULL, RSRC_CONF,
        "URL [URL ...]: member urls whose announcements are dropped "
        "whatever key signs them (a leaked member key); a live member "
        "with one leaves its balancer at the restart that brings it"),
    AP_INIT_TAKE_ARGV("ProxyBeaconAllow", set_allow, NULL, RSRC_CONF,
        "ENTRY [ENTRY ...]: what announced urls may point at: IP networks "
        "(10.0.0.0/8, fd00::/8), addresses, host names (api.internal, "
        "*.svc.cluster.local, never resolved), source (the datagram's own "
        "address); without it, all but link-local, unspecified, multicast "
        "and broadcast addresses"),
    AP_INIT_TAKE1("ProxyBeaconTimeout", set_interval, &timeout_of_receiver,
        RSRC_CONF,
        "silence after which a member is disabled (default 0: never)"),
    AP_INIT_TAKE1("ProxyBeaconMaxSkew", set_interval, &max_skew_of_receiver,
        RSRC_CONF,
        "how far an announcement's timestamp may be from the clock "
        "(default 30s)"),
    AP_INIT_TAKE1("ProxyBeaconForget", set_interval, &forget_of_receiver,
        RSRC_CONF,
        "silence after which a member out of rotation is forgotten: its "
        "slot is reused first and a restart does not bring it back "
        "(default 1h, or longer than ProxyBeaconTimeout plus twice "
        "ProxyBeaconMaxSkew; 0: never)"),
    AP_INIT_TAKE1("ProxyBeaconSlowStart", set_interval, &slowstart_of_receiver,
        RSRC_CONF,
        "how long a member that joins, or returns to rotation, takes to "
        "reach its whole load factor from a tenth of it (default 0: at "
        "once); slowstart= of ProxyBeaconBalancer for one balancer"),
    AP_INIT_TAKE1("ProxyBeaconSecret", set_secret, NULL, RSRC_CONF,
        "shared secret: hex: and 32 hex digits, a passphrase of 16 bytes or "
        "more, file:/path holding either, or exec:/path [args] printing "
        "either; up to 4 (the first signs)"),
    AP_INIT_TAKE_ARGV("ProxyBeaconAddress", set_address, NULL, RSRC_CONF,
        "host:port [host:port ...]: the proxies this backend announces "
        "itself to, every address of each name"),
    AP_INIT_TAKE1("ProxyBeaconAdvertise", set_advertise, NULL, RSRC_CONF,
        "this backend's origin as the proxies should reach it, "
        "scheme://host[:port]"),
    AP_INIT_TAKE1("ProxyBeaconRoute", set_announced, &route_of_sender,
        RSRC_CONF,
        "the route this backend announces for its member (route=), for "
        "sticky sessions"),
    AP_INIT_TAKE1("ProxyBeaconLBFactor", set_announced, &lbfactor_of_sender,
        RSRC_CONF,
        "the load factor this backend announces for its member "
        "(lbfactor=), 1 to 100, or auto: from its busy workers"),
    AP_INIT_TAKE_ARGV("ProxyBeaconContexts", set_contexts, NULL, RSRC_CONF,
        "PATH [PATH ...]: the request paths (contexts) this backend "
        "announces it serves (ctx=), e.g. /shop /cart; repeatable, 1 to "
        DECIMAL(BEACON_CTX_MAX_PATHS) " in all"),
    AP_INIT_ITERATE("ProxyBeaconMemberParams", set_member_param, NULL,
        RSRC_CONF,
        "key=value ...: BalancerMember parameters for every member beacon "
        "adds (timeout, retry, ttl, max, lbset, loadfactor, status, hc...)"),
    AP_INIT_TAKE1("ProxyBeaconService", set_service, NULL, RSRC_CONF,
        "the service this receiver is, or this sender announces to: "
        "announcements name it (svc=), and a receiver drops those naming "
        "another or none"),
    AP_INIT_TAKE1("ProxyBeaconStatusScope", set_status_scope, NULL,
        RSRC_CONF | ACCESS_CONF,
        "what beacon-status shows: vhost (default, the receivers and senders "
        "of the virtual host that answers) or server (every virtual host's)"),
    AP_INIT_TAKE1("ProxyBeaconInterval", set_interval, &interval_of_sender,
        RSRC_CONF,
        "time between announcements (default 5s)"),
    {NULL}
};
