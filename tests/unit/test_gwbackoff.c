/* Unit tests for up_backoff_ms (upstream.c): an upstream that keeps failing is started again
 * after 0.5 s, doubling to 30 s at most, each wait jittered to 75-125 % so upstreams that failed
 * together do not come back in lockstep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "upstream.h"

static void doubles_from_half_a_second_to_thirty(void **state)
{
    (void)state;
    unsigned seed = 1;
    const unsigned base[] = {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000};
    for (unsigned f = 0; f < sizeof base / sizeof *base; f++)
        for (int k = 0; k < 200; k++) {
            unsigned ms = up_backoff_ms(f, &seed);
            assert_in_range(ms, base[f] * 3 / 4, base[f] * 5 / 4);
        }
    assert_in_range(up_backoff_ms(1000000, &seed), 22500, 37500); /* no overflow, still capped */
}

static void jitter_spreads_the_waits(void **state)
{
    (void)state;
    unsigned seed = 7, lo = ~0u, hi = 0;
    for (int k = 0; k < 1000; k++) {
        unsigned ms = up_backoff_ms(6, &seed);
        lo = ms < lo ? ms : lo;
        hi = ms > hi ? ms : hi;
    }
    /* 22.5-37.5 s: a thousand draws cover most of the range, not one value */
    assert_true(lo < 25000);
    assert_true(hi > 35000);
    unsigned a = 1, b = 2; /* two upstreams failing together, seeded apart */
    int same = 0;
    for (int k = 0; k < 20; k++)
        same += up_backoff_ms(3, &a) == up_backoff_ms(3, &b);
    assert_true(same < 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(doubles_from_half_a_second_to_thirty),
        cmocka_unit_test(jitter_spreads_the_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
