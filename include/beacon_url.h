/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: a member's identity, its canonical url (lib/beacon_url.c).
 */
#ifndef BEACON_URL_H
#define BEACON_URL_H

#include "beacon_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Member identity                                                     */

/*
 * Canonicalizes an origin scheme://host[:port][/] into out (NUL-terminated):
 * scheme and host lower-cased, the scheme's default port dropped (httpd's:
 * http 80, https 443, ws 80, wss 443, h2 443, h2c 80, ajp 8009, fcgi 8000,
 * scgi 4000; uwsgi has none, so its port is required), one trailing '/'
 * ignored, an IPv6 literal rewritten in its RFC 5952 form. The result is
 * what httpd names the worker of that url, and fits it: at most 267 bytes.
 * Returns NULL on success, else a static message saying what is wrong
 * ("a path is not allowed", ...). Rejected: schemes httpd does not proxy
 * to a balancer member (all but the ten above, balancer:// among them),
 * hosts longer than 253 bytes, paths other than "/", queries, fragments,
 * userinfo, ports that are 0, above 65535 or not decimal, a missing host,
 * non-printable bytes, the "unix:" socket form, and results longer than
 * outsize - 1.
 */
const char *beacon_url_canonicalize(const char *url, apr_size_t len, char *out,
                                    apr_size_t outsize);

/*
 * Whether url[0..len) is in canonical form: accepted by
 * beacon_url_canonicalize, which gives back exactly these bytes. A member
 * key is derived from this form only, so that one member has one key.
 */
int beacon_url_is_canonical(const char *url, apr_size_t len);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_URL_H */
