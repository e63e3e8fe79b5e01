/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * The route board: an empty board finds nothing; a published table is
 * looked up by the longest context at a boundary; a refused publication
 * (a bad table, one too big) keeps the table and generation there were;
 * generations count publications; a copy is a checked image; the board
 * works from another mapping of the same shared memory; a writer that
 * died mid-build leaves readers and the next writer unharmed; and torn
 * reads: every corruption of an image read through a view stays inside
 * it (run under `make check-sanitize`), a buffer being written is never
 * read as a table, and threads read while another scribbles over the
 * current buffer or publishes two tables in turn, never getting an
 * answer that is not wholly one table's.
 */
#include "test_common.h"

#include <apr_shm.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <apr_time.h>

#include "../../lib/beacon_private.h"

#define SEED 0x5eed1234u
#define STRESS_TIME apr_time_from_msec(1000)
#define READERS 3

typedef struct {
    apr_uint64_t *words; /* 8-byte aligned storage */
    apr_size_t size;
} mem_t;

static mem_t board_new(apr_size_t capacity)
{
    mem_t m;

    m.size = beacon_board_size(capacity);
    assert_true(m.size > 0);
    m.words = calloc(m.size / 8 + 1, 8);
    assert_non_null(m.words);
    assert_null(beacon_board_init(m.words, m.size, capacity));
    return m;
}

static beacon_routes_spec_t route(const char *ctx, unsigned balancer,
                                  apr_uint32_t value)
{
    beacon_routes_spec_t s;

    s.ctx = ctx;
    s.len = strlen(ctx);
    s.balancer = (apr_uint16_t)balancer;
    s.value = value;
    return s;
}

static void publish(void *board, const beacon_routes_spec_t *specs, unsigned n,
                    apr_uint32_t want_generation)
{
    apr_uint32_t g = 0;
    const char *msg = beacon_board_publish(board, specs, n, SEED, &g);

    if (msg != NULL) {
        print_error("publish: %s\n", msg);
    }
    assert_null(msg);
    assert_int_equal(g, want_generation);
    assert_int_equal(beacon_board_generation(board), want_generation);
}

static int look(const void *board, const char *path, beacon_board_hit_t *hit)
{
    return beacon_board_lookup(board, path, strlen(path), hit);
}

static void assert_route(const void *board, const char *path, unsigned balancer,
                         apr_size_t ctx_len)
{
    beacon_board_hit_t hit;
    int r = look(board, path, &hit);

    if (r != 1 || hit.balancer != balancer || hit.ctx_len != ctx_len) {
        print_error("path \"%s\": %d, balancer %u, ctx_len %u\n", path, r,
                    r == 1 ? hit.balancer : 0, r == 1 ? (unsigned)hit.ctx_len : 0);
    }
    assert_int_equal(r, 1);
    assert_int_equal(hit.balancer, balancer);
    assert_int_equal(hit.ctx_len, ctx_len);
    assert_int_equal(hit.generation, beacon_board_generation(board));
}

static void assert_no_route(const void *board, const char *path)
{
    beacon_board_hit_t hit;

    assert_int_equal(look(board, path, &hit), 0);
}

static const beacon_routes_spec_t shop_table[] = {
    {"/shop", 5, 1, 101}, {"/shop/admin", 11, 2, 102}, {"/cart", 5, 3, 103},
};

static void an_empty_board_finds_nothing(void **state)
{
    mem_t m = board_new(beacon_board_capacity(4, 64));
    apr_uint32_t buf[64], g = 0;
    const void *copy;

    (void)state;
    assert_int_equal(beacon_board_generation(m.words), 1);
    assert_no_route(m.words, "/");
    assert_no_route(m.words, "/shop");
    assert_no_route(m.words, "");
    copy = beacon_board_copy(m.words, buf, sizeof buf, &g);
    assert_non_null(copy);
    assert_int_equal(beacon_routes_count(copy), 0);
    assert_int_equal(g, 1);
    free(m.words);
}

static void a_published_table_routes_by_the_longest_context(void **state)
{
    mem_t m = board_new(beacon_board_capacity(8, 128));
    beacon_board_hit_t hit;

    (void)state;
    publish(m.words, shop_table, ARRAY_LEN(shop_table), 2);
    assert_route(m.words, "/shop", 1, 5);
    assert_route(m.words, "/shop/x", 1, 5);
    assert_route(m.words, "/shop/admin", 2, 11);
    assert_route(m.words, "/shop/admin/x", 2, 11);
    /* a parameter is no boundary: the caller looks up the servlet path */
    assert_no_route(m.words, "/shop;jsessionid=1");
    assert_route(m.words, "/shop/admin;a=b", 1, 5);
    assert_route(m.words, "/shop/adminx", 1, 5);
    assert_route(m.words, "/cart/1", 3, 5);
    assert_no_route(m.words, "/shopping");
    assert_no_route(m.words, "/Shop");
    assert_no_route(m.words, "/");
    assert_no_route(m.words, "shop");
    assert_int_equal(look(m.words, "/cart/1", &hit), 1);
    assert_int_equal(hit.value, 103);
    /* the length, not a NUL, ends the path */
    assert_int_equal(beacon_board_lookup(m.words, "/shopping", 5, &hit), 1);
    assert_int_equal(hit.balancer, 1);
    free(m.words);
}

static void a_refused_publication_keeps_the_table_and_generation(void **state)
{
    mem_t m = board_new(beacon_board_capacity(8, 128));
    const beacon_routes_spec_t invalid[] = {route("/ok", 1, 1), route("shop", 2, 2)};
    const beacon_routes_spec_t twice[] = {route("/a", 1, 1), route("/b", 1, 2),
                                          route("/a", 2, 3)};
    apr_uint32_t g = 77;

    (void)state;
    publish(m.words, shop_table, ARRAY_LEN(shop_table), 2);
    assert_non_null(beacon_board_publish(m.words, invalid, 2, SEED, &g));
    /* the build lays out a twice-named table before it finds out: the
     * other buffer is half written, the current one untouched */
    assert_non_null(beacon_board_publish(m.words, twice, 3, SEED, &g));
    assert_int_equal(g, 77);
    assert_int_equal(beacon_board_generation(m.words), 2);
    assert_route(m.words, "/shop/admin/x", 2, 11);
    assert_no_route(m.words, "/a");
    publish(m.words, twice, 2, 3);
    assert_route(m.words, "/a/x", 1, 2);
    assert_no_route(m.words, "/shop");
    free(m.words);
}

static void each_publication_is_the_next_generation_and_only_its_table(void **state)
{
    mem_t m = board_new(beacon_board_capacity(1, 16));
    char now[16], before[16];
    apr_uint32_t i;

    (void)state;
    for (i = 0; i < 6; i++) {
        beacon_routes_spec_t one;

        snprintf(now, sizeof now, "/t%u", (unsigned)i);
        one = route(now, i, i);
        publish(m.words, &one, 1, 2 + i);
        assert_route(m.words, now, i, strlen(now));
        if (i > 0) {
            assert_no_route(m.words, before);
        }
        memcpy(before, now, sizeof now);
    }
    free(m.words);
}

static void a_copy_is_a_checked_image_of_the_current_table(void **state)
{
    apr_size_t capacity = beacon_board_capacity(8, 128);
    mem_t m = board_new(capacity);
    apr_uint32_t *buf = calloc(capacity / 4 + 1, 4), g = 0;
    const void *copy;
    unsigned i;

    (void)state;
    assert_non_null(buf);
    publish(m.words, shop_table, ARRAY_LEN(shop_table), 2);
    copy = beacon_board_copy(m.words, buf, capacity, &g);
    assert_ptr_equal(copy, buf);
    assert_int_equal(g, 2);
    assert_null(beacon_routes_check(copy, capacity));
    assert_int_equal(beacon_routes_count(copy), ARRAY_LEN(shop_table));
    for (i = 0; i < ARRAY_LEN(shop_table); i++) {
        const beacon_routes_entry_t *r = beacon_routes_at(copy, i);

        assert_string_equal(beacon_routes_name(copy, r), shop_table[i].ctx);
        assert_int_equal(r->balancer, shop_table[i].balancer);
        assert_int_equal(r->value, shop_table[i].value);
    }
    assert_null(beacon_board_copy(m.words, buf, 64, &g));
    free(buf);
    free(m.words);
}

static void what_exceeds_the_capacity_is_refused(void **state)
{
    apr_size_t capacity = beacon_board_capacity(2, 16);
    mem_t m = board_new(capacity);
    beacon_routes_spec_t many[40];
    char names[40][8];
    unsigned i;

    (void)state;
    for (i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "/m%u", i);
        many[i] = route(names[i], 1, i);
    }
    publish(m.words, many, 2, 2);
    assert_non_null(beacon_board_publish(m.words, many, 40, SEED, NULL));
    assert_int_equal(beacon_board_generation(m.words), 2);
    assert_route(m.words, "/m1", 1, 3);
    assert_no_route(m.words, "/m39");
    /* init's refusals: no room for an empty table, too little memory,
     * misaligned memory */
    assert_int_equal(beacon_board_size(16), 0);
    assert_non_null(beacon_board_init(m.words, m.size, 16));
    assert_non_null(beacon_board_init(m.words, m.size - 1, capacity));
    assert_non_null(beacon_board_init((char *)m.words + 4, m.size - 8, capacity));
    free(m.words);
}

/* A named apr_shm attached a second time in this process: the same board
 * at another address, as a child sees the receiver's. */
static void the_board_reads_the_same_from_another_mapping(void **state)
{
    apr_size_t capacity = beacon_board_capacity(8, 128);
    apr_size_t size = beacon_board_size(capacity);
    const char *file = apr_psprintf(TEST_POOL, "/tmp/test_board.%ld", (long)getpid());
    apr_shm_t *writer, *reader;
    void *w, *r;

    (void)state;
    apr_shm_remove(file, TEST_POOL);
    assert_int_equal(apr_shm_create(&writer, size, file, TEST_POOL), APR_SUCCESS);
    assert_int_equal(apr_shm_attach(&reader, file, TEST_POOL), APR_SUCCESS);
    w = apr_shm_baseaddr_get(writer);
    r = apr_shm_baseaddr_get(reader);
    assert_ptr_not_equal(w, r);
    assert_null(beacon_board_init(w, apr_shm_size_get(writer), capacity));
    publish(w, shop_table, ARRAY_LEN(shop_table), 2);
    assert_route(r, "/shop/admin/x", 2, 11);
    publish(w, shop_table, 1, 3);
    assert_route(r, "/shop/admin/x", 1, 5);
    assert_no_route(r, "/cart");
    assert_int_equal(apr_shm_detach(reader), APR_SUCCESS);
    assert_int_equal(apr_shm_destroy(writer), APR_SUCCESS);
}

static apr_uint32_t next_random(apr_uint32_t *x)
{
    /* xorshift32: reproducible garbage */
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void scribble(char *p, apr_size_t len, apr_uint32_t *x)
{
    apr_size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (char)next_random(x);
    }
}

static const char *const probe_paths[] = {
    "/shop/admin/x", "/shop;x", "/cart", "/c7/y", "/p/q/r", "/", "/a/b/c/d/e/f",
};

/*
 * Every mutation of a valid image, a few bytes or all past the header,
 * read through a view in a buffer of exactly its size: a lookup either
 * finds a route within the image or nothing, and never reads outside it
 * (under ASan a read past the end fails the test).
 */
static void any_torn_image_is_read_only_inside_its_buffer(void **state)
{
    beacon_routes_spec_t specs[24];
    char names[24][8];
    apr_size_t size = beacon_routes_image_size(24, 24 * 4, 0);
    char *valid = malloc(size), *work = malloc(size);
    apr_uint32_t x = SEED, viewed = 0, trial;
    unsigned i;

    (void)state;
    assert_non_null(valid);
    assert_non_null(work);
    for (i = 0; i < 24; i++) {
        snprintf(names[i], sizeof names[i], "/c%u", i);
        specs[i] = route(names[i], i, i);
    }
    assert_null(beacon_routes_build(valid, size, specs, 24, 0, SEED));
    for (trial = 0; trial < 20000; trial++) {
        beacon_routes_view_t v;
        unsigned k, flips = 1 + next_random(&x) % 16;

        memcpy(work, valid, size);
        if (trial % 8 == 0) {
            scribble(work + sizeof(beacon_routes_header_t),
                     size - sizeof(beacon_routes_header_t), &x);
        } else {
            for (k = 0; k < flips; k++) {
                work[next_random(&x) % size] = (char)next_random(&x);
            }
        }
        if (beacon_routes_view(&v, work, size) != NULL) {
            continue;
        }
        viewed++;
        for (i = 0; i < ARRAY_LEN(probe_paths); i++) {
            beacon_routes_entry_t e;
            apr_uint32_t ref = beacon_routes_find(&v, probe_paths[i],
                                                  strlen(probe_paths[i]), &e, NULL);

            assert_true(ref <= v.h.nroutes);
        }
    }
    /* most mutations leave the header whole: the probes were exercised */
    assert_true(viewed > 10000);
    free(valid);
    free(work);
}

/* A buffer whose seq says it is being written is never read as a table,
 * garbage or not; garbage read whole is corrupt, never a table either. */
static void a_buffer_being_written_is_never_read_as_a_table(void **state)
{
    apr_size_t capacity = beacon_board_capacity(8, 128);
    mem_t m = board_new(capacity);
    apr_uint32_t *buf = calloc(capacity / 4 + 1, 4), x = SEED;
    char *saved = malloc(capacity), *image;
    _Atomic apr_uint32_t *seq;
    beacon_board_hit_t hit;
    int garbage;

    (void)state;
    assert_non_null(buf);
    assert_non_null(saved);
    publish(m.words, shop_table, ARRAY_LEN(shop_table), 2);
    seq = beacon_board_seq(m.words, 2);
    image = beacon_board_image(m.words, 2);
    memcpy(saved, image, capacity);
    for (garbage = 0; garbage < 2; garbage++) {
        atomic_fetch_add(seq, 1); /* odd: being written */
        if (garbage) {
            scribble(image, capacity, &x);
        }
        assert_int_equal(look(m.words, "/shop", &hit), -1);
        assert_null(beacon_board_copy(m.words, buf, capacity, NULL));
        atomic_fetch_add(seq, 1);
    }
    /* even, yet still garbage: not a race, a corrupt board */
    assert_int_equal(look(m.words, "/shop", &hit), -1);
    memcpy(image, saved, capacity);
    assert_route(m.words, "/shop/x", 1, 5);
    publish(m.words, shop_table, 1, 3);
    assert_route(m.words, "/shop/admin", 1, 5);
    free(saved);
    free(buf);
    free(m.words);
}

/* A writer killed while it wrote the other buffer: readers keep the
 * current table, and the next writer (after a restart) publishes. */
static void a_writer_dead_mid_build_harms_no_one(void **state)
{
    apr_size_t capacity = beacon_board_capacity(8, 128);
    mem_t m = board_new(capacity);
    apr_uint32_t x = SEED;

    (void)state;
    publish(m.words, shop_table, ARRAY_LEN(shop_table), 2);
    atomic_fetch_add(beacon_board_seq(m.words, 3), 1);
    scribble(beacon_board_image(m.words, 3), capacity, &x);
    assert_route(m.words, "/shop/admin/x", 2, 11);
    publish(m.words, shop_table, 1, 3);
    assert_route(m.words, "/shop/admin/x", 1, 5);
    publish(m.words, shop_table + 2, 1, 4);
    assert_route(m.words, "/cart", 3, 5);
    free(m.words);
}

/* ---- threads ------------------------------------------------------ */

typedef struct {
    void *board;
    apr_size_t capacity;
    atomic_int done;
    atomic_long ok, busy, wrong, seen_a, seen_b, publishes;
} shared_t;

static apr_status_t join_all(apr_thread_t **threads, unsigned n)
{
    apr_status_t rv = APR_SUCCESS, trv;
    unsigned i;

    for (i = 0; i < n; i++) {
        if (apr_thread_join(&trv, threads[i]) != APR_SUCCESS) {
            rv = APR_EGENERAL;
        }
    }
    return rv;
}

static void start(apr_thread_t **t, apr_thread_start_t fn, shared_t *s)
{
    assert_int_equal(apr_thread_create(t, NULL, fn, s, TEST_POOL), APR_SUCCESS);
}

/*
 * Tables A and B, published in turn: A at even generations, B at odd
 * ones. Each maps /c0 to /c(N-1) to a balancer that names the table (1
 * or 2) and a value that names table and context; A alone has /p/q,
 * both have /p, B has more routes (another layout).
 */
#define CTXS 40
static char ctx_names[2][CTXS + 24][8];
static beacon_routes_spec_t tables[2][CTXS + 24];
static unsigned table_len[2];

static void make_tables(void)
{
    unsigned t, i;

    for (t = 0; t < 2; t++) {
        unsigned n = 0;

        for (i = 0; i < CTXS; i++, n++) {
            snprintf(ctx_names[t][n], 8, "/c%u", i);
            tables[t][n] = route(ctx_names[t][n], t + 1, (t + 1) * 1000 + i);
        }
        tables[t][n++] = route("/p", t + 1, (t + 1) * 1000 + 900);
        if (t == 0) {
            tables[t][n++] = route("/p/q", 1, 1901);
        }
        for (i = 0; t == 1 && i < 20; i++, n++) {
            snprintf(ctx_names[t][n], 8, "/b%u", i);
            tables[t][n] = route(ctx_names[t][n], 2, 2500 + i);
        }
        table_len[t] = n;
    }
}

/* Whether hit for /c<k>/x (k >= 0) or /p/q/r (k < 0) is wholly one table's. */
static int consistent(const beacon_board_hit_t *hit, int k)
{
    unsigned t = hit->generation % 2 == 0 ? 1 : 2;

    if (hit->balancer != t) {
        return 0;
    }
    if (k < 0) {
        return t == 1 ? hit->ctx_len == 4 && hit->value == 1901
                      : hit->ctx_len == 2 && hit->value == 2900;
    }
    return hit->value == t * 1000 + (unsigned)k &&
           hit->ctx_len == (k < 10 ? 3u : 4u);
}

static void *APR_THREAD_FUNC reader(apr_thread_t *thread, void *arg)
{
    shared_t *s = arg;
    char path[16];
    int k = -1;

    while (!atomic_load(&s->done)) {
        beacon_board_hit_t hit;
        int r;

        if (k < 0) {
            strcpy(path, "/p/q/r");
        } else {
            snprintf(path, sizeof path, "/c%d/x", k);
        }
        r = look(s->board, path, &hit);
        if (r < 0) {
            atomic_fetch_add(&s->busy, 1);
        } else if (r == 0 || !consistent(&hit, k)) {
            atomic_fetch_add(&s->wrong, 1);
        } else {
            atomic_fetch_add(&s->ok, 1);
            atomic_fetch_add(hit.balancer == 1 ? &s->seen_a : &s->seen_b, 1);
        }
        k = k + 1 == CTXS ? -1 : k + 1;
    }
    (void)thread; /* pthread_exit trips ASan in sigaltstack */
    return NULL;
}

static void *APR_THREAD_FUNC writer(apr_thread_t *thread, void *arg)
{
    shared_t *s = arg;
    apr_time_t end = apr_time_now() + STRESS_TIME;
    apr_uint32_t g = beacon_board_generation(s->board);

    while (apr_time_now() < end) {
        unsigned t = (g + 1) % 2 == 0 ? 0 : 1; /* A at even generations */

        if (beacon_board_publish(s->board, tables[t], table_len[t], g, &g) != NULL) {
            atomic_fetch_add(&s->wrong, 1);
            break;
        }
        atomic_fetch_add(&s->publishes, 1);
    }
    atomic_store(&s->done, 1);
    (void)thread; /* pthread_exit trips ASan in sigaltstack */
    return NULL;
}

/* Over the current buffer, while its seq is odd: garbage, then the table
 * back, then a few of its own lookups (the readers' chance). */
static void *APR_THREAD_FUNC scribbler(apr_thread_t *thread, void *arg)
{
    shared_t *s = arg;
    apr_time_t end = apr_time_now() + STRESS_TIME / 2;
    apr_uint32_t g = beacon_board_generation(s->board), x = SEED;
    _Atomic apr_uint32_t *seq = beacon_board_seq(s->board, g);
    char *image = beacon_board_image(s->board, g);
    char *saved = malloc(s->capacity);
    beacon_board_hit_t hit;
    unsigned i;

    memcpy(saved, image, s->capacity);
    while (apr_time_now() < end) {
        atomic_store_explicit(seq, atomic_load(seq) + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        scribble(image, s->capacity, &x);
        memcpy(image, saved, s->capacity);
        atomic_store_explicit(seq, atomic_load(seq) + 1, memory_order_release);
        for (i = 0; i < 20; i++) {
            look(s->board, "/p/q/r", &hit);
        }
    }
    free(saved);
    atomic_store(&s->done, 1);
    (void)thread; /* pthread_exit trips ASan in sigaltstack */
    return NULL;
}

static shared_t *shared_new(void)
{
    shared_t *s = calloc(1, sizeof *s);
    mem_t m;

    assert_non_null(s);
    make_tables();
    s->capacity = beacon_board_capacity(CTXS + 24, (CTXS + 24) * 4);
    m = board_new(s->capacity);
    s->board = m.words;
    return s;
}

static void report(const shared_t *s, const char *what)
{
    print_message("%s: %ld whole answers (A %ld, B %ld), %ld busy, %ld wrong, "
                  "%ld publications\n",
                  what, atomic_load(&s->ok), atomic_load(&s->seen_a),
                  atomic_load(&s->seen_b), atomic_load(&s->busy),
                  atomic_load(&s->wrong), atomic_load(&s->publishes));
}

/* Table A published, READERS readers and one more thread (fn) until it
 * is done; what the readers counted. */
static shared_t *run_readers_with(apr_thread_start_t fn, const char *what)
{
    shared_t *s = shared_new();
    apr_thread_t *threads[READERS + 1];
    unsigned i;

    publish(s->board, tables[0], table_len[0], 2);
    for (i = 0; i < READERS; i++) {
        start(&threads[i], reader, s);
    }
    start(&threads[READERS], fn, s);
    assert_int_equal(join_all(threads, READERS + 1), APR_SUCCESS);
    report(s, what);
    assert_int_equal(atomic_load(&s->wrong), 0);
    free(s->board);
    return s;
}

/* One writer publishing A and B in turn for a second, three readers: every
 * answer is wholly the table of its generation, none is refused (each
 * retry reads the new current table: no reader starves), and the
 * readers saw both tables. */
static void readers_see_one_whole_table_while_the_writer_publishes(void **state)
{
    shared_t *s = run_readers_with(writer, "A/B");

    (void)state;
    assert_int_equal(atomic_load(&s->busy), 0);
    assert_true(atomic_load(&s->publishes) > 100);
    assert_true(atomic_load(&s->seen_a) > 0 && atomic_load(&s->seen_b) > 0);
    free(s);
}

/* Readers while the current buffer is scribbled on under an odd seq for
 * half a second: answers are A's or refused (-1), never garbage. */
static void readers_never_take_garbage_from_a_buffer_being_written(void **state)
{
    shared_t *s = run_readers_with(scribbler, "scribbled");

    (void)state;
    assert_int_equal(atomic_load(&s->seen_b), 0);
    assert_true(atomic_load(&s->ok) > 0);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_board_finds_nothing),
        cmocka_unit_test(a_published_table_routes_by_the_longest_context),
        cmocka_unit_test(a_refused_publication_keeps_the_table_and_generation),
        cmocka_unit_test(each_publication_is_the_next_generation_and_only_its_table),
        cmocka_unit_test(a_copy_is_a_checked_image_of_the_current_table),
        cmocka_unit_test(what_exceeds_the_capacity_is_refused),
        cmocka_unit_test(the_board_reads_the_same_from_another_mapping),
        cmocka_unit_test(any_torn_image_is_read_only_inside_its_buffer),
        cmocka_unit_test(a_buffer_being_written_is_never_read_as_a_table),
        cmocka_unit_test(a_writer_dead_mid_build_harms_no_one),
        cmocka_unit_test(readers_see_one_whole_table_while_the_writer_publishes),
        cmocka_unit_test(readers_never_take_garbage_from_a_buffer_being_written),
    };

    return cmocka_run_group_tests(tests, test_pool_setup, test_pool_teardown);
}
