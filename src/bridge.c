/* bridge.c — Hermes bridge tools. */
#include "bridge.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mcp.h"

static void list_agents(struct mcp_call *call, json_t *args, void *arg)
{
    const struct config *cfg = arg;
    (void)cfg;

    if (json_object_size(args) != 0) {
        mcp_call_tool_error(call, "invalid_arguments", "list_agents takes no arguments");
        return;
    }
    /* Without an agents registry there is one synthetic default agent (seed 000). */
    json_t *agent = json_pack("{s:s, s:s, s:[], s:s, s:b, s:b}", "name", "hermes", "description",
                              "Local Hermes Agent", "capabilities", "kind", "local", "available",
                              0, "default", 1);
    json_object_set_new(agent, "unavailable_reason", json_string("missing_credentials"));
    mcp_call_tool_result_take(call, json_pack("{s:[o], s:s, s:i, s:s}", "agents", agent,
                                              "default", "hermes", "count", 1, "degraded",
                                              "no_registry"));
}

void bridge_register(struct mcp_server *mcp, struct loop *l, struct config *cfg)
{
    (void)l;
    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "list_agents",
        .title = "List agents",
        .description = "List the Hermes agents this bridge can delegate to, with their "
                       "capabilities and availability. Read-only; never returns credentials.",
        .input_schema = json_pack("{s:s, s:{}, s:b}", "type", "object", "properties",
                                  "additionalProperties", 0),
        .output_schema = json_pack(
            "{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s]}", "type", "object", "properties",
            "agents", "type", "array", "default", "type", "string", "count", "type", "integer",
            "required", "agents", "default", "count"),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 1, "destructiveHint",
                                 0, "idempotentHint", 1, "openWorldHint", 0),
        .handler = list_agents,
        .arg = cfg,
    });
}
