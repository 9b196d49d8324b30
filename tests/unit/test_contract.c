/* Unit tests for contract.c: prompt rendering and answer parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "contract.h"

static json_t *parse(const char *s)
{
    return contract_parse_answer(s, strlen(s));
}

static const char *str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void prompt_has_every_part(void **state)
{
    (void)state;
    json_t *cons = json_pack("[s, s]", "no network", "answer in English");
    char *p = contract_prompt("Fix the bug", "repo at /src", "a patch", cons);
    assert_non_null(strstr(p, "## Task\nFix the bug"));
    assert_non_null(strstr(p, "## Context\nrepo at /src"));
    assert_non_null(strstr(p, "## Deliverable\na patch"));
    assert_non_null(strstr(p, "- no network\n- answer in English"));
    free(p);
    p = contract_prompt("Only this", NULL, NULL, NULL);
    assert_null(strstr(p, "## Context"));
    assert_null(strstr(p, "## Constraints"));
    free(p);
    json_decref(cons);
}

static void answers_in_all_shapes(void **state)
{
    (void)state;
    json_t *o = parse("{\"status\":\"completed\",\"summary\":\"done\",\"artifacts\":[\"a.md\",3],"
                      "\"next_steps\":[],\"extra\":1}");
    assert_string_equal(str(o, "status"), "completed");
    assert_string_equal(str(o, "summary"), "done");
    assert_int_equal(json_array_size(json_object_get(o, "artifacts")), 1); /* 3 dropped */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "details"), "extra")),
                     1);
    json_decref(o);

    o = parse("Here you go:\n```json\n{\"status\":\"failed\",\"summary\":\"nope\"}\n```\nbye");
    assert_string_equal(str(o, "status"), "failed");
    assert_string_equal(str(o, "summary"), "nope");
    assert_true(json_is_array(json_object_get(o, "next_steps")));
    json_decref(o);

    o = parse("Just some text, no JSON.");
    assert_string_equal(str(o, "status"), "completed");
    assert_string_equal(str(o, "summary"), "Just some text, no JSON.");
    json_decref(o);

    o = parse("{\"unrelated\": true}"); /* JSON but not the contract: plain text */
    assert_string_equal(str(o, "summary"), "{\"unrelated\": true}");
    json_decref(o);

    o = contract_parse_answer("\xff\xfe", 2);
    assert_non_null(str(o, "summary"));
    json_decref(o);
}

static bool text_ok(const char *s, size_t n)
{
    char why[100];
    return contract_text_ok(s, n, why, sizeof why);
}

static void contract_files_are_checked(void **state)
{
    (void)state;
    assert_true(text_ok("Answer in JSON.", 15));
    assert_true(text_ok("Réponds en JSON — 日本語 😀\n", strlen("Réponds en JSON — 日本語 😀\n")));
    assert_false(text_ok("", 0));
    assert_false(text_ok(" \n\t\r\n", 5));
    assert_false(text_ok("bad \xff\xfe bytes", 16));
    assert_false(text_ok("cut \xe6\x97", 6)); /* a sequence cut by the end of the file */
    assert_false(text_ok("\xc0\xaf", 2));     /* overlong */
    assert_false(text_ok("\xed\xa0\x80", 3)); /* a surrogate */
    assert_false(text_ok("nul\0inside", 10));
    char *big = malloc(CONTRACT_FILE_MAX + 1);
    memset(big, 'a', CONTRACT_FILE_MAX + 1);
    assert_true(text_ok(big, CONTRACT_FILE_MAX));
    assert_false(text_ok(big, CONTRACT_FILE_MAX + 1));
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prompt_has_every_part),
        cmocka_unit_test(answers_in_all_shapes),
        cmocka_unit_test(contract_files_are_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
