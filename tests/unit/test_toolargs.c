/* Unit tests for toolargs.c: every refusal names its field; the schema says what the checks
 * enforce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "toolargs.h"

static bool lower_only(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] < 'a' || s[i] > 'z')
            return false;
    return len > 0;
}

static const char *const modes[] = {"sync", "async", NULL};
static const char *const three[] = {"a", "b", "c", NULL};
static const struct toolarg spec[] = {
    {.name = "task",
     .type = TOOLARG_STRING,
     .required = true,
     .nonempty = true,
     .max_len = 8,
     .description = "what to do"},
    {.name = "mode", .type = TOOLARG_STRING, .required = true, .one_of = modes},
    {.name = "tags", .type = TOOLARG_STRINGS, .max_len = 3, .max_items = 2},
    {.name = "id",
     .type = TOOLARG_STRING,
     .max_len = 10,
     .pattern = "^[a-z]+$",
     .syntax = lower_only,
     .syntax_hint = "must match ^[a-z]+$"},
    {.name = "pick", .type = TOOLARG_STRING, .one_of = three},
    {.name = "confirmed", .type = TOOLARG_BOOL},
    TOOLARG_END,
};
#define NSPEC 6

/* Checks text (a JSON object) against spec; returns the error text, or "" when it passed. */
static const char *check(const char *text)
{
    static char err[200];
    json_t *out[NSPEC];
    json_error_t je;
    json_t *args = json_loads(text, JSON_ALLOW_NUL, &je);
    assert_non_null(args);
    err[0] = '\0';
    bool ok = toolargs_check(spec, args, out, NSPEC, err, sizeof err);
    assert_true(ok == (err[0] == '\0'));
    json_decref(args);
    return err;
}

static void accepts_and_returns_values(void **state)
{
    (void)state;
    json_t *out[NSPEC];
    char err[200];
    json_t *args = json_loads("{\"task\":\"go\",\"mode\":\"async\",\"tags\":[\"x\"],"
                              "\"confirmed\":true,\"id\":null}",
                              0, NULL);
    assert_true(toolargs_check(spec, args, out, NSPEC, err, sizeof err));
    assert_string_equal(toolargs_str(out, 0), "go");
    assert_string_equal(toolargs_str(out, 1), "async");
    assert_int_equal(json_array_size(out[2]), 1);
    assert_null(out[3]); /* null counts as absent */
    assert_null(toolargs_str(out, 4));
    assert_true(json_is_true(out[5]));
    json_decref(args);
}

static void refusals_name_the_field(void **state)
{
    (void)state;
    assert_string_equal(check("{\"mode\":\"sync\"}"), "'task' is required");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"extra\":1}"),
                        "unknown field 'extra'");
    assert_string_equal(check("{\"task\":1,\"mode\":\"sync\"}"), "'task' must be a string");
    assert_string_equal(check("{\"task\":\"\",\"mode\":\"sync\"}"), "'task' must not be empty");
    assert_string_equal(check("{\"task\":\"123456789\",\"mode\":\"sync\"}"),
                        "'task' is longer than 8 characters");
    /* Characters, as the schema's maxLength counts them: eight of two bytes each pass. */
    assert_string_equal(
        check("{\"task\":\"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\",\"mode\":\"sync\"}"),
        "");
    assert_string_equal(
        check("{\"task\":\"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\",\"mode\":"
              "\"sync\"}"),
        "'task' is longer than 8 characters");
    assert_string_equal(check("{\"task\":\"a\\u0000b\",\"mode\":\"sync\"}"),
                        "'task' contains a NUL character");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"now\"}"),
                        "'mode' must be \"sync\" or \"async\"");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"pick\":\"d\"}"),
                        "'pick' must be one of \"a\", \"b\" or \"c\"");
    /* A NUL must not let a value pass as its prefix. */
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\\u0000x\"}"),
                        "'mode' contains a NUL character");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"id\":\"AB\"}"),
                        "'id' must match ^[a-z]+$");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"tags\":\"a\"}"),
                        "'tags' must be an array of strings");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"tags\":[\"a\",\"b\",\"c\"]}"),
                        "'tags' may hold at most 2 items");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"tags\":[\"abcd\"]}"),
                        "'tags' items must be strings of at most 3 characters");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"tags\":[\"a\\u0000\"]}"),
                        "'tags' items must not contain a NUL character");
    assert_string_equal(check("{\"task\":\"x\",\"mode\":\"sync\",\"confirmed\":\"yes\"}"),
                        "'confirmed' must be a boolean");
    /* A client's field name is quoted cleaned: one line, valid UTF-8. */
    assert_string_equal(check("{\"a\\nb\":1}"), "unknown field 'a?b'");
    /* A table longer than the caller's array is refused, never written past it. */
    json_t *few[2], *args = json_object();
    char err[200];
    assert_false(toolargs_check(spec, args, few, 2, err, sizeof err));
    assert_non_null(strstr(err, "internal error"));
    json_decref(args);
}

static void schema_matches_the_table(void **state)
{
    (void)state;
    json_t *s = toolargs_schema(spec);
    json_t *p = json_object_get(s, "properties");
    assert_string_equal(json_string_value(json_object_get(s, "type")), "object");
    assert_true(json_is_false(json_object_get(s, "additionalProperties")));
    assert_int_equal(json_object_size(p), NSPEC);
    json_t *task = json_object_get(p, "task");
    assert_int_equal(json_integer_value(json_object_get(task, "minLength")), 1);
    assert_int_equal(json_integer_value(json_object_get(task, "maxLength")), 8);
    assert_string_equal(json_string_value(json_object_get(task, "description")), "what to do");
    json_t *mode = json_object_get(p, "mode");
    assert_int_equal(json_array_size(json_object_get(mode, "enum")), 2);
    json_t *tags = json_object_get(p, "tags");
    assert_string_equal(json_string_value(json_object_get(tags, "type")), "array");
    assert_int_equal(json_integer_value(json_object_get(tags, "maxItems")), 2);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(tags, "items"), "maxLength")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "id"), "pattern")),
                        "^[a-z]+$");
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "confirmed"), "type")),
                        "boolean");
    json_t *req = json_object_get(s, "required");
    assert_int_equal(json_array_size(req), 2);
    assert_string_equal(json_string_value(json_array_get(req, 0)), "task");
    assert_string_equal(json_string_value(json_array_get(req, 1)), "mode");
    json_decref(s);

    static const struct toolarg none[] = {TOOLARG_END};
    s = toolargs_schema(none);
    assert_null(json_object_get(s, "required")); /* an empty required array is not valid */
    assert_int_equal(json_object_size(json_object_get(s, "properties")), 0);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_and_returns_values),
        cmocka_unit_test(refusals_name_the_field),
        cmocka_unit_test(schema_matches_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
