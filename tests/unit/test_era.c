/* Unit tests for MCP 2026-07-28 in the engine (src/mcp/era.c, reqstate.c): which era a
 * request is served by, the order and shape of the revision's errors (HTTP status, code, the
 * request's id), the header checks (base64 Mcp-Name, white space), server/discover, the
 * decoration of results, input-required rounds with a sealed requestState (tampered, another
 * caller, other arguments, bad answers), log messages only at the requested level, and that
 * the session era is untouched. The engine runs behind fake_hreq.h, no socket. */
#include "fake_hreq.h"

#include <jansson.h>

#include "era.h"
#include "loop.h"
#include "mcp.h"

static struct loop *loop;
static struct mcp_server *srv;

#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}}"

/* A tool that asks for a name (with state naming the round), then greets. */
static void ask_tool(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_t *got = json_object_get(mcp_call_input_responses(c), "who");
    json_t *state = mcp_call_input_state(c);
    if (got && state) {
        char text[200];
        snprintf(text, sizeof text, "hello %s (round %d)",
                 json_string_value(json_object_get(json_object_get(got, "content"), "name")),
                 (int)json_integer_value(json_object_get(state, "round")));
        mcp_call_result_take(
            c, json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text));
        return;
    }
    if (!mcp_call_client_supports(c, "elicitation")) {
        mcp_call_require_capability(c, json_pack("{s:{}}", "elicitation"), "elicitation");
        return;
    }
    /* Nothing can be sent to the client in this era: it must come back instead. */
    assert_false(mcp_call_request(c, "elicitation/create", json_object(), NULL, NULL));
    mcp_call_input_required(c,
                            json_pack("{s:{s:s, s:{s:s}}}", "who", "method", "elicitation/create",
                                      "params", "message", "Who?"),
                            json_pack("{s:i}", "round", 1));
}

static void log_tool(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_log(c, "info", NULL, json_string("a log line"));
    mcp_call_result_take(c, json_pack("{s:[]}", "content"));
}

static void region_tool(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:O}]}", "content", "type", "text", "text",
                                      json_object_get(args, "region")));
}

static char last_task[64], last_caller[48];

static void task_get(struct mcp_call *c, const char *id, void *arg)
{
    (void)arg;
    snprintf(last_task, sizeof last_task, "%s", id);
    snprintf(last_caller, sizeof last_caller, "%s", mcp_call_caller(c));
    mcp_call_result_take(c, json_pack("{s:s, s:s}", "taskId", id, "status", "working"));
}

static void task_update(struct mcp_call *c, const char *id, json_t *responses, void *arg)
{
    (void)id, (void)responses, (void)arg;
    mcp_call_result_take(c, json_object());
}

static void task_cancel(struct mcp_call *c, const char *id, void *arg)
{
    task_update(c, id, NULL, arg);
}

static const struct mcp_task_ops ops = {task_get, task_update, task_cancel};

static unsigned state_ttl_ms;         /* the next setup's mcp_opts.state_ttl_ms */
static const char *server_name = "t"; /* the next setup's mcp_opts.name */

static int setup(void **state)
{
    (void)state;
    loop = loop_new();
    struct mcp_opts o = {
        .name = server_name, .version = "1", .sessions = true, .state_ttl_ms = state_ttl_ms};
    srv = mcp_new(loop, &o);
    mcp_set_listen(srv, "127.0.0.1", 8765);
    mcp_add_tool(srv, &(struct mcp_tool_def){
                          .name = "ask", .input_schema = json_object(), .handler = ask_tool});
    mcp_add_tool(srv, &(struct mcp_tool_def){
                          .name = "héllo", .input_schema = json_object(), .handler = log_tool});
    mcp_add_tool(srv, &(struct mcp_tool_def){
                          .name = "region",
                          .input_schema = json_pack(
                              "{s:{s:{s:s}, s:{s:s}, s:{s:s, s:s}, s:{s:s, s:s}}}", "properties",
                              "region", "x-mcp-header", "Region", "n", "x-mcp-header", "N",
                              /* declarations no client can honour: ignored */
                              "o", "type", "object", "x-mcp-header", "O", "sp", "type", "string",
                              "x-mcp-header", "Bad Header"),
                          .handler = region_tool});
    mcp_set_task_ops(srv, &ops, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mcp_free(srv);
    loop_free(loop);
    return 0;
}

/* An embedder's name that is not UTF-8 (no JSON text of serverInfo can be made). */
static int setup_bad_name(void **state)
{
    server_name = "t\xff";
    int rc = setup(state);
    server_name = "t";
    return rc;
}

/* Sends body with the 2026-07-28 headers (method and name as given; NULL leaves one out) and
 * returns the parsed answer; *status gets the HTTP status. */
static json_t *send_modern(const char *body, const char *version, const char *method,
                           const char *name, const char *auth, unsigned *status)
{
    struct hreq r = {.accept = "application/json", .body = body, .version = version};
    size_t n = 0;
    if (method) {
        r.headers[n][0] = "Mcp-Method";
        r.headers[n++][1] = method;
    }
    if (name) {
        r.headers[n][0] = "Mcp-Name";
        r.headers[n++][1] = name;
    }
    if (auth) {
        r.headers[n][0] = "Authorization";
        r.headers[n++][1] = auth;
    }
    mcp_http_request(srv, &r);
    assert_non_null(r.reply);
    *status = r.status;
    json_t *j = json_loads(r.reply, 0, NULL);
    req_cleanup(&r);
    return j;
}

static json_int_t error_code(json_t *j)
{
    return json_integer_value(json_object_get(json_object_get(j, "error"), "code"));
}

/* The list fast path splices a cached text head; with no text form of serverInfo it must take
 * the JSON path (it once passed NULL to strlen). */
static void lists_work_with_a_name_that_is_not_utf8(void **state)
{
    (void)state;
    unsigned st;
    json_t *j = send_modern(
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" META "}}}",
        "2026-07-28", "tools/list", NULL, NULL, &st);
    assert_int_equal(st, 200);
    assert_int_equal(json_array_size(json_object_get(json_object_get(j, "result"), "tools")), 3);
    json_decref(j);
}

static void errors_follow_the_revision(void **state)
{
    (void)state;
    unsigned st;
    /* Removed and unknown methods: 404 -32601, before anything else is looked at. */
    json_t *j = send_modern(
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{" META "}}}",
        "2026-07-28", "initialize", NULL, NULL, &st);
    assert_int_equal(st, 404);
    assert_int_equal(error_code(j), -32601);
    assert_int_equal(json_integer_value(json_object_get(j, "id")), 7);
    json_decref(j);
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}", "2026-07-28", "ping",
                    NULL, NULL, &st);
    assert_int_equal(st, 404);
    assert_string_equal(json_string_value(json_object_get(j, "id")), "p");
    json_decref(j);
    /* No _meta with a 2026-07-28 header: -32602, 400. */
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", "2026-07-28",
                    "tools/list", NULL, NULL, &st);
    assert_int_equal(st, 400);
    assert_int_equal(error_code(j), -32602);
    json_decref(j);
    /* Header and _meta disagree: -32020; both name an unknown version: -32022 with the list. */
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" META
                    "}}}",
                    "2025-11-25", "tools/list", NULL, NULL, &st);
    assert_int_equal(st, 400);
    assert_int_equal(error_code(j), -32020);
    json_decref(j);
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                    "{\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\","
                    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
                    "2099-01-01", "tools/list", NULL, NULL, &st);
    assert_int_equal(st, 400);
    assert_int_equal(error_code(j), -32022);
    json_t *data = json_object_get(json_object_get(j, "error"), "data");
    assert_string_equal(json_string_value(json_object_get(data, "requested")), "2099-01-01");
    assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"), 0)),
                        "2026-07-28");
    json_decref(j);
    /* Mcp-Method missing or wrong: -32020. */
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{" META
                    "}}}",
                    "2026-07-28", NULL, NULL, NULL, &st);
    assert_int_equal(error_code(j), -32020);
    json_decref(j);
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{" META
                    "}}}",
                    "2026-07-28", "tools/call", NULL, NULL, &st);
    assert_int_equal(error_code(j), -32020);
    json_decref(j);
    /* A header of no era we serve, without _meta: -32022 too (not the session era's path). */
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}", "1999-01-01", NULL, NULL,
                    NULL, &st);
    assert_int_equal(st, 400);
    assert_int_equal(error_code(j), -32022);
    json_decref(j);
}

static void mcp_name_is_decoded_and_trimmed(void **state)
{
    (void)state;
    unsigned st;
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
                       "\"name\":\"héllo\",\"arguments\":{}," META "}}}";
    /* "héllo" in UTF-8, base64: aMOpbGxv */
    json_t *j = send_modern(body, "2026-07-28", "tools/call", "=?base64?aMOpbGxv?=", NULL, &st);
    assert_int_equal(st, 200);
    assert_non_null(json_object_get(j, "result"));
    json_decref(j);
    j = send_modern(body, "2026-07-28", "tools/call", "=?base64?aGVsbG8=?=", NULL, &st);
    assert_int_equal(error_code(j), -32020); /* "hello" is another name */
    json_decref(j);
    j = send_modern(body, "2026-07-28", "tools/call", "héllo", NULL, &st);
    assert_int_equal(error_code(j), -32020); /* raw non-ASCII is not a valid header value */
    json_decref(j);
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                    "\"name\":\"ask\",\"arguments\":{}," META "}}}",
                    "2026-07-28", "tools/call", "  ask\t", NULL, &st);
    assert_int_equal(st, 200); /* white space around a plain value is not part of it */
    json_decref(j);
    /* A long name (a resource URI may be kilobytes) that matches is no mismatch: here an
     * unknown tool, not -32020. */
    char name[3000], big[3300];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    snprintf(big, sizeof big,
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
             "\"params\":{\"name\":\"%s\",\"arguments\":{}," META "}}}",
             name);
    j = send_modern(big, "2026-07-28", "tools/call", name, NULL, &st);
    assert_int_not_equal(error_code(j), -32020);
    json_decref(j);
}

static void discover_and_lists_are_decorated(void **state)
{
    (void)state;
    unsigned st;
    json_t *j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\","
                            "\"params\":{" META "}}}",
                            "2026-07-28", "server/discover", NULL, NULL, &st);
    json_t *res = json_object_get(j, "result");
    assert_int_equal(st, 200);
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(res, "supportedVersions"), 0)),
        "2026-07-28");
    assert_non_null(json_object_get(json_object_get(res, "capabilities"), "tools"));
    /* No prompts registered: not advertised, and prompts/list is not a method then. */
    assert_null(json_object_get(json_object_get(res, "capabilities"), "prompts"));
    assert_true(json_is_integer(json_object_get(res, "ttlMs")));
    assert_string_equal(json_string_value(json_object_get(res, "cacheScope")), "private");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(res, "_meta"), "io.modelcontextprotocol/serverInfo"),
            "name")),
        "t");
    json_decref(j);
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" META
                    "}}}",
                    "2026-07-28", "tools/list", NULL, NULL, &st);
    res = json_object_get(j, "result");
    assert_int_equal(json_array_size(json_object_get(res, "tools")), 3);
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
    assert_int_equal(json_integer_value(json_object_get(res, "ttlMs")), 300000);
    json_decref(j);
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/list\",\"params\":{" META
                    "}}}",
                    "2026-07-28", "prompts/list", NULL, NULL, &st);
    assert_int_equal(st, 404);
    json_decref(j);
}

#define ASK                                                                                        \
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"                        \
    "\"name\":\"ask\",\"arguments\":{\"x\":%d}%s," META "}}}"

/* One round of the ask tool: extra is added to params (inputResponses, requestState). */
static json_t *ask(int id, int x, const char *extra, const char *auth, unsigned *st)
{
    char body[4096];
    snprintf(body, sizeof body, ASK, id, x, extra);
    return send_modern(body, "2026-07-28", "tools/call", "ask", auth, st);
}

static void input_required_rounds_are_sealed(void **state)
{
    (void)state;
    unsigned st;
    json_t *j = ask(1, 1, "", "Bearer A", &st);
    json_t *res = json_object_get(j, "result");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "input_required");
    assert_non_null(json_object_get(json_object_get(res, "inputRequests"), "who"));
    const char *rs = json_string_value(json_object_get(res, "requestState"));
    assert_non_null(rs);
    assert_null(strstr(rs, "round")); /* opaque: not the handler's JSON in the clear */
    char extra[3000];
    const char *answer = ",\"inputResponses\":{\"who\":{\"action\":\"accept\","
                         "\"content\":{\"name\":\"Ann\"}}}";

    /* The right caller with the same arguments gets through, with the state it sealed. */
    snprintf(extra, sizeof extra, "%s,\"requestState\":\"%s\"", answer, rs);
    json_t *ok = ask(2, 1, extra, "Bearer A", &st);
    assert_int_equal(st, 200);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(ok, "result"), "content"), 0), "text")),
        "hello Ann (round 1)");
    json_decref(ok);
    /* Another caller, other arguments, or one altered character: refused, -32602. */
    json_t *bad = ask(3, 1, extra, "Bearer B", &st);
    assert_int_equal(error_code(bad), -32602);
    json_decref(bad);
    bad = ask(4, 2, extra, "Bearer A", &st);
    assert_int_equal(error_code(bad), -32602);
    json_decref(bad);
    char *tampered = strdup(rs);
    tampered[3] = tampered[3] == 'A' ? 'B' : 'A';
    snprintf(extra, sizeof extra, "%s,\"requestState\":\"%s\"", answer, tampered);
    bad = ask(5, 1, extra, "Bearer A", &st);
    assert_int_equal(error_code(bad), -32602);
    json_decref(bad);
    snprintf(extra, sizeof extra, "%s,\"requestState\":\"%s-TAMPERED\"", answer, rs);
    bad = ask(6, 1, extra, "Bearer A", &st);
    assert_int_equal(error_code(bad), -32602);
    json_decref(bad);
    free(tampered);
    /* The same token however the scheme is written is the same caller. */
    snprintf(extra, sizeof extra, "%s,\"requestState\":\"%s\"", answer, rs);
    ok = ask(8, 1, extra, "bearer  A", &st);
    assert_non_null(json_object_get(ok, "result"));
    json_decref(ok);
    /* A state sealed for one tool is nothing to another. */
    char other[4096];
    snprintf(other, sizeof other,
             "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{"
             "\"name\":\"héllo\",\"arguments\":{\"x\":1}%s," META "}}}",
             extra);
    bad = send_modern(other, "2026-07-28", "tools/call", "=?base64?aMOpbGxv?=", "Bearer A", &st);
    assert_int_equal(error_code(bad), -32602);
    json_decref(bad);
    /* Longer than any state we write: refused before anything is decoded. */
    char *huge = malloc(9001);
    memset(huge, 'A', 9000);
    huge[9000] = '\0';
    char *big = malloc(12000);
    snprintf(big, 12000, "%s,\"requestState\":\"%s.x\"", answer, huge);
    char *body = malloc(16000);
    snprintf(body, 16000, ASK, 10, 1, big);
    bad = send_modern(body, "2026-07-28", "tools/call", "ask", "Bearer A", &st);
    assert_int_equal(error_code(bad), -32602);
    json_decref(bad);
    free(huge);
    free(big);
    free(body);
    /* An answer that is not a result object. */
    snprintf(extra, sizeof extra, ",\"inputResponses\":{\"who\":42},\"requestState\":\"%s\"", rs);
    bad = ask(7, 1, extra, "Bearer A", &st);
    assert_int_equal(error_code(bad), -32602);
    json_decref(bad);
    json_decref(j);
}

static void capability_missing_is_32021(void **state)
{
    (void)state;
    unsigned st;
    json_t *j = send_modern(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"ask\","
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
        "2026-07-28", "tools/call", "ask", NULL, &st);
    assert_int_equal(st, 400);
    assert_int_equal(error_code(j), -32021);
    assert_non_null(
        json_object_get(json_object_get(json_object_get(json_object_get(j, "error"), "data"),
                                        "requiredCapabilities"),
                        "elicitation"));
    json_decref(j);
}

static void logs_only_at_the_requested_level(void **state)
{
    (void)state;
    for (int asked = 0; asked < 2; asked++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"héllo\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                 "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}%s}}}",
                 asked ? ",\"io.modelcontextprotocol/logLevel\":\"debug\"" : "");
        struct hreq r = {
            .accept = "application/json, text/event-stream",
            .body = body,
            .version = "2026-07-28",
            .headers = {{"Mcp-Method", "tools/call"}, {"Mcp-Name", "=?base64?aMOpbGxv?="}}};
        mcp_http_request(srv, &r);
        const char *out = r.stream ? r.stream : r.reply;
        assert_non_null(out);
        if (asked)
            assert_non_null(strstr(out, "notifications/message"));
        else
            assert_null(strstr(out, "notifications/message"));
        assert_null(strstr(out, "Mcp-Session-Id"));
        req_cleanup(&r);
    }
}

static void session_era_is_untouched(void **state)
{
    (void)state;
    struct hreq r = {.accept = "application/json",
                     .body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                             "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                             "\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}"};
    mcp_http_request(srv, &r);
    assert_int_equal(r.status, 200);
    assert_true(strlen(r.session_out) > 0); /* a session, as before */
    json_t *j = json_loads(r.reply, 0, NULL);
    json_t *res = json_object_get(j, "result");
    assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), "2025-11-25");
    assert_null(json_object_get(res, "resultType"));
    json_decref(j);
    req_cleanup(&r);
}

/* tools/call of the region tool with the given arguments and Mcp-Param headers. */
static json_int_t call_region(const char *arguments, const char *region, const char *n)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
             "\"name\":\"region\",\"arguments\":%s," META "}}}",
             arguments);
    struct hreq r = {.accept = "application/json",
                     .body = body,
                     .version = "2026-07-28",
                     .headers = {{"Mcp-Method", "tools/call"}, {"Mcp-Name", "region"}}};
    size_t k = 2;
    if (region) {
        r.headers[k][0] = "Mcp-Param-Region";
        r.headers[k++][1] = region;
    }
    if (n) {
        r.headers[k][0] = "Mcp-Param-N";
        r.headers[k][1] = n;
    }
    mcp_http_request(srv, &r);
    json_t *j = json_loads(r.reply, 0, NULL);
    json_int_t code = json_object_get(j, "result") ? 0 : error_code(j);
    json_decref(j);
    req_cleanup(&r);
    return code;
}

static void param_headers_must_match_the_arguments(void **state)
{
    (void)state;
    assert_int_equal(call_region("{\"region\":\"eu\"}", "eu", NULL), 0);
    assert_int_equal(call_region("{\"region\":\"eu\"}", NULL, NULL), -32020); /* missing */
    assert_int_equal(call_region("{\"region\":\"eu\"}", "us", NULL), -32020);
    assert_int_equal(call_region("{\"region\":\"Hello\"}", "=?base64?SGVsbG8=?=", NULL), 0);
    /* Unpadded or bad base64 is refused, not decoded leniently. */
    assert_int_equal(call_region("{\"region\":\"Hello\"}", "=?base64?SGVsbG8?=", NULL), -32020);
    assert_int_equal(call_region("{\"region\":\"Hello\"}", "=?base64?SGVs!!!bG8=?=", NULL), -32020);
    /* Numbers compare as numbers; no value in the body, no header. */
    assert_int_equal(call_region("{\"n\":42}", NULL, "42.0"), 0);
    assert_int_equal(call_region("{\"n\":42}", NULL, "43"), -32020);
    assert_int_equal(call_region("{}", NULL, NULL), 0);
    assert_int_equal(call_region("{}", "eu", NULL), -32020);
    /* An object property's or a malformed header name's declaration is dropped at
     * registration: the tool stays callable without them. */
    assert_int_equal(call_region("{\"o\":{\"a\":1},\"sp\":\"x\"}", NULL, NULL), 0);
}

/* A schema replaced after registration (a gateway reload's argument policy): the headers
 * checked are the new schema's, not those found at registration. */
static void param_headers_follow_a_replaced_schema(void **state)
{
    (void)state;
    mcp_set_tool_input_schema(srv, "region",
                              json_pack("{s:{s:{s:s}, s:{s:s}}}", "properties", "region", "type",
                                        "string", "n", "x-mcp-header", "N"));
    assert_int_equal(call_region("{\"region\":\"eu\"}", NULL, NULL), 0); /* no longer mirrored */
    assert_int_equal(call_region("{\"n\":1}", NULL, "2"), -32020);
    mcp_set_tool_input_schema(srv, "region", json_object());
    assert_int_equal(call_region("{\"n\":1}", NULL, "2"), 0);
}

static void task_methods_need_the_extension(void **state)
{
    (void)state;
    unsigned st;
    const char *get_no_ext = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/get\",\"params\":{"
                             "\"taskId\":\"t1\"," META "}}}";
    json_t *j = send_modern(get_no_ext, "2026-07-28", "tasks/get", "t1", NULL, &st);
    assert_int_equal(st, 400);
    assert_int_equal(error_code(j), -32021);
    json_decref(j);
    const char *get =
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/get\",\"params\":{"
        "\"taskId\":\"t1\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":"
        "{\"io.modelcontextprotocol/tasks\":{}}}}}}";
    j = send_modern(get, "2026-07-28", "tasks/get", "t2", NULL, &st);
    assert_int_equal(error_code(j), -32020); /* Mcp-Name is the task id */
    json_decref(j);
    last_task[0] = '\0';
    j = send_modern(get, "2026-07-28", "tasks/get", "t1", "Bearer X", &st);
    assert_int_equal(st, 200);
    assert_string_equal(last_task, "t1");
    assert_int_equal(strlen(last_caller), 43); /* a digest, not the credential */
    assert_string_not_equal(last_caller, "X");
    assert_null(strstr(last_caller, "Bearer"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "result"), "resultType")), "complete");
    json_decref(j);
    /* The 2025-11-25 draft's methods are gone. */
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/list\",\"params\":{" META
                    "}}}",
                    "2026-07-28", "tasks/list", NULL, NULL, &st);
    assert_int_equal(st, 404);
    json_decref(j);
    j = send_modern("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"server/discover\",\"params\":{" META
                    "}}}",
                    "2026-07-28", "server/discover", NULL, NULL, &st);
    assert_non_null(json_object_get(
        json_object_get(json_object_get(json_object_get(j, "result"), "capabilities"),
                        "extensions"),
        "io.modelcontextprotocol/tasks"));
    json_decref(j);
}

static int setup_short_state(void **state)
{
    state_ttl_ms = 40;
    int rc = setup(state);
    state_ttl_ms = 0;
    return rc;
}

/* A sealed requestState is accepted until its lifetime ends (10 minutes unless the server was
 * made with another), then refused like a forged one. */
static void sealed_state_expires(void **state)
{
    (void)state;
    unsigned st;
    const char *answer = ",\"inputResponses\":{\"who\":{\"action\":\"accept\","
                         "\"content\":{\"name\":\"Ann\"}}}";
    char extra[3000];
    for (int late = 0; late < 2; late++) {
        json_t *j = ask(1, 1, "", "Bearer A", &st);
        const char *rs =
            json_string_value(json_object_get(json_object_get(j, "result"), "requestState"));
        assert_non_null(rs);
        snprintf(extra, sizeof extra, "%s,\"requestState\":\"%s\"", answer, rs);
        json_decref(j);
        if (late) /* the loop's clock moves on when it runs: past the 40 ms */
            for (uint64_t t0 = loop_now(loop); loop_now(loop) < t0 + 60;)
                loop_once(loop, 20);
        json_t *r = ask(2, 1, extra, "Bearer A", &st);
        if (late)
            assert_int_equal(error_code(r), -32602);
        else
            assert_non_null(json_object_get(r, "result"));
        json_decref(r);
    }
}

/* era_reply adds the decoration as text to a plain result: the same bytes era_decorate and
 * jansson give, for each form (call, list, read, a retry's answer) and for results that already
 * carry a decoration field (which take era_decorate itself). */
static void reply_text_is_the_decorated_document(void **state)
{
    (void)state;
    static const char *const results[] = {"{}", "{\"a\":1,\"b\":[\"\\u00e9\\n\"]}",
                                          "{\"_meta\":{\"x\":1}}",
                                          "{\"resultType\":\"input_required\"}", "{\"ttlMs\":5}"};
    static const char *const methods[] = {"tools/call", "tools/list", "resources/read",
                                          "server/discover"};
    static const char *const ids[] = {"7", "\"s\\\"id\"", "0", "\"\\u00e9\\u0001/\""};
    for (size_t i = 0; i < sizeof results / sizeof *results; i++)
        for (size_t k = 0; k < sizeof methods / sizeof *methods; k++)
            for (size_t d = 0; d < sizeof ids / sizeof *ids; d++)
                for (int retry = 0; retry < 2; retry++) {
                    json_t *msg = json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id",
                                            json_loads(ids[d], JSON_DECODE_ANY, NULL), "result",
                                            json_loads(results[i], 0, NULL));
                    json_t *copy = json_deep_copy(msg);
                    era_decorate(srv, methods[k], copy, retry);
                    char *want = json_dumps(copy, JSON_COMPACT);
                    struct hreq r = {.accept = "application/json"};
                    era_reply(srv, &r, methods[k], msg, retry);
                    assert_non_null(r.reply);
                    assert_string_equal(r.reply, want);
                    assert_int_equal(r.status, 200);
                    free(want);
                    json_decref(copy);
                    req_cleanup(&r);
                }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(errors_follow_the_revision, setup, teardown),
        cmocka_unit_test_setup_teardown(mcp_name_is_decoded_and_trimmed, setup, teardown),
        cmocka_unit_test_setup_teardown(discover_and_lists_are_decorated, setup, teardown),
        cmocka_unit_test_setup_teardown(input_required_rounds_are_sealed, setup, teardown),
        cmocka_unit_test_setup_teardown(capability_missing_is_32021, setup, teardown),
        cmocka_unit_test_setup_teardown(logs_only_at_the_requested_level, setup, teardown),
        cmocka_unit_test_setup_teardown(session_era_is_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(param_headers_must_match_the_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(param_headers_follow_a_replaced_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(task_methods_need_the_extension, setup, teardown),
        cmocka_unit_test_setup_teardown(reply_text_is_the_decorated_document, setup, teardown),
        cmocka_unit_test_setup_teardown(sealed_state_expires, setup_short_state, teardown),
        cmocka_unit_test_setup_teardown(lists_work_with_a_name_that_is_not_utf8, setup_bad_name,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
