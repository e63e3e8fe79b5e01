/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * beaconctl keygen: prints a new random secret in the hex: form, which
 * beacon_key_parse() takes as it is (no passphrase hashing to get wrong).
 */

#include <stdio.h>
#include <string.h>

#include <apr_general.h>

#include "cli.h"

const option_t keygen_options[] = {
    HELP_OPTION,
    OPTIONS_END};

int run_keygen(apr_pool_t *p, const command_t *cmd, int argc,
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
    while (opts_next(&o, NULL, &arg) != 0) {
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
    beacon_wipe(bytes, sizeof(bytes));
    beacon_wipe(text, sizeof(text));
    flush_stdout();
    return 0;
}
