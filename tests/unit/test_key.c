/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The secret: beacon_key_parse() on the rows of tests/vectors/secrets.txt
 * ("hex:" + 32 hex digits, or a passphrase of >= 16 bytes whose SHA-1's
 * first 16 bytes are the key), and the secret-file rule,
 * beacon_key_parse_file() on secret-files.txt and on lines of every
 * length that matters, and beacon_key_read_file() on real files.
 *
 * The expected passphrase keys in the data files were computed outside APR
 * (Python's hashlib); the long lines' keys here come from APR's SHA-1 on
 * exactly the bytes that must count, never from the function under test.
 */
#include "test_common.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <apr_file_info.h>
#include <apr_general.h>
#include <apr_sha1.h>

static const char *const secret_cols[] = {"secret", "key", "name", NULL};
static const char *const file_cols[] = {"file", "key", "name", NULL};
enum { COL_SECRET, COL_KEY, COL_NAME }; /* both files: the input comes first */

/* A key filled with a pattern no valid secret here produces. */
static void poison(beacon_key_t *key)
{
    memset(key->bytes, 0xa5, sizeof key->bytes);
}

static void assert_poisoned(const beacon_key_t *key, const char *what)
{
    unsigned char pattern[BEACON_KEY_LEN];

    memset(pattern, 0xa5, sizeof pattern);
    if (memcmp(key->bytes, pattern, sizeof pattern) != 0) {
        print_error("key written on error: %s\n", what);
    }
    assert_memory_equal(key->bytes, pattern, sizeof pattern);
}

/*
 * True when msg contains any 8-byte window of secret[0..n): the message
 * may say "hex:" or "16 bytes", but must not echo the secret or a piece
 * of it.
 */
static int leaks_secret(const char *msg, const char *secret, size_t n)
{
    char window[9];
    size_t i;

    for (i = 0; i + 8 <= n; i++) {
        memcpy(window, secret + i, 8);
        window[8] = '\0';
        if (strlen(window) == 8 && strstr(msg, window) != NULL) {
            return 1;
        }
    }
    return 0;
}

/* A refusal: a one-line message that quotes nothing of the input, and the
 * key left as it was. */
static void assert_refused(const char *msg, const beacon_key_t *key,
                           const char *input, size_t len, const char *name)
{
    if (msg == NULL) {
        print_error("case: %s: accepted\n", name);
    }
    assert_non_null(msg);
    assert_true(msg[0] != '\0');
    assert_null(strchr(msg, '\n'));
    if (leaks_secret(msg, input, len)) {
        print_error("case: %s: message \"%s\" quotes the secret\n", name, msg);
    }
    assert_false(leaks_secret(msg, input, len));
    assert_poisoned(key, name);
}

static void assert_key(const char *msg, const beacon_key_t *key,
                       const unsigned char *want, const char *name)
{
    if (msg != NULL) {
        print_error("case: %s: refused with \"%s\"\n", name, msg);
    }
    assert_null(msg);
    if (memcmp(key->bytes, want, BEACON_KEY_LEN) != 0) {
        print_error("case: %s: wrong key bytes\n", name);
    }
    assert_memory_equal(key->bytes, want, BEACON_KEY_LEN);
}

/*
 * One row of secrets.txt or secret-files.txt through parse: the key of
 * the key column, or a refusal when it says "refused".
 */
typedef const char *(*parse_fn)(const vec_field_t *input, beacon_key_t *key);

static unsigned check_rows(const char *file, const char *const *cols,
                           parse_fn parse, unsigned *refused)
{
    vec_table_t t = load_vectors(file, cols, 12);
    size_t i;

    *refused = 0;
    for (i = 0; i < t.nrows; i++) {
        const vec_row_t *r = &t.rows[i];
        const char *name = r->col[COL_NAME].text;
        unsigned char want[BEACON_KEY_LEN];
        beacon_key_t key;
        const char *msg;

        poison(&key);
        msg = parse(&r->col[COL_SECRET], &key);
        if (vec_is(&r->col[COL_KEY], "refused")) {
            assert_refused(msg, &key, r->col[COL_SECRET].text,
                           r->col[COL_SECRET].len, name);
            ++*refused;
            continue;
        }
        if (vec_hex(&r->col[COL_KEY], want, sizeof want) != 0) {
            fail_msg("%s:%u: key is neither 32 hex digits nor refused", t.path,
                     r->line);
        }
        assert_key(msg, &key, want, name);
    }
    i = t.nrows;
    vec_free(&t);
    return (unsigned)i;
}

/* ------------------------------------------------------------------ */
/* beacon_key_parse: tests/vectors/secrets.txt                          */

static const char *parse_inline(const vec_field_t *secret, beacon_key_t *key)
{
    /* A secret with a NUL cannot reach the parser: no row may have one. */
    assert_int_equal(strlen(secret->text), secret->len);
    return beacon_key_parse(secret->text, key);
}

static void each_secret_gives_its_key_or_is_refused(void **state)
{
    unsigned refused, rows = check_rows("secrets.txt", secret_cols,
                                        parse_inline, &refused);

    (void)state;
    assert_true(refused >= 10 && rows - refused >= 10);
}

/*
 * Parsing is a pure function of the secret: a rejected secret in between
 * leaves no trace, and the same secret gives the same key twice.
 */
static void parsing_is_repeatable(void **state)
{
    beacon_key_t a, b;

    (void)state;
    poison(&a);
    memset(b.bytes, 0x5a, sizeof b.bytes);
    assert_null(beacon_key_parse("a-long-random-shared-cluster-secret", &a));
    assert_non_null(beacon_key_parse("0123456789abcde", &b));
    assert_null(beacon_key_parse("a-long-random-shared-cluster-secret", &b));
    assert_memory_equal(a.bytes, b.bytes, sizeof a.bytes);
    assert_non_null(beacon_key_parse(NULL, &b));
}

static void key_wipe_leaves_no_key_material(void **state)
{
    beacon_key_t k;
    const unsigned char zero[BEACON_KEY_LEN] = {0};

    (void)state;
    assert_null(beacon_key_parse("hex:00112233445566778899aabbccddeeff", &k));
    assert_true(memcmp(k.bytes, zero, sizeof(zero)) != 0);
    beacon_key_wipe(&k);
    assert_memory_equal(k.bytes, zero, sizeof(zero));
}

/* ------------------------------------------------------------------ */
/* beacon_key_parse_file: tests/vectors/secret-files.txt, line lengths */

static const char *parse_file_guarded(const vec_field_t *file,
                                      beacon_key_t *key)
{
    guarded_t g = guarded_copy(file->text, file->len);
    const char *msg = beacon_key_parse_file(g.buf, file->len, key);

    guarded_free(&g);
    return msg;
}

static void each_secret_file_gives_its_key_or_is_refused(void **state)
{
    unsigned refused, rows = check_rows("secret-files.txt", file_cols,
                                        parse_file_guarded, &refused);

    (void)state;
    assert_true(refused >= 5 && rows - refused >= 5);
}

/* A passphrase line of n bytes that differs from every prefix of itself
 * in its key: the alphabet repeated, so a cut anywhere shows. */
static char *passphrase_line(size_t n)
{
    char *s = malloc(n + 3);
    size_t i;

    assert_non_null(s);
    for (i = 0; i < n; i++) {
        s[i] = (char)('a' + i % 26);
    }
    s[n] = '\0';
    return s;
}

/* What the key of a passphrase must be: APR's SHA-1, first 16 bytes. */
static void sha1_key(const char *s, size_t n, unsigned char key[BEACON_KEY_LEN])
{
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t sha;

    apr_sha1_init(&sha);
    apr_sha1_update_binary(&sha, (const unsigned char *)s, (unsigned int)n);
    apr_sha1_final(digest, &sha);
    memcpy(key, digest, BEACON_KEY_LEN);
}

typedef struct {
    const char *name;
    size_t line;      /* bytes of the passphrase line */
    const char *end;  /* what follows it in the file */
    int ok;
} length_row_t;

static void lines_up_to_4096_bytes_give_the_key_of_exactly_those_bytes(void **state)
{
    static const length_row_t rows[] = {
        {"1,023 bytes and LF", 1023, "\n", 1},
        {"1,024 bytes and LF (past the old 1,023-byte cut)", 1024, "\n", 1},
        {"1,025 bytes, no line end", 1025, "", 1},
        {"4,095 bytes and LF", 4095, "\n", 1},
        {"4,096 bytes and LF, the most", 4096, "\n", 1},
        {"4,096 bytes and CRLF: the CR is no part of it", 4096, "\r\n", 1},
        {"4,096 bytes at the end of the file", 4096, "", 1},
        {"4,096 bytes, then more lines", 4096, "\nsecond\nthird", 1},
        {"4,097 bytes and LF are refused", 4097, "\n", 0},
        {"4,097 bytes and CRLF are refused", 4097, "\r\n", 0},
        {"4,097 bytes at the end of the file are refused", 4097, "", 0},
        {"10,000 bytes are refused", 10000, "\n", 0},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const length_row_t *r = &rows[i];
        size_t len = r->line + strlen(r->end);
        char *file = passphrase_line(len);
        unsigned char want[BEACON_KEY_LEN];
        beacon_key_t key;
        vec_field_t f;
        const char *msg;

        memcpy(file + r->line, r->end, strlen(r->end));
        f.text = file;
        f.len = len;
        poison(&key);
        msg = parse_file_guarded(&f, &key);
        if (r->ok) {
            sha1_key(file, r->line, want);
            assert_key(msg, &key, want, r->name);
        }
        else {
            assert_refused(msg, &key, file, len, r->name);
        }
        free(file);
    }
}

/* ------------------------------------------------------------------ */
/* beacon_key_read_file                                                */

static apr_pool_t *pool;
static char dir[64];

static int make_pool_and_dir(void **state)
{
    (void)state;
    if (apr_initialize() != APR_SUCCESS ||
        apr_pool_create(&pool, NULL) != APR_SUCCESS) {
        return -1;
    }
    snprintf(dir, sizeof dir, "/tmp/beacon-test-key-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

/* The files the tests below write into dir, and nothing else. */
static const char *const test_files[] = {"secret", "long", "perm"};

static int remove_pool_and_dir(void **state)
{
    char path[128];
    size_t i;

    (void)state;
    apr_pool_destroy(pool);
    apr_terminate();
    for (i = 0; i < ARRAY_LEN(test_files); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, test_files[i]);
        unlink(path);
    }
    return rmdir(dir);
}

/* Writes content[0..len) to dir/name with mode; returns the path. */
static const char *write_file(const char *name, const char *content,
                              size_t len, mode_t mode)
{
    static char path[128];
    int fd;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

#define HEX_LINE "hex:00112233445566778899aabbccddeeff"
#define HEX_KEY "00112233445566778899aabbccddeeff"

static void read_file_applies_the_rule_to_a_real_file(void **state)
{
    static const struct {
        const char *name;
        const char *content;
        int ok;
    } rows[] = {
        {"a hex line and LF", HEX_LINE "\n", 1},
        {"a hex line and CRLF", HEX_LINE "\r\n", 1},
        {"a hex line, no line end", HEX_LINE, 1},
        {"only the first line counts", HEX_LINE "\nhex:ffff\n", 1},
        {"an empty file is refused", "", 0},
        {"a CR inside the line is refused", "hex:0011\r" HEX_KEY "\n", 0},
    };
    unsigned char want[BEACON_KEY_LEN];
    size_t i;

    (void)state;
    hex_to_bytes(HEX_KEY, want, sizeof want);
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        size_t len = strlen(rows[i].content);
        const char *path = write_file("secret", rows[i].content, len, 0600);
        beacon_key_t key;
        const char *msg;

        poison(&key);
        msg = beacon_key_read_file(pool, path, &key, NULL);
        if (rows[i].ok) {
            assert_key(msg, &key, want, rows[i].name);
        }
        else {
            assert_refused(msg, &key, rows[i].content, len, rows[i].name);
        }
    }
}

/* The reader reads enough to see the longest line and its CRLF. */
static void read_file_takes_4096_bytes_and_crlf_and_refuses_4097(void **state)
{
    char *file = passphrase_line(4097 + 2);
    unsigned char want[BEACON_KEY_LEN];
    beacon_key_t key;
    const char *path;

    (void)state;
    memcpy(file + 4096, "\r\nmore", 6);
    path = write_file("long", file, 4096 + 6, 0600);
    sha1_key(file, 4096, want);
    assert_key(beacon_key_read_file(pool, path, &key, NULL), &key, want,
               "a 4,096-byte line and CRLF in a file");

    file = realloc(file, 8192);
    assert_non_null(file);
    memset(file, 'x', 8192);
    path = write_file("long", file, 8192, 0600);
    poison(&key);
    assert_refused(beacon_key_read_file(pool, path, &key, NULL), &key, file,
                   8192, "an 8,192-byte line in a file");
    free(file);
}

static void read_file_names_the_path_of_a_file_it_cannot_read(void **state)
{
    char missing[128];
    beacon_key_t key;
    const char *msg;

    (void)state;
    snprintf(missing, sizeof missing, "%s/no-such-secret", dir);
    poison(&key);
    msg = beacon_key_read_file(pool, missing, &key, NULL);
    assert_non_null(msg);
    if (strstr(msg, missing) == NULL) {
        print_error("message \"%s\" does not name %s\n", msg, missing);
    }
    assert_non_null(strstr(msg, missing));
    assert_poisoned(&key, "a missing file");

    /* A directory opens but cannot be read as a file. */
    msg = beacon_key_read_file(pool, dir, &key, NULL);
    assert_non_null(msg);
    assert_non_null(strstr(msg, dir));
    assert_poisoned(&key, "a directory");
}

/* The permission bits come back so that a caller can warn about a secret
 * others can read; APR's bits, not the mode_t's. */
static void read_file_returns_the_permission_bits(void **state)
{
    static const struct {
        mode_t mode;
        apr_fileperms_t want;
    } rows[] = {
        {0600, APR_FPROT_UREAD | APR_FPROT_UWRITE},
        {0400, APR_FPROT_UREAD},
        {0640, APR_FPROT_UREAD | APR_FPROT_UWRITE | APR_FPROT_GREAD},
        {0644, APR_FPROT_UREAD | APR_FPROT_UWRITE | APR_FPROT_GREAD |
                   APR_FPROT_WREAD},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(rows); i++) {
        const char *path = write_file("perm", HEX_LINE "\n",
                                      strlen(HEX_LINE) + 1, rows[i].mode);
        apr_finfo_t info;
        apr_fileperms_t prot;
        beacon_key_t key;

        memset(&info, 0xff, sizeof(info));
        assert_null(beacon_key_read_file(pool, path, &key, &info));
        assert_true((info.valid & APR_FINFO_PROT) == APR_FINFO_PROT);
        assert_true((info.valid & APR_FINFO_OWNER) == APR_FINFO_OWNER);
        assert_int_equal(info.user, getuid());
        prot = info.protection;
        if (prot != rows[i].want) {
            print_error("mode %04o: prot 0x%04x, want 0x%04x\n",
                        (unsigned)rows[i].mode, (unsigned)prot,
                        (unsigned)rows[i].want);
        }
        assert_int_equal(prot, rows[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_wipe_leaves_no_key_material),
        cmocka_unit_test(each_secret_gives_its_key_or_is_refused),
        cmocka_unit_test(parsing_is_repeatable),
        cmocka_unit_test(each_secret_file_gives_its_key_or_is_refused),
        cmocka_unit_test(lines_up_to_4096_bytes_give_the_key_of_exactly_those_bytes),
        cmocka_unit_test(read_file_applies_the_rule_to_a_real_file),
        cmocka_unit_test(read_file_takes_4096_bytes_and_crlf_and_refuses_4097),
        cmocka_unit_test(read_file_names_the_path_of_a_file_it_cannot_read),
        cmocka_unit_test(read_file_returns_the_permission_bits),
    };

    return cmocka_run_group_tests_name("key", tests, make_pool_and_dir,
                                       remove_pool_and_dir);
}
