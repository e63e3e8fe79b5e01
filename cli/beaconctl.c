/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl: the command-line sender and diagnostic tool of mod_proxy_beacon.
 *
 *   send     announce a backend that is not httpd, once or every interval
 *   drain    announce draining for a while, then leaving
 *   listen   print what a receiver would decide for each datagram
 *   sign     print one signed datagram (scripts, test vectors)
 *   keygen   print a new random secret
 *   derive-key  print a member's key, derived from the master
 *
 * Protocol decisions are libbeacon's (include/beacon.h); this tool parses
 * options, moves datagrams and prints. The secret is never taken from the
 * command line, where every local user could read it with ps: it comes
 * from --secret-file or the environment variable BEACON_SECRET.
 *
 * Exit status: 0 success, 1 runtime failure, 2 usage or configuration
 * error. Every error is one line on stderr, prefixed "beaconctl: ".
 *
 * This file holds main(), the command table and the global --help; each
 * command is in cli_<command>.c, what they share in cli.h.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <apr_general.h>

#include "cli.h"

/* libbeacon's number, in the help's words */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define KEEP_ROUNDS STRINGIFY(BEACON_FANOUT_KEEP_ROUNDS)

static const command_t commands[] = {
    {"send",
     "--to HOST:PORT [--to HOST:PORT ...] [--url URL]\n"
     "[--host NAME] [--service NAME] [--ctx LIST]\n"
     "[--route ROUTE] [--lbfactor N | --lbfactor-from loadavg\n"
     " | --lbfactor-command CMD]\n"
     "[--state draining|standby] [--verbose]\n"
     "[--interval SECONDS | --once]\n"
     "[--secret-file FILE | --secret-exec COMMAND]",
     "Announces a backend that is not httpd to one or more proxies: at\n"
     "once, then every interval, in the foreground. A name stands for\n"
     "every address it resolves to (a tier of proxies), each of which\n"
     "gets every datagram; names are looked up again every interval, and\n"
     "a new address hears as soon as a lookup finds it. A name that stops\n"
     "resolving keeps its last addresses for " KEEP_ROUNDS " intervals.\n"
     "On SIGTERM or SIGINT it sends state=leaving to every address\n"
     "known (the proxy disables the member), 3 times more within the\n"
     "first second in case one is lost, and exits 0. A failed lookup\n"
     "or send costs one line on stderr per name and minute at most, and\n"
     "never ends the program. Fields: url, host, pid (own), seq (from\n"
     "0), ts (the wall clock in microseconds, strictly increasing), svc,\n"
     "ctx, route, lbfactor, state; the leaving datagrams say them too.\n"
     "The lbfactor may follow the backend's load: --lbfactor-command or\n"
     "--lbfactor-from, asked before each announcement.",
     send_options, run_send},
    {"drain",
     "--for DURATION [--until-command CMD]\n"
     "--to HOST:PORT [--to HOST:PORT ...] [--url URL]\n"
     "[--host NAME] [--service NAME] [--ctx LIST]\n"
     "[--route ROUTE] [--lbfactor N] [--interval SECONDS]\n"
     "[--verbose] [--secret-file FILE | --secret-exec COMMAND]",
     "Takes a backend out of rotation gently: announces it as send does,\n"
     "with state=draining (the proxy lets the member take only the\n"
     "requests sticky to it), at once and every interval, until --for is\n"
     "up or --until-command exits 0, then sends state=leaving to every\n"
     "address known (the proxy disables the member) and exits 0. SIGTERM\n"
     "or SIGINT ends the drain early, the same way. A last line on stderr\n"
     "says how long it drained and why it ended.",
     drain_options, run_drain},
    {"listen",
     "--bind ADDR:PORT [--max-skew SECONDS] [--count N]\n"
     "[--service NAME] [--allow LIST ...]\n"
     "[--secret-file FILE ... | --secret-exec COMMAND ...]\n"
     "[--master-file FILE ... | --master-exec COMMAND ...]",
     "Receives datagrams and prints one line for each: what a proxy with\n"
     "the same secret, max skew, service and ProxyBeaconAllow would\n"
     "decide. The tool to reach for when a backend never joins. During a\n"
     "rotation give --secret-file (or --secret-exec) once per secret, at\n"
     "most 4: any of them verifies, as on a proxy with several\n"
     "ProxyBeaconSecret lines. A master (--master-file, --master-exec,\n"
     "or BEACON_SECRET=derive:hex:...) verifies as ProxyBeaconSecret\n"
     "derive:... does, with the member key derived for each datagram's\n"
     "svc= and url= (wire format, version 1.3: member keys).\n"
     "  accepted url=<canonical> host=.. pid=.. seq=.. ts=.. [svc=..]\n"
     "      [ctx=..] [route=..] [lbfactor=..] [state=..] from IP:PORT\n"
     "      -> add|renew|disable|enable|ignore\n"
     "  accepted heartbeat host=.. pid=.. seq=.. ts=.. [svc=..] from IP:PORT\n"
     "  dropped <reason> from IP:PORT[: detail]\n"
     "  (a bad field names its key: dropped bad field svc from ...)\n"
     "  dropped url not allowed from IP:PORT: url=<canonical> (why)\n"
     "  dropped url not canonical from IP:PORT: url=.. (canonical: ..)\n"
     "  dropped mac mismatch from IP:PORT (member key derived for\n"
     "      svc=.. url=..): \"<datagram>\"      (under a master)\n"
     "Fields keep the wire order; absent ones are left out. The replay\n"
     "check starts empty, like a proxy just started, and counts every add\n"
     "as done. Bytes from the network are shown escaped (\\xNN). Output\n"
     "is flushed after each line.\n"
     "\n"
     "To try a ProxyBeaconAllow policy on live traffic before deploying\n"
     "it, listen on a spare port that the senders also announce to, and\n"
     "read which urls it would refuse:\n"
     "  beaconctl listen --bind 10.0.0.1:5556 --secret-file FILE \\\n"
     "      --allow 10.0.0.0/8,*.svc.cluster.local",
     listen_options, run_listen},
    {"sign",
     "--ts USEC [--url URL] [--host NAME] [--pid N] [--seq N]\n"
     "[--service NAME] [--ctx LIST] [--route ROUTE]\n"
     "[--lbfactor N] [--state STATE]\n"
     "[--secret-file FILE | --secret-exec COMMAND]",
     "Prints one signed datagram and a newline, which is not part of it\n"
     "(for scripts and test vectors). Fields not given are left out; the\n"
     "rest are written in the wire order url, host, pid, seq, ts, svc,\n"
     "ctx, route, lbfactor, state.",
     sign_options, run_sign},
    {"keygen", NULL,
     "Prints a new random secret, hex: and 32 lowercase hex digits, from\n"
     "the operating system's random source. Use one secret for\n"
     "ProxyBeaconSecret on the proxies and for all their senders.",
     keygen_options, run_keygen},
    {"derive-key",
     "--url URL [--service NAME]\n"
     "[--secret-file FILE | --secret-exec COMMAND]",
     "Prints the key of one member, derived from a master for the\n"
     "member's service and canonical url (wire format, version 1.3:\n"
     "member keys). The secret read is the master: hex: and 32 hex\n"
     "digits; a passphrase is refused. BEACON_SECRET may say it as\n"
     "ProxyBeaconSecret does, derive:hex:..., derive:file:/path or\n"
     "derive:exec:/path. Two lines:\n"
     "  hex:<32 hex digits>     the member's key\n"
     "  <canonical url>         the url it is derived for\n"
     "The first line is a secret file as it is: give it to the member as\n"
     "its secret (ProxyBeaconSecret, --secret-file, the Tomcat Listener's\n"
     "secret), never the master. The member must announce exactly that\n"
     "url and service: a url is canonicalized as the receiver does it\n"
     "(https://App.Example.com:443/ is https://app.example.com), and one\n"
     "the receiver would refuse is refused here. beaconctl listen\n"
     "--master-file checks what the member sends with the master.",
     derive_options, run_derive},
    {NULL, NULL, NULL, NULL, NULL}};

static const command_t *find_command(const char *name)
{
    const command_t *cmd;

    for (cmd = commands; cmd->name; cmd++) {
        if (strcmp(cmd->name, name) == 0) {
            return cmd;
        }
    }
    return NULL;
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
          "  drain     announce draining for a while, then leaving\n"
          "  listen    print what a proxy would decide for each datagram\n"
          "  sign      print one signed datagram\n"
          "  keygen    print a new random secret\n"
          "  derive-key print a member's key, derived from a master\n\n"
          "The secret (the proxy's ProxyBeaconSecret: hex: and 32 hex digits,\n"
          "or a passphrase of at least 16 bytes) is read from the first line\n"
          "of --secret-file FILE, or of what --secret-exec COMMAND prints, or\n"
          "else from the environment variable " SECRET_ENV " (which, as\n"
          "ProxyBeaconSecret, may say file:PATH or exec:PATH instead). It is\n"
          "never taken from the command line, where every\n"
          "local user could read it with ps. As it starts, beaconctl removes\n"
          SECRET_ENV " from its environment and overwrites the value where\n"
          "the environment held it: no child inherits it, and\n"
          "/proc/PID/environ no longer shows it.\n\n"
          "Exit status: 0 success, 1 runtime failure, 2 usage or configuration\n"
          "error (one line on stderr, prefixed \"beaconctl: \").\n",
          stdout);
    for (cmd = commands; cmd->name; cmd++) {
        fputs("\n", stdout);
        print_command_help(cmd);
    }
}

/* "beaconctl --help", "-h", "help" and "help COMMAND". */
static int help(int argc, const char *const *argv)
{
    const command_t *cmd;

    if (argc > 2 && strcmp(argv[1], "help") == 0) {
        if ((cmd = find_command(argv[2])) == NULL) {
            fail(EXIT_USAGE, "unknown command '%s' (see beaconctl --help)",
                 argv[2]);
        }
        print_command_help(cmd);
    }
    else {
        print_help();
    }
    flush_stdout();
    return 0;
}

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
    take_secret_env(p); /* before anything else can start or show */
    if (argc < 2) {
        fail(EXIT_USAGE, "no command given: send, drain, listen, sign, keygen or "
             "derive-key "
             "(see beaconctl --help)");
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        return help(argc, argv);
    }
    if ((cmd = find_command(argv[1])) == NULL) {
        fail(EXIT_USAGE, "unknown command '%s' (see beaconctl --help)",
             argv[1]);
    }
    cmd_name = cmd->name;
    return cmd->run(p, cmd, argc - 1, argv + 1);
}
