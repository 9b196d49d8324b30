/* tool_agents.c — list_agents: the agents this bridge can delegate to, their capabilities and
 * availability; never their credentials. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "mcp.h"
#include "toolargs.h"

static const struct toolarg no_args[] = {TOOLARG_END};

static void list_agents(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX];
    if (!toolspec_check_args(c, no_args, args, v))
        return;
    agents_refresh(b);
    json_t *list = json_array();
    size_t avail = 0, shown = 0;
    for (size_t i = 0; i < b->nagents; i++) {
        struct agentdef *a = &b->agents[i];
        if (!agent_allowed_for(c, a->name))
            continue; /* outside the caller's agents: list */
        shown++;
        json_t *o = json_pack("{s:s, s:s, s:O, s:s, s:b, s:b}", "name", a->name, "description",
                              a->description ? a->description : "", "capabilities", a->capabilities,
                              "kind", a->kind ? a->kind : "local", "available", agent_available(a),
                              "default", strcmp(a->name, b->default_agent) == 0);
        if (a->key == NULL)
            json_object_set_new(o, "unavailable_reason", json_string("missing_credentials"));
        else if (!agent_available(a))
            json_object_set_new(o, "unavailable_reason", json_string("unreachable"));
        else
            avail++;
        if (a->profile)
            json_object_set_new(o, "local_profile", json_string(a->profile));
        json_array_append_new(list, o);
    }
    json_t *out = json_pack("{s:o, s:s, s:I}", "agents", list, "default", b->default_agent, "count",
                            (json_int_t)shown);
    if (!b->registry_loaded)
        json_object_set_new(out, "degraded", json_string("no_registry"));
    if (b->registry_error)
        json_object_set_new(out, "registry_error", json_string(b->registry_error));
    (void)avail;
    mcp_call_tool_result_take(c, out);
}

static const struct toolout agents_output[] = {
    {.name = "agents", .type = TOOLOUT_ARRAY, .required = true},
    {.name = "default", .type = TOOLOUT_STRING, .required = true},
    {.name = "count", .type = TOOLOUT_INT, .required = true},
    TOOLOUT_END,
};

const struct bridge_tool_spec tool_agents_spec = {
    .name = "list_agents",
    .title = "List agents",
    .description = "List the Hermes agents this bridge can delegate to, with their "
                   "capabilities and availability. Read-only; never returns credentials.",
    .args = no_args,
    .output = agents_output,
    .hints = {.read_only = true, .idempotent = true},
    .scope = SCOPE_READ,
    .handler = list_agents,
};
