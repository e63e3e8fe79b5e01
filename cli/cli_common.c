/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What every beaconctl command needs besides its options: one-line
 * errors, escaped output, durations, checked field values and the secret.
 * What a secret file, a field value or a url may hold is libbeacon's rule;
 * this file only turns its answers into messages.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <apr_env.h>
#include <apr_strings.h>

#include "cli.h"

const char *cmd_name;

/* ------------------------------------------------------------------ */
/* Errors                                                              */

static void vwarn(const char *fmt, va_list ap)
{
    fflush(stdout); /* what was printed before the error comes first */
    /* stderr is unbuffered, so a line is several writes: locked, the lines
     * of two threads (send's lookups) never mix */
    flockfile(stderr);
    fputs("beaconctl: ", stderr);
    if (cmd_name) {
        fprintf(stderr, "%s: ", cmd_name);
    }
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    funlockfile(stderr);
}

void fail(int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
    exit(status);
}

void warn(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
}

const char *errstr(apr_status_t rv, char *buf, apr_size_t size)
{
    return apr_strerror(rv, buf, size);
}

void flush_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fail(EXIT_RUNTIME, "cannot write to standard output: %s",
             strerror(errno));
    }
}

void put_escaped(const char *p, apr_size_t len, apr_size_t max)
{
    apr_size_t i;

    for (i = 0; i < len && i < max; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c >= 0x20 && c <= 0x7e && c != '\\' && c != '"') {
            putchar(c);
        }
        else {
            printf("\\x%02x", c);
        }
    }
    if (len > max) {
        fputs("...", stdout);
    }
}

/* ------------------------------------------------------------------ */
/* Values                                                              */

/*
 * Up to 9 integer digits, so that no overflow is possible; the fraction
 * is cut at microseconds.
 */
int parse_duration(const char *s, apr_interval_time_t *out)
{
    apr_int64_t whole = 0, frac = 0, scale = APR_USEC_PER_SEC, div = 1;
    int digits = 0, fdigits = 0;

    for (; *s >= '0' && *s <= '9'; s++) {
        if (++digits > 9) {
            return 0;
        }
        whole = whole * 10 + (*s - '0');
    }
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++) {
            if (++fdigits <= 6) {
                frac = frac * 10 + (*s - '0');
                div *= 10;
            }
        }
        if (fdigits == 0) {
            return 0;
        }
    }
    if (digits == 0 && fdigits == 0) {
        return 0;
    }
    if (strcmp(s, "ms") == 0) {
        scale = 1000;
    }
    else if (*s != '\0' && strcmp(s, "s") != 0) {
        return 0;
    }
    *out = whole * scale + frac * scale / div;
    return 1;
}

const char *format_duration(apr_pool_t *p, apr_interval_time_t t)
{
    if (t % APR_USEC_PER_SEC == 0) {
        return apr_psprintf(p, "%" APR_INT64_T_FMT " s", t / APR_USEC_PER_SEC);
    }
    return apr_psprintf(p, "%.6g s", (double)t / APR_USEC_PER_SEC);
}

void check_field(const char *option, const char *value)
{
    if (!beacon_value_is_valid(value)) {
        fail(EXIT_USAGE, "--%s: must be non-empty printable ASCII without "
             "spaces", option);
    }
}

/* A usage error about an option's value, which may hold any byte: shown
 * escaped, as "--option 'value': problem". */
static void fail_value(const char *option, const char *value,
                       const char *problem)
{
    fflush(stdout);
    fprintf(stderr, "beaconctl: %s: --%s '", cmd_name, option);
    for (; *value; value++) {
        unsigned char c = (unsigned char)*value;

        if (c >= 0x20 && c <= 0x7e && c != '\\') {
            fputc(c, stderr);
        }
        else {
            fprintf(stderr, "\\x%02x", c);
        }
    }
    fprintf(stderr, "': %s\n", problem);
    exit(EXIT_USAGE);
}

void canonical_url(const char *url, char *out)
{
    const char *err = beacon_url_canonicalize(url, strlen(url), out,
                                              BEACON_URL_MAX);

    if (err) {
        fail_value("url", url, err);
    }
}

void check_service(const char *value)
{
    if (!beacon_service_is_valid(value)) {
        fail_value("service", value, "a service is 1 to 63 of the characters "
                   "A-Z a-z 0-9 . _ - (the svc= rule)");
    }
}

void add_allow_list(apr_pool_t *p, beacon_reach_t *reach, const char *list)
{
    beacon_span_t bad;
    const char *err = beacon_reach_add_list(reach, list, strlen(list), &bad);

    if (err != NULL) {
        fail_value("allow", apr_pstrmemdup(p, bad.ptr, bad.len), err);
    }
}

void set_v11_fields(beacon_announcement_t *a, const char *service,
                    const char *route, const char *lbfactor)
{
    if (service) {
        check_service(service);
        a->svc = service;
    }
    if (route && !beacon_route_is_valid(route)) {
        fail_value("route", route, "a route is 1 to 63 of the characters "
                   "A-Z a-z 0-9 . _ - (the route= rule)");
    }
    if (lbfactor && beacon_lbfactor_parse(lbfactor, strlen(lbfactor)) < 0) {
        fail_value("lbfactor", lbfactor, "a load factor is a number from 1 "
                   "to 100 with at most two decimals, e.g. 2.5 (the "
                   "lbfactor= rule)");
    }
    a->route = route;
    a->lbfactor = lbfactor;
}

void set_ctx_field(beacon_announcement_t *a, const char *ctx)
{
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];

    if (ctx && beacon_ctx_parse(ctx, strlen(ctx), paths) < 0) {
        fail_value("ctx", ctx, "contexts are 1 to 16 paths separated by "
                   "commas, each " BEACON_CONTEXT_RULE " (the ctx= rule)");
    }
    a->ctx = ctx;
}

void check_state(const char *state, int leaving_ok)
{
    int st = beacon_wire_state_parse(state, strlen(state));

    if (st == BEACON_WIRE_LEAVING && !leaving_ok) {
        fail_value("state", state, "draining or standby (this command says "
                   "leaving itself when it stops)");
    }
    if (st < 0) {
        fail_value("state", state, leaving_ok
                                       ? "leaving, draining or standby"
                                       : "draining or standby");
    }
}

/* ------------------------------------------------------------------ */
/* The secret                                                          */

/*
 * Whether err is beacon_key_read_file()'s I/O message, which already
 * names the path ("cannot read PATH: ..."): the path is then not printed
 * a second time. A message about the file's content never starts so.
 */
static int names_path(const char *err, const char *file)
{
    static const char prefix[] = "cannot read ";
    apr_size_t n = strlen(file);

    return strncmp(err, prefix, sizeof(prefix) - 1) == 0 &&
           strncmp(err + sizeof(prefix) - 1, file, n) == 0 &&
           err[sizeof(prefix) - 1 + n] == ':';
}

/* BEACON_SECRET as it was when beaconctl started; NULL: unset. */
static char *env_secret;

void take_secret_env(apr_pool_t *p)
{
    char *value = getenv(SECRET_ENV);

    if (value == NULL) {
        return;
    }
    env_secret = apr_pstrdup(p, value);
    /* beaconctl never sets the variable itself, so these bytes are the
     * initial environment's, which no one reads after us. */
    beacon_wipe(value, strlen(value));
    apr_env_delete(SECRET_ENV, p);
}

/* What a command takes: a key (send, sign, drain), a master
 * (derive-key), or either, as its options or BEACON_SECRET's derive:
 * prefix say (listen). */
typedef enum {
    TAKE_KEY,
    TAKE_MASTER,
    TAKE_EITHER
} take_t;

/* A --secret-file or --master-file FILE (option): its I/O message names
 * the path already. */
static void key_from_file(apr_pool_t *p, const char *option, const char *file,
                          beacon_key_use_t use, beacon_key_t *key)
{
    const char *err = beacon_key_read_file_as(p, file, use, key, NULL);

    if (err && names_path(err, file)) {
        fail(EXIT_USAGE, "%s: %s", option, err);
    }
    if (err) {
        fail(EXIT_USAGE, "%s %s: %s", option, file, err);
    }
}

static void key_from_exec(apr_pool_t *p, const char *what,
                          const char *command, beacon_key_use_t use,
                          beacon_key_t *key)
{
    const char *err = beacon_key_exec_as(p, command, BEACON_SECRET_EXEC_LIMIT,
                                         use, key);

    if (err) {
        fail(EXIT_USAGE, "%s: %s", what, err);
    }
}

/*
 * BEACON_SECRET read as ProxyBeaconSecret reads its value (libbeacon's
 * beacon_secret_use and beacon_secret_source): derive: before a master,
 * then the secret itself, file:PATH or exec:PATH. Returns the use.
 */
static beacon_key_use_t key_from_env(apr_pool_t *p, take_t take,
                                     beacon_key_t *key)
{
    beacon_secret_source_t source;
    beacon_key_use_t use;
    const char *value, *rest, *err;

    if (env_secret == NULL) {
        fail(EXIT_USAGE, "no secret: use --secret-file FILE, --secret-exec "
             "PROGRAM or the environment variable " SECRET_ENV " (see "
             "beaconctl %s --help)", cmd_name);
    }
    beacon_secret_use(env_secret, &use, &value);
    if (use == BEACON_KEY_USE_MASTER && take == TAKE_KEY) {
        fail(EXIT_USAGE, SECRET_ENV ": a master (derive:) signs nothing: "
             "give this sender its member key, which beaconctl derive-key "
             "prints");
    }
    if (take == TAKE_MASTER) {
        use = BEACON_KEY_USE_MASTER; /* derive: or not, derive-key's is one */
    }
    err = beacon_secret_source(value, &source, &rest);
    if (err == NULL && source == BEACON_SECRET_FILE) {
        err = beacon_key_read_file_as(p, rest, use, key, NULL);
    }
    else if (err == NULL && source == BEACON_SECRET_EXEC) {
        key_from_exec(p, SECRET_ENV, rest, use, key);
    }
    else if (err == NULL) {
        err = beacon_key_parse_as(rest, use, key);
    }
    if (err) {
        fail(EXIT_USAGE, SECRET_ENV ": %s", err);
    }
    beacon_wipe(env_secret, strlen(env_secret)); /* one key per run */
    return use;
}

void take_secret_arg(secret_arg_t *arg, int optch, const char *value)
{
    if (arg->text != NULL) {
        fail(EXIT_USAGE, "give one secret: --secret-file or --secret-exec, "
             "once");
    }
    arg->text = value;
    arg->exec = optch == OPT_SECRET_EXEC || optch == OPT_MASTER_EXEC;
    arg->master = optch == OPT_MASTER_FILE || optch == OPT_MASTER_EXEC;
}

static beacon_key_use_t load_secret(apr_pool_t *p, const secret_arg_t *arg,
                                    take_t take, beacon_key_t *key)
{
    beacon_key_use_t use;

    if (arg == NULL || arg->text == NULL) {
        return key_from_env(p, take, key);
    }
    use = arg->master || take == TAKE_MASTER ? BEACON_KEY_USE_MASTER
                                             : BEACON_KEY_USE_MAC;
    if (arg->exec) {
        key_from_exec(p, arg->master ? "--master-exec" : "--secret-exec",
                      arg->text, use, key);
    }
    else {
        key_from_file(p, arg->master ? "--master-file" : "--secret-file",
                      arg->text, use, key);
    }
    return use;
}

void load_key(apr_pool_t *p, const secret_arg_t *arg, beacon_key_t *key)
{
    (void)load_secret(p, arg, TAKE_KEY, key);
}

void load_master(apr_pool_t *p, const secret_arg_t *arg, beacon_key_t *key)
{
    (void)load_secret(p, arg, TAKE_MASTER, key);
}

int load_key_or_master(apr_pool_t *p, const secret_arg_t *arg,
                       beacon_key_t *key)
{
    return load_secret(p, arg, TAKE_EITHER, key) == BEACON_KEY_USE_MASTER;
}
