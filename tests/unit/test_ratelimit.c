/* Unit tests for ratelimit.c: bucket refill, Retry-After, /64 grouping, bounded table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ratelimit.h"

static void bucket_allows_burst_then_waits(void **state)
{
    (void)state;
    struct ratelimit *rl = ratelimit_new(30, 100); /* one token every 2 s */
    for (int i = 0; i < 30; i++)
        assert_int_equal(ratelimit_consume(rl, "10.0.0.1", 1000, NULL), 0);
    assert_int_equal(ratelimit_consume(rl, "10.0.0.1", 1000, NULL), 2);
    assert_int_equal(ratelimit_consume(rl, "10.0.0.1", 2000, NULL), 1); /* half a token back */
    assert_int_equal(ratelimit_consume(rl, "10.0.0.1", 3000, NULL), 0); /* a whole one */
    assert_int_equal(ratelimit_consume(rl, "10.0.0.2", 3000, NULL),
                     0); /* others are not affected */
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
    assert_int_equal(ratelimit_consume(rl, "2001:db8::1", 0, NULL), 0);
    assert_true(ratelimit_consume(rl, "2001:db8::2", 0, NULL) > 0); /* same /64, same bucket */
    ratelimit_free(rl);
}

static void table_is_bounded_and_evicts_oldest(void **state)
{
    char ip[32];
    (void)state;
    struct ratelimit *rl = ratelimit_new(1, 100);
    assert_int_equal(ratelimit_consume(rl, "192.0.2.1", 0, NULL), 0);
    assert_true(ratelimit_consume(rl, "192.0.2.1", 0, NULL) > 0);
    for (int i = 0; i < 10000; i++) {
        snprintf(ip, sizeof ip, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        ratelimit_consume(rl, ip, 0, NULL);
        assert_true(ratelimit_clients(rl) <= 100);
    }
    /* 192.0.2.1 was evicted long ago: it starts with a full bucket again. */
    assert_int_equal(ratelimit_consume(rl, "192.0.2.1", 0, NULL), 0);
    ratelimit_free(rl);
}

static void first_refusal_of_a_minute_is_flagged(void **state)
{
    bool first;
    (void)state;
    struct ratelimit *rl = ratelimit_new(1, 100); /* one token a minute */
    assert_int_equal(ratelimit_consume(rl, "192.0.2.1", 1000, &first), 0);
    assert_false(first);
    assert_true(ratelimit_consume(rl, "192.0.2.1", 1000, &first) > 0);
    assert_true(first);
    assert_true(ratelimit_consume(rl, "192.0.2.1", 30000, &first) > 0);
    assert_false(first); /* the same minute: logged already */
    assert_true(ratelimit_consume(rl, "192.0.2.2", 1000, &first) == 0);
    assert_true(ratelimit_consume(rl, "192.0.2.2", 1000, &first) > 0);
    assert_true(first); /* another client has its own */
    /* A minute after the first refusal, the next refusal is flagged again. */
    assert_true(ratelimit_consume(rl, "192.0.2.1", 61000, &first) == 0); /* a token came back */
    assert_true(ratelimit_consume(rl, "192.0.2.1", 61500, &first) > 0);
    assert_true(first);
    ratelimit_free(rl);
}

static void raw_keys_are_their_own_buckets(void **state)
{
    char long_key[100];
    (void)state;
    struct ratelimit *rl = ratelimit_new(2, 100);
    assert_int_equal(ratelimit_consume_key(rl, "cred:0123abcd", 0, NULL), 0);
    assert_int_equal(ratelimit_consume_key(rl, "cred:0123abcd", 0, NULL), 0);
    assert_true(ratelimit_consume_key(rl, "cred:0123abcd", 0, NULL) > 0);
    assert_int_equal(ratelimit_consume_key(rl, "cred:ffff0000", 0, NULL), 0);
    assert_int_equal(ratelimit_consume(rl, "10.0.0.1", 0, NULL), 0); /* addresses: separate */
    /* A key longer than the bucket holds is cut the same way every time: one bucket. */
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    assert_int_equal(ratelimit_consume_key(rl, long_key, 0, NULL), 0);
    assert_int_equal(ratelimit_consume_key(rl, long_key, 0, NULL), 0);
    assert_true(ratelimit_consume_key(rl, long_key, 0, NULL) > 0);
    ratelimit_free(rl);
}

/* One table, a rate per key: each key bursts to its own rate and refills at it; a key whose
 * rate shrinks keeps at most the new burst; long keys (a 64-character name) stay whole. */
static void keys_with_rates_of_their_own(void **state)
{
    struct ratelimit *rl = ratelimit_new(1, 16);
    bool first;
    (void)state;
    for (int i = 0; i < 2; i++)
        assert_int_equal(ratelimit_consume_rate(rl, "slow", 2, 1000, NULL), 0);
    assert_int_equal(ratelimit_consume_rate(rl, "slow", 2, 1000, &first), 30);
    assert_true(first);
    for (int i = 0; i < 60; i++)
        assert_int_equal(ratelimit_consume_rate(rl, "fast", 60, 1000, NULL), 0);
    assert_int_equal(ratelimit_consume_rate(rl, "fast", 60, 1000, NULL), 1);
    assert_int_equal(ratelimit_consume_rate(rl, "fast", 60, 2100, NULL), 0); /* refilled */
    assert_int_equal(ratelimit_consume_rate(rl, "slow", 2, 31000, NULL), 0);
    /* fast's rate drops to 1: 59 s of refill at 60 a minute is capped to a burst of 1 */
    assert_int_equal(ratelimit_consume_rate(rl, "fast", 1, 61000, NULL), 0);
    assert_true(ratelimit_consume_rate(rl, "fast", 1, 61000, NULL) > 0);
    char a[65], b[65];
    memset(a, 'a', 64), a[64] = '\0';
    memcpy(b, a, 65), b[63] = 'b';
    assert_int_equal(ratelimit_consume_rate(rl, a, 1, 1000, NULL), 0);
    assert_int_equal(ratelimit_consume_rate(rl, b, 1, 1000, NULL), 0); /* not a's bucket */
    ratelimit_free(rl);
}

/* A replica's share of a limit: the replicas together never allow more than the limit, each
 * allows at least one; no limit stays none. */
static void share_of_a_limit_per_replica(void **state)
{
    (void)state;
    assert_int_equal(ratelimit_share(600, 1), 600);
    assert_int_equal(ratelimit_share(600, 0), 600);
    assert_int_equal(ratelimit_share(600, 3), 200);
    assert_int_equal(ratelimit_share(10, 3), 3); /* 9 in all, never 12 */
    assert_int_equal(ratelimit_share(2, 3), 1);  /* below the count: one each */
    assert_int_equal(ratelimit_share(0, 3), 0);
    for (unsigned n = 1; n <= 64; n++)
        for (unsigned limit = n; limit < 200; limit++)
            assert_true(ratelimit_share(limit, n) * n <= limit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bucket_allows_burst_then_waits),
        cmocka_unit_test(ipv6_grouped_by_64_and_mapped_v4),
        cmocka_unit_test(table_is_bounded_and_evicts_oldest),
        cmocka_unit_test(first_refusal_of_a_minute_is_flagged),
        cmocka_unit_test(raw_keys_are_their_own_buckets),
        cmocka_unit_test(keys_with_rates_of_their_own),
        cmocka_unit_test(share_of_a_limit_per_replica),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
