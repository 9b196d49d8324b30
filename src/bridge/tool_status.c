/* tool_status.c — hermes_status: an async run as the agent sees it (GET /v1/runs/{id}), else
 * what is on disk; a terminal status it learns is stored as the task's result. */
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

enum { SA_RUN_ID, SA_AGENT };
static const struct toolarg status_args[] = {ARG_RUN_ID(true), ARG_AGENT, TOOLARG_END};

/* hermes_status: the run as the agent sees it, else what is on disk. */
static void status_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct run_ctx *s = arg;
    struct bridge *b = s->b;
    struct mcp_call *c = s->call;
    json_t *stored = NULL;
    (void)r;

    mcp_call_on_cancel(c, NULL, NULL);
    bool have_result = s->task_id[0] && tasks_read(b->tasks, s->task_id, "result.json",
                                                   TASKS_FILE_MAX, &stored) == TASKS_OK;
    if (res->status == 200) {
        json_t *run = json_loadb(res->body, res->body_len, 0, NULL);
        const char *st = json_string_value(json_object_get(run, "status"));
        bool store = results_is_terminal(st) && !have_result && s->task_id[0];
        json_t *out = json_pack(
            "{s:s, s:s?, s:O?, s:O?, s:O?, s:O?, s:s, s:s?, s:b}", "run_id", s->run_id, "status",
            st, "output", json_object_get(run, "output"), "error", json_object_get(run, "error"),
            "created_at", json_object_get(run, "created_at"), "updated_at",
            json_object_get(run, "updated_at"), "agent", s->agent, "task_id",
            s->task_id[0] ? s->task_id : NULL, "result_updated", have_result || store);
        const char *approval = st && !strcmp(st, "waiting_for_approval") && s->task_id[0]
                                   ? runapproval_pending(b, s->task_id)
                                   : NULL;
        if (approval) { /* the operator decides, with hermes-mcp approve/deny ID */
            char note[160];
            snprintf(note, sizeof note,
                     "waiting for the operator's approval (hermes-mcp approve %s, or deny %s)",
                     approval, approval);
            json_object_set_new(out, "waiting_for", json_string("operator"));
            json_object_set_new(out, "approval_id", json_string(approval));
            json_object_set_new(out, "note", json_string(note));
        }
        if (store) /* answered once the result it reports as updated is durable */
            results_from_run(b, s->task_id, s->agent, run, c, mcp_tool_result(out));
        else
            mcp_call_tool_result_take(c, out);
        json_decref(run);
    } else if (res->status == 404 && have_result) {
        json_t *out = json_pack("{s:s, s:O, s:O?, s:O?, s:s, s:s, s:b, s:s}", "run_id", s->run_id,
                                "status", json_object_get(stored, "status"), "output",
                                json_object_get(stored, "summary"), "error",
                                json_object_get(stored, "error"), "agent", s->agent, "task_id",
                                s->task_id, "result_updated", 1, "source", "result.json");
        mcp_call_tool_result_take(c, out);
    } else {
        bridge_upstream_fail(c, s->agent, res, "run status");
    }
    json_decref(stored);
    free(s);
}

static void hermes_status(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX];

    if (!toolspec_check_args(c, status_args, args, v))
        return;
    const char *run_id = toolargs_str(v, SA_RUN_ID), *agent_name = toolargs_str(v, SA_AGENT);
    struct run_ctx *s = xcalloc(1, sizeof *s);
    s->b = b;
    s->call = c;
    snprintf(s->run_id, sizeof s->run_id, "%s", run_id);
    const char *task = strmap_get(b->runs, run_id);
    if (task && !taskowner_visible(b, c, task))
        task = NULL; /* another caller's run: as if unknown, every step below alike */
    if (task) {
        json_t *run = NULL;
        snprintf(s->task_id, sizeof s->task_id, "%s", task);
        if (tasks_read(b->tasks, task, "run.json", 64 * 1024, &run) == TASKS_OK) {
            const char *ag = json_string_value(json_object_get(run, "agent"));
            snprintf(s->agent, sizeof s->agent, "%s", ag ? ag : b->default_agent);
        }
        json_decref(run);
    }
    if (s->agent[0] == '\0')
        snprintf(s->agent, sizeof s->agent, "%s", agent_name ? agent_name : b->default_agent);
    struct agentdef *a = bridge_find_agent(b, s->agent);
    if (a && !agent_allowed_for(c, a->name))
        a = NULL; /* an agent outside the caller's agents: list is one it cannot see */
    if (a == NULL || a->key == NULL) {
        bridge_tool_error(c, a ? TE_AGENT_UNAVAILABLE : TE_UNKNOWN_AGENT, 0, "agent '%s' %s",
                          s->agent, a ? "has no usable credentials" : "is not registered");
        free(s);
        return;
    }
    /* A run no task of this bridge has is nobody's: only the owner token and hermes:admin may
     * ask the agent about it. */
    if (task == NULL && !mcp_call_sees_all(c)) {
        taskowner_run_not_found(c, run_id);
        free(s);
        return;
    }
    runctx_send(s, a, "GET", "", status_done);
}

static const struct toolout status_output[] = {
    {.name = "run_id", .type = TOOLOUT_STRING, .required = true},
    {.name = "status", .type = TOOLOUT_STRING, .required = true},
    {.name = "agent", .type = TOOLOUT_STRING},
    {.name = "task_id", .type = TOOLOUT_STRING},
    {.name = "result_updated", .type = TOOLOUT_BOOL},
    TOOLOUT_END,
};

const struct bridge_tool_spec tool_status_spec = {
    .name = "hermes_status",
    .title = "Status of a run",
    .description = "Status of an async run: status, output, error, timestamps, agent, "
                   "task_id, result_updated. Works after a bridge restart; when the agent "
                   "no longer knows the run, answers from the stored result.",
    .args = status_args,
    .output = status_output,
    .hints = {.read_only = true, .idempotent = true, .open_world = true},
    .scope = SCOPE_READ,
    .handler = hermes_status,
};
