/* mcptask.c — hermes_task as an MCP task (the tasks extension of MCP 2026-07-28).
 *
 * A client that declares io.modelcontextprotocol/tasks gets its hermes_task run as an agent
 * run (POST /v1/runs, as mode "async") and answered with a CreateTaskResult once run.json is
 * durable; the MCP task id is the bridge's task id. Everything tasks/get reports comes from the
 * task directory (request.json, run.json, result.json), so it survives a restart: the bridge
 * follows unfinished runs at start as it always did. tasks/cancel really stops the run at the
 * agent (POST /v1/runs/{id}/stop) and follows it to its end, which result.json records.
 *
 * A client watching the task on a subscriptions/listen stream (taskIds) gets notifications/tasks
 * with the finished task once result.json is durable, also for a run that ends after a
 * restart (the follow writes result.json then).
 *
 * An MCP task belongs to the caller that created it, as every task does (taskowner.c: the
 * owner token and hermes:admin reach them all): another caller gets from the task methods the
 * same "not found" as an id that does not exist. */
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

/* The task's request.json when it is an MCP task this caller may see (taskowner_access: its own,
 * or any for the owner token and hermes:admin; read once; new reference), else NULL with the
 * call answered -32602. */
static json_t *owned_request(struct bridge *b, struct mcp_call *c, const char *id,
                             const char *scope)
{
    json_t *req = NULL;
    if (!mcp_call_allowed(c, scope)) { /* a principal whose scopes were cut since */
        mcp_call_task_forbidden(c);
        return NULL;
    }
    bool yours =
        toolspec_id_syntax(id, strlen(id)) && taskowner_access(b, c, id, &req) == TASK_YOURS;
    struct job *j = yours && req == NULL ? strmap_get(b->jobs, id) : NULL;
    /* Just created: the job is here before its request.json is durable (the agent is not kept
     * waiting for the disk), and an MCP task's job knows what the file will say. */
    if (j && j->task_created)
        req = json_pack("{s:O, s:b}", "created_at", j->task_created, "mcp_task", 1);
    if (!yours || !json_is_true(json_object_get(req, "mcp_task"))) {
        json_decref(req);
        mcp_call_task_not_found(c);
        return NULL;
    }
    return req;
}

/* What every answer about a task carries (ttlMs: how long finished tasks are kept). */
static json_t *task_fields(struct bridge *b, const char *id, const char *status, json_t *req,
                           json_t *updated_at)
{
    json_t *created = json_object_get(req, "created_at");
    json_t *t = json_pack("{s:s, s:s, s:O, s:O, s:I}", "taskId", id, "status", status, "createdAt",
                          created, "lastUpdatedAt", updated_at ? updated_at : created,
                          "pollIntervalMs", (json_int_t)b->opts.poll_ms);
    json_object_set_new(t, "ttlMs",
                        b->opts.tasks_retention_days
                            ? json_integer((json_int_t)b->opts.tasks_retention_days * 86400000)
                            : json_null());
    return t;
}

static json_t *task_now(struct bridge *b, const char *id, json_t *req);

/* The CreateTaskResult for task id created at created_at in status (new reference). */
static json_t *mcptask_created_as(struct bridge *b, const char *id, json_t *created_at,
                                  const char *status)
{
    json_t *req = json_pack("{s:O}", "created_at", created_at);
    json_t *t = task_fields(b, id, status, req, NULL);
    json_decref(req);
    json_object_set_new(t, "resultType", json_string("task"));
    return t;
}

/* A submission's answer once run.json is durable: the task, working. */
static json_t *submit_accepted(struct job *j)
{
    return mcptask_created_as(j->b, j->id, j->task_created, "working");
}

const struct job_ops mcptask_submit_ops = {.kind = JOB_SUBMIT,
                                           .start = runjob_start,
                                           .cancelled = runjob_cancelled,
                                           .accepted = submit_accepted};

json_t *mcptask_again(struct bridge *b, const char *id, json_t *req)
{
    json_t *t = task_now(b, id, req);
    json_object_del(t, "result");
    json_object_set_new(t, "resultType", json_string("task"));
    return t;
}

/* The task as tasks/get and notifications/tasks give it (new reference), from its request. */
static json_t *task_now(struct bridge *b, const char *id, json_t *req)
{
    json_t *t, *res = NULL;
    if (tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &res) == TASKS_OK) {
        const char *st = json_string_value(json_object_get(res, "status"));
        bool cancelled = st && strcmp(st, "cancelled") == 0;
        t = task_fields(b, id, cancelled ? "cancelled" : "completed", req,
                        json_object_get(res, "completed_at"));
        if (!cancelled) { /* a complete CallToolResult, as the call itself would have been */
            json_t *result = mcp_tool_result(results_public(res));
            json_object_set_new(result, "resultType", json_string("complete"));
            json_object_set_new(t, "result", result);
        }
    } else {
        t = task_fields(b, id, "working", req, NULL);
        json_object_set_new(t, "statusMessage",
                            json_string(strmap_get(b->jobs, id) ? "the agent is working on it"
                                                                : "waiting for the agent"));
    }
    json_decref(res);
    return t;
}

static void task_get(struct mcp_call *c, const char *id, void *arg)
{
    struct bridge *b = arg;
    json_t *req = owned_request(b, c, id, SCOPE_READ);
    if (req == NULL)
        return;
    mcp_call_result_take(c, task_now(b, id, req));
    json_decref(req);
}

/* Task id's result.json is durable: its status goes to the streams that watch it. */
static void task_ended(struct bridge *b, const char *id)
{
    json_t *req = NULL;
    if (tasks_read(b->tasks, id, "request.json", TASKS_REQUEST_MAX, &req) != TASKS_OK ||
        !json_is_true(json_object_get(req, "mcp_task")) ||
        !json_is_string(json_object_get(req, "owner"))) {
        json_decref(req);
        return;
    }
    json_t *t = task_now(b, id, req);
    mcp_task_notify(b->mcp, json_string_value(json_object_get(req, "owner")), t);
    json_decref(t);
    json_decref(req);
}

/* A Hermes run never asks for input: answers are acknowledged and ignored. */
static void task_update(struct mcp_call *c, const char *id, json_t *responses, void *arg)
{
    (void)responses;
    json_t *req = owned_request(arg, c, id, SCOPE_TASK);
    if (req == NULL)
        return;
    json_decref(req);
    mcp_call_result_take(c, json_object());
}

static void stop_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct run_ctx *s = arg;
    struct mcp_call *c = s->call;
    (void)r;
    mcp_call_on_cancel(c, NULL, NULL);
    /* 200: stopping (or already over); 409: no longer live here (it ended); 404: the agent
     * no longer knows it (restarted). Either way the bridge follows the run to its end (or
     * finds it gone) and result.json says how it ended. */
    if (res->status == 200 || res->status == 409 || res->status == 404) {
        if (!tasks_remote(s->b->tasks)) /* with a store its follower sees it end */
            runjob_follow(s->b, s->task_id, s->agent, s->run_id);
        mcp_call_result_take(c, json_object());
    } else {
        mcp_call_error(c, JRPC_INTERNAL_ERROR, "Internal error: the agent did not stop the run");
    }
    free(s);
}

static void task_cancel(struct mcp_call *c, const char *id, void *arg)
{
    struct bridge *b = arg;
    json_t *req = owned_request(b, c, id, SCOPE_TASK), *run = NULL, *res = NULL;
    if (req == NULL)
        return;
    json_decref(req);
    struct job *j = strmap_get(b->jobs, id);
    if (j && j->ops->kind == JOB_SUBMIT && j->req) {
        /* The submission is on the wire: the agent may start the run whatever we do now, so
         * the run is stopped as soon as its id is known (runjob.c), and followed to its end. */
        j->stop_pending = true;
        mcp_call_result_take(c, json_object());
        return;
    }
    if (j && j->ops->kind == JOB_SUBMIT) {
        /* Not yet sent (waiting behind its session's queue): the submission is dropped and the
         * task ends cancelled; the creating call, still waiting, gets the task in that state. */
        struct mcp_call *creator = j->call;
        j->call = NULL;
        if (creator)
            mcp_call_on_cancel(creator, NULL, NULL);
        json_t *created = mcptask_created_as(b, id, j->task_created, "cancelled");
        results_write_status(b, id, j->agent, "cancelled",
                             "cancelled with tasks/cancel before "
                             "the agent accepted it",
                             NULL, creator, created);
        bridge_job_free(j);
        mcp_call_result_take(c, json_object());
        return;
    }
    bool ended = tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &res) == TASKS_OK;
    json_decref(res);
    if (ended || tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) != TASKS_OK) {
        /* Finished (the same ack as a live one), or not yet accepted by the agent. */
        mcp_call_result_take(c, json_object());
        return;
    }
    struct agentdef *a;
    struct run_ctx *s = runctx_for_run(b, c, id, run, &a);
    if (a == NULL) {
        mcp_call_error(c, JRPC_INTERNAL_ERROR,
                       "Internal error: the task's agent cannot be reached");
        free(s);
        return;
    }
    s->rpc_errors = true; /* a failure here is a JSON-RPC error, not a tool result */
    runctx_send(s, a, "POST", "/stop", stop_done);
}

static const struct mcp_task_ops ops = {task_get, task_update, task_cancel};

void mcptask_register(struct bridge *b)
{
    if (tasks_remote(b->tasks)) /* the task is loaded from the database first */
        mcp_set_task_ops(b->mcp, &taskload_task_ops,
                         bridge_keep_load(b, taskload_for_tasks(b, &ops)));
    else
        mcp_set_task_ops(b->mcp, &ops, b);
    b->task_ended = task_ended;
}
