/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A program's output, bounded in time: what ProxyBeaconSecret exec: and
 * beaconctl's --secret-exec read a secret from (beacon_key_exec), and
 * what beaconctl send --lbfactor-command reads a load factor from.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, syscall, close_range's number */
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <apr_strings.h>
#include <apr_errno.h>

#include "beacon.h"

#define WAIT_SLICE apr_time_from_msec(10)

/*
 * The program runs with POSIX calls, not apr_proc_create, for two
 * things APR cannot do: the program leads a process group of its own,
 * which is killed whole (a helper's background children, holding the
 * output or the caller's stderr, die with it), and it gets fds 0 to 2
 * only (1 is our pipe), not every fd its caller left open without
 * close-on-exec. A program that must leave something running detaches it
 * (setsid), as daemons do.
 */

/* What is left of the time until deadline, in ms for poll(), at least 0. */
static int ms_until(apr_time_t deadline)
{
    apr_time_t left = deadline - apr_time_now();

    return left <= 0 ? 0 : (int)((left + 999) / 1000);
}

/* The program's output until it ends it or deadline, its first size
 * bytes into buf (the rest read and dropped, so that a program that says
 * more is not stopped by a full pipe): APR_SUCCESS, APR_TIMEUP or a read
 * error. */
static apr_status_t read_output(int out, apr_time_t deadline, char *buf,
                                apr_size_t size, apr_size_t *len)
{
    char drop[4096];

    *len = 0;
    for (;;) {
        struct pollfd pfd = {out, POLLIN, 0};
        ssize_t n;
        int ready = poll(&pfd, 1, ms_until(deadline));

        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready < 0) {
            return APR_FROM_OS_ERROR(errno);
        }
        if (ready == 0) {
            return APR_TIMEUP;
        }
        n = *len < size ? read(out, buf + *len, size - *len)
                        : read(out, drop, sizeof(drop));
        if (n == 0) {
            return APR_SUCCESS;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            return APR_FROM_OS_ERROR(errno);
        }
        if (n > 0 && *len < size) {
            *len += (apr_size_t)n;
        }
    }
}

/* Waits until pid has exited, leaving it unreaped (so that its pid, the
 * group's id, cannot be taken by another process meanwhile); 0, or -1
 * at deadline (deadline 0: now) or on an error. */
static int wait_exited(pid_t pid, apr_time_t deadline)
{
    for (;;) {
        siginfo_t info;

        memset(&info, 0, sizeof(info));
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (info.si_pid == pid) {
            return 0;
        }
        if (apr_time_now() >= deadline) {
            return -1;
        }
        apr_sleep(WAIT_SLICE);
    }
}

/* Reaps the program, its whole group killed at deadline, and what is left
 * of the group once it has exited; NULL when it exited 0. */
static const char *reap(apr_pool_t *p, pid_t pid, const char *name,
                        apr_time_t deadline, apr_interval_time_t limit)
{
    int timed_out = wait_exited(pid, deadline) != 0;
    int status;

    kill(-pid, SIGKILL); /* the group: still ours while pid is unreaped */
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return apr_psprintf(p, "cannot wait for %s", name);
        }
    }
    if (timed_out) {
        return apr_psprintf(p, "%s did not finish within %.1f s", name,
                            (double)limit / APR_USEC_PER_SEC);
    }
    if (WIFSIGNALED(status)) {
        return apr_psprintf(p, "%s was killed by signal %d", name,
                            WTERMSIG(status));
    }
    return WEXITSTATUS(status) == 0
               ? NULL
               : apr_psprintf(p, "%s exited with status %d", name,
                              WEXITSTATUS(status));
}

/* Closes every fd from 3 up but keep (close-on-exec: exec closes it). */
static void close_inherited(int keep, long max_fd)
{
    long fd;

#ifdef SYS_close_range
    if (keep < 3 ? syscall(SYS_close_range, 3U, ~0U, 0U) == 0
                 : syscall(SYS_close_range, 3U, (unsigned)keep - 1U, 0U) == 0 &&
                       syscall(SYS_close_range, (unsigned)keep + 1U, ~0U, 0U) == 0) {
        return;
    }
#endif
    for (fd = 3; fd < max_fd; fd++) {
        if (fd != keep) {
            close((int)fd);
        }
    }
}

/* The child, from fork to exec: async-signal-safe calls only. exec's
 * errno goes back through report, which exec closes when it succeeds. */
static void become(char *const argv[], int out, int report, long max_fd)
{
    int err;

    setpgid(0, 0);
    if (out == STDOUT_FILENO) {
        fcntl(out, F_SETFD, 0);
    }
    else if (dup2(out, STDOUT_FILENO) < 0) {
        err = errno;
        goto failed;
    }
    close_inherited(report, max_fd);
    execv(argv[0], argv);
    err = errno;
failed:
    if (write(report, &err, sizeof(err)) < 0) {
        err = 0; /* nothing more to do: the exit status says it failed */
    }
    _exit(127);
}

static const char *cannot_run(apr_pool_t *p, const char *name, int err)
{
    char msg[120];

    return apr_psprintf(p, "cannot run %s: %s", name,
                        apr_strerror(APR_FROM_OS_ERROR(err), msg, sizeof(msg)));
}

/* Starts the program in a group of its own, *out our end of its output;
 * NULL, or why not. */
static const char *start(apr_pool_t *p, char *const argv[], const char *name,
                         pid_t *pid, int *out)
{
    long max_fd = sysconf(_SC_OPEN_MAX);
    int output[2], report[2], err = 0;
    ssize_t n;

    if (pipe2(output, O_CLOEXEC) < 0) {
        return cannot_run(p, name, errno);
    }
    if (pipe2(report, O_CLOEXEC) < 0) {
        err = errno;
        close(output[0]);
        close(output[1]);
        return cannot_run(p, name, err);
    }
    if ((*pid = fork()) == 0) {
        become(argv, output[1], report[1], max_fd > 0 ? max_fd : 1024);
    }
    err = *pid < 0 ? errno : 0;
    close(output[1]);
    close(report[1]);
    if (*pid > 0) {
        setpgid(*pid, *pid); /* here too: kill(-pid) must find the group */
        /* exec's errno, or end of file when exec closed report */
        while ((n = read(report[0], &err, sizeof(err))) < 0 && errno == EINTR) {
        }
        if (n != (ssize_t)sizeof(err)) {
            err = 0;
        }
        else {
            waitpid(*pid, NULL, 0);
        }
    }
    close(report[0]);
    if (err != 0) {
        close(output[0]);
        return cannot_run(p, name, err);
    }
    *out = output[0];
    return NULL;
}

const char *beacon_exec_read(apr_pool_t *p, char *const argv[],
                             const char *name, apr_interval_time_t limit,
                             char *buf, apr_size_t size, apr_size_t *len)
{
    apr_time_t deadline = apr_time_now() + limit;
    apr_status_t rv;
    const char *err;
    pid_t pid = -1;
    int out = -1;

    *len = 0;
    if ((err = start(p, argv, name, &pid, &out)) != NULL) {
        return err;
    }
    rv = read_output(out, deadline, buf, size, len);
    close(out);
    err = reap(p, pid, name, rv == APR_TIMEUP ? 0 : deadline, limit);
    if (err == NULL && rv != APR_SUCCESS) {
        err = apr_psprintf(p, "cannot read what %s prints", name);
    }
    return err;
}
