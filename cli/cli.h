/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * What beaconctl's files share: errors and output, the option tables and
 * their parser, durations, the secret, and the stop signals. Protocol
 * rules are not here but in libbeacon (beacon.h): this tool parses
 * options, moves datagrams and prints, so that it can never decide
 * otherwise than the module.
 */
#ifndef BEACONCTL_CLI_H
#define BEACONCTL_CLI_H

#include <apr_getopt.h>
#include <apr_poll.h>
#include <apr_pools.h>
#include <apr_time.h>

#include "beacon.h"

/* Exit status: 0 success, 1 runtime failure, 2 usage or configuration. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

#define SECRET_ENV "BEACON_SECRET"

/* ------------------------------------------------------------------ */
/* Errors and output (cli_common.c)                                    */

/* The running command, for messages; NULL before one is chosen. */
extern const char *cmd_name;

/* One line on stderr, "beaconctl: [command: ]message", then exit(status). */
void fail(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* A warning line that does not end the program. */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

const char *errstr(apr_status_t rv, char *buf, apr_size_t size);

/* stdout is where results go: a failed write is a failed command. */
void flush_stdout(void);

/*
 * Writes peer bytes so that the line stays one printable line: bytes
 * outside 0x20-0x7e, the backslash and the double quote become \xNN.
 * At most max bytes are shown; "..." marks the cut.
 */
void put_escaped(const char *p, apr_size_t len, apr_size_t max);

/* ------------------------------------------------------------------ */
/* Values (cli_common.c)                                               */

/*
 * A duration "5", "0.5", "2.5s", "500ms" into microseconds; 0 if s is
 * anything else.
 */
int parse_duration(const char *s, apr_interval_time_t *out);

/* "1.5 s" style, for messages. */
const char *format_duration(apr_pool_t *p, apr_interval_time_t t);

/* A field value given on the command line (--host): fails unless the
 * wire can carry it. */
void check_field(const char *option, const char *value);

/* Checks --url and writes its canonical form into out (BEACON_URL_MAX);
 * fails with the problem otherwise. */
void canonical_url(const char *url, char *out);

/* --service: fails unless value is a service name (the svc= rule). */
void check_service(const char *value);

/* --allow LIST: adds LIST's ","-separated entries to reach, by libbeacon's
 * rule (beacon_reach_add_list, ProxyBeaconAllow's); a bad entry is a
 * usage error naming it and the problem, and adds none of LIST. */
void add_allow_list(apr_pool_t *p, beacon_reach_t *reach, const char *list);

/*
 * --service, --route and --lbfactor of send and sign, each NULL when not
 * given: checked by the rules of svc=, route= and lbfactor= (a value a
 * receiver would drop fails), then set in a as given.
 */
void set_v11_fields(beacon_announcement_t *a, const char *service,
                    const char *route, const char *lbfactor);

/* --ctx of send, drain and sign, NULL when not given: checked by the
 * ctx= rule (1 to 16 paths, comma-separated), then set in a. */
void set_ctx_field(beacon_announcement_t *a, const char *ctx);

/* --state: fails unless the wire defines the value; leaving only where
 * leaving_ok (sign: send and drain say leaving themselves). */
void check_state(const char *state, int leaving_ok);

/*
 * Takes BEACON_SECRET out of the environment, first thing in main(): a
 * private copy is kept for load_key(), the variable is removed (so no
 * child could inherit it) and its bytes are overwritten where the
 * environment holds them (so /proc/PID/environ, which shows that memory,
 * no longer does).
 */
void take_secret_env(apr_pool_t *p);

/* Where a key comes from: --secret-file FILE or --secret-exec COMMAND,
 * or a master from --master-file FILE or --master-exec COMMAND. */
typedef struct {
    const char *text;  /* the FILE or the COMMAND; NULL: BEACON_SECRET */
    int exec;
    int master;        /* --master-file or --master-exec */
} secret_arg_t;

/*
 * The key from arg, or from BEACON_SECRET (as take_secret_env() took it,
 * read as ProxyBeaconSecret reads its value: the secret, file: or exec:)
 * when arg is NULL or empty. Every problem is a configuration error; no
 * message shows the secret. A master in BEACON_SECRET (derive:) is one:
 * a master signs nothing.
 */
void load_key(apr_pool_t *p, const secret_arg_t *arg, beacon_key_t *key);

/* The same for a master (derive-key): hex: only, a passphrase is a
 * configuration error (libbeacon's BEACON_KEY_USE_MASTER). BEACON_SECRET
 * may say derive: before it, as ProxyBeaconSecret does, or not. */
void load_master(apr_pool_t *p, const secret_arg_t *arg, beacon_key_t *key);

/* A key or a master (listen): a master from --master-file or
 * --master-exec, or from BEACON_SECRET with derive: (libbeacon's
 * beacon_secret_use). Returns 1 for a master, else 0. */
int load_key_or_master(apr_pool_t *p, const secret_arg_t *arg,
                       beacon_key_t *key);

/* --secret-file, --secret-exec, --master-file or --master-exec, as an
 * option loop meets it, into *arg; a second one is a usage error. */
void take_secret_arg(secret_arg_t *arg, int optch, const char *value);

/* ------------------------------------------------------------------ */
/* Options and help (cli_options.c)                                    */

enum {
    OPT_HELP = 'h',
    OPT_TO = 256, /* long-only options: above every character */
    OPT_URL,
    OPT_HOST,
    OPT_INTERVAL,
    OPT_ONCE,
    OPT_SECRET_FILE,
    OPT_SECRET_EXEC,
    OPT_VERBOSE,
    OPT_BIND,
    OPT_MAX_SKEW,
    OPT_COUNT,
    OPT_PID,
    OPT_SEQ,
    OPT_TS,
    OPT_STATE,
    OPT_SERVICE,
    OPT_ROUTE,
    OPT_LBFACTOR,
    OPT_CTX,
    OPT_FOR,
    OPT_UNTIL_COMMAND,
    OPT_ALLOW,
    OPT_LBFACTOR_COMMAND,
    OPT_LBFACTOR_FROM,
    OPT_MASTER_FILE,
    OPT_MASTER_EXEC
};

/* One option: the --help text is generated from the same table. */
typedef struct {
    const char *name;
    int optch;
    const char *arg;  /* value placeholder for --help; NULL: a flag */
    const char *help; /* lines separated by '\n' */
    /* An option given at most once, whose value opts_next() stores itself:
     * ONCE(args type, field) of the const char * it fills; 0 for an
     * option the command handles. */
    apr_size_t once;
} option_t;

#define ONCE(type, field) (APR_OFFSETOF(type, field) + 1)

typedef struct command command_t;
struct command {
    const char *name;
    const char *synopsis; /* after "beaconctl NAME "; NULL: none */
    const char *about;    /* lines separated by '\n' */
    const option_t *options;
    int (*run)(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv);
};

/* Options more than one command takes. Help lines stay within 52
 * columns: 26 + 52 fit a terminal of 80. */
#define SECRET_FILE_OPTION(once)                                              \
    {"secret-file", OPT_SECRET_FILE, "FILE",                                  \
     "read the secret from the first line of FILE (a\n"                      \
     "trailing newline is ignored); without this option\n"                   \
     "or --secret-exec, from the environment variable\n"                     \
     SECRET_ENV " (file: and exec: as ProxyBeaconSecret).\n"                 \
     "There is no option for the secret itself.", once}
#define SECRET_EXEC_OPTION(once)                                              \
    {"secret-exec", OPT_SECRET_EXEC, "COMMAND",                               \
     "run COMMAND, \"/path [args]\" (no shell, 10 s at\n"                   \
     "most), and take the secret from the first line it\n"                  \
     "prints, as ProxyBeaconSecret exec: does", once}
#define ROUTE_OPTION(once)                                                    \
    {"route", OPT_ROUTE, "ROUTE",                                             \
     "the member's route for sticky sessions (route=),\n"                    \
     "as BalancerMember route= sets it: 1 to 63 of A-Z\n"                    \
     "a-z 0-9 . _ -", once}
#define LBFACTOR_OPTION(once)                                                 \
    {"lbfactor", OPT_LBFACTOR, "N",                                           \
     "the member's load factor (lbfactor=), as\n"                            \
     "BalancerMember loadfactor= sets it: 1 to 100 with\n"                   \
     "at most two decimals (2.5)", once}
#define CTX_OPTION(once)                                                      \
    {"ctx", OPT_CTX, "LIST",                                                  \
     "the request paths this member serves (ctx=), e.g.\n"                  \
     "/shop,/cart: 1 to 16 paths of segments of A-Z a-z\n"                  \
     "0-9 . _ ~ -, no trailing /, each at most 80 bytes", once}
#define HELP_OPTION {"help", OPT_HELP, NULL, "print this help and exit", 0}
#define OPTIONS_END {NULL, 0, NULL, NULL, 0}

/* Each command's options, in --help order (cli_<command>.c). */
extern const option_t send_options[];
extern const option_t listen_options[];
extern const option_t sign_options[];
extern const option_t drain_options[];
extern const option_t keygen_options[];
extern const option_t derive_options[];

/* "usage: beaconctl NAME ...", the description and the options. */
void print_command_help(const command_t *cmd);

typedef struct {
    apr_getopt_t *os;
    const apr_getopt_option_t *table;
    const command_t *cmd;
    int argc;
} opts_t;

/* argv[0] is the command's name, argv[1..] its options. */
void opts_init(opts_t *o, apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv);

/* The next option's code with *arg set, or 0 when all are read. Options
 * with a ONCE slot are stored into args (a repeat is an error) and not
 * returned. --help prints the command's help and exits; a stray argument
 * is an error. */
int opts_next(opts_t *o, void *args, const char **arg);

/* ------------------------------------------------------------------ */
/* Stop signals (cli_signals.c)                                        */

/* From now on SIGTERM and SIGINT end waits instead of the program. */
void catch_stop_signals(apr_pool_t *p);

/* Nonzero once SIGTERM or SIGINT arrived (after catch_stop_signals). */
int stop_requested(void);

/* A descriptor that polls readable once a stop signal arrived, to wait
 * for it and for a socket at once. */
apr_pollfd_t stop_pollfd(apr_pool_t *p);

/* Blocks SIGTERM and SIGINT in the calling thread, and unblocks them: a
 * thread created in between inherits the mask, so that the stop signals
 * are handled by the thread that waits for them (in wait_until). */
void block_stop_signals(void);
void unblock_stop_signals(void);

/* Ends the current or the next wait_until at once with WAIT_WOKEN: for
 * another thread with news for the waiting one. Thread-safe. */
void wake_waiter(void);

typedef enum {
    WAIT_DEADLINE = 0, /* the deadline came */
    WAIT_STOP,         /* a stop signal arrived */
    WAIT_WOKEN         /* wake_waiter was called; the deadline stands */
} wait_t;

/*
 * Waits until deadline, a stop signal or a wake_waiter, and says which
 * (a stop wins). A wait longer than max means the wall clock stepped
 * back: it ends at once.
 */
wait_t wait_until(apr_pool_t *p, apr_time_t deadline,
                  apr_interval_time_t max);

/* ------------------------------------------------------------------ */
/* send's fan-out: every address of every --to (cli_fanout.c)          */

typedef struct fanout_ctx fanout_ctx_t;

/* Every --to (const char * each) as one fan-out; a bad one is a usage
 * error. Its names are not looked up yet. */
fanout_ctx_t *fanout_make(const apr_array_header_t *specs,
                          apr_interval_time_t interval, int once,
                          int verbose);

/* Every name looked up once, here: before the first datagram, when no
 * address of a name is known yet. */
void fanout_resolve_all(fanout_ctx_t *fc, apr_pool_t *scratch);

/* A thread per name that looks it up again every interval, and calls
 * wake_waiter() when a lookup finds a new address. */
void fanout_start_lookups(fanout_ctx_t *fc);

/* Sends buf to every address known; returns how many took it. last: the
 * leaving datagram, after which no lookup changes the set. */
unsigned fanout_deliver(fanout_ctx_t *fc, const char *buf, apr_size_t len,
                        int last);

/* The next time of a fixed schedule (no drift from the time each round
 * takes), or interval from now when late or when the clock stepped. */
apr_time_t next_due(apr_time_t due, apr_interval_time_t interval);

/* ------------------------------------------------------------------ */
/* A sender: what send and drain share (cli_send.c)                    */

/* send's and drain's options as given, before any is checked. drain's
 * own args start with these, so that one option table fits both. */
typedef struct {
    apr_array_header_t *specs; /* --to, const char * each */
    const char *url, *host, *service, *route, *lbfactor, *interval, *ctx;
    const char *state;         /* send only */
    const char *lbfactor_command, *lbfactor_from; /* send only */
    secret_arg_t secret;
    int once, verbose;         /* once: send only */
} send_args_t;

/* The options send and drain share, in --help order. */
#define SENDER_OPTIONS                                                        \
    {"to", OPT_TO, "HOST:PORT",                                               \
     "a proxy's ProxyBeaconListen address; repeat it for\n"                  \
     "several proxies. A leading scheme (udp://, tcp://)\n"                  \
     "is ignored; IPv6 in brackets, [::1]:5555. Every\n"                     \
     "address a name resolves to (A and AAAA) gets each\n"                   \
     "datagram; names are looked up again every\n"                           \
     "interval. A literal address is used as is.", 0},                       \
    {"url", OPT_URL, "URL",                                                   \
     "this backend's origin, scheme://host[:port], as\n"                     \
     "the proxy should reach it; sent in canonical form.\n"                  \
     "Without it only heartbeats are sent, which a proxy\n"                  \
     "logs but never adds to a balancer.", ONCE(send_args_t, url)},          \
    {"host", OPT_HOST, "NAME",                                                \
     "the host= field (informational); default: this\n"                      \
     "machine's host name", ONCE(send_args_t, host)},                        \
    {"service", OPT_SERVICE, "NAME",                                          \
     "the service this backend belongs to (svc=), the\n"                     \
     "proxies' ProxyBeaconService: 1 to 63 of A-Z a-z\n"                     \
     "0-9 . _ -. A proxy of another service drops it",                       \
     ONCE(send_args_t, service)},                                            \
    CTX_OPTION(ONCE(send_args_t, ctx)),                                       \
    ROUTE_OPTION(ONCE(send_args_t, route)),                                   \
    LBFACTOR_OPTION(ONCE(send_args_t, lbfactor)),                             \
    {"interval", OPT_INTERVAL, "SECONDS",                                     \
     "time between announcements, default 5; fractions\n"                    \
     "(0.5) and the units s and ms (500ms) are accepted",                    \
     ONCE(send_args_t, interval)}

/* The options after the command's own, in --help order. */
#define SENDER_OPTIONS_TAIL                                                   \
    {"verbose", OPT_VERBOSE, NULL,                                            \
     "print each datagram sent, and to where, on\n"                          \
     "standard output; and on standard error the\n"                          \
     "addresses of a name whenever they change", 0},                         \
    SECRET_FILE_OPTION(0),                                                    \
    SECRET_EXEC_OPTION(0),                                                    \
    HELP_OPTION,                                                              \
    OPTIONS_END

typedef struct {
    fanout_ctx_t *fc;
    apr_interval_time_t interval;
    int once;
    beacon_key_t key;
    beacon_announcement_t a;  /* url, host and pid; seq, ts stamped */
    beacon_sequence_t seq;    /* one for all: each address gets the same
                               * datagram, so each sees seq and ts rise */
    char url[BEACON_URL_MAX]; /* a.url points here */
    char hostname[APRMAXHOSTLEN + 1];
} sender_t;

/* Reads the options into args, which the caller zeroed (all of its own
 * args, which start with a send_args_t). Those opts_next does not store
 * (--to, --once, --verbose, the secret) are taken here. */
void parse_sender_options(apr_pool_t *p, const command_t *cmd, int argc,
                          const char *const *argv, send_args_t *args);

/* Checks every option and makes s (zeroed by the caller) ready to send:
 * the schedule, the fields every datagram says, the key. */
void setup_sender(apr_pool_t *p, const send_args_t *args, sender_t *s);

/* Signs one announcement with state (NULL or a BEACON_STATE_*) and sends
 * it to every address; a leaving one is the last. Returns how many it
 * reached. */
unsigned sender_announce(sender_t *s, const char *state);

/* state=leaving, then its repeats within the first second, each at its
 * time (beacon_leaving_repeat_wait): the caller's exit waits for them. */
void sender_say_leaving(sender_t *s);

/* Catches the stop signals, looks every name up once, and starts the
 * lookup threads: before the first announcement of a loop. */
void sender_start(apr_pool_t *p, sender_t *s, apr_pool_t *scratch);

/* ------------------------------------------------------------------ */
/* send's lbfactor from the backend's load (cli_load.c)                */

typedef struct load_source load_source_t;

/*
 * --lbfactor-command CMD or --lbfactor-from loadavg, of which args gives
 * one at most with no --lbfactor (else a usage error); NULL when neither
 * is given.
 */
load_source_t *load_source_make(apr_pool_t *p, const send_args_t *args);

/*
 * Asks the source once (runs the command, for half of interval at most:
 * 0.1 to 2 s; reads the load average) and sets a->lbfactor to its last
 * good value, checked by the lbfactor= rule; before any, a->lbfactor
 * stays NULL. A failure is reported once, until the source succeeds
 * again, which is reported too.
 */
void load_source_update(load_source_t *ls, beacon_announcement_t *a,
                        apr_interval_time_t interval);

/* ------------------------------------------------------------------ */
/* Commands: each returns the exit status                              */

int run_send(apr_pool_t *p, const command_t *cmd, int argc,
             const char *const *argv);
int run_listen(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv);
int run_sign(apr_pool_t *p, const command_t *cmd, int argc,
             const char *const *argv);
int run_keygen(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv);
int run_drain(apr_pool_t *p, const command_t *cmd, int argc,
              const char *const *argv);
int run_derive(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv);

#endif /* BEACONCTL_CLI_H */
