/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* Reserved slots; see mod_proxy_beacon_slots.h. */

#include "mod_proxy_beacon_slots.h"

#include <apr_hash.h>
#include <apr_lib.h>
#include <apr_strings.h>

#define PLACEHOLDER_PREFIX "http://slot-"
#define PLACEHOLDER_SUFFIX "." BEACON_RESERVED_DOMAIN

struct beacon_slots_reserved {
    beacon_worker_balancer *ws;
    int reserved;            /* slots= */
    beacon_slot **index;     /* the placeholders found by the last walk */
    int indexed;
    int next;                /* index[next..indexed) may still be free */
    int free_slots;          /* of those, not taken since */
    apr_hash_t *by_identity; /* identity hash -> placeholder name: a
                              * reserved slot keeps its placeholder's
                              * hash, whatever it is named now */
};

static const char *placeholder_name(apr_pool_t *p, int k)
{
    return apr_psprintf(p, PLACEHOLDER_PREFIX "%d" PLACEHOLDER_SUFFIX, k);
}

const char *beacon_slots_define(apr_pool_t *p, server_rec *s, const char *name,
                                int n, const beacon_member_params *params)
{
    int k;

    for (k = 1; k <= n; k++) {
        const char *err = beacon_worker_define_reserved(p, s, name, params,
                                                        placeholder_name(p, k));

        if (err != NULL) {
            return err;
        }
    }
    return NULL;
}

int beacon_slots_is_placeholder(const char *name)
{
    apr_size_t prefix = sizeof(PLACEHOLDER_PREFIX) - 1;
    apr_size_t suffix = sizeof(PLACEHOLDER_SUFFIX) - 1;
    apr_size_t len = strlen(name), i;

    if (len <= prefix + suffix || strncmp(name, PLACEHOLDER_PREFIX, prefix) != 0 ||
        strcmp(name + len - suffix, PLACEHOLDER_SUFFIX) != 0) {
        return 0;
    }
    for (i = prefix; i < len - suffix; i++) {
        if (!apr_isdigit(name[i])) {
            return 0;
        }
    }
    return 1;
}

static int is_free(const beacon_slot *slot)
{
    beacon_slot_view v;

    beacon_worker_view(slot, &v);
    return beacon_slots_is_placeholder(v.name);
}

beacon_slots_reserved *beacon_slots_open(apr_pool_t *pconf,
                                         beacon_worker_balancer *ws, int n)
{
    beacon_slots_reserved *rs = apr_pcalloc(pconf, sizeof(*rs));
    int k;

    rs->ws = ws;
    rs->reserved = n;
    rs->index = apr_pcalloc(pconf, sizeof(beacon_slot *) * (apr_size_t)(n + 1));
    rs->by_identity = apr_hash_make(pconf);
    for (k = 1; k <= n; k++) {
        const char *name = placeholder_name(pconf, k);
        apr_uint32_t *identity = apr_palloc(pconf, sizeof(*identity));

        *identity = beacon_worker_identity_of(name);
        apr_hash_set(rs->by_identity, identity, sizeof(*identity), name);
    }
    beacon_slots_index(rs);
    return rs;
}

void beacon_slots_index(beacon_slots_reserved *rs)
{
    int i, n = beacon_worker_count(rs->ws);

    rs->indexed = rs->next = 0;
    for (i = 0; i < n && rs->indexed < rs->reserved; i++) {
        beacon_slot *slot = beacon_worker_at(rs->ws, i);

        if (is_free(slot)) {
            rs->index[rs->indexed++] = slot;
        }
    }
    rs->free_slots = rs->indexed;
}

int beacon_slots_free(const beacon_slots_reserved *rs)
{
    return rs->free_slots;
}

int beacon_slots_take_this(beacon_slots_reserved *rs, beacon_slot *slot,
                           const beacon_worker *tmpl, const char *url,
                           apr_pool_t *p)
{
    beacon_slot_change member = {0};
    beacon_slot_view v;
    unsigned int admin;

    beacon_worker_view(slot, &v);
    if (!beacon_slots_is_placeholder(v.name)) {
        return 0;
    }
    /* stopped is the placeholder's own; anything else of the admin's
     * (drain, hot standby, ... in balancer-manager) was set on no member,
     * and would keep the new one from serving */
    admin = v.status & BEACON_ADMIN_FLAGS & ~BEACON_W_STOPPED;
    if (admin) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, beacon_worker_server(rs->ws),
                     BCNLOGNO(00192) "cleared flags '%s' an admin set on the "
                     "free reserved slot %s of %s: %s takes it",
                     beacon_worker_admin_letters(p, admin), v.name,
                     beacon_worker_balancer_name(rs->ws), url);
    }
    beacon_worker_rename(rs->ws, slot, tmpl);
    /* no longer stopped: health checks, if any, begin; still disabled
     * until the caller puts it in rotation */
    member.clear = BEACON_ADMIN_FLAGS;
    beacon_worker_apply(slot, &member);
    rs->free_slots--;
    return 1;
}

beacon_slot *beacon_slots_take(beacon_slots_reserved *rs,
                               const beacon_worker *tmpl, const char *url,
                               apr_pool_t *p)
{
    /* a slot a restart gave back to its member is skipped on the way */
    for (; rs->next < rs->indexed; rs->next++) {
        if (beacon_slots_take_this(rs, rs->index[rs->next], tmpl, url, p)) {
            return rs->index[rs->next++];
        }
    }
    return NULL;
}

int beacon_slots_give_back(beacon_slots_reserved *rs, const beacon_entry *e,
                           apr_pool_t *p)
{
    const char *name = apr_hash_get(rs->by_identity, &e->hash_def,
                                    sizeof(e->hash_def));
    beacon_slot *slot = beacon_worker_slot(rs->ws, e);
    beacon_slot_change placeholder = {0};
    beacon_worker *tmpl;

    if (name == NULL || slot == NULL ||
        (tmpl = beacon_worker_template(rs->ws, NULL, name, p)) == NULL) {
        return 0;
    }
    beacon_worker_rename(rs->ws, slot, tmpl);
    beacon_worker_restart_slot(slot, 1);
    placeholder.set = BEACON_PLACEHOLDER_FLAGS;
    beacon_worker_apply(slot, &placeholder);
    rs->free_slots++;
    return 1;
}

void beacon_slots_count(const beacon_slots_reserved *rs, int *reserved, int *free_slots)
{
    int i, n;

    *reserved = rs->reserved;
    *free_slots = 0;
    /* a view's request thread: under the thread lock, as every sync is,
     * so no member another thread is adopting is walked half made */
    if (beacon_worker_lock_members(rs->ws) != APR_SUCCESS) {
        return;
    }
    n = beacon_worker_count(rs->ws);
    for (i = 0; i < n; i++) {
        *free_slots += is_free(beacon_worker_at(rs->ws, i));
    }
    beacon_worker_thread_unlock(rs->ws);
}
