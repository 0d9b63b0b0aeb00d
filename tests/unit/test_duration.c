/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_duration.c - the one duration grammar of settings and rule files
 * (base/duration.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "myrewrite/base/duration.h"

static uint64_t ms_of(const char *s)
{
    uint64_t ms = 12345;
    assert_true(mr_parse_duration(s, &ms));
    return ms;
}

static void units(void **state)
{
    (void)state;
    assert_int_equal(ms_of("250ms"), 250);
    assert_int_equal(ms_of("10"), 10000);
    assert_int_equal(ms_of("10s"), 10000);
    assert_int_equal(ms_of("2m"), 120000);
    assert_int_equal(ms_of("1h"), 3600000);
    assert_int_equal(ms_of("0"), 0);
}

static void fractions(void **state)
{
    (void)state;
    assert_int_equal(ms_of("1.5s"), 1500);
    assert_int_equal(ms_of("0.25"), 250);
    assert_int_equal(ms_of(".5m"), 30000);
    assert_int_equal(ms_of("1.5h"), 5400000);
    assert_int_equal(ms_of("2.5ms"), 3); /* rounds to nearest */
    assert_int_equal(ms_of("0.0004s"), 0);
    assert_int_equal(ms_of("1.0000000000001s"), 1000); /* digits past the ninth ignored */
    assert_int_equal(ms_of("7."), 7000);
}

static uint64_t us_of(const char *s)
{
    uint64_t us = 12345;
    assert_true(mr_parse_duration_us(s, &us));
    return us;
}

/* group_commit_wait = 200us: the same grammar in microseconds, and us read
 * as milliseconds rounds to nearest like any fraction of one. */
static void microseconds(void **state)
{
    (void)state;
    assert_int_equal(us_of("200us"), 200);
    assert_int_equal(us_of("1.5ms"), 1500);
    assert_int_equal(us_of("2"), 2000000);
    assert_int_equal(us_of("0.4us"), 0);
    assert_int_equal(us_of("2.5us"), 3);
    assert_int_equal(ms_of("200us"), 0);
    assert_int_equal(ms_of("1500us"), 2);
    assert_int_equal(ms_of("2499us"), 2);
    uint64_t us = 7;
    assert_false(mr_parse_duration_us("1000000000000000001us", &us));
    assert_false(mr_parse_duration_us("200 us", &us));
    assert_false(mr_parse_duration_us("200µs", &us));
    assert_int_equal(us, 7);
}

static void refused(void **state)
{
    (void)state;
    static const char *const bad[] = {"",
                                      ".",
                                      "s",
                                      "-1",
                                      "+1",
                                      " 1",
                                      "1 ",
                                      "1x",
                                      "1sec",
                                      "1H",
                                      "inf",
                                      "nan",
                                      "0x10",
                                      "1e3",
                                      "1,5s",
                                      "1..5",
                                      "1000000000000001ms",
                                      "99999999999999999999",
                                      "300000000h"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t ms = 42;
        assert_false(mr_parse_duration(bad[i], &ms));
        assert_int_equal(ms, 42); /* untouched on failure */
    }
}

static void the_largest(void **state)
{
    (void)state;
    assert_int_equal(ms_of("1000000000000000ms"), MR_DURATION_MAX_MS);
    assert_int_equal(ms_of("1000000000000s"), MR_DURATION_MAX_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(units),   cmocka_unit_test(fractions),   cmocka_unit_test(microseconds),
        cmocka_unit_test(refused), cmocka_unit_test(the_largest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
