/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * SIGTERM and SIGINT: send and listen end between datagrams, not in the
 * middle of one, and send says state=leaving first. The handler sets a
 * flag and writes a byte to a pipe (the self-pipe trick): waiting means
 * polling that pipe, so a signal that arrives just before the wait still
 * ends it at once. Another thread with news for the waiting one (send's
 * lookups, which found a new proxy) uses the same pipe, with a flag of
 * its own, so that one poll waits for both.
 */

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <apr_atomic.h>
#include <apr_file_io.h>
#include <apr_portable.h>
#include <apr_signal.h>

#include "cli.h"

static volatile sig_atomic_t stop_signal;
static apr_uint32_t wake_pending; /* apr_atomic: set by other threads */
static int stop_pipe_wfd = -1;
static apr_file_t *stop_pipe;

/* One byte into the pipe: the poll in wait_until returns. Async-signal-
 * and thread-safe; the flag set before it says why. */
static void poke_pipe(void)
{
    int saved = errno;

    if (stop_pipe_wfd >= 0) {
        ssize_t n = write(stop_pipe_wfd, "", 1);

        (void)n; /* a full pipe is already readable: nothing lost */
    }
    errno = saved;
}

static void on_stop_signal(int signo)
{
    stop_signal = signo;
    poke_pipe();
}

void catch_stop_signals(apr_pool_t *p)
{
    apr_file_t *wr;
    apr_os_file_t fd;
    apr_status_t rv;
    char ebuf[120];

    rv = apr_file_pipe_create_ex(&stop_pipe, &wr, APR_FULL_NONBLOCK, p);
    if (rv == APR_SUCCESS) {
        rv = apr_os_file_get(&fd, wr);
    }
    if (rv != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "cannot create a pipe: %s",
             errstr(rv, ebuf, sizeof(ebuf)));
    }
    stop_pipe_wfd = fd;
    apr_signal(SIGTERM, on_stop_signal);
    apr_signal(SIGINT, on_stop_signal);
}

int stop_requested(void)
{
    return stop_signal != 0;
}

apr_pollfd_t stop_pollfd(apr_pool_t *p)
{
    apr_pollfd_t pfd;

    memset(&pfd, 0, sizeof(pfd));
    pfd.p = p;
    pfd.desc_type = APR_POLL_FILE;
    pfd.reqevents = APR_POLLIN;
    pfd.desc.f = stop_pipe;
    return pfd;
}

/* The stop signals are blocked in the calling thread, or unblocked again:
 * a thread started in between inherits the mask. */
static void mask_stop_signals(int how)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    (void)pthread_sigmask(how, &set, NULL); /* fails only for a bad how */
}

void block_stop_signals(void)
{
    mask_stop_signals(SIG_BLOCK);
}

void unblock_stop_signals(void)
{
    mask_stop_signals(SIG_UNBLOCK);
}

void wake_waiter(void)
{
    apr_atomic_set32(&wake_pending, 1);
    poke_pipe();
}

/* Empties the pipe, whose bytes only say "look at the flags": a wake's
 * byte left in it would make every later poll return at once. A stop
 * signal's byte may go too, but its flag stays set. */
static void drain_pipe(void)
{
    char buf[64];
    apr_size_t n;

    do {
        n = sizeof(buf);
    } while (apr_file_read(stop_pipe, buf, &n) == APR_SUCCESS);
}

wait_t wait_until(apr_pool_t *p, apr_time_t deadline, apr_interval_time_t max)
{
    apr_pollfd_t pfd = stop_pollfd(p);

    for (;;) {
        apr_time_t now = apr_time_now();
        apr_int32_t n;

        if (stop_signal) {
            return WAIT_STOP;
        }
        if (apr_atomic_xchg32(&wake_pending, 0)) {
            return WAIT_WOKEN;
        }
        if (now >= deadline || deadline - now > max) {
            return WAIT_DEADLINE;
        }
        /* EINTR, TIMEUP: the loop looks again */
        if (apr_poll(&pfd, 1, &n, deadline - now) == APR_SUCCESS) {
            drain_pipe();
        }
    }
}
