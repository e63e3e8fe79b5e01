/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * bench_flood: sends beacon datagrams to a receiver on the loopback as fast
 * as it can (or at a given rate), for a bounded time and count. Used by
 * bench/run_bench.py for the control-path benchmark; not a test.
 *
 *   bench_flood --port P --mode valid|forged [options]
 *
 *   --host A          loopback address to send to (127.0.0.0/8 or ::1);
 *                     default 127.0.0.1. Anything else is refused.
 *   --mode valid      signed announcements (libbeacon's beacon_format) of
 *                     the urls in turn, with a strictly rising ts
 *   --mode forged     the same datagrams with one mac digit changed
 *   --mode sink       the other way round, for calibration: bind --host
 *                     and --port, receive for --seconds and print what a
 *                     bare receive loop costs: poll(), then recvfrom()
 *                     until empty (--batch 1) or recvmmsg() (otherwise),
 *                     as the receiver drains; nothing is verified
 *   --url U           a url to announce (repeatable), or
 *   --urls-file F     one url per line (at most 4096); each is sent in its
 *                     canonical form (beacon_url_canonicalize), and one
 *                     that is no member's url is refused: a forged
 *                     datagram then reaches the MAC under a master too
 *                     (derive:, wire format 1.3), instead of being dropped
 *                     before it as url not canonical. Default: one url,
 *                     http://127.0.0.1:9
 *   --svc S           a service (svc=, wire format 1.2) the datagrams name
 *                     (repeatable, at most 256): the datagrams take them in
 *                     turn; without it they name none. All are signed with
 *                     --secret, so with several services only a forged
 *                     flood makes sense: the receiver picks each one's key
 *                     set by its svc= before the MAC
 *   --lbfactor F      the lbfactor= every announcement carries (1 to 100,
 *                     at most two decimals); without it they carry none
 *   --lbfactor-vary G with --lbfactor F: each url's announcements alternate
 *                     between F and G (its first, third, ... say F, its
 *                     second, fourth, ... G), a load that changes with every
 *                     announcement; F and G at least 5 % apart make the
 *                     receiver apply each one
 *   --secret S        ProxyBeaconSecret (default the tests' hex key)
 *   --rate R          datagrams per second (default 0: as fast as possible)
 *   --seconds S       stop after S seconds (default 5, at most 600)
 *   --count N         stop after N datagrams (default: no count bound)
 *   --batch B         datagrams per sendmmsg() call (default 64, max 256)
 *   --cpu C           pin this process to CPU C
 *
 * Prints one line of key=value pairs: sent, send_errors, seconds, rate,
 * cpu_seconds (this process's CPU time); a sink prints received,
 * seconds, cpu_seconds.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <apr_general.h>

#include "beacon.h"

#define MAX_URLS 4096
#define MAX_SERVICES 256
#define MAX_BATCH 256
#define DGRAM_SIZE 512
#define DEFAULT_SECRET "hex:00112233445566778899aabbccddeeff"

static char *urls[MAX_URLS];
static unsigned nurls;
static const char *services[MAX_SERVICES];
static unsigned nservices;
static char bufs[MAX_BATCH][DGRAM_SIZE];
static struct mmsghdr msgs[MAX_BATCH];
static struct iovec iovs[MAX_BATCH];

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "bench_flood: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

static double mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static apr_int64_t wall_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (apr_int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_until(double t)
{
    struct timespec ts;

    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Keeps u's canonical form: what a member sends, and what a receiver
 * with a master derives the member key for. */
static void add_url(const char *u)
{
    char canonical[BEACON_URL_MAX];

    if (nurls == MAX_URLS)
        die("more than %s urls", "4096");
    if (beacon_url_canonicalize(u, strlen(u), canonical, sizeof canonical))
        die("not a member url: %s", u);
    if (!(urls[nurls] = strdup(canonical)))
        die("%s", "out of memory");
    nurls++;
}

static void add_service(const char *svc)
{
    if (nservices == MAX_SERVICES)
        die("more than %s services", "256");
    if (!beacon_service_is_valid(svc))
        die("not a service: %s", svc);
    services[nservices++] = svc;
}

static const char *lbfactor_arg(const char *opt, const char *s)
{
    if (beacon_lbfactor_parse(s, strlen(s)) < 0)
        die("bad value for %s", opt);
    return s;
}

static void read_urls(const char *path)
{
    char line[1024];
    FILE *f = fopen(path, "r");

    if (!f)
        die("cannot open %s", path);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0])
            add_url(line);
    }
    fclose(f);
}

static double number(const char *opt, const char *s, double max)
{
    char *end;
    double v = strtod(s, &end);

    if (*s == '\0' || *end != '\0' || v < 0 || v > max)
        die("bad value for %s", opt);
    return v;
}

/* This process's CPU time: the scheduler's run time, as in schedstat. */
static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Connected UDP socket to a loopback address only (bound instead: sink). */
static int open_target(const char *host, int port, int bind_it)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd;

    memset(&ss, 0, sizeof ss);
    if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

        if ((ntohl(sin->sin_addr.s_addr) >> 24) != 127)
            die("refusing non-loopback target %s", host);
        sin->sin_family = AF_INET;
        sin->sin_port = htons((unsigned short)port);
        sl = sizeof *sin;
    }
    else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

        if (!IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
            die("refusing non-loopback target %s", host);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((unsigned short)port);
        sl = sizeof *sin6;
    }
    else {
        die("not an address: %s", host);
        return -1;
    }
    if ((fd = socket(ss.ss_family, SOCK_DGRAM, 0)) < 0)
        die("cannot open a socket for %s", host);
    if (bind_it) {
        int size = 4 * 1024 * 1024; /* as the module asks for */

        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
            die("cannot bind %s", host);
    }
    else if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
        die("cannot connect to %s", host);
    return fd;
}

/*
 * Receives until `seconds` have passed, in the receiver's own pattern:
 * poll(), then drain up to 256 datagrams without blocking. What is left
 * out is everything the receiver does with a datagram once it has it.
 */
static int sink(int fd, double seconds, unsigned batch)
{
    static char rbufs[MAX_BATCH][BEACON_MAX_DATAGRAM + 1];
    unsigned long long received = 0;
    double t0 = mono(), first = 0, last = 0, cpu0 = cpu_now();
    struct pollfd pfd = {fd, POLLIN, 0};

    for (unsigned i = 0; i < MAX_BATCH; i++) {
        iovs[i].iov_base = rbufs[i];
        iovs[i].iov_len = sizeof rbufs[i];
    }
    while (mono() - t0 < seconds) {
        unsigned drained = 0;

        if (poll(&pfd, 1, 100) <= 0)
            continue;
        while (drained < 256) {
            int n;

            if (batch <= 1) {
                struct sockaddr_storage from;
                socklen_t fl = sizeof from;

                n = recvfrom(fd, rbufs[0], sizeof rbufs[0], MSG_DONTWAIT,
                             (struct sockaddr *)&from, &fl) >= 0 ? 1 : -1;
            }
            else {
                n = recvmmsg(fd, msgs, batch, MSG_DONTWAIT, NULL);
            }
            if (n <= 0)
                break;
            drained += (unsigned)n;
        }
        if (drained) {
            last = mono();
            if (!received)
                first = last;
            received += drained;
        }
    }
    printf("received=%llu seconds=%.6f cpu_seconds=%.6f\n", received,
           received ? last - first : 0.0, cpu_now() - cpu0);
    return 0;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *secret = DEFAULT_SECRET, *mode = NULL;
    const char *lbfactor = NULL, *lbfactor_vary = NULL;
    double rate = 0, seconds = 5, t0, now, elapsed;
    unsigned long long count = 0, sent = 0, errors = 0, seq = 0;
    unsigned batch = 64, pos = 0;
    int port = 0, cpu = -1, forged, fd, i;
    beacon_sequence_t sequence = {0, 0, NULL};
    apr_int64_t pid = (apr_int64_t)getpid();
    beacon_key_t key;
    const char *err;

    for (i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (!val)
            die("%s needs a value", opt);
        i++;
        if (!strcmp(opt, "--host"))
            host = val;
        else if (!strcmp(opt, "--port"))
            port = (int)number(opt, val, 65535);
        else if (!strcmp(opt, "--mode"))
            mode = val;
        else if (!strcmp(opt, "--url"))
            add_url(val);
        else if (!strcmp(opt, "--urls-file"))
            read_urls(val);
        else if (!strcmp(opt, "--svc"))
            add_service(val);
        else if (!strcmp(opt, "--lbfactor"))
            lbfactor = lbfactor_arg(opt, val);
        else if (!strcmp(opt, "--lbfactor-vary"))
            lbfactor_vary = lbfactor_arg(opt, val);
        else if (!strcmp(opt, "--secret"))
            secret = val;
        else if (!strcmp(opt, "--rate"))
            rate = number(opt, val, 1e8);
        else if (!strcmp(opt, "--seconds"))
            seconds = number(opt, val, 600);
        else if (!strcmp(opt, "--count"))
            count = (unsigned long long)number(opt, val, 1e12);
        else if (!strcmp(opt, "--batch"))
            batch = (unsigned)number(opt, val, MAX_BATCH);
        else if (!strcmp(opt, "--cpu"))
            cpu = (int)number(opt, val, 1023);
        else
            die("unknown option %s", opt);
    }
    if (port == 0 || !mode ||
        (strcmp(mode, "valid") && strcmp(mode, "forged") && strcmp(mode, "sink")))
        die("%s", "usage: bench_flood --port P --mode valid|forged|sink "
                  "[--url U | --urls-file F] [--svc S] [--rate R] [--seconds S] "
                  "[--count N] [--batch B] [--cpu C] [--host A] [--secret S] "
                  "[--lbfactor F [--lbfactor-vary G]]");
    if (lbfactor_vary && !lbfactor)
        die("%s", "--lbfactor-vary needs --lbfactor");
    if (nurls == 0)
        add_url("http://127.0.0.1:9");
    if (batch == 0)
        batch = 1;
    if (seconds <= 0)
        die("%s", "--seconds must be positive");
    forged = !strcmp(mode, "forged");

    apr_initialize();
    if ((err = beacon_key_parse(secret, &key)))
        die("--secret: %s", err);
    if (cpu >= 0) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            perror("bench_flood: sched_setaffinity (ignored)");
    }
    for (i = 0; i < MAX_BATCH; i++) {
        iovs[i].iov_base = bufs[i];
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    if (!strcmp(mode, "sink")) {
        fd = open_target(host, port, 1);
        sink(fd, seconds, batch);
        close(fd);
        apr_terminate();
        return 0;
    }
    fd = open_target(host, port, 0);

    t0 = now = mono();
    while (now - t0 < seconds && (count == 0 || sent < count)) {
        unsigned n = batch, done = 0;
        apr_int64_t wall = wall_usec();

        if (count && count - sent < n)
            n = (unsigned)(count - sent);
        /* Forged datagrams are signed once per slot and re-sent: the
         * receiver's cost does not depend on their content (with --svc,
         * the slots name the services in turn). */
        for (unsigned b = 0; b < n; b++) {
            if (!forged || pos < MAX_BATCH) {
                beacon_announcement_t a = {
                    .url = urls[seq % nurls],
                    .host = "bench-flood",
                    .pid = pid,
                    .state = NULL,
                    .svc = nservices ? services[seq % nservices] : NULL,
                    /* seq / nurls: how many this url has sent before */
                    .lbfactor = lbfactor_vary && (seq / nurls) % 2 ? lbfactor_vary
                                                                   : lbfactor,
                };
                int len;

                beacon_sequence_stamp(&sequence, wall, &a);
                len = beacon_format(bufs[b], DGRAM_SIZE, &a, &key);

                if (len < 0)
                    die("cannot format an announcement for %s", a.url);
                if (forged) {
                    char *last = &bufs[b][len - 1];

                    *last = *last == '0' ? '1' : '0';
                    pos++;
                }
                iovs[b].iov_len = (size_t)len;
                seq++;
            }
        }
        while (done < n) {
            int r = sendmmsg(fd, msgs + done, n - done, 0);

            if (r < 0) {
                /* ECONNREFUSED (nobody listening), ENOBUFS: count, go on */
                errors++;
                done++;
                continue;
            }
            done += (unsigned)r;
        }
        sent += n;
        now = mono();
        if (rate > 0) {
            double due = t0 + (double)sent / rate;

            if (due > now) {
                sleep_until(due);
                now = mono();
            }
        }
    }
    elapsed = now - t0;
    printf("sent=%llu send_errors=%llu seconds=%.6f rate=%.1f cpu_seconds=%.6f\n",
           sent, errors, elapsed, elapsed > 0 ? (double)sent / elapsed : 0.0,
           cpu_now());
    close(fd);
    apr_terminate();
    return 0;
}
