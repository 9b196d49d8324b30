/* Unit tests for chatchunk.c: the chunks agents send are read without jansson, with the same
 * result jansson gives (checked against it for every case), and anything unusual is refused so
 * the bridge falls back to jansson. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "chatchunk.h"

/* What the bridge reads from a chunk with jansson (bridge.c's fallback). */
struct ref {
    bool parsed, has_error, has_content, finish_error;
    char content[512];
};

static struct ref reference(const char *p, size_t n)
{
    struct ref r = {0};
    json_t *chunk = json_loadb(p, n, 0, NULL);
    r.parsed = chunk != NULL;
    json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
    const char *delta =
        json_string_value(json_object_get(json_object_get(choice, "delta"), "content"));
    if (delta) {
        r.has_content = true;
        snprintf(r.content, sizeof r.content, "%s", delta);
    }
    const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
    r.finish_error = finish && strcmp(finish, "error") == 0;
    r.has_error = json_object_get(chunk, "error") != NULL;
    json_decref(chunk);
    return r;
}

/* Scans text; when the scanner accepts it, its answer must be jansson's. Returns whether it
 * accepted. */
static bool agrees(const char *text, size_t n)
{
    struct buf scratch;
    struct chatchunk cc;
    buf_init(&scratch, 1024 * 1024);
    bool ok = chatchunk_scan(text, n, &scratch, &cc);
    if (ok) {
        struct ref r = reference(text, n);
        if (!r.parsed || r.has_error || r.has_content != cc.has_content ||
            r.finish_error != cc.finish_error ||
            (cc.has_content &&
             (strlen(scratch.data) != scratch.len || strcmp(scratch.data, r.content) != 0))) {
            print_error("disagrees with jansson on: %.*s\n", (int)n, text);
            fail();
        }
    }
    buf_cleanup(&scratch);
    return ok;
}

static bool agrees_s(const char *text)
{
    return agrees(text, strlen(text));
}

static void reads_what_agents_send(void **state)
{
    (void)state;
    const char *typical[] = {
        "{\"id\": \"chatcmpl-1\", \"object\": \"chat.completion.chunk\", \"created\": 1796302915, "
        "\"model\": \"hermes-agent\", \"choices\": [{\"index\": 0, \"delta\": {\"role\": "
        "\"assistant\"}, \"finish_reason\": null}]}",
        "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{\\\"status\\\": "
        "\\\"completed\\\", "
        "\\\"summa\"},\"finish_reason\":null}]}",
        "{\"choices\": [{\"delta\": {}, \"finish_reason\": \"stop\"}], \"usage\": "
        "{\"prompt_tokens\": 4, "
        "\"completion_tokens\": 31, \"total_tokens\": 35}}",
        "{\"choices\":[{\"delta\":{\"content\":\"caf\\u00e9 \\ud83d\\ude00 \\u2713\\n\\t\\\\ \\/ é "
        "✓\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\"}}]}",
        "{\"choices\":[{\"delta\":{},\"finish_reason\":\"error\"}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"\\u0065rror\"}]}",
        " \r\n\t{ \"choices\" : [ { \"delta\" : { \"content\" : \"spaced\" } } ] } \n",
        "{\"choices\":[{\"delta\":{\"content\":\"first\"}},{\"delta\":{\"content\":\"second\"}}]}",
        "{\"choices\":[{\"delta\":{\"cont\\u0065nt\":\"escaped key\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":7}}]}",
        "{\"choices\":[{\"delta\":\"not an object\"}]}",
        "{\"choices\":[\"not an object\"]}",
        "{\"choices\":{\"0\":{\"delta\":{\"content\":\"x\"}}}}",
        "{\"choices\":[]}",
        "{\"x\":[1,-2,3.25,-0,0.5,true,false,null,{\"a\":[{}]}],\"choices\":[{\"delta\":{"
        "\"content\":\"n\"}}]}",
        "{}",
    };
    for (size_t i = 0; i < sizeof typical / sizeof *typical; i++)
        assert_true(agrees_s(typical[i])); /* accepted (the fast path is taken) and right */

    struct buf scratch;
    struct chatchunk cc;
    buf_init(&scratch, 1024);
    assert_true(chatchunk_scan(typical[3], strlen(typical[3]), &scratch, &cc));
    assert_true(cc.has_content);
    assert_string_equal(scratch.data, "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x9c\x93\n\t\\ / é ✓");
    assert_true(chatchunk_scan(typical[5], strlen(typical[5]), &scratch, &cc));
    assert_true(cc.finish_error);
    assert_false(cc.has_content);
    buf_cleanup(&scratch);
}

static void refuses_what_it_is_not_sure_about(void **state)
{
    (void)state;
    const char *odd[] = {
        "{\"error\": {\"message\": \"boom\"}, \"choices\": []}",
        "{\"choices\":[{\"delta\":{\"content\":\"a\",\"content\":\"b\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"choices\":[]}",
        "{\"choices\":[{\"finish_reason\":\"stop\",\"finish_reason\":\"error\"}]}",
        "{\"created\": 1e3, \"choices\": []}",
        "{\"created\": 12345678901234567890, \"choices\": []}",
        "[{\"choices\": []}]",
        "{\"choices\": []} x",
        "{\"choices\": [],}",
        "{\"choices\": [1,]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\\u0000\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\\ud800\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\\udc00\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\\q\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"tab\there\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\xc3\x28\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\xed\xa0\x80\"}}]}",
        "{\"choices\":[{\"delta\":{\"content\":\"\xe0\x80\xaf\"}}]}",
        "{\"a\":01}",
        "{\"a\":-}",
        "{\"a\":1.}",
        "{\"a\":tru}",
        "{\"a\" 1}",
        "{'a':1}",
        "",
        "   ",
        "{\"choices\":[{\"delta\":{\"content\":\"unterminated}}]}",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        if (agrees_s(odd[i])) {
            print_error("accepted: %s\n", odd[i]);
            fail();
        }
    }
    char deep[200];
    memset(deep, 0, sizeof deep);
    strcpy(deep, "{\"a\":");
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    for (int i = 0; i < 40; i++)
        strcat(deep, "]");
    strcat(deep, "}");
    assert_false(agrees_s(deep));
    /* A NUL byte inside is not JSON. */
    static const char nul[] = "{\"choices\":[{\"delta\":{\"content\":\"a\0b\"}}]}";
    assert_false(agrees(nul, sizeof nul - 1));
}

/* The content goes through the scratch buffer's cap: past it, the full parser takes over. */
static void content_past_the_scratch_cap_is_refused(void **state)
{
    (void)state;
    char text[300];
    snprintf(text, sizeof text, "{\"choices\":[{\"delta\":{\"content\":\"%0200d\"}}]}", 0);
    struct buf scratch;
    struct chatchunk cc;
    buf_init(&scratch, 100);
    assert_false(chatchunk_scan(text, strlen(text), &scratch, &cc));
    buf_cleanup(&scratch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_what_agents_send),
        cmocka_unit_test(refuses_what_it_is_not_sure_about),
        cmocka_unit_test(content_past_the_scratch_cap_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
