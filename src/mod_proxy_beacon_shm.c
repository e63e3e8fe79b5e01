/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* The status shared memory; see mod_proxy_beacon_shm.h. */

#include "mod_proxy_beacon_shm.h"

#include <apr_atomic.h>
#include <apr_shm.h>

#define READ_ATTEMPTS 100

const char *beacon_shm_drop_name(unsigned drop)
{
    switch (drop) {
    case BEACON_DROP_NOT_OURS:            return "member not managed by beacon";
    case BEACON_DROP_CONTEXT_NOT_ALLOWED: return "context not allowed";
    default:                              return beacon_reason_name(drop);
    }
}

const char *beacon_shm_drop_id(unsigned drop)
{
    switch (drop) {
    case BEACON_DROP_NOT_OURS:            return "not_managed";
    case BEACON_DROP_CONTEXT_NOT_ALLOWED: return "context_not_allowed";
    default:                              return beacon_reason_id(drop);
    }
}

void *beacon_shm_create(apr_pool_t *pconf, server_rec *s, apr_size_t size)
{
    apr_shm_t *shm;
    apr_status_t rv = apr_shm_create(&shm, size, NULL, pconf);
    void *base;

    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, BCNLOGNO(00013)
                     "cannot create shared memory for the beacon status");
        return NULL;
    }
    base = apr_shm_baseaddr_get(shm);
    memset(base, 0, size);
    return base;
}

apr_size_t beacon_shm_status_size(unsigned capacity)
{
    return sizeof(beacon_receiver_status) +
           sizeof(beacon_status_record) * (apr_size_t)capacity;
}

beacon_receiver_status *beacon_shm_status_create(apr_pool_t *pconf, server_rec *s,
                                                 unsigned capacity)
{
    beacon_receiver_status *sh = beacon_shm_create(pconf, s,
                                                   beacon_shm_status_size(capacity));

    if (sh) {
        sh->capacity = capacity;
    }
    return sh;
}

void beacon_shm_status_write_begin(beacon_receiver_status *sh)
{
    apr_atomic_inc32(&sh->generation);
}

void beacon_shm_status_write_end(beacon_receiver_status *sh, apr_uint32_t nrecords)
{
    sh->nrecords = nrecords;
    apr_atomic_inc32(&sh->generation);
}

unsigned beacon_shm_status_read(const beacon_receiver_status *sh,
                                beacon_status_record *copy)
{
    /* apr_atomic_read32 takes no const; the generation is only read here */
    volatile apr_uint32_t *generation = (volatile apr_uint32_t *)&sh->generation;
    int attempt;

    for (attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        apr_uint32_t before = apr_atomic_read32(generation);
        unsigned n = sh->nrecords;

        if (before & 1 || n > sh->capacity) {
            apr_sleep(100);
            continue;
        }
        memcpy(copy, sh->rec, n * sizeof(*copy));
        if (apr_atomic_read32(generation) == before) {
            return n;
        }
    }
    return 0;
}
