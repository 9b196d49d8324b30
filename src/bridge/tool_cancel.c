/* tool_cancel.c — hermes_cancel: really stop a task. A sync task in flight is interrupted (its
 * stream closed), an async run is stopped at the agent (POST /v1/runs/{id}/stop) and followed
 * to its end. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentclient.h"
#include "bridge_internal.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"
#include "toolargs.h"

enum { CA_RUN_ID, CA_ID, CA_JOB_ID };
static const struct toolarg cancel_args[] = {
    ARG_RUN_ID(false), ARG_ID(false), ARG_JOB_ID(false, "the older name for id: the task's id"),
    TOOLARG_END};

/* hermes_cancel: stop a sync task in flight, or a run (POST /v1/runs/{id}/stop). */
static void cancel_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct run_ctx *s = arg;
    struct mcp_call *c = s->call;
    (void)r;
    mcp_call_on_cancel(c, NULL, NULL);
    if (res->status == 200) {
        json_t *body = json_loadb(res->body, res->body_len, 0, NULL);
        const char *st = json_string_value(json_object_get(body, "status"));
        bool already = results_is_terminal(st);
        mcp_call_tool_result_take(
            c, json_pack("{s:s, s:s?, s:s, s:b, s:s}", "run_id", s->run_id, "task_id",
                         s->task_id[0] ? s->task_id : NULL, "status", st ? st : "stopping",
                         "already_finished", already, "message",
                         already ? "the run had already finished"
                                 : "stop requested; the bridge follows the run to its end"));
        json_decref(body);
        /* With a store, the replica that follows the run (or takes it over) sees it end: a
         * second follower here would poll it twice. */
        if (!already && s->task_id[0] && !tasks_remote(s->b->tasks))
            runjob_follow(s->b, s->task_id, s->agent, s->run_id);
    } else if (res->status == 409) {
        json_t *stored = NULL;
        if (s->task_id[0] &&
            tasks_read(s->b->tasks, s->task_id, "result.json", TASKS_FILE_MAX, &stored) == TASKS_OK)
            mcp_call_tool_result_take(
                c, json_pack("{s:s, s:s, s:O, s:b, s:s}", "run_id", s->run_id, "task_id",
                             s->task_id, "status", json_object_get(stored, "status"),
                             "already_finished", 1, "message", "the run had already finished"));
        else
            bridge_tool_error(c, TE_NOT_FOUND, 0, "the agent has no live run '%s' to stop",
                              s->run_id);
        json_decref(stored);
    } else {
        bridge_upstream_fail(c, s->agent, res, "run stop");
    }
    free(s);
}

static void hermes_cancel(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX], *stored = NULL, *run = NULL;

    if (!toolspec_check_args(c, cancel_args, args, v))
        return;
    const char *run_id = toolargs_str(v, CA_RUN_ID), *id = toolargs_str(v, CA_ID);
    const char *job_id = toolargs_str(v, CA_JOB_ID);
    if ((run_id != NULL) + (id != NULL) + (job_id != NULL) != 1) {
        bridge_tool_error(c, TE_INVALID_ARGUMENTS, 0,
                          "give exactly one of 'run_id', 'id' or 'job_id' (the older name for id)");
        return;
    }
    if (job_id)
        id = job_id;
    /* Another caller's task or run, or one of an agent this principal may not use: the same
     * answer as one that does not exist. */
    if (run_id) {
        const char *t = strmap_get(b->runs, run_id);
        if (t == NULL || !taskowner_visible(b, c, t)) {
            taskowner_run_not_found(c, run_id);
            return;
        }
        id = t;
    } else if (!taskowner_visible(b, c, id)) {
        taskowner_task_not_found(c, id);
        return;
    }
    struct job *j = strmap_get(b->jobs, id);
    if (j && j->ops->kind == JOB_SYNC) {
        struct mcp_call *waiting = j->call;
        j->call = NULL;
        if (waiting) {
            mcp_call_on_cancel(waiting, NULL, NULL);
            bridge_tool_error(waiting, TE_CANCELLED, 0, "task '%s' was cancelled by hermes_cancel",
                              id);
        }
        bool started = j->req != NULL;
        agent_cancel(j->req);
        j->req = NULL;
        json_t *out = json_pack("{s:s, s:s, s:b, s:s}", "id", id, "status", "cancelled",
                                "already_finished", 0, "message",
                                started ? "the agent's stream was closed, which interrupts it"
                                        : "the task had not started yet");
        results_write_status(b, id, j->agent, "cancelled", "cancelled with hermes_cancel", NULL, c,
                             mcp_tool_result(out));
        bridge_job_free(j);
        return;
    }
    if (tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) != TASKS_OK) {
        if (tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &stored) == TASKS_OK)
            mcp_call_tool_result_take(c, json_pack("{s:s, s:O, s:b, s:s}", "id", id, "status",
                                                   json_object_get(stored, "status"),
                                                   "already_finished", 1, "message",
                                                   "the task had already finished"));
        else
            taskowner_task_not_found(c, id);
        json_decref(stored);
        return;
    }
    struct agentdef *a;
    struct run_ctx *s = runctx_for_run(b, c, id, run, &a);
    if (a == NULL) {
        bridge_tool_error(c, TE_AGENT_UNAVAILABLE, 0, "agent '%s' cannot be reached", s->agent);
        free(s);
        return;
    }
    runctx_send(s, a, "POST", "/stop", cancel_done);
}

static const struct toolout cancel_output[] = {
    {.name = "status", .type = TOOLOUT_STRING, .required = true},
    {.name = "already_finished", .type = TOOLOUT_BOOL},
    {.name = "message", .type = TOOLOUT_STRING},
    TOOLOUT_END,
};

const struct bridge_tool_spec tool_cancel_spec = {
    .name = "hermes_cancel",
    .title = "Cancel a task",
    .description = "Really stop a task: a sync task in flight is interrupted, an async run "
                   "is stopped at the agent (POST /v1/runs/{id}/stop) and followed to its "
                   "end. Give run_id or id (job_id: the older name for id). Says so when "
                   "the task had already finished.",
    .args = cancel_args,
    .output = cancel_output,
    .hints = {.destructive = true, .idempotent = true, .open_world = true},
    .scope = SCOPE_TASK,
    .handler = hermes_cancel,
};
