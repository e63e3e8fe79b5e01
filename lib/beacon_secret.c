/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Where a secret comes from: the secret itself, file:PATH or exec:PATH,
 * the same for ProxyBeaconSecret and beaconctl, so that a value one of
 * them takes means the same key to the other (env:NAME is refused, with
 * the hint to what does that). The file and the program's
 * output follow one rule, the secret-file rule (beacon_key_parse_file).
 */

#include <string.h>
#include <strings.h>

#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_errno.h>

#include "beacon.h"

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

void beacon_secret_use(const char *value, beacon_key_use_t *use,
                       const char **rest)
{
    int master = has_prefix(value, BEACON_SECRET_DERIVE);

    *use = master ? BEACON_KEY_USE_MASTER : BEACON_KEY_USE_MAC;
    *rest = master ? value + strlen(BEACON_SECRET_DERIVE) : value;
}

const char *beacon_key_exec_as(apr_pool_t *p, const char *command,
                               apr_interval_time_t limit,
                               beacon_key_use_t use, beacon_key_t *key)
{
    char buf[BEACON_SECRET_READ_MAX];
    apr_size_t len = 0;
    const char *err;
    char **argv;

    if (apr_tokenize_to_argv(command, &argv, p) != APR_SUCCESS ||
        argv[0] == NULL || argv[0][0] != '/') {
        return "exec: needs a program's absolute path (exec:/path [args])";
    }
    err = beacon_exec_read(p, argv, argv[0], limit, buf, sizeof(buf), &len);
    if (err != NULL) {
        err = apr_pstrcat(p, "exec: ", err, NULL);
    }
    if (err == NULL && (len == 0 || buf[0] == '\n' || buf[0] == '\r')) {
        err = apr_psprintf(p, "exec: %s printed no secret", argv[0]);
    }
    if (err == NULL && (err = beacon_key_parse_file_as(buf, len, use, key)) != NULL) {
        err = apr_psprintf(p, "exec: what %s prints: %s", argv[0], err);
    }
    beacon_wipe(buf, sizeof(buf));
    return err;
}

const char *beacon_key_exec(apr_pool_t *p, const char *command,
                            apr_interval_time_t limit, beacon_key_t *key)
{
    return beacon_key_exec_as(p, command, limit, BEACON_KEY_USE_MAC, key);
}
