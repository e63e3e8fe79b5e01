/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A receiver's UDP socket: bound by the parent and kept across restarts,
 * or, when the parent could not bind it, by the owner when due (quickly
 * retried while a previous owner may still hold the port, then with a
 * growing back-off), and drained in batches with recvmmsg(), so that a flood costs one
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

/* In the watchdog owner: an inbox for host (NULL: every address) and
 * port, with label ("addr:port") for its log lines; memory from p. kept
 * is the socket the parent bound for it (beacon_inbox_kept_open), or NULL: the
 * inbox then binds one itself. */
beacon_inbox *beacon_inbox_make(apr_pool_t *p, server_rec *s,
                                const char *host, apr_port_t port,
                                const char *label, apr_socket_t *kept);

/*
 * Binds the socket if it is not bound and a retry is due at now; since is
 * when this child became the owner (a previous owner may hold the port
 * for a moment after a graceful restart). Returns 1 when it bound just
 * now (or, the first time, when it has the parent's socket), else 0;
 * failures are logged here.
 */
int beacon_inbox_open(beacon_inbox *in, apr_time_t now, apr_time_t since);

/* The bound socket, or NULL. */
apr_socket_t *beacon_inbox_socket(const beacon_inbox *in);

/* Receives what is queued, at most a bounded number per call (the rest
 * waits for the next poll), and hands each datagram to fn. */
void beacon_inbox_drain(beacon_inbox *in, beacon_datagram_fn *fn, void *ctx,
                        apr_pool_t *scratch);

/*
 * The sockets the parent binds in post_config and keeps in the process
 * pool across generations, as httpd keeps its listeners: the children
 * inherit them, and what arrives while one generation's owner hands over
 * to the next waits in the kernel's buffer. Each generation begins (none
 * claimed yet), claims the sockets its receivers name again by bind
 * address, releases the rest (closed) and opens what is new.
 */
typedef struct beacon_kept_sockets beacon_kept_sockets;

beacon_kept_sockets *beacon_inbox_kept_begin(apr_pool_t *process_pool);

/* The kept socket bound to host:port, claimed now, or NULL. */
apr_socket_t *beacon_inbox_kept_claim(beacon_kept_sockets *k, const char *host,
                                      apr_port_t port);

/* Closes every kept socket not claimed since beacon_inbox_kept_begin (logged
 * on s). */
void beacon_inbox_kept_release(beacon_kept_sockets *k, server_rec *s);

/* A socket bound to host:port now, kept and claimed; NULL when it cannot
 * be bound (logged: the inbox then binds it in the owner). */
apr_socket_t *beacon_inbox_kept_open(beacon_kept_sockets *k, server_rec *s,
                                     const char *host, apr_port_t port,
                                     const char *label);

/* "[addr]:port" or "addr:port" of a peer, for log lines. */
const char *beacon_inbox_peer_label(apr_pool_t *p, const struct sockaddr *peer,
                                    socklen_t len);

#endif /* MOD_PROXY_BEACON_INBOX_H */
