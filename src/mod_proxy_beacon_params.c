/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * ProxyBeaconMemberParams (see mod_proxy_beacon_params.h).
 *
 * httpd's own parser of BalancerMember parameters is private to mod_proxy,
 * so each key has its rule here, with httpd's bounds; a value is checked
 * by applying it to a scratch worker, and applied later by the same code,
 * so that what apache2 -t accepts is what a member gets.
 */

#include "mod_proxy_beacon_params.h"

#include <mod_proxy.h>

#include <apr_optional.h>
#include <apr_strings.h>

#include <errno.h>

typedef struct {
    const char *key;
    const char *value;
} param;

struct beacon_member_params {
    apr_array_header_t *pairs; /* param, in the order given */
};

typedef const char *(*param_rule)(proxy_worker_shared *w, const char *v);

/* ------------------------------------------------------------------ */
/* Values                                                              */

int beacon_params_whole_number(const char *v, apr_int64_t min, apr_int64_t max,
                               apr_int64_t *out)
{
    char *end;

    if (!apr_isdigit(*v)) {
        return 0;
    }
    errno = 0;
    *out = apr_strtoi64(v, &end, 10);
    return *end == '\0' && errno != ERANGE && *out >= min && *out <= max;
}

/* on/off; -1 when neither. */
static int on_off(const char *v)
{
    return !strcasecmp(v, "on") ? 1 : !strcasecmp(v, "off") ? 0 : -1;
}

/*
 * The upper bound of connectiontimeout, acquire and ping. httpd sets none
 * (ap_timeout_parameter_parse takes any 64-bit count and multiplies it by
 * its unit unchecked), but a connect, a wait for a pooled connection or a
 * ping that may last over an hour is a typo, not a setting. The bound also
 * keeps the recycle gate's sums (mod_proxy_beacon_recycle.c: connect +
 * acquire + a second, then twice the timeout, added to a wall-clock time)
 * far from overflowing.
 */
#define INTERVAL_MAX apr_time_from_sec(3600)
#define INTERVAL_RULE "an interval from 1ms to 1h"
/* The most units an interval within the bound can count: milliseconds. */
#define INTERVAL_MAX_COUNT APR_INT64_C(3600000)

/* An interval in httpd's syntax (unit as given), from a millisecond to
 * INTERVAL_MAX. The count is checked before httpd multiplies it by its
 * unit, where a huge one would wrap, to any value, even a small one. */
static int interval(const char *v, const char *unit, apr_interval_time_t *out)
{
    apr_int64_t count;
    char *end;

    if (!apr_isdigit(*v)) {
        return 0;
    }
    errno = 0;
    count = apr_strtoi64(v, &end, 10);
    if (errno == ERANGE || count > INTERVAL_MAX_COUNT) {
        return 0;
    }
    return ap_timeout_parameter_parse(v, out, unit) == APR_SUCCESS &&
           *out >= 1000 && *out <= INTERVAL_MAX;
}

/* timeout, retry and ttl: httpd takes any int; a day is far more than a
 * backend reply, a retry or an idle connection needs, and twice it plus
 * INTERVAL_MAX's sums stays far from overflowing (see INTERVAL_MAX). */
#define A_DAY_S APR_INT64_C(86400)

/* A whole number of seconds from min to a day. */
static const char *seconds(const char *v, apr_int64_t min,
                           apr_interval_time_t *out)
{
    apr_int64_t n;

    if (!beacon_params_whole_number(v, min, A_DAY_S, &n)) {
        return min ? "must be a whole number of seconds, 1 to 86400"
                   : "must be a whole number of seconds, 0 to 86400";
    }
    *out = apr_time_from_sec(n);
    return NULL;
}

static const char *set_connectiontimeout(proxy_worker_shared *w, const char *v)
{
    if (!interval(v, "s", &w->conn_timeout)) {
        return "must be " INTERVAL_RULE " (3, 3s, 500ms, 2mi)";
    }
    w->conn_timeout_set = 1;
    return NULL;
}

static const char *set_timeout(proxy_worker_shared *w, const char *v)
{
    const char *err = seconds(v, 1, &w->timeout);

    w->timeout_set = err == NULL;
    return err;
}

static const char *set_retry(proxy_worker_shared *w, const char *v)
{
    const char *err = seconds(v, 0, &w->retry);

    w->retry_set = err == NULL;
    return err;
}

static const char *set_ttl(proxy_worker_shared *w, const char *v)
{
    return seconds(v, 1, &w->ttl);
}

static const char *set_count(int *field, const char *v)
{
    apr_int64_t n;

    if (!beacon_params_whole_number(v, 0, 1000000, &n)) {
        return "must be a whole number, 0 or more";
    }
    *field = (int)n;
    return NULL;
}

static const char *set_min(proxy_worker_shared *w, const char *v)
{
    return set_count(&w->min, v);
}

static const char *set_max(proxy_worker_shared *w, const char *v)
{
    return set_count(&w->hmax, v);
}

static const char *set_smax(proxy_worker_shared *w, const char *v)
{
    return set_count(&w->smax, v);
}

static const char *set_acquire(proxy_worker_shared *w, const char *v)
{
    if (!interval(v, "ms", &w->acquire)) {
        return "must be " INTERVAL_RULE " (milliseconds unless a unit "
               "is given: 500, 2s)";
    }
    w->acquire_set = 1;
    return NULL;
}

static const char *set_ping(proxy_worker_shared *w, const char *v)
{
    if (!interval(v, "s", &w->ping_timeout)) {
        return "must be " INTERVAL_RULE " (1, 1s, 500ms)";
    }
    w->ping_timeout_set = 1;
    return NULL;
}

static const char *set_keepalive(proxy_worker_shared *w, const char *v)
{
    int on = on_off(v);

    if (on < 0) {
        return "must be on or off";
    }
    w->keepalive = (unsigned)on;
    w->keepalive_set = 1;
    return NULL;
}

static const char *set_reuse(proxy_worker_shared *w, int disable)
{
    w->disablereuse = (unsigned)disable;
    w->disablereuse_set = 1;
    return NULL;
}

static const char *set_disablereuse(proxy_worker_shared *w, const char *v)
{
    int on = on_off(v);

    return on < 0 ? "must be on or off" : set_reuse(w, on);
}

static const char *set_enablereuse(proxy_worker_shared *w, const char *v)
{
    int on = on_off(v);

    return on < 0 ? "must be on or off" : set_reuse(w, !on);
}

static const char *set_flushpackets(proxy_worker_shared *w, const char *v)
{
    if (!strcasecmp(v, "auto")) {
        w->flush_packets = flush_auto;
        return NULL;
    }
    switch (on_off(v)) {
    case 1:
        w->flush_packets = flush_on;
        return NULL;
    case 0:
        w->flush_packets = flush_off;
        return NULL;
    default:
        return "must be on, off or auto";
    }
}

static const char *set_flushwait(proxy_worker_shared *w, const char *v)
{
    apr_int64_t n;

    if (!beacon_params_whole_number(v, 0, 1000, &n)) {
        return "must be a whole number of milliseconds, 0 to 1000";
    }
    w->flush_wait = n ? (int)n * 1000 : PROXY_FLUSH_WAIT;
    return NULL;
}

static const char *set_lbset(proxy_worker_shared *w, const char *v)
{
    apr_int64_t n;

    if (!beacon_params_whole_number(v, 0, 99, &n)) {
        return "must be a whole number, 0 to 99";
    }
    w->lbset = (int)n;
    return NULL;
}

static const char *set_loadfactor(proxy_worker_shared *w, const char *v)
{
    int hundredths = beacon_lbfactor_parse(v, strlen(v));

    if (hundredths < 0) {
        return "must be a number from 1 to 100 with at most two decimals";
    }
    w->lbfactor = hundredths;
    return NULL;
}

/* The flags an admin gives a member from the start; Disabled is beacon's,
 * and the error flags are the proxy's and the health check's. */
static const char *set_status(proxy_worker_shared *w, const char *v)
{
    static const struct {
        char letter;
        unsigned int flag;
    } flags[] = {
        {'S', PROXY_WORKER_STOPPED},     {'N', PROXY_WORKER_DRAIN},
        {'H', PROXY_WORKER_HOT_STANDBY}, {'R', PROXY_WORKER_HOT_SPARE},
        {'I', PROXY_WORKER_IGNORE_ERRORS},
    };
    int on = 1;

    for (; *v; v++) {
        unsigned i, known = 0;

        if (*v == '+' || *v == '-') {
            on = *v == '+';
            continue;
        }
        for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
            if (apr_toupper(*v) == flags[i].letter) {
                w->status = on ? w->status | flags[i].flag
                               : w->status & ~flags[i].flag;
                known = 1;
            }
        }
        if (!known) {
            return "takes the flags S, N, H, R and I (D is beacon's), each "
                   "after + or -";
        }
    }
    return NULL;
}

static const struct {
    const char *key;
    param_rule rule;
} rules[] = {
    {"acquire", set_acquire},
    {"connectiontimeout", set_connectiontimeout},
    {"disablereuse", set_disablereuse},
    {"enablereuse", set_enablereuse},
    {"flushpackets", set_flushpackets},
    {"flushwait", set_flushwait},
    {"keepalive", set_keepalive},
    {"lbset", set_lbset},
    {"loadfactor", set_loadfactor},
    {"max", set_max},
    {"min", set_min},
    {"ping", set_ping},
    {"retry", set_retry},
    {"smax", set_smax},
    {"status", set_status},
    {"timeout", set_timeout},
    {"ttl", set_ttl},
};

static param_rule rule_of(const char *key)
{
    unsigned i;

    for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        if (!strcasecmp(key, rules[i].key)) {
            return rules[i].rule;
        }
    }
    return NULL;
}

static int is_health_check_key(const char *key)
{
    return !strncasecmp(key, "hc", 2);
}

/* mod_proxy_hcheck's own setter, when it is loaded. */
static APR_OPTIONAL_FN_TYPE(set_worker_hc_param) *hc_setter(void)
{
    return APR_RETRIEVE_OPTIONAL_FN(set_worker_hc_param);
}

/* ------------------------------------------------------------------ */
/* The directive                                                       */

const char *beacon_params_add(apr_pool_t *p, beacon_member_params **params,
                              const char *arg)
{
    const char *eq = strchr(arg, '=');
    proxy_worker_shared scratch;
    const char *key, *value, *err;
    param_rule rule;
    param *pair;

    if (eq == NULL || eq == arg || eq[1] == '\0') {
        return apr_psprintf(p, "ProxyBeaconMemberParams: '%s' is not "
                            "key=value", arg);
    }
    key = apr_pstrmemdup(p, arg, (apr_size_t)(eq - arg));
    value = eq + 1;
    if (!strcasecmp(key, "route") || !strcasecmp(key, "redirect")) {
        return apr_psprintf(p, "ProxyBeaconMemberParams: %s is each member's "
                            "own (a backend announces its route; set a "
                            "redirect in balancer-manager)", key);
    }
    if ((rule = rule_of(key)) == NULL && !is_health_check_key(key)) {
        return apr_psprintf(p, "ProxyBeaconMemberParams: unknown key %s",
                            key);
    }
    if (rule) {
        memset(&scratch, 0, sizeof(scratch));
        if ((err = rule(&scratch, value)) != NULL) {
            return apr_psprintf(p, "ProxyBeaconMemberParams: %s %s (%s)", key,
                                err, arg);
        }
    }
    if (*params == NULL) {
        *params = apr_pcalloc(p, sizeof(**params));
        (*params)->pairs = apr_array_make(p, 4, sizeof(param));
    }
    pair = apr_array_push((*params)->pairs);
    pair->key = key;
    pair->value = value;
    return NULL;
}

const char *beacon_params_check(apr_pool_t *p, server_rec *s,
                                const beacon_member_params *params)
{
    APR_OPTIONAL_FN_TYPE(set_worker_hc_param) *hc = hc_setter();
    proxy_worker_shared scratch_shared;
    proxy_worker scratch;
    int i;

    if (params == NULL) {
        return NULL;
    }
    memset(&scratch, 0, sizeof(scratch));
    memset(&scratch_shared, 0, sizeof(scratch_shared));
    scratch.s = &scratch_shared;
    for (i = 0; i < params->pairs->nelts; i++) {
        const param *pair = &APR_ARRAY_IDX(params->pairs, i, param);
        const char *err;

        if (!is_health_check_key(pair->key)) {
            continue;
        }
        if (hc == NULL) {
            return apr_psprintf(p, "ProxyBeaconMemberParams: %s needs "
                                "mod_proxy_hcheck, which is not loaded",
                                pair->key);
        }
        if ((err = hc(p, s, &scratch, pair->key, pair->value, NULL)) != NULL) {
            return apr_psprintf(p, "ProxyBeaconMemberParams: %s=%s: %s",
                                pair->key, pair->value, err);
        }
    }
    return NULL;
}

void beacon_params_apply(apr_pool_t *p, server_rec *s,
                         const beacon_member_params *params, proxy_worker *w)
{
    APR_OPTIONAL_FN_TYPE(set_worker_hc_param) *hc = hc_setter();
    int i;

    if (params == NULL) {
        return;
    }
    for (i = 0; i < params->pairs->nelts; i++) {
        const param *pair = &APR_ARRAY_IDX(params->pairs, i, param);
        param_rule rule = rule_of(pair->key);

        /* checked at configuration time: no error can come back */
        if (rule) {
            rule(w->s, pair->value);
        }
        else if (hc) {
            hc(p, s, w, pair->key, pair->value, NULL);
        }
    }
}
