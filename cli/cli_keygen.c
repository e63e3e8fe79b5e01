/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl keygen: prints a new random secret in the hex: form, which
 * beacon_key_parse() takes as it is (no passphrase hashing to get wrong).
 */

#include <stdio.h>

#include <apr_general.h>

#include "cli.h"

const option_t keygen_options[] = {
    HELP_OPTION,
    OPTIONS_END};

int run_keygen(apr_pool_t *p, const command_t *cmd, int argc,
               const char *const *argv)
{
    char text[BEACON_KEY_TEXT_SIZE];
    beacon_key_t key;
    apr_status_t rv;
    char ebuf[120];
    const char *arg;
    opts_t o;

    opts_init(&o, p, cmd, argc, argv);
    while (opts_next(&o, NULL, &arg) != 0) {
        /* --help only; it exits */
    }
    rv = apr_generate_random_bytes(key.bytes, sizeof(key.bytes));
    if (rv != APR_SUCCESS) {
        fail(EXIT_RUNTIME, "no random bytes from the operating system: %s",
             errstr(rv, ebuf, sizeof(ebuf)));
    }
    beacon_key_format(&key, text);
    printf("%s\n", text);
    beacon_key_wipe(&key);
    beacon_wipe(text, sizeof(text));
    flush_stdout();
    return 0;
}
