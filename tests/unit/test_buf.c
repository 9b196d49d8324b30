/* Unit tests for buf.c: growth, the hard cap, consume, detach. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buf.h"

static void appends_and_grows(void **state)
{
    struct buf b;
    (void)state;
    buf_init(&b, 0);
    for (int i = 0; i < 1000; i++)
        assert_true(buf_append(&b, "abc", 3));
    assert_int_equal(b.len, 3000);
    assert_int_equal(b.data[b.len], '\0');
    assert_true(buf_printf(&b, "%0300d", 7)); /* longer than the small printf buffer */
    assert_int_equal(b.len, 3300);
    assert_int_equal(b.data[3299], '7');
    buf_cleanup(&b);
}

static void cap_is_exact_and_leaves_buffer_unchanged(void **state)
{
    struct buf b;
    (void)state;
    buf_init(&b, 10);
    assert_true(buf_append(&b, "0123456789", 10)); /* exactly the cap */
    assert_false(buf_append(&b, "x", 1));          /* one more is refused */
    assert_int_equal(b.len, 10);
    assert_memory_equal(b.data, "0123456789", 10);
    assert_false(buf_printf(&b, "%d", 1));
    buf_cleanup(&b);
}

static void consume_and_take(void **state)
{
    struct buf b;
    size_t len;
    (void)state;
    buf_init(&b, 0);
    buf_appends(&b, "hello world");
    buf_consume(&b, 6);
    assert_string_equal(b.data, "world");
    buf_consume(&b, 100);
    assert_int_equal(b.len, 0);
    buf_appends(&b, "kept");
    char *p = buf_detach(&b, &len);
    assert_string_equal(p, "kept");
    assert_int_equal(len, 4);
    assert_null(b.data);
    free(p);
    p = buf_detach(&b, &len); /* empty buffer gives an empty string */
    assert_string_equal(p, "");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_and_grows),
        cmocka_unit_test(cap_is_exact_and_leaves_buffer_unchanged),
        cmocka_unit_test(consume_and_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
