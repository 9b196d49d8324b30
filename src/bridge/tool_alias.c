/* tool_alias.c — the tool names and arguments of the Python hermes-mcp this server replaces,
 * so its clients (scripts, skills, saved prompts that name hermes_ask) work unchanged:
 * hermes_ask is hermes_task under its arguments, hermes_check polls a task by its job_id (our
 * task id); hermes_cancel takes job_id itself (tool_cancel.c). The aliases are always
 * callable; tools/list shows them only with MCP_TOOL_ALIASES=1, so that by default a model
 * sees one name per tool. They run the tools
 * they stand for, with their scopes and checks, and bridge_tools keeps or drops them with
 * those tools (bridge_tool_judged_as, from the specs' alias_of). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "crypto.h"
#include "hex.h"
#include "mcp.h"
#include "tasks.h"
#include "toolargs.h"

#define PROMPT_MAX 65536 /* hermes_task's cap on task */
#define TOOLSETS_MAX 32
#define SESSION_ID_MAX 256 /* the Python server had no cap: generous, but one */

/* The Python server forwarded any session_id; ours are session names. */
static bool printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

enum { AA_PROMPT, AA_SESSION_ID, AA_TOOLSETS, AA_ASYNC };
static const struct toolarg ask_args[] = {
    {.name = "prompt",
     .type = TOOLARG_STRING,
     .required = true,
     .nonempty = true,
     .max_len = PROMPT_MAX,
     .description = "What the agent should do (hermes_task's task)"},
    {.name = "session_id",
     .type = TOOLARG_STRING,
     .nonempty = true,
     .max_len = SESSION_ID_MAX,
     .syntax = printable,
     .syntax_hint = "must have no control characters",
     .description = "Continues a conversation: calls with the same session_id run one at a "
                    "time with the same agent session. Any text is taken; one "
                    "that is not a session name of ours (^[a-z0-9][a-z0-9._-]{0,63}$) is "
                    "mapped to one by a digest"},
    {.name = "toolsets",
     .type = TOOLARG_STRINGS,
     .max_items = TOOLSETS_MAX,
     .max_len = 64,
     .description = "Accepted and ignored: the agent's toolsets are set in "
                    "Hermes' own configuration"},
    {.name = "async_mode",
     .type = TOOLARG_BOOL,
     .description = "true: return at once with the task's id; poll it with hermes_check "
                    "(job_id). Default false: wait for the answer"},
    TOOLARG_END,
};

static const struct toolarg check_args_spec[] = {
    ARG_JOB_ID(true, "The id hermes_ask (or hermes_task) returned"),
    TOOLARG_END,
};

/* Runs the tool name stands for with args (a new object, released here): never one bridge_tools
 * left out, at start (not registered) or by a reload (disabled). */
static void run_as(struct bridge *b, const char *name, struct mcp_call *c, json_t *args_take)
{
    const struct bridge_tool_spec *t = toolspec_registered(b, name);
    if (t == NULL || mcp_tool_disabled(b->mcp, name))
        bridge_tool_error(c, TE_NOT_FOUND, 0,
                          "%s is not exposed here (bridge_tools in the gateway file)", name);
    else
        t->handler(c, args_take, b);
    json_decref(args_take);
}

/* The Python server's session_id as our session: as it is when it is a session name of ours, else
 * "s002-" and 32 hex digits of its SHA-256, so that the same id always continues the same
 * session (the agent sees the mapped name). */
static json_t *session_of(json_t *id)
{
    const char *s = json_string_value(id);
    size_t n = json_string_length(id);
    if (toolspec_session_syntax(s, n))
        return json_incref(id);
    unsigned char d[32];
    char name[5 + 32 + 1] = "s002-";
    crypto_sha256(s, n, d);
    hex_encode(d, 16, name + 5);
    return json_string(name);
}

static void hermes_ask(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX];

    if (!toolspec_check_args(c, ask_args, args, v))
        return;
    json_t *task = json_pack("{s:O, s:s}", "task", v[AA_PROMPT], "mode",
                             json_is_true(v[AA_ASYNC]) ? "async" : "sync");
    if (v[AA_SESSION_ID])
        json_object_set_new(task, "session", session_of(v[AA_SESSION_ID]));
    run_as(b, "hermes_task", c, task);
}

/* A task still at work has no result yet: say so as a poll answer (hermes_result would answer
 * not_found); everything else is hermes_result's answer. */
static void hermes_check(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX], *run = NULL;

    if (!toolspec_check_args(c, check_args_spec, args, v))
        return;
    const char *id = toolargs_str(v, 0);
    if (!taskowner_visible(b, c, id) || tool_result_task_state(b, id, NULL, NULL) != TASK_RUNNING) {
        run_as(b, "hermes_result", c, json_pack("{s:s}", "id", id));
        return;
    }
    json_t *out =
        json_pack("{s:s, s:s, s:s, s:[], s:[]}", "id", id, "status", "running", "summary",
                  "still running; call hermes_check again later", "artifacts", "next_steps");
    if (tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) == TASKS_OK &&
        json_is_string(json_object_get(run, "run_id")))
        json_object_set(out, "run_id", json_object_get(run, "run_id"));
    json_decref(run);
    mcp_call_tool_result_take(c, out);
}

const struct bridge_tool_spec tool_ask_spec = {
    .name = "hermes_ask",
    .title = "Ask Hermes (alias of hermes_task)",
    .description =
        "Alias of hermes_task (its older name and arguments). Delegates prompt to the "
        "default agent and waits for the answer ({id, status, summary, artifacts, "
        "next_steps}); with async_mode true returns at once with status \"accepted\" and "
        "the task's id: poll it with hermes_check (job_id = that id). session_id continues "
        "a conversation; toolsets is accepted and ignored.",
    .args = ask_args,
    .output = toolspec_result_output,
    .hints = {.open_world = true},
    .scope = SCOPE_TASK,
    .handler = hermes_ask,
    .alias_of = "hermes_task",
};

const struct bridge_tool_spec tool_check_spec = {
    .name = "hermes_check",
    .title = "Check a task (alias of hermes_result)",
    .description =
        "Alias of hermes_result (its older name): the task job_id as it is now. While it "
        "runs: status \"running\" (call again later); once it ended: its result {id, "
        "status, summary, artifacts, next_steps}.",
    .args = check_args_spec,
    .output = toolspec_result_output,
    .hints = {.read_only = true, .idempotent = true},
    .scope = SCOPE_READ,
    .handler = hermes_check,
    .alias_of = "hermes_result",
};
