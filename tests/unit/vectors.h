/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A reader for the data files of tests/vectors/ (their line format is in
 * tests/vectors/README.md). Plain C11 and stdio, no cmocka: the unit tests
 * (through test_common.h) and fuzz/mkcorpus.c share it. Header-only
 * (static inline), like test_common.h.
 *
 * A file is read whole and checked whole: an unknown escape, a wrong
 * column count or a header other than the caller's expects fails the load
 * with a message naming the file and line, so a damaged file can never
 * pass as fewer or different rows.
 */
#ifndef BEACON_TEST_VECTORS_H
#define BEACON_TEST_VECTORS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VEC_MAX_COLS 8
#define VEC_MAX_FILE (1024 * 1024) /* far above any file here */

typedef struct {
    const char *text; /* unescaped, NUL-terminated; may hold NULs: see len */
    size_t len;
} vec_field_t;

typedef struct {
    vec_field_t col[VEC_MAX_COLS];
    unsigned line; /* in the file, for messages */
    char *mem;     /* the row's unescaped fields, one allocation */
} vec_row_t;

typedef struct {
    char path[1024];
    vec_row_t *rows;
    size_t nrows;
    size_t ncols;
} vec_table_t;

static inline int vec_fail(char *err, size_t errsize, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void)vsnprintf(err, errsize, fmt, ap);
    va_end(ap);
    return -1;
}

static inline int vec_hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Unescapes raw[0..n) to out (room for n + 1); the length, or -1. */
static inline long vec_unescape(const char *raw, size_t n, char *out)
{
    size_t i, o = 0;

    for (i = 0; i < n; i++) {
        char c = raw[i];

        if (c == '\\') {
            char e = i + 1 < n ? raw[++i] : '\0';

            switch (e) {
            case '\\': c = '\\'; break;
            case 't': c = '\t'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case '0': c = '\0'; break;
            case 'x':
                if (i + 2 >= n || vec_hex_digit(raw[i + 1]) < 0 ||
                    vec_hex_digit(raw[i + 2]) < 0) {
                    return -1;
                }
                c = (char)(vec_hex_digit(raw[i + 1]) << 4 |
                           vec_hex_digit(raw[i + 2]));
                i += 2;
                break;
            default:
                return -1;
            }
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return (long)o;
}

/* Splits line[0..n) at TABs into row (unescaped); 0, or -1 with err set. */
static inline int vec_split(const vec_table_t *t, const char *line, size_t n,
                            unsigned lineno, vec_row_t *row, char *err,
                            size_t errsize)
{
    size_t start = 0, col = 0, i;
    char *out = malloc(n + VEC_MAX_COLS + 1);

    if (out == NULL) {
        return vec_fail(err, errsize, "%s: out of memory", t->path);
    }
    row->mem = out;
    row->line = lineno;
    for (i = 0; i <= n; i++) {
        long len;

        if (i < n && line[i] != '\t') {
            continue;
        }
        if (col == t->ncols) {
            return vec_fail(err, errsize, "%s:%u: more than %zu fields",
                            t->path, lineno, t->ncols);
        }
        len = vec_unescape(line + start, i - start, out);
        if (len < 0) {
            return vec_fail(err, errsize, "%s:%u: field %zu: bad escape",
                            t->path, lineno, col + 1);
        }
        row->col[col].text = out;
        row->col[col++].len = (size_t)len;
        out += len + 1;
        start = i + 1;
    }
    if (col != t->ncols) {
        return vec_fail(err, errsize, "%s:%u: %zu fields, the header has %zu",
                        t->path, lineno, col, t->ncols);
    }
    return 0;
}

/* Whether line[0..n) is exactly the column names cols, TAB-separated. */
static inline int vec_header_is(const char *line, size_t n,
                                const char *const *cols, size_t *ncols)
{
    size_t pos = 0, c;

    for (c = 0; cols[c] != NULL; c++) {
        size_t len = strlen(cols[c]);

        if (c > 0 && (pos >= n || line[pos++] != '\t')) {
            return 0;
        }
        if (len > n - pos || memcmp(line + pos, cols[c], len) != 0) {
            return 0;
        }
        pos += len;
    }
    *ncols = c;
    return pos == n && c > 0 && c <= VEC_MAX_COLS;
}

/* Reads path whole into a NUL-terminated buffer; NULL with err set. */
static inline char *vec_slurp(const char *path, size_t *len, char *err,
                              size_t errsize)
{
    FILE *f = fopen(path, "rb");
    char *buf;

    if (f == NULL) {
        vec_fail(err, errsize, "cannot open %s", path);
        return NULL;
    }
    buf = malloc(VEC_MAX_FILE + 1);
    *len = buf ? fread(buf, 1, VEC_MAX_FILE + 1, f) : 0;
    if (buf == NULL || ferror(f) || *len > VEC_MAX_FILE) {
        vec_fail(err, errsize, "cannot read %s (or larger than %d bytes)",
                 path, VEC_MAX_FILE);
        free(buf);
        buf = NULL;
    }
    else {
        buf[*len] = '\0';
    }
    fclose(f);
    return buf;
}

/* The first byte of line[0..n) that no data file may hold raw, or -1. */
static inline long vec_bad_byte(const char *line, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)line[i];

        if ((c < 0x20 && c != '\t') || c > 0x7e) {
            return (long)i;
        }
    }
    return -1;
}

static inline void vec_free(vec_table_t *t)
{
    size_t i;

    for (i = 0; i < t->nrows; i++) {
        free(t->rows[i].mem);
    }
    free(t->rows);
    t->rows = NULL;
    t->nrows = 0;
}

/* One line of the file: skipped, the header, or a row. 0, or -1. */
static inline int vec_line(vec_table_t *t, const char *const *cols,
                           const char *line, size_t n, unsigned lineno,
                           char *err, size_t errsize)
{
    long bad = vec_bad_byte(line, n);

    if (bad >= 0) {
        return vec_fail(err, errsize, "%s:%u: raw byte 0x%02x in column %ld",
                        t->path, lineno, (unsigned char)line[bad], bad + 1);
    }
    if (n == 0 || line[0] == '#') {
        return 0;
    }
    if (t->ncols == 0) {
        if (!vec_header_is(line, n, cols, &t->ncols)) {
            return vec_fail(err, errsize, "%s:%u: header \"%.*s\" is not the "
                            "expected columns (%s ...)", t->path, lineno,
                            (int)n, line, cols[0]);
        }
        return 0;
    }
    if (vec_split(t, line, n, lineno, &t->rows[t->nrows], err, errsize) != 0) {
        free(t->rows[t->nrows].mem); /* a half-split row is not counted */
        return -1;
    }
    t->nrows++;
    return 0;
}

/*
 * Loads dir/name, whose header must be exactly cols (NULL-terminated).
 * Returns 0 with t filled (free with vec_free), or -1 with a message in
 * err and nothing to free.
 */
static inline int vec_load(vec_table_t *t, const char *dir, const char *name,
                           const char *const *cols, char *err, size_t errsize)
{
    unsigned lineno = 0;
    size_t len, pos = 0;
    char *buf;

    memset(t, 0, sizeof(*t));
    (void)snprintf(t->path, sizeof(t->path), "%s/%s", dir, name);
    /* Again after the path, for clang's analyzer, which forgets the
     * whole struct once snprintf has written into a part of it. */
    t->rows = NULL;
    t->nrows = 0;
    t->ncols = 0;
    if ((buf = vec_slurp(t->path, &len, err, errsize)) == NULL) {
        return -1;
    }
    /* A row takes two bytes at least (one and its LF): room enough. */
    t->rows = calloc(len / 2 + 2, sizeof(*t->rows));
    while (t->rows != NULL && pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

        if (vec_line(t, cols, buf + pos, n, ++lineno, err, errsize) != 0) {
            break;
        }
        pos += n + 1;
    }
    free(buf);
    if (t->rows == NULL || pos < len) {
        if (t->rows == NULL) {
            vec_fail(err, errsize, "%s: out of memory", t->path);
        }
        vec_free(t);
        return -1;
    }
    if (t->ncols == 0) {
        vec_free(t);
        return vec_fail(err, errsize, "%s: no header line", t->path);
    }
    return 0;
}

/* Decodes a field of exactly 2 * n hex digits into out; 0, or -1. */
static inline int vec_hex(const vec_field_t *f, unsigned char *out, size_t n)
{
    size_t i;

    if (f->len != 2 * n) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        int hi = vec_hex_digit(f->text[2 * i]);
        int lo = vec_hex_digit(f->text[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

/* Whether a field is exactly the string s. */
static inline int vec_is(const vec_field_t *f, const char *s)
{
    return f->len == strlen(s) && memcmp(f->text, s, f->len) == 0;
}

#endif /* BEACON_TEST_VECTORS_H */
