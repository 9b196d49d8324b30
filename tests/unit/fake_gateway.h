/* fake_gateway.h — one gateway with one ready url upstream "up" (its transport fake_httpup.h,
 * which records in `sent` every message the upstream is sent) and one exposed tool up__echo
 * (the upstream's "echo"), for the unit programs of the call pipeline. Include it once; call
 * fake_gateway_setup() from a setup and fake_gateway_teardown() last in the teardown. */
#ifndef FAKE_GATEWAY_H
#define FAKE_GATEWAY_H
#include <jansson.h>
#include <stdbool.h>

#include "gwcall.h"
#include "gwcore.h"
#include "loop.h"
#include "mcp.h"
#include "metrics.h"
#include "relay.h"
#include "strmap.h"
#include "upstream.h"

static json_t *sent; /* every message the upstream got, in order */

static bool fake_httpup_send(json_t *msg)
{
    json_array_append(sent, msg);
    return true;
}
#include "fake_httpup.h"

static const struct up_events events = {.progress = gw_call_progress,
                                        .request = gw_relay_request,
                                        .fail_waiting = gw_call_fail_waiting,
                                        .slot_free = gw_call_next,
                                        .relisted = gw_pins_rediscovered,
                                        .cleanup = gw_relay_cleanup};
static struct loop *loop;
static struct gateway g;
static struct gw_upstream cfg = {.name = "up",
                                 .kind = GW_HTTP,
                                 .url = "http://127.0.0.1:1/mcp",
                                 .prefix = "up__",
                                 .timeout_s = 60,
                                 .max_in_flight = 1};
static struct upstream u;
static char tool_name[] = "echo", tool_exposed[] = "up__echo";
static struct gw_tool tool = {.name = tool_name, .exposed = tool_exposed};

/* The engine's options are o (name and version filled in); g is zeroed first, so a caller sets
 * its own gateway fields after this. */
static void fake_gateway_setup(struct mcp_opts o)
{
    loop = loop_new();
    sent = json_array();
    o.name = "t";
    o.version = "1";
    g = (struct gateway){.loop = loop, .events = &events};
    g.mcp = mcp_new(loop, &o);
    g.m_calls = metric_new("c", "c", METRIC_COUNTER, NULL, 0);
    g.m_errors = metric_new("e", "e", METRIC_COUNTER, NULL, 0);
    static const double bounds[] = {1};
    g.m_seconds = metric_new("s", "s", METRIC_HISTOGRAM, bounds, 1);
    u = (struct upstream){.gw = &g,
                          .cfg = &cfg,
                          .loop = loop,
                          .state = UP_READY,
                          .http = httpup_new(&cfg, loop, NULL, &u),
                          .pending = strmap_new(),
                          .held = strmap_new(),
                          .rounds = strmap_new()};
    g.ups = &u;
    g.nup = 1;
    tool.up = &u;
    mcp_add_tool(g.mcp, &(struct mcp_tool_def){.name = "up__echo",
                                               .input_schema = json_pack("{s:s}", "type", "object"),
                                               .handler = gw_call_handler,
                                               .arg = &tool});
}

static void fake_gateway_teardown(void)
{
    mcp_free(g.mcp);
    up_pending_free(&u);
    gw_mrtr_cleanup(&u);
    strmap_free(u.held);
    metric_free(g.m_calls);
    metric_free(g.m_errors);
    metric_free(g.m_seconds);
    json_decref(sent);
    loop_free(loop);
}

#endif
