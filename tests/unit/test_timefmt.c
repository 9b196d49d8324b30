/* Unit tests for timefmt.c (both forms, whatever TZ says) and for tokens_parse_time, whose
 * calendar arithmetic is timegm's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "principal.h"
#include "timefmt.h"

static void seconds_form(void **state)
{
    (void)state;
    char out[TIMEFMT_SIZE];
    assert_string_equal(timefmt_iso(0, out), "1970-01-01T00:00:00Z");
    assert_string_equal(timefmt_iso(951782400, out), "2000-02-29T00:00:00Z");
    assert_string_equal(timefmt_iso(1796774399, out), "2026-12-08T23:59:59Z");
    assert_string_equal(timefmt_iso(253402300799, out), "9999-12-31T23:59:59Z");
}

static void milliseconds_form(void **state)
{
    (void)state;
    char out[TIMEFMT_SIZE];
    struct timespec ts = {.tv_sec = 1796774399, .tv_nsec = 999999999};
    assert_string_equal(timefmt_iso_ms(&ts, out), "2026-12-08T23:59:59.999Z");
    ts = (struct timespec){.tv_sec = 0, .tv_nsec = 7000000};
    assert_string_equal(timefmt_iso_ms(&ts, out), "1970-01-01T00:00:00.007Z");
    ts.tv_nsec = 999999; /* truncated, never rounded up into the next second */
    assert_string_equal(timefmt_iso_ms(&ts, out), "1970-01-01T00:00:00.000Z");
}

static void utc_whatever_tz(void **state)
{
    (void)state;
    char out[TIMEFMT_SIZE];
    time_t t;
    setenv("TZ", "Pacific/Kiritimati", 1); /* UTC+14 */
    tzset();
    assert_string_equal(timefmt_iso(0, out), "1970-01-01T00:00:00Z");
    assert_true(tokens_parse_time("2026-12-07T08:41:58Z", &t));
    assert_string_equal(timefmt_iso(t, out), "2026-12-07T08:41:58Z");
    unsetenv("TZ");
    tzset();
}

/* The parser and the writer agree across the calendar: every day 1970-2100 at 00:00:00 and at
 * 23:59:59, leap days included. */
static void parse_and_format_round_trip(void **state)
{
    (void)state;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    time_t expect = 0;
    for (int y = 1970; y <= 2100; y++)
        for (int m = 1; m <= 12; m++) {
            bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            int n = mdays[m - 1] + (m == 2 && leap);
            for (int d = 1; d <= n; d++) {
                char text[48], out[TIMEFMT_SIZE];
                time_t t;
                snprintf(text, sizeof text, "%04d-%02d-%02d", y, m, d);
                assert_true(tokens_parse_time(text, &t));
                assert_int_equal(t, expect);
                snprintf(text, sizeof text, "%04d-%02d-%02dT23:59:59Z", y, m, d);
                assert_true(tokens_parse_time(text, &t));
                assert_int_equal(t, expect + 86399);
                assert_string_equal(timefmt_iso(t, out), text);
                expect += 86400;
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seconds_form),
        cmocka_unit_test(milliseconds_form),
        cmocka_unit_test(utc_whatever_tz),
        cmocka_unit_test(parse_and_format_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
