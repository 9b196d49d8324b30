/* Unit tests for jrpc.c: envelope parsing and classification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "jrpc.h"
#include "utf8.h"

static json_t *parse(const char *s, struct jrpc_why *why)
{
    return jrpc_parse(s, strlen(s), why);
}

static void bad_json_is_parse_error(void **state)
{
    struct jrpc_why why;
    (void)state;
    assert_null(parse("{\"jsonrpc\":", &why));
    assert_int_equal(why.code, JRPC_PARSE_ERROR);
    assert_null(parse("{\"a\":1,\"a\":2}", &why)); /* duplicate keys are refused */
    assert_int_equal(why.code, JRPC_PARSE_ERROR);
    assert_null(parse("\"\xff\xfe\"", &why)); /* invalid UTF-8 */
    assert_int_equal(why.code, JRPC_PARSE_ERROR);
}

static void empty_batch_and_scalars_are_invalid(void **state)
{
    struct jrpc_why why;
    (void)state;
    assert_null(parse("[]", &why));
    assert_int_equal(why.code, JRPC_INVALID_REQUEST);
    assert_null(parse("42", &why));
    assert_int_equal(why.code, JRPC_INVALID_REQUEST);
}

static void classify_kinds(void **state)
{
    struct jrpc_why why;
    struct jrpc_msg m;
    (void)state;
    json_t *r = parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", &why);
    jrpc_classify(r, &m);
    assert_int_equal(m.kind, JRPC_REQUEST);
    assert_string_equal(m.method, "ping");
    assert_int_equal(json_integer_value(m.id), 7);
    json_decref(r);

    r = parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &why);
    jrpc_classify(r, &m);
    assert_int_equal(m.kind, JRPC_NOTIFICATION);
    json_decref(r);

    r = parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &why);
    jrpc_classify(r, &m);
    assert_int_equal(m.kind, JRPC_RESPONSE);
    json_decref(r);
}

static void classify_rejects_bad_envelopes(void **state)
{
    static const char *bad[] = {
        "{\"id\":1,\"method\":\"ping\"}",                           /* no jsonrpc */
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",       /* wrong version */
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",     /* fractional id */
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",    /* null id */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",              /* method not a string */
        "{\"jsonrpc\":\"2.0\",\"id\":1}",                           /* nothing */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", /* both */
    };
    struct jrpc_why why;
    struct jrpc_msg m;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *r = parse(bad[i], &why);
        assert_non_null(r);
        jrpc_classify(r, &m);
        assert_int_equal(m.kind, JRPC_INVALID);
        assert_int_equal(m.why.code, JRPC_INVALID_REQUEST);
        json_decref(r);
    }
}

static void array_params_are_invalid_params(void **state)
{
    struct jrpc_why why;
    struct jrpc_msg m;
    (void)state;
    json_t *r = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}", &why);
    jrpc_classify(r, &m);
    assert_int_equal(m.kind, JRPC_INVALID);
    assert_int_equal(m.why.code, JRPC_INVALID_PARAMS);
    assert_int_equal(json_integer_value(m.id), 1); /* kept for the error reply */
    json_decref(r);
}

static void big_ids_survive(void **state)
{
    struct jrpc_why why;
    struct jrpc_msg m;
    char key[64];
    (void)state;
    json_t *r = parse("{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"ping\"}", &why);
    jrpc_classify(r, &m);
    assert_true(jrpc_id_key(m.id, key, sizeof key));
    assert_string_equal(key, "i:9007199254740993");
    json_t *resp = jrpc_result(m.id, json_object());
    char *text = json_dumps(resp, JSON_COMPACT);
    assert_non_null(strstr(text, "\"id\":9007199254740993"));
    free(text);
    json_decref(resp);
    json_decref(r);
}

static void parse_errors_are_valid_utf8(void **state)
{
    /* Found by fuzz_jrpc: jansson quotes input bytes, possibly half a character. */
    static const char crash[] = {0x22, 0x5c, (char)0xd0, (char)0x9a};
    struct jrpc_why why;
    (void)state;
    assert_null(jrpc_parse(crash, sizeof crash, &why));
    json_t *s = json_string(why.msg);
    assert_non_null(s);
    json_decref(s);
    json_t *e = jrpc_error(NULL, JRPC_PARSE_ERROR, "bad \xd0");
    assert_non_null(e); /* a message with a cut character still makes a reply */
    json_decref(e);
    char t[] = "ok \xe2\x82\xac \xe2\x82 \x01 end";
    utf8_clean(t);
    assert_string_equal(t, "ok \xe2\x82\xac ?? ? end");
    /* one log line: tab and DEL too, valid UTF-8 kept, cut to the buffer */
    char line[] = "a\tb\x7f\xc3\xa9\n";
    utf8_line(line);
    assert_string_equal(line, "a?b?\xc3\xa9?");
    char out[6];
    utf8_shown(out, sizeof out, "x\ty\x01zzzz");
    assert_string_equal(out, "x?y?z");
}

static void error_with_null_id(void **state)
{
    (void)state;
    json_t *e = jrpc_error(NULL, JRPC_PARSE_ERROR, "Parse error");
    assert_true(json_is_null(json_object_get(e, "id")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "error"), "code")),
                     JRPC_PARSE_ERROR);
    json_decref(e);
}

/* "\u0000" is valid JSON: parsed; a method or id holding it is refused, never read as its
 * prefix; jrpc_str tells the two kinds of string apart. */
static void nul_in_strings(void **state)
{
    struct jrpc_why why;
    struct jrpc_msg m;
    (void)state;
    json_t *root = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000x\"}", &why);
    assert_non_null(root);
    jrpc_classify(root, &m);
    assert_int_equal(m.kind, JRPC_INVALID);
    assert_int_equal(m.why.code, JRPC_INVALID_REQUEST);
    assert_non_null(strstr(m.why.msg, "NUL"));
    json_decref(root);
    root = parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"ping\"}", &why);
    jrpc_classify(root, &m);
    assert_int_equal(m.kind, JRPC_INVALID);
    assert_null(m.id); /* not echoed: the error goes out with id null */
    char key[16];
    assert_false(jrpc_id_key(json_object_get(root, "id"), key, sizeof key));
    json_decref(root);
    /* Valid JSON jansson cannot hold: an invalid request, not a parse error. */
    assert_null(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"a\\u0000\":1}", &why));
    assert_int_equal(why.code, JRPC_INVALID_REQUEST);
    assert_non_null(strstr(why.msg, "NUL"));
    /* ... whose id is still given back, so the client can match the error. */
    assert_int_equal(json_integer_value(why.id), 1);
    json_decref(why.id);
    assert_null(parse("{\"k\\u0000\":1}", &why));
    assert_null(why.id); /* none to give */
    json_t *a = json_stringn("a\0b", 3), *b = json_string("ab");
    assert_null(jrpc_str(a));
    assert_string_equal(jrpc_str(b), "ab");
    assert_null(jrpc_str(NULL));
    json_decref(a);
    json_decref(b);
}

/* The error table: each row's code as audit text is the code, codes and names are distinct. */
static void error_table(void **state)
{
    (void)state;
    char text[16];
    size_t n = 0;
    for (const struct jrpc_err_info *e; (e = jrpc_err_at(n)) != NULL; n++) {
        snprintf(text, sizeof text, "%d", e->code);
        assert_string_equal(jrpc_err_text(e->code), text);
        assert_true(e->code <= -32000 && e->code >= -32768);
        assert_non_null(e->meaning);
        for (size_t o = 0; o < n; o++) {
            assert_int_not_equal(jrpc_err_at(o)->code, e->code);
            assert_string_not_equal(jrpc_err_at(o)->name, e->name);
        }
    }
    assert_true(n >= 12);
    assert_int_equal(JRPC_SESSION_NOT_FOUND, -32001); /* what the SDK clients act on */
    assert_string_equal(jrpc_err_text(-1), "error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_json_is_parse_error),
        cmocka_unit_test(error_table),
        cmocka_unit_test(empty_batch_and_scalars_are_invalid),
        cmocka_unit_test(classify_kinds),
        cmocka_unit_test(classify_rejects_bad_envelopes),
        cmocka_unit_test(array_params_are_invalid_params),
        cmocka_unit_test(big_ids_survive),
        cmocka_unit_test(error_with_null_id),
        cmocka_unit_test(parse_errors_are_valid_utf8),
        cmocka_unit_test(nul_in_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
