/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A backend's load as the lbfactor it announces (lib/beacon_load.c): the
 * mapping from utilization to a factor, shared by beaconctl send
 * --lbfactor-from loadavg and the module's ProxyBeaconLBFactor auto,
 * auto's smoothing, and the factor written as the wire writes it.
 */
#include "test_common.h"

#include <math.h>

static void utilization_maps_to_a_factor_from_10_to_100(void **state)
{
    static const struct {
        double u;
        int hundredths;
    } cases[] = {
        {0.0, 10000},   /* idle: the whole factor */
        {0.1, 9100},
        {0.25, 7750},
        {0.5, 5500},
        {0.75, 3250},
        {0.9, 1900},
        {0.999, 1009},
        {1.0, 1000},    /* saturated: the floor, never 0 */
        {0.33333, 7000},/* rounded to the nearest hundredth */
        {0.123456, 8889},
        {-0.5, 10000},  /* clamped to [0, 1] */
        {1.5, 1000},
        {1e300, 1000},
        {-1e300, 10000},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        int got = beacon_lbfactor_from_utilization(cases[i].u);

        if (got != cases[i].hundredths) {
            print_error("u = %g\n", cases[i].u);
        }
        assert_int_equal(got, cases[i].hundredths);
    }
}

static void what_is_no_number_counts_as_saturated(void **state)
{
    (void)state;
    assert_int_equal(beacon_lbfactor_from_utilization(NAN), 1000);
    assert_int_equal(beacon_lbfactor_from_utilization(INFINITY), 1000);
    assert_int_equal(beacon_lbfactor_from_utilization(-INFINITY), 10000);
}

/* More load never gives a larger factor, and every factor is one the
 * wire carries. */
static void the_factor_falls_with_load_and_stays_in_range(void **state)
{
    int last = BEACON_LBFACTOR_MAX + 1, i;

    (void)state;
    for (i = -100; i <= 1100; i++) {
        int f = beacon_lbfactor_from_utilization(i / 1000.0);

        assert_true(f <= last);
        assert_in_range(f, BEACON_LOAD_FACTOR_FLOOR, BEACON_LBFACTOR_MAX);
        last = f;
    }
    assert_int_equal(BEACON_LOAD_FACTOR_FLOOR, 1000);
    assert_true(BEACON_LOAD_FACTOR_FLOOR >= BEACON_LBFACTOR_MIN);
}

static void a_factor_is_written_as_the_wire_writes_it(void **state)
{
    static const struct {
        int hundredths;
        const char *text;
    } cases[] = {
        {100, "1"},       {10000, "100"},  {5500, "55"},
        {7750, "77.5"},   {1009, "10.09"}, {8889, "88.89"},
        {101, "1.01"},    {110, "1.1"},    {9999, "99.99"},
        /* outside 1.00 to 100.00: nothing */
        {99, NULL},       {10001, NULL},   {0, NULL},  {-100, NULL},
    };
    char buf[BEACON_LBFACTOR_TEXT_MAX];
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        const char *got = beacon_lbfactor_format(buf, cases[i].hundredths);

        if (cases[i].text == NULL) {
            assert_null(got);
            continue;
        }
        assert_non_null(got);
        assert_string_equal(got, cases[i].text);
    }
}

/* Every factor written is read back as itself by the one validator. */
#define MS(n) apr_time_from_msec(n)
#define START apr_time_from_sec(1000)

/* Feeds samples of u every step for duration (after a first sample at
 * START); returns the average. */
static double feed(beacon_load_average_t *avg, double u, apr_time_t step,
                   apr_time_t duration)
{
    apr_time_t t;
    double last = 0;

    for (t = avg->at + step; t <= START + duration; t += step) {
        last = beacon_load_average_add(avg, u, t);
    }
    return last;
}

/* A steady backend announces a steady factor: a constant input is the
 * average exactly, from the first sample on, at any sampling rate. */
static void a_constant_load_gives_a_constant_average(void **state)
{
    static const double loads[] = {0.0, 0.37, 0.5, 0.999, 1.0};
    static const apr_time_t steps[] = {MS(1), MS(100), MS(2500), MS(60000)};
    size_t i, j;

    (void)state;
    for (i = 0; i < ARRAY_LEN(loads); i++) {
        for (j = 0; j < ARRAY_LEN(steps); j++) {
            beacon_load_average_t avg = {0, 0};

            assert_true(beacon_load_average_add(&avg, loads[i], START) ==
                        loads[i]);
            assert_true(feed(&avg, loads[i], steps[j], apr_time_from_sec(120))
                        == loads[i]);
        }
    }
}

/* From idle to saturated, sampled ten times a second as auto does: where
 * the average is after each span (1 - (1 - 0.1/5.1)^n), and the factor it
 * maps to. */
static void a_step_moves_the_average_over_seconds(void **state)
{
    static const struct {
        apr_time_t after;
        double low, high; /* the average, within */
        int factor;       /* beacon_lbfactor_from_utilization of it */
    } cases[] = {
        {MS(100), 0.0195, 0.0197, 9824},
        {MS(1000), 0.179, 0.180, 8383},
        {MS(5000), 0.628, 0.629, 4344},
        {MS(15000), 0.948, 0.949, 1462},
        {MS(30000), 0.997, 0.998, 1024},
    };
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_LEN(cases); i++) {
        beacon_load_average_t avg = {0, 0};
        double got;

        beacon_load_average_add(&avg, 0.0, START);
        got = feed(&avg, 1.0, MS(100), cases[i].after);
        if (got < cases[i].low || got > cases[i].high) {
            print_error("after %" APR_TIME_T_FMT " us: %f\n", cases[i].after,
                        got);
        }
        assert_true(got >= cases[i].low && got <= cases[i].high);
        assert_int_equal(beacon_lbfactor_from_utilization(got),
                         cases[i].factor);
    }
}

/* What the filter takes: samples clamped as the mapping clamps them, and
 * a clock set back moves nothing. */
static void samples_are_clamped_and_time_only_runs_forward(void **state)
{
    beacon_load_average_t avg = {0, 0};

    (void)state;
    assert_true(beacon_load_average_add(&avg, 1.7, START) == 1.0);
    assert_true(beacon_load_average_add(&avg, NAN, START + MS(5000)) == 1.0);
    /* dt = the time constant: the sample weighs a half */
    assert_true(beacon_load_average_add(&avg, -3.0, START + MS(10000)) == 0.5);
    /* the same instant, then earlier: unchanged, and the next interval
     * counts from the earlier time */
    assert_true(beacon_load_average_add(&avg, 1.0, START + MS(10000)) == 0.5);
    assert_true(beacon_load_average_add(&avg, 0.0, START + MS(4000)) == 0.5);
    assert_int_equal(avg.at, START + MS(4000));
    assert_true(beacon_load_average_add(&avg, 1.0, START + MS(9000)) == 0.75);
}

/* tests/vectors/load.txt, the rows every auto sender (this library, the
 * Tomcat Listener) must meet: samples averaged, then mapped and written as
 * lbfactor= writes it. The file's times are relative: START is added, as
 * an average that has seen no sample is one whose time is 0. */
static void the_shared_load_vectors_hold(void **state)
{
    static const char *const cols[] = {"samples", "lbfactor", "name", NULL};
    vec_table_t t = load_vectors("load.txt", cols, 10);
    size_t r;

    (void)state;
    for (r = 0; r < t.nrows; r++) {
        const vec_row_t *row = &t.rows[r];
        beacon_load_average_t avg = {0, 0};
        char samples[256], buf[BEACON_LBFACTOR_TEXT_MAX], *next, *save = NULL;
        double u = 0.0;

        assert_true(row->col[0].len < sizeof samples);
        memcpy(samples, row->col[0].text, row->col[0].len + 1);
        for (next = strtok_r(samples, ";", &save); next != NULL;
             next = strtok_r(NULL, ";", &save)) {
            char *at = strchr(next, '@');

            assert_non_null(at);
            u = beacon_load_average_add(&avg, strtod(next, NULL),
                                        START + MS(strtol(at + 1, NULL, 10)));
        }
        if (!vec_is(&row->col[1], beacon_lbfactor_format(
                                      buf, beacon_lbfactor_from_utilization(u)))) {
            print_error("line %u (%s): %s, expected %s\n", row->line,
                        row->col[2].text, buf, row->col[1].text);
            fail();
        }
    }
    vec_free(&t);
}

static void every_factor_written_parses_back(void **state)
{
    char buf[BEACON_LBFACTOR_TEXT_MAX];
    int h;

    (void)state;
    for (h = BEACON_LBFACTOR_MIN; h <= BEACON_LBFACTOR_MAX; h++) {
        const char *text = beacon_lbfactor_format(buf, h);

        assert_non_null(text);
        assert_int_equal(beacon_lbfactor_parse(text, strlen(text)), h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(utilization_maps_to_a_factor_from_10_to_100),
        cmocka_unit_test(what_is_no_number_counts_as_saturated),
        cmocka_unit_test(the_factor_falls_with_load_and_stays_in_range),
        cmocka_unit_test(a_factor_is_written_as_the_wire_writes_it),
        cmocka_unit_test(every_factor_written_parses_back),
        cmocka_unit_test(a_constant_load_gives_a_constant_average),
        cmocka_unit_test(a_step_moves_the_average_over_seconds),
        cmocka_unit_test(samples_are_clamped_and_time_only_runs_forward),
        cmocka_unit_test(the_shared_load_vectors_hold),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
