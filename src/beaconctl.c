/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl: the command-line sender and diagnostic tool of mod_proxy_beacon.
 *
 *   send     announce a backend that is not httpd, once or every interval
 *   listen   print what a receiver would decide for each datagram
 *   sign     print one signed datagram (scripts, test vectors)
 *   keygen   print a new random secret
 *
 * Protocol decisions are libbeacon's (include/beacon.h); this file parses
 * options, moves datagrams and prints. The secret is never taken from the
 * command line, where every local user could read it with ps: it comes
 * from --secret-file or the environment variable BEACON_SECRET.
 *
 * Exit status: 0 success, 1 runtime failure, 2 usage or configuration
 * error. Every error is one line on stderr, prefixed "beaconctl: ".
 */

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <apr_env.h>
#include <apr_file_io.h>
#include <apr_general.h>
#include <apr_getopt.h>
#include <apr_network_io.h>
#include <apr_poll.h>
#include <apr_portable.h>
#include <apr_signal.h>
#include <apr_strings.h>

#include "beacon.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

#define SECRET_ENV "BEACON_SECRET"
#define SECRET_FILE_MAX 4096 /* bytes read from --secret-file */

#define DEFAULT_INTERVAL apr_time_from_sec(5)
#define MIN_INTERVAL apr_time_from_msec(1)
#define DEFAULT_MAX_SKEW apr_time_from_sec(30) /* ProxyBeaconMaxSkew's */
#define REPORT_EVERY apr_time_from_sec(60)     /* per failing target */
#define SHOWN_BYTES 160 /* of a dropped datagram, escaped */

/* ------------------------------------------------------------------ */
/* Errors                                                              */

static const char *cmd_name; /* the running command, for messages */

/* One line on stderr, "beaconctl: [command: ]message", then exit(status). */
static void fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void vwarn(const char *fmt, va_list ap)
{
    fflush(stdout);
    fputs("beaconctl: ", stderr);
    if (cmd_name) {
        fprintf(stderr, "%s: ", cmd_name);
    }
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
}

static void fail(int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
    exit(status);
}

/* A warning line that does not end the program. */
static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void warn(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
}

static const char *errstr(apr_status_t rv, char *buf, apr_size_t size)
{
    return apr_strerror(rv, buf, size);
}

/* stdout is where results go: a failed write is a failed command. */
static void flush_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fail(EXIT_RUNTIME, "cannot write to standard output: %s",
             strerror(errno));
    }
}

/*
 * Writes peer bytes so that the line stays one printable line: bytes
 * outside 0x20-0x7e, the backslash and the double quote become \xNN.
 * At most max bytes are shown; "..." marks the cut.
 */
static void put_escaped(const char *p, apr_size_t len, apr_size_t max)
{
    apr_size_t i;

    for (i = 0; i < len && i < max; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c >= 0x20 && c <= 0x7e && c != '\\' && c != '"') {
            putchar(c);
        }
        else {
            printf("\\x%02x", c);
        }
    }
    if (len > max) {
        fputs("...", stdout);
    }
}

/* ------------------------------------------------------------------ */
/* Options                                                             */

enum {
    OPT_HELP = 'h',
    OPT_TO = 256, /* long-only options: above every character */
    OPT_URL,
    OPT_HOST,
    OPT_INTERVAL,
    OPT_ONCE,
    OPT_SECRET_FILE,
    OPT_VERBOSE,
    OPT_BIND,
    OPT_MAX_SKEW,
    OPT_COUNT,
    OPT_PID,
    OPT_SEQ,
    OPT_TS,
    OPT_STATE
};

/* One option: the --help text is generated from the same table. */
typedef struct {
    const char *name;
    int optch;
    const char *arg;  /* value placeholder for --help; NULL: a flag */
    const char *help; /* lines separated by '\n' */
} option_t;

typedef struct command command_t;
struct command {
    const char *name;
    const char *synopsis; /* after "beaconctl NAME "; NULL: none */
    const char *about;    /* lines separated by '\n' */
    const option_t *options;
    int (*run)(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv);
};

#define SECRET_FILE_OPTION                                                    \
    {"secret-file", OPT_SECRET_FILE, "FILE",                                  \
     "read the secret from the first line of FILE (a\n"                      \
     "trailing newline is ignored); without this option,\n"                  \
     "from the environment variable " SECRET_ENV ".\n"                       \
     "There is no option for the secret itself."}
#define HELP_OPTION {"help", OPT_HELP, NULL, "print this help and exit"}

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
static const option_t send_options[] = {
    {"to", OPT_TO, "HOST:PORT",
     "a proxy's ProxyBeaconListen address; repeat it for\n"
     "several proxies. A leading scheme (udp://, tcp://)\n"
     "is ignored; IPv6 in brackets, [::1]:5555. Names\n"
     "are looked up again for every datagram."},
    {"url", OPT_URL, "URL",
     "this backend's origin, scheme://host[:port], as\n"
     "the proxy should reach it; sent in canonical form.\n"
     "Without it only heartbeats are sent, which a proxy\n"
     "logs but never adds to a balancer."},
    {"host", OPT_HOST, "NAME",
     "the host= field (informational); default: this\n"
     "machine's host name"},
    {"interval", OPT_INTERVAL, "SECONDS",
     "time between announcements, default 5; fractions\n"
     "(0.5) and the units s and ms (500ms) are accepted"},
    {"once", OPT_ONCE, NULL,
     "send one announcement and exit: 0 if it went to at\n"
     "least one proxy, 1 if to none"},
    {"verbose", OPT_VERBOSE, NULL,
     "print each datagram sent, and to where, on\n"
     "standard output"},
    SECRET_FILE_OPTION,
    HELP_OPTION,
    {NULL, 0, NULL, NULL}};

static const option_t listen_options[] = {
    {"bind", OPT_BIND, "ADDR:PORT",
     "the UDP address to receive on (required). ADDR\n"
     "may be * or empty for every address, PORT 0 for\n"
     "any free port: the first line names the address."},
    {"max-skew", OPT_MAX_SKEW, "SECONDS",
     "how far a timestamp may be from this machine's\n"
     "clock, default 30 (ProxyBeaconMaxSkew's default);\n"
     "fractions and the units s and ms are accepted"},
    {"count", OPT_COUNT, "N",
     "exit after N datagrams; default: run until SIGINT\n"
     "or SIGTERM"},
    SECRET_FILE_OPTION,
    HELP_OPTION,
    {NULL, 0, NULL, NULL}};

static const option_t sign_options[] = {
    {"url", OPT_URL, "URL",
     "the url= field, checked and canonicalized as send\n"
     "does it"},
    {"host", OPT_HOST, "NAME", "the host= field"},
    {"pid", OPT_PID, "N", "the pid= field"},
    {"seq", OPT_SEQ, "N", "the seq= field"},
    {"ts", OPT_TS, "USEC",
     "the ts= field (required): microseconds since the\n"
     "epoch, or 'now' for this machine's clock"},
    {"state", OPT_STATE, "S", "the state= field, e.g. leaving"},
    SECRET_FILE_OPTION,
    HELP_OPTION,
    {NULL, 0, NULL, NULL}};

static const option_t keygen_options[] = {
    HELP_OPTION,
    {NULL, 0, NULL, NULL}};

static int run_send(apr_pool_t *p, const command_t *cmd, int argc,
                    const char *const *argv);
static int run_listen(apr_pool_t *p, const command_t *cmd, int argc,
                      const char *const *argv);
static int run_sign(apr_pool_t *p, const command_t *cmd, int argc,
                    const char *const *argv);
static int run_keygen(apr_pool_t *p, const command_t *cmd, int argc,
                      const char *const *argv);

static const command_t commands[] = {
    {"send",
     "--to HOST:PORT [--to HOST:PORT ...] [--url URL]\n"
     "[--host NAME] [--interval SECONDS | --once] [--verbose]\n"
     "[--secret-file FILE]",
     "Announces a backend that is not httpd to one or more proxies: at\n"
     "once, then every interval, in the foreground. On SIGTERM or SIGINT\n"
     "it sends a last datagram with state=leaving (the proxy disables\n"
     "the member) and exits 0. A name that does not resolve or a failed\n"
     "send costs one line on stderr per target and minute at most, and\n"
     "never ends the program. Fields: url, host, pid (own), seq (from 0),\n"
     "ts (the wall clock in microseconds, strictly increasing).",
     send_options, run_send},
    {"listen",
     "--bind ADDR:PORT [--max-skew SECONDS] [--count N]\n"
     "[--secret-file FILE ...]",
     "Receives datagrams and prints one line for each: what a proxy with\n"
     "the same secret and max skew would decide. The tool to reach for\n"
     "when a backend never joins. During a rotation give --secret-file\n"
     "once per secret, at most 4: any of them verifies, as on a proxy\n"
     "with several ProxyBeaconSecret lines.\n"
     "  accepted url=<canonical> host=.. pid=.. seq=.. ts=.. [state=..]\n"
     "      from IP:PORT -> add|renew|disable|enable|ignore\n"
     "  accepted heartbeat host=.. pid=.. seq=.. ts=.. from IP:PORT\n"
     "  dropped <reason> from IP:PORT[: detail]\n"
     "Fields keep the wire order; absent ones are left out. The replay\n"
     "check starts empty, like a proxy just started, and counts every add\n"
     "as done. Bytes from the network are shown escaped (\\xNN). Output\n"
     "is flushed after each line.",
     listen_options, run_listen},
    {"sign",
     "--ts USEC [--url URL] [--host NAME] [--pid N] [--seq N]\n"
     "[--state S] [--secret-file FILE]",
     "Prints one signed datagram and a newline, which is not part of it\n"
     "(for scripts and test vectors). Fields not given are left out; the\n"
     "rest are written in the wire order url, host, pid, seq, ts, state.",
     sign_options, run_sign},
    {"keygen", NULL,
     "Prints a new random secret, hex: and 32 lowercase hex digits, from\n"
     "the operating system's random source. Use one secret for\n"
     "ProxyBeaconSecret on the proxies and for all their senders.",
     keygen_options, run_keygen},
    {NULL, NULL, NULL, NULL, NULL}};

/* Prints text, each line after the first indented by indent columns. */
static void put_indented(const char *text, int indent)
{
    for (; *text; text++) {
        putchar(*text);
        if (*text == '\n') {
            printf("%*s", indent, "");
        }
    }
}

static void print_command_help(const command_t *cmd)
{
    const option_t *o;
    int width = (int)(strlen("usage: beaconctl ") + strlen(cmd->name) + 1);

    printf("usage: beaconctl %s", cmd->name);
    if (cmd->synopsis) {
        putchar(' ');
        put_indented(cmd->synopsis, width);
    }
    fputs("\n\n", stdout);
    put_indented(cmd->about, 0);
    fputs("\n\noptions:\n", stdout);
    for (o = cmd->options; o->name; o++) {
        char head[64];
        int n;

        n = snprintf(head, sizeof(head), "  %s--%s%s%s",
                     o->optch == OPT_HELP ? "-h, " : "", o->name,
                     o->arg ? " " : "", o->arg ? o->arg : "");
        if (n > 24) {
            printf("%s\n%26s", head, "");
        }
        else {
            printf("%-26s", head);
        }
        put_indented(o->help, 26);
        putchar('\n');
    }
}

static void print_help(void)
{
    const command_t *cmd;

    fputs("usage: beaconctl COMMAND [OPTIONS]\n"
          "       beaconctl COMMAND --help\n\n"
          "The command-line sender and diagnostic tool of mod_proxy_beacon,\n"
          "which lets backends announce themselves to a reverse proxy in\n"
          "signed UDP datagrams.\n\n"
          "commands:\n"
          "  send      announce a backend that is not httpd\n"
          "  listen    print what a proxy would decide for each datagram\n"
          "  sign      print one signed datagram\n"
          "  keygen    print a new random secret\n\n"
          "The secret (the proxy's ProxyBeaconSecret: hex: and 32 hex digits,\n"
          "or a passphrase of at least 16 bytes) is read from the first line\n"
          "of --secret-file FILE, or else from the environment variable\n"
          SECRET_ENV ". It is never taken from the command line, where every\n"
          "local user could read it with ps.\n\n"
          "Exit status: 0 success, 1 runtime failure, 2 usage or configuration\n"
          "error (one line on stderr, prefixed \"beaconctl: \").\n",
          stdout);
    for (cmd = commands; cmd->name; cmd++) {
        fputs("\n", stdout);
        print_command_help(cmd);
    }
}

/*
 * apr_getopt's error callback. APR formats "<command>: <problem>: <option>";
 * the problem becomes a usage error naming where the help is.
 */
static void getopt_error(void *arg, const char *fmt, ...)
{
    char msg[256];
    apr_size_t n;
    va_list ap;

    va_start(ap, fmt);
    apr_vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) {
        msg[--n] = '\0';
    }
    cmd_name = NULL; /* msg starts with it already */
    fail(EXIT_USAGE, "%s (see beaconctl %s --help)", msg, (const char *)arg);
}

typedef struct {
    apr_getopt_t *os;
    const apr_getopt_option_t *table;
    const command_t *cmd;
    int argc;
} opts_t;

/* argv[0] is the command's name, argv[1..] its options. */
static void opts_init(opts_t *o, apr_pool_t *p, const command_t *cmd, int argc,
                      const char *const *argv)
{
    apr_getopt_option_t *table;
    int i, n = 0;

    /*
     * A secret given on the command line is refused before anything else
     * looks at it, and the message does not repeat it.
     */
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--secret") == 0 ||
            strncmp(argv[i], "--secret=", 9) == 0) {
            fail(EXIT_USAGE, "there is no --secret option: a secret on the "
                 "command line is visible to every local user; use "
                 "--secret-file FILE or the environment variable "
                 SECRET_ENV);
        }
    }
    while (cmd->options[n].name) {
        n++;
    }
    table = apr_pcalloc(p, sizeof(*table) * (apr_size_t)(n + 1));
    for (i = 0; i < n; i++) {
        table[i].name = cmd->options[i].name;
        table[i].optch = cmd->options[i].optch;
        table[i].has_arg = cmd->options[i].arg != NULL;
        table[i].description = cmd->options[i].help;
    }
    if (apr_getopt_init(&o->os, p, argc, argv) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    o->os->errfn = getopt_error;
    o->os->errarg = (void *)cmd->name;
    o->table = table;
    o->cmd = cmd;
    o->argc = argc;
}

/* The next option's code with *arg set, or 0 when all are read. */
static int opts_next(opts_t *o, const char **arg)
{
    int optch;
    apr_status_t rv = apr_getopt_long(o->os, o->table, &optch, arg);

    if (rv == APR_EOF) {
        if (o->os->ind < o->argc) {
            fail(EXIT_USAGE, "unexpected argument '%s' (see beaconctl %s "
                 "--help)", o->os->argv[o->os->ind], o->cmd->name);
        }
        return 0;
    }
    if (rv != APR_SUCCESS) {
        /* getopt_error() has reported it and exited; this is a fallback */
        fail(EXIT_USAGE, "bad options (see beaconctl %s --help)",
             o->cmd->name);
    }
    if (optch == OPT_HELP) {
        print_command_help(o->cmd);
        flush_stdout();
        exit(0);
    }
    return optch;
}

/* For options that may be given once: stores arg, or fails on a repeat. */
static void set_once(const char **slot, const char *arg, const char *name)
{
    if (*slot != NULL) {
        fail(EXIT_USAGE, "--%s may be given only once", name);
    }
    *slot = arg;
}

/* ------------------------------------------------------------------ */
/* Values                                                              */

/* A plain decimal of 1 to 18 digits; 0 if s is anything else. */
static int parse_uint(const char *s, apr_int64_t *out)
{
    apr_int64_t n = 0;
    int digits = 0;

    for (; *s; s++, digits++) {
        if (*s < '0' || *s > '9' || digits == 18) {
            return 0;
        }
        n = n * 10 + (*s - '0');
    }
    if (digits == 0) {
        return 0;
    }
    *out = n;
    return 1;
}

/*
 * A duration "5", "0.5", "2.5s", "500ms" into microseconds: up to 9
 * integer digits (no overflow possible), the fraction cut at microseconds.
 */
static int parse_duration(const char *s, apr_interval_time_t *out)
{
    apr_int64_t whole = 0, frac = 0, scale = APR_USEC_PER_SEC, div = 1;
    int digits = 0, fdigits = 0;

    for (; *s >= '0' && *s <= '9'; s++) {
        if (++digits > 9) {
            return 0;
        }
        whole = whole * 10 + (*s - '0');
    }
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++) {
            if (++fdigits <= 6) {
                frac = frac * 10 + (*s - '0');
                div *= 10;
            }
        }
        if (fdigits == 0) {
            return 0;
        }
    }
    if (digits == 0 && fdigits == 0) {
        return 0;
    }
    if (strcmp(s, "ms") == 0) {
        scale = 1000;
    }
    else if (*s != '\0' && strcmp(s, "s") != 0) {
        return 0;
    }
    *out = whole * scale + frac * scale / div;
    return 1;
}

/* "1.5 s" style, for messages. */
static const char *format_duration(apr_pool_t *p, apr_interval_time_t t)
{
    if (t % APR_USEC_PER_SEC == 0) {
        return apr_psprintf(p, "%" APR_INT64_T_FMT " s", t / APR_USEC_PER_SEC);
    }
    return apr_psprintf(p, "%.6g s", (double)t / APR_USEC_PER_SEC);
}

/*
 * HOST:PORT as --to and --bind take it: an optional leading scheme
 * ("udp://", "tcp://"), IPv6 in brackets. With allow_any, HOST may be
 * empty or "*" (*host = NULL) and PORT 0. NULL on success, else the problem.
 */
static const char *parse_host_port(apr_pool_t *p, const char *spec,
                                   int allow_any, char **host,
                                   apr_port_t *port)
{
    const char *sep = strstr(spec, "://");
    char *scope = NULL;
    apr_int64_t n;
    const char *s;

    if (sep) {
        for (s = spec; s < sep; s++) {
            int alpha = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z');

            if (!alpha && (s == spec || !((*s >= '0' && *s <= '9') ||
                                          *s == '+' || *s == '-' ||
                                          *s == '.'))) {
                return "not a scheme before ://";
            }
        }
        if (sep == spec) {
            return "not a scheme before ://";
        }
        spec = sep + 3;
    }
    if (allow_any && (spec[0] == ':' || strncmp(spec, "*:", 2) == 0)) {
        s = strchr(spec, ':') + 1;
        if (!parse_uint(s, &n) || n > 65535) {
            return "the port must be a number from 0 to 65535";
        }
        *host = NULL;
        *port = (apr_port_t)n;
        return NULL;
    }
    s = strrchr(spec, ':');
    if (s != NULL && spec[0] == '[' && (s < strchr(spec, ']') ||
                                        strchr(spec, ']') == NULL)) {
        s = NULL; /* "[::1]": the colons are the address's */
    }
    if (s == NULL || (strchr(spec, ':') != s && spec[0] != '[')) {
        return s == NULL ? "expected HOST:PORT"
                         : "expected HOST:PORT, an IPv6 address in brackets";
    }
    if (!parse_uint(s + 1, &n) || n > 65535 || (n == 0 && !allow_any)) {
        return allow_any ? "the port must be a number from 0 to 65535"
                         : "the port must be a number from 1 to 65535";
    }
    /* APR takes the host part apart (brackets); the port was checked above,
     * and apr_parse_addr_port would refuse a port of 0 */
    if (apr_parse_addr_port(host, &scope, port,
                            apr_pstrmemdup(p, spec, (apr_size_t)(s - spec)),
                            p) != APR_SUCCESS ||
        *host == NULL || **host == '\0' || *port != 0) {
        return "expected HOST:PORT";
    }
    if (scope != NULL) {
        return "an IPv6 scope (%...) is not supported";
    }
    *port = (apr_port_t)n;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The secret                                                          */

/* Zeroes secret material in a way the optimizer keeps. */
static void wipe(void *p, apr_size_t len)
{
    volatile unsigned char *v = p;

    while (len--) {
        *v++ = 0;
    }
}

/*
 * The key from the first line of file, or from BEACON_SECRET when file is
 * NULL. Every problem is a configuration error; no message shows the secret.
 */
static void load_key(apr_pool_t *p, const char *file, beacon_key_t *key)
{
    char buf[SECRET_FILE_MAX + 1];
    char *value = NULL;
    const char *err;
    char ebuf[120];

    if (file) {
        apr_file_t *f;
        apr_size_t len = SECRET_FILE_MAX;
        apr_status_t rv;
        char *nl;

        rv = apr_file_open(&f, file, APR_FOPEN_READ, APR_FPROT_OS_DEFAULT, p);
        if (rv != APR_SUCCESS) {
            fail(EXIT_USAGE, "--secret-file %s: %s", file,
                 errstr(rv, ebuf, sizeof(ebuf)));
        }
        rv = apr_file_read_full(f, buf, len, &len);
        apr_file_close(f);
        if (rv != APR_SUCCESS && rv != APR_EOF) {
            fail(EXIT_USAGE, "--secret-file %s: %s", file,
                 errstr(rv, ebuf, sizeof(ebuf)));
        }
        if ((nl = memchr(buf, '\n', len)) != NULL) {
            len = (apr_size_t)(nl - buf);
        }
        else if (len == SECRET_FILE_MAX) {
            wipe(buf, sizeof(buf));
            fail(EXIT_USAGE, "--secret-file %s: the first line is longer "
                 "than %d bytes", file, SECRET_FILE_MAX);
        }
        if (len > 0 && buf[len - 1] == '\r') {
            len--;
        }
        buf[len] = '\0';
        if (memchr(buf, '\0', len) != NULL) {
            /* a passphrase cut at the NUL would be a different key */
            wipe(buf, sizeof(buf));
            fail(EXIT_USAGE, "--secret-file %s: the first line holds a NUL "
                 "byte", file);
        }
        err = beacon_key_parse(buf, key);
        wipe(buf, sizeof(buf));
        if (err) {
            fail(EXIT_USAGE, "--secret-file %s: %s", file, err);
        }
        return;
    }
    if (apr_env_get(&value, SECRET_ENV, p) != APR_SUCCESS) {
        fail(EXIT_USAGE, "no secret: use --secret-file FILE or set the "
             "environment variable " SECRET_ENV " (see beaconctl %s --help)",
             cmd_name);
    }
    err = beacon_key_parse(value, key);
    if (err) {
        fail(EXIT_USAGE, SECRET_ENV ": %s", err);
    }
}

/* ------------------------------------------------------------------ */
/* Stop signals                                                        */

/*
 * SIGTERM and SIGINT set stop_signal and write a byte to a pipe (the
 * self-pipe trick): waiting means polling that pipe, so a signal that
 * arrives just before the wait still ends it at once.
 */
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

static void catch_stop_signals(apr_pool_t *p)
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

static apr_pollfd_t stop_pollfd(apr_pool_t *p)
{
    apr_pollfd_t pfd;

    memset(&pfd, 0, sizeof(pfd));
    pfd.p = p;
    pfd.desc_type = APR_POLL_FILE;
    pfd.reqevents = APR_POLLIN;
    pfd.desc.f = stop_pipe;
    return pfd;
}

/*
 * Waits until deadline or a stop signal; nonzero for the signal. A wait
 * longer than max means the wall clock stepped back: it ends at once.
 */
static int wait_until(apr_pool_t *p, apr_time_t deadline,
                      apr_interval_time_t max)
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

/* ------------------------------------------------------------------ */
/* send                                                                */

typedef struct {
    const char *spec;       /* as given, for messages */
    char *host;
    apr_port_t port;
    apr_time_t reported_at; /* last error line; 0: none yet */
    int reported;           /* an error line is out, no recovery line yet */
} target_t;

typedef struct {
    target_t *targets;
    int ntargets;
    beacon_key_t key;
    beacon_announcement_t a;
    apr_int64_t last_ts;
    int verbose;
    int once;
} sender_t;

/* Reports a target's failure, at most once per REPORT_EVERY. */
static void target_failed(const sender_t *s, target_t *t, apr_time_t now,
                          const char *what, apr_status_t rv)
{
    char ebuf[120];

    /* (a clock stepped back ends the quiet minute rather than extend it) */
    if (t->reported_at != 0 && now >= t->reported_at &&
        now - t->reported_at < REPORT_EVERY) {
        return;
    }
    t->reported_at = now;
    t->reported = 1;
    warn("to %s: %s: %s%s", t->spec, what, errstr(rv, ebuf, sizeof(ebuf)),
         s->once ? "" : " (retrying; reported once a minute at most)");
}

/*
 * Formats one announcement (state NULL or "leaving") and sends it to every
 * target; a failing target costs a rate-limited line, nothing more. Names
 * are resolved each time, so a proxy that moves is followed. Returns how
 * many targets it reached.
 */
static int announce(sender_t *s, const char *state, apr_pool_t *tick)
{
    char buf[BEACON_MAX_DATAGRAM + 1];
    apr_time_t now = apr_time_now();
    int len, i, sent = 0;

    s->a.ts = beacon_next_ts(&s->last_ts, now);
    s->a.state = state;
    len = beacon_format(buf, sizeof(buf), &s->a, &s->key);
    s->a.seq++;
    if (len < 0) {
        /* run_send() tried the longest datagram before the first send */
        fail(EXIT_RUNTIME, "cannot format an announcement");
    }
    for (i = 0; i < s->ntargets; i++) {
        target_t *t = &s->targets[i];
        apr_sockaddr_t *sa;
        apr_socket_t *sock;
        apr_size_t n = (apr_size_t)len;
        apr_status_t rv;

        rv = apr_sockaddr_info_get(&sa, t->host, APR_UNSPEC, t->port, 0, tick);
        if (rv != APR_SUCCESS) {
            target_failed(s, t, now, apr_psprintf(tick, "cannot resolve %s",
                                               t->host), rv);
            continue;
        }
        rv = apr_socket_create(&sock, sa->family, SOCK_DGRAM, APR_PROTO_UDP,
                               tick);
        if (rv != APR_SUCCESS) {
            target_failed(s, t, now, "cannot create a socket", rv);
            continue;
        }
        rv = apr_socket_sendto(sock, sa, 0, buf, &n);
        apr_socket_close(sock);
        if (rv == APR_SUCCESS && n != (apr_size_t)len) {
            rv = APR_EGENERAL;
        }
        if (rv != APR_SUCCESS) {
            target_failed(s, t, now, "cannot send", rv);
            continue;
        }
        sent++;
        if (t->reported) {
            t->reported = 0;
            warn("to %s: sending again", t->spec);
        }
        if (s->verbose) {
            printf("sent to %s: %s\n", t->spec, buf);
            flush_stdout();
        }
    }
    apr_pool_clear(tick);
    return sent;
}

static void check_field(const char *option, const char *value)
{
    if (!beacon_value_is_valid(value)) {
        fail(EXIT_USAGE, "--%s: must be non-empty printable ASCII without "
             "spaces", option);
    }
}

/* Checks url and writes its canonical form into out (BEACON_URL_MAX). */
static void canonical_url(const char *url, char *out)
{
    const char *err = beacon_url_canonicalize(url, strlen(url), out,
                                              BEACON_URL_MAX);

    if (err) {
        /* the url is the user's own, but may hold any byte: escape it */
        fflush(stdout);
        fputs("beaconctl: ", stderr);
        fprintf(stderr, "%s: --url '", cmd_name);
        for (; *url; url++) {
            unsigned char c = (unsigned char)*url;

            if (c >= 0x20 && c <= 0x7e && c != '\\') {
                fputc(c, stderr);
            }
            else {
                fprintf(stderr, "\\x%02x", c);
            }
        }
        fprintf(stderr, "': %s\n", err);
        exit(EXIT_USAGE);
    }
}

static int run_send(apr_pool_t *p, const command_t *cmd, int argc,
                    const char *const *argv)
{
    apr_array_header_t *specs = apr_array_make(p, 4, sizeof(const char *));
    const char *url = NULL, *host = NULL, *interval_arg = NULL;
    const char *secret_file = NULL, *arg;
    apr_interval_time_t interval = DEFAULT_INTERVAL;
    char hostname[APRMAXHOSTLEN + 1];
    char canonical[BEACON_URL_MAX];
    apr_pool_t *tick;
    sender_t s;
    opts_t o;
    int optch, i;
    apr_time_t next;

    memset(&s, 0, sizeof(s));
    opts_init(&o, p, cmd, argc, argv);
    while ((optch = opts_next(&o, &arg)) != 0) {
        switch (optch) {
        case OPT_TO:
            APR_ARRAY_PUSH(specs, const char *) = arg;
            break;
        case OPT_URL:
            set_once(&url, arg, "url");
            break;
        case OPT_HOST:
            set_once(&host, arg, "host");
            break;
        case OPT_INTERVAL:
            set_once(&interval_arg, arg, "interval");
            break;
        case OPT_ONCE:
            s.once = 1;
            break;
        case OPT_VERBOSE:
            s.verbose = 1;
            break;
        case OPT_SECRET_FILE:
            set_once(&secret_file, arg, "secret-file");
            break;
        }
    }
    if (specs->nelts == 0) {
        fail(EXIT_USAGE, "--to HOST:PORT is required (see beaconctl send "
             "--help)");
    }
    if (s.once && interval_arg) {
        fail(EXIT_USAGE, "--once and --interval exclude each other");
    }
    if (interval_arg && (!parse_duration(interval_arg, &interval) ||
                         interval < MIN_INTERVAL)) {
        fail(EXIT_USAGE, "--interval '%s': expected seconds of at least "
             "0.001, e.g. 5, 0.5 or 500ms", interval_arg);
    }
    s.ntargets = specs->nelts;
    s.targets = apr_pcalloc(p, sizeof(target_t) * (apr_size_t)s.ntargets);
    for (i = 0; i < s.ntargets; i++) {
        target_t *t = &s.targets[i];
        const char *err;

        t->spec = APR_ARRAY_IDX(specs, i, const char *);
        err = parse_host_port(p, t->spec, 0, &t->host, &t->port);
        if (err) {
            fail(EXIT_USAGE, "--to '%s': %s", t->spec, err);
        }
    }
    if (url) {
        canonical_url(url, canonical);
        s.a.url = canonical;
    }
    if (host) {
        check_field("host", host);
        s.a.host = host;
    }
    else if (apr_gethostname(hostname, sizeof(hostname), p) == APR_SUCCESS &&
             beacon_value_is_valid(hostname)) {
        s.a.host = hostname;
    }
    /* else: host= is informational; leave it out */
    s.a.pid = (apr_int64_t)getpid();
    load_key(p, secret_file, &s.key);
    {
        /* the longest datagram this run can send must fit */
        char trial[BEACON_MAX_DATAGRAM + 1];

        s.a.seq = APR_INT64_MAX;
        s.a.ts = APR_INT64_C(999999999999999999);
        s.a.state = "leaving";
        if (beacon_format(trial, sizeof(trial), &s.a, &s.key) < 0) {
            fail(EXIT_USAGE, "--url and --host make a datagram longer than "
                 "%d bytes", BEACON_MAX_DATAGRAM);
        }
        s.a.seq = 0;
    }

    if (url == NULL) {
        warn("no --url: sending heartbeats only, which no proxy adds to a "
             "balancer");
    }
    if (apr_pool_create(&tick, p) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    if (s.once) {
        /* no leaving datagram here: a signal simply ends the program */
        int sent = announce(&s, NULL, tick);

        wipe(&s.key, sizeof(s.key));
        return sent > 0 ? 0 : EXIT_RUNTIME;
    }
    catch_stop_signals(p);
    next = apr_time_now();
    for (;;) {
        apr_time_t now;

        announce(&s, NULL, tick);
        /* a fixed schedule, not interval after each send: no drift */
        next += interval;
        now = apr_time_now();
        if (next <= now || next - now > interval) {
            next = now + interval; /* late, or the clock stepped */
        }
        if (wait_until(p, next, interval)) {
            break;
        }
    }
    announce(&s, "leaving", tick);
    wipe(&s.key, sizeof(s.key));
    return 0;
}

/* ------------------------------------------------------------------ */
/* listen                                                              */

typedef struct {
    beacon_table_t *table;
    beacon_key_t keys[BEACON_MAX_KEYS]; /* any of them verifies */
    unsigned nkeys;
    apr_interval_time_t max_skew;
    apr_pool_t *p;
} listener_t;

static void format_peer(const apr_sockaddr_t *sa, char *out, apr_size_t size)
{
    char ip[64] = "?";

    apr_sockaddr_ip_getbuf(ip, sizeof(ip), (apr_sockaddr_t *)sa);
    if (strchr(ip, ':')) {
        apr_snprintf(out, size, "[%s]:%u", ip, (unsigned)sa->port);
    }
    else {
        apr_snprintf(out, size, "%s:%u", ip, (unsigned)sa->port);
    }
}

static void put_span(const char *key, const beacon_span_t *v)
{
    if (v->ptr) {
        printf(" %s=", key);
        put_escaped(v->ptr, v->len, BEACON_MAX_DATAGRAM);
    }
}

static const char *action_name(beacon_action_t action, int leaving)
{
    switch (action) {
    case BEACON_ACT_ADD:
        return "add";
    case BEACON_ACT_ENABLE:
        return "enable";
    case BEACON_ACT_DISABLE:
        return "disable";
    case BEACON_ACT_WAIT:
        return "wait";
    case BEACON_ACT_NOT_MANAGED:
        return "not-managed";
    default:
        return leaving ? "ignore" : "renew";
    }
}

/* The detail after "dropped <reason> from <peer>". */
static void put_drop_detail(listener_t *l, beacon_reason_t reason,
                            const beacon_event_t *ev, const char *buf,
                            apr_size_t len, apr_time_t now)
{
    switch (reason) {
    case BEACON_DROP_OVERSIZE:
        printf(": more than %d bytes", BEACON_MAX_DATAGRAM);
        break;
    case BEACON_DROP_MAC_MISMATCH:
        fputs(l->nkeys > 1 ? " (not signed with any of these secrets?): \""
                           : " (not signed with this secret?): \"", stdout);
        put_escaped(buf, len, SHOWN_BYTES);
        putchar('"');
        break;
    case BEACON_DROP_STALE_TS: {
        apr_int64_t skew = ev->dg.ts - (apr_int64_t)now;

        printf(": ts=%" APR_INT64_T_FMT " is %.3f s %s this clock (max skew "
               "%s)", ev->dg.ts,
               (double)(skew < 0 ? -skew : skew) / APR_USEC_PER_SEC,
               skew < 0 ? "behind" : "ahead of",
               format_duration(l->p, l->max_skew));
        break;
    }
    case BEACON_DROP_UNACCEPTABLE_URL: {
        char tmp[BEACON_URL_MAX];

        fputs(": url=", stdout);
        put_escaped(ev->dg.url.ptr, ev->dg.url.len, SHOWN_BYTES);
        printf(" (%s)", beacon_url_canonicalize(ev->dg.url.ptr, ev->dg.url.len,
                                                tmp, sizeof(tmp)));
        break;
    }
    case BEACON_DROP_REPLAYED_TS: {
        beacon_record_t *rec = beacon_table_find(l->table, ev->url);

        printf(": url=%s ts=%" APR_INT64_T_FMT, ev->url, ev->dg.ts);
        if (rec) {
            printf(", last accepted ts=%" APR_INT64_T_FMT, rec->high_ts);
        }
        break;
    }
    case BEACON_DROP_TABLE_FULL:
    case BEACON_DROP_NOT_MANAGED:
        printf(": url=%s", ev->url);
        break;
    default: /* embedded NUL, bad frame, duplicate field, bad ts */
        fputs(": \"", stdout);
        put_escaped(buf, len, SHOWN_BYTES);
        putchar('"');
        break;
    }
}

/* One line for one datagram: what a receiver would decide. */
static void report(listener_t *l, const char *buf, apr_size_t len,
                   const apr_sockaddr_t *from)
{
    apr_time_t now = apr_time_now();
    beacon_event_t ev;
    beacon_reason_t reason;
    char peer[128];

    format_peer(from, peer, sizeof(peer));
    reason = beacon_receive_any(l->table, l->keys, l->nkeys, buf, len, now,
                                &ev);
    if (reason == BEACON_OK) {
        int leaving = ev.dg.state.ptr && ev.dg.state.len == 7 &&
                      memcmp(ev.dg.state.ptr, "leaving", 7) == 0;

        if (ev.rec) {
            printf("accepted url=%s", ev.url);
        }
        else {
            fputs("accepted heartbeat", stdout);
        }
        put_span("host", &ev.dg.host);
        put_span("pid", &ev.dg.pid);
        put_span("seq", &ev.dg.seq);
        printf(" ts=%" APR_INT64_T_FMT, ev.dg.ts);
        put_span("state", &ev.dg.state);
        printf(" from %s", peer);
        if (ev.rec) {
            printf(" -> %s", action_name(ev.action, leaving));
            if (ev.action == BEACON_ACT_ADD) {
                beacon_table_added(ev.rec); /* as if the add succeeded */
            }
        }
    }
    else {
        printf("dropped %s from %s", beacon_reason_name(reason), peer);
        put_drop_detail(l, reason, &ev, buf, len, now);
    }
    putchar('\n');
    flush_stdout();
}

static int run_listen(apr_pool_t *p, const command_t *cmd, int argc,
                      const char *const *argv)
{
    const char *bind_arg = NULL, *skew_arg = NULL, *count_arg = NULL;
    const char *secret_files[BEACON_MAX_KEYS] = {NULL}, *arg, *err;
    char buf[BEACON_MAX_DATAGRAM + 1]; /* one more: oversize is detected */
    apr_int64_t count = 0, seen = 0;
    apr_sockaddr_t *sa, *local, *from;
    apr_socket_t *sock;
    apr_pollfd_t pfds[2];
    apr_status_t rv;
    char ebuf[120], where[128];
    char *host;
    apr_port_t port;
    listener_t l;
    opts_t o;
    int optch;
    unsigned i;

    memset(&l, 0, sizeof(l));
    l.p = p;
    l.max_skew = DEFAULT_MAX_SKEW;
    opts_init(&o, p, cmd, argc, argv);
    while ((optch = opts_next(&o, &arg)) != 0) {
        switch (optch) {
        case OPT_BIND:
            set_once(&bind_arg, arg, "bind");
            break;
        case OPT_MAX_SKEW:
            set_once(&skew_arg, arg, "max-skew");
            break;
        case OPT_COUNT:
            set_once(&count_arg, arg, "count");
            break;
        case OPT_SECRET_FILE:
            /* one per secret during a rotation, as ProxyBeaconSecret */
            if (l.nkeys == BEACON_MAX_KEYS) {
                fail(EXIT_USAGE, "--secret-file may be given at most %d "
                     "times", BEACON_MAX_KEYS);
            }
            secret_files[l.nkeys++] = arg;
            break;
        }
    }
    if (bind_arg == NULL) {
        fail(EXIT_USAGE, "--bind ADDR:PORT is required (see beaconctl listen "
             "--help)");
    }
    if ((err = parse_host_port(p, bind_arg, 1, &host, &port)) != NULL) {
        fail(EXIT_USAGE, "--bind '%s': %s", bind_arg, err);
    }
    if (skew_arg && (!parse_duration(skew_arg, &l.max_skew) ||
                     l.max_skew <= 0)) {
        fail(EXIT_USAGE, "--max-skew '%s': expected positive seconds, e.g. "
             "30, 2.5 or 500ms", skew_arg);
    }
    if (count_arg && (!parse_uint(count_arg, &count) || count == 0)) {
        fail(EXIT_USAGE, "--count '%s': expected a positive number",
             count_arg);
    }
    if (l.nkeys == 0) {
        l.nkeys = 1; /* secret_files[0] NULL: the key from the environment */
    }
    for (i = 0; i < l.nkeys; i++) {
        load_key(p, secret_files[i], &l.keys[i]);
    }
    l.table = apr_palloc(p, sizeof(*l.table));
    beacon_table_init(l.table, 0, l.max_skew); /* 0: no lease, the default */

    rv = apr_sockaddr_info_get(&sa, host, APR_UNSPEC, port, 0, p);
    if (rv == APR_SUCCESS) {
        rv = apr_socket_create(&sock, sa->family, SOCK_DGRAM, APR_PROTO_UDP, p);
    }
    if (rv != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "--bind %s: %s", bind_arg,
             errstr(rv, ebuf, sizeof(ebuf)));
    }
#if APR_HAVE_IPV6
    if (host == NULL && sa->family == APR_INET6) {
        (void)apr_socket_opt_set(sock, APR_IPV6_V6ONLY, 0); /* IPv4 too */
    }
#endif
    if ((rv = apr_socket_bind(sock, sa)) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "cannot bind %s: %s", bind_arg,
             errstr(rv, ebuf, sizeof(ebuf)));
    }
    apr_socket_opt_set(sock, APR_SO_NONBLOCK, 1);
    apr_socket_timeout_set(sock, 0);
    if (apr_socket_addr_get(&local, APR_LOCAL, sock) == APR_SUCCESS) {
        format_peer(local, where, sizeof(where));
    }
    else {
        apr_cpystrn(where, bind_arg, sizeof(where));
    }
    catch_stop_signals(p);
    printf("listening on %s (max skew %s)\n", where,
           format_duration(p, l.max_skew));
    flush_stdout();

    from = apr_pcalloc(p, sizeof(*from));
    memset(pfds, 0, sizeof(pfds));
    pfds[0].p = p;
    pfds[0].desc_type = APR_POLL_SOCKET;
    pfds[0].reqevents = APR_POLLIN;
    pfds[0].desc.s = sock;
    pfds[1] = stop_pollfd(p);
    while (!stop_signal && (count == 0 || seen < count)) {
        apr_int32_t n;

        rv = apr_poll(pfds, 2, &n, -1);
        if (rv != APR_SUCCESS && !APR_STATUS_IS_EINTR(rv) &&
            !APR_STATUS_IS_TIMEUP(rv)) {
            fail(EXIT_RUNTIME, "poll: %s", errstr(rv, ebuf, sizeof(ebuf)));
        }
        /* drain what is queued; a signal or --count ends it between lines */
        while (!stop_signal && (count == 0 || seen < count)) {
            apr_size_t len = sizeof(buf);

            rv = apr_socket_recvfrom(from, sock, 0, buf, &len);
            if (APR_STATUS_IS_EAGAIN(rv) || APR_STATUS_IS_EINTR(rv)) {
                break;
            }
            if (rv != APR_SUCCESS) {
                /* e.g. an ICMP error on some systems: not fatal */
                warn("receive: %s", errstr(rv, ebuf, sizeof(ebuf)));
                break;
            }
            report(&l, buf, len, from);
            seen++;
        }
    }
    apr_socket_close(sock);
    wipe(l.keys, sizeof(l.keys));
    return 0;
}

/* ------------------------------------------------------------------ */
/* sign                                                                */

static apr_int64_t number_option(const char *name, const char *arg)
{
    apr_int64_t n;

    if (!parse_uint(arg, &n)) {
        fail(EXIT_USAGE, "--%s '%s': expected a decimal number of 1 to 18 "
             "digits", name, arg);
    }
    return n;
}

static int run_sign(apr_pool_t *p, const command_t *cmd, int argc,
                    const char *const *argv)
{
    const char *url = NULL, *host = NULL, *pid = NULL, *seq = NULL;
    const char *ts = NULL, *state = NULL, *secret_file = NULL, *arg;
    char buf[BEACON_MAX_DATAGRAM + 1];
    char canonical[BEACON_URL_MAX];
    beacon_announcement_t a;
    beacon_key_t key;
    opts_t o;
    int optch, len;

    opts_init(&o, p, cmd, argc, argv);
    while ((optch = opts_next(&o, &arg)) != 0) {
        switch (optch) {
        case OPT_URL:
            set_once(&url, arg, "url");
            break;
        case OPT_HOST:
            set_once(&host, arg, "host");
            break;
        case OPT_PID:
            set_once(&pid, arg, "pid");
            break;
        case OPT_SEQ:
            set_once(&seq, arg, "seq");
            break;
        case OPT_TS:
            set_once(&ts, arg, "ts");
            break;
        case OPT_STATE:
            set_once(&state, arg, "state");
            break;
        case OPT_SECRET_FILE:
            set_once(&secret_file, arg, "secret-file");
            break;
        }
    }
    if (ts == NULL) {
        fail(EXIT_USAGE, "--ts USEC is required (see beaconctl sign --help)");
    }
    memset(&a, 0, sizeof(a));
    a.ts = strcmp(ts, "now") == 0 ? (apr_int64_t)apr_time_now()
                                  : number_option("ts", ts);
    a.pid = pid ? number_option("pid", pid) : -1;
    a.seq = seq ? number_option("seq", seq) : -1;
    if (url) {
        canonical_url(url, canonical);
        a.url = canonical;
    }
    if (host) {
        check_field("host", host);
        a.host = host;
    }
    if (state) {
        check_field("state", state);
        a.state = state;
    }
    load_key(p, secret_file, &key);
    len = beacon_format(buf, sizeof(buf), &a, &key);
    wipe(&key, sizeof(key));
    if (len < 0) {
        fail(EXIT_USAGE, "the datagram would be longer than %d bytes",
             BEACON_MAX_DATAGRAM);
    }
    printf("%s\n", buf);
    flush_stdout();
    return 0;
}

/* ------------------------------------------------------------------ */
/* keygen                                                              */

static int run_keygen(apr_pool_t *p, const command_t *cmd, int argc,
                      const char *const *argv)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char bytes[BEACON_KEY_LEN];
    char text[4 + 2 * BEACON_KEY_LEN + 1];
    apr_status_t rv;
    char ebuf[120];
    const char *arg;
    opts_t o;
    int i;

    opts_init(&o, p, cmd, argc, argv);
    while (opts_next(&o, &arg) != 0) {
        /* --help only; it exits */
    }
    rv = apr_generate_random_bytes(bytes, sizeof(bytes));
    if (rv != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "no random bytes from the operating system: %s",
             errstr(rv, ebuf, sizeof(ebuf)));
    }
    memcpy(text, "hex:", 4);
    for (i = 0; i < BEACON_KEY_LEN; i++) {
        text[4 + 2 * i] = hex[bytes[i] >> 4];
        text[4 + 2 * i + 1] = hex[bytes[i] & 0xf];
    }
    text[sizeof(text) - 1] = '\0';
    printf("%s\n", text);
    wipe(bytes, sizeof(bytes));
    wipe(text, sizeof(text));
    flush_stdout();
    return 0;
}

/* ------------------------------------------------------------------ */

int main(int argc, const char *const *argv)
{
    const command_t *cmd;
    apr_pool_t *p;

    if (apr_app_initialize(&argc, &argv, NULL) != APR_SUCCESS) {
        fputs("beaconctl: cannot initialize APR\n", stderr);
        return EXIT_RUNTIME;
    }
    atexit(apr_terminate);
    if (apr_pool_create(&p, NULL) != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "out of memory");
    }
    if (argc < 2) {
        fail(EXIT_USAGE, "no command given: send, listen, sign or keygen "
             "(see beaconctl --help)");
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            for (cmd = commands; cmd->name; cmd++) {
                if (strcmp(cmd->name, argv[2]) == 0) {
                    print_command_help(cmd);
                    flush_stdout();
                    return 0;
                }
            }
            fail(EXIT_USAGE, "unknown command '%s' (see beaconctl --help)",
                 argv[2]);
        }
        print_help();
        flush_stdout();
        return 0;
    }
    for (cmd = commands; cmd->name; cmd++) {
        if (strcmp(cmd->name, argv[1]) == 0) {
            cmd_name = cmd->name;
            return cmd->run(p, cmd, argc - 1, argv + 1);
        }
    }
    fail(EXIT_USAGE, "unknown command '%s' (see beaconctl --help)", argv[1]);
}
