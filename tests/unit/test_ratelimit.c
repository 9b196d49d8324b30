/* Unit tests for ratelimit.c: bucket refill, Retry-After, /64 grouping, bounded table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "ratelimit.h"

static void bucket_allows_burst_then_waits(void **state)
{
    (void)state;
    struct ratelimit *rl = ratelimit_new(30, 100); /* one token every 2 s */
    for (int i = 0; i < 30; i++)
        assert_int_equal(ratelimit_take(rl, "10.0.0.1", 1000), 0);
    assert_int_equal(ratelimit_take(rl, "10.0.0.1", 1000), 2);
    assert_int_equal(ratelimit_take(rl, "10.0.0.1", 2000), 1); /* half a token back */
    assert_int_equal(ratelimit_take(rl, "10.0.0.1", 3000), 0); /* a whole one */
    assert_int_equal(ratelimit_take(rl, "10.0.0.2", 3000), 0); /* others are not affected */
    ratelimit_free(rl);
}

static void ipv6_grouped_by_64_and_mapped_v4(void **state)
{
    char k1[64], k2[64], k3[64];
    (void)state;
    ratelimit_key("2001:db8:1:2:aaaa::1", k1, sizeof k1);
    ratelimit_key("2001:db8:1:2:bbbb:cccc:dddd:eeee", k2, sizeof k2);
    ratelimit_key("2001:db8:1:3::1", k3, sizeof k3);
    assert_string_equal(k1, k2);
    assert_string_not_equal(k1, k3);
    ratelimit_key("::ffff:192.0.2.1", k1, sizeof k1);
    assert_string_equal(k1, "192.0.2.1");
    struct ratelimit *rl = ratelimit_new(1, 100);
    assert_int_equal(ratelimit_take(rl, "2001:db8::1", 0), 0);
    assert_true(ratelimit_take(rl, "2001:db8::2", 0) > 0); /* same /64, same bucket */
    ratelimit_free(rl);
}

static void table_is_bounded_and_evicts_oldest(void **state)
{
    char ip[32];
    (void)state;
    struct ratelimit *rl = ratelimit_new(1, 100);
    assert_int_equal(ratelimit_take(rl, "192.0.2.1", 0), 0);
    assert_true(ratelimit_take(rl, "192.0.2.1", 0) > 0);
    for (int i = 0; i < 10000; i++) {
        snprintf(ip, sizeof ip, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        ratelimit_take(rl, ip, 0);
        assert_true(ratelimit_clients(rl) <= 100);
    }
    /* 192.0.2.1 was evicted long ago: it starts with a full bucket again. */
    assert_int_equal(ratelimit_take(rl, "192.0.2.1", 0), 0);
    ratelimit_free(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bucket_allows_burst_then_waits),
        cmocka_unit_test(ipv6_grouped_by_64_and_mapped_v4),
        cmocka_unit_test(table_is_bounded_and_evicts_oldest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
