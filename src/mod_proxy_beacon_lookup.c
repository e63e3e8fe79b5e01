/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/* A sender's name lookups; see mod_proxy_beacon_lookup.h. */

#include "mod_proxy_beacon_lookup.h"

#include <apr_strings.h>
#include <apr_thread_proc.h>

#define KEPT_LOG_EVERY apr_time_from_sec(60) /* per name */
#define SLICE apr_time_from_msec(100)        /* how soon a stop is seen */

/* One name's lookups, in the thread that makes them. */
typedef struct {
    beacon_fanout_guard *g;
    unsigned index;              /* of the name in g->fanout */
    beacon_rate_limit kept_log;
    int cut_logged;              /* "more than 64" is said once */
} name_lookup;

static int is_stopped(beacon_fanout_guard *g)
{
    int stopped;

    apr_thread_mutex_lock(g->lock);
    stopped = g->stopped;
    apr_thread_mutex_unlock(g->lock);
    return stopped;
}

/* Sleeps until due, a slice at a time; 0 once the sender has stopped. */
static int wait_due(beacon_fanout_guard *g, apr_time_t due)
{
    for (;;) {
        apr_time_t now = apr_time_now();

        if (is_stopped(g)) {
            return 0;
        }
        /* (a clock stepped back does not postpone the lookup) */
        if (now >= due || due - now > g->interval) {
            return 1;
        }
        apr_sleep(due - now < SLICE ? due - now : SLICE);
    }
}

/* The log lines of one lookup; name is a copy taken under the lock. */
static void report(name_lookup *nl, const beacon_fanout_name_t *name,
                   const beacon_fanout_change_t *change, apr_pool_t *p)
{
    server_rec *s = nl->g->s;
    char list[BEACON_ADDRESS_LIST_MAX];
    unsigned suppressed;

    if (change->added || (change->removed && !change->lost)) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, BCNLOGNO(00107)
                     "%s now resolves to %u address%s: %s", name->spec,
                     name->naddrs, name->naddrs == 1 ? "" : "es",
                     beacon_fanout_name_addresses(name, list,
                                                  sizeof(list)));
    }
    if (change->cut && !nl->cut_logged) {
        nl->cut_logged = 1;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00108)
                     "%s resolves to more than %d addresses: announcing to "
                     "the first %d only", name->spec, BEACON_FANOUT_MAX_ADDRS,
                     BEACON_FANOUT_MAX_ADDRS);
    }
    if (change->kept && beacon_decide_rate_allows(&nl->kept_log, apr_time_now(),
                                                KEPT_LOG_EVERY, &suppressed)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, name->last_error, s,
                     BCNLOGNO(00109) "cannot resolve %s (%u time%s in a "
                     "row): still announcing to its last %u address%s, for "
                     "%d failed lookups at most%s", name->spec,
                     name->failed_rounds, name->failed_rounds == 1 ? "" : "s",
                     name->naddrs, name->naddrs == 1 ? "" : "es",
                     BEACON_FANOUT_KEEP_ROUNDS,
                     beacon_util_held_back(p, suppressed));
    }
    if (change->lost) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, name->last_error, s,
                     BCNLOGNO(00110) "cannot resolve %s (%u times in a row): "
                     "no longer announcing to its %u address%s until it "
                     "resolves again", name->spec, name->failed_rounds,
                     change->removed, change->removed == 1 ? "" : "es");
    }
}

/* Applies a lookup under the lock, then logs; 0 once the sender stopped. */
static int apply(name_lookup *nl, const beacon_lookup_t *found, apr_pool_t *p)
{
    beacon_fanout_guard *g = nl->g;
    beacon_fanout_name_t *copy = apr_palloc(p, sizeof(*copy));
    beacon_fanout_change_t change;

    apr_thread_mutex_lock(g->lock);
    if (g->stopped) {
        apr_thread_mutex_unlock(g->lock);
        return 0;
    }
    beacon_fanout_update(g->fanout, nl->index, found, &change);
    if (change.added) {
        g->found_new = 1;
    }
    *copy = g->fanout->names[nl->index];
    apr_thread_mutex_unlock(g->lock);
    report(nl, copy, &change, p);
    return 1;
}

static void *APR_THREAD_FUNC lookup_thread(apr_thread_t *thread, void *data)
{
    name_lookup *nl = data;
    beacon_fanout_guard *g = nl->g;
    /* host and port never change after post_config */
    const beacon_fanout_name_t *name = &g->fanout->names[nl->index];
    apr_pool_t *scratch;
    beacon_lookup_t *found;
    apr_time_t due = apr_time_now();

    beacon_util_block_stop_signals();
    if (apr_pool_create(&scratch, apr_thread_pool_get(thread)) != APR_SUCCESS) {
        return NULL;
    }
    found = apr_palloc(apr_thread_pool_get(thread), sizeof(*found));
    while (wait_due(g, due)) {
        beacon_lookup(found, name->host, name->port, scratch);
        if (!apply(nl, found, scratch)) {
            break;
        }
        apr_pool_clear(scratch);
        due = apr_time_now() + g->interval;
    }
    return NULL;
}

/* A detached thread with a pool of its own: nothing it holds is shared
 * with another thread's pool, and nothing waits for it at exit. */
static apr_status_t start_one(beacon_fanout_guard *g, unsigned index)
{
    apr_pool_t *p;
    name_lookup *nl;
    apr_status_t rv;

    rv = apr_pool_create_unmanaged_ex(&p, NULL, NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    nl = apr_pcalloc(p, sizeof(*nl));
    nl->g = g;
    nl->index = index;
    return beacon_lookup_thread_start(p, lookup_thread, nl);
}

void beacon_lookup_start_all(beacon_fanout_guard *g)
{
    unsigned i;

    for (i = 0; i < g->fanout->nnames; i++) {
        const beacon_fanout_name_t *name = &g->fanout->names[i];
        apr_status_t rv;

        if (name->literal) {
            continue;
        }
        rv = start_one(g, i);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, g->s, BCNLOGNO(00111)
                         "cannot start the lookups of %s: this backend will "
                         "NOT announce itself to it", name->spec);
        }
    }
}
