/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: "canonical" means "httpd can hold it under the same
 * name". The canonical url is what a receiver names its member with, and
 * the module creates that member with ap_proxy_define_worker_ex(), which
 * parses the url with APR-util's apr_uri_parse(), copies its parts into
 * fixed arrays of the shared worker and names it apr_uri_unparse() of
 * the parts, lower-cased, less the port ap_proxy_port_of_scheme() gives.
 * A url that does not fit there is refused by httpd, and once cost a
 * child of the proxy its life.
 *
 * For any input beacon_url_canonicalize() accepts, its canonical url,
 * through apr_uri_parse() as httpd does it:
 *  - parses, with a scheme and a non-empty hostname;
 *  - fits the worker: scheme, hostname and the url itself shorter than
 *    httpd's PROXY_WORKER_MAX_SCHEME_SIZE, PROXY_RFC1035_HOSTNAME_SIZE and
 *    PROXY_WORKER_EXT_NAME_SIZE (which count the NUL);
 *  - has no path other than an empty one, and no user, password, query
 *    or fragment;
 *  - gives itself back through apr_uri_unparse(APR_URI_UNP_REVEALPASSWORD),
 *    has a lower-case scheme and hostname, and no port that httpd would
 *    drop as its scheme's default: httpd names the worker exactly as the
 *    receiver names the member;
 *  - names a scheme httpd proxies to a balancer member, and a port httpd
 *    can connect to (the url's, or the scheme's default, never 0).
 */
#include "fuzz_common.h"

#include <apr_general.h>
#include <apr_uri.h>

/*
 * httpd 2.4's mod_proxy.h, restated: that header needs httpd's own
 * (httpd.h and more), which the fuzz targets and tools/lint do not get.
 * Each counts the terminating NUL.
 */
#define HTTPD_SCHEME_SIZE 16    /* PROXY_WORKER_MAX_SCHEME_SIZE */
#define HTTPD_HOSTNAME_SIZE 256 /* PROXY_RFC1035_HOSTNAME_SIZE */
#define HTTPD_NAME_EX_SIZE 384  /* PROXY_WORKER_EXT_NAME_SIZE */

static apr_pool_t *pool;

/*
 * httpd 2.4's ap_proxy_port_of_scheme(), restated from proxy_util.c:
 * APR-util's table first, then mod_proxy's own (pschemes[]); 0 for a
 * scheme neither knows.
 */
static apr_port_t httpd_port_of_scheme(const char *scheme)
{
    static const struct {
        const char *name;
        apr_port_t port;
    } pschemes[] = {
        {"fcgi", 8000}, {"ajp", 8009}, {"scgi", 4000}, {"h2c", 80},
        {"h2", 443},    {"ws", 80},    {"wss", 443},
    };
    apr_port_t port = apr_uri_port_of_scheme(scheme);
    size_t i;

    for (i = 0; port == 0 && i < sizeof(pschemes) / sizeof(pschemes[0]); i++) {
        if (strcmp(scheme, pschemes[i].name) == 0) {
            port = pschemes[i].port;
        }
    }
    return port;
}

/* The schemes httpd 2.4 proxies to a balancer member: mod_proxy_http,
 * _wstunnel, _http2, _ajp, _fcgi, _scgi and _uwsgi's. */
static int is_member_scheme(const char *scheme)
{
    static const char *const names[] = {"http", "https", "ws",   "wss",
                                        "h2",   "h2c",   "ajp",  "fcgi",
                                        "scgi", "uwsgi"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(scheme, names[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

static int has_upper(const char *s)
{
    for (; *s; s++) {
        if (*s >= 'A' && *s <= 'Z') {
            return 1;
        }
    }
    return 0;
}

/* What ap_proxy_define_worker_ex needs of the parts. */
static void check_parts(const char *canonical, const apr_uri_t *uri)
{
    FUZZ_CHECK(uri->scheme != NULL && uri->scheme[0] != '\0',
               "\"%s\": no scheme", canonical);
    FUZZ_CHECK(uri->hostname != NULL && uri->hostname[0] != '\0',
               "\"%s\": no hostname", canonical);
    FUZZ_CHECK(strlen(uri->scheme) < HTTPD_SCHEME_SIZE,
               "\"%s\": scheme of %zu bytes", canonical, strlen(uri->scheme));
    FUZZ_CHECK(strlen(uri->hostname) < HTTPD_HOSTNAME_SIZE,
               "\"%s\": hostname of %zu bytes", canonical,
               strlen(uri->hostname));
    FUZZ_CHECK(uri->path == NULL || uri->path[0] == '\0',
               "\"%s\": path \"%s\"", canonical, uri->path);
    FUZZ_CHECK(uri->user == NULL && uri->password == NULL,
               "\"%s\": userinfo", canonical);
    FUZZ_CHECK(uri->query == NULL && uri->fragment == NULL,
               "\"%s\": query or fragment", canonical);
    FUZZ_CHECK(!has_upper(uri->scheme) && !has_upper(uri->hostname),
               "\"%s\": httpd would lower-case it into another name",
               canonical);
}

/* The name httpd gives the worker, and the port it connects to. */
static void check_name(const char *canonical, apr_uri_t *uri)
{
    const char *name = apr_uri_unparse(pool, uri, APR_URI_UNP_REVEALPASSWORD);
    apr_port_t default_port = httpd_port_of_scheme(uri->scheme);

    FUZZ_CHECK(strcmp(name, canonical) == 0,
               "\"%s\" unparses as \"%s\"", canonical, name);
    FUZZ_CHECK(is_member_scheme(uri->scheme),
               "\"%s\": httpd proxies no member by %s", canonical,
               uri->scheme);
    FUZZ_CHECK(uri->port == 0 || uri->port != default_port,
               "\"%s\": httpd drops port %u from the name", canonical,
               (unsigned)uri->port);
    FUZZ_CHECK(uri->port != 0 || default_port != 0,
               "\"%s\": httpd would connect to port 0", canonical);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    char canonical[BEACON_URL_MAX];
    apr_uri_t uri;

    if (!ready) {
        FUZZ_CHECK(apr_initialize() == APR_SUCCESS &&
                       apr_pool_create(&pool, NULL) == APR_SUCCESS,
                   "APR");
        ready = 1;
    }
    if (beacon_url_canonicalize((const char *)data, size, canonical,
                                sizeof(canonical)) != NULL) {
        return 0;
    }
    FUZZ_CHECK(strlen(canonical) < HTTPD_NAME_EX_SIZE,
               "\"%s\": %zu bytes, more than a worker's name_ex holds",
               canonical, strlen(canonical));
    memset(&uri, 0, sizeof(uri));
    FUZZ_CHECK(apr_uri_parse(pool, canonical, &uri) == APR_SUCCESS,
               "apr_uri_parse refuses \"%s\"", canonical);
    check_parts(canonical, &uri);
    check_name(canonical, &uri);
    apr_pool_clear(pool);
    return 0;
}
