/* syncjob.c — a sync task: POST /v1/chat/completions with stream: true, progress events
 * relayed to the waiting MCP call, the answer accumulated and parsed by the contract, and
 * result.json written before the call is answered. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentclient.h"
#include "bridge_internal.h"
#include "buf.h"
#include "chatchunk.h"
#include "contract.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "sse.h"
#include "tasks.h"

/* ---------- sync: POST /v1/chat/completions, stream: true ---------- */

static void sync_event(const char *event, const char *data, size_t len, const char *id, void *arg)
{
    struct job *j = arg;
    (void)id;
    if (strcmp(event, "hermes.tool.progress") == 0) {
        json_t *p = json_loadb(data, len, 0, NULL);
        const char *label = json_string_value(json_object_get(p, "label"));
        const char *tool = json_string_value(json_object_get(p, "tool"));
        const char *status = json_string_value(json_object_get(p, "status"));
        char msg[200];
        snprintf(msg, sizeof msg, "%s%s%s", tool ? tool : "tool", status ? ": " : "",
                 status ? status : "");
        if (j->call)
            mcp_call_progress(j->call, ++j->progress, 0, label ? label : msg);
        json_decref(p);
        return;
    }
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        j->done_stream = true;
        return;
    }
    struct chatchunk cc;
    if (chatchunk_scan(data, len, &j->b->chunk, &cc)) { /* the common case, without jansson */
        if (cc.has_content && !buf_append(&j->answer, j->b->chunk.data, j->b->chunk.len)) {
            free(j->stream_error);
            j->stream_error = xstrdup("the answer was larger than the cap");
        }
        if (cc.finish_error) {
            free(j->stream_error);
            j->stream_error = xstrdup("the agent reported an error");
        }
        return;
    }
    json_t *chunk = json_loadb(data, len, 0, NULL);
    json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
    const char *delta =
        json_string_value(json_object_get(json_object_get(choice, "delta"), "content"));
    if (delta && !buf_appends(&j->answer, delta)) {
        free(j->stream_error);
        j->stream_error = xstrdup("the answer was larger than the cap");
    }
    const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
    json_t *err = json_object_get(chunk, "error");
    if ((finish && strcmp(finish, "error") == 0) || err) {
        const char *m = json_string_value(json_object_get(err, "message"));
        if (m == NULL)
            m = json_string_value(err);
        free(j->stream_error);
        j->stream_error = xstrdup(m ? m : "the agent reported an error");
    }
    json_decref(chunk);
}

static bool sync_data(struct agent_req *r, const char *data, size_t len, void *arg)
{
    struct job *j = arg;
    (void)r;
    return sse_feed(&j->sse, data, len, sync_event, j);
}

static void sync_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    struct bridge *b = j->b;
    struct mcp_call *c = bridge_job_answered(j);
    (void)r;
    /* Every answer below goes out once what it reports is on disk. */
    if (res->timed_out && res->status == 200) {
        /* The agent took longer than HERMES_TIMEOUT_S; closing the stream interrupted it. */
        json_t *err = tool_error_json(TE_UPSTREAM_TIMEOUT, 0, "the agent did not finish in time");
        bridge_job_trace_outcome(j, err);
        results_write_status(b, j->id, j->agent, "failed", "the agent did not finish in time", NULL,
                             c, err);
        bridge_job_free(j);
        return;
    }
    if (res->status != 200) {
        /* Nothing was done: a retry is free. */
        json_t *err = bridge_upstream_error(j->agent, res, "chat completion");
        bridge_job_trace_outcome(j, err);
        bridge_remove_then_answer(b, j->id, "request.json", c, err);
        bridge_job_free(j);
        return;
    }
    if (!j->done_stream && j->stream_error == NULL) {
        json_t *err =
            tool_error_json(TE_UPSTREAM_ERROR, 0, "the agent's stream ended before it finished");
        bridge_job_trace_outcome(j, err);
        results_write_status(b, j->id, j->agent, "failed",
                             "the agent's stream ended before it finished", NULL, c, err);
        bridge_job_free(j);
        return;
    }
    json_t *parsed;
    if (j->stream_error) {
        parsed = json_pack("{s:s, s:s, s:[], s:[], s:s}", "status", "failed", "summary",
                           j->answer.len ? j->answer.data : "", "artifacts", "next_steps", "error",
                           j->stream_error);
    } else {
        parsed = contract_parse_answer(j->answer.data ? j->answer.data : "", j->answer.len);
    }
    bridge_job_trace_outcome(j, parsed);
    results_write(b, j->id, j->agent, parsed, NULL, c, NULL); /* answers results_public */
    json_decref(parsed);
    bridge_job_free(j);
}

/* The MCP call went away (notifications/cancelled, hang-up, deadline, shutdown). */
static void sync_cancelled(struct mcp_call *c, void *arg)
{
    struct job *j = arg;
    (void)c;
    log_info("task %s cancelled", j->id);
    if (j->req == NULL) { /* still waiting for its turn */
        bridge_job_withdraw(j);
        return;
    }
    j->call = NULL;
    agent_cancel(j->req); /* closing the stream interrupts the agent */
    j->req = NULL;
    results_write_status(j->b, j->id, j->agent, "cancelled",
                         "cancelled by the client before the agent finished", NULL, NULL, NULL);
    bridge_job_free(j);
}

static void sync_start(struct job *j)
{
    struct bridge *b = j->b;
    struct agentdef *a = bridge_job_agent(j);
    if (a == NULL)
        return;
    /* What json_pack + json_dumps(JSON_COMPACT) gave, byte for byte, with the contract cached. */
    json_t *prompt = json_string(j->prompt);
    char *user = prompt ? json_dumps(prompt, JSON_ENCODE_ANY | JSON_COMPACT) : xstrdup("\"\"");
    json_decref(prompt);
    char *text = xasprintf("{\"model\":\"hermes-agent\",\"stream\":true,\"messages\":[{\"role\":"
                           "\"system\",\"content\":%s},{\"role\":\"user\",\"content\":%s}]}",
                           contract_json(b), user);
    free(user);
    char *url = agent_url(a, "/v1/chat/completions");
    unsigned deadline = b->opts.agent_timeout_ms;
    struct agent_opts o = {.method = "POST",
                           .url = url,
                           .key = a->key,
                           .session_header = j->session_id,
                           .body = text,
                           .body_len = strlen(text),
                           .accept_sse = true,
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS,
                           .deadline_ms = deadline,
                           .max_response = RESPONSE_MAX,
                           .on_data = sync_data,
                           .on_done = sync_done,
                           .arg = j,
                           .label = a->name,
                           .endpoint = "chat"};
    bridge_job_send(j, &o); /* may end the job */
    free(url);
    free(text);
}

const struct job_ops syncjob_ops = {
    .kind = JOB_SYNC, .start = sync_start, .cancelled = sync_cancelled};
