/* Unit tests for list.h: order of push_front/push_back, unlink from anywhere, the unlinked
 * state, splicing one list onto another, and iteration that frees as it goes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "list.h"

struct item {
    int v;
    struct list link;
};

/* The values of the list, in order, as digits ("" when empty); also checks the back links. */
static const char *values(const struct list *anchor)
{
    static char out[32];
    size_t n = 0;
    const struct list *prev = anchor;
    LIST_FOREACH(node, anchor)
    {
        assert_ptr_equal(node->prev, prev);
        prev = node;
        out[n++] = (char)('0' + list_entry(node, struct item, link)->v);
    }
    assert_ptr_equal(anchor->prev, prev);
    out[n] = '\0';
    return out;
}

static void order_and_unlink(void **state)
{
    (void)state;
    struct list l;
    struct item it[5] = {{.v = 0}, {.v = 1}, {.v = 2}, {.v = 3}, {.v = 4}};
    list_init(&l);
    assert_true(list_empty(&l));
    assert_null(list_first(&l));
    assert_null(list_last(&l));
    assert_false(list_is_linked(&it[0].link)); /* zeroed: in no list */
    list_push_back(&l, &it[1].link);
    list_push_back(&l, &it[2].link);
    list_push_front(&l, &it[0].link);
    list_push_back(&l, &it[3].link);
    list_insert(&it[3].link, &it[4].link); /* before 3 */
    assert_string_equal(values(&l), "01243");
    assert_ptr_equal(list_entry(list_first(&l), struct item, link), &it[0]);
    assert_ptr_equal(list_entry(list_last(&l), struct item, link), &it[3]);

    list_unlink(&it[2].link); /* middle */
    assert_false(list_is_linked(&it[2].link));
    list_unlink(&it[2].link); /* again: a no-op */
    list_unlink(&it[0].link); /* first */
    list_unlink(&it[3].link); /* last */
    assert_string_equal(values(&l), "14");
    list_unlink(&it[1].link);
    list_unlink(&it[4].link);
    assert_true(list_empty(&l));
    assert_string_equal(values(&l), "");
}

/* Most recently used first, the oldest evicted from the back: how ratelimit.c uses it. */
static void lru_moves_to_front(void **state)
{
    (void)state;
    struct list l;
    struct item it[3] = {{.v = 0}, {.v = 1}, {.v = 2}};
    list_init(&l);
    for (int i = 0; i < 3; i++)
        list_push_front(&l, &it[i].link);
    assert_string_equal(values(&l), "210");
    list_unlink(&it[0].link);
    list_push_front(&l, &it[0].link);
    assert_string_equal(values(&l), "021");
    assert_ptr_equal(list_entry(list_last(&l), struct item, link), &it[1]);
}

static void safe_iteration_frees(void **state)
{
    (void)state;
    struct list l;
    list_init(&l);
    for (int i = 0; i < 6; i++) {
        struct item *p = calloc(1, sizeof *p);
        p->v = i;
        list_push_back(&l, &p->link);
    }
    LIST_FOREACH_SAFE(node, &l)
    { /* drop the odd ones while walking */
        struct item *p = list_entry(node, struct item, link);
        if (p->v % 2) {
            list_unlink(node);
            free(p);
        }
    }
    assert_string_equal(values(&l), "024");
    LIST_FOREACH_SAFE(node, &l)
    {
        list_unlink(node);
        free(list_entry(node, struct item, link));
    }
    assert_true(list_empty(&l));
}

/* How the work queue hands batches between its lists: every node moves, in order, the source
 * is left empty and usable, and an empty source changes nothing. */
static void splice_moves_everything(void **state)
{
    (void)state;
    struct list to, from;
    struct item it[5] = {{.v = 0}, {.v = 1}, {.v = 2}, {.v = 3}, {.v = 4}};
    list_init(&to);
    list_init(&from);
    list_splice_back(&to, &from); /* both empty */
    assert_true(list_empty(&to));
    list_push_back(&to, &it[0].link);
    list_splice_back(&to, &from); /* empty source */
    assert_string_equal(values(&to), "0");
    for (int i = 1; i < 4; i++)
        list_push_back(&from, &it[i].link);
    list_splice_back(&to, &from);
    assert_string_equal(values(&to), "0123");
    assert_true(list_empty(&from));
    assert_string_equal(values(&from), "");
    list_push_back(&from, &it[4].link); /* the source is a list again */
    assert_string_equal(values(&from), "4");
    list_unlink(&it[0].link);
    list_unlink(&it[3].link);
    assert_string_equal(values(&to), "12");
    list_init(&from);
    list_splice_back(&from, &to); /* into an empty list */
    assert_string_equal(values(&from), "12");
    assert_true(list_empty(&to));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_and_unlink),
        cmocka_unit_test(lru_moves_to_front),
        cmocka_unit_test(safe_iteration_frees),
        cmocka_unit_test(splice_moves_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
