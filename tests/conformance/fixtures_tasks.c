/* fixtures_tasks.c — the tasks extension's conformance fixtures (MCP 2026-07-28,
 * io.modelcontextprotocol/tasks): the tools the suite's tasks-* scenarios call, over an
 * in-memory task table, through the engine's task interface (mcp_set_task_ops).
 *
 *   greet {name}               always synchronous: "Hello, <name>!"
 *   slow_compute {seconds,label} a task of <seconds> (0: answered at once); synchronous, after
 *                              the same wait, for a client without the extension
 *   confirm_delete {filename}  a task that waits for the user's yes (one elicitation)
 *   multi_input                a task that waits for two answers at once
 *   failing_job                task only: completes after a moment with a tool error
 *   protocol_error_job         task only: fails after a moment (a JSON-RPC error, no result)
 *   test_tool_with_task        task only: asks the user's name in an input-required round
 *                              first, then runs as a task that greets them
 *
 * A task belongs to the caller that created it (mcp_call_caller): another caller's id is
 * "not found". Tasks are kept for their ttlMs after their last change. */
#include "fixtures.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"

#define TASK_TTL_MS 300000
#define POLL_MS 200
#define JOB_MS 300

enum kind { SLOW, CONFIRM, MULTI, FAILING, PROTOCOL_ERROR, GREET_LATER };

struct task {
    struct task *next;
    char id[33];
    char caller[33];
    const char *status; /* working, input_required, completed, failed, cancelled */
    enum kind kind;
    char *label;
    time_t created, updated;
    uint64_t expires; /* loop time */
    json_t *pending; /* input_required: key -> request */
    json_t *answers;
    json_t *result, *error;
    struct loop_timer *timer;
};

static struct loop *loop;
static struct task *tasks;

static void iso_time(time_t t, char out[32])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void task_free(struct task *t)
{
    loop_timer_cancel(t->timer);
    json_decref(t->pending);
    json_decref(t->answers);
    json_decref(t->result);
    json_decref(t->error);
    free(t->label);
    free(t);
}

/* Drops tasks past their lifetime (at each new one: no timer of its own needed). */
static void sweep(void)
{
    for (struct task **pp = &tasks; *pp;) {
        struct task *t = *pp;
        if (t->timer == NULL && t->expires < loop_now(loop)) {
            *pp = t->next;
            task_free(t);
        } else {
            pp = &t->next;
        }
    }
}

static void touch(struct task *t, const char *status)
{
    t->status = status;
    t->updated = time(NULL);
    t->expires = loop_now(loop) + TASK_TTL_MS;
}

static json_t *text_result(const char *text, bool is_error)
{
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text, "isError",
                     is_error);
}

static json_t *elicit(const char *message, const char *field, const char *type)
{
    return json_pack("{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}", "method",
                     "elicitation/create", "params", "message", message, "requestedSchema",
                     "type", "object", "properties", field, "type", type, "required", field);
}

static void finish(struct task *t)
{
    char *text;
    switch (t->kind) {
    case SLOW:
        text = xasprintf("Computed %s", t->label);
        break;
    case CONFIRM: {
        json_t *c = json_object_get(json_object_get(json_object_get(t->answers, "confirm"),
                                                    "content"),
                                    "confirm");
        text = xasprintf("%s %s", json_is_true(c) ? "Deleted" : "Kept", t->label);
        break;
    }
    case MULTI:
        text = xasprintf("Received %zu answers", json_object_size(t->answers));
        break;
    case GREET_LATER:
        text = xasprintf("Hello, %s!", t->label);
        break;
    case FAILING:
        t->result = text_result("The job failed", true);
        touch(t, "completed");
        return;
    case PROTOCOL_ERROR:
    default:
        t->error = json_pack("{s:i, s:s}", "code", -32603, "message", "Internal error: the job "
                                                                      "broke");
        touch(t, "failed");
        return;
    }
    t->result = text_result(text, false);
    free(text);
    touch(t, "completed");
}

static void task_due(struct loop *l, void *arg)
{
    struct task *t = arg;
    (void)l;
    t->timer = NULL;
    finish(t);
}

static struct task *task_new(struct mcp_call *c, enum kind kind, const char *label,
                             unsigned run_ms)
{
    sweep();
    struct task *t = xcalloc(1, sizeof *t);
    if (!crypto_random_hex(t->id, 16))
        abort();
    snprintf(t->caller, sizeof t->caller, "%s", mcp_call_caller(c));
    t->kind = kind;
    t->label = xstrdup(label ? label : "");
    t->created = time(NULL);
    t->answers = json_object();
    touch(t, "working");
    if (run_ms)
        t->timer = loop_timer_add(loop, run_ms, task_due, t);
    t->next = tasks;
    tasks = t;
    return t;
}

static void task_wait_for(struct task *t, json_t *pending_take)
{
    t->pending = pending_take;
    touch(t, "input_required");
}

/* The CreateTaskResult: flat, no requestState. */
static void reply_created(struct mcp_call *c, struct task *t)
{
    char created[32];
    iso_time(t->created, created);
    mcp_call_result_take(c, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i}", "resultType", "task",
                                      "taskId", t->id, "status", t->status, "createdAt", created,
                                      "lastUpdatedAt", created, "ttlMs", TASK_TTL_MS,
                                      "pollIntervalMs", POLL_MS));
}

static bool wants_task(struct mcp_call *c)
{
    return mcp_call_client_extension(c, MCP_TASKS_EXTENSION);
}

static bool require_tasks(struct mcp_call *c)
{
    if (wants_task(c))
        return true;
    mcp_call_require_capability(c, json_pack("{s:{s:{}}}", "extensions", MCP_TASKS_EXTENSION),
                                "the tasks extension (" MCP_TASKS_EXTENSION ")");
    return false;
}

static void reply_text(struct mcp_call *c, const char *text)
{
    mcp_call_result_take(c, text_result(text, false));
}

/* ---- tools ---- */

static void greet(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    const char *name = json_string_value(json_object_get(args, "name"));
    char *text = xasprintf("Hello, %s!", name ? name : "World");
    reply_text(c, text);
    free(text);
}

struct held {
    struct mcp_call *call;
    struct loop_timer *timer;
    char *text;
};

static void held_cancel(struct mcp_call *c, void *arg)
{
    struct held *h = arg;
    (void)c;
    loop_timer_cancel(h->timer);
    free(h->text);
    free(h);
}

static void held_due(struct loop *l, void *arg)
{
    struct held *h = arg;
    (void)l;
    mcp_call_on_cancel(h->call, NULL, NULL);
    reply_text(h->call, h->text);
    free(h->text);
    free(h);
}

static void slow_compute(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    json_t *s = json_object_get(args, "seconds");
    const char *label = json_string_value(json_object_get(args, "label"));
    double seconds = json_is_number(s) ? json_number_value(s) : 1;
    if (seconds < 0 || seconds > 3600) {
        mcp_call_error(c, -32602, "Invalid params: seconds must be between 0 and 3600");
        return;
    }
    unsigned ms = (unsigned)(seconds * 1000);
    char *text = xasprintf("Computed %s", label ? label : "");
    if (ms == 0) { /* done before a task would be worth it */
        reply_text(c, text);
        free(text);
        return;
    }
    if (!wants_task(c)) { /* the same work, the caller waits */
        struct held *h = xcalloc(1, sizeof *h);
        h->call = c;
        h->text = text;
        h->timer = loop_timer_add(loop, ms, held_due, h);
        mcp_call_on_cancel(c, held_cancel, h);
        return;
    }
    free(text);
    reply_created(c, task_new(c, SLOW, label, ms));
}

static void confirm_delete(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    if (!require_tasks(c))
        return;
    const char *file = json_string_value(json_object_get(args, "filename"));
    struct task *t = task_new(c, CONFIRM, file, 0);
    char *msg = xasprintf("Delete %s?", t->label);
    task_wait_for(t, json_pack("{s:o}", "confirm", elicit(msg, "confirm", "boolean")));
    free(msg);
    reply_created(c, t);
}

static void multi_input(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    if (!require_tasks(c))
        return;
    struct task *t = task_new(c, MULTI, NULL, 0);
    task_wait_for(t, json_pack("{s:o, s:o}", "first_name", elicit("Your name?", "name", "string"),
                               "second_confirm", elicit("Confirm?", "confirm", "boolean")));
    reply_created(c, t);
}

static void failing_job(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    if (require_tasks(c))
        reply_created(c, task_new(c, FAILING, NULL, JOB_MS));
}

static void protocol_error_job(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    if (require_tasks(c))
        reply_created(c, task_new(c, PROTOCOL_ERROR, NULL, JOB_MS));
}

/* Input-required rounds first (synchronously), the task only on the last one. */
static void tool_with_task(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    if (!require_tasks(c))
        return;
    json_t *answer = json_object_get(mcp_call_input_responses(c), "user_name");
    const char *name = json_string_value(
        json_object_get(json_object_get(answer, "content"), "name"));
    if (name == NULL) {
        mcp_call_input_required(
            c, json_pack("{s:o}", "user_name", elicit("What is your name?", "name", "string")),
            NULL);
        return;
    }
    reply_created(c, task_new(c, GREET_LATER, name, JOB_MS));
}

/* ---- the task methods ---- */

static struct task *find(struct mcp_call *c, const char *id)
{
    for (struct task *t = tasks; t; t = t->next)
        if (strcmp(t->id, id) == 0 && strcmp(t->caller, mcp_call_caller(c)) == 0)
            return t;
    mcp_call_error(c, -32602, "Failed to retrieve task: Task not found");
    return NULL;
}

static void task_get(struct mcp_call *c, const char *id, void *arg)
{
    (void)arg;
    struct task *t = find(c, id);
    if (t == NULL)
        return;
    char created[32], updated[32];
    iso_time(t->created, created);
    iso_time(t->updated, updated);
    json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "taskId", t->id, "status", t->status,
                          "createdAt", created, "lastUpdatedAt", updated, "ttlMs", TASK_TTL_MS,
                          "pollIntervalMs", POLL_MS);
    if (strcmp(t->status, "input_required") == 0)
        json_object_set(r, "inputRequests", t->pending);
    else if (t->result) { /* the CallToolResult the call would have been: complete */
        json_t *result = json_deep_copy(t->result);
        json_object_set_new(result, "resultType", json_string("complete"));
        json_object_set_new(r, "result", result);
    }
    else if (t->error)
        json_object_set(r, "error", t->error);
    mcp_call_result_take(c, r);
}

static void task_update(struct mcp_call *c, const char *id, json_t *responses, void *arg)
{
    (void)arg;
    struct task *t = find(c, id);
    if (t == NULL)
        return;
    const char *key;
    json_t *v;
    json_object_foreach(responses, key, v)
    {
        if (!json_object_get(t->pending, key))
            continue; /* unknown or answered already: ignored */
        json_object_set(t->answers, key, v);
        json_object_del(t->pending, key);
    }
    if (strcmp(t->status, "input_required") == 0 && json_object_size(t->pending) == 0) {
        json_decref(t->pending);
        t->pending = NULL;
        touch(t, "working");
        t->timer = loop_timer_add(loop, 50, task_due, t);
    }
    mcp_call_result_take(c, json_object());
}

static void task_cancel(struct mcp_call *c, const char *id, void *arg)
{
    (void)arg;
    struct task *t = find(c, id);
    if (t == NULL)
        return;
    if (strcmp(t->status, "working") == 0 || strcmp(t->status, "input_required") == 0) {
        loop_timer_cancel(t->timer);
        t->timer = NULL;
        touch(t, "cancelled");
    }
    mcp_call_result_take(c, json_object()); /* the same ack on a finished task */
}

static const struct mcp_task_ops task_ops = {task_get, task_update, task_cancel};

static json_t *object_schema(const char *props)
{
    json_t *p = json_loads(props, 0, NULL);
    return json_pack("{s:s, s:o}", "type", "object", "properties", p ? p : json_object());
}

static void tool(struct mcp_server *m, const char *name, const char *desc, const char *props,
                 mcp_handler *h)
{
    mcp_add_tool(m, &(struct mcp_tool_def){.name = name, .description = desc,
                                           .input_schema = object_schema(props), .handler = h});
}

void fixtures_tasks_register(struct mcp_server *m, struct loop *l)
{
    loop = l;
    mcp_set_task_ops(m, &task_ops, NULL);
    tool(m, "greet", "Greets synchronously", "{\"name\":{\"type\":\"string\"}}", greet);
    tool(m, "slow_compute", "Computes for a number of seconds; a task when the client can",
         "{\"seconds\":{\"type\":\"number\"},\"label\":{\"type\":\"string\"}}", slow_compute);
    tool(m, "confirm_delete", "A task that asks the user before deleting a file",
         "{\"filename\":{\"type\":\"string\"}}", confirm_delete);
    tool(m, "multi_input", "A task that asks two questions at once", "{}", multi_input);
    tool(m, "failing_job", "A task (only) whose tool fails", "{}", failing_job);
    tool(m, "protocol_error_job", "A task (only) that fails with an error", "{}",
         protocol_error_job);
    tool(m, "test_tool_with_task", "Asks the user's name, then greets them in a task", "{}",
         tool_with_task);
}

void fixtures_tasks_free(void)
{
    while (tasks) {
        struct task *t = tasks;
        tasks = t->next;
        task_free(t);
    }
}
