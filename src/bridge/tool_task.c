/* tool_task.c — hermes_task: delegate a task to an agent, sync (wait for the answer) or async
 * (a run the bridge follows). The task id names one unit of work: the same request again is a
 * retry and returns what the first one gave; a different request under a used id is refused, and
 * so is any request under another caller's id (taskowner.c), without a word about that task. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge_internal.h"
#include "crypto.h"
#include "hex.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"
#include "toolargs.h"

#define TASK_MAX 65536
#define CONTEXT_MAX 65536
#define DELIVERABLE_MAX 8192
#define CONSTRAINTS_MAX 20
#define CONSTRAINT_MAX 2000

static const char *const task_modes[] = {"sync", "async", NULL};
enum { TA_TASK, TA_MODE, TA_CONTEXT, TA_DELIVERABLE, TA_CONSTRAINTS, TA_ID, TA_SESSION, TA_AGENT };
static const struct toolarg task_args[] = {
    {.name = "task",
     .type = TOOLARG_STRING,
     .required = true,
     .nonempty = true,
     .max_len = TASK_MAX,
     .description = "What the agent should do"},
    {.name = "mode", .type = TOOLARG_STRING, .required = true, .one_of = task_modes},
    {.name = "context", .type = TOOLARG_STRING, .max_len = CONTEXT_MAX},
    {.name = "deliverable", .type = TOOLARG_STRING, .max_len = DELIVERABLE_MAX},
    {.name = "constraints",
     .type = TOOLARG_STRINGS,
     .max_items = CONSTRAINTS_MAX,
     .max_len = CONSTRAINT_MAX},
    ARG_ID(false),
    {.name = "session",
     .type = TOOLARG_STRING,
     .max_len = 64,
     .pattern = "^[a-z0-9][a-z0-9._-]{0,63}$",
     .syntax = toolspec_session_syntax,
     .syntax_hint = "must match ^[a-z0-9][a-z0-9._-]{0,63}$"},
    ARG_AGENT,
    TOOLARG_END,
};

static void fingerprint(json_t *args, const char *agent, char out[65])
{
    json_t *canon = json_pack(
        "{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:s}", "task", json_object_get(args, "task"), "mode",
        json_object_get(args, "mode"), "context", json_object_get(args, "context"), "deliverable",
        json_object_get(args, "deliverable"), "constraints", json_object_get(args, "constraints"),
        "session", json_object_get(args, "session"), "agent", agent);
    char *text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    unsigned char d[32];
    crypto_sha256(text, strlen(text), d);
    hex_encode(d, sizeof d, out);
    free(text);
    json_decref(canon);
}

static void hermes_task(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX];
    char idbuf[129], fp[65];

    if (!toolspec_check_args(c, task_args, args, v))
        return;
    const char *task = toolargs_str(v, TA_TASK), *mode = toolargs_str(v, TA_MODE);
    const char *context = toolargs_str(v, TA_CONTEXT);
    const char *deliverable = toolargs_str(v, TA_DELIVERABLE);
    const char *id = toolargs_str(v, TA_ID), *session = toolargs_str(v, TA_SESSION);
    const char *agent_name = toolargs_str(v, TA_AGENT);
    json_t *constraints = v[TA_CONSTRAINTS];
    agents_refresh(b);
    if (agent_name == NULL)
        agent_name = b->default_agent;
    struct agentdef *a = bridge_find_agent(b, agent_name);
    /* An agent outside the caller's agents: list is one it cannot see (list_agents hides it). */
    if (a == NULL || !agent_allowed_for(c, a->name)) {
        bridge_tool_error(c, TE_UNKNOWN_AGENT, 0, "no agent named '%.64s'; see list_agents",
                          agent_name);
        return;
    }
    if (!agent_worth_trying(b, a)) {
        bridge_tool_error(c, TE_AGENT_UNAVAILABLE, 0, "the agent '%s' is unavailable (%s)", a->name,
                          a->key == NULL ? "missing_credentials" : "unreachable");
        return;
    }
    if (id == NULL) {
        char rnd[17];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        if (!crypto_random_hex(rnd, 4)) { /* never name a task with uninitialised bytes */
            bridge_tool_error(c, TE_UPSTREAM_ERROR, 0,
                              "no random bytes for a task id; pass an 'id'");
            return;
        }
        strftime(idbuf, sizeof idbuf, "t-%Y%m%d-%H%M%S-", &tm);
        strncat(idbuf, rnd, sizeof idbuf - strlen(idbuf) - 1);
        id = idbuf;
    }
    fingerprint(args, a->name, fp);
    if (taskowner_access(b, c, id, NULL) == TASK_NOT_YOURS) {
        /* Task ids are one namespace: another caller's id (or one nobody owns) cannot be taken
         * over, and nothing of that task is told, not even whether this is the same request. */
        bridge_tool_error(c, TE_DUPLICATE_ID, 0, "task id '%s' is taken; choose another", id);
        return;
    }
    if (tasks_pending(b->tasks, id)) { /* its files are still being written */
        bridge_tool_error(c, TE_BUSY, 1, "task '%s' is still in progress", id);
        return;
    }

    /* A task id names one unit of work: the same request again is a retry. */
    json_t *prev = NULL;
    enum tasks_rc prc = tasks_read(b->tasks, id, "request.json", TASKS_REQUEST_MAX, &prev);
    if (prc != TASKS_OK && prc != TASKS_NOT_FOUND) {
        /* Not a task directory (a plain file, say), or a request.json we cannot read. */
        bridge_tool_error(c, TE_INVALID_ARGUMENTS, 0,
                          "task id '%s' cannot be used: its entry in the "
                          "task directory is not a readable task",
                          id);
        return;
    }
    bool as_task = mcp_call_client_extension(c, MCP_TASKS_EXTENSION);
    char *owner = NULL; /* who the task belongs to: the caller, or (redone) whom it belonged to */
    if (prc == TASKS_OK) {
        const char *pa = json_string_value(json_object_get(prev, "agent"));
        const char *pf = json_string_value(json_object_get(prev, "fingerprint"));
        if (pa && strcmp(pa, a->name) != 0) {
            bridge_tool_error(c, TE_DUPLICATE_ID, 0, "task id '%s' belongs to agent '%s'", id, pa);
            json_decref(prev);
            return;
        }
        if (pf == NULL || strcmp(pf, fp) != 0) {
            bridge_tool_error(c, TE_DUPLICATE_ID, 0,
                              "task id '%s' was used for a different request", id);
            json_decref(prev);
            return;
        }
        if (as_task && json_is_true(json_object_get(prev, "mcp_task"))) {
            /* A retry of the same MCP task: the task as it is now. */
            mcp_call_result_take(c, mcptask_again(b, id, prev));
            json_decref(prev);
            return;
        }
        /* Redone below, it stays its owner's (the owner token may retry anyone's). */
        const char *was = json_string_value(json_object_get(prev, "owner"));
        owner = was ? xstrdup(was) : NULL;
        json_decref(prev);
        json_t *res = NULL, *run = NULL;
        if (tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &res) == TASKS_OK) {
            mcp_call_tool_result_take(c, results_public(res));
            json_decref(res);
            free(owner);
            return;
        }
        if (tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) == TASKS_OK) {
            mcp_call_tool_result_take(
                c, json_pack("{s:s, s:s, s:O, s:s, s:[], s:[]}", "id", id, "status", "accepted",
                             "run_id", json_object_get(run, "run_id"), "summary",
                             "already accepted; this is the same run", "artifacts", "next_steps"));
            json_decref(run);
            free(owner);
            return;
        }
        /* Here, or on another replica that is alive (a client's retry sent elsewhere): the
         * first one is still at it. */
        if (strmap_get(b->jobs, id) || tasks_started_elsewhere(b->tasks, id)) {
            bridge_tool_error(c, TE_BUSY, 1, "task '%s' is still in progress", id);
            free(owner);
            return;
        }
        /* Accepted earlier but nothing came of it (crash before the agent answered): redo. */
    } else if (strmap_get(b->jobs, id)) {
        bridge_tool_error(c, TE_BUSY, 1, "task '%s' is still in progress", id);
        return;
    }
    if (owner == NULL)
        owner = xstrdup(mcp_call_caller(c));
    /* The names the agent sees carry the owner's tag: another principal's session "work" or
     * re-used task id is another conversation and another run there. */
    char tag[OWNER_TAG_SIZE], session_id[sizeof((struct job *)0)->session_id];
    taskowner_tag(owner, tag);
    if (session)
        snprintf(session_id, sizeof session_id, "gb-sess-%s-%s%s", a->name, tag, session);
    else
        snprintf(session_id, sizeof session_id, "gb-task-%s%s", tag, id);
    if (session && bridge_job_queue_full(b, session_id)) {
        /* Refused before anything is written or announced (the progress note below names an
         * id that must then exist). */
        bridge_tool_error(c, TE_BUSY, 5, "session '%s' already has %d calls waiting", session,
                          SESSION_QUEUE_MAX);
        free(owner);
        return;
    }
    json_t *req =
        json_pack("{s:s, s:s, s:s, s:s?, s:s, s:o}", "id", id, "agent", a->name, "mode", mode,
                  "session", session, "fingerprint", fp, "created_at", bridge_iso_now());
    /* Whose it is goes into the task's own record (taskowner.c); a client of the tasks
     * extension gets an MCP task, an agent run whatever the mode. */
    json_object_set_new(req, "owner", json_string(owner));
    json_t *created = NULL;
    if (as_task) {
        json_object_set_new(req, "mcp_task", json_true());
        created = json_incref(json_object_get(req, "created_at"));
    }
    /* Not waited for: the agent starts at once. The writer keeps the order, so request.json is
     * durable before any later file of this task (the answer waits for those). */
    enum tasks_rc wrc = taskowner_write_request(b, id, req, owner);
    json_decref(req);
    if (wrc != TASKS_OK) {
        json_decref(created);
        free(owner);
        bridge_tool_error(c, TE_UPSTREAM_ERROR, 0, "the task directory could not be written");
        return;
    }
    const struct job_ops *ops = as_task                     ? &mcptask_submit_ops
                                : strcmp(mode, "sync") == 0 ? &syncjob_ops
                                                            : &runjob_submit_ops;
    struct job *j = bridge_job_new(b, ops, id, a->name);
    j->task_created = created;
    j->owner = owner;
    j->call = c;
    j->prompt = contract_prompt(task, context, deliverable, constraints);
    snprintf(j->session_id, sizeof j->session_id, "%s", session_id);
    snprintf(j->idem_key, sizeof j->idem_key, "%s%s", tag, id);
    mcp_call_on_cancel(c, ops->cancelled, j);
    /* A long sync call may outlive the client's timeout: the first progress notification
     * names the id, so the result can still be fetched. Sent before the job is queued, which
     * may already answer the call. */
    if (ops->kind == JOB_SYNC && mcp_call_progress_token(c)) {
        char note[512]; /* two ids of at most 128 bytes and an agent name of 64 */
        snprintf(note, sizeof note,
                 "task %s accepted for agent %s; if this call times out, hermes_result with "
                 "id \"%s\" returns the result",
                 id, a->name, id);
        mcp_call_progress(c, 0, 0, note);
    }
    if (!bridge_job_enqueue(j, session != NULL)) {
        j->call = NULL;
        mcp_call_on_cancel(c, NULL, NULL);
        bridge_remove_then_answer(b, id, "request.json", c,
                                  tool_error_json(TE_BUSY, 5,
                                                  "session '%s' already has %d calls waiting",
                                                  session, SESSION_QUEUE_MAX));
        bridge_job_free(j);
    }
}

const struct bridge_tool_spec tool_task_spec = {
    .name = "hermes_task",
    .title = "Delegate a task to Hermes",
    .description =
        "Delegate a task to a Hermes agent. mode \"sync\" waits for the answer (progress "
        "is "
        "reported when you pass a progressToken) and returns {id, status, summary, "
        "artifacts, next_steps}; mode \"async\" returns at once with status \"accepted\" "
        "and "
        "a run_id: the bridge follows the run and stores the result, read it with "
        "hermes_status or hermes_result. Re-sending the same id with the same request is a "
        "safe retry. For anything that may take long, pass your own id: if the call times "
        "out, hermes_result with that id returns the result (with a progressToken, the "
        "first progress notification names the id too). Optional: context, deliverable, "
        "constraints (at most 20), id, session (continues a conversation; calls in one "
        "session run one at a time), agent (see list_agents).",
    .args = task_args,
    .output = toolspec_result_output,
    .hints = {.idempotent = true, .open_world = true},
    .scope = SCOPE_TASK,
    .handler = hermes_task,
};
