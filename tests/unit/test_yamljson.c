/* Unit tests for yamljson.c: every scalar a string, and the marks of which scalars were written
 * plain (the gateway file types its fix values by them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "yamljson.h"

static const char doc[] = "a: 5\n"
                          "b: \"5\"\n"
                          "c: '5'\n"
                          "d: !!str 5\n"
                          "e: true\n"
                          "f: |\n  block\n"
                          "g: [1, \"x\", {h: null}]\n"
                          "i: ~\n"
                          "j:\n";

static void test_strings_and_marks(void **state)
{
    (void)state;
    char err[200];
    json_t *plain = NULL;
    json_t *d = yamljson_parse_marked(doc, strlen(doc), "the file", err, sizeof err, &plain);
    assert_non_null(d);
    assert_non_null(plain);
    /* the values are strings whatever the style */
    assert_string_equal(json_string_value(json_object_get(d, "a")), "5");
    assert_string_equal(json_string_value(json_object_get(d, "d")), "5");
    assert_string_equal(json_string_value(json_object_get(d, "e")), "true");
    assert_string_equal(json_string_value(json_object_get(d, "j")), "");
    /* the marks have the document's shape; true only where the scalar was plain and untagged */
    assert_true(json_is_true(json_object_get(plain, "a")));
    assert_true(json_is_false(json_object_get(plain, "b")));
    assert_true(json_is_false(json_object_get(plain, "c")));
    assert_true(json_is_false(json_object_get(plain, "d")));
    assert_true(json_is_true(json_object_get(plain, "e")));
    assert_true(json_is_false(json_object_get(plain, "f")));
    assert_true(json_is_true(json_object_get(plain, "i")));
    assert_true(json_is_true(json_object_get(plain, "j")));
    json_t *g = json_object_get(plain, "g");
    assert_int_equal(json_array_size(g), 3);
    assert_true(json_is_true(json_array_get(g, 0)));
    assert_true(json_is_false(json_array_get(g, 1)));
    assert_true(json_is_true(json_object_get(json_array_get(g, 2), "h")));
    assert_int_equal(json_object_size(plain), json_object_size(d));
    json_decref(plain);
    json_decref(d);
}

static void test_plain_parse_unchanged(void **state)
{
    (void)state;
    char err[200];
    json_t *d = yamljson_parse(doc, strlen(doc), "the file", err, sizeof err);
    assert_non_null(d);
    assert_true(json_is_string(json_object_get(d, "i")));
    assert_true(json_is_string(json_array_get(json_object_get(d, "g"), 0)));
    json_decref(d);
}

/* A refused document leaves no marks (and nothing leaked: ASan) wherever it fails. */
static void test_failure_leaves_no_marks(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "a: 1\na: 2\n", "a: &x 1\nb: *x\n", "a: [1, {b: 2}\n", "a: 1\n---\nb: 2\n", "",
        "{[1]: 2}\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[200] = "";
        json_t *plain = json_string("stale");
        json_t *keep = plain;
        json_t *d =
            yamljson_parse_marked(bad[i], strlen(bad[i]), "the file", err, sizeof err, &plain);
        assert_null(d);
        assert_null(plain);
        assert_true(err[0] != '\0');
        json_decref(keep);
    }
}

/* A plain scalar's YAML 1.2 core-schema type; numbers JSON cannot carry exactly are flagged. */
static void test_plain_value_types(void **state)
{
    (void)state;
    bool range = false;
    json_t *v = yamljson_plain_value("True", &range);
    assert_true(json_is_true(v));
    json_decref(v);
    v = yamljson_plain_value("~", &range);
    assert_true(json_is_null(v));
    json_decref(v);
    v = yamljson_plain_value("-42", &range);
    assert_int_equal(json_integer_value(v), -42);
    json_decref(v);
    v = yamljson_plain_value(".5e1", &range);
    assert_true(json_is_real(v) && json_real_value(v) == 5.0);
    json_decref(v);
    assert_false(range);
    assert_null(yamljson_plain_value("0x1F", &range)); /* a string after all */
    assert_null(yamljson_plain_value("yes", &range));
    assert_false(range);
    assert_null(yamljson_plain_value("9007199254740992", &range)); /* 2^53: would round */
    assert_true(range);
    range = false;
    assert_null(yamljson_plain_value("1e400", &range));
    assert_true(range);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_and_marks),
        cmocka_unit_test(test_plain_parse_unchanged),
        cmocka_unit_test(test_failure_leaves_no_marks),
        cmocka_unit_test(test_plain_value_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
