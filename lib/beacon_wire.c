/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The datagram: formatting on the sender, steps 1 to 5 of the wire format
 * on the receiver (a key ring's are beacon_ring.c's). The receiver's order
 * is part of the contract: nothing a datagram says is interpreted before
 * its MAC has been checked, but for the svc= and url= bytes that pick a
 * ring's key set and derive a member's key.
 */

#include <string.h>

#include <apr_atomic.h>

#include "beacon.h"
#include "beacon_private.h"

#define MAGIC "BEACON"
#define MAGIC_LEN 6
#define MAC_TOKEN " mac="
#define MAC_TOKEN_LEN 5
#define MAC_HEX_LEN (2 * BEACON_MAC_LEN)
#define MAC_TAIL_LEN (MAC_TOKEN_LEN + MAC_HEX_LEN)

static const struct {
    const char *name; /* the log fragment */
    const char *id;   /* counter and status key */
} reasons[BEACON_REASON_COUNT] = {
    [BEACON_OK] = {"ok", "ok"},
    [BEACON_DROP_OVERSIZE] = {"oversize datagram", "oversize"},
    [BEACON_DROP_EMBEDDED_NUL] = {"embedded NUL", "embedded_nul"},
    [BEACON_DROP_BAD_FRAME] = {"bad frame", "bad_frame"},
    [BEACON_DROP_MAC_MISMATCH] = {"mac mismatch", "mac_mismatch"},
    [BEACON_DROP_DUPLICATE_FIELD] = {"duplicate field", "duplicate_field"},
    [BEACON_DROP_BAD_TS] = {"bad ts", "bad_ts"},
    [BEACON_DROP_BAD_FIELD] = {"bad field", "bad_field"},
    [BEACON_DROP_STALE_TS] = {"stale ts", "stale_ts"},
    [BEACON_DROP_WRONG_SERVICE] = {"wrong service", "wrong_service"},
    [BEACON_DROP_UNACCEPTABLE_URL] = {"unacceptable url", "unacceptable_url"},
    [BEACON_DROP_REPLAYED_TS] = {"replayed/reordered ts", "replayed_ts"},
    [BEACON_DROP_TABLE_FULL] = {"member table full", "table_full"},
    [BEACON_DROP_URL_NOT_ALLOWED] = {"url not allowed", "url_not_allowed"},
    [BEACON_DROP_URL_NOT_CANONICAL] = {"url not canonical", "url_not_canonical"},
    [BEACON_DROP_REVOKED] = {"revoked", "revoked"},
};

const char *beacon_reason_name(beacon_reason_t reason)
{
    if ((unsigned)reason >= BEACON_REASON_COUNT) {
        return "unknown reason";
    }
    return reasons[reason].name;
}

const char *beacon_reason_id(beacon_reason_t reason)
{
    if ((unsigned)reason >= BEACON_REASON_COUNT) {
        return "unknown";
    }
    return reasons[reason].id;
}

int beacon_parse_decimal(const char *s, apr_size_t len, apr_int64_t *out)
{
    apr_int64_t n = 0;
    apr_size_t i;

    if (len == 0 || len > BEACON_DECIMAL_MAX_DIGITS) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
        n = n * 10 + (s[i] - '0');
    }
    *out = n;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Sender                                                              */

typedef struct {
    char *buf;
    apr_size_t len, cap; /* cap excludes the terminating NUL */
    int overflow;
} writer_t;

static void put(writer_t *w, const char *s, apr_size_t n)
{
    if (w->overflow || n > w->cap - w->len) {
        w->overflow = 1;
        return;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static int put_field(writer_t *w, const char *key, const char *value)
{
    if (!beacon_value_is_valid(value)) {
        return 0;
    }
    put(w, " ", 1);
    put(w, key, strlen(key));
    put(w, "=", 1);
    put(w, value, strlen(value));
    return 1;
}

/* A number of at most BEACON_DECIMAL_MAX_DIGITS digits, as receivers
 * read them; 0 when n is out of that range. */
static int put_number(writer_t *w, const char *key, apr_int64_t n)
{
    char digits[24];
    char *p = digits + sizeof(digits);

    if (n < 0 || n > BEACON_DECIMAL_MAX) {
        return 0;
    }
    *--p = '\0';
    do {
        *--p = (char)('0' + n % 10);
        n /= 10;
    } while (n > 0);
    return put_field(w, key, p);
}

int beacon_format(char *buf, apr_size_t bufsize, const beacon_announcement_t *a,
                  const beacon_key_t *key)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char mac[BEACON_MAC_LEN];
    writer_t w = {buf, 0, 0, 0};
    int ok = 1;
    int i;

    if (bufsize == 0 || a->ts < 0 || a->ts > BEACON_DECIMAL_MAX) {
        return -1;
    }
    w.cap = bufsize - 1 < BEACON_MAX_DATAGRAM ? bufsize - 1 : BEACON_MAX_DATAGRAM;
    put(&w, MAGIC, MAGIC_LEN);
    if (a->url) {
        ok &= put_field(&w, "url", a->url);
    }
    if (a->host) {
        ok &= put_field(&w, "host", a->host);
    }
    if (a->pid >= 0) {
        ok &= put_number(&w, "pid", a->pid);
    }
    if (a->seq >= 0) {
        ok &= put_number(&w, "seq", a->seq);
    }
    ok &= put_number(&w, "ts", a->ts);
    if (a->svc) {
        ok &= beacon_service_is_valid(a->svc) && put_field(&w, "svc", a->svc);
    }
    if (a->ctx) {
        beacon_span_t paths[BEACON_CTX_MAX_PATHS];

        ok &= beacon_ctx_parse(a->ctx, strlen(a->ctx), paths) > 0 &&
              put_field(&w, "ctx", a->ctx);
    }
    if (a->route) {
        ok &= beacon_route_is_valid(a->route) && put_field(&w, "route", a->route);
    }
    if (a->lbfactor) {
        ok &= beacon_lbfactor_parse(a->lbfactor, strlen(a->lbfactor)) > 0 &&
              put_field(&w, "lbfactor", a->lbfactor);
    }
    if (a->state) {
        ok &= beacon_wire_state_parse(a->state, strlen(a->state)) >
                  BEACON_WIRE_NONE &&
              put_field(&w, "state", a->state);
    }
    if (!ok || w.overflow) {
        return -1;
    }
    beacon_mac(key, buf, w.len, mac);
    put(&w, MAC_TOKEN, MAC_TOKEN_LEN);
    if (w.overflow || w.cap - w.len < MAC_HEX_LEN) {
        return -1;
    }
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        buf[w.len++] = hex[mac[i] >> 4];
        buf[w.len++] = hex[mac[i] & 0xf];
    }
    buf[w.len] = '\0';
    return (int)w.len;
}

apr_interval_time_t beacon_leaving_repeat_at(unsigned i)
{
    /* spread over the second: a short outage loses one, not all */
    static const int ms[BEACON_LEAVING_REPEATS] = {200, 500, 900};

    return i < BEACON_LEAVING_REPEATS ? apr_time_from_msec(ms[i]) : 0;
}

apr_interval_time_t beacon_leaving_repeat_wait(apr_time_t first, unsigned i,
                                               apr_time_t now)
{
    apr_interval_time_t at = beacon_leaving_repeat_at(i);
    apr_time_t due = first + at;

    return due > now && due - now <= at ? due - now : 0;
}

/* The rule: the clock, unless that is not above the last ts. */
static apr_int64_t next_ts(apr_int64_t last, apr_time_t now)
{
    return now > last ? now : last + 1;
}

static apr_int64_t next_shared_ts(volatile apr_uint64_t *shared, apr_time_t now)
{
    apr_uint64_t last, ts;

    do {
        last = apr_atomic_read64(shared);
        ts = (apr_uint64_t)next_ts((apr_int64_t)last, now);
    } while (apr_atomic_cas64(shared, ts, last) != last);
    return (apr_int64_t)ts;
}

void beacon_sequence_stamp(beacon_sequence_t *s, apr_time_t now,
                           beacon_announcement_t *a)
{
    if (s->shared_ts) {
        a->ts = next_shared_ts(s->shared_ts, now);
    }
    else {
        a->ts = s->last_ts = next_ts(s->last_ts, now);
    }
    a->seq = s->next_seq++;
}

/* ------------------------------------------------------------------ */
/* Receiver                                                            */

static int is_key_start(char c)
{
    return c >= 'a' && c <= 'z';
}

static int is_key_char(char c)
{
    return is_key_start(c) || (c >= '0' && c <= '9') || c == '_';
}

/*
 * A token walker over the signed part "BEACON k=v k=v". next_token()
 * returns 1 and fills key/value for each well-formed token, 0 at the end,
 * -1 on a malformed one.
 */
typedef struct {
    const char *p, *end;
} tokens_t;

static int next_token(tokens_t *t, beacon_span_t *key, beacon_span_t *value)
{
    const char *p = t->p;

    if (p == t->end) {
        return 0;
    }
    if (*p++ != ' ' || p == t->end || !is_key_start(*p)) {
        return -1;
    }
    key->ptr = p;
    while (p < t->end && is_key_char(*p)) {
        p++;
    }
    key->len = (apr_size_t)(p - key->ptr);
    if (p == t->end || *p++ != '=') {
        return -1;
    }
    value->ptr = p;
    while (p < t->end && *p != ' ') {
        p++;
    }
    value->len = (apr_size_t)(p - value->ptr);
    if (value->len == 0) {
        return -1;
    }
    t->p = p;
    return 1;
}

static tokens_t tokens_of(const char *signed_part, apr_size_t len)
{
    tokens_t t = {signed_part + MAGIC_LEN, signed_part + len};
    return t;
}

/*
 * Step 2: "BEACON" {" " key=value} " mac=" 16 hex, with at most
 * BEACON_MAX_FIELDS tokens before the mac; sets *signed_len. The cap
 * keeps step 4's duplicate scan, quadratic in the number of fields, to
 * a few hundred comparisons whoever signed the datagram.
 */
static int frame_is_valid(const char *buf, apr_size_t len, apr_size_t *signed_len)
{
    beacon_span_t key, value;
    tokens_t t;
    apr_size_t i;
    unsigned fields = 0;
    int rv;

    if (len < MAGIC_LEN + MAC_TAIL_LEN || memcmp(buf, MAGIC, MAGIC_LEN) != 0) {
        return 0;
    }
    *signed_len = len - MAC_TAIL_LEN;
    if (memcmp(buf + *signed_len, MAC_TOKEN, MAC_TOKEN_LEN) != 0) {
        return 0;
    }
    for (i = len - MAC_HEX_LEN; i < len; i++) {
        if (beacon_hex_value(buf[i]) < 0) {
            return 0;
        }
    }
    t = tokens_of(buf, *signed_len);
    /* only syntax here: fields are interpreted after the MAC */
    while ((rv = next_token(&t, &key, &value)) == 1) {
        if (++fields > BEACON_MAX_FIELDS) {
            return 0;
        }
    }
    return rv == 0;
}

/* Step 3, in constant time: every byte is compared whatever the first says. */
int beacon_mac_matches(const char *buf, apr_size_t signed_len,
                       const beacon_key_t *key)
{
    const char *hex = buf + signed_len + MAC_TOKEN_LEN;
    unsigned char expected[BEACON_MAC_LEN];
    unsigned diff = 0;
    int i;

    beacon_mac(key, buf, signed_len, expected);
    for (i = 0; i < BEACON_MAC_LEN; i++) {
        unsigned got = (unsigned)(beacon_hex_value(hex[2 * i]) << 4 |
                                  beacon_hex_value(hex[2 * i + 1]));
        diff |= got ^ expected[i];
    }
    return diff == 0;
}

static int span_is(const beacon_span_t *s, const char *lit, apr_size_t n)
{
    return s->len == n && memcmp(s->ptr, lit, n) == 0;
}

/*
 * Whether key is one of keys[0..n). Quadratic in the number of fields,
 * but only after the MAC, over the keys alone, and the frame check caps
 * the fields at BEACON_MAX_FIELDS: at most 496 comparisons of short keys,
 * whoever signed the datagram.
 */
static int key_among(const beacon_span_t *keys, unsigned n,
                     const beacon_span_t *key)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (keys[i].len == key->len &&
            memcmp(keys[i].ptr, key->ptr, key->len) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Step 4: known fields into out; duplicates and ts syntax (the values of
 * the version 1.1 fields are check_values()'s). */
static beacon_reason_t parse_fields(const char *buf, apr_size_t signed_len,
                                    beacon_datagram_t *out)
{
    static const struct {
        const char *key;
        apr_size_t len;
        apr_size_t offset;
    } known[] = {
        {"url", 3, offsetof(beacon_datagram_t, url)},
        {"host", 4, offsetof(beacon_datagram_t, host)},
        {"pid", 3, offsetof(beacon_datagram_t, pid)},
        {"seq", 3, offsetof(beacon_datagram_t, seq)},
        {"state", 5, offsetof(beacon_datagram_t, state)},
        {"svc", 3, offsetof(beacon_datagram_t, svc)},
        {"route", 5, offsetof(beacon_datagram_t, route)},
        {"lbfactor", 8, offsetof(beacon_datagram_t, lbfactor)},
        {"ctx", 3, offsetof(beacon_datagram_t, ctx)},
    };
    tokens_t t = tokens_of(buf, signed_len);
    beacon_span_t key, value, ts = {NULL, 0};
    beacon_span_t unknown[BEACON_MAX_FIELDS];
    unsigned nunknown = 0;
    apr_size_t i;

    memset(out, 0, sizeof(*out));
    while (next_token(&t, &key, &value) == 1) {
        beacon_span_t *slot = NULL;

        if (span_is(&key, "ts", 2)) {
            slot = &ts;
        }
        else if (span_is(&key, "mac", 3)) {
            return BEACON_DROP_DUPLICATE_FIELD; /* the frame ends in mac= */
        }
        for (i = 0; slot == NULL && i < sizeof(known) / sizeof(known[0]); i++) {
            if (span_is(&key, known[i].key, known[i].len)) {
                slot = (beacon_span_t *)((char *)out + known[i].offset);
            }
        }
        if (slot == NULL) {
            if (key_among(unknown, nunknown, &key)) {
                return BEACON_DROP_DUPLICATE_FIELD;
            }
            if (nunknown < BEACON_MAX_FIELDS) { /* always: the frame's cap */
                unknown[nunknown++] = key;
            }
            continue; /* unknown keys are covered by the MAC and ignored */
        }
        if (slot->ptr != NULL) {
            return BEACON_DROP_DUPLICATE_FIELD;
        }
        *slot = value;
    }
    if (ts.ptr == NULL || !beacon_parse_decimal(ts.ptr, ts.len, &out->ts)) {
        return BEACON_DROP_BAD_TS;
    }
    return BEACON_OK;
}

/* A bad value of field key: bad_field names the key (a value always
 * follows its "key=" in the buffer). */
static beacon_reason_t bad_field(beacon_datagram_t *out,
                                 const beacon_span_t *value, apr_size_t keylen)
{
    out->bad_field.ptr = value->ptr - keylen - 1;
    out->bad_field.len = keylen;
    return BEACON_DROP_BAD_FIELD;
}

/*
 * Step 4, last: the values of the version 1.1 and 1.2 fields this release
 * acts on, in the wire order, so that none is ever half-applied.
 */
static beacon_reason_t check_values(beacon_datagram_t *out)
{
    beacon_span_t paths[BEACON_CTX_MAX_PATHS];

    if (out->svc.ptr != NULL &&
        !beacon_word_span_is_valid(out->svc.ptr, out->svc.len, BEACON_SERVICE_MAX)) {
        return bad_field(out, &out->svc, sizeof("svc") - 1);
    }
    if (out->ctx.ptr != NULL &&
        beacon_ctx_parse(out->ctx.ptr, out->ctx.len, paths) < 0) {
        return bad_field(out, &out->ctx, sizeof("ctx") - 1);
    }
    if (out->route.ptr != NULL &&
        !beacon_word_span_is_valid(out->route.ptr, out->route.len, BEACON_ROUTE_MAX)) {
        return bad_field(out, &out->route, sizeof("route") - 1);
    }
    if (out->lbfactor.ptr != NULL &&
        beacon_lbfactor_parse(out->lbfactor.ptr, out->lbfactor.len) < 0) {
        return bad_field(out, &out->lbfactor, sizeof("lbfactor") - 1);
    }
    if (out->state.ptr != NULL &&
        beacon_wire_state_parse(out->state.ptr, out->state.len) < 0) {
        return bad_field(out, &out->state, sizeof("state") - 1);
    }
    return BEACON_OK;
}

beacon_wire_state_t beacon_datagram_state(const beacon_datagram_t *dg)
{
    int st = beacon_wire_state_parse(dg->state.ptr, dg->state.len);

    return st < 0 ? BEACON_WIRE_NONE : (beacon_wire_state_t)st;
}

int beacon_datagram_is_leaving(const beacon_datagram_t *dg)
{
    return beacon_datagram_state(dg) == BEACON_WIRE_LEAVING;
}

apr_int64_t beacon_span_number(const beacon_span_t *span)
{
    apr_int64_t n;

    if (span->ptr == NULL || !beacon_parse_decimal(span->ptr, span->len, &n)) {
        return -1;
    }
    return n;
}

/* Steps 1 and 2; *signed_len is where " mac=" starts. */
beacon_reason_t beacon_check_frame(const char *buf, apr_size_t len,
                                   apr_size_t *signed_len,
                                   beacon_datagram_t *out)
{
    /* set by a bad field or a derived key only, whatever comes */
    memset(&out->bad_field, 0, sizeof(out->bad_field));
    memset(&out->unverified_svc, 0, sizeof(out->unverified_svc));
    memset(&out->unverified_url, 0, sizeof(out->unverified_url));
    out->service = BEACON_SERVICE_DEFAULT;
    if (len > BEACON_MAX_DATAGRAM) {
        return BEACON_DROP_OVERSIZE;
    }
    if (memchr(buf, '\0', len) != NULL) {
        return BEACON_DROP_EMBEDDED_NUL;
    }
    if (!frame_is_valid(buf, len, signed_len)) {
        return BEACON_DROP_BAD_FRAME;
    }
    return BEACON_OK;
}

/* Step 3 under keys[0..nkeys): one MAC per key until one matches. */
static int any_key_matches(const char *buf, apr_size_t signed_len,
                           const beacon_key_t *keys, unsigned nkeys)
{
    unsigned i;

    for (i = 0; i < nkeys && i < BEACON_MAX_KEYS; i++) {
        if (beacon_mac_matches(buf, signed_len, &keys[i])) {
            return 1;
        }
    }
    return 0;
}

/* Steps 4 and 5, once the MAC matched. */
beacon_reason_t beacon_check_fields(const char *buf, apr_size_t signed_len,
                                    apr_time_t now,
                                    apr_interval_time_t max_skew,
                                    beacon_datagram_t *out)
{
    apr_int64_t skew;
    beacon_reason_t reason = parse_fields(buf, signed_len, out);

    out->service = BEACON_SERVICE_DEFAULT; /* parse_fields cleared out */
    if (reason == BEACON_OK) {
        reason = check_values(out);
    }
    if (reason != BEACON_OK) {
        return reason;
    }
    skew = out->ts - (apr_int64_t)now;
    if (skew > max_skew || -skew > max_skew) {
        return BEACON_DROP_STALE_TS;
    }
    return BEACON_OK;
}

beacon_reason_t beacon_verify_any(const char *buf, apr_size_t len,
                                  const beacon_key_t *keys, unsigned nkeys,
                                  apr_time_t now, apr_interval_time_t max_skew,
                                  beacon_datagram_t *out)
{
    apr_size_t signed_len;
    beacon_reason_t reason = beacon_check_frame(buf, len, &signed_len, out);

    if (reason != BEACON_OK) {
        return reason;
    }
    if (!any_key_matches(buf, signed_len, keys, nkeys)) {
        return BEACON_DROP_MAC_MISMATCH;
    }
    return beacon_check_fields(buf, signed_len, now, max_skew, out);
}

/*
 * The values of the first svc= and url= tokens of a well-framed signed
 * part, bytes unparsed: what is read before the MAC, and only to pick and
 * derive keys. A second svc= or url= is a duplicate field after the MAC,
 * so what parse_fields gives after it is always these bytes.
 */
void beacon_first_tokens(const char *buf, apr_size_t signed_len,
                         beacon_span_t *svc, beacon_span_t *url)
{
    tokens_t t = tokens_of(buf, signed_len);
    beacon_span_t key, value;

    svc->ptr = url->ptr = NULL;
    svc->len = url->len = 0;
    while ((svc->ptr == NULL || url->ptr == NULL) &&
           next_token(&t, &key, &value) == 1) {
        if (svc->ptr == NULL && span_is(&key, "svc", 3)) {
            *svc = value;
        }
        else if (url->ptr == NULL && span_is(&key, "url", 3)) {
            *url = value;
        }
    }
}

beacon_reason_t beacon_verify(const char *buf, apr_size_t len,
                              const beacon_key_t *key, apr_time_t now,
                              apr_interval_time_t max_skew,
                              beacon_datagram_t *out)
{
    return beacon_verify_any(buf, len, key, 1, now, max_skew, out);
}
