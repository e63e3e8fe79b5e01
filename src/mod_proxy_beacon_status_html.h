/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* The status pages as HTML: the body of beacon-status and of beacon's
 * section in server-status. */
#ifndef MOD_PROXY_BEACON_STATUS_HTML_H
#define MOD_PROXY_BEACON_STATUS_HTML_H

#include "mod_proxy_beacon_util.h"

/* Every receiver and sender of server only (NULL: of every server), as
 * a section of another page (server-status): its style scoped to it. */
void beacon_status_html_body(request_rec *r, const server_rec *only);

/* The whole beacon-status page, headers included (?refresh=N as
 * mod_status reads it); the body unless r->header_only. */
void beacon_status_html_page(request_rec *r, const server_rec *only);

#endif /* MOD_PROXY_BEACON_STATUS_HTML_H */
