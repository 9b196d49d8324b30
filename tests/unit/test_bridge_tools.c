/* Unit tests for the bridge's tools (src/bridge/tool_*.c and the table bridge.c registers): what
 * tools/list shows, the answers to bad arguments, and the shape of real answers checked against
 * the outputSchema the tool publishes. The bridge runs on the MCP engine with fake_hreq.h for the
 * HTTP side and a task directory of its own; no agent is needed for these answers. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "bridge.h"
#include "bridge_internal.h"
#include "loop.h"
#include "mcp.h"

#include "fake_hreq.h"

static struct loop *loop;
static struct mcp_server *srv;
static struct bridge *br;
static char dir[64];
static char tasks[96];

static void write_file(const char *id, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tasks, id);
    assert_true(mkdir(path, 0700) == 0 || errno == EEXIST);
    snprintf(path, sizeof path, "%s/%s/%s", tasks, id, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/hm-bridge-tools-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(tasks, sizeof tasks, "%s/tasks", dir);
    char agents[128];
    snprintf(agents, sizeof agents, "%s/agents.json", dir); /* absent: the synthetic agent */
    loop = loop_new();
    struct mcp_opts mo = {.name = "t", .version = "1"};
    srv = mcp_new(loop, &mo);
    struct bridge_opts o = {.tasks_dir = tasks, .agents_file = agents, .poll_ms = 1000};
    br = bridge_new(srv, loop, &o);
    return br == NULL;
}

static int teardown(void **state)
{
    (void)state;
    bridge_free(br);
    mcp_free(srv);
    loop_free(loop);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

/* Posts one JSON-RPC request, runs the loop until it is answered, returns its "result". */
static json_t *rpc(const char *method, json_t *params_take)
{
    json_t *req = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", 1, "method", method,
                            "params", params_take);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    struct hreq r = {.accept = "application/json", .body = body};
    mcp_http_request(srv, &r);
    for (int i = 0; i < 500 && r.reply == NULL; i++)
        loop_once(loop, 10);
    assert_non_null(r.reply);
    assert_int_equal(r.status, 200);
    json_t *answer = json_loads(r.reply, 0, NULL);
    assert_non_null(answer);
    json_t *result = json_incref(json_object_get(answer, "result"));
    assert_non_null(result);
    json_decref(answer);
    req_cleanup(&r);
    free(body);
    return result;
}

static json_t *call(const char *tool, const char *args_json)
{
    json_t *args = json_loads(args_json, 0, NULL);
    assert_non_null(args);
    return rpc("tools/call", json_pack("{s:s, s:o}", "name", tool, "arguments", args));
}

/* The tool's entry in tools/list (new reference), or NULL. */
static json_t *listed(const char *name)
{
    json_t *list = rpc("tools/list", json_object()), *found = NULL;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(list, "tools"), i,
                       t) if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
        found = json_incref(t);
    json_decref(list);
    return found;
}

/* ---- a check of a value against the subset of JSON Schema the tools publish ---- */

static bool has_type(json_t *v, const char *type)
{
    if (strcmp(type, "object") == 0)
        return json_is_object(v);
    if (strcmp(type, "array") == 0)
        return json_is_array(v);
    if (strcmp(type, "string") == 0)
        return json_is_string(v);
    if (strcmp(type, "integer") == 0)
        return json_is_integer(v);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(v);
    if (strcmp(type, "null") == 0)
        return json_is_null(v);
    fail_msg("a schema type the check does not know: %s", type);
    return false;
}

static bool conforms(json_t *v, json_t *schema);

static bool conforms_any(json_t *v, json_t *schemas)
{
    size_t i;
    json_t *s;
    json_array_foreach(schemas, i, s) if (conforms(v, s)) return true;
    return false;
}

static bool conforms(json_t *v, json_t *schema)
{
    json_t *type = json_object_get(schema, "type");
    if (json_is_string(type) && !has_type(v, json_string_value(type)))
        return false;
    if (json_is_array(type)) {
        bool one = false;
        size_t i;
        json_t *t;
        json_array_foreach(type, i, t) one = one || has_type(v, json_string_value(t));
        if (!one)
            return false;
    }
    json_t *any = json_object_get(schema, "anyOf");
    if (any && !conforms_any(v, any))
        return false;
    json_t *values = json_object_get(schema, "enum");
    if (values) {
        bool in = false;
        size_t i;
        json_t *e;
        json_array_foreach(values, i, e) in = in || json_equal(e, v);
        if (!in)
            return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(schema, "required"), i,
                       e) if (json_object_get(v, json_string_value(e)) == NULL) return false;
    json_t *props = json_object_get(schema, "properties");
    const char *k;
    json_t *pv;
    json_object_foreach(v, k, pv)
    {
        json_t *ps = json_object_get(props, k);
        if (ps ? !conforms(pv, ps) : json_is_false(json_object_get(schema, "additionalProperties")))
            return false;
    }
    json_t *items = json_object_get(schema, "items");
    if (items && json_is_array(v))
        json_array_foreach(v, i, e) if (!conforms(e, items)) return false;
    return true;
}

/* result is a tool result whose structuredContent fits the tool's published outputSchema (an
 * alias, not listed here: its tool's, which it shares), and as an error (isError) or not as
 * expect_error says. Returns structuredContent (borrowed). */
static json_t *fits(const char *tool, json_t *result, bool expect_error)
{
    json_t *t = listed(bridge_tool_judged_as(tool));
    assert_non_null(t);
    json_t *sc = json_object_get(result, "structuredContent");
    assert_non_null(sc);
    if (json_is_true(json_object_get(result, "isError")) != expect_error) {
        char *a = json_dumps(sc, JSON_COMPACT);
        fail_msg("%s answered %s, %s", tool, a, expect_error ? "not an error" : "an error");
    }
    json_t *schema = json_object_get(t, "outputSchema");
    if (!conforms(sc, schema)) {
        char *a = json_dumps(sc, JSON_COMPACT), *s = json_dumps(schema, JSON_COMPACT);
        fail_msg("%s answered %s, which its outputSchema %s does not allow", tool, a, s);
    }
    /* ... and the error shape is what an error and only an error has. */
    json_t *err_shape = json_array_get(json_object_get(schema, "anyOf"), 1);
    assert_int_equal(conforms(sc, err_shape), expect_error);
    json_decref(t);
    return sc;
}

static void expect_error(const char *tool, const char *args, const char *code, const char *words)
{
    json_t *r = call(tool, args);
    json_t *sc = fits(tool, r, true);
    if (strcmp(json_string_value(json_object_get(sc, "error")), code) != 0)
        fail_msg("%s %s: %s, not %s (%s)", tool, args,
                 json_string_value(json_object_get(sc, "error")), code,
                 json_string_value(json_object_get(sc, "message")));
    if (words && !strstr(json_string_value(json_object_get(sc, "message")), words))
        fail_msg("%s %s: message '%s' does not say '%s'", tool, args,
                 json_string_value(json_object_get(sc, "message")), words);
    json_decref(r);
}

/* ---- tests ---- */

static void tools_list_is_the_table_in_order(void **state)
{
    (void)state;
    static const char *const want[] = {"hermes_task",  "hermes_status", "hermes_result",
                                       "hermes_files", "list_agents",   "hermes_cancel",
                                       "hermes_reset", "whoami"};
    json_t *list = rpc("tools/list", json_object());
    json_t *tools = json_object_get(list, "tools");
    /* The aliases are registered but not listed without MCP_TOOL_ALIASES. */
    assert_int_equal(json_array_size(tools), sizeof want / sizeof *want);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        json_t *t = json_array_get(tools, i);
        assert_string_equal(json_string_value(json_object_get(t, "name")), want[i]);
        json_t *in = json_object_get(t, "inputSchema");
        assert_true(json_is_false(json_object_get(in, "additionalProperties")));
        /* Every tool says what it answers: its own shape, or the error shape. */
        json_t *any = json_object_get(json_object_get(t, "outputSchema"), "anyOf");
        assert_int_equal(json_array_size(any), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(any, 0), "type")),
                            "object");
        assert_true(json_array_size(json_object_get(json_array_get(any, 0), "required")) > 0);
    }
    size_t n;
    const char *const *names = bridge_tool_names(br, &n);
    assert_int_equal(n, 10);
    assert_string_equal(names[8], "hermes_ask");
    assert_string_equal(names[9], "hermes_check");
    assert_string_equal(bridge_tool_judged_as("hermes_ask"), "hermes_task");
    assert_string_equal(bridge_tool_judged_as("hermes_check"), "hermes_result");
    assert_string_equal(bridge_tool_judged_as("hermes_cancel"), "hermes_cancel");
    json_decref(list);
}

static void schemas_say_what_the_specs_say(void **state)
{
    (void)state;
    json_t *t = listed("hermes_cancel");
    json_t *ann = json_object_get(t, "annotations");
    assert_true(json_is_true(json_object_get(ann, "destructiveHint")));
    assert_true(json_is_false(json_object_get(ann, "readOnlyHint")));
    json_t *ok = json_array_get(json_object_get(json_object_get(t, "outputSchema"), "anyOf"), 0);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(ok, "properties"), "already_finished"), "type")),
        "boolean");
    json_decref(t);

    t = listed("whoami");
    ok = json_array_get(json_object_get(json_object_get(t, "outputSchema"), "anyOf"), 0);
    json_t *kind = json_object_get(json_object_get(ok, "properties"), "kind");
    json_t *want = json_pack("[s, s, s]", "owner", "token", "oauth");
    assert_true(json_equal(json_object_get(kind, "enum"), want));
    json_decref(want);
    json_t *exp = json_object_get(json_object_get(ok, "properties"), "expires_at");
    assert_true(conforms(json_null(), exp));
    json_t *one = json_integer(1);
    assert_false(conforms(one, exp));
    json_decref(one);
    assert_true(json_is_true(json_object_get(json_object_get(t, "annotations"), "readOnlyHint")));
    json_decref(t);

    t = listed("hermes_result");
    ok = json_array_get(json_object_get(json_object_get(t, "outputSchema"), "anyOf"), 0);
    want = json_pack("[s, s]", "id", "status");
    assert_true(json_equal(json_object_get(ok, "required"), want));
    json_decref(want);
    json_decref(t);
}

static void bad_arguments_are_refused_by_name(void **state)
{
    (void)state;
    expect_error("hermes_result", "{}", "invalid_arguments", "id");
    expect_error("hermes_result", "{\"id\":\"../etc\"}", "invalid_arguments", "id");
    expect_error("hermes_result", "{\"id\":\"a\",\"extra\":1}", "invalid_arguments", "extra");
    expect_error("hermes_cancel", "{}", "invalid_arguments", "exactly one");
    expect_error("hermes_cancel", "{\"id\":\"a\",\"run_id\":\"r\"}", "invalid_arguments",
                 "exactly one");
    expect_error("hermes_cancel", "{\"run_id\":\"no spaces\"}", "invalid_arguments", "run_id");
    expect_error("hermes_status", "{\"run_id\":5}", "invalid_arguments", "run_id");
    expect_error("hermes_files", "{\"id\":\"t1\",\"path\":\"../x\"}", "invalid_arguments", "path");
    expect_error("hermes_task", "{\"task\":\"\"}", "invalid_arguments", "task");
    expect_error("hermes_task", "{\"task\":\"x\",\"mode\":\"later\"}", "invalid_arguments", "mode");
    expect_error("hermes_check", "{}", "invalid_arguments", "job_id");
    expect_error("whoami", "{\"who\":1}", "invalid_arguments", "who");
    expect_error("hermes_reset", "{}", "confirmation_required", "confirmed");
}

static void unknown_tasks_and_runs_are_not_found(void **state)
{
    (void)state;
    expect_error("hermes_result", "{\"id\":\"nope\"}", "not_found", "nope");
    expect_error("hermes_cancel", "{\"id\":\"nope\"}", "not_found", "nope");
    expect_error("hermes_cancel", "{\"run_id\":\"run_nope\"}", "not_found", "run_nope");
    /* The owner (here: everyone) may ask the agent about any run; it has no key here. */
    expect_error("hermes_status", "{\"run_id\":\"run_nope\"}", "agent_unavailable", "hermes");
    expect_error("hermes_files", "{\"id\":\"nope\"}", "not_found", "nope");
    /* No authentication here: no principal to describe. */
    expect_error("whoami", "{}", "not_found", "principal");
}

static void answers_fit_their_schemas(void **state)
{
    (void)state;
    write_file("t1", "request.json",
               "{\"id\":\"t1\",\"agent\":\"hermes\",\"mode\":\"sync\","
               "\"owner\":\"anonymous\"}");
    write_file("t1", "result.json",
               "{\"id\":\"t1\",\"status\":\"completed\",\"summary\":\"done\",\"artifacts\":"
               "[\"out.txt\"],\"next_steps\":[],\"agent\":\"hermes\",\"details\":{\"n\":1},"
               "\"completed_at\":\"2026-12-07T00:00:00Z\"}");
    write_file("t1", "out.txt", "hello\n");

    json_t *r = call("hermes_result", "{\"id\":\"t1\"}");
    json_t *sc = fits("hermes_result", r, false);
    assert_string_equal(json_string_value(json_object_get(sc, "status")), "completed");
    assert_null(json_object_get(sc, "agent")); /* the public projection only */
    json_decref(r);

    r = call("hermes_check", "{\"job_id\":\"t1\"}"); /* the alias answers as hermes_result */
    sc = fits("hermes_check", r, false);
    assert_string_equal(json_string_value(json_object_get(sc, "summary")), "done");
    json_decref(r);

    r = call("hermes_files", "{\"id\":\"t1\"}");
    sc = fits("hermes_files", r, false);
    assert_true(json_array_size(json_object_get(sc, "entries")) >= 1);
    json_decref(r);

    r = call("hermes_files", "{\"id\":\"t1\",\"path\":\"out.txt\"}");
    sc = fits("hermes_files", r, false);
    assert_string_equal(json_string_value(json_object_get(sc, "content")), "hello\n");
    json_decref(r);

    r = call("hermes_cancel", "{\"id\":\"t1\"}");
    sc = fits("hermes_cancel", r, false);
    assert_true(json_is_true(json_object_get(sc, "already_finished")));
    assert_string_equal(json_string_value(json_object_get(sc, "status")), "completed");
    json_decref(r);

    r = call("list_agents", "{}");
    sc = fits("list_agents", r, false);
    assert_string_equal(json_string_value(json_object_get(sc, "default")), "hermes");
    assert_int_equal(json_integer_value(json_object_get(sc, "count")), 1);
    json_decref(r);

    r = call("hermes_reset", "{\"confirmed\":true}");
    sc = fits("hermes_reset", r, false);
    assert_true(json_integer_value(json_object_get(sc, "cleared")) >= 0);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(tools_list_is_the_table_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(schemas_say_what_the_specs_say, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_arguments_are_refused_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_tasks_and_runs_are_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(answers_fit_their_schemas, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
