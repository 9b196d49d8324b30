/* tool_whoami.c — whoami: the principal the caller's credential resolves to (a
 * careful client's evidence that authentication resolves the expected principal), as the layer that
 * authenticated the request describes it: name, kind, scopes, agents, expiry. Never the token
 * or its hash. Every principal may call it. */
#include <jansson.h>

#include "bridge_internal.h"
#include "mcp.h"
#include "toolargs.h"

static const struct toolarg whoami_args[] = {TOOLARG_END};

#define WHOAMI_SCHEMA                                                                              \
    "{\"type\":\"object\",\"properties\":{\"principal\":{\"type\":\"string\"},\"kind\":{\"type\":" \
    "\"string\",\"enum\":[\"owner\",\"token\",\"oauth\"]},\"scopes\":{\"type\":\"array\","         \
    "\"items\":{\"type\":\"string\"}},\"agents\":{\"type\":\"array\",\"items\":{\"type\":"         \
    "\"string\"}},\"expires_at\":{\"type\":[\"string\",\"null\"]},\"client_id\":{\"type\":"        \
    "\"string\"},\"owner_key\":{\"type\":\"string\"}},\"required\":[\"principal\","                \
    "\"kind\",\"scopes\",\"agents\",\"expires_at\",\"owner_key\"]}"

static void whoami(struct mcp_call *c, json_t *args, void *arg)
{
    json_t *v[ARGS_MAX];
    (void)arg;
    if (!toolspec_check_args(c, whoami_args, args, v))
        return;
    json_t *who = mcp_call_whoami(c);
    if (who == NULL) {
        /* Authentication off, or a call that outlived its request (run as a task): either
         * way nothing names a principal for it. */
        bridge_tool_error(c, TE_NOT_FOUND, 0, "no principal for this call");
        return;
    }
    /* What its tasks are bound to (request.json "owner"): the principal's name, for an OAuth
     * token its client and authorization (a digest of the authorization's random family id,
     * the same for its refreshed tokens). A principal is known here, so it is never the digest
     * of the bearer token a call without one would be bound to (mcp_call_caller). */
    json_object_set_new(who, "owner_key", json_string(mcp_call_caller(c)));
    mcp_call_tool_result_take(c, who);
}

static const char *const whoami_kinds[] = {"owner", "token", "oauth", NULL};
static const struct toolout whoami_output[] = {
    {.name = "principal", .type = TOOLOUT_STRING, .required = true},
    {.name = "kind", .type = TOOLOUT_STRING, .required = true, .one_of = whoami_kinds},
    {.name = "scopes", .type = TOOLOUT_STRINGS, .required = true},
    {.name = "agents", .type = TOOLOUT_STRINGS, .required = true},
    {.name = "expires_at", .type = TOOLOUT_STRING_OR_NULL, .required = true},
    {.name = "client_id", .type = TOOLOUT_STRING},
    {.name = "owner_key", .type = TOOLOUT_STRING, .required = true},
    TOOLOUT_END,
};

const struct bridge_tool_spec tool_whoami_spec = {
    .name = "whoami",
    .title = "Who am I",
    .description = "The principal your credential resolves to: {principal, kind (owner: the static "
                   "MCP_AUTH_TOKEN; token: a TOKENS_FILE role; oauth: an OAuth client's access "
                   "token), scopes, agents (\"*\": every one), expires_at (null: never), client_id "
                   "(oauth), owner_key (what your tasks are bound to: tasks you create are yours "
                   "under "
                   "this key)}. Never the token.",
    .args = whoami_args,
    .output = whoami_output,
    .hints = {.read_only = true, .idempotent = true},
    .scope = MCP_SCOPE_ANYONE,
    .handler = whoami,
};
