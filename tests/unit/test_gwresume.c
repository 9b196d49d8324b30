/* Unit tests for httpup_resume_delay_ms (httpup.c): the wait before resuming a url upstream's
 * answer stream honours the stream's retry: field from 100 ms (retry: 0 must not make a storm of
 * GETs) up to 30 s (a huge one must not park a call for an hour), and without one backs off from
 * 100 ms, doubling with each fruitless resume, capped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "upstream.h"

static void retry_field_is_honoured_within_bounds(void **state)
{
    (void)state;
    assert_int_equal(httpup_resume_delay_ms(0, 0), 100); /* retry: 0 is no resume storm */
    assert_int_equal(httpup_resume_delay_ms(99, 0), 100);
    assert_int_equal(httpup_resume_delay_ms(100, 0), 100);
    assert_int_equal(httpup_resume_delay_ms(1200, 0), 1200);
    assert_int_equal(httpup_resume_delay_ms(1200, 3),
                     1200); /* the server's word, whatever the misses */
    assert_int_equal(httpup_resume_delay_ms(30000, 0), 30000);
    assert_int_equal(httpup_resume_delay_ms(30001, 0), 30000);
    assert_int_equal(httpup_resume_delay_ms(3600000, 0), 30000);
}

static void backoff_without_retry_field(void **state)
{
    (void)state;
    assert_int_equal(httpup_resume_delay_ms(-1, 0), 100);
    assert_int_equal(httpup_resume_delay_ms(-1, 1), 200);
    assert_int_equal(httpup_resume_delay_ms(-1, 3), 800);
    assert_int_equal(httpup_resume_delay_ms(-1, 9), 25600);
    assert_int_equal(httpup_resume_delay_ms(-1, 1000), 25600); /* no overflow past the cap */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(retry_field_is_honoured_within_bounds),
        cmocka_unit_test(backoff_without_retry_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
