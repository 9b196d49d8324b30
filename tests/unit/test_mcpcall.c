/* Unit tests for the call lifecycle in the MCP engine (src/mcp/call.c): answer, progress,
 * deadline, hang-up, abort while streaming, and who may cancel. The seam is the link:
 * fake_hreq.h defines the hreq_* functions the engine calls, so no socket is involved. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "httpd.h"
#include "loop.h"
#include "mcp.h"
#include "mcp_internal.h" /* the session sweep timer, to see when it is armed */

#include "fake_hreq.h"

/* ---- a tool that holds its call until the test finishes it ---- */

struct probe {
    struct mcp_call *call;
    int cancelled;
};

static void on_cancel(struct mcp_call *c, void *arg)
{
    struct probe *p = arg;
    assert_ptr_equal(c, p->call);
    p->cancelled++;
    p->call = NULL;
}

static void hold(struct mcp_call *c, json_t *args, void *arg)
{
    struct probe *p = arg;
    (void)args;
    p->call = c;
    mcp_call_on_cancel(c, on_cancel, p);
}

static struct loop *loop;

static struct mcp_server *server(struct probe *p, bool sessions, unsigned timeout_ms)
{
    struct mcp_opts o = {
        .name = "t", .version = "1", .sessions = sessions, .call_timeout_ms = timeout_ms};
    struct mcp_server *s = mcp_new(loop, &o);
    struct mcp_tool_def d = {.name = "hold",
                             .input_schema = json_pack("{s:s}", "type", "object"),
                             .handler = hold,
                             .arg = p};
    mcp_add_tool(s, &d);
    return s;
}

static const char *JSON_ONLY = "application/json";
static const char *SSE = "application/json, text/event-stream";
#define CALL(id, extra)                                                                            \
    "{\"jsonrpc\":\"2.0\",\"id\":" id                                                              \
    ",\"method\":\"tools/call\",\"params\":{\"name\":\"hold\"" extra "}}"
#define WITH_TOKEN ",\"_meta\":{\"progressToken\":\"tok\"}"
#define CANCEL(id)                                                                                 \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":" id "}}"

static void post(struct mcp_server *s, struct hreq *r, const char *accept, const char *session,
                 const char *body)
{
    r->accept = accept;
    r->session = session;
    r->body = body;
    mcp_http_request(s, r);
}

static int setup(void **state)
{
    (void)state;
    loop = loop_new();
    return loop == NULL;
}

static int teardown(void **state)
{
    (void)state;
    loop_free(loop);
    return 0;
}

/* ---- tests ---- */

static void answer_goes_out_as_json(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, false, 0);
    struct hreq r = {0};
    post(s, &r, JSON_ONLY, NULL, CALL("0", ""));
    assert_non_null(p.call);
    assert_null(r.reply); /* held */
    assert_int_equal(mcp_calls_in_flight(s), 1);
    mcp_call_tool_result_take(p.call, json_pack("{s:s}", "ok", "yes"));
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.reply, "\"structuredContent\":{\"ok\":\"yes\"}"));
    assert_int_equal(mcp_calls_in_flight(s), 0);
    assert_int_equal(mcp_calls_active(s), 0);
    req_cleanup(&r);
    mcp_free(s);
}

static void progress_is_reported_sent_only_when_it_was(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, false, 0);
    struct hreq r = {0};

    /* A client that takes JSON only cannot get a notification. */
    post(s, &r, JSON_ONLY, NULL, CALL("0", WITH_TOKEN));
    assert_false(mcp_call_progress(p.call, 1, 0, "step"));
    assert_false(r.streaming);
    mcp_call_tool_result_take(p.call, json_object());
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.reply, "\"result\""));
    req_cleanup(&r);

    /* One that takes a stream gets it; a value that does not increase is not sent. */
    struct hreq r2 = {0};
    post(s, &r2, SSE, NULL, CALL("1", WITH_TOKEN));
    assert_true(mcp_call_progress(p.call, 1, 0, "step"));
    assert_true(r2.streaming);
    assert_non_null(strstr(r2.stream, "notifications/progress"));
    size_t before = r2.stream_len;
    assert_false(mcp_call_progress(p.call, 1, 0, "again"));
    assert_int_equal(r2.stream_len, before);
    mcp_call_tool_result_take(p.call, json_object());
    assert_non_null(strstr(r2.stream, "\"id\":1,\"result\""));
    assert_true(r2.ended);

    /* Without a token nothing is sent. */
    struct hreq r3 = {0};
    post(s, &r3, SSE, NULL, CALL("2", ""));
    assert_false(mcp_call_progress(p.call, 1, 0, "step"));
    assert_false(r3.streaming);
    mcp_call_tool_result_take(p.call, json_object());
    req_cleanup(&r2);
    req_cleanup(&r3);
    mcp_free(s);
}

/* "Unavailable, retry after N s": a lone JSON answer is HTTP 503 with Retry-After and -32004
 * with data.retryAfter, in either era; on a stream already open, or in a batch, the error alone
 * (the response is 200 by then). */
static void unavailable_is_503_with_retry_after_unless_streamed(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, false, 0);

    struct hreq r = {0};
    post(s, &r, SSE, NULL, CALL("0", ""));
    mcp_call_unavailable(p.call, 3, "Temporarily unavailable: the store is away");
    assert_int_equal(r.status, 503);
    assert_string_equal(r.retry_after, "3");
    assert_non_null(strstr(r.reply, "\"id\":0"));
    assert_non_null(strstr(r.reply, "\"code\":-32004"));
    assert_non_null(strstr(r.reply, "\"data\":{\"retryAfter\":3}"));
    assert_int_equal(mcp_calls_in_flight(s), 0);
    req_cleanup(&r);

    /* 0 seconds would tell a client to hammer: at least 1. */
    struct hreq r0 = {0};
    post(s, &r0, JSON_ONLY, NULL, CALL("1", ""));
    mcp_call_unavailable(p.call, 0, "Temporarily unavailable");
    assert_int_equal(r0.status, 503);
    assert_string_equal(r0.retry_after, "1");
    req_cleanup(&r0);

    /* 2026-07-28: the same 503. */
    struct hreq rm = {.version = "2026-07-28",
                      .headers = {{"Mcp-Method", "tools/call"}, {"Mcp-Name", "hold"}}};
    post(s, &rm, JSON_ONLY, NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
         "\"hold\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
         "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    assert_non_null(p.call);
    mcp_call_unavailable(p.call, 2, "Temporarily unavailable");
    assert_int_equal(rm.status, 503);
    assert_string_equal(rm.retry_after, "2");
    assert_non_null(strstr(rm.reply, "\"code\":-32004"));
    req_cleanup(&rm);

    /* A stream already open: the error on it, no 503 and no header. */
    struct hreq rs = {0};
    post(s, &rs, SSE, NULL, CALL("2", WITH_TOKEN));
    assert_true(mcp_call_progress(p.call, 1, 0, "step"));
    mcp_call_unavailable(p.call, 4, "Temporarily unavailable");
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.retry_after, "");
    assert_non_null(strstr(rs.stream, "\"code\":-32004"));
    assert_non_null(strstr(rs.stream, "\"retryAfter\":4"));
    assert_true(rs.ended);
    req_cleanup(&rs);

    /* A batch (2025-03-26): the member's error, in a 200 answer. */
    struct hreq rb = {.version = "2025-03-26"};
    post(s, &rb, JSON_ONLY, NULL, "[" CALL("3", "") "]");
    mcp_call_unavailable(p.call, 5, "Temporarily unavailable");
    assert_int_equal(rb.status, 200);
    assert_int_equal(rb.reply[0], '[');
    assert_string_equal(rb.retry_after, "");
    assert_non_null(strstr(rb.reply, "\"code\":-32004"));
    req_cleanup(&rb);
    mcp_free(s);
}

static void deadline_cancels_and_answers_32001(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, false, 20);
    struct hreq r = {0};
    post(s, &r, JSON_ONLY, NULL, CALL("0", ""));
    for (int i = 0; i < 100 && r.reply == NULL; i++)
        loop_once(loop, 10);
    assert_int_equal(p.cancelled, 1);
    assert_non_null(r.reply);
    assert_non_null(strstr(r.reply, "-32001"));
    assert_int_equal(mcp_calls_active(s), 0);
    req_cleanup(&r);
    mcp_free(s);
}

static void hang_up_cancels_the_call(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, false, 0);
    struct hreq r = {0};
    post(s, &r, JSON_ONLY, NULL, CALL("0", ""));
    hang_up(&r);
    assert_int_equal(p.cancelled, 1);
    assert_null(r.reply);
    assert_int_equal(mcp_calls_in_flight(s), 0);
    assert_int_equal(mcp_calls_active(s), 0);
    req_cleanup(&r);
    mcp_free(s);
}

static void abort_while_streaming_cancels_and_writes_nothing_more(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, false, 0);
    struct hreq r = {0};
    post(s, &r, SSE, NULL, CALL("0", WITH_TOKEN));
    assert_true(mcp_call_progress(p.call, 1, 2, "half way"));
    assert_true(r.streaming);
    size_t before = r.stream_len;
    hang_up(&r); /* the stream's client went away (or stopped reading) */
    assert_int_equal(p.cancelled, 1);
    assert_int_equal(r.stream_len, before);
    assert_int_equal(mcp_calls_active(s), 0);
    req_cleanup(&r);
    mcp_free(s);
}

static void stateless_cancel_by_id_cancels_nothing(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, false, 0);
    struct hreq a = {0}, b = {0};
    post(s, &a, JSON_ONLY, NULL, CALL("0", ""));
    post(s, &b, JSON_ONLY, NULL, CANCEL("0")); /* anyone could have sent it */
    assert_int_equal(b.status, 202);
    assert_int_equal(p.cancelled, 0);
    mcp_call_tool_result_take(p.call, json_object());
    assert_int_equal(a.status, 200);
    assert_non_null(strstr(a.reply, "\"result\""));
    req_cleanup(&a);
    req_cleanup(&b);
    mcp_free(s);
}

/* The idle sweep is armed only while a session exists: a server in session mode that has none
 * makes no wake-ups (it used to run every minute from the start). */
static void session_sweep_armed_only_with_sessions(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, true, 0);
    assert_null(s->sweep);
    struct hreq init = {0};
    post(s, &init, JSON_ONLY, NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
         "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
         "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    assert_int_equal(strlen(init.session_out), 64);
    assert_non_null(s->sweep);
    req_cleanup(&init);
    mcp_free(s);
}

static void session_cancel_reaches_only_its_own_call(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, true, 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
    struct hreq ia = {0}, ib = {0}, a = {0}, cb = {0}, ca = {0};
    post(s, &ia, JSON_ONLY, NULL, init);
    post(s, &ib, JSON_ONLY, NULL, init);
    assert_int_equal(strlen(ia.session_out), 64);
    assert_string_not_equal(ia.session_out, ib.session_out);

    post(s, &a, JSON_ONLY, ia.session_out, CALL("1", ""));
    post(s, &cb, JSON_ONLY, ib.session_out, CANCEL("1")); /* another session: not its call */
    assert_int_equal(p.cancelled, 0);
    post(s, &ca, JSON_ONLY, ia.session_out, CANCEL("1")); /* its own session */
    assert_int_equal(p.cancelled, 1);
    assert_int_equal(a.status, 202); /* a cancelled request gets no answer */
    assert_int_equal(mcp_calls_active(s), 0);
    struct hreq *all[] = {&ia, &ib, &a, &cb, &ca};
    for (size_t i = 0; i < 5; i++)
        req_cleanup(all[i]);
    mcp_free(s);
}

/* With a replica name, every session id starts with it and a dot (what the proxy routes by),
 * and the longest such id still finds its own calls to cancel. A name the proxy could not
 * match is refused: ids stay the bare hex. */
static void session_ids_carry_the_replica_name(void **state)
{
    (void)state;
    struct probe p = {0};
    struct mcp_server *s = server(&p, true, 0);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
    struct hreq i1 = {0}, i2 = {0}, i3 = {0}, c = {0}, cc = {0};
    mcp_set_replica_name(s, "replica-0123"); /* the longest: 12 */
    post(s, &i1, JSON_ONLY, NULL, init);
    assert_int_equal(strlen(i1.session_out), 13 + 64);
    assert_memory_equal(i1.session_out, "replica-0123.", 13);
    assert_int_equal(strspn(i1.session_out + 13, "0123456789abcdef"), 64);
    post(s, &c, JSON_ONLY, i1.session_out, CALL("\"a-long-request-id\"", ""));
    post(s, &cc, JSON_ONLY, i1.session_out, CANCEL("\"a-long-request-id\""));
    assert_int_equal(p.cancelled, 1);
    mcp_set_replica_name(s, "B");
    post(s, &i2, JSON_ONLY, NULL, init);
    assert_int_equal(strlen(i2.session_out), 64);
    mcp_set_replica_name(s, "replica-01234");
    post(s, &i3, JSON_ONLY, NULL, init);
    assert_int_equal(strlen(i3.session_out), 64);
    struct hreq *all[] = {&i1, &i2, &i3, &c, &cc};
    for (size_t i = 0; i < 5; i++)
        req_cleanup(all[i]);
    mcp_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(answer_goes_out_as_json),
        cmocka_unit_test(progress_is_reported_sent_only_when_it_was),
        cmocka_unit_test(unavailable_is_503_with_retry_after_unless_streamed),
        cmocka_unit_test(deadline_cancels_and_answers_32001),
        cmocka_unit_test(hang_up_cancels_the_call),
        cmocka_unit_test(abort_while_streaming_cancels_and_writes_nothing_more),
        cmocka_unit_test(stateless_cancel_by_id_cancels_nothing),
        cmocka_unit_test(session_cancel_reaches_only_its_own_call),
        cmocka_unit_test(session_sweep_armed_only_with_sessions),
        cmocka_unit_test(session_ids_carry_the_replica_name),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
