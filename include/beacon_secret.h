/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: where a secret comes from, file:, exec: or inline
 * (lib/beacon_secret.c).
 */
#ifndef BEACON_SECRET_H
#define BEACON_SECRET_H

#include "beacon_key.h"

#include <apr_pools.h>
#include <apr_time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Where a secret comes from, as ProxyBeaconSecret and beaconctl take it:
 *   file:PATH          the secret-file rule on PATH
 *   exec:PATH [ARGS]   the first line PATH prints, as httpd's own exec:
 *                      (SSLPassPhraseDialog, AuthLDAPBindPassword)
 *   anything else      the secret itself (hex: or a passphrase)
 * The prefixes in any case. A value that starts with another WORD: and a
 * slash ("pass:/...", a misspelt "fiel:/...") is refused: it looks like a
 * source, and taken as a passphrase it would fail only at runtime, as a
 * mac mismatch on every announcement. So is env: in any case, with or
 * without a slash, with the hint to httpd's ${NAME} and BEACON_SECRET.
 */
typedef enum {
    BEACON_SECRET_INLINE,
    BEACON_SECRET_FILE,
    BEACON_SECRET_EXEC
} beacon_secret_source_t;

/* Sets *source and *rest (past the prefix); NULL, or a static message
 * naming the accepted forms. */
const char *beacon_secret_source(const char *value,
                                 beacon_secret_source_t *source,
                                 const char **rest);

/*
 * What a secret is for, as ProxyBeaconSecret and beaconctl take it:
 * "derive:" (any case) before a secret in any of the forms above
 * (derive:hex:..., derive:file:/path, derive:exec:/path) makes it a
 * master, BEACON_KEY_USE_MASTER; without it, it is a key. Sets *use and
 * *rest (past the prefix).
 */
#define BEACON_SECRET_DERIVE "derive:"
void beacon_secret_use(const char *value, beacon_key_use_t *use,
                       const char **rest);

#define BEACON_SECRET_EXEC_LIMIT apr_time_from_sec(10)

/*
 * Runs command ("PATH [ARGS]", split as a shell would split words, no
 * shell run) and applies the secret-file rule to what it prints. Its
 * standard error is the caller's; its output never outlives the call. It
 * gets fds 0 to 2 only and leads a process group of its own, which is
 * killed whole at limit, and what is left of it once the program exits:
 * a background child must not keep the output or the caller's stderr
 * (something that must run on detaches with setsid).
 * A program that fails, prints nothing or runs past limit (then killed)
 * is an error. Returns NULL, or a message from p that never holds the
 * output.
 */
const char *beacon_key_exec(apr_pool_t *p, const char *command,
                            apr_interval_time_t limit, beacon_key_t *key);
/* The same for a secret of the given use (beacon_key_use_t). */
const char *beacon_key_exec_as(apr_pool_t *p, const char *command,
                               apr_interval_time_t limit,
                               beacon_key_use_t use, beacon_key_t *key);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_SECRET_H */
