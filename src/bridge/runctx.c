/* runctx.c — one request to the agent about an async run (its status, or stop) on behalf of
 * a waiting MCP call; the call going away cancels the request. Used by hermes_status,
 * hermes_cancel and tasks/cancel (mcptask.c). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentclient.h"
#include "bridge_internal.h"
#include "mcp.h"
#include "mem.h"

static void run_ctx_cancelled(struct mcp_call *c, void *arg)
{
    struct run_ctx *s = arg;
    (void)c;
    agent_cancel(s->req);
    free(s);
}

struct run_ctx *runctx_for_run(struct bridge *b, struct mcp_call *c, const char *id,
                               json_t *run_take, struct agentdef **a)
{
    struct run_ctx *s = xcalloc(1, sizeof *s);
    s->b = b;
    s->call = c;
    snprintf(s->task_id, sizeof s->task_id, "%s", id);
    const char *run_id = json_string_value(json_object_get(run_take, "run_id"));
    snprintf(s->run_id, sizeof s->run_id, "%s", run_id ? run_id : "");
    const char *ag = json_string_value(json_object_get(run_take, "agent"));
    snprintf(s->agent, sizeof s->agent, "%s", ag ? ag : b->default_agent);
    json_decref(run_take);
    *a = bridge_find_agent(b, s->agent);
    if (*a && (*a)->key == NULL)
        *a = NULL;
    return s;
}

/* Sends method <base_url>/v1/runs/<run_id><suffix>; on failure answers the call and frees s. */
void runctx_send(struct run_ctx *s, struct agentdef *a, const char *method, const char *suffix,
                 agent_done_cb *done)
{
    char path[200];
    snprintf(path, sizeof path, "/v1/runs/%s%s", s->run_id, suffix);
    char *url = agent_url(a, path);
    bool post = strcmp(method, "POST") == 0;
    struct agent_opts o = {.method = method,
                           .url = url,
                           .key = a->key,
                           .body = post ? "{}" : NULL,
                           .body_len = post ? 2 : 0,
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS,
                           .deadline_ms = 30000,
                           .max_response = RESPONSE_MAX,
                           .on_done = done,
                           .arg = s,
                           .label = a->name,
                           .endpoint = post ? "stop" : "run"};
    s->req = agent_request(s->b->http, &o);
    free(url);
    if (s->req == NULL) {
        if (s->rpc_errors)
            mcp_call_error(s->call, JRPC_INTERNAL_ERROR,
                           "Internal error: could not reach the agent");
        else
            bridge_tool_error(s->call, TE_UPSTREAM_ERROR, 0,
                              "could not start the request to the agent");
        free(s);
        return;
    }
    mcp_call_on_cancel(s->call, run_ctx_cancelled, s);
}
