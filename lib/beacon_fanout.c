/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The sender's fan-out: every proxy a sender names may stand for several
 * (a DNS name with a record per proxy of a tier), and each of them gets
 * every announcement. This file keeps the address sets: what a lookup
 * found, what a failed lookup keeps, which address two names share. The
 * lookups themselves (beacon_lookup) block and are run by the caller off
 * the path that sends; sending is the caller's callback.
 */

#define _POSIX_C_SOURCE 200809L /* inet_pton, inet_ntop */

#include <string.h>
#include <arpa/inet.h>

#include <apr_atomic.h>
#include <apr_strings.h>

#include "beacon.h"

apr_size_t beacon_fanout_size(unsigned nnames)
{
    return sizeof(beacon_fanout_t) +
           sizeof(beacon_fanout_name_t) * (nnames > 1 ? nnames - 1 : 0);
}

void beacon_fanout_init(beacon_fanout_t *f, unsigned nnames)
{
    memset(f, 0, beacon_fanout_size(nnames));
    f->nnames = nnames;
}

const char *beacon_sockaddr_text(const beacon_sockaddr_t *a, char *buf,
                                 apr_size_t size)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (a->u.sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->u.sin6.sin6_addr, ip, sizeof(ip));
        apr_snprintf(buf, size, "[%s]:%u", ip, ntohs(a->u.sin6.sin6_port));
    }
    else {
        inet_ntop(AF_INET, &a->u.sin.sin_addr, ip, sizeof(ip));
        apr_snprintf(buf, size, "%s:%u", ip, ntohs(a->u.sin.sin_port));
    }
    return buf;
}

const char *beacon_name_state_name(beacon_name_state_t state)
{
    switch (state) {
    case BEACON_NAME_PENDING:
        return "pending";
    case BEACON_NAME_RESOLVED:
        return "resolved";
    case BEACON_NAME_KEPT:
        return "kept";
    case BEACON_NAME_FAILED:
        return "failed";
    }
    return "?";
}

const char *beacon_fanout_name_addresses(const beacon_fanout_name_t *name,
                                         char *buf, apr_size_t size)
{
    char text[BEACON_SOCKADDR_TEXT_MAX];
    apr_size_t used = 0;
    unsigned i;

    buf[0] = '\0';
    for (i = 0; i < name->naddrs && used + 1 < size; i++) {
        used += apr_snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                             beacon_sockaddr_text(&name->addrs[i].to, text,
                                                  sizeof(text)));
    }
    return buf;
}

/* The same family, address and port (padding and flow labels aside). */
static int same_address(const beacon_sockaddr_t *a, const beacon_sockaddr_t *b)
{
    if (a->u.sa.sa_family != b->u.sa.sa_family) {
        return 0;
    }
    if (a->u.sa.sa_family == AF_INET6) {
        return a->u.sin6.sin6_port == b->u.sin6.sin6_port &&
               a->u.sin6.sin6_scope_id == b->u.sin6.sin6_scope_id &&
               memcmp(&a->u.sin6.sin6_addr, &b->u.sin6.sin6_addr,
                      sizeof(a->u.sin6.sin6_addr)) == 0;
    }
    return a->u.sin.sin_port == b->u.sin.sin_port &&
           a->u.sin.sin_addr.s_addr == b->u.sin.sin_addr.s_addr;
}

void beacon_lookup_add(beacon_lookup_t *r, const beacon_sockaddr_t *a)
{
    unsigned i;

    for (i = 0; i < r->n; i++) {
        if (same_address(&r->addrs[i], a)) {
            return;
        }
    }
    if (r->n == BEACON_FANOUT_MAX_ADDRS) {
        r->cut++;
        return;
    }
    r->addrs[r->n++] = *a;
}

void beacon_lookup(beacon_lookup_t *r, const char *host, apr_port_t port,
                   apr_pool_t *p)
{
    apr_sockaddr_t *sa, *each;

    r->n = r->cut = 0;
    r->status = apr_sockaddr_info_get(&sa, host, APR_UNSPEC, port, 0, p);
    if (r->status != APR_SUCCESS) {
        return;
    }
    for (each = sa; each; each = each->next) {
        beacon_sockaddr_t a;

        if ((each->family != APR_INET && each->family != APR_INET6) ||
            (apr_size_t)each->salen > sizeof(a.u)) {
            continue;
        }
        memset(&a, 0, sizeof(a));
        memcpy(&a.u, &each->sa, (apr_size_t)each->salen);
        a.len = (apr_uint32_t)each->salen;
        beacon_lookup_add(r, &a);
    }
    /* a resolver that answers with nothing usable has not answered */
    if (r->n == 0) {
        r->status = APR_ENOENT;
    }
}

/* An IP address in text, as the sockaddr it names; 0 for anything else. */
static int literal_address(const char *host, apr_port_t port,
                           beacon_sockaddr_t *a)
{
    memset(a, 0, sizeof(*a));
    if (inet_pton(AF_INET, host, &a->u.sin.sin_addr) == 1) {
        a->u.sin.sin_family = AF_INET;
        a->u.sin.sin_port = htons(port);
        a->len = sizeof(a->u.sin);
        return 1;
    }
    if (inet_pton(AF_INET6, host, &a->u.sin6.sin6_addr) == 1) {
        a->u.sin6.sin6_family = AF_INET6;
        a->u.sin6.sin6_port = htons(port);
        a->len = sizeof(a->u.sin6);
        return 1;
    }
    return 0;
}

/* Marks every address an earlier name, or an earlier entry, also has. */
static void mark_duplicates(beacon_fanout_t *f)
{
    unsigned i, j, k, l;

    for (i = 0; i < f->nnames; i++) {
        beacon_fanout_name_t *name = &f->names[i];

        for (j = 0; j < name->naddrs; j++) {
            beacon_fanout_addr_t *a = &name->addrs[j];

            a->duplicate = 0;
            for (k = 0; k <= i && !a->duplicate; k++) {
                const beacon_fanout_name_t *earlier = &f->names[k];
                unsigned until = k == i ? j : earlier->naddrs;

                for (l = 0; l < until && !a->duplicate; l++) {
                    a->duplicate = same_address(&earlier->addrs[l].to, &a->to);
                }
            }
        }
    }
}

/* Writes under the sequence lock beacon_fanout_read honours. */
static void write_begin(beacon_fanout_t *f)
{
    apr_atomic_inc32(&f->version);
}

static void write_end(beacon_fanout_t *f)
{
    mark_duplicates(f);
    apr_atomic_inc32(&f->version);
}

void beacon_fanout_name(beacon_fanout_t *f, unsigned i, const char *spec,
                        const char *host, apr_port_t port)
{
    beacon_fanout_name_t *name = &f->names[i];

    write_begin(f);
    memset(name, 0, sizeof(*name));
    name->spec = spec;
    name->host = host;
    name->port = port;
    if (literal_address(host, port, &name->addrs[0].to)) {
        name->literal = 1;
        name->naddrs = 1;
        name->state = BEACON_NAME_RESOLVED;
    }
    write_end(f);
}

/* The found set replaces the old one; an address in both keeps its counts. */
static void replace_set(beacon_fanout_name_t *name, const beacon_lookup_t *r,
                        beacon_fanout_change_t *change)
{
    beacon_fanout_addr_t fresh[BEACON_FANOUT_MAX_ADDRS];
    unsigned i, j, kept = 0;

    memset(fresh, 0, sizeof(fresh));
    for (i = 0; i < r->n; i++) {
        fresh[i].to = r->addrs[i];
        for (j = 0; j < name->naddrs; j++) {
            if (same_address(&name->addrs[j].to, &r->addrs[i])) {
                fresh[i].sent = name->addrs[j].sent;
                fresh[i].errors = name->addrs[j].errors;
                kept++;
                break;
            }
        }
    }
    change->added = r->n - kept;
    change->removed = name->naddrs - kept;
    memcpy(name->addrs, fresh, sizeof(fresh[0]) * r->n);
    name->naddrs = r->n;
}

void beacon_fanout_update(beacon_fanout_t *f, unsigned i,
                          const beacon_lookup_t *r,
                          beacon_fanout_change_t *change)
{
    beacon_fanout_name_t *name = &f->names[i];

    memset(change, 0, sizeof(*change));
    write_begin(f);
    if (r->status == APR_SUCCESS && r->n > 0) {
        replace_set(name, r, change);
        change->cut = name->cut = r->cut;
        name->failed_rounds = 0;
        name->state = BEACON_NAME_RESOLVED;
    }
    else {
        name->lookup_failures++;
        name->failed_rounds++;
        name->last_error = r->status != APR_SUCCESS ? r->status : APR_ENOENT;
        if (name->naddrs > 0 &&
            name->failed_rounds <= BEACON_FANOUT_KEEP_ROUNDS) {
            name->state = BEACON_NAME_KEPT;
            change->kept = 1;
        }
        else {
            change->lost = name->naddrs > 0;
            change->removed = name->naddrs;
            name->naddrs = 0;
            name->state = BEACON_NAME_FAILED;
        }
    }
    write_end(f);
}

unsigned beacon_fanout_send(beacon_fanout_t *f, const char *buf,
                            apr_size_t len, beacon_send_fn send, void *ctx)
{
    unsigned i, j, reached = 0;

    for (i = 0; i < f->nnames; i++) {
        beacon_fanout_name_t *name = &f->names[i];

        for (j = 0; j < name->naddrs; j++) {
            beacon_fanout_addr_t *a = &name->addrs[j];

            if (a->duplicate) {
                continue;
            }
            if (send(ctx, i, &a->to, buf, len) == APR_SUCCESS) {
                a->sent++;
                reached++;
            }
            else {
                a->errors++;
            }
        }
    }
    return reached;
}

void beacon_fanout_read(const beacon_fanout_t *f, beacon_fanout_t *copy)
{
    apr_size_t size = beacon_fanout_size(f->nnames);
    volatile apr_uint32_t *version = (volatile apr_uint32_t *)&f->version;
    int tries;

    /* the writer holds the version odd for a memcpy's time: a few
     * retries see it even; past them, the copy is at worst a moment's
     * mix, which a status page survives */
    for (tries = 0; tries < 100; tries++) {
        apr_uint32_t before = apr_atomic_read32(version);

        if (before & 1) {
            continue;
        }
        memcpy(copy, (const void *)f, size);
        if (apr_atomic_read32(version) == before) {
            return;
        }
    }
    memcpy(copy, (const void *)f, size);
}

apr_status_t beacon_lookup_thread_start(apr_pool_t *own, apr_thread_start_t fn,
                                        void *arg)
{
    apr_threadattr_t *attr;
    apr_thread_t *thread;
    apr_status_t rv;

    rv = apr_threadattr_create(&attr, own);
    if (rv == APR_SUCCESS) {
        rv = apr_threadattr_detach_set(attr, 1);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_thread_create(&thread, attr, fn, arg, own);
    }
    return rv;
}
