/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * bench_datagram: what one received datagram costs the receiver, in
 * nanoseconds, for
 *
 *   (a) a valid announcement accepted end to end by beacon_receive()
 *       (verify incl. SipHash, url canonicalization, table update);
 *   (b) a forged one (wrong mac) dropped by beacon_receive();
 *   (c) beacon_mac() alone over the signed part of the same datagram,
 *       i.e. SipHash's share of (a) and (b);
 *   (d) (b) with 4 secrets configured, as during a key rotation;
 *
 * and through a key ring (beacon_verify_ring, then beacon_receive_verified:
 * the module's path), to set member keys (wire format 1.3) beside a
 * shared key:
 *
 *   (e) a valid announcement, the ring's default set one shared key;
 *   (f) the same, the default set a master: the member key is derived per
 *       datagram from its svc= and url= (beacon_member_key_derive), then
 *       its MAC; (f) - (e) is what a member key adds to a valid datagram;
 *   (g) beacon_member_key_derive() alone, for the same url, i.e. the
 *       derivation's share of (f) - (e), the MAC being (c);
 *   (h) a forged one dropped under the shared key of (e);
 *   (i) a forged one dropped under the master of (f): derivation + MAC;
 *   (j) (i) with two masters, as during a rotation of the master: every
 *       master tried, the worst case;
 *   (k) (f) on a ring with 256 revoked urls (BEACON_RING_MAX_REVOKED), the
 *       datagram's not among them: the revocation check's cost;
 *   (l) beacon_url_is_canonical() alone, for the same url: the check a
 *       master makes before deriving, the rest of (f) - (e) and (i) - (h).
 *
 * What is timed: only the calls named above, in a loop. For (a) each
 * accepted datagram needs a ts above its url's high-water mark, so
 * datagrams are signed with beacon_format() in batches of BATCH (ascending
 * ts, URLS urls in turn) with the clock stopped, then the batch is fed to
 * beacon_receive() with the clock running. Every outcome is checked; a
 * single unexpected one aborts the run, so a figure always means the
 * intended path was taken.
 *
 * Each case runs once untimed (warm-up), then RUNS times ITERATIONS; the
 * median over runs is reported with the min-max range. Usage:
 *
 *   bench_datagram [runs [iterations]]
 */

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <apr_general.h>
#include <apr_version.h>
#include <apu_version.h>

#include "beacon.h"

#define RUNS 9
#define ITERATIONS 200000
#define BATCH 1000 /* datagrams signed per stopped-clock interval */
#define URLS 8     /* distinct members announcing */
#define DGRAM_SIZE 256

#ifndef BENCH_BUILD_TYPE
#define BENCH_BUILD_TYPE "unknown"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define BENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BENCH_ASAN 1
#endif
#endif

/* Every result is folded in here so the compiler cannot drop a call. */
static volatile unsigned long sink;

/* Fixed receiver clock: 2023-11-14, microseconds since the epoch. */
static const apr_time_t BASE_NOW = APR_INT64_C(1700000000000000);
static const apr_interval_time_t MAX_SKEW = APR_INT64_C(30000000);
static const apr_interval_time_t LEASE = APR_INT64_C(15000000);

static beacon_key_t key;
static beacon_key_t master, master2;   /* derive: (f)-(k) */
static beacon_key_t member[URLS];      /* each url's key under master */
static const beacon_key_t *signer[URLS]; /* what signs url i: key or member */
static beacon_ring_t ring_shared, ring_master, ring_masters2, ring_revoked;
static beacon_table_t *table; /* of BEACON_TABLE_CAPACITY, on the heap */
static char batch[BATCH][DGRAM_SIZE];
static apr_size_t batch_len[BATCH];
static char urls[URLS][64];
static apr_int64_t next_ts = APR_INT64_C(1700000000000000);
static apr_int64_t next_seq;

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_datagram: %s\n", what);
    exit(1);
}

static int format_one(char *buf, apr_size_t size, unsigned i)
{
    beacon_announcement_t a = {
        .url = urls[i % URLS],
        .host = "app-7.example.net",
        .pid = 31337,
        .seq = next_seq++,
        .ts = next_ts++,
        .state = NULL,
    };
    int n = beacon_format(buf, size, &a, signer[i % URLS]);

    if (n < 0)
        die("beacon_format failed");
    return n;
}

/* Signs the next BATCH datagrams; the clock is not running. */
static void fill_batch(void)
{
    for (unsigned i = 0; i < BATCH; i++)
        batch_len[i] = (apr_size_t)format_one(batch[i], DGRAM_SIZE, i);
}

/* The module's path (src/mod_proxy_beacon_members.c) for one datagram:
 * the ring's verification, then the table's steps. */
static beacon_reason_t receive_ring(const beacon_ring_t *ring, const char *buf,
                                    apr_size_t len, apr_time_t now,
                                    beacon_event_t *ev)
{
    beacon_reason_t r;

    memset(ev, 0, sizeof *ev); /* as the module does */
    r = beacon_verify_ring(buf, len, ring, now, MAX_SKEW, &ev->dg);
    return r == BEACON_OK ? beacon_receive_verified(table, now, NULL, ev) : r;
}

/* (a), and with ring (e), (f), (k): returns ns per accepted datagram over
 * iterations; ring NULL: beacon_receive() with key. */
static double run_accept(const beacon_ring_t *ring, unsigned iterations)
{
    double timed = 0;
    beacon_event_t ev;

    for (unsigned done = 0; done < iterations; done += BATCH) {
        unsigned n = iterations - done < BATCH ? iterations - done : BATCH;
        apr_time_t now;
        double t0;

        fill_batch();
        now = (apr_time_t)next_ts; /* receiver clock just after sending */
        t0 = now_ns();
        for (unsigned i = 0; i < n; i++) {
            beacon_reason_t r =
                ring ? receive_ring(ring, batch[i], batch_len[i], now, &ev)
                     : beacon_receive(table, &key, batch[i], batch_len[i], now,
                                      &ev);
            if (r != BEACON_OK)
                die(beacon_reason_name(r));
            /* Steady state is ACTIVE; the first sight of a url asks for an
             * add, which the adapter would report back. */
            if (ev.action == BEACON_ACT_ADD)
                beacon_table_added(ev.rec);
            sink += (unsigned long)ev.action + ev.url[7];
        }
        timed += now_ns() - t0;
    }
    return timed / iterations;
}

/* (b): the same valid-looking datagram with one mac digit changed. */
static double run_forged(const char *buf, apr_size_t len, unsigned iterations)
{
    beacon_event_t ev;
    double t0 = now_ns();

    for (unsigned i = 0; i < iterations; i++) {
        beacon_reason_t r = beacon_receive(table, &key, buf, len, BASE_NOW,
                                           &ev);
        if (r != BEACON_DROP_MAC_MISMATCH)
            die(r == BEACON_OK ? "forged datagram accepted"
                               : beacon_reason_name(r));
        sink += (unsigned long)r;
    }
    return (now_ns() - t0) / iterations;
}

/* (d): the forged datagram against a receiver with 4 secrets (a rotation
 * in progress): one MAC per configured key. */
static double run_forged_4_keys(const char *buf, apr_size_t len,
                                unsigned iterations)
{
    beacon_key_t keys[BEACON_MAX_KEYS];
    beacon_event_t ev;
    double t0;

    for (unsigned k = 0; k < BEACON_MAX_KEYS; k++) {
        keys[k] = key;
        keys[k].bytes[0] ^= (unsigned char)(k + 1); /* none is the signer's */
    }
    t0 = now_ns();
    for (unsigned i = 0; i < iterations; i++) {
        beacon_reason_t r = beacon_receive_any(table, keys, BEACON_MAX_KEYS,
                                               buf, len, BASE_NOW, NULL, &ev);
        if (r != BEACON_DROP_MAC_MISMATCH)
            die(r == BEACON_OK ? "forged datagram accepted"
                               : beacon_reason_name(r));
        sink += (unsigned long)r;
    }
    return (now_ns() - t0) / iterations;
}

/* (h), (i), (j): the forged datagram through a ring. */
static double run_forged_ring(const beacon_ring_t *ring, const char *buf,
                              apr_size_t len, unsigned iterations)
{
    beacon_event_t ev;
    double t0 = now_ns();

    for (unsigned i = 0; i < iterations; i++) {
        beacon_reason_t r = receive_ring(ring, buf, len, BASE_NOW, &ev);

        if (r != BEACON_DROP_MAC_MISMATCH)
            die(r == BEACON_OK ? "forged datagram accepted"
                               : beacon_reason_name(r));
        sink += (unsigned long)r;
    }
    return (now_ns() - t0) / iterations;
}

/* (g): one member key, as (f) derives it for url 0 (no svc=). */
static double run_derive(unsigned iterations)
{
    beacon_key_t k;
    apr_size_t url_len = strlen(urls[0]);
    double t0 = now_ns();

    for (unsigned i = 0; i < iterations; i++) {
        if (beacon_member_key_derive(&master, "", 0, urls[0], url_len, &k))
            die("beacon_member_key_derive failed");
        sink += k.bytes[0] ^ k.bytes[15];
    }
    return (now_ns() - t0) / iterations;
}

/* (l): the canonical-url check a master makes before deriving. */
static double run_canonical(unsigned iterations)
{
    apr_size_t url_len = strlen(urls[0]);
    double t0 = now_ns();

    for (unsigned i = 0; i < iterations; i++) {
        if (!beacon_url_is_canonical(urls[0], url_len))
            die("the url is not canonical");
        sink += i;
    }
    return (now_ns() - t0) / iterations;
}

/* Signs url i with key (shared) or its member key. */
static void sign_with(int members)
{
    for (unsigned i = 0; i < URLS; i++)
        signer[i] = members ? &member[i] : &key;
}

/* The rings of (e)-(k); the urls must be set. */
static void make_rings(void)
{
    const beacon_key_t two[2] = {master2, master};
    char url[64];
    const char *err;

    if ((err = beacon_key_parse("hex:f0e1d2c3b4a5968778695a4b3c2d1e0f",
                                &master)) ||
        (err = beacon_key_parse("hex:0f1e2d3c4b5a69788796a5b4c3d2e1f0",
                                &master2)))
        die(err);
    for (unsigned i = 0; i < URLS; i++)
        if (beacon_member_key_derive(&master, "", 0, urls[i], strlen(urls[i]),
                                     &member[i]))
            die("beacon_member_key_derive failed");
    beacon_ring_init(&ring_shared, &key, 1);
    beacon_ring_init(&ring_master, &master, 1);
    beacon_ring_set_masters(&ring_master, BEACON_SERVICE_DEFAULT, 1u);
    beacon_ring_init(&ring_masters2, two, 2);
    beacon_ring_set_masters(&ring_masters2, BEACON_SERVICE_DEFAULT, 3u);
    beacon_ring_init(&ring_revoked, &master, 1);
    beacon_ring_set_masters(&ring_revoked, BEACON_SERVICE_DEFAULT, 1u);
    for (unsigned i = 0; i < BEACON_RING_MAX_REVOKED; i++) {
        snprintf(url, sizeof url, "http://revoked-%u.example.net:8080", i);
        if ((err = beacon_ring_revoke(&ring_revoked, BEACON_SERVICE_DEFAULT,
                                      url)))
            die(err);
    }
    if (ring_revoked.nrevoked != BEACON_RING_MAX_REVOKED)
        die("the ring does not hold 256 revoked urls");
}

/* (c): SipHash-2-4 over buf[0..len), through the library's entry point. */
static double run_mac(const char *buf, apr_size_t len, unsigned iterations)
{
    unsigned char mac[BEACON_MAC_LEN];
    double t0 = now_ns();

    for (unsigned i = 0; i < iterations; i++) {
        beacon_mac(&key, buf, len, mac);
        sink += mac[0] ^ mac[7];
    }
    return (now_ns() - t0) / iterations;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median of ns[0..runs) (sorted in place); its range in *lo, *hi. */
static double median(double *ns, unsigned runs, double *lo, double *hi)
{
    qsort(ns, runs, sizeof *ns, cmp_double);
    *lo = ns[0];
    *hi = ns[runs - 1];
    return ns[runs / 2];
}

static void report(const char *label, const double *ns, unsigned runs,
                   double *scratch)
{
    double lo, hi, med;

    memcpy(scratch, ns, runs * sizeof *ns);
    med = median(scratch, runs, &lo, &hi);
    printf("%-52s %8.1f ns  (%.1f-%.1f)\n", label, med, lo, hi);
}

/* The difference of two cases run by run (the same run of each: the
 * machine's drift falls on both), its median and range. */
static void report_delta(char x, char y, const char *what, const double *nx,
                         const double *ny, unsigned runs, double *scratch)
{
    double lo, hi, med;

    for (unsigned r = 0; r < runs; r++)
        scratch[r] = nx[r] - ny[r];
    med = median(scratch, runs, &lo, &hi);
    printf("%c-%c  %-45s %+8.1f ns  (%+.1f to %+.1f)\n", x, y, what, med, lo,
           hi);
}

static void print_machine(void)
{
    char line[512], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");

    if (f) {
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');

            if (strncmp(line, "model name", 10) == 0 && colon) {
                snprintf(model, sizeof model, "%s", colon + 2);
                model[strcspn(model, "\n")] = '\0';
                break;
            }
        }
        fclose(f);
    }
    printf("machine:  %ld cpus online, %s\n", sysconf(_SC_NPROCESSORS_ONLN),
           model);
#if defined(__clang__)
    printf("compiler: clang %s", __clang_version__);
#elif defined(__GNUC__)
    printf("compiler: gcc %s", __VERSION__);
#else
    printf("compiler: unknown");
#endif
    printf(", build type %s%s%s\n", BENCH_BUILD_TYPE,
#ifdef __OPTIMIZE__
           ", optimized",
#else
           ", NOT optimized",
#endif
#ifdef BENCH_ASAN
           ", ASan (figures not representative)"
#else
           ""
#endif
    );
    printf("libs:     APR %s, APR-util %s\n", apr_version_string(),
           apu_version_string());
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_datagram [runs [iterations]]\n");
    exit(2);
}

static unsigned parse_arg(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v == 0 || v > 100000000UL)
        usage();
    return (unsigned)v;
}

/* The cases, run in turn within each run. */
enum kind { ACCEPT, FORGED, MAC, FORGED_4, FORGED_RING, DERIVE, CANONICAL };
typedef struct {
    char id;
    const char *label;
    enum kind kind;
    const beacon_ring_t *ring; /* ACCEPT: NULL is beacon_receive */
    int members;               /* ACCEPT: signed with the member keys */
} bench_case_t;

static double run_case(const bench_case_t *c, const char *forged,
                       apr_size_t len, apr_size_t signed_len,
                       unsigned iterations)
{
    switch (c->kind) {
    case ACCEPT:
        sign_with(c->members);
        return run_accept(c->ring, iterations);
    case FORGED:
        return run_forged(forged, len, iterations);
    case MAC:
        return run_mac(forged, signed_len, iterations);
    case FORGED_4:
        return run_forged_4_keys(forged, len, iterations);
    case FORGED_RING:
        return run_forged_ring(c->ring, forged, len, iterations);
    case DERIVE:
        return run_derive(iterations);
    case CANONICAL:
        return run_canonical(iterations);
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned runs = RUNS, iterations = ITERATIONS;
    double *ns[16], *scratch;
    char forged[DGRAM_SIZE], *mac, label[64];
    apr_size_t len, signed_len;
    const char *err;
    const bench_case_t cases[] = {
        {'a', "(a) valid, accepted by beacon_receive()", ACCEPT, NULL, 0},
        {'b', "(b) forged mac, dropped by beacon_receive()", FORGED, NULL, 0},
        {'c', NULL, MAC, NULL, 0},
        {'d', "(d) forged, dropped with 4 secrets configured", FORGED_4, NULL,
         0},
        {'e', "(e) valid, ring: one shared key", ACCEPT, &ring_shared, 0},
        {'f', "(f) valid, ring: a master (member key derived)", ACCEPT,
         &ring_master, 1},
        {'g', "(g) beacon_member_key_derive() alone", DERIVE, NULL, 0},
        {'h', "(h) forged, ring: one shared key", FORGED_RING, &ring_shared, 0},
        {'i', "(i) forged, ring: a master", FORGED_RING, &ring_master, 0},
        {'j', "(j) forged, ring: two masters (rotation)", FORGED_RING,
         &ring_masters2, 0},
        {'k', "(k) valid, ring: (f) + 256 revoked urls", ACCEPT, &ring_revoked,
         1},
        {'l', "(l) beacon_url_is_canonical() alone", CANONICAL, NULL, 0},
    };
    const unsigned ncases = sizeof cases / sizeof cases[0];

    if (argc > 3)
        usage();
    if (argc > 1)
        runs = parse_arg(argv[1]);
    if (argc > 2)
        iterations = parse_arg(argv[2]);
    for (unsigned c = 0; c < ncases; c++)
        if (!(ns[c] = malloc(runs * sizeof *ns[c])))
            die("out of memory");
    if (!(scratch = malloc(runs * sizeof *scratch)))
        die("out of memory");

    apr_initialize();
    if ((err = beacon_key_parse("hex:000102030405060708090a0b0c0d0e0f",
                                &key)))
        die(err);
    for (unsigned i = 0; i < URLS; i++)
        snprintf(urls[i], sizeof urls[i], "http://backend-%u.example.net:8080",
                 i);
    make_rings();
    sign_with(0);
    table = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
    if (table == NULL)
        die("out of memory");
    beacon_table_init(table, BEACON_TABLE_CAPACITY, LEASE, MAX_SKEW);

    /* One representative datagram for (b), (c), (d), (h)-(j). */
    len = (apr_size_t)format_one(forged, sizeof forged, 0);
    if (!(mac = strstr(forged, " mac=")) || len - (apr_size_t)(mac - forged) != 21)
        die("unexpected datagram layout: no trailing mac=<16 hex>");
    signed_len = (apr_size_t)(mac - forged); /* the part before " mac=" */
    print_machine();
    printf("datagram: %zu bytes, e.g. %s\n", (size_t)len, forged);
    forged[len - 1] = forged[len - 1] == '0' ? '1' : '0';
    printf("runs:     median of %u runs x %u iterations (min-max), "
           "after one warm-up run;\n"
           "          the cases take turns within each run, so the machine's "
           "drift falls on all\n",
           runs, iterations);
    printf("timed:    (a) beacon_receive only; signing happens in batches of "
           "%u with the clock stopped\n"
           "          (e)-(k) through a key ring: beacon_verify_ring + "
           "beacon_receive_verified, the module's path\n\n",
           BATCH);

    for (unsigned c = 0; c < ncases; c++)
        run_case(&cases[c], forged, len, signed_len, iterations);
    for (unsigned r = 0; r < runs; r++)
        for (unsigned c = 0; c < ncases; c++)
            ns[c][r] = run_case(&cases[c], forged, len, signed_len, iterations);

    snprintf(label, sizeof label, "(c) beacon_mac() alone, %zu bytes",
             (size_t)signed_len);
    for (unsigned c = 0; c < ncases; c++) {
        if (c == 4)
            printf("\n");
        report(cases[c].label ? cases[c].label : label, ns[c], runs, scratch);
    }
    printf("\ndifferences, run by run (median, min to max):\n");
    report_delta('f', 'e', "member key, valid: master - shared key", ns[5],
                 ns[4], runs, scratch);
    report_delta('i', 'h', "member key, forged: master - shared key", ns[8],
                 ns[7], runs, scratch);
    report_delta('j', 'i', "the second master, forged", ns[9], ns[8], runs,
                 scratch);
    report_delta('k', 'f', "256 revoked urls, valid", ns[10], ns[5], runs,
                 scratch);

    for (unsigned c = 0; c < ncases; c++)
        free(ns[c]);
    free(scratch);
    apr_terminate();
    return 0;
}
