/* Unit tests for the gateway's call pipeline (gwcall.c), which links without the rest of the
 * gateway's start-up: a client's tools/call of an exposed tool goes to its upstream under the
 * upstream's own name, with our id as the progress token when the client asked for progress;
 * calls beyond max_in_flight wait and go, oldest first, as slots free; an upstream that is down
 * answers at once with upstream_unavailable and is sent nothing. The upstream's transport is
 * fake_httpup.h's httpup_* (httpup.o is not linked), the engine runs behind fake_hreq.h. */
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

#include "fake_gateway.h" /* sent, g, u, cfg (max_in_flight 1), tool up__echo */

static int setup(void **state)
{
    (void)state;
    fake_gateway_setup((struct mcp_opts){0});
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_gateway_teardown();
    return 0;
}

/* A 2026-07-28 tools/call of up__echo with args (JSON text) and meta members (text after the
 * version's, may be ""); the request is returned so its reply can be read when it comes. */
struct req {
    struct hreq r; /* first: a struct hreq * is the struct req */
    char body[1024];
};

static struct hreq *call_echo(const char *args, const char *meta)
{
    struct req *q = calloc(1, sizeof *q);
    struct hreq *r = &q->r;
    char *body = q->body;
    snprintf(body, sizeof q->body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"up__echo\",\"arguments\":%s,\"_meta\":{\"io.modelcontextprotocol/"
             "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":"
             "{}%s}}}",
             args, meta);
    *r = (struct hreq){.accept = "application/json", .body = body, .version = "2026-07-28"};
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

static const char *reply_text(const struct hreq *r)
{
    static char text[256];
    json_t *j = json_loads(r->reply, 0, NULL);
    json_t *content = json_object_get(json_object_get(j, "result"), "content");
    snprintf(text, sizeof text, "%s",
             json_string_value(json_object_get(json_array_get(content, 0), "text")));
    json_decref(j);
    return text;
}

static void a_call_goes_under_the_upstreams_name_with_our_progress_token(void **state)
{
    (void)state;
    struct hreq *r = call_echo("{\"x\":1}", ",\"progressToken\":\"client-token\"");
    assert_null(r->reply); /* waiting for the upstream */
    assert_int_equal(json_array_size(sent), 1);
    json_t *msg = json_array_get(sent, 0), *params = json_object_get(msg, "params");
    assert_string_equal(json_string_value(json_object_get(msg, "method")), "tools/call");
    assert_string_equal(json_string_value(json_object_get(params, "name")), "echo");
    json_t *want = json_pack("{s:i}", "x", 1);
    assert_true(json_equal(json_object_get(params, "arguments"), want));
    json_decref(want);
    /* the client's token stays here; upstream, our id stands for it */
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    assert_true(json_is_integer(token));
    assert_int_equal(json_integer_value(token), json_integer_value(json_object_get(msg, "id")));
    assert_int_equal(u.in_flight, 1);
    upstream_answers(0, "hi");
    assert_non_null(r->reply);
    assert_string_equal(reply_text(r), "hi");
    assert_int_equal(u.in_flight, 0);
    done(r);
}

static void no_progress_token_upstream_when_none_was_asked(void **state)
{
    (void)state;
    struct hreq *r = call_echo("{}", "");
    json_t *params = json_object_get(json_array_get(sent, 0), "params");
    assert_null(json_object_get(json_object_get(params, "_meta"), "progressToken"));
    upstream_answers(0, "ok");
    assert_string_equal(reply_text(r), "ok");
    done(r);
}

static void calls_beyond_max_in_flight_wait_their_turn(void **state)
{
    (void)state;
    struct hreq *first = call_echo("{\"n\":1}", ""), *second = call_echo("{\"n\":2}", "");
    assert_int_equal(json_array_size(sent), 1); /* max_in_flight 1: the second waits */
    assert_int_equal(u.waiting, 1);
    assert_null(second->reply);
    upstream_answers(0, "one");
    assert_string_equal(reply_text(first), "one");
    assert_int_equal(json_array_size(sent), 2); /* the slot freed: the second went */
    assert_int_equal(u.waiting, 0);
    json_t *args = json_object_get(json_object_get(json_array_get(sent, 1), "params"), "arguments");
    assert_int_equal(json_integer_value(json_object_get(args, "n")), 2);
    upstream_answers(1, "two");
    assert_string_equal(reply_text(second), "two");
    done(first);
    done(second);
}

static void an_upstream_that_is_down_gets_nothing(void **state)
{
    (void)state;
    u.state = UP_DOWN;
    struct hreq *r = call_echo("{}", "");
    assert_int_equal(json_array_size(sent), 0);
    assert_non_null(r->reply);
    json_t *j = json_loads(r->reply, 0, NULL);
    json_t *result = json_object_get(j, "result");
    assert_true(json_is_true(json_object_get(result, "isError")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(result, "structuredContent"), "error")),
        "upstream_unavailable");
    json_decref(j);
    done(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_call_goes_under_the_upstreams_name_with_our_progress_token, setup, teardown),
        cmocka_unit_test_setup_teardown(no_progress_token_upstream_when_none_was_asked, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(calls_beyond_max_in_flight_wait_their_turn, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_upstream_that_is_down_gets_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
