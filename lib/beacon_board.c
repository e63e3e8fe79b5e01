/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The route board (beacon_board.h has its contract): two route images in
 * memory shared between processes, one writer, readers that never lock.
 *
 * Layout, each part on its own 64-byte line from the board's start:
 *   board_t                       magic, capacity, the current generation
 *   2 x (buffer_t, padded to 64   each buffer's seqlock and generation
 *        image, capacity bytes)   a route image (beacon_routes_build)
 *
 * The current generation's parity names the current buffer, so one
 * 32-bit word publishes both at once (and still does past a wrap). The
 * writer writes only the other buffer, between an odd and an even value
 * of its seq; a reader takes the current generation, reads that buffer
 * between two reads of its seq, and keeps what it read only when seq
 * stayed the same even value and the buffer held that generation.
 * Everything it reads in between goes through a view (beacon_routes_view,
 * beacon_routes_find): a torn image gives a wrong answer that is thrown
 * away, never a read outside the buffer.
 */

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "beacon_private.h"

/* Other processes read these counters: a lock that lives in one
 * process's memory would not hold for them. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the board needs lock-free ints");

#define BOARD_MAGIC 0x42434542u /* "BECB" read little-endian */
#define BOARD_VERSION 1
#define LINE 64
/* beyond any image (BEACON_ROUTES_MAX routes of the longest names) */
#define CAPACITY_MAX ((apr_size_t)1 << 28)

typedef struct {
    apr_uint32_t magic;   /* BOARD_MAGIC, written once by init */
    apr_uint32_t version; /* BOARD_VERSION */
    apr_uint64_t capacity;
    _Atomic apr_uint32_t generation; /* the current table's; parity: buffer */
} board_t;

typedef struct {
    _Atomic apr_uint32_t seq;        /* odd while the writer writes */
    _Atomic apr_uint32_t generation; /* of the image it holds (or was given) */
} buffer_t;

_Static_assert(sizeof(board_t) <= LINE && sizeof(buffer_t) <= LINE,
               "a header is one line");

static apr_size_t round_line(apr_size_t n)
{
    return (n + LINE - 1) / LINE * LINE;
}

static buffer_t *buffer_of(const board_t *b, apr_uint32_t generation)
{
    apr_size_t stride = LINE + round_line((apr_size_t)b->capacity);

    return (buffer_t *)((char *)b + LINE + (generation & 1) * stride);
}

static char *image_of(buffer_t *buf)
{
    return (char *)buf + LINE;
}

_Atomic apr_uint32_t *beacon_board_seq(void *board, apr_uint32_t generation)
{
    return &buffer_of(board, generation)->seq;
}

char *beacon_board_image(void *board, apr_uint32_t generation)
{
    return image_of(buffer_of(board, generation));
}

apr_size_t beacon_board_capacity(unsigned n, apr_size_t names)
{
    return beacon_routes_image_size(n, names, 0);
}

apr_size_t beacon_board_size(apr_size_t image_capacity)
{
    if (image_capacity < beacon_board_capacity(0, 0) ||
        image_capacity > CAPACITY_MAX) {
        return 0;
    }
    return LINE + 2 * (LINE + round_line(image_capacity));
}

const char *beacon_board_init(void *mem, apr_size_t size,
                              apr_size_t image_capacity)
{
    apr_size_t need = beacon_board_size(image_capacity);
    board_t *b = mem;
    unsigned i;

    if (need == 0) {
        return "a board's image capacity below an empty table's, or above "
               BEACON_STR(CAPACITY_MAX) " bytes";
    }
    if (mem == NULL || ((uintptr_t)mem & 7) != 0 || size < need) {
        return "a board's memory smaller than beacon_board_size, or not "
               "8-byte aligned";
    }
    memset(mem, 0, need);
    b->magic = BOARD_MAGIC;
    b->version = BOARD_VERSION;
    b->capacity = image_capacity;
    atomic_init(&b->generation, 0);
    for (i = 0; i < 2; i++) {
        atomic_init(&buffer_of(b, i)->seq, 0);
        atomic_init(&buffer_of(b, i)->generation, 0);
    }
    /* generation 0 names buffer 0, which holds no image: readers that came
     * this early get -1; the empty table is generation 1 */
    return beacon_board_publish(mem, NULL, 0, 0, NULL);
}

/* Whether specs fit the capacity, checked before the buffer is touched;
 * beacon_routes_build refuses everything else. */
static const char *fits(const board_t *b, const beacon_routes_spec_t *specs,
                        unsigned n)
{
    apr_size_t names = 0, size;
    unsigned i;

    for (i = 0; i < n; i++) {
        names += specs[i].len;
    }
    size = beacon_board_capacity(n, names);
    if (size > b->capacity) {
        return "the routes need more than the board's image capacity";
    }
    return NULL;
}

const char *beacon_board_publish(void *board, const beacon_routes_spec_t *specs,
                                 unsigned n, apr_uint32_t seed,
                                 apr_uint32_t *generation)
{
    board_t *b = board;
    /* the writer's own word: nobody else stores it */
    apr_uint32_t g = atomic_load_explicit(&b->generation, memory_order_relaxed) + 1;
    buffer_t *buf = buffer_of(b, g);
    apr_uint32_t s = atomic_load_explicit(&buf->seq, memory_order_relaxed);
    const char *msg = fits(b, specs, n);

    if (msg != NULL) {
        return msg;
    }
    /* seq odd before any byte changes: the release fence keeps the image's
     * stores after it for a reader whose acquire fence sees one of them.
     * s | 1: a writer that died here left it odd, and even must follow. */
    s |= 1;
    atomic_store_explicit(&buf->seq, s, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    /* g, unpublished even when the build fails: a reader sent here by an
     * older generation sees that it is not its table */
    atomic_store_explicit(&buf->generation, g, memory_order_relaxed);
    msg = beacon_routes_build(image_of(buf), (apr_size_t)b->capacity, specs, n,
                              0, seed);
    atomic_store_explicit(&buf->seq, s + 1, memory_order_release);
    if (msg != NULL) {
        return msg;
    }
    atomic_store_explicit(&b->generation, g, memory_order_release);
    if (generation != NULL) {
        *generation = g;
    }
    return NULL;
}

apr_uint32_t beacon_board_generation(const void *board)
{
    return atomic_load_explicit(&((board_t *)board)->generation,
                                memory_order_acquire);
}

/* What a reader does inside the seqlock: reads through v only, writes only
 * arg; its result counts once the read is known whole. */
typedef int (*read_fn)(const beacon_routes_view_t *v, void *arg);

/*
 * fn's result on the current table, read whole, with its generation; -1
 * when the board is not one, when its current buffer holds no image
 * (corrupt: read whole and still wrong), or when no read was whole in
 * BEACON_BOARD_TRIES tries.
 */
static int read_current(const void *board, read_fn fn, void *arg,
                        apr_uint32_t *generation)
{
    board_t *b = (board_t *)board; /* its atomics are read, never written */
    unsigned tries;

    if (b->magic != BOARD_MAGIC || b->version != BOARD_VERSION) {
        return -1;
    }
    for (tries = 0; tries < BEACON_BOARD_TRIES; tries++) {
        apr_uint32_t g = atomic_load_explicit(&b->generation, memory_order_acquire);
        buffer_t *buf = buffer_of(b, g);
        apr_uint32_t s = atomic_load_explicit(&buf->seq, memory_order_acquire);
        beacon_routes_view_t v;
        const char *bad;
        int r = 0;

        if ((s & 1) != 0 ||
            atomic_load_explicit(&buf->generation, memory_order_relaxed) != g) {
            continue; /* being written, or already another table */
        }
        bad = beacon_routes_view(&v, image_of(buf), (apr_size_t)b->capacity);
        if (bad == NULL) {
            r = fn(&v, arg);
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&buf->seq, memory_order_relaxed) != s) {
            continue;
        }
        if (bad != NULL) {
            return -1;
        }
        *generation = g;
        return r;
    }
    return -1;
}

typedef struct {
    const char *path;
    apr_size_t len;
    beacon_routes_entry_t route;
} find_arg_t;

static int find_fn(const beacon_routes_view_t *v, void *arg)
{
    find_arg_t *a = arg;

    return beacon_routes_find(v, a->path, a->len, &a->route, NULL) != 0;
}

int beacon_board_lookup(const void *board, const char *path, apr_size_t len,
                        beacon_board_hit_t *hit)
{
    find_arg_t a;
    apr_uint32_t g;
    int r;

    a.path = path;
    a.len = len;
    r = read_current(board, find_fn, &a, &g);
    if (r == 1) {
        hit->balancer = a.route.balancer;
        hit->value = a.route.value;
        hit->ctx_len = a.route.name_len;
        hit->generation = g;
    }
    return r;
}

typedef struct {
    void *buf;
    apr_size_t bufsize;
} copy_arg_t;

static int copy_fn(const beacon_routes_view_t *v, void *arg)
{
    copy_arg_t *a = arg;

    if (v->h.size > a->bufsize) {
        return 0;
    }
    memcpy(a->buf, v->image, v->h.size);
    return 1;
}

const void *beacon_board_copy(const void *board, void *buf, apr_size_t bufsize,
                              apr_uint32_t *generation)
{
    copy_arg_t a;
    apr_uint32_t g;

    a.buf = buf;
    a.bufsize = bufsize;
    if (read_current(board, copy_fn, &a, &g) != 1 ||
        beacon_routes_check(buf, bufsize) != NULL) {
        return NULL;
    }
    if (generation != NULL) {
        *generation = g;
    }
    return buf;
}
