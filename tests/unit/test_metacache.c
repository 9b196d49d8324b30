/* Unit tests for metacache.c: a repeated params._meta is parsed once and shared, and every
 * body reads exactly as jrpc_parse reads it (the fuzz target fuzz_jrpc checks the same on
 * generated bodies). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "metacache.h"

#define META                                                                                       \
    "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                 \
    "\"io.modelcontextprotocol/clientCapabilities\":{},"                                           \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}"

/* Parses body both ways, checks they agree, and returns metacache_parse's result. */
static json_t *both(struct meta_cache *c, const char *body, struct jrpc_why *why)
{
    struct jrpc_why plain_why;
    memset(&plain_why, 0, sizeof plain_why);
    json_t *plain = jrpc_parse(body, strlen(body), &plain_why);
    memset(why, 0, sizeof *why);
    json_t *r = metacache_parse(c, body, strlen(body), why);
    assert_int_equal(r == NULL, plain == NULL);
    if (r)
        assert_true(json_equal(r, plain));
    else {
        assert_int_equal(why->code, plain_why.code);
        assert_string_equal(why->msg, plain_why.msg);
        assert_int_equal(why->id == NULL, plain_why.id == NULL); /* the id salvaged for the error */
        if (why->id)
            assert_true(json_equal(why->id, plain_why.id));
    }
    json_decref(plain);
    json_decref(plain_why.id);
    return r;
}

static json_t *meta_of(json_t *root)
{
    return json_object_get(json_object_get(root, "params"), "_meta");
}

static void repeated_meta_is_shared(void **state)
{
    (void)state;
    struct meta_cache *c = metacache_new();
    struct jrpc_why why;
    json_t *a = both(
        c,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":" META "}}",
        &why);
    json_t *b =
        both(c,
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"x\","
             "\"arguments\":{\"s\":\"\\\\\\\"}\"},\"_meta\":" META "}}",
             &why);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_equal(meta_of(a), meta_of(b)); /* parsed once */
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(b, "params"), "arguments"), "s")),
                        "\\\"}");
    /* Another client's _meta is its own object. */
    json_t *d = both(
        c,
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"x\":1}}}",
        &why);
    assert_ptr_not_equal(meta_of(a), meta_of(d));
    json_decref(a);
    json_decref(b);
    json_decref(d);
    metacache_free(c);
}

static void progress_token_is_not_kept(void **state)
{
    (void)state;
    struct meta_cache *c = metacache_new();
    struct jrpc_why why;
    const char *body =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\","
        "\"_meta\":{\"progressToken\":7}}}";
    json_t *a = both(c, body, &why), *b = both(c, body, &why);
    assert_ptr_not_equal(meta_of(a), meta_of(b));
    json_decref(a);
    json_decref(b);
    metacache_free(c);
}

/* Bodies the scan could misread: each must give jrpc_parse's answer (errors included), also
 * once the _meta is cached. */
static void odd_bodies_read_as_jansson_reads_them(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"params\":{\"_meta\":" META "},\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":" META
        "},\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":" META "},\"p\\u0061rams\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":" META ",\"_m\\u0065ta\":{}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":" META ",\"_meta\":" META "}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":" META ",}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":" META "}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":{\"a\":\"}\"}} , \"method\":\"x\"}",
        " { \"params\" : { \"_meta\" : " META " } , \"id\" : 1 } ",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":" META
        "}}]",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":[1]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"_meta\":{\"k\\u0000\":1}}}",
        "{\"params\":{\"_meta\":" META "},}",
        "{\"params\":{\"_meta\":" META "} , }",
        "{\"id\":1,\"params\":{\"_meta\":" META "},}",
        "{\"params\":{\"_meta\":" META "}\"id\":1}",
        "{\"id\":1,\"params\":{\"_meta\":" META "}\"x\":1}",
        "{\"params\":{\"_meta\":" META "},\"id\":1}",
    };
    struct meta_cache *c = metacache_new();
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
            struct jrpc_why why;
            json_decref(both(c, bodies[i], &why));
            json_decref(why.id);
        }
    metacache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(repeated_meta_is_shared),
        cmocka_unit_test(progress_token_is_not_kept),
        cmocka_unit_test(odd_bodies_read_as_jansson_reads_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
