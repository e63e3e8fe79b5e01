/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A receiver's UDP socket: bound when due (quickly retried while a
 * previous owner may still hold the port, then with a growing back-off),
 * and drained in batches with recvmmsg(), so that a flood costs one
 * system call per 64 datagrams and no allocation. It knows nothing of
 * what the datagrams say.
 */
#ifndef MOD_PROXY_BEACON_INBOX_H
#define MOD_PROXY_BEACON_INBOX_H

#include "mod_proxy_beacon_util.h"

#include <apr_network_io.h>
#include <sys/socket.h>

typedef struct beacon_inbox beacon_inbox;

/* Called for each datagram received; buf is not NUL-terminated, and len
 * may exceed BEACON_MAX_DATAGRAM by one (an oversize one). */
typedef void beacon_datagram_fn(void *ctx, const char *buf, apr_size_t len,
                                const struct sockaddr *peer,
                                socklen_t peer_len, apr_pool_t *scratch);

/* In the watchdog owner: an unbound inbox for host (NULL: every address)
 * and port, with label ("addr:port") for its log lines; memory from p. */
beacon_inbox *beacon_inbox_make(apr_pool_t *p, server_rec *s,
                                const char *host, apr_port_t port,
                                const char *label);

/*
 * Binds the socket if it is not bound and a retry is due at now; since is
 * when this child became the owner (a previous owner may hold the port
 * for a moment after a graceful restart). Returns 1 when it bound just
 * now, else 0; failures are logged here.
 */
int beacon_inbox_open(beacon_inbox *in, apr_time_t now, apr_time_t since);

/* The bound socket, or NULL. */
apr_socket_t *beacon_inbox_socket(const beacon_inbox *in);

/* Receives what is queued, at most a bounded number per call (the rest
 * waits for the next poll), and hands each datagram to fn. */
void beacon_inbox_drain(beacon_inbox *in, beacon_datagram_fn *fn, void *ctx,
                        apr_pool_t *scratch);

/* "[addr]:port" or "addr:port" of a peer, for log lines. */
const char *beacon_peer_label(apr_pool_t *p, const struct sockaddr *peer,
                              socklen_t len);

#endif /* MOD_PROXY_BEACON_INBOX_H */
