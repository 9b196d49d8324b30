/* Unit tests for gwtask.c: a call to a tool guarded `approve` from a 2026-07-28 client that
 * declared the tasks extension is answered at once with a working task (nothing sent upstream)
 * and queued for the operator. Approved, the call goes to its upstream with a slot of its own
 * (waiting for one when none is free) and the upstream's answer becomes the task's result: a
 * result completes it, a JSON-RPC error fails it, an input_required answer completes it with an
 * upstream_error (a task cannot relay input). Denied, it completes with approval_denied and
 * nothing is sent. tasks/cancel withdraws a waiting request, or cancels the running call
 * upstream. Another caller sees "not found", as for an unknown id. The upstream's transport is
 * fake_httpup.h's httpup_* (httpup.o is not linked), the engine runs behind fake_hreq.h and the
 * operator's queue is the real one (approvals.c). */
#include "fake_hreq.h"

#include <jansson.h>

#include "approvals.h"
#include "gwcall.h"
#include "gwcore.h"
#include "gwexpose.h"
#include "list.h"
#include "loop.h"
#include "mcp.h"
#include "metrics.h"
#include "relay.h"
#include "strmap.h"
#include "upstream.h"

#include "fake_gateway.h" /* sent, g, u, cfg, tool up__echo (guarded approve below) */

static json_t *audit; /* the gateway's events: [{status, decided_by}] */

static void on_event(const struct gw_event *e, void *arg)
{
    (void)arg;
    json_array_append_new(audit, json_pack("{s:s, s:s}", "status", e->status ? e->status : "-",
                                           "decided_by", e->decided_by ? e->decided_by : "-"));
}

/* Every scope but the one that sees every caller's tasks: callers see their own. */
static bool filter(struct hreq *r, const char *t, const char *scope, bool refusing, void *arg)
{
    (void)r, (void)t, (void)refusing, (void)arg;
    return scope == NULL || strcmp(scope, MCP_SCOPE_SEES_ALL) != 0;
}

static int setup(void **state)
{
    (void)state;
    tool.guard = GW_GUARD_APPROVE;
    audit = json_array();
    fake_gateway_setup((struct mcp_opts){0});
    g.on_event = on_event;
    g.approvals = approvals_new(loop, 600);
    g.approvals_timeout_s = 600;
    mcp_set_tool_filter(g.mcp, filter, NULL);
    list_init(&g.waits);
    g.tools = &tool;
    g.ntools = 1;
    gw_task_methods_start(&g);
    return g.tasks ? 0 : 1;
}

static int teardown(void **state)
{
    (void)state;
    gw_task_free_all(&g);
    approvals_free(g.approvals);
    json_decref(audit);
    fake_gateway_teardown();
    return 0;
}

#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":"                              \
    "{\"io.modelcontextprotocol/tasks\":{}}}}"

/* A 2026-07-28 request (method, Mcp-Name name, params members before _meta) by the caller
 * whose bearer is who; its answer, which must come at once. */
static json_t *ask(const char *who, const char *method, const char *name, const char *params)
{
    char body[2048], bearer[64];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":{%s," META "}}", method,
             params);
    snprintf(bearer, sizeof bearer, "Bearer %s", who);
    struct hreq r = {.accept = "application/json", .body = body, .version = "2026-07-28"};
    r.headers[0][0] = "Mcp-Method";
    r.headers[0][1] = method;
    r.headers[1][0] = "Mcp-Name";
    r.headers[1][1] = name;
    r.headers[2][0] = "Authorization";
    r.headers[2][1] = bearer;
    mcp_http_request(g.mcp, &r);
    assert_non_null(r.reply);
    json_t *j = json_loads(r.reply, 0, NULL);
    assert_non_null(j);
    req_cleanup(&r);
    return j;
}

struct task {
    char id[80], approval[40];
};

/* alice calls up__echo as a task: working at once, nothing sent upstream, one request queued. */
static struct task start_task(void)
{
    struct task k;
    json_t *j = ask("alice", "tools/call", "up__echo", "\"name\":\"up__echo\",\"arguments\":{}");
    json_t *res = json_object_get(j, "result");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "task");
    assert_string_equal(json_string_value(json_object_get(res, "status")), "working");
    const char *id = json_string_value(json_object_get(res, "taskId"));
    assert_non_null(id);
    assert_memory_equal(id, "gw:", 3);
    snprintf(k.id, sizeof k.id, "%s", id);
    const char *msg = json_string_value(json_object_get(res, "statusMessage"));
    assert_int_equal(
        sscanf(msg, "waiting for the operator's approval: request %39[0-9a-f]", k.approval), 1);
    json_decref(j);
    assert_int_equal(json_array_size(sent), 0);
    assert_int_equal(approvals_pending(g.approvals), 1);
    return k;
}

/* tasks/get of k by who (new reference: the result, or the whole answer on an error). */
static json_t *get(const char *who, const struct task *k)
{
    char params[200];
    snprintf(params, sizeof params, "\"taskId\":\"%s\"", k->id);
    json_t *j = ask(who, "tasks/get", k->id, params);
    json_t *res = json_incref(json_object_get(j, "result") ? json_object_get(j, "result") : j);
    json_decref(j);
    return res;
}

static const char *status_of(json_t *task)
{
    return json_string_value(json_object_get(task, "status"));
}

/* The tool error code of a completed task's result. */
static const char *tool_error_of(json_t *task)
{
    json_t *result = json_object_get(task, "result");
    assert_true(json_is_true(json_object_get(result, "isError")));
    return json_string_value(
        json_object_get(json_object_get(result, "structuredContent"), "error"));
}

static bool audited(const char *status, const char *decided_by)
{
    size_t i;
    json_t *e;
    json_array_foreach(audit, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "status")), status) == 0 &&
            (decided_by == NULL ||
             strcmp(json_string_value(json_object_get(e, "decided_by")), decided_by) == 0))
            return true;
    }
    return false;
}

/* The upstream answers its i-th message with result (JSON text) or error (JSON text). */
static void upstream_answers(size_t i, const char *member, const char *value)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"%s\":%s}",
             (long long)json_integer_value(json_object_get(json_array_get(sent, i), "id")), member,
             value);
    up_receive(&u, msg, strlen(msg));
}

static void approved_the_call_runs_and_its_answer_completes_the_task(void **state)
{
    (void)state;
    struct task k = start_task();
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "working");
    json_decref(t);

    assert_int_equal(approvals_decide(g.approvals, k.approval, true, NULL, "uid 1 (op)"), 0);
    assert_true(audited("approved", "uid 1 (op)"));
    assert_int_equal(json_array_size(sent), 1);
    json_t *call = json_array_get(sent, 0);
    assert_string_equal(json_string_value(json_object_get(call, "method")), "tools/call");
    assert_string_equal(json_string_value(json_object_get(json_object_get(call, "params"), "name")),
                        "echo");
    assert_int_equal(u.in_flight, 1);
    t = get("alice", &k);
    assert_string_equal(status_of(t), "working");
    assert_string_equal(json_string_value(json_object_get(t, "statusMessage")),
                        "approved; upstream up is running up__echo");
    json_decref(t);

    upstream_answers(0, "result", "{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}");
    assert_int_equal(u.in_flight, 0);
    t = get("alice", &k);
    assert_string_equal(status_of(t), "completed");
    json_t *content = json_object_get(json_object_get(t, "result"), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")),
                        "done");
    json_decref(t);
    assert_true(audited("ok", NULL));
}

static void denied_the_task_completes_with_approval_denied_and_nothing_is_sent(void **state)
{
    (void)state;
    struct task k = start_task();
    assert_int_equal(approvals_decide(g.approvals, k.approval, false, "not now", "uid 1 (op)"), 0);
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "completed");
    assert_string_equal(tool_error_of(t), "approval_denied");
    json_t *sc = json_object_get(json_object_get(t, "result"), "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "message")),
                        "the operator denied up__echo: not now");
    json_decref(t);
    assert_int_equal(json_array_size(sent), 0);
    assert_true(audited("denied", "uid 1 (op)"));
}

static void another_caller_gets_not_found(void **state)
{
    (void)state;
    struct task k = start_task(), unknown = {.id = "gw:00000000000000000000000000000000"};
    json_t *bob = get("bob", &k), *none = get("alice", &unknown);
    json_t *e1 = json_object_get(bob, "error"), *e2 = json_object_get(none, "error");
    assert_non_null(e1);
    assert_non_null(e2);
    assert_true(json_equal(json_object_get(e1, "code"), json_object_get(e2, "code")));
    assert_string_equal(json_string_value(json_object_get(e1, "message")),
                        json_string_value(json_object_get(e2, "message")));
    json_decref(bob);
    json_decref(none);
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "working");
    json_decref(t);
}

static void cancelled_while_waiting_the_request_leaves_the_queue(void **state)
{
    (void)state;
    struct task k = start_task();
    char params[200];
    snprintf(params, sizeof params, "\"taskId\":\"%s\"", k.id);
    json_t *j = ask("alice", "tasks/cancel", k.id, params);
    assert_non_null(json_object_get(j, "result"));
    json_decref(j);
    assert_int_equal(approvals_pending(g.approvals), 0);
    assert_true(audited("withdrawn", "withdrawn"));
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "cancelled");
    json_decref(t);
    /* A late approval finds no request; nothing goes upstream. */
    assert_int_not_equal(approvals_decide(g.approvals, k.approval, true, NULL, "uid 1 (op)"), 0);
    assert_int_equal(json_array_size(sent), 0);
}

static void cancelled_while_running_the_upstream_is_told(void **state)
{
    (void)state;
    struct task k = start_task();
    approvals_decide(g.approvals, k.approval, true, NULL, "uid 1 (op)");
    assert_int_equal(u.in_flight, 1);
    char params[200];
    snprintf(params, sizeof params, "\"taskId\":\"%s\"", k.id);
    json_t *j = ask("alice", "tasks/cancel", k.id, params);
    json_decref(j);
    json_t *last = json_array_get(sent, json_array_size(sent) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "method")),
                        "notifications/cancelled");
    assert_true(json_equal(json_object_get(json_object_get(last, "params"), "requestId"),
                           json_object_get(json_array_get(sent, 0), "id")));
    assert_int_equal(u.in_flight, 0);
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "cancelled");
    json_decref(t);
    assert_true(audited("cancelled", NULL));
}

static void an_upstream_error_fails_the_task(void **state)
{
    (void)state;
    struct task k = start_task();
    approvals_decide(g.approvals, k.approval, true, NULL, "uid 1 (op)");
    upstream_answers(0, "error", "{\"code\":-32001,\"message\":\"no such thing\"}");
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "failed");
    json_t *err = json_object_get(t, "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32001);
    assert_string_equal(json_string_value(json_object_get(err, "message")), "no such thing");
    json_decref(t);
    assert_true(audited("-32001", NULL));
}

static void an_input_request_cannot_be_relayed_by_a_task(void **state)
{
    (void)state;
    struct task k = start_task();
    approvals_decide(g.approvals, k.approval, true, NULL, "uid 1 (op)");
    upstream_answers(0, "result",
                     "{\"resultType\":\"input_required\",\"inputRequests\":{\"a\":{\"method\":"
                     "\"elicitation/create\",\"params\":{\"message\":\"Sure?\"}}}}");
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "completed");
    assert_string_equal(tool_error_of(t), "upstream_error");
    json_decref(t);
    assert_int_equal(u.in_flight, 0);
}

static void approved_with_no_free_slot_it_takes_the_next_one(void **state)
{
    (void)state;
    struct task k = start_task();
    u.in_flight = 1; /* another call holds the one slot */
    approvals_decide(g.approvals, k.approval, true, NULL, "uid 1 (op)");
    assert_int_equal(json_array_size(sent), 0);
    u.in_flight = 0; /* that call ended: the slot is the task's */
    gw_task_slot_free(&u);
    assert_int_equal(json_array_size(sent), 1);
    assert_int_equal(u.in_flight, 1);
    upstream_answers(0, "result", "{\"content\":[]}");
    json_t *t = get("alice", &k);
    assert_string_equal(status_of(t), "completed");
    json_decref(t);
    assert_int_equal(u.in_flight, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(approved_the_call_runs_and_its_answer_completes_the_task),
        T(denied_the_task_completes_with_approval_denied_and_nothing_is_sent),
        T(another_caller_gets_not_found),
        T(cancelled_while_waiting_the_request_leaves_the_queue),
        T(cancelled_while_running_the_upstream_is_told),
        T(an_upstream_error_fails_the_task),
        T(an_input_request_cannot_be_relayed_by_a_task),
        T(approved_with_no_free_slot_it_takes_the_next_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
