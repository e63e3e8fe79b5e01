/* Licensed under the Apache License, Version 2.0; see LICENSE. */

/*
 * A backend's load as the lbfactor it announces (lib/beacon_load.c): the
 * mapping from utilization to a factor, shared by beaconctl send
 * --lbfactor-from loadavg and the module's coming ProxyBeaconLBFactor
 * auto, and the factor written as the wire writes it.
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
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
