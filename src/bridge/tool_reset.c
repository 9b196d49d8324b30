/* tool_reset.c — hermes_reset: rebuilds the run index from the task directory, for every
 * caller; nothing in flight is dropped. Needs confirmed: true, which the model is told to ask
 * the user for. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"
#include "toolargs.h"

static const struct toolarg reset_args[] = {
    {.name = "confirmed", .type = TOOLARG_BOOL}, TOOLARG_END};

static void count_status(json_t *by, const char *status)
{
    json_t *n = json_object_get(by, status);
    json_object_set_new(by, status, json_integer(n ? json_integer_value(n) + 1 : 1));
}

/* Run-index entries whose task is gone from disk and from memory (removed by hand, say). */
struct stale {
    struct bridge *b;
    char **keys;
    size_t n;
};

static void collect_stale_run(const char *run_id, void *task_id, void *arg)
{
    struct stale *st = arg;
    const char *id = task_id;
    if (strmap_get(st->b->jobs, id) || tasks_pending(st->b->tasks, id) ||
        tasks_exists(st->b->tasks, id))
        return;
    st->keys = xrealloc(st->keys, (st->n + 1) * sizeof *st->keys);
    st->keys[st->n++] = xstrdup(run_id);
}

/* Task directories indexed per loop turn: the walk of a large TASKS_DIR (a read and a stat per
 * task) must not hold every other client's request for its whole length. */
#define RESET_BATCH 64

/* A reset walking the task directory, one batch per loop turn. */
struct reset {
    struct bridge *b;
    struct mcp_call *call;
    struct tasks_scan *scan;
    struct loop_timer *timer;
    json_t *by;
    json_int_t cleared;
};

static void reset_free(struct reset *r)
{
    loop_timer_cancel(r->timer);
    tasks_scan_close(r->scan);
    json_decref(r->by);
    r->b->reset = NULL;
    free(r);
}

static void reset_finish(struct reset *r)
{
    struct bridge *b = r->b;
    size_t after = strmap_count(b->runs);
    json_object_set_new(r->by, "indexed_runs", json_integer((json_int_t)after));
    log_warn("hermes_reset: run index rebuilt from the task directory (%zu runs, %lld stale "
             "entries cleared); nothing in flight was dropped",
             after, (long long)r->cleared);
    mcp_call_on_cancel(r->call, NULL, NULL);
    mcp_call_tool_result_take(r->call, json_pack("{s:I, s:O}", "cleared", r->cleared,
                                                 "by_status", r->by));
    reset_free(r);
}

static void reset_step(struct loop *l, void *arg)
{
    struct reset *r = arg;
    (void)l;
    r->timer = NULL;
    if (r->scan && tasks_scan_step(r->scan, RESET_BATCH, index_task, r->b)) {
        r->timer = loop_timer_add(r->b->loop, 0, reset_step, r);
        return;
    }
    reset_finish(r);
}

/* The client went away: the walk stops (what it indexed so far stays; nothing is lost). */
static void reset_cancelled(struct mcp_call *c, void *arg)
{
    (void)c;
    reset_free(arg);
}

void reset_abort(struct bridge *b)
{
    if (b->reset == NULL)
        return;
    mcp_call_on_cancel(b->reset->call, NULL, NULL);
    reset_free(b->reset);
}

static void hermes_reset(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *a[ARGS_MAX];
    if (!check_args(c, reset_args, args, a))
        return;
    if (!json_is_true(a[0])) {
        tool_error(c, TE_CONFIRMATION_REQUIRED, 0,
                   "hermes_reset rebuilds the job bookkeeping of every caller; call it again "
                   "with confirmed: true");
        return;
    }
    /* Nothing in flight is dropped: a followed run still gets its result.json when it ends,
     * a waiting call still gets its answer (dropping them lost results until a restart). What
     * is reset is the run index, rebuilt from the task directory: entries whose task is gone
     * are cleared, runs on disk without a result are followed (again, if they were not). */
    if (b->reset) {
        tool_error(c, TE_BUSY, 1, "a hermes_reset is already running");
        return;
    }
    json_t *by = json_object();
    size_t n;
    void **v = strmap_values(b->jobs, &n);
    for (size_t i = 0; i < n; i++)
        count_status(by, ((struct job *)v[i])->kind == JOB_FOLLOW ? "following" : "in_flight");
    free(v);
    /* Merged, not replaced: an entry whose run.json or result.json is still being written is
     * not on disk yet, and dropping it would lose the run until a restart. */
    struct stale stale = {.b = b};
    strmap_each(b->runs, collect_stale_run, &stale);
    for (size_t i = 0; i < stale.n; i++) {
        free(strmap_del(b->runs, stale.keys[i]));
        free(stale.keys[i]);
    }
    free(stale.keys);
    struct reset *r = xcalloc(1, sizeof *r);
    r->b = b;
    r->call = c;
    r->by = by;
    r->cleared = (json_int_t)stale.n;
    r->scan = tasks_scan_open(b->tasks); /* NULL: nothing to walk, answered at once below */
    b->reset = r;
    mcp_call_on_cancel(c, reset_cancelled, r);
    r->timer = loop_timer_add(b->loop, 0, reset_step, r);
}

void tool_reset_register(struct bridge *b)
{
    mcp_add_tool(b->mcp, &(struct mcp_tool_def){
        .name = "hermes_reset",
        .title = "Reset the job bookkeeping",
        .description = "GLOBAL: rebuilds the bridge's job bookkeeping (the run index) from the "
                       "task directory, for every caller; result files are kept and nothing in "
                       "flight is dropped (followed runs still get their results). Ask the user "
                       "before calling it when other work may be in flight. Needs confirmed: "
                       "true.",
        .input_schema = toolargs_schema(reset_args),
        .output_schema = toolerr_output_schema(schema_obj(
            "{\"type\":\"object\",\"properties\":{\"cleared\":{\"type\":\"integer\"},"
            "\"by_status\":{\"type\":\"object\"}},\"required\":[\"cleared\",\"by_status\"]}")),
        .annotations = tool_annotations(false, true, false, false),
        .handler = hermes_reset,
        .arg = b});
}
