/* Unit tests for gw_smoke_result_failed (gwsmoke.c): which successful tools/call results a smoke
 * call counts as failed (isError, a nested provider error in structuredContent or in a text item
 * holding JSON, as the Hermes gateway has them) and which it does not (plain text, error: null,
 * ordinary data), and that the reason names where the error was, never its value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "upstream.h"

static bool failed(const char *text, char *why, size_t whylen)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    why[0] = '\0';
    bool bad = gw_smoke_result_failed(v, why, whylen);
    json_decref(v);
    return bad;
}

static void test_fails(void **state)
{
    static const char *const cases[][2] = {
        {"{\"isError\":true,\"content\":[]}", "the result has isError: true"},
        {"{\"content\":[],\"structuredContent\":{\"error\":\"key sk-1 rejected\"}}",
         "a nested error in structuredContent.error"},
        {"{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"success\\\":false,\\\"error\\\":\\\"sk-"
         "2\\\"}\"}]}",
         "a nested error in content[0] (JSON text): success"},
        {"{\"content\":[{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"text\",\"text\":\" "
         "{\\\"results\\\":[{\\\"url\\\":\\\"u\\\",\\\"error\\\":\\\"sk-3\\\"}]}\"}]}",
         "a nested error in content[1] (JSON text): results[0].error"},
        {"{\"structuredContent\":{\"data\":{\"status\":\"failed\"}}}",
         "a nested error in structuredContent.data.status"},
        {"{\"structuredContent\":{\"ok\":false}}", "a nested error in structuredContent.ok"},
        {"{\"structuredContent\":{\"errors\":[\"x\"]}}",
         "a nested error in structuredContent.errors"},
    };
    char why[200];
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        assert_true(failed(cases[i][0], why, sizeof why));
        assert_string_equal(why, cases[i][1]);
        assert_null(strstr(why, "sk-"));
    }
}

static void test_passes(void **state)
{
    static const char *const cases[] = {
        "{\"content\":[{\"type\":\"text\",\"text\":\"Echo: ready\"}]}",
        "{\"content\":[{\"type\":\"text\",\"text\":\"Error handling is explained here\"}]}",
        "{\"content\":[],\"structuredContent\":{\"error\":null,\"errors\":[],\"success\":true}}",
        "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"results\\\":[{\\\"error\\\":\\\"\\\"}]}"
        "\"}]}",
        "{\"content\":[{\"type\":\"text\",\"text\":\"{not json\"}]}",
        "{\"isError\":false,\"content\":[],\"structuredContent\":{\"status\":\"done\"}}",
        /* deeper than the search goes: not looked at */
        "{\"structuredContent\":{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"error\":\"x\"}}}}}}}",
    };
    char why[200];
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_false(failed(cases[i], why, sizeof why));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fails),
        cmocka_unit_test(test_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
