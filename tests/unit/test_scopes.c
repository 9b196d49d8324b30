/* Unit tests for src/http/scopes.c and src/http/httperr.c, the two tables the docs are made
 * from: the default scopes agree with the table's column, the checks of auth follow the
 * table, and every HTTP error body is the JSON of its row. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "authn.h"
#include "httperr.h"
#include "principal.h"
#include "scopes.h"

static void defaults_are_the_table_column(void **state)
{
    (void)state;
    char joined[128] = "";
    for (size_t i = 0; scope_at(i); i++)
        if (scope_at(i)->by_default)
            snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s",
                     *joined ? " " : "", scope_at(i)->name);
    assert_string_equal(joined, SCOPES_DEFAULT);
    assert_string_equal(AUTHN_DEFAULT_SCOPES, SCOPES_DEFAULT);
}

static void known_scopes_follow_the_table(void **state)
{
    (void)state;
    size_t fixed = 0;
    for (size_t i = 0; scope_at(i); i++) {
        const struct scope_info *s = scope_at(i);
        assert_non_null(s->meaning);
        if (s->prefix) {
            assert_ptr_equal(scope_family(s->prefix), s);
            assert_false(principal_scope_known(s->prefix)); /* a family needs a member name */
        } else {
            fixed++;
            assert_true(scope_fixed(s->name));
            assert_true(principal_scope_known(s->name));
        }
    }
    assert_int_equal(fixed, 3);
    assert_true(principal_scope_known(SCOPE_GATEWAY_PREFIX "github"));
    assert_false(scope_fixed(SCOPE_HERMES_PREFIX "raed"));
    assert_false(principal_scope_known(SCOPE_HERMES_PREFIX "raed"));
    assert_null(scope_family("agent:alpha"));

    json_t *supported = authn_scopes_supported();
    assert_int_equal(json_array_size(supported), fixed);
    assert_string_equal(json_string_value(json_array_get(supported, 0)), SCOPE_READ);
    assert_string_equal(json_string_value(json_array_get(supported, 2)), SCOPE_ADMIN);
    json_decref(supported);
}

static void http_error_bodies_are_their_rows(void **state)
{
    (void)state;
    assert_null(httperr_info(HTTPERR_COUNT));
    for (int e = 0; e < HTTPERR_COUNT; e++) {
        const struct httperr_info *i = httperr_info((enum httperr)e);
        assert_non_null(i);
        assert_true(i->status >= 400 && i->status < 600);
        json_error_t jerr;
        json_t *body = json_loads(i->body, 0, &jerr);
        assert_non_null(body);
        assert_int_equal(json_object_size(body), 2);
        assert_string_equal(json_string_value(json_object_get(body, "error")), i->name);
        assert_string_equal(json_string_value(json_object_get(body, "message")), i->message);
        json_decref(body);
    }
    assert_string_equal(httperr_info(HTTPERR_NOT_FOUND)->body,
                        "{\"error\":\"not_found\",\"message\":\"no such path; the MCP endpoint "
                        "is /mcp\"}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_are_the_table_column),
        cmocka_unit_test(known_scopes_follow_the_table),
        cmocka_unit_test(http_error_bodies_are_their_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
