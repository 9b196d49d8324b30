/* Unit tests for relay.c: an upstream's sampling or elicitation request made while one of our
 * proxied calls runs there goes to the client that made the call, and only to it. Methods it
 * does not relay are left to the caller; with no call in flight, several calls it cannot tell
 * apart, or a client that did not declare the capability, the upstream gets a JSON-RPC error at
 * once (its tool never hangs). A 2026-07-28 caller is asked through an input-required result
 * (the upstream's own _meta left out); the call stays held at the upstream, one request at a
 * time, and the caller's retry sends its answer upstream under the upstream's own id and takes
 * the call over, once. A held call not resumed within the state's lifetime is cancelled
 * upstream. The upstream's transport is fake_httpup.h's httpup_* (httpup.o is not linked), the
 * engine runs behind fake_hreq.h. */
#include "fake_hreq.h"

#include <jansson.h>

#include "gwcall.h"
#include "gwcore.h"
#include "gwexpose.h"
#include "loop.h"
#include "mcp.h"
#include "metrics.h"
#include "relay.h"
#include "strmap.h"
#include "upstream.h"

#include "fake_gateway.h" /* sent, g, u, cfg, tool up__echo */

static int setup(void **state)
{
    (void)state;
    cfg.max_in_flight = 2;
    fake_gateway_setup((struct mcp_opts){.state_ttl_ms = 50});
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gw_relay_cleanup(&u);
    fake_gateway_teardown();
    return 0;
}

struct req {
    struct hreq r; /* first: a struct hreq * is the struct req */
    char body[4096];
};

/* A 2026-07-28 tools/call of up__echo whose client declared caps (JSON text); extra: more
 * params members (text after the arguments, may be ""). */
static struct hreq *call_echo(const char *caps, const char *extra)
{
    struct req *q = calloc(1, sizeof *q);
    struct hreq *r = &q->r;
    snprintf(q->body, sizeof q->body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"up__echo\",\"arguments\":{}%s,\"_meta\":{\"io.modelcontextprotocol/"
             "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":"
             "%s}}}",
             extra, caps);
    *r = (struct hreq){.accept = "application/json", .body = q->body, .version = "2026-07-28"};
    r->headers[0][0] = "Mcp-Method";
    r->headers[0][1] = "tools/call";
    r->headers[1][0] = "Mcp-Name";
    r->headers[1][1] = "up__echo";
    mcp_http_request(g.mcp, r);
    return r;
}

static void done(struct hreq *r)
{
    req_cleanup(r);
    free((struct req *)r);
}

/* The upstream sends a request of its own (id, method, params as JSON text), as over stdio. */
static void upstream_asks(const char *id, const char *method, const char *params)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"%s\",\"params\":%s}",
             id, method, params);
    up_receive(&u, msg, strlen(msg));
}

/* The upstream answers its i-th message with a text result. */
static void upstream_answers(size_t i, const char *text)
{
    char msg[512];
    snprintf(msg, sizeof msg,
             "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"content\":[{\"type\":\"text\","
             "\"text\":\"%s\"}]}}",
             (long long)json_integer_value(json_object_get(json_array_get(sent, i), "id")), text);
    up_receive(&u, msg, strlen(msg));
}

static json_t *last_sent(void)
{
    return json_array_get(sent, json_array_size(sent) - 1);
}

/* The last message the upstream got is the JSON-RPC error for its request id with code and
 * message. */
static void upstream_refused(const char *id, int code, const char *message)
{
    json_t *m = last_sent(), *err = json_object_get(m, "error");
    assert_string_equal(json_string_value(json_object_get(m, "id")), id);
    assert_int_equal(json_integer_value(json_object_get(err, "code")), code);
    assert_string_equal(json_string_value(json_object_get(err, "message")), message);
}

static json_t *reply_json(const struct hreq *r)
{
    assert_non_null(r->reply);
    json_t *j = json_loads(r->reply, 0, NULL);
    assert_non_null(j);
    return j;
}

#define SAMPLING "{\"sampling\":{}}"
#define ASK "{\"messages\":[],\"maxTokens\":5,\"_meta\":{\"upstream-token\":7}}"

static void the_capability_each_request_needs(void **state)
{
    (void)state;
    const char *why;
    json_t *p = json_pack("{s:[]}", "tools");
    assert_string_equal(gw_relay_needed_capability("sampling/createMessage", NULL, &why),
                        "sampling");
    assert_string_equal(why, "the calling client does not support sampling");
    assert_string_equal(gw_relay_needed_capability("sampling/createMessage", p, &why),
                        "sampling.tools");
    assert_string_equal(why, "the calling client does not support sampling with tools");
    json_decref(p);
    p = json_pack("{s:s}", "mode", "url");
    assert_string_equal(gw_relay_needed_capability("elicitation/create", p, &why),
                        "elicitation.url");
    assert_string_equal(why, "the calling client does not support url-mode elicitation");
    json_decref(p);
    /* no mode is form mode */
    assert_string_equal(gw_relay_needed_capability("elicitation/create", NULL, &why),
                        "elicitation.form");
    assert_string_equal(why, "the calling client does not support elicitation");
}

static void other_methods_are_left_to_the_caller(void **state)
{
    (void)state;
    json_t *msg =
        json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", "r1", "method", "roots/list");
    assert_false(gw_relay_request(&u, msg, "roots/list", 0));
    assert_int_equal(json_array_size(sent), 0);
    json_decref(msg);
}

static void no_call_in_flight_the_upstream_is_refused_at_once(void **state)
{
    (void)state;
    upstream_asks("s1", "sampling/createMessage", ASK);
    assert_int_equal(json_array_size(sent), 1);
    upstream_refused("s1", -32603, "sampling/createMessage not relayed: no tool call is in flight");
}

static void two_calls_at_a_stdio_like_upstream_are_not_guessed_between(void **state)
{
    (void)state;
    struct hreq *a = call_echo(SAMPLING, ""), *b = call_echo(SAMPLING, "");
    assert_int_equal(json_array_size(sent), 2);
    upstream_asks("s1", "elicitation/create", "{\"message\":\"Sure?\"}");
    upstream_refused("s1", -32603,
                     "elicitation/create not relayed: several calls are in flight at this stdio "
                     "upstream and the request does not say which it belongs to");
    assert_null(a->reply); /* neither caller was asked */
    assert_null(b->reply);
    upstream_answers(0, "a");
    upstream_answers(1, "b");
    done(a);
    done(b);
}

static void a_client_without_the_capability_is_not_asked(void **state)
{
    (void)state;
    struct hreq *r = call_echo("{\"elicitation\":{}}", "");
    upstream_asks("s1", "sampling/createMessage", ASK);
    upstream_refused("s1", -32601,
                     "sampling/createMessage not relayed: the calling client does not support "
                     "sampling");
    assert_null(r->reply); /* the call goes on */
    upstream_answers(0, "fine");
    assert_non_null(strstr(r->reply, "fine"));
    done(r);
}

/* A held call: the caller got an input-required result carrying the upstream's request; the
 * requestState of its retry is returned (owned). */
static char *held_call(void)
{
    struct hreq *r = call_echo(SAMPLING, "");
    upstream_asks("s1", "sampling/createMessage", ASK);
    json_t *j = reply_json(r), *res = json_object_get(j, "result");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "input_required");
    json_t *ask = json_object_get(json_object_get(res, "inputRequests"), "sampling");
    assert_string_equal(json_string_value(json_object_get(ask, "method")),
                        "sampling/createMessage");
    json_t *params = json_object_get(ask, "params");
    assert_int_equal(json_integer_value(json_object_get(params, "maxTokens")), 5);
    assert_null(json_object_get(params, "_meta")); /* the upstream's tokens stay there */
    char *rs = strdup(json_string_value(json_object_get(res, "requestState")));
    json_decref(j);
    done(r);
    assert_int_equal(strmap_count(u.held), 1);
    assert_int_equal(u.in_flight, 1);           /* the held call keeps its slot */
    assert_int_equal(json_array_size(sent), 1); /* only the tools/call so far */
    return rs;
}

static void a_2026_caller_answers_through_its_retry_once(void **state)
{
    (void)state;
    char *rs = held_call(), extra[2048];
    snprintf(extra, sizeof extra,
             ",\"inputResponses\":{\"sampling\":{\"role\":\"assistant\",\"content\":{\"type\":"
             "\"text\",\"text\":\"42\"},\"model\":\"m\"}},\"requestState\":\"%s\"",
             rs);
    struct hreq *retry = call_echo(SAMPLING, extra);
    /* The answer went upstream under the upstream's own id; no second tools/call. */
    assert_int_equal(json_array_size(sent), 2);
    json_t *answer = last_sent();
    assert_string_equal(json_string_value(json_object_get(answer, "id")), "s1");
    json_t *content = json_object_get(json_object_get(answer, "result"), "content");
    assert_string_equal(json_string_value(json_object_get(content, "text")), "42");
    assert_int_equal(strmap_count(u.held), 0);
    assert_null(retry->reply);
    /* The upstream's answer to the held call is the retry's. */
    upstream_answers(0, "the answer is 42");
    assert_non_null(strstr(retry->reply, "the answer is 42"));
    done(retry);

    /* The same state again: the held call is gone (a tool error saying so, nothing sent). */
    struct hreq *again = call_echo(SAMPLING, extra);
    json_t *j = reply_json(again), *res = json_object_get(j, "result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    json_t *sc = json_object_get(res, "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "error")), "not_found");
    assert_non_null(strstr(json_string_value(json_object_get(sc, "message")),
                           "no held call of upstream up matches this requestState"));
    assert_int_equal(json_array_size(sent), 2);
    json_decref(j);
    done(again);
    free(rs);
}

static void a_second_request_during_a_held_call_is_refused(void **state)
{
    (void)state;
    char *rs = held_call();
    upstream_asks("s2", "sampling/createMessage", ASK);
    upstream_refused("s2", -32603,
                     "sampling/createMessage not relayed: the calling client is already "
                     "answering another request of this call");
    assert_int_equal(strmap_count(u.held), 1);
    free(rs);
}

static void a_held_call_not_resumed_in_time_is_cancelled_upstream(void **state)
{
    (void)state;
    char *rs = held_call();
    for (int i = 0; i < 50 && strmap_count(u.held); i++)
        loop_once(loop, 20); /* the state lives 50 ms here */
    assert_int_equal(strmap_count(u.held), 0);
    /* The upstream's request is answered with an error, its call cancelled: no slot held. */
    bool refused = false, cancelled = false;
    size_t i;
    json_t *m;
    json_array_foreach(sent, i, m)
    {
        const char *method = json_string_value(json_object_get(m, "method"));
        refused |=
            json_is_string(json_object_get(m, "id")) &&
            strcmp(json_string_value(json_object_get(m, "id")), "s1") == 0 &&
            strstr(json_string_value(json_object_get(json_object_get(m, "error"), "message")),
                   "did not answer in time") != NULL;
        cancelled |= method && strcmp(method, "notifications/cancelled") == 0;
    }
    assert_true(refused);
    assert_true(cancelled);
    assert_int_equal(u.in_flight, 0);
    free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_capability_each_request_needs),
        cmocka_unit_test_setup_teardown(other_methods_are_left_to_the_caller, setup, teardown),
        cmocka_unit_test_setup_teardown(no_call_in_flight_the_upstream_is_refused_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(two_calls_at_a_stdio_like_upstream_are_not_guessed_between,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_client_without_the_capability_is_not_asked, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_2026_caller_answers_through_its_retry_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_second_request_during_a_held_call_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_held_call_not_resumed_in_time_is_cancelled_upstream,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
