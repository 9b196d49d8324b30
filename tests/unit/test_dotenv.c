/* Unit tests for dotenv.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dotenv.h"

static json_t *parse(const char *s, char *err)
{
    return dotenv_parse(s, strlen(s), err, 200);
}

static const char *get(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void parses_the_usual_forms(void **state)
{
    char err[200];
    (void)state;
    json_t *o = parse("# comment\n\nA=1\nexport B = two words \nC=\"q \\\"x\\\"\\n\"\n"
                      "D='single # not a comment'\nE=val # comment\nF=\nG=a#b\r\n",
                      err);
    assert_non_null(o);
    assert_string_equal(get(o, "A"), "1");
    assert_string_equal(get(o, "B"), "two words");
    assert_string_equal(get(o, "C"), "q \"x\"\n");
    assert_string_equal(get(o, "D"), "single # not a comment");
    assert_string_equal(get(o, "E"), "val");
    assert_string_equal(get(o, "F"), "");
    assert_string_equal(get(o, "G"), "a#b");
    json_decref(o);
}

static void later_keys_win(void **state)
{
    char err[200];
    (void)state;
    json_t *o = parse("A=1\nA=2", err);
    assert_string_equal(get(o, "A"), "2");
    json_decref(o);
}

static void rejects_bad_lines_with_line_numbers(void **state)
{
    char err[200];
    (void)state;
    assert_null(parse("A=1\nnot a pair\n", err));
    assert_non_null(strstr(err, "line 2"));
    assert_null(parse("A=\"open\n", err));
    assert_non_null(strstr(err, "unterminated"));
    assert_null(parse("1A=x\n", err));
    assert_null(parse("A=\"x\" trailing\n", err));
    assert_null(parse("A=\xff\xfe\n", err)); /* not UTF-8 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_the_usual_forms),
        cmocka_unit_test(later_keys_win),
        cmocka_unit_test(rejects_bad_lines_with_line_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
