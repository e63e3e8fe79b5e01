/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libFuzzer target: reach (beacon_reach_t), what an announced url may
 * point at. The input is up to three lines: a ","-separated list, a url
 * (or a bare host, tried as http://HOST when it is no url), a source
 * address (inet_pton's IPv4 or IPv6; anything else: no source).
 * Invariants:
 *  - beacon_reach_add_list never crashes; refused, it leaves a list that
 *    held "kept.example" exactly as it was, with a static one-line
 *    message and *bad a span of the input that is one entry (between
 *    separators); accepted, it holds what beacon_reach_add of each entry
 *    in turn gives, at most BEACON_REACH_MAX_ENTRIES, each entry well
 *    formed (a network with no bit past its prefix, ipv4 exactly for a
 *    mapped address with a prefix of 96 or more; a name in lower case,
 *    never an address in any inet_aton form; "source" for "source" in any
 *    case; a suffix for "*." only); a refused beacon_reach_add changes
 *    nothing;
 *  - beacon_reach_refusal on a canonical url (the input's, and one made
 *    of each entry) is a reference written out again here: the host read
 *    as an IPv6 literal, an inet_aton address (a reference parser on
 *    strtoul, itself held against glibc's inet_aton for hosts of digits,
 *    dots, hex letters and x) or a name; the default ranges; then the
 *    entries (networks and "source" for addresses, never names; names
 *    and suffixes for names, never addresses; an address of a default
 *    range only through a network inside it). The message is "no entry
 *    allows it" or one "refused by default"; the verdict is stable and
 *    reads nothing past the url;
 *  - the gate: both lists must allow, by_balancer names the one that
 *    refused;
 *  - beacon_reach_text read back entry by entry gives the same entries
 *    and the same verdicts.
 */
#define _DEFAULT_SOURCE 1 /* inet_aton */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

#include "fuzz_common.h"

#define TEXT_MAX ((size_t)BEACON_REACH_MAX_ENTRIES * (BEACON_REACH_NAME_MAX + 8))

static const unsigned char mapped_head[12] = {0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0xff, 0xff};

typedef struct {
    int is_addr;
    int v4;
    unsigned char a[16];
    const char *name; /* a name: without one root dot */
    size_t len;
} ref_host_t;

typedef struct {
    int set;
    int v4;
    unsigned char a[16];
} ref_source_t;

/* ------------------------------------------------------------------ */
/* The reference                                                       */

/* inet_aton's reading of s (NUL-terminated), on strtoul as glibc reads
 * it: 1 to 4 parts, each starting with a digit, C's 0x / 0 / decimal
 * bases, all but the last at most 255, the last filling what is left. */
static int ref_aton(const char *s, unsigned char out[4])
{
    unsigned long parts[4], value = 0;
    const char *p = s;
    unsigned n = 0, i;

    for (;;) {
        char *end = NULL;
        unsigned long v;

        if (*p < '0' || *p > '9' || n == 4) {
            return 0;
        }
        errno = 0;
        v = strtoul(p, &end, 0);
        if (errno == ERANGE || v > 0xffffffffUL) {
            return 0;
        }
        parts[n++] = v;
        p = end;
        if (*p != '.') {
            break;
        }
        p++;
    }
    if (*p != '\0') {
        return 0;
    }
    for (i = 0; i + 1 < n; i++) {
        if (parts[i] > 255) {
            return 0;
        }
        value |= parts[i] << (8 * (3 - i));
    }
    if (parts[n - 1] > (0xffffffffUL >> (8 * (n - 1)))) {
        return 0;
    }
    value |= parts[n - 1];
    for (i = 0; i < 4; i++) {
        out[i] = (unsigned char)(value >> (8 * (3 - i)));
    }
    return 1;
}

/* Holds ref_aton against glibc for a host made of what inet_aton reads
 * (no space: glibc's inet_aton ignores what follows one). */
static void check_aton_reference(const char *s)
{
    const char *p;
    unsigned char mine[4];
    struct in_addr theirs;
    int a, b;

    for (p = s; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
              (*p >= 'A' && *p <= 'F') || *p == 'x' || *p == 'X' ||
              *p == '.')) {
            return;
        }
    }
    a = ref_aton(s, mine);
    b = inet_aton(s, &theirs);
    FUZZ_CHECK(a == b, "\"%s\": reference %d, inet_aton %d", s, a, b);
    FUZZ_CHECK(!a || memcmp(mine, &theirs.s_addr, 4) == 0,
               "\"%s\": reference and inet_aton read other addresses", s);
}

static void set_v4(unsigned char a[16], const unsigned char v4[4])
{
    memcpy(a, mapped_head, 12);
    memcpy(a + 12, v4, 4);
}

/* The host of a canonical url; the caller frees *copy. */
static int ref_host(const char *url, ref_host_t *h, char **copy)
{
    const char *p = strstr(url, "://");
    size_t len;
    unsigned char v4[4];

    memset(h, 0, sizeof(*h));
    *copy = NULL;
    if (p == NULL) {
        return 0;
    }
    p += 3;
    if (*p == '[') {
        const char *end = strchr(p, ']');

        if (end == NULL) {
            return 0;
        }
        *copy = fuzz_dup(p + 1, (size_t)(end - p)); /* room for the NUL */
        (*copy)[end - p - 1] = '\0';
        if (inet_pton(AF_INET6, *copy, h->a) != 1) {
            return 0;
        }
        h->is_addr = 1;
        h->v4 = memcmp(h->a, mapped_head, 12) == 0;
        return 1;
    }
    len = strcspn(p, ":/");
    if (len > 1 && p[len - 1] == '.') {
        len--;
    }
    *copy = fuzz_dup(p, len + 1);
    (*copy)[len] = '\0';
    check_aton_reference(*copy);
    h->name = p;
    h->len = len;
    if (ref_aton(*copy, v4)) {
        h->is_addr = 1;
        h->v4 = 1;
        set_v4(h->a, v4);
    }
    return len > 0;
}

static int ref_in(const unsigned char *a, const unsigned char *net,
                  unsigned prefix)
{
    unsigned i;

    for (i = 0; i < prefix; i++) {
        unsigned char bit = (unsigned char)(0x80 >> (i % 8));

        if ((a[i / 8] & bit) != (net[i / 8] & bit)) {
            return 0;
        }
    }
    return 1;
}

typedef struct {
    int v4;
    unsigned char net[16];
    unsigned prefix; /* of the 16 bytes */
} ref_range_t;

/* The defaults, as beacon_reach.h lists them. */
static const ref_range_t ref_ranges[] = {
    {1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 169, 254}, 96 + 16},
    {1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0}, 96 + 32},
    {1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 224}, 96 + 4},
    {1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 255, 255, 255, 255}, 128},
    {0, {0xfe, 0x80}, 10},
    {0, {0}, 128},
    {0, {0xff}, 8},
};

static const ref_range_t *ref_range(const ref_host_t *h)
{
    size_t i;

    for (i = 0; h->is_addr && i < sizeof(ref_ranges) / sizeof(ref_ranges[0]);
         i++) {
        if (ref_ranges[i].v4 == h->v4 &&
            ref_in(h->a, ref_ranges[i].net, ref_ranges[i].prefix)) {
            return &ref_ranges[i];
        }
    }
    return NULL;
}

static int ref_entry_allows(const beacon_reach_entry_t *e, const ref_host_t *h,
                            const ref_range_t *range, const ref_source_t *src)
{
    switch (e->kind) {
    case BEACON_REACH_NETWORK:
        return h->is_addr && e->ipv4 == h->v4 &&
               ref_in(h->a, e->addr, e->prefix) &&
               (range == NULL || e->prefix >= range->prefix);
    case BEACON_REACH_SOURCE:
        return h->is_addr && range == NULL &&
               (!src->set ||
                (src->v4 == h->v4 && memcmp(src->a, h->a, 16) == 0));
    case BEACON_REACH_NAME:
        return !h->is_addr && h->len == e->len &&
               strncasecmp(h->name, e->name, e->len) == 0;
    case BEACON_REACH_SUFFIX:
        return !h->is_addr && h->len > e->len &&
               strncasecmp(h->name + h->len - e->len, e->name, e->len) == 0;
    default:
        FUZZ_CHECK(0, "an entry of kind %d", (int)e->kind);
    }
    return 0;
}

/* A reserved slot's name: beacon.invalid or a name under it, in any case
 * and with any trailing dots; no list allows one. */
static int ref_reserved(const ref_host_t *h)
{
    static const char domain[] = "beacon.invalid";
    const size_t dlen = sizeof(domain) - 1;
    size_t len = h->len;

    if (h->is_addr || h->name == NULL) {
        return 0;
    }
    while (len > 0 && h->name[len - 1] == '.') {
        len--;
    }
    return len >= dlen && strncasecmp(h->name + len - dlen, domain, dlen) == 0 &&
           (len == dlen || h->name[len - dlen - 1] == '.');
}

static int ref_allows(const beacon_reach_t *reach, const ref_host_t *h,
                      const ref_source_t *src)
{
    const ref_range_t *range = ref_range(h);
    unsigned i;

    if (ref_reserved(h)) {
        return 0;
    }
    if (reach == NULL) {
        return range == NULL;
    }
    for (i = 0; i < reach->n; i++) {
        if (ref_entry_allows(&reach->entry[i], h, range, src)) {
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Checks                                                              */

static void check_message(const char *msg, const char *in, size_t len)
{
    FUZZ_CHECK(msg[0] != '\0', "empty message");
    FUZZ_CHECK(strchr(msg, '\n') == NULL, "message with a newline: %s", msg);
    FUZZ_CHECK(msg < in || msg >= in + len, "message points into the input");
}

static void check_entry(const beacon_reach_entry_t *e)
{
    unsigned i;

    switch (e->kind) {
    case BEACON_REACH_NETWORK:
        FUZZ_CHECK(e->prefix <= 128, "prefix %u", e->prefix);
        for (i = e->prefix; i < 128; i++) {
            FUZZ_CHECK(!(e->addr[i / 8] & (0x80 >> (i % 8))),
                       "bit %u set past prefix %u", i, e->prefix);
        }
        FUZZ_CHECK(e->ipv4 == (memcmp(e->addr, mapped_head, 12) == 0 &&
                               e->prefix >= 96),
                   "ipv4 %d for a prefix of %u", e->ipv4, e->prefix);
        break;
    case BEACON_REACH_NAME:
    case BEACON_REACH_SUFFIX:
        FUZZ_CHECK(e->len == strlen(e->name) && e->len > 0 &&
                       e->len <= BEACON_REACH_NAME_MAX + 1,
                   "name \"%s\" of len %zu", e->name, (size_t)e->len);
        FUZZ_CHECK((e->kind == BEACON_REACH_SUFFIX) == (e->name[0] == '.'),
                   "name \"%s\" of kind %d", e->name, (int)e->kind);
        for (i = 0; i < e->len; i++) {
            FUZZ_CHECK(e->name[i] < 'A' || e->name[i] > 'Z',
                       "name \"%s\" not in lower case", e->name);
        }
        if (e->kind == BEACON_REACH_NAME) {
            unsigned char v4[4];

            check_aton_reference(e->name);
            FUZZ_CHECK(!ref_aton(e->name, v4),
                       "name entry \"%s\" is an address", e->name);
        }
        break;
    case BEACON_REACH_SOURCE:
        break;
    default:
        FUZZ_CHECK(0, "an entry of kind %d", (int)e->kind);
    }
}

/* What the text of one entry must give. */
static void check_entry_of_text(const beacon_reach_entry_t *e,
                                const char *s, size_t len)
{
    FUZZ_CHECK(memchr(s, '\0', len) == NULL,
               "an entry with a NUL accepted as kind %d", (int)e->kind);
    if (len == 6 && strncasecmp(s, "source", 6) == 0) {
        FUZZ_CHECK(e->kind == BEACON_REACH_SOURCE, "\"source\" of kind %d",
                   (int)e->kind);
    }
    if (memchr(s, '*', len) != NULL) {
        FUZZ_CHECK(e->kind == BEACON_REACH_SUFFIX && len > 2 && s[0] == '*' &&
                       s[1] == '.' && memchr(s + 1, '*', len - 1) == NULL,
                   "\"%.*s\" taken as kind %d", (int)len, s, (int)e->kind);
    }
    if (memchr(s, '[', len) != NULL || memchr(s, ']', len) != NULL) {
        FUZZ_CHECK(0, "\"%.*s\" with a bracket accepted", (int)len, s);
    }
}

static int same_entry(const beacon_reach_entry_t *a,
                      const beacon_reach_entry_t *b)
{
    if (a->kind != b->kind) {
        return 0;
    }
    if (a->kind == BEACON_REACH_NETWORK) {
        return a->ipv4 == b->ipv4 && a->prefix == b->prefix &&
               memcmp(a->addr, b->addr, 16) == 0;
    }
    return a->len == b->len && strcmp(a->name, b->name) == 0;
}

static void check_same_list(const beacon_reach_t *a, const beacon_reach_t *b,
                            const char *what)
{
    unsigned i;

    FUZZ_CHECK(a->n == b->n, "%s: %u entries, not %u", what, b->n, a->n);
    for (i = 0; i < a->n; i++) {
        FUZZ_CHECK(same_entry(&a->entry[i], &b->entry[i]),
                   "%s: entry %u differs", what, i);
    }
}

/* Byte for byte, padding too: a refused add must not write the list at
 * all (the copies compared are memcpy's). */
static int same_bytes(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n) == 0;
}

/* The list, checked; returns whether it was accepted into *out. */
static int parse_list(const char *list, size_t len, beacon_reach_t *out)
{
    beacon_reach_t kept, before, one;
    beacon_span_t bad = {NULL, 0};
    const char *err;
    size_t start = 0, k;
    unsigned i;

    /* into a list that holds something */
    beacon_reach_init(&kept);
    FUZZ_CHECK(beacon_reach_add(&kept, "kept.example", 12) == NULL, "kept");
    memcpy(&before, &kept, sizeof(before)); /* padding too */
    err = beacon_reach_add_list(&kept, list, len, &bad);
    if (err != NULL) {
        check_message(err, list, len);
        FUZZ_CHECK(kept.n == before.n, "refused list: %u entries, not %u",
                   kept.n, before.n);
        FUZZ_CHECK(same_bytes(kept.entry, before.entry,
                              before.n * sizeof(before.entry[0])),
                   "refused list changed the entries");
        FUZZ_CHECK(bad.ptr >= list && bad.ptr + bad.len <= list + len,
                   "bad span outside the input");
        FUZZ_CHECK((bad.ptr == list || bad.ptr[-1] == ',') &&
                       (bad.ptr + bad.len == list + len ||
                        bad.ptr[bad.len] == ',') &&
                       memchr(bad.ptr, ',', bad.len) == NULL,
                   "bad span is no entry");
    }

    /* entry by entry, as add_list must have taken them */
    beacon_reach_init(out);
    beacon_reach_init(&one);
    for (k = 0; k <= len; k++) {
        if (k < len && list[k] != ',') {
            continue;
        }
        memcpy(&before, out, sizeof(before));
        err = beacon_reach_add(out, list + start, k - start);
        if (err != NULL) {
            check_message(err, list, len);
            FUZZ_CHECK(out->n == before.n &&
                           same_bytes(out->entry, before.entry,
                                      sizeof(before.entry)),
                       "a refused entry changed the list");
            /* the same entry refused on its own, but for the bound */
            if (beacon_reach_add(&one, list + start, k - start) == NULL) {
                FUZZ_CHECK(before.n == BEACON_REACH_MAX_ENTRIES,
                           "\"%.*s\" refused in a list of %u, alone not",
                           (int)(k - start), list + start, before.n);
            }
            beacon_reach_init(&one);
            return 0;
        }
        FUZZ_CHECK(out->n == before.n || out->n == before.n + 1,
                   "one entry added %u", out->n - before.n);
        for (i = 0; out->n > before.n && i < before.n; i++) {
            FUZZ_CHECK(!same_entry(&out->entry[i], &out->entry[before.n]),
                       "an entry held twice");
        }
        if (out->n > before.n) {
            check_entry(&out->entry[before.n]);
            check_entry_of_text(&out->entry[before.n], list + start,
                                k - start);
        }
        start = k + 1;
    }
    FUZZ_CHECK(kept.n >= 1 && strcmp(kept.entry[0].name, "kept.example") == 0,
               "kept entry lost");
    FUZZ_CHECK(out->n <= BEACON_REACH_MAX_ENTRIES, "%u entries", out->n);
    return 1;
}

/* beacon_reach_refusal against the reference, for one url. */
static void check_url(const beacon_reach_t *reach, const char *url,
                      const struct sockaddr *sa, const ref_source_t *src)
{
    size_t n = strlen(url);
    char *exact = fuzz_dup(url, n + 1); /* ASan: nothing read past the NUL */
    char *copy;
    ref_host_t h;
    const char *got, *dflt, *gate_why;
    beacon_reach_gate_t gate;
    int by = -1;

    fuzz_check_fixed_point(url);
    if (!ref_host(url, &h, &copy)) {
        free(copy);
        free(exact);
        return;
    }
    got = beacon_reach_refusal(reach, exact, sa);
    FUZZ_CHECK(got == beacon_reach_refusal(reach, exact, sa),
               "%s: the verdict changes", url);
    FUZZ_CHECK((got == NULL) == ref_allows(reach, &h, src),
               "%s: %s, the reference says %s (host read as %s)", url,
               got ? got : "allowed",
               ref_allows(reach, &h, src) ? "allowed" : "refused",
               h.is_addr ? (h.v4 ? "IPv4" : "IPv6") : "a name");
    if (got != NULL) {
        FUZZ_CHECK(ref_reserved(&h) ? strstr(got, "reserved slot") != NULL
                   : ref_range(&h) != NULL
                       ? strstr(got, "refused by default") != NULL
                       : strcmp(got, "no entry allows it") == 0,
                   "%s: message \"%s\"", url, got);
    }
    /* allowed in a default range: a network entry inside the range */
    if (got == NULL && ref_range(&h) != NULL) {
        const ref_range_t *r = ref_range(&h);
        unsigned i;
        int inside = 0;

        for (i = 0; reach != NULL && i < reach->n; i++) {
            const beacon_reach_entry_t *e = &reach->entry[i];

            inside |= e->kind == BEACON_REACH_NETWORK && e->ipv4 == r->v4 &&
                      e->prefix >= r->prefix &&
                      ref_in(e->addr, r->net, r->prefix);
        }
        FUZZ_CHECK(inside, "%s allowed in a default range", url);
    }

    /* the defaults, and the gate of the defaults and this list */
    dflt = beacon_reach_refusal(NULL, exact, sa);
    FUZZ_CHECK((dflt == NULL) == ref_allows(NULL, &h, src),
               "%s: defaults say %s", url, dflt ? dflt : "allowed");
    gate.receiver = NULL;
    gate.balancer = reach;
    gate.source = sa;
    gate_why = beacon_reach_gate_refusal(&gate, exact, &by);
    if (ref_reserved(&h)) {
        /* refused before any list: no list is named */
        FUZZ_CHECK(gate_why != NULL && strstr(gate_why, "reserved slot") != NULL &&
                       by == -1,
                   "%s: gate %s by %d", url, gate_why ? gate_why : "allowed", by);
    }
    else if (dflt != NULL) {
        FUZZ_CHECK(gate_why == dflt && by == 0, "%s: gate %s by %d", url,
                   gate_why ? gate_why : "allowed", by);
    }
    else {
        FUZZ_CHECK(gate_why == got && by == (got != NULL), "%s: gate %s by %d",
                   url, gate_why ? gate_why : "allowed", by);
    }
    gate.receiver = reach;
    gate.balancer = NULL;
    FUZZ_CHECK(beacon_reach_gate_refusal(&gate, exact, &by) == got &&
                   by == (ref_reserved(&h) ? -1 : 0),
               "%s: a gate of the receiver alone", url);
    free(copy);
    free(exact);
}

/* The url of the input's second line, or of http://LINE. */
static int url_of(const char *line, size_t len, char out[BEACON_URL_MAX])
{
    char *tmp;
    int ok;

    if (beacon_url_canonicalize(line, len, out, BEACON_URL_MAX) == NULL) {
        return 1;
    }
    tmp = malloc(len + 8);
    FUZZ_CHECK(tmp != NULL, "out of memory");
    memcpy(tmp, "http://", 7);
    memcpy(tmp + 7, line, len);
    ok = beacon_url_canonicalize(tmp, len + 7, out, BEACON_URL_MAX) == NULL;
    free(tmp);
    return ok;
}

/* A url made of entry e, when it makes one. */
static int url_of_entry(const beacon_reach_entry_t *e, int variant,
                        char out[BEACON_URL_MAX])
{
    char addr[INET6_ADDRSTRLEN], raw[BEACON_URL_MAX + 8];
    unsigned char a[16];
    int n;

    switch (e->kind) {
    case BEACON_REACH_NETWORK:
        memcpy(a, e->addr, 16);
        if (variant && e->prefix < 128) { /* the network's last address */
            unsigned i;

            for (i = e->prefix; i < 128; i++) {
                a[i / 8] |= (unsigned char)(0x80 >> (i % 8));
            }
        }
        if (e->ipv4) {
            inet_ntop(AF_INET, a + 12, addr, sizeof(addr));
            n = snprintf(raw, sizeof(raw), "http://%s", addr);
        }
        else {
            inet_ntop(AF_INET6, a, addr, sizeof(addr));
            n = snprintf(raw, sizeof(raw), "http://[%s]", addr);
        }
        break;
    case BEACON_REACH_NAME:
        n = snprintf(raw, sizeof(raw), "http://%s%s", e->name,
                     variant ? "." : "");
        break;
    case BEACON_REACH_SUFFIX:
        n = snprintf(raw, sizeof(raw), "http://%s%s", variant ? "X" : "a.b",
                     e->name);
        break;
    default:
        return 0;
    }
    return n > 0 && (size_t)n < sizeof(raw) &&
           beacon_url_canonicalize(raw, (size_t)n, out, BEACON_URL_MAX) == NULL;
}

static void source_of(const char *line, size_t len, struct sockaddr_in *s4,
                      struct sockaddr_in6 *s6, const struct sockaddr **sa,
                      ref_source_t *src)
{
    char text[INET6_ADDRSTRLEN];

    *sa = NULL;
    memset(src, 0, sizeof(*src));
    memset(s4, 0, sizeof(*s4));
    memset(s6, 0, sizeof(*s6));
    if (len == 0 || len >= sizeof(text)) {
        return;
    }
    memcpy(text, line, len);
    text[len] = '\0';
    if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        *sa = (const struct sockaddr *)s4;
        src->set = 1;
        src->v4 = 1;
        set_v4(src->a, (const unsigned char *)&s4->sin_addr);
    }
    else if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        *sa = (const struct sockaddr *)s6;
        src->set = 1;
        memcpy(src->a, s6->sin6_addr.s6_addr, 16);
        src->v4 = memcmp(src->a, mapped_head, 12) == 0;
    }
}

/* The text of reach, read back entry by entry. */
static void check_text(const beacon_reach_t *reach, beacon_reach_t *again)
{
    char *text = malloc(TEXT_MAX), *tok, *save = NULL;
    const char *ret;

    FUZZ_CHECK(text != NULL, "out of memory");
    ret = beacon_reach_text(reach, text, TEXT_MAX);
    FUZZ_CHECK(ret == text && strlen(text) < TEXT_MAX, "text");
    beacon_reach_init(again);
    for (tok = strtok_r(text, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save)) {
        const char *err = beacon_reach_add(again, tok, strlen(tok));

        FUZZ_CHECK(err == NULL, "text entry \"%s\" refused: %s", tok, err);
    }
    check_same_list(reach, again, "text read back");
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *line[3] = {"", "", ""};
    size_t len[3] = {0, 0, 0}, off = 0;
    unsigned n, i;
    beacon_reach_t *reach = malloc(sizeof(beacon_reach_t));
    beacon_reach_t *again = malloc(sizeof(beacon_reach_t));
    char url[BEACON_URL_MAX];
    struct sockaddr_in s4;
    struct sockaddr_in6 s6;
    const struct sockaddr *sa;
    ref_source_t src;
    char *list;
    int accepted;

    FUZZ_CHECK(reach != NULL && again != NULL, "out of memory");
    for (n = 0; n < 3 && off <= size; n++) {
        const char *nl = memchr(in + off, '\n', size - off);
        size_t l = nl ? (size_t)(nl - (in + off)) : size - off;

        line[n] = in + off;
        len[n] = l;
        off += l + 1;
        if (nl == NULL) {
            break;
        }
    }
    list = fuzz_dup(line[0], len[0]); /* exact: reads past len are seen */
    source_of(line[2], len[2], &s4, &s6, &sa, &src);
    accepted = parse_list(list, len[0], reach);
    if (accepted) {
        check_text(reach, again);
    }
    /* a refused list: the url against the defaults */
    if (len[1] > 0 && memchr(line[1], '\0', len[1]) == NULL &&
        url_of(line[1], len[1], url)) {
        check_url(accepted ? reach : NULL, url, sa, &src);
        if (accepted) {
            check_url(again, url, sa, &src);
        }
    }
    if (accepted) {
        for (i = 0; i < reach->n; i++) {
            int v;

            for (v = 0; v < 2; v++) {
                if (url_of_entry(&reach->entry[i], v, url)) {
                    check_url(reach, url, sa, &src);
                    check_url(reach, url, NULL, &(ref_source_t){0});
                }
            }
        }
    }
    free(list);
    free(reach);
    free(again);
    return 0;
}
