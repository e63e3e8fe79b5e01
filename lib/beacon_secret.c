/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Where a secret comes from: the secret itself, file:PATH or exec:PATH,
 * the same for ProxyBeaconSecret and beaconctl, so that a value one of
 * them takes means the same key to the other (env:NAME is refused, with
 * the hint to what does that). The file and the program's
 * output follow one rule, the secret-file rule (beacon_key_parse_file).
 */

#define _POSIX_C_SOURCE 200809L /* strncasecmp, SIGKILL */

#include <signal.h>
#include <string.h>
#include <strings.h>

#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "beacon.h"

#define WAIT_SLICE apr_time_from_msec(10)

static int has_prefix(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* "WORD:/": a scheme's letters (RFC 3986), a colon and a slash. */
static int looks_like_a_source(const char *s)
{
    if (!apr_isalpha(*s)) {
        return 0;
    }
    while (apr_isalnum(*s) || *s == '+' || *s == '-' || *s == '.' ||
           *s == '_') {
        s++;
    }
    return s[0] == ':' && s[1] == '/';
}

const char *beacon_secret_source(const char *value,
                                 beacon_secret_source_t *source,
                                 const char **rest)
{
    if (has_prefix(value, "file:")) {
        *source = BEACON_SECRET_FILE;
        *rest = value + 5;
        return NULL;
    }
    if (has_prefix(value, "exec:")) {
        *source = BEACON_SECRET_EXEC;
        *rest = value + 5;
        return NULL;
    }
    if (has_prefix(value, "env:")) {
        /* a source httpd and a shell already have, each its own way */
        return "env: is no source: use httpd's own ${NAME} in "
               "ProxyBeaconSecret (a Define or httpd's environment) and, "
               "for beaconctl, the secret itself in BEACON_SECRET";
    }
    if (looks_like_a_source(value)) {
        return "only file:/path and exec:/path [args] say where a secret "
               "comes from; any other WORD:/ is refused, not taken as a "
               "passphrase (the secret itself is hex: and 32 hex digits, or "
               "a passphrase of 16 bytes or more)";
    }
    *source = BEACON_SECRET_INLINE;
    *rest = value;
    return NULL;
}

/* The program's output until it ends it, size bytes are in (all the rule
 * reads), or deadline: APR_SUCCESS, APR_TIMEUP or a read error. */
static apr_status_t read_output(apr_file_t *out, apr_time_t deadline,
                                char *buf, apr_size_t size, apr_size_t *len)
{
    *len = 0;
    while (*len < size) {
        apr_size_t n = size - *len;
        apr_time_t now = apr_time_now();
        apr_status_t rv;

        if (now >= deadline) {
            return APR_TIMEUP;
        }
        apr_file_pipe_timeout_set(out, deadline - now);
        rv = apr_file_read(out, buf + *len, &n);
        if (APR_STATUS_IS_EOF(rv)) {
            return APR_SUCCESS;
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
        *len += n;
    }
    return APR_SUCCESS;
}

/* Reaps the program, killing it at deadline; NULL when it exited 0. */
static const char *reap(apr_pool_t *p, apr_proc_t *proc, const char *prog,
                        apr_time_t deadline, apr_interval_time_t limit)
{
    apr_exit_why_e why;
    apr_status_t rv;
    int code;

    while ((rv = apr_proc_wait(proc, &code, &why, APR_NOWAIT)) ==
           APR_CHILD_NOTDONE) {
        if (apr_time_now() >= deadline) {
            apr_proc_kill(proc, SIGKILL);
            apr_proc_wait(proc, &code, &why, APR_WAIT);
            return apr_psprintf(p, "exec: %s did not finish within %.1f s",
                                prog, (double)limit / APR_USEC_PER_SEC);
        }
        apr_sleep(WAIT_SLICE);
    }
    if (rv != APR_CHILD_DONE) {
        return apr_psprintf(p, "exec: cannot wait for %s", prog);
    }
    if (APR_PROC_CHECK_SIGNALED(why)) {
        return apr_psprintf(p, "exec: %s was killed by signal %d", prog, code);
    }
    return code == 0 ? NULL
                     : apr_psprintf(p, "exec: %s exited with status %d", prog,
                                    code);
}

static const char *start(apr_pool_t *p, const char *const *argv,
                         apr_proc_t *proc)
{
    apr_procattr_t *attr;
    apr_status_t rv;
    char msg[120];

    rv = apr_procattr_create(&attr, p);
    if (rv == APR_SUCCESS) {
        /* our end non-blocking, so that a read can time out */
        rv = apr_procattr_io_set(attr, APR_NO_PIPE, APR_CHILD_BLOCK,
                                 APR_NO_PIPE);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_procattr_cmdtype_set(attr, APR_PROGRAM);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_procattr_error_check_set(attr, 1);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_proc_create(proc, argv[0], argv, NULL, attr, p);
    }
    return rv == APR_SUCCESS ? NULL
                             : apr_psprintf(p, "exec: cannot run %s: %s",
                                            argv[0],
                                            apr_strerror(rv, msg, sizeof(msg)));
}

const char *beacon_key_exec(apr_pool_t *p, const char *command,
                            apr_interval_time_t limit, beacon_key_t *key)
{
    char buf[BEACON_SECRET_READ_MAX];
    apr_time_t deadline = apr_time_now() + limit;
    apr_size_t len = 0;
    apr_proc_t proc;
    apr_status_t rv;
    const char *err;
    char **argv;

    if (apr_tokenize_to_argv(command, &argv, p) != APR_SUCCESS ||
        argv[0] == NULL || argv[0][0] != '/') {
        return "exec: needs a program's absolute path (exec:/path [args])";
    }
    memset(&proc, 0, sizeof(proc));
    if ((err = start(p, (const char *const *)argv, &proc)) != NULL) {
        return err;
    }
    rv = read_output(proc.out, deadline, buf, sizeof(buf), &len);
    apr_file_close(proc.out);
    err = reap(p, &proc, argv[0], rv == APR_TIMEUP ? 0 : deadline, limit);
    if (err == NULL && rv != APR_SUCCESS) {
        err = apr_psprintf(p, "exec: cannot read what %s prints", argv[0]);
    }
    if (err == NULL && (len == 0 || buf[0] == '\n' || buf[0] == '\r')) {
        err = apr_psprintf(p, "exec: %s printed no secret", argv[0]);
    }
    if (err == NULL && (err = beacon_key_parse_file(buf, len, key)) != NULL) {
        err = apr_psprintf(p, "exec: what %s prints: %s", argv[0], err);
    }
    beacon_wipe(buf, sizeof(buf));
    return err;
}
