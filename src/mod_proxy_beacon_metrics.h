/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The status handler's ?metrics: what beacon knows, in Prometheus's text
 * exposition format 0.0.4, for a Prometheus server to scrape. The same
 * data as ?json (mod_proxy_beacon_view.c), named and labelled as
 * Prometheus expects; docs/monitoring.md lists the families.
 */
#ifndef MOD_PROXY_BEACON_METRICS_H
#define MOD_PROXY_BEACON_METRICS_H

#include "mod_proxy_beacon_util.h"

/* The content type the handler sets for the page. */
#define BEACON_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Writes the families of server only's receivers and senders (NULL:
 * every server's) to r. */
void beacon_metrics_print(request_rec *r, const server_rec *only);

#endif /* MOD_PROXY_BEACON_METRICS_H */
