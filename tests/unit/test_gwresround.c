/* Unit test for gwresources.c's resources/read retry of a 2026-07-28 input round whose send
 * fails at once (the message never left): the round it took must be given back, so the
 * caller's answers stay good for another try (as a tools/call's do, gwcall.c send_call). From
 * outside this cannot be reached: the read is refused before its round is taken when the
 * upstream is known down, and a url upstream's send fails at once only when libcurl refuses a
 * handle. So the seam is the link: fake_httpup.h defines the httpup_* functions (httpup.o is not
 * linked), this file's send fails on demand, and the engine runs behind fake_hreq.h. */
#include "fake_hreq.h"

#include <jansson.h>

#include "gwcall.h"
#include "gwcore.h"
#include "gwexpose.h"
#include "gwsurface.h"
#include "loop.h"
#include "mcp.h"
#include "relay.h"
#include "strmap.h"
#include "upstream.h"

/* ---- the url upstream's transport (fake_httpup.h), as this test wants it ---- */

static bool send_works = true;
static json_t *last_sent; /* the last message the upstream got */

static bool fake_httpup_send(json_t *msg)
{
    if (!send_works)
        return false;
    json_decref(last_sent);
    last_sent = json_incref(msg);
    return true;
}
#include "fake_httpup.h"

/* ---- one gateway with one ready 2026-07-28 url upstream offering doc://x ---- */

#define DOC "doc://x"
static struct loop *loop;
static struct gateway g;
static struct gw_upstream cfg = {.name = "up",
                                 .kind = GW_HTTP,
                                 .url = "http://127.0.0.1:1/mcp",
                                 .prefix = "up__",
                                 .timeout_s = 60,
                                 .max_in_flight = 16,
                                 .resources = true};
static struct upstream u;

static int setup(void **state)
{
    (void)state;
    loop = loop_new();
    struct mcp_opts o = {.name = "t", .version = "1"};
    g.loop = loop;
    g.mcp = mcp_new(loop, &o);
    u = (struct upstream){.gw = &g,
                          .cfg = &cfg,
                          .loop = loop,
                          .state = UP_READY,
                          .modern = true,
                          .http = httpup_new(&cfg, loop, NULL, &u),
                          .pending = strmap_new(),
                          .held = strmap_new(),
                          .rounds = strmap_new(),
                          .resources = json_pack("[{s:s}]", "uri", DOC),
                          .templates = json_array(),
                          .prompts = json_array()};
    g.ups = &u;
    g.nup = 1;
    struct gw_plan_upstream in = {.cfg = &cfg,
                                  .tools = NULL,
                                  .resources = u.resources,
                                  .templates = u.templates,
                                  .prompts = u.prompts};
    struct gw_plan plan;
    gw_plan_surface(&in, 1, NULL, 0, &plan);
    bool ok = gw_resources_expose(&g, &plan);
    gw_plan_free(&plan);
    return ok ? 0 : 1;
}

static int teardown(void **state)
{
    (void)state;
    mcp_free(g.mcp);
    gw_mrtr_cleanup(&u);
    strmap_free(u.held);
    strmap_free(u.pending);
    json_decref(u.resources);
    json_decref(u.templates);
    json_decref(u.prompts);
    gw_resources_free(&g);
    json_decref(last_sent);
    loop_free(loop);
    return 0;
}

#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{\"form\":{}}}}"

/* The upstream answers the request it got last with result (JSON text). */
static void upstream_answers(const char *result)
{
    assert_non_null(last_sent);
    char msg[2048];
    snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}",
             (long long)json_integer_value(json_object_get(last_sent, "id")), result);
    up_receive(&u, msg, strlen(msg));
}

/* A 2026-07-28 resources/read of DOC (extra: inputResponses and requestState) and its answer:
 * the gateway's own at once when upstream_result is NULL, else the read waits for the
 * upstream, which answers upstream_result (JSON text). */
static json_t *read_doc(const char *extra, const char *upstream_result)
{
    char body[4096];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":"
             "{\"uri\":\"" DOC "\"%s," META "}}",
             extra);
    struct hreq r = {.accept = "application/json", .body = body, .version = "2026-07-28"};
    r.headers[0][0] = "Mcp-Method";
    r.headers[0][1] = "resources/read";
    r.headers[1][0] = "Mcp-Name";
    r.headers[1][1] = DOC;
    mcp_http_request(g.mcp, &r);
    if (upstream_result) {
        assert_null(r.reply); /* sent upstream, waiting for its answer */
        upstream_answers(upstream_result);
    }
    assert_non_null(r.reply);
    json_t *j = json_loads(r.reply, 0, NULL);
    assert_non_null(j);
    req_cleanup(&r);
    return j;
}

static json_int_t error_code(json_t *j)
{
    return json_integer_value(json_object_get(json_object_get(j, "error"), "code"));
}

static void a_round_whose_retry_was_never_sent_is_given_back(void **state)
{
    (void)state;
    json_t *first =
        read_doc("", "{\"resultType\":\"input_required\",\"requestState\":\"s1\",\"inputRequests\":"
                     "{\"ok\":{\"method\":\"elicitation/create\",\"params\":{\"message\":\"Sure?\","
                     "\"requestedSchema\":{\"type\":\"object\"}}}}}");
    json_t *res = json_object_get(first, "result");
    assert_string_equal(json_string_value(json_object_get(res, "resultType")), "input_required");
    const char *rs = json_string_value(json_object_get(res, "requestState"));
    assert_non_null(rs);
    char extra[3000];
    snprintf(extra, sizeof extra,
             ",\"inputResponses\":{\"ok\":{\"action\":\"accept\",\"content\":{}}},"
             "\"requestState\":\"%s\"",
             rs);

    /* The retry's send fails at once: unavailable, and nothing reached the upstream. */
    json_t *before = last_sent;
    send_works = false;
    json_t *failed = read_doc(extra, NULL);
    send_works = true;
    assert_ptr_equal(last_sent, before);
    assert_int_equal(error_code(failed), -32603);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(failed, "error"), "message")),
               "is not available"));

    /* The same answers go again: the round is still open (before the fix this retry was
     * refused at once, -32602), and the upstream gets them with its state. */
    json_t *done = read_doc(extra, "{\"contents\":[{\"uri\":\"" DOC "\","
                                   "\"text\":\"read after the answer\"}]}");
    json_t *params = json_object_get(last_sent, "params");
    assert_string_equal(json_string_value(json_object_get(params, "requestState")), "s1");
    assert_non_null(json_object_get(json_object_get(params, "inputResponses"), "ok"));
    json_t *contents = json_object_get(json_object_get(done, "result"), "contents");
    assert_string_equal(json_string_value(json_object_get(json_array_get(contents, 0), "text")),
                        "read after the answer");

    /* Sent and answered, it is used up. */
    json_t *again = read_doc(extra, NULL);
    assert_int_equal(error_code(again), -32602);
    json_decref(first);
    json_decref(failed);
    json_decref(done);
    json_decref(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_round_whose_retry_was_never_sent_is_given_back, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
