/* Unit tests for jsonparse.c: the same answer as jansson's json_loadb(JSON_REJECT_DUPLICATES)
 * over each rule of the grammar (the fuzz target tests/fuzz/fuzz_jsonparse.c goes on from
 * here), the values themselves, the depth limit at its edge, and the one meant difference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jsonparse.h"

/* jsonparse and jansson agree on text[0..n): both NULL, or equal values; returns ours. */
static json_t *agree(const char *text, size_t n)
{
    json_t *ours = jsonparse(text, n);
    json_t *theirs = json_loadb(text, n, JSON_REJECT_DUPLICATES, NULL);
    bool same = (ours == NULL) == (theirs == NULL) && (ours == NULL || json_equal(ours, theirs));
    json_decref(theirs);
    if (!same) {
        json_decref(ours);
        fail_msg("jsonparse and jansson differ on: %.*s", (int)n, text);
    }
    return ours;
}

static void accepted(const char *text)
{
    json_t *v = agree(text, strlen(text));
    if (v == NULL)
        fail_msg("refused: %s", text);
    json_decref(v);
}

static void refused(const char *text)
{
    json_t *v = agree(text, strlen(text));
    if (v != NULL)
        fail_msg("accepted: %s", text);
}

static void grammar_as_jansson(void **state)
{
    (void)state;
    static const char *const good[] = {
        "{}",
        "[]",
        " \t\r\n{ } ",
        "{\"\":0}",
        "[true,false,null]",
        "[0,-0,1,-1,10]",
        "[0.5,-1.25e+3,1E-2,1e-400000000000000000000000000000000000000000000]",
        "[1e-400]",
        "[9223372036854775807,-9223372036854775808]",
        "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
        "[\"\\u00e9\\u20AC\\ud83d\\ude00\"]",
        "[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"]",
        "{\"a\":{\"b\":[{\"c\":[]}]}}",
        "{\"a\":1,\"b\":2}",
        "[\"\\u0001\"]"};
    static const char *const bad[] = {"",
                                      " ",
                                      "1",
                                      "\"s\"",
                                      "true",
                                      "null",
                                      "{",
                                      "[",
                                      "{]",
                                      "[}",
                                      "{\"a\"}",
                                      "{\"a\":}",
                                      "{\"a\" 1}",
                                      "{a:1}",
                                      "{'a':1}",
                                      "{\"a\":1,}",
                                      "[1,]",
                                      "[,1]",
                                      "[1 2]",
                                      "{}{}",
                                      "[]x",
                                      "[01]",
                                      "[-01]",
                                      "[1.]",
                                      "[.5]",
                                      "[-]",
                                      "[1e]",
                                      "[1e+]",
                                      "[+1]",
                                      "[0x10]",
                                      "[Infinity]",
                                      "[NaN]",
                                      "[tru]",
                                      "[truex]",
                                      "[nul]",
                                      "[True]",
                                      "[9223372036854775808]",
                                      "[-9223372036854775809]",
                                      "[1e400]",
                                      "[-1e400]",
                                      "{\"a\":1,\"a\":2}",
                                      "[\"\\u0000\"]",
                                      "[\"\\ud800\"]",
                                      "[\"\\udc00\"]",
                                      "[\"\\ud800\\u0041\"]",
                                      "[\"\\ud800x\"]",
                                      "[\"\\u12\"]",
                                      "[\"\\x41\"]",
                                      "[\"\\\"]",
                                      "[\"a]",
                                      "[\"\x01\"]",
                                      "[\"\t\"]",
                                      "[\"\xc0\xaf\"]",
                                      "[\"\xed\xa0\x80\"]",
                                      "[\"\x80\"]",
                                      "[\"\xbf\"]",
                                      "[\"\xf4\x90\x80\x80\"]",
                                      "[\"\xff\"]",
                                      "[\"\xc3\"]",
                                      "\xef\xbb\xbf[]",
                                      "[1]\x01",
                                      "/*c*/[]"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        accepted(good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        refused(bad[i]);
}

static void values_are_what_the_text_says(void **state)
{
    (void)state;
    const char *t = "{\"s\":\"caf\\u00e9 \\ud83d\\ude00\",\"i\":-42,\"r\":2.5,\"a\":[true,null]}";
    json_t *v = jsonparse(t, strlen(t));
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "s")), "caf\xc3\xa9 \xf0\x9f\x98\x80");
    assert_true(json_is_integer(json_object_get(v, "i")));
    assert_int_equal(json_integer_value(json_object_get(v, "i")), -42);
    assert_true(json_is_real(json_object_get(v, "r")));
    assert_true(json_real_value(json_object_get(v, "r")) == 2.5);
    assert_true(json_is_true(json_array_get(json_object_get(v, "a"), 0)));
    assert_int_equal(json_object_size(v), 4);
    json_decref(v);
}

/* Only the n bytes given are read: a longer buffer's rest does not count. */
static void reads_only_its_length(void **state)
{
    (void)state;
    const char *t = "[1]garbage";
    json_t *v = agree(t, 3);
    assert_non_null(v);
    json_decref(v);
    assert_null(agree("[\"abc\"]", 5)); /* cut inside the string */
    assert_null(agree("[12", 3));
}

/* A long escaped string and a long real go through the heap-allocated paths. */
static void long_texts(void **state)
{
    (void)state;
    size_t n = 5000;
    char *t = malloc(n + 16);
    assert_non_null(t);
    strcpy(t, "[\"");
    for (size_t i = 0; i < n; i += 2)
        memcpy(t + 2 + i, "\\n", 2);
    strcpy(t + 2 + n, "\"]");
    json_t *v = agree(t, strlen(t));
    assert_non_null(v);
    assert_int_equal(json_string_length(json_array_get(v, 0)), n / 2);
    json_decref(v);
    strcpy(t, "[0.");
    memset(t + 3, '5', n);
    strcpy(t + 3 + n, "]");
    v = agree(t, strlen(t));
    assert_non_null(v);
    json_decref(v);
    free(t);
}

/* n arrays nested around an optional scalar. */
static char *nested(size_t n, const char *inner)
{
    size_t k = strlen(inner);
    char *t = malloc(2 * n + k + 1);
    memset(t, '[', n);
    memcpy(t + n, inner, k);
    memset(t + n + k, ']', n);
    t[2 * n + k] = '\0';
    return t;
}

static void depth_limit_as_jansson(void **state)
{
    (void)state;
    for (size_t n = JSON_PARSER_MAX_DEPTH - 1; n <= JSON_PARSER_MAX_DEPTH + 1; n++) {
        for (int scalar = 0; scalar < 2; scalar++) {
            char *t = nested(n, scalar ? "1" : "");
            json_t *v = agree(t, strlen(t));
            /* every value counts, a scalar too */
            assert_true((v != NULL) == (n + (size_t)scalar <= JSON_PARSER_MAX_DEPTH));
            json_decref(v);
            free(t);
        }
    }
}

/* jansson drops a NUL byte that ends a number or a literal; jsonparse refuses it. */
static void nul_outside_strings_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t n;
    } dropped[] = {{"[1\0]", 4}, {"[true\0]", 7}, {"[1.5\0]", 6}, {"{\"a\":null\0}", 11}};
    for (size_t i = 0; i < sizeof dropped / sizeof *dropped; i++) {
        json_t *theirs = json_loadb(dropped[i].text, dropped[i].n, JSON_REJECT_DUPLICATES, NULL);
        assert_non_null(theirs); /* the difference this test pins */
        json_decref(theirs);
        assert_null(jsonparse(dropped[i].text, dropped[i].n));
    }
    assert_null(agree("[\"a\0\"]", 6)); /* both refuse these */
    assert_null(agree("[]\0", 3));
    assert_null(jsonparse(NULL, 0));
}

/* A string cut right inside an escape, read from an exact-size heap copy: nothing is read past
 * the end (under ASan this fails loudly if it were). */
static void cut_escapes_read_nothing_past_the_end(void **state)
{
    (void)state;
    static const char *const whole = "[\"\\ud800\\udc00\"]";
    for (size_t n = 1; n < strlen(whole); n++) {
        char *copy = malloc(n);
        assert_non_null(copy);
        memcpy(copy, whole, n);
        assert_null(agree(copy, n));
        free(copy);
    }
    json_t *v = agree(whole, strlen(whole));
    assert_non_null(v);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grammar_as_jansson),
        cmocka_unit_test(values_are_what_the_text_says),
        cmocka_unit_test(reads_only_its_length),
        cmocka_unit_test(long_texts),
        cmocka_unit_test(depth_limit_as_jansson),
        cmocka_unit_test(nul_outside_strings_refused),
        cmocka_unit_test(cut_escapes_read_nothing_past_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
