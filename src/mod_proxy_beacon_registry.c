/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* The ownership registry; see mod_proxy_beacon_registry.h. */

#include "mod_proxy_beacon_registry.h"

#include <apr_strings.h>
#include <ap_provider.h>
#include <ap_slotmem.h>
#include <mod_proxy.h>

/*
 * One entry. mod_slotmem_shm restores a persisted file of another layout
 * without a word (it reads the bytes, and only notes "old persist
 * file?"), and anyone who can write DefaultRuntimeDir can write one: an
 * entry counts only when it carries this layout's magic and its strings
 * end inside their fields (beacon_registry_url).
 */
#define MARK_IN_USE 0x42434e32 /* "BCN2": in use, this layout */

typedef struct {
    apr_uint32_t in_use;     /* MARK_IN_USE, or anything else: free */
    apr_uint32_t out;        /* beacon took it out of rotation */
    char balancer[PROXY_BALANCER_MAX_NAME_SIZE];
    char url[BEACON_URL_MAX];
} beacon_mark;

struct beacon_registry {
    ap_slotmem_provider_t *storage;
    ap_slotmem_instance_t *slots;
};

/* "proxy_beacon_<balancer>_<port>": one registry per receiver, a name that
 * stays the same across restarts so the persisted copy is found again. */
static const char *registry_name(apr_pool_t *p, const char *balancer_name,
                                 apr_port_t port)
{
    char *name = apr_psprintf(p, "proxy_beacon_%s_%u", balancer_name,
                              (unsigned)port);
    char *c;

    for (c = name; *c; c++) {
        if (!apr_isalnum(*c) && *c != '-') {
            *c = '_';
        }
    }
    return name;
}

beacon_registry *beacon_registry_open(apr_pool_t *pconf, server_rec *s,
                                      const char *balancer_name,
                                      apr_port_t port)
{
    beacon_registry *reg = apr_pcalloc(pconf, sizeof(*reg));
    const char *name = registry_name(pconf, balancer_name, port);
    apr_status_t rv;

    /* check_config made sure mod_slotmem_shm is loaded */
    reg->storage = ap_lookup_provider(AP_SLOTMEM_PROVIDER_GROUP, "shm",
                                      AP_SLOTMEM_PROVIDER_VERSION);
    rv = reg->storage->create(&reg->slots, name, sizeof(beacon_mark),
                              BEACON_REGISTRY_SIZE,
                              AP_SLOTMEM_TYPE_PREGRAB | AP_SLOTMEM_TYPE_PERSIST,
                              pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, BCNLOGNO(00002)
                     "cannot create the member registry %s in shared memory",
                     name);
        return NULL;
    }
    return reg;
}

static beacon_mark *mark_at(const beacon_registry *reg, unsigned i)
{
    void *p = NULL;

    if (reg->storage->dptr(reg->slots, i, &p) != APR_SUCCESS) {
        return NULL;
    }
    return p;
}

int beacon_registry_has(const beacon_registry *reg, const char *balancer,
                        const char *url)
{
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        const char *marked = beacon_registry_url(reg, i, balancer, NULL);

        if (marked && strcmp(marked, url) == 0) {
            return 1;
        }
    }
    return 0;
}

int beacon_registry_put(const beacon_registry *reg, const char *balancer,
                        const char *url)
{
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_mark *m = mark_at(reg, i);

        if (m && m->in_use != MARK_IN_USE) {
            apr_cpystrn(m->balancer, balancer, sizeof(m->balancer));
            apr_cpystrn(m->url, url, sizeof(m->url));
            m->out = 0;
            m->in_use = MARK_IN_USE;
            return 1;
        }
    }
    return 0;
}

int beacon_registry_has_room(const beacon_registry *reg)
{
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_mark *m = mark_at(reg, i);

        if (m && m->in_use != MARK_IN_USE) {
            return 1;
        }
    }
    return 0;
}

const char *beacon_registry_url(const beacon_registry *reg, unsigned i,
                                const char *balancer, int *out)
{
    beacon_mark *m = mark_at(reg, i);

    if (m == NULL || m->in_use != MARK_IN_USE ||
        memchr(m->balancer, '\0', sizeof(m->balancer)) == NULL ||
        memchr(m->url, '\0', sizeof(m->url)) == NULL ||
        strcmp(m->balancer, balancer) != 0) {
        return NULL;
    }
    if (out) {
        *out = m->out != 0;
    }
    return m->url;
}

void beacon_registry_set_out(const beacon_registry *reg, const char *balancer,
                             const char *url, int out)
{
    unsigned i;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        const char *marked = beacon_registry_url(reg, i, balancer, NULL);

        if (marked && strcmp(marked, url) == 0) {
            mark_at(reg, i)->out = out != 0;
            return;
        }
    }
}

void beacon_registry_forget(const beacon_registry *reg, unsigned i)
{
    beacon_mark *m = mark_at(reg, i);

    if (m) {
        m->in_use = 0;
    }
}

unsigned beacon_registry_damaged(const beacon_registry *reg)
{
    unsigned i, n = 0;

    for (i = 0; i < BEACON_REGISTRY_SIZE; i++) {
        beacon_mark *m = mark_at(reg, i);

        if (m && m->in_use != MARK_IN_USE && m->in_use != 0) {
            m->in_use = 0;
            n++;
        }
    }
    return n;
}
