/* Unit tests for jscan.c: the id and kind of an oversized JSON-RPC message from its visible
 * ends. A response's id lets the gateway fail the one call it answers; a request's id is the
 * upstream's own and gets a refusal; a cut-off or missing id yields NULL, never a wrong id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "jscan.h"

static json_t *scan(const char *head, const char *tail, enum jscan_kind *kind)
{
    return jscan_oversized_id(head, strlen(head), tail, strlen(tail), kind);
}

static void id_and_kind_from_the_head(void **state)
{
    (void)state;
    enum jscan_kind kind;
    json_t *id =
        scan("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"text\":\"aaa", "", &kind);
    assert_true(json_is_integer(id));
    assert_int_equal(json_integer_value(id), 7);
    assert_int_equal(kind, JSCAN_RESPONSE);
    json_decref(id);
    /* whitespace between the tokens (Python's json.dumps) */
    id = scan("{\"jsonrpc\": \"2.0\", \"id\" : 12 , \"method\": \"sampling/createMessage\", "
              "\"params\": {\"x\": \"",
              "", &kind);
    assert_int_equal(json_integer_value(id), 12);
    assert_int_equal(kind, JSCAN_REQUEST);
    json_decref(id);
    id = scan("{\"id\":\"abc\",\"error\":{\"message\":\"xx", "", &kind);
    assert_string_equal(json_string_value(id), "abc");
    assert_int_equal(kind, JSCAN_RESPONSE);
    json_decref(id);
}

static void nested_keys_do_not_count(void **state)
{
    (void)state;
    enum jscan_kind kind;
    /* "id" and "method" inside the result are not the message's */
    json_t *id = scan("{\"result\":{\"id\":99,\"method\":\"x\",\"data\":\"aaaa", "", &kind);
    assert_null(id);
    assert_int_equal(kind, JSCAN_RESPONSE);
    /* a value "id" (not a key) is no id either */
    id = scan("{\"method\":\"id\",\"params\":{\"q\":\"id\"", "", &kind);
    assert_null(id);
    assert_int_equal(kind, JSCAN_REQUEST);
}

static void id_from_the_tail(void **state)
{
    (void)state;
    enum jscan_kind kind;
    json_t *id =
        scan("{\"result\":{\"content\":\"aaaa", "aaaa\"}},\"jsonrpc\":\"2.0\",\"id\":41}\n", &kind);
    assert_int_equal(json_integer_value(id), 41);
    assert_int_equal(kind, JSCAN_RESPONSE);
    json_decref(id);
    id = scan("{\"result\":{", "aaa\"} , \"id\" : \"k-1\" }", &kind);
    assert_string_equal(json_string_value(id), "k-1");
    json_decref(id);
}

static void cut_or_malformed_ids_are_null(void **state)
{
    (void)state;
    enum jscan_kind kind;
    /* the head ends inside the id: its digits may be cut */
    assert_null(scan("{\"id\":12", "", &kind));
    /* no final brace, no comma before "id", not a number or string */
    assert_null(scan("{\"result\":{", "\"x\",\"id\":5", &kind));
    assert_null(scan("{\"result\":{", "\"x\"\"id\":5}", &kind));
    assert_null(scan("{\"result\":{", "\"x\",\"id\":true}", &kind));
    assert_null(scan("{\"result\":{", "\"x\",\"id\":null}", &kind));
    /* an id of more than 64 bytes */
    char tail[200];
    snprintf(tail, sizeof tail, ",\"id\":\"%070d\"}", 0);
    assert_null(scan("{\"result\":{", tail, &kind));
    assert_null(scan("", "", &kind));
    assert_int_equal(kind, JSCAN_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(id_and_kind_from_the_head),
        cmocka_unit_test(nested_keys_do_not_count),
        cmocka_unit_test(id_from_the_tail),
        cmocka_unit_test(cut_or_malformed_ids_are_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
