/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The sender's fan-out: literal names, lookups (deduplicated, capped),
 * updates that replace a set and keep its counts, keep-last-good across
 * failed lookups, an address two names share, sending and reading. A fake
 * resolver fills each beacon_lookup_t and a fake network counts the
 * datagrams per address, so only the two beacon_lookup() cases at the end
 * call the real resolver.
 */
#include "test_common.h"

#include <arpa/inet.h>

#include <apr_atomic.h>
#include <apr_general.h>
#include <apr_time.h>

#define PORT 5555
#define DG "BEACON test"

/*
 * Fan-outs are large (64 addresses a name), so they live on the heap; a
 * failed assertion leaves the test early, so the teardown frees them.
 */
static beacon_fanout_t *fanouts[4];

static void *keep(void *p)
{
    size_t i;

    assert_non_null(p);
    for (i = 0; i < ARRAY_LEN(fanouts); i++) {
        if (fanouts[i] == NULL) {
            fanouts[i] = p;
            return p;
        }
    }
    fail_msg("too many fan-outs in one test");
    return NULL;
}

static int free_fanouts(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(fanouts); i++) {
        free(fanouts[i]);
        fanouts[i] = NULL;
    }
    return 0;
}

static beacon_fanout_t *new_fanout(unsigned nnames)
{
    beacon_fanout_t *f = keep(malloc(beacon_fanout_size(nnames)));

    /* Garbage first: init must not rely on zeroed memory. */
    memset(f, 0xa5, beacon_fanout_size(nnames));
    beacon_fanout_init(f, nnames);
    return f;
}

/* A fan-out of one name, "tier:5555", not looked up yet. */
static beacon_fanout_t *tier_fanout(void)
{
    beacon_fanout_t *f = new_fanout(1);

    beacon_fanout_name(f, 0, "tier:5555", "tier", PORT);
    return f;
}

/* The sockaddr of an IPv4 or IPv6 address in text, with PORT. */
static beacon_sockaddr_t addr(const char *ip)
{
    beacon_sockaddr_t a;

    memset(&a, 0, sizeof a);
    if (inet_pton(AF_INET, ip, &a.u.sin.sin_addr) == 1) {
        a.u.sin.sin_family = AF_INET;
        a.u.sin.sin_port = htons(PORT);
        a.len = sizeof a.u.sin;
    }
    else {
        assert_int_equal(inet_pton(AF_INET6, ip, &a.u.sin6.sin6_addr), 1);
        a.u.sin6.sin6_family = AF_INET6;
        a.u.sin6.sin6_port = htons(PORT);
        a.len = sizeof a.u.sin6;
    }
    return a;
}

/* 10.0.<i / 256>.<i % 256>:PORT, for sets larger than a few. */
static beacon_sockaddr_t addr_n(unsigned i)
{
    char ip[32];

    snprintf(ip, sizeof ip, "10.0.%u.%u", i / 256, i % 256);
    return addr(ip);
}

/* The fake resolver: a lookup that found the NULL-ended addresses. */
static beacon_lookup_t *found(beacon_lookup_t *r, ...)
{
    va_list ap;
    const char *ip;

    memset(r, 0, sizeof *r);
    r->status = APR_SUCCESS;
    va_start(ap, r);
    while ((ip = va_arg(ap, const char *)) != NULL) {
        beacon_sockaddr_t a = addr(ip);
        beacon_lookup_add(r, &a);
    }
    va_end(ap);
    return r;
}

/* The fake resolver: a lookup that failed with status. */
static beacon_lookup_t *failed(beacon_lookup_t *r, apr_status_t status)
{
    memset(r, 0, sizeof *r);
    r->status = status;
    return r;
}

static beacon_fanout_change_t update(beacon_fanout_t *f, unsigned i,
                                     const beacon_lookup_t *r)
{
    beacon_fanout_change_t change;

    memset(&change, 0xa5, sizeof change);
    beacon_fanout_update(f, i, r, &change);
    return change;
}

static const char *text(const beacon_sockaddr_t *a)
{
    static char buf[BEACON_SOCKADDR_TEXT_MAX];

    return beacon_sockaddr_text(a, buf, sizeof buf);
}

/* Name i's entry for ip:PORT, or NULL when the set lacks it. */
static beacon_fanout_addr_t *entry(beacon_fanout_t *f, unsigned i,
                                   const char *ip)
{
    beacon_sockaddr_t want = addr(ip);
    char want_text[BEACON_SOCKADDR_TEXT_MAX];
    unsigned j;

    beacon_sockaddr_text(&want, want_text, sizeof want_text);
    for (j = 0; j < f->names[i].naddrs; j++) {
        if (strcmp(text(&f->names[i].addrs[j].to), want_text) == 0) {
            return &f->names[i].addrs[j];
        }
    }
    return NULL;
}

/* The fake network: counts datagrams per address, fails those listed. */
typedef struct {
    const char *fail[4];                       /* ip:PORT texts */
    char to[16][BEACON_SOCKADDR_TEXT_MAX];
    unsigned calls[16];
    unsigned for_name[16];                     /* of the last call */
    unsigned nto, total;
} fake_net_t;

static apr_status_t fake_send(void *ctx, unsigned name,
                              const beacon_sockaddr_t *to, const char *buf,
                              apr_size_t len)
{
    fake_net_t *net = ctx;
    const char *t = text(to);
    unsigned i;

    assert_int_equal(len, strlen(DG));
    assert_memory_equal(buf, DG, len);
    net->total++;
    for (i = 0; i < net->nto && strcmp(net->to[i], t) != 0; i++) {
    }
    if (i == net->nto) {
        assert_true(net->nto < ARRAY_LEN(net->to));
        strcpy(net->to[net->nto++], t);
    }
    net->calls[i]++;
    net->for_name[i] = name;
    for (i = 0; i < ARRAY_LEN(net->fail); i++) {
        if (net->fail[i] != NULL && strcmp(net->fail[i], t) == 0) {
            return APR_ECONNREFUSED;
        }
    }
    return APR_SUCCESS;
}

static unsigned calls_to(const fake_net_t *net, const char *t)
{
    unsigned i;

    for (i = 0; i < net->nto; i++) {
        if (strcmp(net->to[i], t) == 0) {
            return net->calls[i];
        }
    }
    return 0;
}

static unsigned send_all(beacon_fanout_t *f, fake_net_t *net)
{
    return beacon_fanout_send(f, DG, strlen(DG), fake_send, net);
}

/* ------------------------------------------------------------------ */
/* Literal names                                                       */

static void a_literal_ipv4_name_is_resolved_at_once(void **state)
{
    beacon_fanout_t *f = new_fanout(2);

    (void)state;
    beacon_fanout_name(f, 0, "127.0.0.2:5555", "127.0.0.2", PORT);
    beacon_fanout_name(f, 1, "proxy.example:5555", "proxy.example", PORT);
    assert_int_equal(f->names[0].state, BEACON_NAME_RESOLVED);
    assert_int_equal(f->names[0].naddrs, 1);
    assert_int_equal(f->names[0].literal, 1);
    assert_string_equal(text(&f->names[0].addrs[0].to), "127.0.0.2:5555");
    assert_int_equal(f->names[0].addrs[0].to.len, sizeof(struct sockaddr_in));
    /* a name waits for its lookup */
    assert_int_equal(f->names[1].state, BEACON_NAME_PENDING);
    assert_int_equal(f->names[1].naddrs, 0);
    assert_int_equal(f->names[1].literal, 0);
}

static void a_literal_ipv6_name_is_resolved_at_once(void **state)
{
    beacon_fanout_t *f = new_fanout(1);

    (void)state;
    beacon_fanout_name(f, 0, "[::1]:5555", "::1", PORT);
    assert_int_equal(f->names[0].state, BEACON_NAME_RESOLVED);
    assert_int_equal(f->names[0].naddrs, 1);
    assert_int_equal(f->names[0].literal, 1);
    assert_string_equal(text(&f->names[0].addrs[0].to), "[::1]:5555");
    assert_int_equal(f->names[0].addrs[0].to.len,
                     sizeof(struct sockaddr_in6));
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */

static void a_lookup_keeps_the_same_address_once(void **state)
{
    beacon_lookup_t r;

    (void)state;
    found(&r, "10.0.0.1", "10.0.0.1", "::1", "::1", NULL);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.cut, 0);
    assert_string_equal(text(&r.addrs[0]), "10.0.0.1:5555");
    assert_string_equal(text(&r.addrs[1]), "[::1]:5555");
}

static void a_lookup_keeps_64_addresses_and_counts_the_cut(void **state)
{
    beacon_fanout_t *f = new_fanout(1);
    beacon_fanout_change_t change;
    beacon_lookup_t r;
    unsigned i;

    (void)state;
    found(&r, NULL);
    for (i = 0; i < 70; i++) {
        beacon_sockaddr_t a = addr_n(i);
        beacon_lookup_add(&r, &a);
    }
    assert_int_equal(r.n, BEACON_FANOUT_MAX_ADDRS);
    assert_int_equal(r.cut, 6);
    assert_string_equal(text(&r.addrs[63]), "10.0.0.63:5555");

    beacon_fanout_name(f, 0, "tier:5555", "tier", PORT);
    change = update(f, 0, &r);
    assert_int_equal(change.cut, 6);
    assert_int_equal(change.added, 64);
    assert_int_equal(f->names[0].cut, 6);
    assert_int_equal(f->names[0].naddrs, 64);
}

/* ------------------------------------------------------------------ */
/* Updates                                                             */

static void the_address_list_names_each_address_and_fits_its_buffer(
    void **state)
{
    beacon_fanout_t *f = tier_fanout();
    char list[BEACON_ADDRESS_LIST_MAX], small[20];
    beacon_lookup_t r;

    (void)state;
    update(f, 0, found(&r, "10.0.0.1", "::1", NULL));
    assert_string_equal(beacon_fanout_name_addresses(&f->names[0], list,
                                                     sizeof(list)),
                        "10.0.0.1:5555, [::1]:5555");
    /* cut short, still a string */
    assert_string_equal(beacon_fanout_name_addresses(&f->names[0], small,
                                                     sizeof(small)),
                        "10.0.0.1:5555, [::1");
}

static void an_update_replaces_the_set(void **state)
{
    beacon_fanout_t *f = tier_fanout();
    beacon_fanout_change_t change;
    beacon_lookup_t r;

    (void)state;
    change = update(f, 0, found(&r, "10.0.0.1", "10.0.0.2", "10.0.0.3", NULL));
    assert_int_equal(change.added, 3);
    assert_int_equal(change.removed, 0);
    assert_int_equal(f->names[0].state, BEACON_NAME_RESOLVED);

    change = update(f, 0, found(&r, "10.0.0.2", "10.0.0.3", "10.0.0.4",
                                "10.0.0.5", NULL));
    assert_int_equal(change.added, 2);
    assert_int_equal(change.removed, 1);
    assert_int_equal(change.cut, 0);
    assert_int_equal(change.kept, 0);
    assert_int_equal(change.lost, 0);
    assert_int_equal(f->names[0].naddrs, 4);
    assert_null(entry(f, 0, "10.0.0.1"));
    assert_non_null(entry(f, 0, "10.0.0.5"));
}

static void an_address_that_stays_keeps_its_counts(void **state)
{
    beacon_fanout_t *f = tier_fanout();
    fake_net_t net = {.fail = {"10.0.0.2:5555"}};
    beacon_lookup_t r;

    (void)state;
    update(f, 0, found(&r, "10.0.0.1", "10.0.0.2", NULL));
    send_all(f, &net);
    send_all(f, &net);
    assert_int_equal(entry(f, 0, "10.0.0.1")->sent, 2);
    assert_int_equal(entry(f, 0, "10.0.0.2")->errors, 2);

    update(f, 0, found(&r, "10.0.0.3", "10.0.0.2", "10.0.0.1", NULL));
    assert_int_equal(entry(f, 0, "10.0.0.1")->sent, 2);
    assert_int_equal(entry(f, 0, "10.0.0.1")->errors, 0);
    assert_int_equal(entry(f, 0, "10.0.0.2")->sent, 0);
    assert_int_equal(entry(f, 0, "10.0.0.2")->errors, 2);
    assert_int_equal(entry(f, 0, "10.0.0.3")->sent, 0);
    assert_int_equal(entry(f, 0, "10.0.0.3")->errors, 0);
}

static void the_same_set_in_another_order_changes_nothing(void **state)
{
    beacon_fanout_t *f = tier_fanout();
    beacon_fanout_change_t change;
    beacon_lookup_t r;

    (void)state;
    update(f, 0, found(&r, "10.0.0.1", "::1", "10.0.0.3", NULL));
    change = update(f, 0, found(&r, "10.0.0.3", "10.0.0.1", "::1", NULL));
    assert_int_equal(change.added, 0);
    assert_int_equal(change.removed, 0);
    assert_int_equal(f->names[0].naddrs, 3);
}

/* ------------------------------------------------------------------ */
/* Failed lookups                                                      */

static void failed_lookups_keep_the_last_good_set_for_three_rounds(void **state)
{
    beacon_fanout_t *f = tier_fanout();
    beacon_fanout_change_t change;
    beacon_lookup_t r;
    unsigned round;

    (void)state;
    update(f, 0, found(&r, "10.0.0.1", "10.0.0.2", NULL));
    for (round = 1; round <= BEACON_FANOUT_KEEP_ROUNDS; round++) {
        fake_net_t net = {.total = 0};

        change = update(f, 0, failed(&r, APR_EGENERAL));
        assert_int_equal(f->names[0].state, BEACON_NAME_KEPT);
        assert_int_equal(change.kept, 1);
        assert_int_equal(change.lost, 0);
        assert_int_equal(change.removed, 0);
        assert_int_equal(f->names[0].naddrs, 2);
        assert_int_equal(f->names[0].failed_rounds, round);
        assert_int_equal(f->names[0].last_error, APR_EGENERAL);
        assert_int_equal(send_all(f, &net), 2);
    }

    change = update(f, 0, failed(&r, APR_EGENERAL));
    assert_int_equal(f->names[0].state, BEACON_NAME_FAILED);
    assert_int_equal(change.kept, 0);
    assert_int_equal(change.lost, 1);
    assert_int_equal(change.removed, 2);
    assert_int_equal(f->names[0].naddrs, 0);
    {
        fake_net_t net = {.total = 0};

        assert_int_equal(send_all(f, &net), 0);
        assert_int_equal(net.total, 0);
    }
    assert_int_equal(f->names[0].lookup_failures, 4);
}

static void a_good_lookup_after_a_drop_restores_the_set(void **state)
{
    beacon_fanout_t *f = tier_fanout();
    beacon_fanout_change_t change;
    fake_net_t net = {.total = 0};
    beacon_lookup_t r;
    unsigned round;

    (void)state;
    update(f, 0, found(&r, "10.0.0.1", "10.0.0.2", NULL));
    for (round = 0; round <= BEACON_FANOUT_KEEP_ROUNDS; round++) {
        update(f, 0, failed(&r, APR_EGENERAL));
    }
    assert_int_equal(f->names[0].state, BEACON_NAME_FAILED);

    change = update(f, 0, found(&r, "10.0.0.1", "10.0.0.2", NULL));
    assert_int_equal(change.added, 2);
    assert_int_equal(f->names[0].state, BEACON_NAME_RESOLVED);
    assert_int_equal(f->names[0].failed_rounds, 0);
    assert_int_equal(f->names[0].naddrs, 2);
    assert_int_equal(send_all(f, &net), 2);

    /* lookup_failures counts them all, failed_rounds only those in a row */
    update(f, 0, failed(&r, APR_EGENERAL));
    assert_int_equal(f->names[0].state, BEACON_NAME_KEPT);
    assert_int_equal(f->names[0].failed_rounds, 1);
    assert_int_equal(f->names[0].lookup_failures, 5);
}

static void an_empty_successful_lookup_counts_as_a_failure(void **state)
{
    beacon_fanout_t *f = tier_fanout();
    beacon_fanout_change_t change;
    beacon_lookup_t r;

    (void)state;
    update(f, 0, found(&r, "10.0.0.1", NULL));
    change = update(f, 0, found(&r, NULL));
    assert_int_equal(change.kept, 1);
    assert_int_equal(f->names[0].state, BEACON_NAME_KEPT);
    assert_int_equal(f->names[0].naddrs, 1);
    assert_int_equal(f->names[0].failed_rounds, 1);
    assert_int_equal(f->names[0].lookup_failures, 1);
    assert_int_equal(f->names[0].last_error, APR_ENOENT);
}

static void a_name_that_never_resolved_fails_at_once(void **state)
{
    beacon_fanout_t *f = tier_fanout();
    beacon_fanout_change_t change;
    beacon_lookup_t r;

    (void)state;
    change = update(f, 0, failed(&r, APR_EGENERAL));
    assert_int_equal(f->names[0].state, BEACON_NAME_FAILED);
    assert_int_equal(change.lost, 0);
    assert_int_equal(change.kept, 0);
    assert_int_equal(change.removed, 0);
    assert_int_equal(f->names[0].naddrs, 0);
    assert_int_equal(f->names[0].lookup_failures, 1);
}

/* ------------------------------------------------------------------ */
/* Names that share an address                                         */

static void a_shared_address_is_sent_once_for_the_first_name(void **state)
{
    beacon_fanout_t *f = new_fanout(2);
    fake_net_t net = {.total = 0};
    beacon_lookup_t r;

    (void)state;
    beacon_fanout_name(f, 0, "a:5555", "a", PORT);
    beacon_fanout_name(f, 1, "b:5555", "b", PORT);
    update(f, 0, found(&r, "10.0.0.1", "10.0.0.9", NULL));
    update(f, 1, found(&r, "10.0.0.9", "10.0.0.2", NULL));
    assert_int_equal(entry(f, 0, "10.0.0.9")->duplicate, 0);
    assert_int_equal(entry(f, 1, "10.0.0.9")->duplicate, 1);
    assert_int_equal(entry(f, 1, "10.0.0.2")->duplicate, 0);

    assert_int_equal(send_all(f, &net), 3);
    assert_int_equal(net.total, 3);
    assert_int_equal(calls_to(&net, "10.0.0.9:5555"), 1);
    assert_int_equal(net.for_name[1], 0); /* 10.0.0.9, sent for "a" */
    assert_int_equal(net.for_name[2], 1); /* 10.0.0.2, for "b" */
    assert_int_equal(entry(f, 0, "10.0.0.9")->sent, 1);
    assert_int_equal(entry(f, 1, "10.0.0.9")->sent, 0);
}

static void a_shared_address_goes_to_the_second_name_when_the_first_drops_it(
    void **state)
{
    beacon_fanout_t *f = new_fanout(2);
    fake_net_t net = {.total = 0};
    beacon_lookup_t r;

    (void)state;
    beacon_fanout_name(f, 0, "a:5555", "a", PORT);
    beacon_fanout_name(f, 1, "b:5555", "b", PORT);
    update(f, 0, found(&r, "10.0.0.1", "10.0.0.9", NULL));
    update(f, 1, found(&r, "10.0.0.9", "10.0.0.2", NULL));
    update(f, 0, found(&r, "10.0.0.1", NULL));
    assert_int_equal(entry(f, 1, "10.0.0.9")->duplicate, 0);

    assert_int_equal(send_all(f, &net), 3);
    assert_int_equal(calls_to(&net, "10.0.0.9:5555"), 1);
    assert_int_equal(entry(f, 1, "10.0.0.9")->sent, 1);
}

/* ------------------------------------------------------------------ */
/* Sending and reading                                                 */

static void send_returns_how_many_got_it_and_counts_errors(void **state)
{
    beacon_fanout_t *f = new_fanout(2);
    fake_net_t net = {.fail = {"[::2]:5555"}};
    beacon_lookup_t r;

    (void)state;
    beacon_fanout_name(f, 0, "127.0.0.2:5555", "127.0.0.2", PORT);
    beacon_fanout_name(f, 1, "tier:5555", "tier", PORT);
    update(f, 1, found(&r, "::2", "::3", NULL));
    assert_int_equal(send_all(f, &net), 2);
    assert_int_equal(net.total, 3);
    assert_int_equal(f->names[0].addrs[0].sent, 1);
    assert_int_equal(entry(f, 1, "::2")->sent, 0);
    assert_int_equal(entry(f, 1, "::2")->errors, 1);
    assert_int_equal(entry(f, 1, "::3")->sent, 1);
    assert_int_equal(entry(f, 1, "::3")->errors, 0);
}

static void read_gives_an_equal_copy_and_an_even_version(void **state)
{
    beacon_fanout_t *f = new_fanout(3);
    beacon_fanout_t *copy = keep(malloc(beacon_fanout_size(3)));
    fake_net_t net = {.total = 0};
    beacon_lookup_t r;

    (void)state;
    beacon_fanout_name(f, 0, "127.0.0.2:5555", "127.0.0.2", PORT);
    beacon_fanout_name(f, 1, "a:5555", "a", PORT);
    beacon_fanout_name(f, 2, "b:5555", "b", PORT);
    update(f, 2, found(&r, "10.0.0.1", "127.0.0.2", NULL));
    update(f, 1, failed(&r, APR_EGENERAL));
    send_all(f, &net);

    memset(copy, 0x5a, beacon_fanout_size(3));
    beacon_fanout_read(f, copy);
    assert_memory_equal(copy, f, beacon_fanout_size(3));
    assert_int_equal(copy->version % 2, 0);
    assert_true(copy->version > 0);
}

/* ------------------------------------------------------------------ */
/* The real resolver                                                   */

static void lookup_of_a_literal_needs_no_dns(void **state)
{
    beacon_lookup_t r;

    (void)state;
    memset(&r, 0xa5, sizeof r);
    beacon_lookup(&r, "127.0.0.1", PORT, TEST_POOL);
    assert_int_equal(r.status, APR_SUCCESS);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.cut, 0);
    assert_string_equal(text(&r.addrs[0]), "127.0.0.1:5555");
    assert_int_equal(r.addrs[0].len, sizeof(struct sockaddr_in));
}

static void lookup_of_an_invalid_name_finds_nothing(void **state)
{
    beacon_lookup_t r;

    (void)state;
    memset(&r, 0xa5, sizeof r);
    beacon_lookup(&r, "nothing.invalid", PORT, TEST_POOL);
    assert_int_not_equal(r.status, APR_SUCCESS);
    assert_int_equal(r.n, 0);
}

/* The lookup thread: it gets its argument and its caller's pool, and runs
 * while the caller goes on (nothing joins it: it is detached). */
typedef struct {
    apr_pool_t *own;
    volatile apr_uint32_t ran;      /* 1 once fn ran with this arg */
    volatile apr_uint32_t own_pool; /* 1 if its pool is own or own's child */
} started_t;

static void *APR_THREAD_FUNC note_start(apr_thread_t *thread, void *arg)
{
    started_t *st = arg;
    apr_pool_t *p = apr_thread_pool_get(thread);

    while (p != NULL && p != st->own) {
        p = apr_pool_parent_get(p);
    }
    apr_atomic_set32(&st->own_pool, p == st->own);
    apr_atomic_set32(&st->ran, 1);
    return NULL;
}

static void a_lookup_thread_starts_detached_with_its_argument(void **state)
{
    static started_t st; /* outlives this test: the thread is not joined */
    apr_time_t deadline;

    (void)state;
    assert_int_equal(apr_pool_create_unmanaged_ex(&st.own, NULL, NULL),
                     APR_SUCCESS);
    assert_int_equal(beacon_lookup_thread_start(st.own, note_start, &st),
                     APR_SUCCESS);
    deadline = apr_time_now() + apr_time_from_sec(10);
    while (apr_atomic_read32(&st.ran) == 0 && apr_time_now() < deadline) {
        apr_sleep(apr_time_from_msec(5));
    }
    assert_int_equal(apr_atomic_read32(&st.ran), 1);
    assert_int_equal(apr_atomic_read32(&st.own_pool), 1);
    /* fn has run to its end; after it the thread touches no pool (APR
     * 1.7, Debian 12's): own goes, as a caller's goes at its exit */
    apr_pool_destroy(st.own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(a_literal_ipv4_name_is_resolved_at_once, free_fanouts),
        cmocka_unit_test_teardown(a_literal_ipv6_name_is_resolved_at_once, free_fanouts),
        cmocka_unit_test(a_lookup_keeps_the_same_address_once),
        cmocka_unit_test_teardown(a_lookup_keeps_64_addresses_and_counts_the_cut, free_fanouts),
        cmocka_unit_test_teardown(
            the_address_list_names_each_address_and_fits_its_buffer,
            free_fanouts),
        cmocka_unit_test_teardown(an_update_replaces_the_set, free_fanouts),
        cmocka_unit_test_teardown(an_address_that_stays_keeps_its_counts, free_fanouts),
        cmocka_unit_test_teardown(the_same_set_in_another_order_changes_nothing, free_fanouts),
        cmocka_unit_test_teardown(failed_lookups_keep_the_last_good_set_for_three_rounds, free_fanouts),
        cmocka_unit_test_teardown(a_good_lookup_after_a_drop_restores_the_set, free_fanouts),
        cmocka_unit_test_teardown(an_empty_successful_lookup_counts_as_a_failure, free_fanouts),
        cmocka_unit_test_teardown(a_name_that_never_resolved_fails_at_once, free_fanouts),
        cmocka_unit_test_teardown(a_shared_address_is_sent_once_for_the_first_name, free_fanouts),
        cmocka_unit_test_teardown(a_shared_address_goes_to_the_second_name_when_the_first_drops_it, free_fanouts),
        cmocka_unit_test_teardown(send_returns_how_many_got_it_and_counts_errors, free_fanouts),
        cmocka_unit_test_teardown(read_gives_an_equal_copy_and_an_even_version, free_fanouts),
        cmocka_unit_test(lookup_of_a_literal_needs_no_dns),
        cmocka_unit_test(lookup_of_an_invalid_name_finds_nothing),
        cmocka_unit_test(a_lookup_thread_starts_detached_with_its_argument),
    };

    return cmocka_run_group_tests_name("fanout", tests, test_pool_setup,
                                       test_pool_teardown);
}
