/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* Revoked member urls; see mod_proxy_beacon_revoke.h. */

#include "mod_proxy_beacon_revoke.h"

#include <apr_strings.h>

/* One url: canonical, each once (a receiver holds at most
 * BEACON_RING_MAX_REVOKED; the ring says so at check_config). */
static const char *add_one(apr_pool_t *p, beacon_revoked *list,
                           const char *url)
{
    char canonical[BEACON_URL_MAX];
    const char *err = beacon_url_canonicalize(url, strlen(url), canonical,
                                              sizeof(canonical));
    int i;

    if (err) {
        return err;
    }
    for (i = 0; i < list->nelts; i++) {
        if (strcmp(APR_ARRAY_IDX(list, i, const char *), canonical) == 0) {
            return NULL;
        }
    }
    APR_ARRAY_PUSH(list, const char *) = apr_pstrdup(p, canonical);
    return NULL;
}

const char *beacon_revoke_add(cmd_parms *cmd, beacon_revoked **list,
                              const char *urls, const char *what)
{
    char *copy = apr_pstrdup(cmd->temp_pool, urls), *url, *last;
    const char *err = *urls ? NULL : "an empty url";

    if (*list == NULL) {
        *list = apr_array_make(cmd->pool, 4, sizeof(const char *));
    }
    for (url = apr_strtok(copy, ",", &last); err == NULL && url;
         url = apr_strtok(NULL, ",", &last)) {
        if ((err = add_one(cmd->pool, *list, url)) != NULL) {
            break; /* url is the one to name */
        }
    }
    if (err == NULL) {
        return NULL;
    }
    return apr_psprintf(cmd->pool, "%s '%s' is no member url: %s", what,
                        ap_escape_logitem(cmd->temp_pool, url ? url : urls),
                        err);
}

beacon_revoked *beacon_revoke_merge(apr_pool_t *p, beacon_revoked *base,
                                    beacon_revoked *add)
{
    if (base == NULL || add == NULL) {
        return add ? add : base;
    }
    return apr_array_append(p, base, add);
}

const char *beacon_revoke_into_ring(beacon_ring_t *ring, int set,
                                    const beacon_revoked *list)
{
    const char *err = NULL;
    int i;

    for (i = 0; list && err == NULL && i < list->nelts; i++) {
        err = beacon_ring_revoke(ring, set, APR_ARRAY_IDX(list, i, const char *));
    }
    return err;
}
