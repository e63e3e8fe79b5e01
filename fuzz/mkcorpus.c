/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Writes the seed corpus under fuzz/corpus/<target>/ from the data files
 * of tests/vectors/, the rows the unit tests read, so every case they name
 * (each drop reason and its boundary rows, each url, secret and secret
 * file) is a seed, signed where it must be; plus what only fuzzing needs:
 * table scripts for fuzz_verify (with a service for drops-service.txt's
 * rows) and host names, endpoints and services for fuzz_config.
 *
 *   make -f fuzz/Makefile corpus      regenerate (the output is checked in)
 *   mkcorpus VECTORS_DIR CORPUS_DIR   what that runs
 *
 * Seeds are small files named after the row they come from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "beacon.h"
#include "../tests/unit/vectors.h" /* by path: no -I needed */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define TS "1796000000000000"
#define MAC_TAIL (5 + 2 * BEACON_MAC_LEN) /* " mac=" and 16 hex digits */

static const char *vectors_dir;
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

    (void)snprintf(dir, sizeof dir, "%s/%s", out_root, target);
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
    (void)snprintf(path, sizeof path, "%s/%s-%s", dir, prefix, slug);
    for (k = 2; access(path, F_OK) == 0 && k < 100; k++) {
        (void)snprintf(path, sizeof path, "%s/%s-%s-%d", dir, prefix, slug, k);
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

    if (buf == NULL) {
        perror("mkcorpus");
        exit(1);
    }
    buf[0] = selector;
    memcpy(buf + 1, arg, len);
    prefix[0] = (char)(selector - 'A' + 'a');
    put("fuzz_config", prefix, name, buf, len + 1);
    free(buf);
}

/* The rows of vectors_dir/name with columns cols; exits on any error. */
static vec_table_t load(const char *name, const char *const *cols)
{
    vec_table_t t;
    char err[512];

    if (vec_load(&t, vectors_dir, name, cols, err, sizeof err) != 0) {
        fprintf(stderr, "mkcorpus: %s\n", err);
        exit(1);
    }
    return t;
}

/* body[0..len) + " mac=" + its tag under key, into a malloc'd buffer. */
static char *sign(const beacon_key_t *key, const char *body, size_t len,
                  size_t *outlen)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char mac[BEACON_MAC_LEN];
    char *dg = malloc(len + MAC_TAIL + 1);
    size_t i;

    if (dg == NULL) {
        perror("mkcorpus");
        exit(1);
    }
    beacon_mac(key, body, len, mac);
    memcpy(dg, body, len);
    memcpy(dg + len, " mac=", 5);
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        dg[len + 5 + 2 * i] = hex[mac[i] >> 4];
        dg[len + 5 + 2 * i + 1] = hex[mac[i] & 0xf];
    }
    *outlen = len + MAC_TAIL;
    dg[*outlen] = '\0';
    return dg;
}

static beacon_key_t spec_hex_key(void)
{
    beacon_key_t k;

    if (beacon_key_parse("hex:00112233445566778899aabbccddeeff", &k) != NULL) {
        exit(1);
    }
    return k;
}

/* ------------------------------------------------------------------ */
/* fuzz_verify: datagrams and scripts                                  */

/* The spec's announcement vectors, as they are. */
static void gen_announcements(void)
{
    static const char *const cols[] = {"version", "secret", "datagram", NULL};
    vec_table_t t = load("announcements.txt", cols);
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        char name[64];

        (void)snprintf(name, sizeof name, "%s vector %zu",
                       t.rows[i].col[0].text, i + 1);
        put("fuzz_verify", "spec", name, t.rows[i].col[2].text,
            t.rows[i].col[2].len);
    }
    vec_free(&t);
}

/* The receiver's drop table, as it is. */
static void gen_drops(void)
{
    static const char *const cols[] = {"reason", "datagram", "name", NULL};
    vec_table_t t = load("drops.txt", cols);
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        put("fuzz_verify", "wire", t.rows[i].col[2].text,
            t.rows[i].col[1].text, t.rows[i].col[1].len);
    }
    vec_free(&t);
}

/*
 * The rows for a receiver with a service: each datagram as it is, and as
 * a script that gives the table that service first ("!service NAME"; the
 * script's datagram lines are re-signed by the target, so the row's own
 * mac is left off).
 */
static void gen_service_drops(void)
{
    static const char *const cols[] = {"service", "reason", "datagram",
                                       "name", NULL};
    vec_table_t t = load("drops-service.txt", cols);
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        const vec_field_t *dg = &t.rows[i].col[2];
        const char *name = t.rows[i].col[3].text;
        char script[BEACON_MAX_DATAGRAM + 128];
        size_t body = dg->len > MAC_TAIL ? dg->len - MAC_TAIL : dg->len;
        int n;

        put("fuzz_verify", "svc", name, dg->text, dg->len);
        n = snprintf(script, sizeof script, "!service %s\n%.*s\n",
                     t.rows[i].col[0].text, (int)body, dg->text);
        if (n > 0 && (size_t)n < sizeof script) {
            put("fuzz_verify", "script-svc", name, script, (size_t)n);
        }
    }
    vec_free(&t);
}

/* A correctly signed datagram of exactly total bytes: the url vector's
 * fields, then an unknown key pad=xxx... sized to fit. */
static void put_padded(const beacon_key_t *k, size_t total, const char *name)
{
    static const char prefix[] =
        "BEACON url=http://10.0.0.5:8080 ts=" TS " pad=";
    size_t blen = total - MAC_TAIL, len;
    char *body = malloc(blen), *dg;

    if (body == NULL) {
        exit(1);
    }
    memcpy(body, prefix, sizeof prefix - 1);
    memset(body + sizeof prefix - 1, 'x', blen - (sizeof prefix - 1));
    dg = sign(k, body, blen, &len);
    put("fuzz_verify", "wire", name, dg, len);
    free(dg);
    free(body);
}

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
    {"a small table, full, stepped back and released",
     "!capacity 3\n!fill 2\nBEACON url=http://x ts=1796000000000000\n"
     "BEACON url=http://y ts=1796000000000000\n!back 30\n"
     "BEACON url=http://x ts=1796000000000001 state=leaving\n"
     "!tick 100\n!lapse\nBEACON url=http://y ts=1796000100000000\n"},
    {"clock steps back",
     "BEACON url=ws://c ts=1796000000000000\n!back 3600\n!lapse\n"
     "BEACON url=ws://c ts=1796000000000001\n"},
    {"heartbeat and unacceptable url",
     "BEACON host=web-1 ts=1796000000000000\n"
     "BEACON url=http://u@h ts=1796000000000000\n"},
    {"a foreign service moves no replay mark",
     "!service shop\n"
     "BEACON url=http://a ts=1796000000000000 svc=shop\n"
     "BEACON url=http://a ts=1796000000000009 svc=cart\n"
     "BEACON url=http://a ts=1796000000000009\n"
     "BEACON url=http://a ts=1796000000000001 svc=shop\n"
     "!service\n"
     "BEACON url=http://a ts=1796000000000002 svc=cart\n"},
    {"an invalid service fails closed",
     "!service bad name\nBEACON url=http://a ts=1796000000000000 svc=bad\n"},
    {"draining and standby renew, leaving disables",
     "BEACON url=http://d ts=1796000000000000 svc=cart ctx=/shop,/cart "
     "state=draining\n"
     "BEACON url=http://d ts=1796000000000001 state=standby ctx=/\n"
     "BEACON url=http://d ts=1796000000000002 state=leaving\n"
     "BEACON url=http://d ts=1796000000000003 state=draining\n"},
    /* key selection (fuzz_verify's ring): a filler's own key, the default
     * keys of cart, a name of no service, a second svc */
    {"svc names services of the ring",
     "BEACON url=http://e ts=1796000000000000 svc=s7\n"
     "BEACON url=http://e ts=1796000000000001 svc=cart\n"
     "BEACON url=http://e ts=1796000000000002 svc=s62\n"
     "BEACON url=http://e ts=1796000000000003 svc=shop svc=s1\n"},
};

/* Failed adds until the back-off reaches its cap: each line's length is
 * 1 mod 3 (fuzz_verify answers its ADD with _add_failed), and the clock
 * moves past each retry_at (1, 2, 4 ... 64 s). */
static void put_backoff_script(void)
{
    char script[2048];
    size_t n = 0, i;
    long long t = 0, wait = 1;

    for (i = 0; i < 9; i++) {
        char line[128];
        int len = snprintf(line, sizeof line,
                           "BEACON url=http://backoff.example ts=%lld pad=x",
                           1796000000000000LL + t * 1000000);

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

static void gen_verify(void)
{
    beacon_key_t k = spec_hex_key();
    size_t i;

    gen_announcements();
    gen_drops();
    gen_service_drops();
    put_padded(&k, BEACON_MAX_DATAGRAM, "2048 bytes correctly signed");
    put_padded(&k, BEACON_MAX_DATAGRAM + 1, "2049 bytes oversize");
    for (i = 0; i < ARRAY_LEN(scripts); i++) {
        put_str("fuzz_verify", "script", scripts[i].name, scripts[i].text);
    }
    put_backoff_script();
}

/* ------------------------------------------------------------------ */
/* fuzz_url: urls, also as ProxyBeaconAdvertise and in a datagram      */

static void gen_urls(void)
{
    static const char *const cols[] = {"url", "canonical", "name", NULL};
    vec_table_t t = load("urls.txt", cols);
    beacon_key_t k = spec_hex_key();
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        const vec_field_t *in = &t.rows[i].col[0];
        const char *name = t.rows[i].col[2].text;
        char body[512], *dg;
        size_t len;

        put("fuzz_url", "url", name, in->text, in->len);
        put("fuzz_httpd_url", "url", name, in->text, in->len);
        put_directive('A', name, in->text, in->len);
        /* As the url of a signed datagram, where it is printable. */
        if (in->len > 0 && strpbrk(in->text, " \n\t") == NULL) {
            (void)snprintf(body, sizeof body, "BEACON url=%s ts=" TS, in->text);
            dg = sign(&k, body, strlen(body), &len);
            put("fuzz_verify", "url", name, dg, len);
            free(dg);
        }
    }
    vec_free(&t);
}

/* Urls cut short by len: the input need not be NUL-terminated. */
static void gen_url_cuts(void)
{
    static const struct {
        const char *name;
        const char *buf; /* more bytes than len */
        size_t len;
    } cut[] = {
        {"a path beyond len is not seen", "http://h:8080/pathgarbage", 13},
        {"an IPv6 literal cut at its bracket", "http://[::1]:8080]]]", 17},
        {"a port cut to nothing", "http://h:80", 9},
        {"a bracket cut before it closes", "http://[::1]", 11},
        {"a NUL inside len", "http://h\0ost", 12},
    };
    size_t i;

    for (i = 0; i < ARRAY_LEN(cut); i++) {
        put("fuzz_url", "len", cut[i].name, cut[i].buf, cut[i].len);
    }
}

/* ------------------------------------------------------------------ */
/* fuzz_key and fuzz_config: secrets, secret files, hosts, endpoints   */

static void gen_secrets(void)
{
    static const char *const cols[] = {"secret", "key", "name", NULL};
    vec_table_t t = load("secrets.txt", cols);
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        const vec_field_t *s = &t.rows[i].col[0];
        const char *name = t.rows[i].col[2].text;
        int good = !vec_is(&t.rows[i].col[1], "refused");

        put("fuzz_key", good ? "good" : "bad", name, s->text, s->len);
        put_directive('S', name, s->text, s->len);
        if (good) {
            /* The same secret in a file, CRLF and a second line. */
            char file[512];
            int n = snprintf(file, sizeof file, "%s\r\nsecond line\n", s->text);

            put_directive('F', name, file, (size_t)n);
        }
    }
    vec_free(&t);
}

static void gen_secret_files(void)
{
    static const char *const cols[] = {"file", "key", "name", NULL};
    vec_table_t t = load("secret-files.txt", cols);
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        put_directive('F', t.rows[i].col[2].text, t.rows[i].col[0].text,
                      t.rows[i].col[0].len);
    }
    vec_free(&t);
}

/* The sender's host name (fuzz_config 'H'): format's refusals, and a
 * name that makes the datagram exactly 2048 bytes. */
static void gen_hosts(void)
{
    static const char *hosts[] = {"web-1", "", "web 1", "web-1\n",
                                  "web\0011", "web\x7f", "h\xc3\xa9"};
    static const char fixed[] = "BEACON url=http://10.0.0.5:8080 host= "
                                "pid=4242 seq=17 ts=1796000000000000 "
                                "mac=0123456789abcdef";
    size_t fill = BEACON_MAX_DATAGRAM - (sizeof fixed - 1), i;
    char *host = malloc(fill + 2);

    if (host == NULL) {
        exit(1);
    }
    for (i = 0; i < ARRAY_LEN(hosts); i++) {
        put_directive('H', hosts[i][0] ? hosts[i] : "empty", hosts[i],
                      strlen(hosts[i]));
    }
    memset(host, 'h', fill + 1);
    put_directive('H', "host filling 2048 bytes", host, fill);
    put_directive('H', "host one byte too long", host, fill + 1);
    free(host);
}

/* ProxyBeaconService (fuzz_config 'V'): valid names at the limits and
 * the characters just outside the rule. */
static void gen_services(void)
{
    static const char *names[] = {
        "shop", "a", "Shop.EU-1_blue", "other", "", "my shop", "shop!",
        "shop/cart", "caf\xc3\xa9", "~shop",
        "s12345678901234567890123456789012345678901234567890123456789012",
        "s123456789012345678901234567890123456789012345678901234567890123",
    };
    size_t i;

    for (i = 0; i < ARRAY_LEN(names); i++) {
        put_directive('V', names[i][0] ? names[i] : "empty", names[i],
                      strlen(names[i]));
    }
}

/* ProxyBeaconListen / ProxyBeaconAddress (fuzz_config 'L'): the flags
 * byte, then the argument. */
static void gen_endpoints(void)
{
    static const struct {
        const char *name;
        unsigned flags;
        const char *spec;
    } rows[] = {
        {"ipv4 and port", 0, "10.0.0.1:5555"},
        {"name and port", 0, "proxy.example.com:5555"},
        {"ipv6 in brackets", 0, "[::1]:5555"},
        {"udp scheme", 0, "udp://10.0.0.1:5555"},
        {"tcp scheme and ipv6", 0, "tcp://[::1]:5555"},
        {"any host any port", BEACON_HP_ANY_HOST | BEACON_HP_PORT_ZERO, "*:0"},
        {"optional port", BEACON_HP_PORT_OPTIONAL, "localhost"},
        {"ipv6 scope", 0, "[fe80::1%eth0]:5555"},
        {"bare ipv6", 0, "::1:5555"},
        {"port 65536", 7, "h:65536"},
        {"bad scheme", 0, "1udp://h:1"},
    };
    size_t i;

    for (i = 0; i < ARRAY_LEN(rows); i++) {
        char arg[128];
        int n = snprintf(arg, sizeof arg, "%c%s", (char)('0' + rows[i].flags),
                         rows[i].spec);

        put_directive('L', rows[i].name, arg, (size_t)n);
    }
}

/* A list of max + 1 entries HEAD0,HEAD1,... ("one entry too many"), and
 * of max ("the bound"). */
static void put_bound(const char *target, const char *prefix,
                      const char *head, size_t max)
{
    char many[4096];
    size_t i, off = 0;

    for (i = 0; i <= max && off < sizeof many; i++) {
        off += (size_t)snprintf(many + off, sizeof many - off, "%s%s%zu",
                                i ? "," : "", head, i);
    }
    if (off >= sizeof many) {
        fprintf(stderr, "mkcorpus: %s: %zu entries do not fit\n", target, max);
        exit(1);
    }
    put(target, prefix, "one entry too many", many, off);
    put(target, prefix, "the bound", many, (size_t)(strrchr(many, ',') - many));
}

/* fuzz_allow: list A, list B and a path, one a line: the forms of an
 * entry, each bad entry of the unit tests, conflicting and nested pairs,
 * paths at each boundary. */
static void gen_allow(void)
{
    static const struct {
        const char *name, *input;
    } rows[] = {
        {"exact and nested", "/shop,/cart\n/shop/admin\n/shop/admin/x"},
        {"same context twice", "/shop\n/shop\n/shop;jsessionid=1"},
        {"delegation holds an exact", "/apps/*\n/apps/x\n/apps/x/y"},
        {"delegation beside its base", "/apps/*\n/apps\n/apps"},
        {"nested delegations", "/apps/*\n/apps/x/*\n/apps/x/y;z"},
        {"root delegation and root", "/*\n/\n/anything"},
        {"root delegation and exact", "/*\n/shop\n/shopping"},
        {"repeats", "/a,/b,/a,/b/*,/b/*\n/c\n/b/c"},
        {"empty entry", "/shop,,/cart\n\n/shop"},
        {"trailing comma", "/shop,\n/cart\n/cart"},
        {"space", "/shop, /cart\n/x\n/shop"},
        {"misplaced star", "/apps*,/a/*/b,/a/**,*\n/*\n/a"},
        {"dot segments", "/a/../b,/./*\n/a\n/a/./b"},
        {"80 bytes", "/1234567890123456789012345678901234567890123456789012345678901234567890123456789/*\n"
                     "/1234567890123456789012345678901234567890123456789012345678901234567890123456789/*\n"
                     "/1234567890123456789012345678901234567890123456789012345678901234567890123456789/z"},
        {"81 bytes", "/123456789012345678901234567890123456789012345678901234567890123456789012345678ab\n/\n/"},
        {"no path", "/a\n/b"},
        {"odd first byte: one bucket", "/a,/b,/c,/d,/e,/f,/g,/h,/i,/j\n/k\n/a/b/c"},
    };
    size_t i;

    for (i = 0; i < ARRAY_LEN(rows); i++) {
        put_str("fuzz_allow", "allow", rows[i].name, rows[i].input);
    }
    put_bound("fuzz_allow", "allow", "/c", BEACON_ALLOW_MAX_ENTRIES);
}

/* fuzz_routes: a control byte (bits 0-1 the few-bucket image, 2-4 how
 * many contexts to generate, 5-7 bytes to flip), then a ctx= value and
 * paths, one a line: the rule's edges and the boundaries of matching. */
static void gen_routes(void)
{
/* a row's text as a literal: its length counts NULs (flip offsets) */
#define ROUTES_ROW(name, control, text) {name, control, text, sizeof(text) - 1}
    static const struct {
        const char *name;
        unsigned char control;
        const char *text;
        size_t len;
    } rows[] = {
        ROUTES_ROW("two contexts and their boundaries", 0x00,
         "/shop,/cart\n/shop\n/shop/x\n/shop;jsessionid=1\n/shopping\n/Shop\n/cart/"),
        ROUTES_ROW("root and nested", 0x01, "/\n/\n/a\n/a/b\n/a/b/c\n/a/bc\n/a;b/c\nx"),
        ROUTES_ROW("longest wins", 0x02, "/api,/api/v1\n/api/v1/x\n/api/v10\n/api/v1;x\n/api/v"),
        ROUTES_ROW("one bucket", 0x02, "/a,/b,/c,/d,/e,/f,/g,/h\n/a/x\n/h;y\n/i"),
        ROUTES_ROW("full buckets, many nested", 0x1c, "/a\n/a/b\n/a/b/c\n/z"),
        ROUTES_ROW("generated, a quarter of the buckets", 0x13, "/svc\n/svc/x"),
        ROUTES_ROW("flipped image", 0x68, "/x,/y\n/x/1\n/y;2\n/z\x01\x40\x07"),
        ROUTES_ROW("flipped max_probe", 0x35, "/x\n/x/y\x18\x00\x08"),
        ROUTES_ROW("sixteen paths", 0x00,
         "/a,/b,/c,/d,/e,/f,/g,/h,/i,/j,/k,/l,/m,/n,/o,/p\n/p/q"),
        ROUTES_ROW("seventeen paths", 0x00,
         "/a,/b,/c,/d,/e,/f,/g,/h,/i,/j,/k,/l,/m,/n,/o,/p,/q\n/q"),
        ROUTES_ROW("a path twice", 0x00, "/a,/a\n/a"),
        ROUTES_ROW("80 bytes", 0x04,
         "/pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp-80\n"
         "/pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp-80/x"),
        ROUTES_ROW("81 bytes", 0x00,
         "/ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp-81\n/"),
        ROUTES_ROW("trailing slash", 0x00, "/shop/\n/shop/"),
        ROUTES_ROW("no slash", 0x00, "shop\nshop"),
        ROUTES_ROW("empty segment", 0x00, "/shop//cart\n/shop//cart"),
        ROUTES_ROW("empty path", 0x00, "/a,,/b\n"),
        ROUTES_ROW("trailing comma", 0x00, "/a,\n/a"),
        ROUTES_ROW("dot segments", 0x00, "/a/.,/../b\n/a/.\n/..\n/.a/..b/...\n/./a"),
        ROUTES_ROW("segment bytes", 0x00, "/Az09._~-/.well-known\n/Az09._~-/.well-known;x"),
        ROUTES_ROW("bytes outside the set", 0x00, "/a%2f,/a b,/a;b,/a=b\n/a%2f\n/a;b\n/\xc3\xa9"),
        ROUTES_ROW("empty value", 0x00, "\n/"),
    };
    size_t i;

#undef ROUTES_ROW
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        char buf[512];
        size_t n = rows[i].len;

        buf[0] = (char)rows[i].control;
        memcpy(buf + 1, rows[i].text, n);
        put("fuzz_routes", "routes", rows[i].name, buf, n + 1);
    }
}

/* fuzz_reach: a list, a url (or a bare host) and a source, one a line:
 * each kind of entry, the bad entries of the unit tests, the defaults'
 * ranges in every inet_aton spelling, mapped addresses and sources. */
static void gen_reach(void)
{
    static const struct {
        const char *name, *input;
    } rows[] = {
        {"networks", "10.0.0.0/8,fd00::/8,192.168.1.7,::1\nhttp://10.1.2.3:8080\n10.1.2.3"},
        {"mapped network", "::ffff:10.0.0.0/104\nhttp://[::ffff:10.1.2.3]\n::ffff:10.1.2.3"},
        {"ipv6 all not ipv4", "::/0\n10.1.2.3\n"},
        {"ipv4 all not link-local", "0.0.0.0/0,source\n169.254.169.254\n169.254.169.254"},
        {"link-local opened", "169.254.169.254,169.254.0.0/16,fe80::/10\nhttp://[fe80::1]\n"},
        {"link-local decimal", "0.0.0.0/0\n2852039166\n"},
        {"link-local hex", "0.0.0.0/0\n0xa9.0xfe.0xa9.0xfe\n"},
        {"link-local octal", "0.0.0.0/0\n0251.0376.0251.0376\n"},
        {"link-local two parts", "169.254.0.0/16\n169.254.43518\n"},
        {"link-local trailing dot", "\n169.254.169.254.\n"},
        {"link-local mapped", "\nhttp://[::ffff:169.254.169.254]\n"},
        {"unspecified", "source\nhttp://0.0.0.0:8080\n0.0.0.0"},
        {"unspecified v6", "::/0\nhttp://[::]\n::"},
        {"multicast", "224.0.0.0/4\n224.0.0.1\n"},
        {"multicast v6", "ff00::/8,ff02::1\nhttp://[ff02::1]\n"},
        {"broadcast", "255.255.255.255\n255.255.255.255\n"},
        {"zero x", "0x\n0x\n"},
        {"zero x then a part", "0x.1\nhttp://0x.1:8080\n"},
        {"names", "api.internal,API.Example.,*.svc.cluster.local\nhttp://a.b.svc.cluster.local.\n"},
        {"suffix bare", "*.svc.cluster.local\nsvc.cluster.local\n"},
        {"name is no address", "localhost,*.1\n127.0.0.1\n127.0.0.1"},
        {"source v6", "source\nhttp://[fd00::7]:81\nfd00::7"},
        {"source mapped", "source\n10.1.2.3\n::ffff:10.1.2.3"},
        {"source no source", "source\n10.9.9.9\n"},
        {"duplicates", "10.0.0.0/8,::ffff:10.0.0.0/104,a.x,A.X.,source,SOURCE\na.x\n"},
        {"bad prefix", "10.0.0.0/33,::/129\n\n"},
        {"bits past prefix", "10.1.0.0/8\n\n"},
        {"brackets", "[::1]\n\n"},
        {"not four decimal", "10.1,0x7f.0.0.1,10.0.0.256\n\n"},
        {"bad wildcards", "*,*.,a.*.b,**.x,*x.y\n\n"},
        {"bad in the middle", "a.example,10.1,b.example\na.example\n"},
        {"empty entry", "a.example,,b.example\n\n"},
    };
    size_t i;

    for (i = 0; i < ARRAY_LEN(rows); i++) {
        put_str("fuzz_reach", "reach", rows[i].name, rows[i].input);
    }
    put_bound("fuzz_reach", "reach", "h", BEACON_REACH_MAX_ENTRIES);
}

/* ------------------------------------------------------------------ */
/* fuzz_derive: member keys on a ring with masters and revocations     */

/* fuzz_derive's ring (see fuzz/fuzz_derive.c): the default masters A
 * (the vectors' key) and B, shop with a plain key P and A and B, cart
 * without keys, api with master C, legacy with a plain key L; revoked
 * http://10.0.0.9:8080 everywhere, http://10.0.0.6:8080 in shop. */
static beacon_key_t derive_key(const char *secret)
{
    beacon_key_t k;

    if (beacon_key_parse(secret, &k) != NULL) {
        exit(1);
    }
    return k;
}

/* body signed with key. */
static void put_derive(const char *name, const char *body,
                       const beacon_key_t *key)
{
    size_t len;
    char *dg = sign(key, body, strlen(body), &len);

    put("fuzz_derive", "ring", name, dg, len);
    free(dg);
}

/* body signed with the member key master derives for svc and url (NULL:
 * none). */
static void put_member(const char *name, const char *body,
                       const beacon_key_t *master, const char *svc,
                       const char *url)
{
    beacon_key_t member;

    if (beacon_member_key_derive(master, svc, svc ? strlen(svc) : 0, url,
                                 url ? strlen(url) : 0, &member) != 0) {
        exit(1);
    }
    put_derive(name, body, &member);
}

static void gen_derive(void)
{
    static const char *const cols[] = {"master", "service", "url", "key",
                                       "datagram", "name", NULL};
    vec_table_t t = load("member-keys.txt", cols);
    beacon_key_t a = spec_hex_key();
    beacon_key_t b = derive_key("hex:0f1e2d3c4b5a69788796a5b4c3d2e1f0");
    beacon_key_t c = derive_key("hex:c0c1c2c3c4c5c6c7c8c9cacbcccdcecf");
    beacon_key_t p = derive_key("hex:ffeeddccbbaa99887766554433221100");
    beacon_key_t l = derive_key("hex:a1a2a3a4a5a6a7a8a9aaabacadaeafb0");
    size_t i;

    for (i = 0; i < t.nrows; i++) {
        put("fuzz_derive", "vector", t.rows[i].col[5].text,
            t.rows[i].col[4].text, t.rows[i].col[4].len);
    }
    vec_free(&t);
    put_member("default master a",
               "BEACON url=http://10.0.0.5:8080 host=web-1 ts=" TS, &a, NULL,
               "http://10.0.0.5:8080");
    put_member("shop master b leaving",
               "BEACON url=http://[2001:db8::5]:8080 ts=" TS
               " svc=shop state=leaving", &b, "shop",
               "http://[2001:db8::5]:8080");
    put_member("cart without keys of its own",
               "BEACON url=https://app.example.com ts=" TS " svc=cart ctx=/shop",
               &a, "cart", "https://app.example.com");
    put_member("api master c", "BEACON url=ajp://10.0.0.7 ts=" TS " svc=api",
               &c, "api", "ajp://10.0.0.7");
    put_derive("legacy plain key any url",
               "BEACON url=HTTP://10.0.0.5:80/ ts=" TS " svc=legacy", &l);
    put_derive("shop plain key heartbeat", "BEACON host=web-1 ts=" TS " svc=shop",
               &p);
    put_member("revoked in every set",
               "BEACON url=http://10.0.0.9:8080 ts=" TS " svc=api", &c, "api",
               "http://10.0.0.9:8080");
    put_derive("revoked in shop in another spelling",
               "BEACON url=HTTP://10.0.0.6:8080/ ts=" TS " svc=shop", &p);
    put_member("not canonical default port",
               "BEACON url=http://10.0.0.5:80 ts=" TS, &a, NULL,
               "http://10.0.0.5:80");
    put_member("a second url after the first",
               "BEACON url=http://10.0.0.5:8080 ts=" TS " svc=shop"
               " url=http://10.0.0.8:8080", &a, "shop", "http://10.0.0.5:8080");
    put_member("a second svc before the first url",
               "BEACON svc=cart url=http://10.0.0.5:8080 ts=" TS " svc=shop",
               &a, "cart", "http://10.0.0.5:8080");
    put_member("svc of no service", "BEACON url=http://10.0.0.5:8080 ts=" TS
               " svc=nosuch", &a, "nosuch", "http://10.0.0.5:8080");
    put_member("leaving for another member",
               "BEACON url=http://10.0.0.8:8080 ts=" TS " state=leaving", &a,
               NULL, "http://10.0.0.5:8080");
    put_member("heartbeat under a master", "BEACON host=web-1 ts=" TS, &a, NULL,
               NULL);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s VECTORS_DIR CORPUS_DIR\n", argv[0]);
        return 2;
    }
    vectors_dir = argv[1];
    out_root = argv[2];
    gen_verify();
    gen_urls();
    gen_url_cuts();
    gen_secrets();
    gen_secret_files();
    gen_hosts();
    gen_services();
    gen_endpoints();
    gen_allow();
    gen_routes();
    gen_reach();
    gen_derive();
    return 0;
}
