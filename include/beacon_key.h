/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * libbeacon: keys, secret files and the MAC (lib/beacon_key.c); where
 * a secret comes from is beacon_secret.h.
 */
#ifndef BEACON_KEY_H
#define BEACON_KEY_H

#include "beacon_common.h"

#include <apr_file_info.h>
#include <apr_pools.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Key                                                                 */

typedef struct {
    unsigned char bytes[BEACON_KEY_LEN];
} beacon_key_t;

/*
 * Parses a ProxyBeaconSecret value: "hex:" followed by exactly 32 hex digits,
 * or a passphrase of at least 16 bytes (key = first 16 bytes of its SHA-1).
 * Returns NULL on success, else a static one-line message fit for a
 * configuration error; it never contains the secret. *key is untouched on
 * error.
 */
const char *beacon_key_parse(const char *secret, beacon_key_t *key);

/*
 * What a secret is for. A key signs and verifies datagrams (hex: or a
 * passphrase). A master is what member keys are derived from
 * (beacon_member_key_derive): hex: only, a passphrase is refused, since
 * SHA-1 of a text is open to guessing offline and a master mints every
 * member's key. Each reader of a secret below has an _as form that takes
 * the use; the plain form reads a key.
 */
typedef enum {
    BEACON_KEY_USE_MAC = 0,
    BEACON_KEY_USE_MASTER
} beacon_key_use_t;

const char *beacon_key_parse_as(const char *secret, beacon_key_use_t use,
                                beacon_key_t *key);

/*
 * The secret-file rule, the same for ProxyBeaconSecret file:/path and
 * beaconctl --secret-file: the secret is the file's first line, up to its
 * LF (or the end of the file), one CR right before that end dropped. The line
 * may hold at most BEACON_SECRET_LINE_MAX bytes, and no NUL and no other
 * CR (either would make one tool read another key than the other). The
 * line is then parsed as beacon_key_parse() does.
 */
#define BEACON_SECRET_LINE_MAX 4096

/* The rule on the first len bytes of a file (the caller read at least
 * BEACON_SECRET_READ_MAX of them, or the whole file). Returns NULL, or a
 * static message that never holds the secret. */
#define BEACON_SECRET_READ_MAX (BEACON_SECRET_LINE_MAX + 2) /* + CR LF */
const char *beacon_key_parse_file(const char *buf, apr_size_t len,
                                  beacon_key_t *key);
const char *beacon_key_parse_file_as(const char *buf, apr_size_t len,
                                     beacon_key_use_t use, beacon_key_t *key);

/*
 * Reads path and applies the rule: the file's bytes never outlive the
 * call (wiped). *info, when not NULL, gets what the file system says of
 * the file's permissions and owner (APR_FINFO_PROT | APR_FINFO_OWNER;
 * info->valid says which it could tell), so that a caller can warn about
 * a file others can read. Returns NULL, or a message from p (an I/O error
 * names the path).
 */
const char *beacon_key_read_file(apr_pool_t *p, const char *path,
                                 beacon_key_t *key, apr_finfo_t *info);
const char *beacon_key_read_file_as(apr_pool_t *p, const char *path,
                                    beacon_key_use_t use, beacon_key_t *key,
                                    apr_finfo_t *info);


/* A key as the secret that gives it: "hex:" and 32 lower-case hex digits,
 * NUL-terminated (what beaconctl keygen and derive-key print). */
#define BEACON_KEY_TEXT_SIZE (4 + 2 * BEACON_KEY_LEN + 1)
void beacon_key_format(const beacon_key_t *key,
                       char out[BEACON_KEY_TEXT_SIZE]);

/* Zeroes a key so that freed memory keeps no key material. */
void beacon_key_wipe(beacon_key_t *key);

/* Zeroes len bytes at p in a way the optimizer keeps (secrets on a stack). */
void beacon_wipe(void *p, apr_size_t len);

/* The 8-byte SipHash-2-4 tag of buf[0..len) under key. */
void beacon_mac(const beacon_key_t *key, const void *buf, apr_size_t len,
                unsigned char mac[BEACON_MAC_LEN]);

/*
 * A member's key (wire format, version 1.3: member keys), derived from a
 * master for the service svc[0..svc_len) (empty: a member that sends no
 * svc=) and the member's canonical url url[0..url_len):
 *
 *   L   = "beacon-member-v1" 0x00 SVC 0x00 URL
 *   key = LE64(SipHash-2-4(master, 0x01 || L)) ||
 *         LE64(SipHash-2-4(master, 0x02 || L))
 *
 * The bytes are taken as given: whether the url is canonical is the
 * caller's check (beacon_url_is_canonical). No allocation; svc and url
 * together may hold up to BEACON_MAX_DATAGRAM bytes (any two fields of one
 * datagram). Returns 0 with *out set (out may be master), or -1 when they
 * hold more (*out untouched).
 */
int beacon_member_key_derive(const beacon_key_t *master, const char *svc,
                             apr_size_t svc_len, const char *url,
                             apr_size_t url_len, beacon_key_t *out);

#ifdef __cplusplus
}
#endif
#endif /* BEACON_KEY_H */
