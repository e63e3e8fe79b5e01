/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Writes the seed corpus under fuzz/corpus/<target>/ from the unit tests'
 * own tables, so every case the tests name (each drop reason and its
 * boundary rows, each url and secret row) is a seed, signed where it must
 * be. Built three times, with -DGEN_WIRE, -DGEN_URL or -DGEN_KEY, each
 * compiling one test file into itself (its main() renamed, unused).
 *
 *   make -f fuzz/Makefile corpus      regenerate (the output is checked in)
 *
 * Seeds are small text files named after the test case they come from.
 */
#define main unit_test_main
#if defined(GEN_WIRE)
#include "test_wire.c"
#elif defined(GEN_URL)
#include "test_url.c"
#elif defined(GEN_KEY)
#include "test_key.c"
#else
#error "define GEN_WIRE, GEN_URL or GEN_KEY"
#endif
#undef main

#include <errno.h>
#include <sys/stat.h>

static const char *out_root;

/* corpus/<target>/<prefix>-<slug of name>[-n], never overwriting a seed
 * written by this run under another case of the same slug. */
static void put(const char *target, const char *prefix, const char *name,
                const void *data, size_t len)
{
    char dir[512], path[1024], slug[64];
    size_t i, n = 0;
    int k;
    FILE *f;

    snprintf(dir, sizeof dir, "%s/%s", out_root, target);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        perror(dir);
        exit(1);
    }
    for (i = 0; name[i] && n < sizeof slug - 1; i++) {
        char c = name[i];

        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            slug[n++] = c;
        } else if (c >= 'A' && c <= 'Z') {
            slug[n++] = (char)(c - 'A' + 'a');
        } else if (n > 0 && slug[n - 1] != '-') {
            slug[n++] = '-';
        }
    }
    while (n > 0 && slug[n - 1] == '-') {
        n--;
    }
    slug[n] = '\0';
    snprintf(path, sizeof path, "%s/%s-%s", dir, prefix, slug);
    for (k = 2; access(path, F_OK) == 0 && k < 100; k++) {
        snprintf(path, sizeof path, "%s/%s-%s-%d", dir, prefix, slug, k);
    }
    f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void put_str(const char *target, const char *prefix, const char *name,
                    const char *s)
{
    put(target, prefix, name, s, strlen(s));
}

/* A directive seed for fuzz_config: selector byte, then the argument. */
static void put_directive(char selector, const char *name, const void *arg,
                          size_t len)
{
    char *buf = malloc(len + 1);
    char prefix[] = {'x', '\0'};

    buf[0] = selector;
    memcpy(buf + 1, arg, len);
    prefix[0] = (char)(selector - 'A' + 'a');
    put("fuzz_config", prefix, name, buf, len + 1);
    free(buf);
}

#if defined(GEN_WIRE)

/* Lines of a fuzz_verify script: datagrams (re-signed by the target) and
 * table commands; see fuzz/fuzz_verify.c. */
static const struct {
    const char *name;
    const char *text;
} scripts[] = {
    {"add then replay then newer",
     "BEACON url=http://10.0.0.5:8080 ts=1796000000000000\n"
     "BEACON url=http://10.0.0.5:8080 ts=1796000000000000\n"
     "BEACON url=HTTP://10.0.0.5:8080/ ts=1796000000000001\n"},
    {"add fails then retry after backoff",
     "BEACON url=http://a.example ts=1796000000000000 pad=x\n"
     "!tick 2\n"
     "BEACON url=http://a.example ts=1796000002000000\n"},
    {"leaving then back",
     "BEACON url=http://[::1]:8080 ts=1796000000000000\n"
     "BEACON url=http://[::1]:8080 ts=1796000000000001 state=leaving\n"
     "BEACON url=http://[::1]:8080 ts=1796000000000002\n"},
    {"lease lapses and is released",
     "BEACON url=http://b.example:81 ts=1796000000000000\n"
     "!tick 11\n!lapse\n!tick 61\n!lapse\n"
     "BEACON url=http://b.example:81 ts=1796000072000000\n"},
    {"full table",
     "!fill 256\nBEACON url=http://one-too-many ts=1796000000000000\n"
     "!tick 100\n!lapse\nBEACON url=http://one-too-many ts=1796000100000000\n"},
    {"clock steps back",
     "BEACON url=ws://c ts=1796000000000000\n!back 3600\n!lapse\n"
     "BEACON url=ws://c ts=1796000000000001\n"},
    {"heartbeat and unacceptable url",
     "BEACON host=web-1 ts=1796000000000000\n"
     "BEACON url=http://u@h ts=1796000000000000\n"},
};

static void gen(void)
{
    beacon_key_t k = spec_hex_key();
    char dg[2 * BEACON_MAX_DATAGRAM + 64];
    size_t i, len;

    put_str("fuzz_verify", "spec", "vector 1 url hex key", V1);
    put_str("fuzz_verify", "spec", "vector 2 heartbeat hex key", V2);
    put_str("fuzz_verify", "spec", "vector 3 passphrase key", V3);
    for (i = 0; i < ARRAY_LEN(verify_rows); i++) {
        const verify_row_t *r = &verify_rows[i];

        len = build(dg, sizeof dg, &k, r->signed_part, strlen(r->signed_part),
                    r->tail, r->upper);
        put("fuzz_verify", "wire", r->name, dg, len);
    }
    len = build_padded(dg, sizeof dg, &k, BEACON_MAX_DATAGRAM);
    put("fuzz_verify", "wire", "2048 bytes correctly signed", dg, len);
    len = build_padded(dg, sizeof dg, &k, BEACON_MAX_DATAGRAM + 1);
    put("fuzz_verify", "wire", "2049 bytes oversize", dg, len);
    {
        static const char body[] = "BEACON host=web\0-1 ts=" TS;

        len = build(dg, sizeof dg, &k, body, sizeof body - 1, MAC, 0);
        put("fuzz_verify", "wire", "embedded NUL in a signed value", dg, len);
        put("fuzz_verify", "wire", "NUL as the last byte", V1, strlen(V1) + 1);
    }
    for (i = 0; i < ARRAY_LEN(scripts); i++) {
        put_str("fuzz_verify", "script", scripts[i].name, scripts[i].text);
    }
    /* Failed adds until the back-off reaches its cap: each line's length
     * is 1 mod 3 (fuzz_verify answers its ADD with _add_failed), and the
     * clock moves past each retry_at (1, 2, 4 ... 64 s). */
    {
        char script[2048];
        size_t n = 0;
        long long t = 0, wait = 1;

        for (i = 0; i < 9; i++) {
            char line[128];
            int len = snprintf(line, sizeof line,
                               "BEACON url=http://backoff.example ts=%lld pad=x",
                               (long long)APR_INT64_C(1796000000000000) +
                                   t * 1000000);

            while (len % 3 != 1) {
                line[len++] = 'x';
            }
            line[len] = '\0';
            n += (size_t)snprintf(script + n, sizeof script - n, "%s\n!tick %lld\n",
                                  line, wait);
            t += wait;
            wait = wait < 64 ? 2 * wait : 64;
        }
        put("fuzz_verify", "script", "add fails until the backoff is capped",
            script, n);
    }

    /* The sender's host name (fuzz_config 'H'): format's refusals, and a
     * name that makes the datagram exactly 2048 bytes. */
    {
        static const char *hosts[] = {"web-1", "", "web 1", "web-1\n",
                                      "web\x01" "1", "web\x7f", "h\xc3\xa9"};
        static const char fixed[] = "BEACON url=http://10.0.0.5:8080 host= "
                                    "pid=4242 seq=17 ts=1796000000000000 "
                                    "mac=0123456789abcdef";
        size_t fill = BEACON_MAX_DATAGRAM - (sizeof fixed - 1);
        char *host = malloc(fill + 2);

        for (i = 0; i < ARRAY_LEN(hosts); i++) {
            put_directive('H', hosts[i][0] ? hosts[i] : "empty", hosts[i],
                          strlen(hosts[i]));
        }
        memset(host, 'h', fill + 1);
        put_directive('H', "host filling 2048 bytes", host, fill);
        put_directive('H', "host one byte too long", host, fill + 1);
        free(host);
    }
}

#elif defined(GEN_URL)

/* body + " mac=" + its tag: dg must hold strlen(body) + 22 bytes. */
static size_t sign(char *dg, const beacon_key_t *k, const char *body)
{
    unsigned char mac[BEACON_MAC_LEN];
    size_t len = strlen(body);
    unsigned i;

    beacon_mac(k, body, len, mac);
    memcpy(dg, body, len);
    len += (size_t)sprintf(dg + len, " mac=");
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        len += (size_t)sprintf(dg + len, "%02x", mac[i]);
    }
    return len;
}

static void gen(void)
{
    beacon_key_t k = spec_hex_key();
    size_t i;

    for (i = 0; i < ARRAY_LEN(rows); i++) {
        char body[512], dg[600];
        size_t len;

        put_str("fuzz_url", "url", rows[i].name, rows[i].in);
        put_directive('A', rows[i].name, rows[i].in, strlen(rows[i].in));
        /* As the url of a signed datagram, where it is printable. */
        if (strlen(rows[i].in) > 0 && strpbrk(rows[i].in, " \n\t") == NULL) {
            snprintf(body, sizeof body, "BEACON url=%s ts=1796000000000000",
                     rows[i].in);
            len = sign(dg, &k, body);
            put("fuzz_verify", "url", rows[i].name, dg, len);
        }
    }
    /* only_len_bytes_are_read()'s rows are local to that test: a copy. */
    {
        static const len_row_t cut[] = {
            {"a path beyond len is not seen", "http://h:8080/pathgarbage", 13,
             NULL},
            {"an IPv6 literal cut at its bracket", "http://[::1]:8080]]]", 17,
             NULL},
            {"a port cut to nothing", "http://h:80", 9, NULL},
            {"a bracket cut before it closes", "http://[::1]", 11, NULL},
            {"a NUL inside len", "http://h\0ost", 12, NULL},
        };

        for (i = 0; i < ARRAY_LEN(cut); i++) {
            put("fuzz_url", "len", cut[i].name, cut[i].buf, cut[i].len);
        }
    }
}

#elif defined(GEN_KEY)

static void gen(void)
{
    size_t i;

    for (i = 0; i < ARRAY_LEN(good_rows); i++) {
        char file[256];

        put_str("fuzz_key", "good", good_rows[i].name, good_rows[i].secret);
        put_directive('S', good_rows[i].name, good_rows[i].secret,
                      strlen(good_rows[i].secret));
        snprintf(file, sizeof file, "%s\r\nsecond line\n", good_rows[i].secret);
        put_directive('F', good_rows[i].name, file, strlen(file));
    }
    for (i = 0; i < ARRAY_LEN(bad_rows); i++) {
        put_str("fuzz_key", "bad", bad_rows[i].name, bad_rows[i].secret);
        put_directive('S', bad_rows[i].name, bad_rows[i].secret,
                      strlen(bad_rows[i].secret));
    }
}

#endif

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    out_root = argv[1];
    gen();
    return 0;
}
