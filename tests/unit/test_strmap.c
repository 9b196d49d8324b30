/* Unit tests for strmap.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "siphash.h"
#include "strmap.h"
#include <string.h>

static void put_get_del_through_growth(void **state)
{
    (void)state;
    struct strmap *m = strmap_new();
    char key[32];
    static int vals[1000];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_null(strmap_put(m, key, &vals[i]));
    }
    assert_int_equal(strmap_count(m), 1000);
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_ptr_equal(strmap_get(m, key), &vals[i]);
    }
    assert_ptr_equal(strmap_put(m, "k5", &vals[6]), &vals[5]); /* replace returns old */
    for (int i = 0; i < 1000; i += 2) {
        snprintf(key, sizeof key, "k%d", i);
        assert_non_null(strmap_del(m, key));
    }
    assert_null(strmap_get(m, "k0"));
    assert_null(strmap_del(m, "k0"));
    assert_int_equal(strmap_count(m), 500);
    size_t n;
    void **v = strmap_values(m, &n);
    assert_int_equal(n, 500);
    free(v);
    strmap_free(m);
}

/* The vectors of the SipHash paper (appendix A): key 00..0f, messages 00, 00 01, ... */
static void siphash_matches_the_paper(void **state)
{
    (void)state;
    uint8_t key[16], msg[15];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 15; i++)
        msg[i] = (uint8_t)i;
    assert_true(siphash24(msg, 0, key) == 0x726fdb47dd0e0e31ull);
    assert_true(siphash24(msg, 15, key) == 0xa129ca6149be45e5ull);
}

/* The hash is keyed: another seed, other hashes; and the process draws a random one. */
static void hash_is_keyed_with_a_random_seed(void **state)
{
    (void)state;
    static const uint8_t zero[16];
    const char *keys[] = {"t-20261204-000000-abcd", "0", "session-1"};
    int same_as_unkeyed = 0;
    for (size_t i = 0; i < 3; i++)
        same_as_unkeyed += strmap_hash(keys[i]) == siphash24(keys[i], strlen(keys[i]), zero);
    assert_int_equal(same_as_unkeyed, 0); /* the process seed is not all zeros */
    uint8_t a[16] = {1}, b[16] = {2};
    strmap_set_seed(a);
    uint64_t ha = strmap_hash("x");
    strmap_set_seed(b);
    assert_true(strmap_hash("x") != ha);
    assert_true(strmap_hash("x") == siphash24("x", 1, b));
    /* Maps work whatever the seed. */
    struct strmap *m = strmap_new();
    static int v;
    strmap_put(m, "x", &v);
    assert_ptr_equal(strmap_get(m, "x"), &v);
    strmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(siphash_matches_the_paper),
        cmocka_unit_test(hash_is_keyed_with_a_random_seed),
        cmocka_unit_test(put_get_del_through_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
