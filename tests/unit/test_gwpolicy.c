/* test_gwpolicy.c — gw_policy_summary: the one line `gateway check` prints per guarded or
 * policed tool names the guard and every policy with its fields, and stays within its buffer;
 * require (always, or when another argument has one of some values) in the schema and on calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gwpolicy.h"

static void summary_names_guard_and_each_policy(void **state)
{
    (void)state;
    char out[300];
    json_t *p = json_loads("{\"drop\": [\"model\", \"provider\"], \"fix\": {\"deliver\": \"local\"},"
                           " \"enum\": {\"kind\": [\"a\"]}, \"max_items\": {\"tasks\": 2},"
                           " \"max_length\": {\"note\": 5}, \"reject_secrets\": [\"content\"]}",
                           0, NULL);
    assert_non_null(p);
    gw_policy_summary(GW_GUARD_CONFIRM, p, out, sizeof out);
    assert_string_equal(out, "confirm; drop model, provider; fix deliver; enum kind; "
                             "max_items tasks 2; max_length note 5; reject_secrets content");
    gw_policy_summary(GW_GUARD_APPROVE, NULL, out, sizeof out);
    assert_string_equal(out, "approve");
    gw_policy_summary(GW_GUARD_NONE, NULL, out, sizeof out);
    assert_string_equal(out, "");
    char small[12];
    gw_policy_summary(GW_GUARD_CONFIRM, p, small, sizeof small);
    assert_string_equal(small, "confirm; dr");
    json_decref(p);
}

static bool admitted(json_t *policy, const char *args_text)
{
    enum toolerr code = TE_CONFIRMATION_REQUIRED; /* any other than the one expected */
    char msg[200] = "";
    json_t *args = args_text ? json_loads(args_text, 0, NULL) : NULL;
    json_t *sent = gw_policy_args(GW_GUARD_NONE, policy, args, &code, msg, sizeof msg);
    bool ok = sent != NULL;
    if (!ok) {
        assert_int_equal(code, TE_INVALID_ARGUMENTS);
        assert_non_null(strstr(msg, "'kind' is required"));
    }
    json_decref(sent);
    json_decref(args);
    return ok;
}

static void require_always_and_per_action(void **state)
{
    (void)state;
    json_t *always = json_loads("{\"require\": [\"kind\"]}", 0, NULL);
    json_t *schema = gw_policy_schema(json_loads("{\"type\": \"object\", \"required\": [\"kind\"]}",
                                                 0, NULL), GW_GUARD_NONE, always);
    assert_int_equal(json_array_size(json_object_get(schema, "required")), 1); /* not twice */
    json_decref(schema);
    assert_false(admitted(always, NULL));
    assert_false(admitted(always, "{}"));
    assert_false(admitted(always, "{\"kind\": null}"));
    assert_true(admitted(always, "{\"kind\": \"decision\"}"));
    json_t *on_create = json_loads("{\"require\": {\"kind\": {\"action\": [\"create\", \"update\"]}}}",
                                   0, NULL);
    schema = gw_policy_schema(json_loads("{\"type\": \"object\"}", 0, NULL), GW_GUARD_NONE, on_create);
    json_t *want = json_loads("[{\"if\": {\"properties\": {\"action\": {\"enum\": [\"create\", \"update\"]}},"
                              " \"required\": [\"action\"]}, \"then\": {\"required\": [\"kind\"]}}]",
                              0, NULL);
    assert_true(json_equal(json_object_get(schema, "allOf"), want));
    assert_null(json_object_get(schema, "required"));
    json_decref(want);
    json_decref(schema);
    assert_false(admitted(on_create, "{\"action\": \"create\"}"));
    assert_false(admitted(on_create, "{\"action\": \"update\", \"kind\": null}"));
    assert_true(admitted(on_create, "{\"action\": \"create\", \"kind\": \"decision\"}"));
    assert_true(admitted(on_create, "{\"action\": \"list\"}"));
    assert_true(admitted(on_create, "{}"));
    char out[100];
    gw_policy_summary(GW_GUARD_NONE, on_create, out, sizeof out);
    assert_string_equal(out, "require kind");
    json_decref(always);
    json_decref(on_create);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_names_guard_and_each_policy),
        cmocka_unit_test(require_always_and_per_action),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
