/* Unit tests for strmap.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "strmap.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_get_del_through_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
