/* taskload.c — with the task records in a database (STORE_URL), a tool call or tasks/ request
 * about a task first loads that task (tasks_load, on the loop), then runs the handler, which
 * reads it as it reads a file. Any replica may have written the task: the load is what makes
 * its records current here. While the database is away the call is answered "unavailable"
 * (HTTP 503 with Retry-After, mcp.h) and nothing is done. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "mem.h"
#include "strmap.h"
#include "taskpath.h"
#include "tasks.h"

struct taskload {
    struct bridge *b;
    const struct bridge_tool_spec *tool; /* a tool call, or */
    const struct mcp_task_ops *ops;      /* a tasks/ request (which of them: op) */
    int op;
    struct mcp_call *c;
    json_t *args;  /* the tool's arguments, or tasks/update's inputResponses */
    char key[129]; /* the task id, or the run id asked about */
    bool by_run;
};

enum { OP_GET, OP_UPDATE, OP_CANCEL };

static void unavailable(struct mcp_call *c, unsigned wait)
{
    mcp_call_unavailable(c, wait,
                         "Temporarily unavailable: the task store's database cannot be reached; "
                         "try again later");
}

/* Whether the tool starts a new task (hermes_task, or its older name). */
static bool new_task(const struct bridge_tool_spec *t)
{
    return t == &tool_task_spec || (t->alias_of && strcmp(t->alias_of, "hermes_task") == 0);
}

static void loaded(enum tasks_rc rc, const char *task_id, void *arg)
{
    struct taskload *l = arg;
    struct bridge *b = l->b;
    if (l->c == NULL) { /* the call went away meanwhile (load_cancelled) */
        json_decref(l->args);
        free(l);
        return;
    }
    mcp_call_on_cancel(l->c, NULL, NULL); /* the handler sets its own, if it waits */
    if (rc == TASKS_UNAVAILABLE || rc == TASKS_IO) {
        unavailable(l->c, tasks_retry_after_s(b->tasks));
    } else {
        /* The run index is the database's: this replica learns the entry it was asked for,
         * for this call only (handlers read it before they return). */
        char learnt[129] = "";
        if (rc == TASKS_OK && l->by_run) {
            if (strmap_get(b->runs, l->key) == NULL)
                snprintf(learnt, sizeof learnt, "%s", task_id);
            bridge_run_index(b, l->key, task_id);
        }
        if (l->tool)
            l->tool->handler(l->c, l->args, b);
        else if (l->op == OP_GET)
            l->ops->get(l->c, l->key, b);
        else if (l->op == OP_UPDATE)
            l->ops->update(l->c, l->key, l->args, b);
        else
            l->ops->cancel(l->c, l->key, b);
        if (learnt[0])
            bridge_run_forget(b, l->key, learnt);
    }
    json_decref(l->args);
    free(l);
}

/* The call ended before its task was loaded (the client went, the server stops): the load's
 * answer finds no call to go on with. */
static void load_cancelled(struct mcp_call *c, void *arg)
{
    struct taskload *l = arg;
    (void)c;
    l->c = NULL;
}

/* Loads the task (id) or the run's task (run_id), then goes on as l says. */
static void load(struct taskload *l, const char *id, const char *run_id)
{
    mcp_call_on_cancel(l->c, load_cancelled, l);
    snprintf(l->key, sizeof l->key, "%s", id ? id : run_id);
    l->by_run = id == NULL;
    tasks_load(l->b->tasks, id, id ? NULL : run_id, loaded, l);
}

static const char *arg_id(json_t *args, const char *name)
{
    const char *s = json_string_value(json_object_get(args, name));
    return s && taskpath_id_ok(s, strlen(s)) ? s : NULL;
}

void taskload_tool(struct mcp_call *c, json_t *args, void *arg)
{
    struct taskload *w = arg; /* the tool's own: b and tool */
    const char *id = arg_id(args, "id");
    if (id == NULL)
        id = arg_id(args, "job_id");
    const char *run_id = json_string_value(json_object_get(args, "run_id"));
    if (run_id && strlen(run_id) >= sizeof w->key)
        run_id = NULL;
    if (id == NULL && run_id == NULL) {
        /* Nothing to load. A new task is written to the database, though: while it is away,
         * refused before the agent is asked to do anything. Else the handler says what is
         * wrong, or needs no task (list_agents). */
        unsigned wait = tasks_retry_after_s(w->b->tasks);
        if (wait && new_task(w->tool)) {
            unavailable(c, wait);
            return;
        }
        w->tool->handler(c, args, w->b);
        return;
    }
    struct taskload *l = xcalloc(1, sizeof *l);
    l->b = w->b;
    l->tool = w->tool;
    l->c = c;
    l->args = json_incref(args);
    load(l, id, run_id);
}

static void task_op(struct mcp_call *c, const char *task_id, json_t *input, int op, void *arg)
{
    struct taskload *w = arg;
    if (!taskpath_id_ok(task_id, strlen(task_id))) {
        if (op == OP_GET)
            w->ops->get(c, task_id, w->b);
        else if (op == OP_UPDATE)
            w->ops->update(c, task_id, input, w->b);
        else
            w->ops->cancel(c, task_id, w->b);
        return;
    }
    struct taskload *l = xcalloc(1, sizeof *l);
    l->b = w->b;
    l->ops = w->ops;
    l->op = op;
    l->c = c;
    l->args = input ? json_incref(input) : NULL;
    load(l, task_id, NULL);
}

static void task_get(struct mcp_call *c, const char *task_id, void *arg)
{
    task_op(c, task_id, NULL, OP_GET, arg);
}

static void task_update(struct mcp_call *c, const char *task_id, json_t *input, void *arg)
{
    task_op(c, task_id, input, OP_UPDATE, arg);
}

static void task_cancel(struct mcp_call *c, const char *task_id, void *arg)
{
    task_op(c, task_id, NULL, OP_CANCEL, arg);
}

const struct mcp_task_ops taskload_task_ops = {task_get, task_update, task_cancel};

struct taskload *taskload_for_tool(struct bridge *b, const struct bridge_tool_spec *t)
{
    struct taskload *w = xcalloc(1, sizeof *w);
    w->b = b;
    w->tool = t;
    return w;
}

struct taskload *taskload_for_tasks(struct bridge *b, const struct mcp_task_ops *ops)
{
    struct taskload *w = xcalloc(1, sizeof *w);
    w->b = b;
    w->ops = ops;
    return w;
}
