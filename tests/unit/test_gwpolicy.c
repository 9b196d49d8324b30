/* test_gwpolicy.c — gw_policy_summary: the one line `gateway check` prints per guarded or
 * policed tool names the guard and every policy with its fields, and stays within its buffer;
 * require (always, or when another argument has one of some values) in the schema and on calls;
 * the conditional confirm guard on calls and in the schema. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "gwpolicy.h"

static void summary_names_guard_and_each_policy(void **state)
{
    (void)state;
    char out[300];
    json_t *p =
        json_loads("{\"drop\": [\"model\", \"provider\"], \"fix\": {\"deliver\": \"local\"},"
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

/* The lines a reload logs at warn for what it loosens, joined with " | ". */
static void loosened(enum gw_guard wg, const char *was, enum gw_guard ng, const char *now,
                     const char *expected)
{
    json_t *w = was ? json_loads(was, 0, NULL) : NULL, *n = now ? json_loads(now, 0, NULL) : NULL;
    json_t *lines = gw_policy_loosened(wg, w, ng, n), *line;
    char out[400] = "";
    size_t i, len = 0;
    json_array_foreach(lines, i, line) len += (size_t)snprintf(
        out + len, sizeof out - len, "%s%s", i ? " | " : "", json_string_value(line));
    assert_string_equal(out, expected);
    json_decref(lines);
    json_decref(w);
    json_decref(n);
}

static void loosening_is_named(void **state)
{
    (void)state;
    loosened(GW_GUARD_APPROVE, NULL, GW_GUARD_NONE, NULL, "guard approve -> none");
    loosened(GW_GUARD_NONE, NULL, GW_GUARD_APPROVE, NULL, ""); /* stricter: nothing said */
    loosened(GW_GUARD_NONE,
             "{\"drop\": [\"model\", \"provider\"], \"fix\": {\"deliver\": \"local\"},"
             " \"max_length\": {\"note\": 5, \"tag\": 9}, \"enum\": {\"kind\": [\"a\"]},"
             " \"require\": {\"kind\": {\"action\": [\"x\"]}}}",
             GW_GUARD_NONE,
             "{\"drop\": [\"model\"], \"max_length\": {\"note\": 10, \"tag\": 3},"
             " \"enum\": {\"kind\": [\"a\", \"b\"]}, \"require\": [\"kind\"]}",
             "args drop provider -> none | args fix deliver -> none | args enum kind widened | "
             "args max_length note 5 -> 10");
    loosened(GW_GUARD_CONFIRM, "{\"max_items\": {\"tasks\": 2}}", GW_GUARD_CONFIRM, NULL,
             "args max_items tasks -> none");
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
    json_t *schema =
        gw_policy_schema(json_loads("{\"type\": \"object\", \"required\": [\"kind\"]}", 0, NULL),
                         GW_GUARD_NONE, always, NULL);
    assert_int_equal(json_array_size(json_object_get(schema, "required")), 1); /* not twice */
    json_decref(schema);
    assert_false(admitted(always, NULL));
    assert_false(admitted(always, "{}"));
    assert_false(admitted(always, "{\"kind\": null}"));
    assert_true(admitted(always, "{\"kind\": \"decision\"}"));
    json_t *on_create =
        json_loads("{\"require\": {\"kind\": {\"action\": [\"create\", \"update\"]}}}", 0, NULL);
    schema = gw_policy_schema(json_loads("{\"type\": \"object\"}", 0, NULL), GW_GUARD_NONE,
                              on_create, NULL);
    json_t *want =
        json_loads("[{\"if\": {\"properties\": {\"action\": {\"enum\": [\"create\", \"update\"]}},"
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
    /* fail closed: an absent, odd or loosely matching action does not skip the requirement */
    assert_false(admitted(on_create, "{}"));
    assert_false(admitted(on_create, "{\"action\": 5}"));
    assert_false(admitted(on_create, "{\"action\": \" Create \"}"));
    assert_true(admitted(on_create, "{\"kind\": \"decision\"}"));
    char out[100];
    gw_policy_summary(GW_GUARD_NONE, on_create, out, sizeof out);
    assert_string_equal(out, "require kind");
    json_decref(always);
    json_decref(on_create);
}

/* The verdict on one call under guard and policy: the code (TE_OK-like -1 when admitted) and,
 * when admitted, whether `confirmed` was left in what is sent. */
static int confirm_verdict(enum gw_guard guard, json_t *policy, const char *args_text, bool *kept)
{
    enum toolerr code = TE_INVALID_ARGUMENTS;
    char msg[200] = "";
    json_t *args = args_text ? json_loads(args_text, JSON_ALLOW_NUL, NULL) : NULL;
    if (args_text)
        assert_non_null(args);
    json_t *sent = gw_policy_args(guard, policy, args, &code, msg, sizeof msg);
    int verdict = sent ? -1 : (int)code;
    if (sent && kept)
        *kept = json_object_get(sent, "confirmed") != NULL;
    json_decref(sent);
    json_decref(args);
    return verdict;
}

/* A conditional confirm guard (tools.guard {confirm: {action: [...]}}, carried as the policy's
 * confirm_when by gw_tool_policy): confirmation only when the condition holds, failing closed
 * (the argument missing or not a string, a value in another case or with spaces), and
 * `confirmed` never sent upstream. */
static void conditional_confirm(void **state)
{
    (void)state;
    struct gwfile f;
    char err[300];
    static const char file[] =
        "upstreams:\n  h:\n    command: x\n    tools:\n      include: ['*']\n"
        "      guard: {cronjob: {confirm: {action: [create, update, remove]}}}\n";
    assert_true(gwfile_parse(file, strlen(file), NULL, NULL, &f, err, sizeof err));
    enum gw_guard guard = gw_tool_guard(&f.up[0], "cronjob");
    json_t *policy = gw_tool_policy(&f.up[0], "cronjob");
    assert_int_equal(guard, GW_GUARD_CONFIRM);
    bool kept = true;
    const int admitted = -1, asked = TE_CONFIRMATION_REQUIRED;
    assert_int_equal(confirm_verdict(guard, policy, "{\"action\": \"list\"}", &kept), admitted);
    assert_int_equal(
        confirm_verdict(guard, policy, "{\"action\": \"list\", \"confirmed\": true}", &kept),
        admitted);
    assert_false(kept);
    kept = true;
    assert_int_equal(
        confirm_verdict(guard, policy, "{\"action\": \"list\", \"confirmed\": \"no\"}", &kept),
        admitted);
    assert_false(kept);
    kept = true;
    assert_int_equal(
        confirm_verdict(guard, policy, "{\"action\": \"create\", \"confirmed\": true}", &kept),
        admitted);
    assert_false(kept);
    static const char *const refused[] = {
        "{\"action\": \"create\"}",
        "{\"action\": \"remove\", \"confirmed\": \"true\"}",
        "{\"action\": \"update\", \"confirmed\": 1}",
        "{\"action\": \"update\", \"_meta\": {\"confirmed\": true}}",
        "{\"action\": \"CREATE\"}",
        "{\"action\": \" Re-Move \"}",
        "{\"action\": \"create\\u0000x\"}",
        "{}",
        "{\"action\": null}",
        "{\"action\": 5}",
        "{\"action\": [\"list\"]}",
        "{\"action\": {\"list\": true}}",
        "{\"Action\": \"list\"}",
        NULL, /* no arguments at all */
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        if (confirm_verdict(guard, policy, refused[i], NULL) != asked)
            fail_msg("case %zu (%s) was not asked to confirm", i, refused[i] ? refused[i] : "NULL");
    /* the plain confirm still asks every time */
    assert_int_equal(confirm_verdict(GW_GUARD_CONFIRM, NULL, "{\"action\": \"list\"}", NULL),
                     asked);

    /* the schema: confirmed is offered, required only when the action is one of the values */
    json_t *schema =
        gw_policy_schema(json_loads("{\"type\": \"object\", \"required\": [\"action\"]}", 0, NULL),
                         guard, policy, NULL);
    json_t *confirmed = json_object_get(json_object_get(schema, "properties"), "confirmed");
    assert_string_equal(json_string_value(json_object_get(confirmed, "type")), "boolean");
    const char *text = json_string_value(json_object_get(confirmed, "description"));
    assert_non_null(text);
    assert_non_null(strstr(text, "when action is create, update or remove"));
    json_t *want =
        json_loads("{\"required\": [\"action\"], \"allOf\": [{\"if\": {\"properties\":"
                   " {\"action\": {\"enum\": [\"create\", \"update\", \"remove\"]}},"
                   " \"required\": [\"action\"]}, \"then\": {\"required\": [\"confirmed\"]}}]}",
                   0, NULL);
    assert_true(json_equal(json_object_get(schema, "required"), json_object_get(want, "required")));
    assert_true(json_equal(json_object_get(schema, "allOf"), json_object_get(want, "allOf")));
    json_decref(want);
    json_decref(schema);
    char out[200];
    gw_policy_summary(guard, policy, out, sizeof out);
    assert_string_equal(out, "confirm when action create, update, remove");
    gwfile_cleanup(&f);
}

/* The schema as exposed under policy (JSON texts). */
static json_t *exposed(const char *schema_text, const char *policy_text)
{
    json_t *policy = json_loads(policy_text, 0, NULL), *schema = json_loads(schema_text, 0, NULL);
    assert_non_null(policy);
    assert_non_null(schema);
    bool uncallable = true;
    schema = gw_policy_schema(schema, GW_GUARD_NONE, policy, &uncallable);
    assert_false(uncallable);
    json_decref(policy);
    return schema;
}

/* A dropped (or fixed) name is refused at any depth of a call, so it leaves the schema at any
 * depth: nested properties, their required lists (else no call could pass), array items,
 * combinators and definitions; compared folded as on calls. A property merely named like a
 * keyword ("properties", "required") is a property, not a keyword. */
static void drop_removes_nested_names(void **state)
{
    (void)state;
    json_t *schema = exposed(
        "{\"type\": \"object\", \"required\": [\"target\", \"options\"],"
        " \"properties\": {\"target\": {\"type\": \"string\"},"
        "  \"options\": {\"type\": \"object\", \"required\": [\"model\", \"retries\"],"
        "   \"properties\": {\"model\": {}, \"Base-URL\": {}, \"retries\": {\"type\": \"integer\"},"
        "    \"deliver\": {}},"
        "   \"dependentRequired\": {\"retries\": [\"model\"], \"model\": [\"retries\"]}},"
        "  \"steps\": {\"type\": \"array\", \"items\": {\"type\": \"object\","
        "   \"properties\": {\"name\": {}, \"base_url\": {}}, \"required\": [\"name\", "
        "\"base_url\"]}},"
        "  \"properties\": {\"type\": \"object\", \"properties\": {\"model\": {}, \"keep\": {}}},"
        "  \"required\": {\"type\": \"string\"}},"
        " \"anyOf\": [{\"required\": [\"model\"]}, {\"properties\": {\"provider\": {}}}],"
        " \"$defs\": {\"o\": {\"properties\": {\"model\": {}, \"x\": {}}, \"required\": "
        "[\"model\", \"x\"]}}}",
        "{\"drop\": [\"model\", \"base_url\", \"provider\"], \"fix\": {\"deliver\": \"local\"}}");
    json_t *want =
        json_loads("{\"type\": \"object\", \"required\": [\"target\", \"options\"],"
                   " \"properties\": {\"target\": {\"type\": \"string\"},"
                   "  \"options\": {\"type\": \"object\", \"required\": [\"retries\"],"
                   "   \"properties\": {\"retries\": {\"type\": \"integer\"}},"
                   "   \"dependentRequired\": {\"retries\": []}},"
                   "  \"steps\": {\"type\": \"array\", \"items\": {\"type\": \"object\","
                   "   \"properties\": {\"name\": {}}, \"required\": [\"name\"]}},"
                   "  \"properties\": {\"type\": \"object\", \"properties\": {\"keep\": {}}},"
                   "  \"required\": {\"type\": \"string\"}},"
                   " \"anyOf\": [{\"properties\": {}}],"
                   " \"$defs\": {\"o\": {\"properties\": {\"x\": {}}, \"required\": [\"x\"]}}}",
                   0, NULL);
    assert_non_null(want);
    if (!json_equal(schema, want)) {
        char *got = json_dumps(schema, JSON_SORT_KEYS);
        fail_msg("exposed schema: %s", got);
    }
    json_decref(want);
    json_decref(schema);
    /* without drop or fix nothing nested changes */
    schema = exposed(
        "{\"properties\": {\"o\": {\"properties\": {\"model\": {}}, \"required\": [\"model\"]}}}",
        "{\"max_length\": {\"o\": 3}}");
    json_t *o = json_object_get(json_object_get(schema, "properties"), "o");
    assert_non_null(json_object_get(json_object_get(o, "properties"), "model"));
    assert_int_equal(json_array_size(json_object_get(o, "required")), 1);
    json_decref(schema);
}

/* policy_text applied to schema_text: the exposed schema must equal want_text. */
static void applied(const char *policy_text, const char *schema_text, const char *want_text,
                    bool want_uncallable)
{
    json_t *policy = json_loads(policy_text, 0, NULL);
    json_t *schema = json_loads(schema_text, 0, NULL), *want = json_loads(want_text, 0, NULL);
    assert_non_null(schema);
    assert_non_null(want);
    bool uncallable = !want_uncallable;
    schema = gw_policy_schema(schema, GW_GUARD_NONE, policy, &uncallable);
    if (json_object_size(json_object_get(schema, "properties")) == 0 &&
        !json_object_get(want, "properties")) /* the top gets one: not what is looked at */
        json_object_del(schema, "properties");
    if (!json_equal(schema, want)) {
        char *got = json_dumps(schema, JSON_SORT_KEYS);
        fail_msg("%s\n  became %s", schema_text, got);
    }
    assert_int_equal(uncallable, want_uncallable);
    json_decref(policy);
    json_decref(schema);
    json_decref(want);
}

static void drops_model(const char *schema_text, const char *want_text, bool want_uncallable)
{
    applied("{\"drop\": [\"model\"]}", schema_text, want_text, want_uncallable);
}

/* A subschema that requires a dropped name can never match a call (the name is refused), so
 * where matching it decides something it goes whole instead of losing the name: under not (the
 * not would reject every call), as an if (its then never applies, its else always does), as an
 * anyOf or oneOf branch (the others decide; none left: the tool cannot be called). A required
 * left empty goes; draft-07 dependencies are walked like dependentRequired and
 * dependentSchemas. */
static void drop_keeps_branches_meaning(void **state)
{
    (void)state;
    drops_model("{\"properties\": {\"model\": {}, \"a\": {}}, \"required\": [\"model\"],"
                " \"not\": {\"required\": [\"model\"]}}",
                "{\"properties\": {\"a\": {}}}", false);
    drops_model("{\"not\": {\"required\": [\"a\"]}}", "{\"not\": {\"required\": [\"a\"]}}", false);
    drops_model("{\"if\": {\"required\": [\"model\"]}, \"then\": {\"required\": [\"a\"]},"
                " \"else\": {\"required\": [\"b\"]}}",
                "{\"allOf\": [{\"required\": [\"b\"]}]}", false);
    drops_model("{\"if\": {\"required\": [\"model\"]}, \"then\": {\"required\": [\"a\"]},"
                " \"allOf\": [{\"required\": [\"c\"]}]}",
                "{\"allOf\": [{\"required\": [\"c\"]}]}", false);
    drops_model("{\"if\": {\"required\": [\"a\"]}, \"then\": {\"required\": [\"model\", \"b\"]}}",
                "{\"if\": {\"required\": [\"a\"]}, \"then\": {\"required\": [\"b\"]}}", false);
    drops_model("{\"anyOf\": [{\"required\": [\"model\"]}, {\"required\": [\"a\"]}],"
                " \"oneOf\": [{\"required\": [\"b\"]}, {\"required\": [\"model\", \"b\"]}]}",
                "{\"anyOf\": [{\"required\": [\"a\"]}], \"oneOf\": [{\"required\": [\"b\"]}]}",
                false);
    drops_model("{\"properties\": {\"o\": {\"oneOf\": [{\"required\": [\"model\"]}]}}}",
                "{\"properties\": {\"o\": {\"oneOf\": [{\"not\": {}}]}}}", true);
    drops_model("{\"dependencies\": {\"model\": [\"a\"], \"a\": [\"model\", \"b\"],"
                " \"c\": {\"properties\": {\"model\": {}, \"d\": {}}}},"
                " \"dependentSchemas\": {\"model\": {\"required\": [\"a\"]}},"
                " \"dependentRequired\": {\"a\": [\"model\"]}}",
                "{\"dependencies\": {\"a\": [\"b\"], \"c\": {\"properties\": {\"d\": {}}}},"
                " \"dependentSchemas\": {}, \"dependentRequired\": {\"a\": []}}",
                false);
    /* A fixed name is set by the gateway at the top (a branch requiring it there holds), and
     * refused deeper (one requiring it there never does). */
    applied("{\"fix\": {\"deliver\": \"local\"}}",
            "{\"anyOf\": [{\"required\": [\"deliver\"]}, {\"required\": [\"a\"]}],"
            " \"properties\": {\"o\": {\"anyOf\": [{\"required\": [\"deliver\"]}, {\"required\": "
            "[\"a\"]}]}}}",
            "{\"anyOf\": [{}, {\"required\": [\"a\"]}],"
            " \"properties\": {\"o\": {\"anyOf\": [{\"required\": [\"a\"]}]}}}",
            false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_names_guard_and_each_policy),
        cmocka_unit_test(loosening_is_named),
        cmocka_unit_test(require_always_and_per_action),
        cmocka_unit_test(conditional_confirm),
        cmocka_unit_test(drop_removes_nested_names),
        cmocka_unit_test(drop_keeps_branches_meaning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
