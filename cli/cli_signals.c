/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * SIGTERM and SIGINT: send and listen end between datagrams, not in the
 * middle of one, and send says state=leaving first. The handler sets a
 * flag and writes a byte to a pipe (the self-pipe trick): waiting means
 * polling that pipe, so a signal that arrives just before the wait still
 * ends it at once.
 */

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <apr_file_io.h>
#include <apr_portable.h>
#include <apr_signal.h>

#include "cli.h"

static volatile sig_atomic_t stop_signal;
static int stop_pipe_wfd = -1;
static apr_file_t *stop_pipe;

static void on_stop_signal(int signo)
{
    int saved = errno;

    stop_signal = signo;
    if (stop_pipe_wfd >= 0) {
        ssize_t n = write(stop_pipe_wfd, "", 1);

        (void)n; /* a full pipe is already readable: nothing lost */
    }
    errno = saved;
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

int wait_until(apr_pool_t *p, apr_time_t deadline, apr_interval_time_t max)
{
    apr_pollfd_t pfd = stop_pollfd(p);

    for (;;) {
        apr_time_t now = apr_time_now();
        apr_int32_t n;

        if (stop_signal) {
            return 1;
        }
        if (now >= deadline || deadline - now > max) {
            return 0;
        }
        (void)apr_poll(&pfd, 1, &n, deadline - now); /* EINTR, TIMEUP: loop */
    }
}
