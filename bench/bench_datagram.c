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
 *   (d) (b) with 4 secrets configured, as during a key rotation.
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
    int n = beacon_format(buf, size, &a, &key);

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

/* (a): returns ns per accepted datagram over iterations. */
static double run_accept(unsigned iterations)
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
            beacon_reason_t r = beacon_receive(table, &key, batch[i],
                                               batch_len[i], now, &ev);
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

static void report(const char *label, double *ns, unsigned runs)
{
    qsort(ns, runs, sizeof *ns, cmp_double);
    printf("%-52s %8.1f ns  (%.1f-%.1f)\n", label, ns[runs / 2], ns[0],
           ns[runs - 1]);
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

int main(int argc, char **argv)
{
    unsigned runs = RUNS, iterations = ITERATIONS;
    double *ns;
    char forged[DGRAM_SIZE], *mac, label[64];
    apr_size_t len, signed_len;
    const char *err;

    if (argc > 3)
        usage();
    if (argc > 1)
        runs = parse_arg(argv[1]);
    if (argc > 2)
        iterations = parse_arg(argv[2]);
    if (!(ns = malloc(runs * sizeof *ns)))
        die("out of memory");

    apr_initialize();
    if ((err = beacon_key_parse("hex:000102030405060708090a0b0c0d0e0f",
                                &key)))
        die(err);
    for (unsigned i = 0; i < URLS; i++)
        snprintf(urls[i], sizeof urls[i], "http://backend-%u.example.net:8080",
                 i);
    table = malloc(beacon_table_size(BEACON_TABLE_CAPACITY));
    if (table == NULL)
        die("out of memory");
    beacon_table_init(table, BEACON_TABLE_CAPACITY, LEASE, MAX_SKEW);

    /* One representative datagram for (b) and (c). */
    len = (apr_size_t)format_one(forged, sizeof forged, 0);
    if (!(mac = strstr(forged, " mac=")) || len - (apr_size_t)(mac - forged) != 21)
        die("unexpected datagram layout: no trailing mac=<16 hex>");
    signed_len = (apr_size_t)(mac - forged); /* the part before " mac=" */
    print_machine();
    printf("datagram: %zu bytes, e.g. %s\n", (size_t)len, forged);
    forged[len - 1] = forged[len - 1] == '0' ? '1' : '0';
    printf("runs:     median of %u runs x %u iterations (min-max), "
           "after one warm-up run\n",
           runs, iterations);
    printf("timed:    (a) beacon_receive only; signing happens in batches of "
           "%u with the clock stopped\n\n",
           BATCH);

    run_accept(iterations);
    for (unsigned r = 0; r < runs; r++)
        ns[r] = run_accept(iterations);
    report("(a) valid, accepted by beacon_receive()", ns, runs);

    run_forged(forged, len, iterations);
    for (unsigned r = 0; r < runs; r++)
        ns[r] = run_forged(forged, len, iterations);
    report("(b) forged mac, dropped by beacon_receive()", ns, runs);

    run_mac(forged, signed_len, iterations);
    for (unsigned r = 0; r < runs; r++)
        ns[r] = run_mac(forged, signed_len, iterations);
    snprintf(label, sizeof label, "(c) beacon_mac() alone, %zu bytes",
             (size_t)signed_len);
    report(label, ns, runs);

    run_forged_4_keys(forged, len, iterations);
    for (unsigned r = 0; r < runs; r++)
        ns[r] = run_forged_4_keys(forged, len, iterations);
    report("(d) forged, dropped with 4 secrets configured", ns, runs);

    free(ns);
    apr_terminate();
    return 0;
}
