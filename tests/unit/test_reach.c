/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * Reach (beacon_reach_t): the entries a list takes and the ones it
 * refuses, what each allows of a canonical url (networks, mapped IPv4,
 * names, *.suffix, "source"), the defaults every list keeps (link-local,
 * unspecified, multicast, broadcast, in every spelling inet_aton reads),
 * the gate of a receiver and a balancer, beacon_receive_any dropping a
 * refused url before the table, and the text a list is written back as.
 * No address here is ever connected to: urls are only checked.
 */
#include "test_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define N ((apr_time_t)APR_INT64_C(1796000000000000))
#define SEC ((apr_interval_time_t)APR_USEC_PER_SEC)

static const char *add(beacon_reach_t *reach, const char *entry)
{
    return beacon_reach_add(reach, entry, strlen(entry));
}

/* The list of one ","-separated text, which must be accepted. */
static beacon_reach_t parsed(const char *list)
{
    beacon_reach_t reach;
    const char *err;

    beacon_reach_init(&reach);
    err = beacon_reach_add_list(&reach, list, strlen(list), NULL);
    if (err != NULL) {
        fail_msg("\"%s\" refused: %s", list, err);
    }
    return reach;
}

/* The one entry of text, which must be accepted. */
static beacon_reach_entry_t entry_of(const char *text)
{
    beacon_reach_t reach = parsed(text);

    assert_int_equal(reach.n, 1);
    return reach.entry[0];
}

/* The canonical form of url, which must be accepted. */
static const char *canonical(const char *url, char out[BEACON_URL_MAX])
{
    const char *err = beacon_url_canonicalize(url, strlen(url), out,
                                              BEACON_URL_MAX);

    if (err != NULL) {
        fail_msg("url %s refused: %s", url, err);
    }
    return out;
}

/* beacon_reach_refusal of url, canonicalized first. */
static const char *refusal(const beacon_reach_t *reach, const char *url,
                           const struct sockaddr *source)
{
    char canon[BEACON_URL_MAX];

    return beacon_reach_refusal(reach, canonical(url, canon), source);
}

#define assert_allowed(reach, url, source)                                    \
    do {                                                                      \
        const char *why_ = refusal((reach), (url), (source));                 \
        if (why_ != NULL) {                                                   \
            fail_msg("%s refused: %s", (url), why_);                          \
        }                                                                     \
    } while (0)

/* Refused, with a message holding says. */
#define assert_refused(reach, url, source, says)                              \
    do {                                                                      \
        const char *why_ = refusal((reach), (url), (source));                 \
        if (why_ == NULL) {                                                   \
            fail_msg("%s allowed, want refused (%s)", (url), (says));         \
        }                                                                     \
        if (strstr(why_, (says)) == NULL) {                                   \
            fail_msg("%s: \"%s\" does not say \"%s\"", (url), why_, (says));  \
        }                                                                     \
    } while (0)

static struct sockaddr_in source4(const char *addr)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(5555);
    assert_int_equal(inet_pton(AF_INET, addr, &sin.sin_addr), 1);
    return sin;
}

static struct sockaddr_in6 source6(const char *addr)
{
    struct sockaddr_in6 sin6;

    memset(&sin6, 0, sizeof sin6);
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(5555);
    assert_int_equal(inet_pton(AF_INET6, addr, &sin6.sin6_addr), 1);
    return sin6;
}

static void assert_same_entries(const beacon_reach_t *a,
                                const beacon_reach_t *b)
{
    unsigned i;

    assert_int_equal(a->n, b->n);
    for (i = 0; i < a->n; i++) {
        const beacon_reach_entry_t *x = &a->entry[i], *y = &b->entry[i];

        assert_int_equal(x->kind, y->kind);
        if (x->kind == BEACON_REACH_NETWORK) {
            assert_int_equal(x->ipv4, y->ipv4);
            assert_int_equal(x->prefix, y->prefix);
            assert_memory_equal(x->addr, y->addr, 16);
        }
        else {
            assert_int_equal(x->len, y->len);
            assert_string_equal(x->name, y->name);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Entries                                                             */

static void networks_and_addresses_are_held_as_16_bytes(void **state)
{
    static const unsigned char v4net[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                            0, 0, 0xff, 0xff, 10, 0, 0, 0};
    static const unsigned char v4one[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                            0, 0, 0xff, 0xff, 10, 1, 2, 3};
    static const unsigned char fd00[16] = {0xfd};
    static const unsigned char one6[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                           0, 0, 0, 0, 0, 0, 0, 1};
    beacon_reach_entry_t e;

    (void)state;
    e = entry_of("10.0.0.0/8");
    assert_int_equal(e.kind, BEACON_REACH_NETWORK);
    assert_true(e.ipv4);
    assert_int_equal(e.prefix, 96 + 8);
    assert_memory_equal(e.addr, v4net, 16);

    e = entry_of("10.1.2.3"); /* one address: /32 */
    assert_int_equal(e.kind, BEACON_REACH_NETWORK);
    assert_true(e.ipv4);
    assert_int_equal(e.prefix, 128);
    assert_memory_equal(e.addr, v4one, 16);

    e = entry_of("fd00::/8");
    assert_int_equal(e.kind, BEACON_REACH_NETWORK);
    assert_false(e.ipv4);
    assert_int_equal(e.prefix, 8);
    assert_memory_equal(e.addr, fd00, 16);

    e = entry_of("::1");
    assert_false(e.ipv4);
    assert_int_equal(e.prefix, 128);
    assert_memory_equal(e.addr, one6, 16);

    /* a mapped network is its IPv4 network, and is the same entry */
    e = entry_of("::ffff:10.0.0.0/104");
    assert_true(e.ipv4);
    assert_int_equal(e.prefix, 104);
    assert_memory_equal(e.addr, v4net, 16);
    assert_int_equal(parsed("10.0.0.0/8,::ffff:10.0.0.0/104").n, 1);
    e = entry_of("::ffff:a01:203");
    assert_true(e.ipv4);
    assert_memory_equal(e.addr, v4one, 16);
    /* wider than the mapped range: an IPv6 network */
    e = entry_of("::/80");
    assert_false(e.ipv4);
    assert_int_equal(e.prefix, 80);
    e = entry_of("::ffff:0:0/96"); /* the whole mapped range: 0.0.0.0/0 */
    assert_true(e.ipv4);
    assert_int_equal(e.prefix, 96);
}

static void prefix_lengths_are_bounded_and_decimal(void **state)
{
    static const struct {
        const char *entry;
        unsigned prefix; /* 0: refused */
    } rows[] = {
        {"0.0.0.0/0", 96},       {"10.0.0.0/32", 128},  {"10.0.0.0/8", 104},
        {"10.0.0.0/08", 104},    {"10.0.0.0/33", 0},    {"10.0.0.0/320", 0},
        {"10.0.0.0/", 0},        {"10.0.0.0/x", 0},     {"10.0.0.0/0x8", 0},
        {"10.0.0.0/-8", 0},      {"10.0.0.0/+8", 0},    {"10.0.0.0/ 8", 0},
        {"10.0.0.0/8/8", 0},     {"10.0.0.0/0008", 0},  {"::/0", 0 + 1000},
        {"::1/128", 128},        {"::/128", 128},       {"::/129", 0},
        {"fd00::/1000", 0},      {"fd00::/", 0},        {"fd00::/8a", 0},
        {"/8", 0},               {"::/", 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        beacon_reach_t reach;
        const char *err;

        beacon_reach_init(&reach);
        err = add(&reach, rows[i].entry);
        if (rows[i].prefix == 0) {
            if (err == NULL) {
                fail_msg("%s accepted", rows[i].entry);
            }
            assert_int_equal(reach.n, 0);
            continue;
        }
        if (err != NULL) {
            fail_msg("%s refused: %s", rows[i].entry, err);
        }
        assert_int_equal(reach.n, 1);
        assert_int_equal(reach.entry[0].prefix, rows[i].prefix % 1000);
    }
    /* the messages name the bound */
    {
        beacon_reach_t reach;

        beacon_reach_init(&reach);
        assert_non_null(strstr(add(&reach, "10.0.0.0/33"), "32"));
        assert_non_null(strstr(add(&reach, "::/129"), "128"));
        assert_non_null(strstr(add(&reach, "10.0.0.0/x"), "decimal"));
    }
}

static void every_bad_entry_is_refused_with_its_reason(void **state)
{
    static const struct {
        const char *entry;
        const char *says; /* a word the message must hold */
    } rows[] = {
        {"", "empty"},
        /* bits past the prefix */
        {"10.1.0.0/8", "bits"},
        {"10.0.0.1/31", "bits"},
        {"0.0.0.1/0", "bits"},
        {"fd00::1/8", "bits"},
        {"::1/127", "bits"},
        {"fe80::/8", "bits"},
        {"::ffff:0:0/80", "bits"},
        /* brackets */
        {"[::1]", "brackets"},
        {"[fd00::]/8", "brackets"},
        /* IPv4 as four decimal numbers, nothing else */
        {"10.1", "four decimal"},
        {"10.1/16", "four decimal"},
        {"0x7f.0.0.1", "four decimal"},
        {"0x7f000001", "four decimal"},
        {"2130706433", "four decimal"},
        {"10.0.0.256", "four decimal"},
        {"10.0.0.01", "four decimal"},
        {"010.0.0.1", "four decimal"},
        {"10.0.0.0.0", "four decimal"},
        {"10..0.0", "four decimal"},
        {"10.0.0.", "four decimal"},
        {"1.2.3.4.", "four decimal"},
        {"127.1", "four decimal"},
        {"0251.0376.0251.0376", "four decimal"},
        {"0x0.", "four decimal"}, /* the root dot is no name's */
        {"0x7f.1.", "four decimal"},
        {"2852039166.", "four decimal"},
        /* IPv6 */
        {"fd00:::1", "IPv6"},
        {"fe80::1%eth0", "IPv6"},
        {"1:2:3:4:5:6:7:8:9", "IPv6"},
        {"::g", "IPv6"},
        /* wildcards */
        {"*", "*."},
        {"*.", "*."},
        {"*..", "*."},
        {"a.*.b", "*."},
        {"**.x", "*."},
        {"*x.y", "*."},
        {"*.x*", "*."},
        {"*.x.*", "*."},
        {"x*", "*."},
        {"*.a..b", "*."},
        {"*.-/", "*."},
        /* not a host name */
        {"a..b", "host name"},
        {".a", "host name"},
        {"a b", "host name"},
        {"a:b", "IPv6"}, /* any ":" is read as an address */
        {"a@b", "host name"},
        {"a.b..", "host name"},
        {".", "IPv4"}, /* digits and dots: read as an address */
        {"sources ", "host name"},
        {"bad\001", "host name"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        beacon_reach_t reach;
        const char *err;

        beacon_reach_init(&reach);
        assert_null(add(&reach, "kept.example"));
        err = add(&reach, rows[i].entry);
        if (err == NULL) {
            fail_msg("\"%s\" accepted", rows[i].entry);
        }
        if (strstr(err, rows[i].says) == NULL) {
            fail_msg("\"%s\": \"%s\" does not say \"%s\"", rows[i].entry, err,
                     rows[i].says);
        }
        assert_int_equal(reach.n, 1); /* unchanged */
        assert_string_equal(reach.entry[0].name, "kept.example");
    }
}

/* An entry is entry[0..len): a NUL inside is a byte no entry holds, not
 * its end. */
static void an_entry_with_a_nul_is_refused(void **state)
{
    static const struct {
        const char *entry;
        size_t len;
    } rows[] = {
        {"::1\0junk", 8},        {"10.0.0.1\0x", 10}, {"fd00::/8\0", 9},
        {"10.0.0.0/8\0/9", 13}, {"a.example\0", 10}, {"*.a\0b", 5},
        {"source\0", 7},        {"\0", 1},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        beacon_reach_t reach;

        beacon_reach_init(&reach);
        if (beacon_reach_add(&reach, rows[i].entry, rows[i].len) == NULL) {
            fail_msg("row %zu (\"%s\" and a NUL) accepted", i, rows[i].entry);
        }
        assert_int_equal(reach.n, 0);
    }
}

static void names_suffixes_and_source_are_read_as_written(void **state)
{
    beacon_reach_entry_t e;
    char big[BEACON_REACH_NAME_MAX + 3];
    beacon_reach_t reach;

    (void)state;
    e = entry_of("API.Internal");
    assert_int_equal(e.kind, BEACON_REACH_NAME);
    assert_string_equal(e.name, "api.internal");
    assert_int_equal(e.len, 12);
    e = entry_of("api.internal."); /* one root dot dropped */
    assert_int_equal(e.kind, BEACON_REACH_NAME);
    assert_string_equal(e.name, "api.internal");
    e = entry_of("a_b~c-d");
    assert_string_equal(e.name, "a_b~c-d");
    e = entry_of("1e1"); /* not an address in any form: a name */
    assert_int_equal(e.kind, BEACON_REACH_NAME);

    e = entry_of("*.SVC.cluster.local");
    assert_int_equal(e.kind, BEACON_REACH_SUFFIX);
    assert_string_equal(e.name, ".svc.cluster.local");
    assert_int_equal(e.len, 18);
    e = entry_of("*.x.");
    assert_int_equal(e.kind, BEACON_REACH_SUFFIX);
    assert_string_equal(e.name, ".x");
    e = entry_of("*.1.2"); /* a suffix of digits: still only names */
    assert_int_equal(e.kind, BEACON_REACH_SUFFIX);

    e = entry_of("source");
    assert_int_equal(e.kind, BEACON_REACH_SOURCE);
    assert_int_equal(entry_of("SOURCE").kind, BEACON_REACH_SOURCE);
    assert_int_equal(entry_of("SoUrCe").kind, BEACON_REACH_SOURCE);
    assert_int_equal(entry_of("sources").kind, BEACON_REACH_NAME);
    e = entry_of("Source."); /* the host named source */
    assert_int_equal(e.kind, BEACON_REACH_NAME);
    assert_string_equal(e.name, "source");
    assert_int_equal(parsed("source,Source,SOURCE").n, 1);

    /* the longest name, and one byte more */
    memset(big, 'a', sizeof big);
    for (size_t i = 63; i < BEACON_REACH_NAME_MAX; i += 64) {
        big[i] = '.';
    }
    beacon_reach_init(&reach);
    assert_null(beacon_reach_add(&reach, big, BEACON_REACH_NAME_MAX));
    assert_int_equal(reach.entry[0].len, BEACON_REACH_NAME_MAX);
    assert_non_null(beacon_reach_add(&reach, big, BEACON_REACH_NAME_MAX + 1));
    big[BEACON_REACH_NAME_MAX] = '.'; /* the root dot does not count */
    assert_null(beacon_reach_add(&reach, big, BEACON_REACH_NAME_MAX + 1));
    assert_int_equal(reach.n, 1);
}

static void duplicates_count_once_and_the_65th_entry_is_refused(void **state)
{
    beacon_reach_t reach, before;
    char entry[32];
    unsigned i;

    (void)state;
    beacon_reach_init(&reach);
    assert_null(add(&reach, "10.0.0.0/8"));
    assert_null(add(&reach, "10.0.0.0/8"));
    assert_null(add(&reach, "::ffff:10.0.0.0/104"));
    assert_null(add(&reach, "a.example"));
    assert_null(add(&reach, "A.Example."));
    assert_null(add(&reach, "*.a.example"));
    assert_null(add(&reach, "source"));
    assert_null(add(&reach, "Source"));
    assert_int_equal(reach.n, 4);
    /* a name and a suffix of the same text are two entries */
    assert_int_equal(reach.entry[1].kind, BEACON_REACH_NAME);
    assert_int_equal(reach.entry[2].kind, BEACON_REACH_SUFFIX);
    /* a network and the one address are two entries */
    assert_null(add(&reach, "10.0.0.0"));
    assert_int_equal(reach.n, 5);

    beacon_reach_init(&reach);
    for (i = 0; i < BEACON_REACH_MAX_ENTRIES; i++) {
        snprintf(entry, sizeof entry, "h%u.example", i);
        assert_null(add(&reach, entry));
    }
    assert_int_equal(reach.n, BEACON_REACH_MAX_ENTRIES);
    before = reach;
    assert_non_null(strstr(add(&reach, "h64.example"), "64"));
    assert_non_null(add(&reach, "10.0.0.0/8"));
    assert_non_null(add(&reach, "source"));
    assert_int_equal(reach.n, BEACON_REACH_MAX_ENTRIES);
    assert_memory_equal(&reach, &before, sizeof reach);
    /* a repeat of an entry already held is no 65th */
    assert_null(add(&reach, "h0.example"));
    assert_null(add(&reach, "H63.EXAMPLE."));
    assert_int_equal(reach.n, BEACON_REACH_MAX_ENTRIES);
}

static void a_bad_list_leaves_the_list_as_it_was(void **state)
{
    static const struct {
        const char *list;
        size_t bad_at, bad_len;
    } rows[] = {
        {"10.0.0.0/8,10.1,b.example", 11, 4},
        {"a.example,*x.y,b.example", 10, 4},
        {"a.example,,b.example", 10, 0},
        {"a.example,", 10, 0},
        {",a.example", 0, 0},
        {"", 0, 0},
        {"source,[::1]", 7, 5},
        {"x.example,y.example, z.example", 20, 10},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        beacon_reach_t reach, before;
        beacon_span_t bad = {NULL, 0};
        const char *list = rows[i].list, *err;

        beacon_reach_init(&reach);
        assert_null(add(&reach, "kept.example"));
        assert_null(add(&reach, "fd00::/8"));
        before = reach;
        err = beacon_reach_add_list(&reach, list, strlen(list), &bad);
        if (err == NULL) {
            fail_msg("\"%s\" accepted", list);
        }
        assert_true(bad.ptr == list + rows[i].bad_at);
        assert_int_equal(bad.len, rows[i].bad_len);
        assert_int_equal(reach.n, before.n);
        assert_memory_equal(reach.entry, before.entry,
                            before.n * sizeof(before.entry[0]));
        /* and without a span to fill */
        assert_non_null(beacon_reach_add_list(&reach, list, strlen(list), NULL));
        assert_int_equal(reach.n, before.n);
    }

    /* a good list adds to what is held, repeats once */
    {
        beacon_reach_t reach = parsed("kept.example");
        beacon_span_t bad = {NULL, 0};

        assert_null(beacon_reach_add_list(&reach, "a.example,kept.example,source",
                                          29, &bad));
        assert_int_equal(reach.n, 3);
        assert_null(bad.ptr);
    }
    /* entries past the 64th, in one list: the list is as before */
    {
        char list[64 * 8];
        size_t off = 0;
        beacon_reach_t reach = parsed("kept.example");
        beacon_span_t bad;
        unsigned i2;

        for (i2 = 0; i2 < BEACON_REACH_MAX_ENTRIES; i2++) {
            off += (size_t)snprintf(list + off, sizeof list - off, "%sh%u",
                                    i2 ? "," : "", i2);
        }
        assert_non_null(beacon_reach_add_list(&reach, list, off, &bad));
        assert_int_equal(reach.n, 1);
        assert_int_equal(bad.len, 3);
        assert_memory_equal(bad.ptr, "h63", 3);
    }
}

/* ------------------------------------------------------------------ */
/* The defaults                                                        */

static void the_defaults_refuse_what_no_backend_is(void **state)
{
    static const struct {
        const char *url;
        const char *says;
    } refused[] = {
        {"http://169.254.169.254", "link-local"},
        {"http://169.254.0.0", "link-local"},
        {"http://169.254.255.255:8080", "link-local"},
        {"http://[fe80::1]", "link-local"},
        {"http://[febf:ffff::1]", "link-local"},
        {"http://0.0.0.0:8080", "unspecified"},
        {"http://[::]", "unspecified"},
        {"http://[::]:80", "unspecified"},
        {"http://224.0.0.1", "multicast"},
        {"http://239.255.255.250", "multicast"},
        {"http://[ff02::1]", "multicast"},
        {"http://[ff00::]", "multicast"},
        {"http://255.255.255.255", "broadcast"},
        {"http://[::ffff:169.254.169.254]", "link-local"},
        {"http://[::ffff:a9fe:a9fe]", "link-local"},
        {"http://[::ffff:0.0.0.0]", "unspecified"},
        {"http://[::ffff:224.0.0.1]", "multicast"},
        {"http://[::ffff:255.255.255.255]", "broadcast"},
        {"https://169.254.169.254", "link-local"},
        {"ajp://[fe80::1]:8009", "link-local"},
    };
    static const char *const allowed[] = {
        "http://127.0.0.1",
        "http://127.0.0.1:8080",
        "http://[::1]",
        "http://[::1]:8080",
        "http://10.1.2.3",
        "http://169.253.255.255",
        "http://169.255.0.0",
        "http://223.255.255.255",
        "http://240.0.0.0",
        "http://255.255.255.254",
        "http://0.0.0.1",
        "http://[fec0::1]",
        "http://[fe7f::1]",
        "http://[::2]",
        "http://[fd00::1]",
        "http://[::ffff:10.0.0.1]",
        "http://backend.example",
        "http://localhost:8080",
        "http://metadata.google.internal",
        "http://0x",   /* no address in glibc's reading: a name */
        "http://0x.1", /* nor this */
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(refused); i++) {
        assert_refused(NULL, refused[i].url, NULL, refused[i].says);
        assert_refused(NULL, refused[i].url, NULL, "refused by default");
    }
    for (i = 0; i < ARRAY_LEN(allowed); i++) {
        assert_allowed(NULL, allowed[i], NULL);
    }
    /* a url that is not canonical is no url to allow */
    assert_non_null(beacon_reach_refusal(NULL, "backend.example", NULL));
    assert_non_null(beacon_reach_refusal(NULL, "http://", NULL));
    assert_non_null(beacon_reach_refusal(NULL, "http://[zz]", NULL));
}

/* Every spelling inet_aton (so getaddrinfo, without DNS) reads as an
 * address is that address. */
static void every_spelling_of_an_address_is_that_address(void **state)
{
    static const char *const link_local[] = {
        "http://2852039166",           "http://0xa9fea9fe",
        "http://0XA9FEA9FE",           "http://025177524776",
        "http://0xa9.0xfe.0xa9.0xfe",  "http://0251.0376.0251.0376",
        "http://169.254.43518",        "http://169.16689662",
        "http://0xa9.16689662",        "http://169.254.169.254.",
        "http://2852039166.",          "http://0xa9.0376.169.0xFE",
        "http://00000251.254.169.254", "http://0x00000a9.254.169.254:80",
        "http://169.254.0xa9fe",
    };
    static const char *const unspecified[] = {
        "http://0", "http://00", "http://0x0", "http://0.0", "http://0.0.0",
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(link_local); i++) {
        struct in_addr a;
        char canon[BEACON_URL_MAX], host[64];
        const char *h = canonical(link_local[i], canon) + 7;

        /* the reference: glibc reads the host so */
        snprintf(host, sizeof host, "%.*s", (int)strcspn(h, ":"), h);
        if (host[strlen(host) - 1] == '.') {
            host[strlen(host) - 1] = '\0';
        }
        assert_int_equal(inet_aton(host, &a), 1);
        assert_int_equal((ntohl(a.s_addr) >> 16), 0xa9fe);
        assert_refused(NULL, link_local[i], NULL, "link-local");
    }
    for (i = 0; i < ARRAY_LEN(unspecified); i++) {
        assert_refused(NULL, unspecified[i], NULL, "unspecified");
    }
    assert_refused(NULL, "http://4294967295", NULL, "broadcast");
    assert_refused(NULL, "http://0xe0000001", NULL, "multicast");
    /* past what inet_aton reads: names, which the defaults allow */
    assert_allowed(NULL, "http://4294967296", NULL);
    assert_allowed(NULL, "http://169.254.65536", NULL);
    assert_allowed(NULL, "http://169.254.169.256", NULL);
    assert_allowed(NULL, "http://169.254.169.254.1", NULL);
    assert_allowed(NULL, "http://0251.0376.0251.0378", NULL); /* 8: no octal */
    assert_allowed(NULL, "http://0xa9.0xfe.0xa9.0xfg", NULL);
    assert_allowed(NULL, "http://169..254.169", NULL);

    /* a list sees the same: an address is never a name */
    {
        beacon_reach_t names = parsed("*.254,*.example,localhost");
        beacon_reach_t nets = parsed("127.0.0.0/8");

        /* 169.0.0.254 */
        assert_refused(&names, "http://169.254", NULL, "no entry allows it");
        assert_refused(&names, "http://1.254", NULL, "no entry allows it");
        assert_allowed(&names, "http://a.254", NULL);
        assert_allowed(&nets, "http://127.1", NULL);
        assert_allowed(&nets, "http://2130706433", NULL);
        assert_allowed(&nets, "http://0x7f.0.0.1", NULL);
        assert_allowed(&nets, "http://0177.1", NULL);
        assert_refused(&nets, "http://128.1", NULL, "no entry allows it");
    }
}

/* ------------------------------------------------------------------ */
/* Networks                                                            */

static void networks_allow_the_addresses_inside(void **state)
{
    beacon_reach_t reach = parsed("10.0.0.0/8,192.168.1.7,fd00::/8,::1");

    (void)state;
    assert_allowed(&reach, "http://10.0.0.0", NULL);
    assert_allowed(&reach, "http://10.255.255.255:8080", NULL);
    assert_allowed(&reach, "http://192.168.1.7", NULL);
    assert_allowed(&reach, "http://[fd00::1]", NULL);
    assert_allowed(&reach, "http://[fdff:ffff::ffff]", NULL);
    assert_allowed(&reach, "http://[::1]:8080", NULL);
    assert_refused(&reach, "http://11.0.0.0", NULL, "no entry allows it");
    assert_refused(&reach, "http://9.255.255.255", NULL, "no entry allows it");
    assert_refused(&reach, "http://192.168.1.8", NULL, "no entry allows it");
    assert_refused(&reach, "http://[fe00::1]", NULL, "no entry allows it");
    assert_refused(&reach, "http://[::2]", NULL, "no entry allows it");
    assert_refused(&reach, "http://127.0.0.1", NULL, "no entry allows it");
    assert_string_equal(refusal(&reach, "http://127.0.0.1", NULL),
                        "no entry allows it");

    /* an odd prefix cuts inside a byte */
    reach = parsed("10.0.0.0/9,fd80::/9");
    assert_allowed(&reach, "http://10.127.255.255", NULL);
    assert_refused(&reach, "http://10.128.0.0", NULL, "no entry");
    assert_allowed(&reach, "http://[fdff::1]", NULL);
    assert_refused(&reach, "http://[fd7f::1]", NULL, "no entry");

    /* an empty list allows nothing */
    beacon_reach_init(&reach);
    assert_refused(&reach, "http://127.0.0.1", NULL, "no entry allows it");
    assert_refused(&reach, "http://a.example", NULL, "no entry allows it");
    assert_refused(&reach, "http://169.254.169.254", NULL, "link-local");
}

static void a_mapped_address_is_its_ipv4_address(void **state)
{
    beacon_reach_t v4 = parsed("10.0.0.0/8");
    beacon_reach_t mapped = parsed("::ffff:10.0.0.0/104");
    beacon_reach_t one = parsed("::ffff:10.1.2.3");
    beacon_reach_t all6 = parsed("::/0");
    beacon_reach_t all4 = parsed("0.0.0.0/0");
    beacon_reach_t wide = parsed("::/80");

    (void)state;
    assert_allowed(&v4, "http://[::ffff:10.1.2.3]", NULL);
    assert_allowed(&v4, "http://[::ffff:a01:203]", NULL);
    assert_refused(&v4, "http://[::ffff:11.1.2.3]", NULL, "no entry");
    assert_allowed(&mapped, "http://10.1.2.3", NULL);
    assert_allowed(&mapped, "http://[::ffff:10.1.2.3]", NULL);
    assert_refused(&mapped, "http://11.1.2.3", NULL, "no entry");
    assert_allowed(&one, "http://10.1.2.3", NULL);
    assert_allowed(&one, "http://167838211", NULL);
    assert_refused(&one, "http://10.1.2.4", NULL, "no entry");

    /* ::/0 is IPv6: IPv4 addresses are not in it, mapped or not */
    assert_allowed(&all6, "http://[::1]", NULL);
    assert_allowed(&all6, "http://[2001:db8::1]", NULL);
    assert_refused(&all6, "http://10.1.2.3", NULL, "no entry");
    assert_refused(&all6, "http://[::ffff:10.1.2.3]", NULL, "no entry");
    assert_refused(&wide, "http://10.1.2.3", NULL, "no entry");
    /* and 0.0.0.0/0 is IPv4 */
    assert_allowed(&all4, "http://10.1.2.3", NULL);
    assert_allowed(&all4, "http://[::ffff:10.1.2.3]", NULL);
    assert_refused(&all4, "http://[::1]", NULL, "no entry");
    assert_refused(&all4, "http://[::a01:203]", NULL, "no entry");
}

static void only_an_entry_inside_a_default_range_opens_it(void **state)
{
    beacon_reach_t all = parsed("0.0.0.0/0,::/0,source");
    beacon_reach_t wide = parsed("169.0.0.0/8,fe00::/7,224.0.0.0/3");
    beacon_reach_t one = parsed("169.254.169.254");
    beacon_reach_t range = parsed("169.254.0.0/16,fe80::/10");
    beacon_reach_t inside = parsed("169.254.1.0/24,fe80::/64");
    beacon_reach_t exact = parsed("0.0.0.0,::,255.255.255.255,ff02::1,"
                                  "224.0.0.0/4");
    struct sockaddr_in src = source4("169.254.169.254");

    (void)state;
    assert_refused(&all, "http://169.254.169.254", NULL, "link-local");
    assert_refused(&all, "http://[fe80::1]", NULL, "link-local");
    assert_refused(&all, "http://0.0.0.0", NULL, "unspecified");
    assert_refused(&all, "http://[::]", NULL, "unspecified");
    assert_refused(&all, "http://224.0.0.1", NULL, "multicast");
    assert_refused(&all, "http://[ff02::1]", NULL, "multicast");
    assert_refused(&all, "http://255.255.255.255", NULL, "broadcast");
    assert_refused(&all, "http://[::ffff:169.254.169.254]", NULL, "link-local");
    /* even from that very source */
    assert_refused(&all, "http://169.254.169.254", (struct sockaddr *)&src,
                   "link-local");
    assert_allowed(&all, "http://10.0.0.1", NULL);
    assert_allowed(&all, "http://[::1]", NULL);

    assert_refused(&wide, "http://169.254.169.254", NULL, "link-local");
    assert_refused(&wide, "http://[fe80::1]", NULL, "link-local");
    assert_refused(&wide, "http://224.0.0.1", NULL, "multicast");
    assert_allowed(&wide, "http://169.1.1.1", NULL);

    assert_allowed(&one, "http://169.254.169.254", NULL);
    assert_allowed(&one, "http://[::ffff:169.254.169.254]", NULL);
    assert_allowed(&one, "http://2852039166", NULL);
    assert_refused(&one, "http://169.254.169.253", NULL, "link-local");

    assert_allowed(&range, "http://169.254.169.254", NULL);
    assert_allowed(&range, "http://169.254.0.1", NULL);
    assert_allowed(&range, "http://[fe80::1]", NULL);
    assert_refused(&range, "http://169.253.0.1", NULL, "no entry");

    assert_allowed(&inside, "http://169.254.1.9", NULL);
    assert_refused(&inside, "http://169.254.2.9", NULL, "link-local");
    assert_allowed(&inside, "http://[fe80::1]", NULL);
    assert_refused(&inside, "http://[fe80:0:0:1::1]", NULL, "link-local");

    assert_allowed(&exact, "http://0.0.0.0", NULL);
    assert_allowed(&exact, "http://[::]", NULL);
    assert_allowed(&exact, "http://255.255.255.255", NULL);
    assert_allowed(&exact, "http://[ff02::1]", NULL);
    assert_refused(&exact, "http://[ff02::2]", NULL, "multicast");
    assert_allowed(&exact, "http://239.1.1.1", NULL);
}

/* ------------------------------------------------------------------ */
/* source                                                              */

static void source_allows_the_address_the_datagram_came_from(void **state)
{
    beacon_reach_t reach = parsed("source");
    struct sockaddr_in s4 = source4("10.1.2.3");
    struct sockaddr_in6 s6 = source6("fd00::7");
    struct sockaddr_in6 mapped = source6("::ffff:10.1.2.3");
    struct sockaddr_in6 ll = source6("fe80::1");
    struct sockaddr unknown;
    const struct sockaddr *from4 = (const struct sockaddr *)&s4;
    const struct sockaddr *from6 = (const struct sockaddr *)&s6;
    const struct sockaddr *from_mapped = (const struct sockaddr *)&mapped;

    (void)state;
    assert_allowed(&reach, "http://10.1.2.3", from4);
    assert_allowed(&reach, "http://10.1.2.3:8080", from4);
    assert_allowed(&reach, "http://[::ffff:10.1.2.3]", from4);
    assert_allowed(&reach, "http://167838211", from4);
    assert_refused(&reach, "http://10.1.2.4", from4, "no entry allows it");
    assert_refused(&reach, "http://[fd00::7]", from4, "no entry allows it");

    assert_allowed(&reach, "http://[fd00::7]", from6);
    assert_allowed(&reach, "http://[fd00:0::7]:81", from6);
    assert_refused(&reach, "http://[fd00::8]", from6, "no entry allows it");
    assert_refused(&reach, "http://10.1.2.3", from6, "no entry allows it");

    /* a dual-stack socket's IPv4 sender is its IPv4 address */
    assert_allowed(&reach, "http://10.1.2.3", from_mapped);
    assert_allowed(&reach, "http://[::ffff:10.1.2.3]", from_mapped);
    assert_refused(&reach, "http://10.1.2.4", from_mapped, "no entry");

    /* never a name, whatever the source */
    assert_refused(&reach, "http://a.example", from4, "no entry allows it");
    assert_refused(&reach, "http://a.example", NULL, "no entry allows it");

    /* no source to compare: any IP literal, but not the defaults' */
    assert_allowed(&reach, "http://10.9.9.9", NULL);
    assert_allowed(&reach, "http://[2001:db8::1]", NULL);
    assert_allowed(&reach, "http://127.1", NULL);
    assert_refused(&reach, "http://169.254.169.254", NULL, "link-local");
    assert_refused(&reach, "http://[::]", NULL, "unspecified");

    /* a source in a default range opens nothing */
    assert_refused(&reach, "http://[fe80::1]", (struct sockaddr *)&ll,
                   "link-local");

    /* a source of another family compares equal to nothing */
    memset(&unknown, 0, sizeof unknown);
    unknown.sa_family = AF_UNIX;
    assert_refused(&reach, "http://10.1.2.3", &unknown, "no entry allows it");
}

/* ------------------------------------------------------------------ */
/* Names                                                               */

static void names_match_exactly_and_suffixes_below(void **state)
{
    beacon_reach_t reach = parsed("api.internal,*.svc.cluster.local,X.Y.");

    (void)state;
    assert_allowed(&reach, "http://api.internal", NULL);
    assert_allowed(&reach, "http://API.Internal:8080", NULL);
    assert_allowed(&reach, "http://api.internal.", NULL);
    assert_allowed(&reach, "https://api.internal", NULL);
    assert_allowed(&reach, "http://x.y", NULL);
    assert_allowed(&reach, "http://x.Y.", NULL);
    assert_refused(&reach, "http://a.api.internal", NULL, "no entry");
    assert_refused(&reach, "http://api.internal.x", NULL, "no entry");
    assert_refused(&reach, "http://api.interna", NULL, "no entry");
    assert_refused(&reach, "http://pi.internal", NULL, "no entry");
    assert_refused(&reach, "http://xapi.internal", NULL, "no entry");
    assert_refused(&reach, "http://api.internal..", NULL, "no entry");

    assert_allowed(&reach, "http://a.svc.cluster.local", NULL);
    assert_allowed(&reach, "http://a.b.c.d.svc.cluster.local:8443", NULL);
    assert_allowed(&reach, "http://A.SVC.Cluster.Local", NULL);
    assert_allowed(&reach, "http://a.svc.cluster.local.", NULL);
    assert_allowed(&reach, "http://1.svc.cluster.local", NULL);
    assert_refused(&reach, "http://svc.cluster.local", NULL, "no entry");
    assert_refused(&reach, "http://svc.cluster.local.", NULL, "no entry");
    assert_refused(&reach, "http://asvc.cluster.local", NULL, "no entry");
    assert_refused(&reach, "http://a.svc.cluster.localx", NULL, "no entry");
    assert_refused(&reach, "http://a.svc.cluster.loca", NULL, "no entry");
    assert_refused(&reach, "http://cluster.local", NULL, "no entry");
    assert_string_equal(refusal(&reach, "http://b.internal", NULL),
                        "no entry allows it");
}

static void names_and_addresses_never_cross(void **state)
{
    beacon_reach_t names = parsed("localhost,*.1,*.0.1,*.example,1e1");
    beacon_reach_t nets = parsed("0.0.0.0/0,::/0,source");
    struct sockaddr_in s4 = source4("127.0.0.1");

    (void)state;
    /* a name entry allows no address, in any spelling */
    assert_refused(&names, "http://127.0.0.1", NULL, "no entry allows it");
    assert_refused(&names, "http://127.0.1", NULL, "no entry allows it");
    assert_refused(&names, "http://0.0.1", NULL, "no entry allows it");
    assert_refused(&names, "http://0.0", NULL, "unspecified");
    assert_refused(&names, "http://[::1]", NULL, "no entry allows it");
    assert_allowed(&names, "http://a.1", NULL); /* not inet_aton's: a name */
    assert_allowed(&names, "http://x.0.1", NULL);
    assert_allowed(&names, "http://localhost", NULL);
    assert_allowed(&names, "http://1e1", NULL);
    /* a network or source allows no name */
    assert_refused(&nets, "http://localhost", NULL, "no entry allows it");
    assert_refused(&nets, "http://localhost", (struct sockaddr *)&s4,
                   "no entry allows it");
    assert_refused(&nets, "http://a.example", NULL, "no entry allows it");
    assert_refused(&nets, "http://1e1", NULL, "no entry allows it");
    assert_allowed(&nets, "http://127.0.0.1", (struct sockaddr *)&s4);
}

/* A reserved slot's name (http://slot-K.beacon.invalid, a placeholder
 * member) in no spelling is a url any list allows: a member named so
 * would look like a free reserved slot (issue 32, defect 7). */
static void a_reserved_slots_name_is_refused_in_every_spelling(void **state)
{
    static const char *const spellings[] = {
        "http://slot-3.beacon.invalid",   "http://slot-3.beacon.invalid.",
        "http://slot-3.beacon.invalid..", "HTTP://SLOT-3.BEACON.INVALID",
        "http://Slot-3.Beacon.Invalid.:80", "https://slot-7.beacon.invalid:8443",
        "http://anything.beacon.invalid/", "http://a.b.beacon.invalid",
        "ajp://beacon.invalid.",          "http://beacon.invalid",
    };
    beacon_reach_t wide = parsed("*.invalid,*.beacon.invalid,beacon.invalid,"
                                 "slot-3.beacon.invalid,0.0.0.0/0,source");
    beacon_reach_gate_t gate = {&wide, &wide, NULL};
    char canon[BEACON_URL_MAX];
    size_t i;
    int by;

    (void)state;
    for (i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
        assert_refused(NULL, spellings[i], NULL, "reserved slot");
        assert_refused(&wide, spellings[i], NULL, "reserved slot");
        /* no list refused it, nor can any allow it */
        by = 1;
        assert_non_null(strstr(beacon_reach_gate_refusal(
                                   &gate, canonical(spellings[i], canon), &by),
                               "reserved slot"));
        assert_int_equal(by, -1);
        by = 1;
        assert_non_null(beacon_reach_gate_refusal(
            NULL, canonical(spellings[i], canon), &by));
        assert_int_equal(by, -1);
    }
    /* names that only look alike */
    assert_allowed(NULL, "http://notbeacon.invalid", NULL);
    assert_allowed(NULL, "http://slot-3.beacon.invalid.example", NULL);
    assert_allowed(NULL, "http://beacon.invalidx", NULL);
    assert_allowed(NULL, "http://slot-3.beacon", NULL);
    assert_allowed(&wide, "http://x.invalid", NULL);
}

/* ------------------------------------------------------------------ */
/* The gate                                                            */

static void both_lists_of_a_gate_must_allow(void **state)
{
    beacon_reach_t receiver = parsed("10.0.0.0/8,*.example,169.254.169.254");
    beacon_reach_t balancer = parsed("10.1.0.0/16,a.example");
    beacon_reach_t from_source = parsed("10.1.0.0/16,source");
    struct sockaddr_in s4 = source4("10.2.0.1");
    beacon_reach_gate_t gate = {&receiver, &balancer, NULL};
    char canon[BEACON_URL_MAX];
    int by = -1;

    (void)state;
    assert_null(beacon_reach_gate_refusal(
        &gate, canonical("http://10.1.2.3", canon), &by));
    assert_int_equal(by, 0);
    assert_null(beacon_reach_gate_refusal(
        &gate, canonical("http://a.example", canon), &by));
    assert_int_equal(by, 0);
    /* the balancer narrows */
    assert_string_equal(beacon_reach_gate_refusal(
                            &gate, canonical("http://10.3.0.1", canon), &by),
                        "no entry allows it");
    assert_int_equal(by, 1);
    assert_non_null(beacon_reach_gate_refusal(
        &gate, canonical("http://b.example", canon), &by));
    assert_int_equal(by, 1);
    /* the receiver refuses first */
    by = -1;
    assert_non_null(beacon_reach_gate_refusal(
        &gate, canonical("http://11.0.0.1", canon), &by));
    assert_int_equal(by, 0);
    by = -1;
    assert_non_null(beacon_reach_gate_refusal(
        &gate, canonical("http://a.example.org", canon), &by));
    assert_int_equal(by, 0);
    /* the receiver opens link-local; the balancer does not */
    assert_non_null(strstr(beacon_reach_gate_refusal(
                               &gate, canonical("http://169.254.169.254", canon),
                               &by),
                           "link-local"));
    assert_int_equal(by, 1);
    /* the gate's source is the balancer's "source" too */
    gate.balancer = &from_source;
    gate.source = (struct sockaddr *)&s4;
    assert_null(beacon_reach_gate_refusal(
        &gate, canonical("http://10.2.0.1", canon), &by));
    assert_int_equal(by, 0);
    assert_non_null(beacon_reach_gate_refusal(
        &gate, canonical("http://10.2.0.2", canon), &by));
    assert_int_equal(by, 1);
    assert_non_null(beacon_reach_gate_refusal(
        &gate, canonical("http://10.2.0.2", canon), NULL));

    /* no receiver list: the defaults, then the balancer's */
    gate.balancer = &balancer;
    gate.receiver = NULL;
    gate.source = NULL;
    assert_null(beacon_reach_gate_refusal(
        &gate, canonical("http://10.1.0.9", canon), &by));
    assert_non_null(beacon_reach_gate_refusal(
        &gate, canonical("http://127.0.0.1", canon), &by));
    assert_int_equal(by, 1);
    by = -1;
    balancer = parsed("169.254.0.0/16");
    assert_non_null(strstr(beacon_reach_gate_refusal(
                               &gate, canonical("http://169.254.169.254", canon),
                               &by),
                           "link-local"));
    assert_int_equal(by, 0); /* the receiver's defaults refused it */
    /* no balancer list: no narrowing */
    gate.receiver = &receiver;
    gate.balancer = NULL;
    by = -1;
    assert_null(beacon_reach_gate_refusal(
        &gate, canonical("http://10.3.0.1", canon), &by));
    assert_int_equal(by, 0);
    /* no gate: the defaults */
    by = -1;
    assert_null(beacon_reach_gate_refusal(
        NULL, canonical("http://10.3.0.1", canon), &by));
    assert_int_equal(by, 0);
    assert_non_null(beacon_reach_gate_refusal(
        NULL, canonical("http://[fe80::1]", canon), &by));
    assert_int_equal(by, 0);
}

/* ------------------------------------------------------------------ */
/* The receiver                                                        */

static beacon_reason_t receive(beacon_table_t *t, const char *signed_part,
                               apr_time_t now, const beacon_reach_gate_t *gate,
                               beacon_event_t *ev)
{
    beacon_key_t k = spec_hex_key();
    char dg[512];
    size_t len = sign_into(dg, sizeof dg, &k, signed_part,
                           strlen(signed_part));

    memset(ev, 0x5a, sizeof *ev);
    return beacon_receive_any(t, &k, 1, dg, len, now, gate, ev);
}

static void a_refused_url_never_reaches_the_table(void **state)
{
    beacon_table_t *t = beacon_table_make(TEST_POOL, 16, 10 * SEC, 30 * SEC);
    beacon_reach_t receiver = parsed("10.0.0.0/8");
    beacon_reach_t balancer = parsed("10.1.0.0/16");
    beacon_reach_gate_t gate = {&receiver, &balancer, NULL};
    beacon_event_t ev;

    (void)state;
    assert_non_null(t);
    /* the defaults, with no gate */
    assert_reason_equal(
        receive(t, "BEACON url=http://169.254.169.254 ts=1796000000000000", N,
                NULL, &ev),
        BEACON_DROP_URL_NOT_ALLOWED, "link-local, no gate");
    assert_non_null(strstr(ev.refusal, "link-local"));
    assert_int_equal(ev.refused_by_balancer, 0);
    assert_null(ev.rec);
    assert_string_equal(ev.url, "http://169.254.169.254");
    assert_int_equal(t->count, 0);
    assert_null(beacon_table_find(t, "http://169.254.169.254"));
    assert_string_equal(beacon_reason_name(BEACON_DROP_URL_NOT_ALLOWED),
                        "url not allowed");

    /* an inet_aton spelling is canonicalized as written, refused as read */
    assert_reason_equal(
        receive(t, "BEACON url=http://0xA9.0xfe.0xa9.0xfe/ ts=1796000000000000",
                N, NULL, &ev),
        BEACON_DROP_URL_NOT_ALLOWED, "link-local spelled in hex");
    assert_int_equal(t->count, 0);

    /* the receiver's list */
    assert_reason_equal(
        receive(t, "BEACON url=http://11.0.0.1 ts=1796000000000000", N, &gate,
                &ev),
        BEACON_DROP_URL_NOT_ALLOWED, "outside the receiver's list");
    assert_string_equal(ev.refusal, "no entry allows it");
    assert_int_equal(ev.refused_by_balancer, 0);
    assert_int_equal(t->count, 0);
    assert_null(beacon_table_find(t, "http://11.0.0.1"));

    /* the balancer's, with a later ts than the one accepted next */
    assert_reason_equal(
        receive(t, "BEACON url=http://10.2.0.1 ts=1796000000000009", N, &gate,
                &ev),
        BEACON_DROP_URL_NOT_ALLOWED, "outside the balancer's list");
    assert_string_equal(ev.refusal, "no entry allows it");
    assert_int_equal(ev.refused_by_balancer, 1);
    assert_int_equal(t->count, 0);
    assert_null(beacon_table_find(t, "http://10.2.0.1"));

    /* allowed by both: the table has it */
    assert_reason_equal(
        receive(t, "BEACON url=http://10.1.0.1 ts=1796000000000000", N, &gate,
                &ev),
        BEACON_OK, "inside both lists");
    assert_non_null(ev.rec);
    assert_int_equal(t->count, 1);
    assert_non_null(beacon_table_find(t, "http://10.1.0.1"));

    /* the refused datagram moved no mark: a wider gate takes an older ts */
    gate.balancer = NULL;
    assert_reason_equal(
        receive(t, "BEACON url=http://10.2.0.1 ts=1796000000000001", N, &gate,
                &ev),
        BEACON_OK, "allowed once the balancer no longer narrows");
    assert_int_equal(t->count, 2);

    /* a known member whose url a narrower list refuses: no renewal */
    {
        beacon_record_t *rec = beacon_table_find(t, "http://10.1.0.1");
        apr_int64_t high = rec->high_ts;

        gate.balancer = &balancer;
        receiver = parsed("10.2.0.0/16");
        assert_reason_equal(
            receive(t, "BEACON url=http://10.1.0.1 ts=1796000000000005",
                    N + SEC, &gate, &ev),
            BEACON_DROP_URL_NOT_ALLOWED, "a member the receiver now refuses");
        assert_int_equal(ev.refused_by_balancer, 0);
        assert_true(rec->high_ts == high);
        assert_true(rec->last_seen == N);
    }

    /* a heartbeat has no url to check */
    assert_reason_equal(receive(t, "BEACON ts=1796000000000010", N, &gate, &ev),
                        BEACON_OK, "heartbeat");
    assert_null(ev.rec);
}

/* beacon_receive_verified: the gate after the ring's verify. */
static void a_verified_datagram_is_gated_too(void **state)
{
    beacon_table_t *t = beacon_table_make(TEST_POOL, 16, 10 * SEC, 30 * SEC);
    beacon_reach_t names = parsed("*.example");
    beacon_reach_gate_t gate = {NULL, &names, NULL};
    beacon_key_t k = spec_hex_key();
    beacon_event_t ev;
    char dg[512];
    const char *part = "BEACON url=http://a.example.org ts=1796000000000000";
    size_t len = sign_into(dg, sizeof dg, &k, part, strlen(part));

    (void)state;
    assert_non_null(t);
    memset(&ev, 0, sizeof ev);
    assert_reason_equal(beacon_verify(dg, len, &k, N, 30 * SEC, &ev.dg),
                        BEACON_OK, "verify");
    assert_reason_equal(beacon_receive_verified(t, N, &gate, &ev),
                        BEACON_DROP_URL_NOT_ALLOWED, "outside *.example");
    assert_int_equal(ev.refused_by_balancer, 1);
    assert_string_equal(ev.refusal, "no entry allows it");
    assert_int_equal(t->count, 0);

    part = "BEACON url=http://a.example ts=1796000000000000";
    len = sign_into(dg, sizeof dg, &k, part, strlen(part));
    memset(&ev, 0, sizeof ev);
    assert_reason_equal(beacon_verify(dg, len, &k, N, 30 * SEC, &ev.dg),
                        BEACON_OK, "verify");
    assert_reason_equal(beacon_receive_verified(t, N, &gate, &ev), BEACON_OK,
                        "under *.example");
    assert_int_equal(t->count, 1);
}

/* ------------------------------------------------------------------ */
/* Text                                                                */

static void text_reads_back_as_the_same_list(void **state)
{
    static const char *const lists[] = {
        "10.0.0.0/8,*.internal,source",
        "10.1.2.3,::1,fd00::/8,::ffff:10.0.0.0/104,::/80",
        "0.0.0.0/0,::/0,169.254.169.254,fe80::/10,255.255.255.255",
        "API.Example.,*.SVC.x.,SOURCE,::ffff:1.2.3.4,2001:DB8::/32",
        "::1.2.3.4,::ffff:0:0/96,64:ff9b::/96,1::,ffff:ffff::/32",
        "source.,source,Source.", /* a host named source, and the keyword */
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(lists); i++) {
        beacon_reach_t a = parsed(lists[i]), b;
        char text[4096], again[4096], *tok, *save = NULL;

        beacon_reach_text(&a, text, sizeof text);
        beacon_reach_init(&b);
        for (tok = strtok_r(text, " ", &save); tok != NULL;
             tok = strtok_r(NULL, " ", &save)) {
            assert_null(add(&b, tok));
        }
        assert_same_entries(&a, &b);
        beacon_reach_text(&a, text, sizeof text);
        beacon_reach_text(&b, again, sizeof again);
        assert_string_equal(text, again);
    }
    {
        beacon_reach_t a = parsed("10.0.0.0/8,*.Internal.,source,::1,"
                                  "::ffff:10.1.2.3,fd00::/8");
        char text[256], small[8];

        assert_string_equal(beacon_reach_text(&a, text, sizeof text),
                            "10.0.0.0/8 *.internal source ::1 10.1.2.3 "
                            "fd00::/8");
        /* cut at the buffer, still terminated */
        assert_true(beacon_reach_text(&a, small, sizeof small) == small);
        assert_string_equal(small, "10.0.0.");
        assert_string_equal(beacon_reach_text(NULL, text, sizeof text), "");
        beacon_reach_init(&a);
        assert_string_equal(beacon_reach_text(&a, text, sizeof text), "");
        small[0] = 'x';
        beacon_reach_text(&a, small, 0); /* writes nothing */
        assert_int_equal(small[0], 'x');
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(networks_and_addresses_are_held_as_16_bytes),
        cmocka_unit_test(prefix_lengths_are_bounded_and_decimal),
        cmocka_unit_test(every_bad_entry_is_refused_with_its_reason),
        cmocka_unit_test(an_entry_with_a_nul_is_refused),
        cmocka_unit_test(names_suffixes_and_source_are_read_as_written),
        cmocka_unit_test(duplicates_count_once_and_the_65th_entry_is_refused),
        cmocka_unit_test(a_bad_list_leaves_the_list_as_it_was),
        cmocka_unit_test(the_defaults_refuse_what_no_backend_is),
        cmocka_unit_test(every_spelling_of_an_address_is_that_address),
        cmocka_unit_test(networks_allow_the_addresses_inside),
        cmocka_unit_test(a_mapped_address_is_its_ipv4_address),
        cmocka_unit_test(only_an_entry_inside_a_default_range_opens_it),
        cmocka_unit_test(source_allows_the_address_the_datagram_came_from),
        cmocka_unit_test(names_match_exactly_and_suffixes_below),
        cmocka_unit_test(names_and_addresses_never_cross),
        cmocka_unit_test(a_reserved_slots_name_is_refused_in_every_spelling),
        cmocka_unit_test(both_lists_of_a_gate_must_allow),
        cmocka_unit_test(a_refused_url_never_reaches_the_table),
        cmocka_unit_test(a_verified_datagram_is_gated_too),
        cmocka_unit_test(text_reads_back_as_the_same_list),
    };

    return cmocka_run_group_tests_name("reach", tests, test_pool_setup,
                                       test_pool_teardown);
}
