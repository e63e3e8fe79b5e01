/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl derive-key: issues a member's key from the master, for one
 * service and one canonical url (wire format, version 1.3: member keys).
 * The derivation, the canonical form and the master's rule (hex: only)
 * are libbeacon's; this file reads options and prints.
 */

#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The options as given, before any is checked. */
typedef struct {
    const char *service, *url;
    secret_arg_t secret;
} derive_args_t;

/* Help lines stay within 52 columns: 26 + 52 fit a terminal of 80. */
const option_t derive_options[] = {
    {"service", OPT_SERVICE, "NAME",
     "the member's service, its svc= (1 to 63 of A-Z\n"
     "a-z 0-9 . _ -); without it, the key of a member\n"
     "that sends no svc=", ONCE(derive_args_t, service)},
    {"url", OPT_URL, "URL",
     "the member's url= (required): the key is derived\n"
     "for its canonical form, which is printed", ONCE(derive_args_t, url)},
    SECRET_FILE_OPTION(0),
    SECRET_EXEC_OPTION(0),
    HELP_OPTION,
    OPTIONS_END};

int run_derive(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv)
{
    char canonical[BEACON_URL_MAX];
    char text[BEACON_KEY_TEXT_SIZE];
    beacon_key_t master, key;
    derive_args_t args;
    const char *arg, *svc;
    opts_t o;
    int optch;

    memset(&args, 0, sizeof(args));
    opts_init(&o, p, cmd, argc, argv);
    while ((optch = opts_next(&o, &args, &arg)) != 0) {
        take_secret_arg(&args.secret, optch, arg);
    }
    if (args.url == NULL) {
        fail(EXIT_USAGE, "--url URL is required (see beaconctl derive-key "
             "--help)");
    }
    canonical_url(args.url, canonical);
    svc = "";
    if (args.service) {
        check_service(args.service);
        svc = args.service;
    }
    load_master(p, &args.secret, &master);
    if (beacon_member_key_derive(&master, svc, strlen(svc), canonical,
                                 strlen(canonical), &key) != 0) {
        fail(EXIT_USAGE, "the service and url are too long");
    }
    beacon_key_wipe(&master);
    beacon_key_format(&key, text);
    beacon_key_wipe(&key);
    printf("%s\n%s\n", text, canonical);
    beacon_wipe(text, sizeof(text));
    flush_stdout();
    return 0;
}
