/* Unit tests for listviews.c: the kept text of each set of visible tools is that set's tools in
 * registry order, found again for the same set, made anew for another, the least recently
 * served set making room, and dropped with the registry's listing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "listviews.h"
#include "mcp_internal.h"

#define NTOOLS 12

static void registry_of(struct registry *reg, struct named *v)
{
    memset(reg, 0, sizeof *reg);
    for (size_t i = 0; i < NTOOLS; i++) {
        char name[8];
        snprintf(name, sizeof name, "t%zu", i);
        v[i] = (struct named){.listing = json_pack("{s:s}", "name", name)};
    }
    reg->v = v;
    reg->n = NTOOLS;
}

static void registry_free(struct registry *reg)
{
    listviews_clear(&reg->views);
    for (size_t i = 0; i < reg->n; i++)
        json_decref(reg->v[i].listing);
}

static void test_a_set_and_its_text(void **state)
{
    struct named v[NTOOLS];
    struct registry reg;
    size_t len;
    (void)state;
    registry_of(&reg, v);
    unsigned char mask[2] = {0x05, 0x08}; /* t0, t2, t11 */
    const char *text = listviews_text(&reg.views, &reg, mask, &len);
    assert_string_equal(text, "[{\"name\":\"t0\"},{\"name\":\"t2\"},{\"name\":\"t11\"}]");
    assert_int_equal(len, strlen(text));
    /* The same set again: the same kept text, not a new one. */
    assert_ptr_equal(listviews_text(&reg.views, &reg, mask, &len), text);
    unsigned char other[2] = {0x02, 0x00}; /* t1 */
    assert_string_equal(listviews_text(&reg.views, &reg, other, &len), "[{\"name\":\"t1\"}]");
    unsigned char none[2] = {0, 0};
    assert_string_equal(listviews_text(&reg.views, &reg, none, &len), "[]");
    json_t *arr = listviews_array(&reg, mask);
    assert_int_equal(json_array_size(arr), 3);
    json_decref(arr);
    registry_free(&reg);
}

static void test_the_least_recently_served_makes_room(void **state)
{
    struct named v[NTOOLS];
    struct registry reg;
    size_t len;
    (void)state;
    registry_of(&reg, v);
    unsigned char masks[LISTVIEWS_MAX + 1][2];
    const char *first[LISTVIEWS_MAX + 1];
    for (size_t i = 0; i <= LISTVIEWS_MAX; i++) {
        masks[i][0] = (unsigned char)(1u << (i % 8));
        masks[i][1] = (unsigned char)(i >= 8 ? 1 : 0);
    }
    for (size_t i = 0; i < LISTVIEWS_MAX; i++)
        first[i] = listviews_text(&reg.views, &reg, masks[i], &len);
    /* Set 0 served again: set 1 is now the least recently served and goes for a ninth set. */
    assert_ptr_equal(listviews_text(&reg.views, &reg, masks[0], &len), first[0]);
    first[LISTVIEWS_MAX] = listviews_text(&reg.views, &reg, masks[LISTVIEWS_MAX], &len);
    assert_ptr_equal(listviews_text(&reg.views, &reg, masks[0], &len), first[0]);
    assert_ptr_equal(listviews_text(&reg.views, &reg, masks[2], &len), first[2]);
    size_t kept = 0;
    for (size_t i = 0; i < LISTVIEWS_MAX; i++)
        kept += reg.views.v[i].mask != NULL &&
                memcmp(reg.views.v[i].mask, masks[1], sizeof masks[1]) == 0;
    assert_int_equal(kept, 0);
    /* Cleared: nothing kept. */
    listviews_clear(&reg.views);
    for (size_t i = 0; i < LISTVIEWS_MAX; i++)
        assert_null(reg.views.v[i].text);
    registry_free(&reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_set_and_its_text),
        cmocka_unit_test(test_the_least_recently_served_makes_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
