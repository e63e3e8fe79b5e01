/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: a program's output, bounded in time (lib/beacon_exec.c):
 * the secret's exec: (beacon_key_exec) and beaconctl send
 * --lbfactor-command read what a program prints through it.
 */
#ifndef BEACON_EXEC_H
#define BEACON_EXEC_H

#include <apr_pools.h>
#include <apr_time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Runs argv[0] (a path; argv NULL-terminated, no shell unless argv[0] is
 * one) and reads what it prints until it exits: the first size bytes
 * into buf, *len of them, the rest read and dropped. Its standard error
 * is the caller's; it gets fds 0 to 2 only (1 is the pipe) and leads a
 * process group of its own, which is killed whole at limit, and what is
 * left of it once the program exits: a background child must not keep
 * the output or the caller's stderr. Returns NULL when the program
 * exited 0 within limit, or a message from p naming it as name, never
 * holding its output: "NAME exited with status N", "NAME was killed by
 * signal N", "NAME did not finish within N.N s", "cannot run NAME: ...".
 */
const char *beacon_exec_read(apr_pool_t *p, char *const argv[],
                             const char *name, apr_interval_time_t limit,
                             char *buf, apr_size_t size, apr_size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_EXEC_H */
