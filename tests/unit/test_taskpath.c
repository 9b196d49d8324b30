/* Unit tests for taskpath.c: ids, session names, relative paths in every hostile spelling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "taskpath.h"

static bool id(const char *s)
{
    return taskpath_id_ok(s, strlen(s));
}

static bool sess(const char *s)
{
    return taskpath_session_ok(s, strlen(s));
}

static void ids(void **state)
{
    char long_ok[129], too_long[130];
    (void)state;
    assert_true(id("a"));
    assert_true(id("Task-1.v2_x"));
    memset(long_ok, 'a', 128);
    long_ok[128] = '\0';
    assert_true(id(long_ok));
    memset(too_long, 'a', 129);
    too_long[129] = '\0';
    assert_false(id(too_long));
    assert_false(id(""));
    assert_false(id(".hidden"));
    assert_false(id("-x"));
    assert_false(id(".."));
    assert_false(id("a/b"));
    assert_false(id("a b"));
    assert_false(taskpath_id_ok("a\0b", 3));
    assert_false(id("tâche"));
}

static void sessions(void **state)
{
    (void)state;
    assert_true(sess("work"));
    assert_true(sess("0.x_y-z"));
    assert_false(sess("Work"));
    assert_false(sess("-a"));
    assert_false(sess(""));
    assert_false(sess("a/b"));
    assert_false(
        sess("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")); /* 65 */
}

static void rel_ok(const char *in, const char *want)
{
    char out[1100];
    const char *why;
    assert_true(taskpath_rel_ok(in, strlen(in), out, sizeof out, &why));
    assert_string_equal(out, want);
}

static void rel_bad(const char *in, size_t len)
{
    char out[1100];
    const char *why;
    assert_false(taskpath_rel_ok(in, len, out, sizeof out, &why));
    assert_non_null(why);
}

static void relative_paths(void **state)
{
    (void)state;
    rel_ok("", "");
    rel_ok(".", "");
    rel_ok("out/report.md", "out/report.md");
    rel_ok("./out//report.md/", "out/report.md");
    rel_ok("a..b/c", "a..b/c");
    static const char *const bad[] = {"..",          "../x",     "a/../../b", "a/..",
                                      "/etc/passwd", "a\\..\\b", "..\\x",     "%2e%2e/x",
                                      "a%2fb",       "a\n",      "\x7f"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        rel_bad(bad[i], strlen(bad[i]));
    rel_bad("a\0/../b", 7);
    char big[1100];
    memset(big, 'a', sizeof big);
    rel_bad(big, sizeof big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids),
        cmocka_unit_test(sessions),
        cmocka_unit_test(relative_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
