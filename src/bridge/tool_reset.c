/* tool_reset.c — hermes_reset: rebuilds the run index from the task directory, for every
 * caller; nothing in flight is dropped. With a database (STORE_URL) the run index and the
 * records are the database's, and what this replica holds of them are copies: they are dropped
 * (the next call reads them again) and the runs this replica follows are read back, each one
 * without a follow here followed again. Needs confirmed: true, which the model is told to ask
 * the user for; without it the user is asked directly when the client can show a form
 * (elicitation). */
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
#include "taskspg.h"
#include "toolargs.h"

static const struct toolarg reset_args[] = {{.name = "confirmed", .type = TOOLARG_BOOL},
                                            TOOLARG_END};

static void count_status(json_t *by, const char *status)
{
    json_t *n = json_object_get(by, status);
    json_object_set_new(by, status, json_integer(n ? json_integer_value(n) + 1 : 1));
}

/* Run-index entries checked, then task directories indexed, per loop turn: each is a stat or a
 * read, and a large index or TASKS_DIR must not hold every other client's request for the
 * whole walk. */
#define RESET_BATCH 64

/* A reset in progress, one batch per loop turn: first the run index (entries whose task is
 * gone from disk and from memory are cleared), then the task directory (runs indexed, runs
 * without a result followed). */
struct reset {
    struct bridge *b;
    struct mcp_call *call;
    char **keys; /* the run ids in the index when the reset began */
    size_t nkeys, next_key;
    struct tasks_scan *scan;
    struct loop_timer *timer;
    json_t *by;
    json_int_t cleared;
    /* With a database: the read of the runs followed here is under way (the walk's state is
     * freed by its answer, which an abandoned reset finds detached), and what it did. */
    bool reading, detached;
    size_t dropped, followed;
};

static void collect_run(const char *run_id, void *task_id, void *arg)
{
    struct reset *r = arg;
    (void)task_id;
    r->keys[r->nkeys++] = xstrdup(run_id);
}

/* Clears the entry when its task is gone. Merged, not replaced: an entry whose run.json or
 * result.json is still being written is not on disk yet, and dropping it would lose the run
 * until a restart. */
static void check_run(struct reset *r, const char *run_id)
{
    struct bridge *b = r->b;
    const char *id = strmap_get(b->runs, run_id); /* gone already (pruned, say): nothing to do */
    if (id == NULL || strmap_get(b->jobs, id) || tasks_pending(b->tasks, id) ||
        tasks_exists(b->tasks, id))
        return;
    free(strmap_del(b->runs, run_id));
    r->cleared++;
}

static void reset_free(struct reset *r)
{
    for (size_t i = 0; i < r->nkeys; i++)
        free(r->keys[i]);
    free(r->keys);
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
    mcp_call_tool_result_take(r->call,
                              json_pack("{s:I, s:O}", "cleared", r->cleared, "by_status", r->by));
    reset_free(r);
}

static void reset_step(struct loop *l, void *arg)
{
    struct reset *r = arg;
    (void)l;
    r->timer = NULL;
    if (r->next_key < r->nkeys) {
        for (size_t n = 0; n < RESET_BATCH && r->next_key < r->nkeys; n++)
            check_run(r, r->keys[r->next_key++]);
        r->timer = loop_timer_add(r->b->loop, 0, reset_step, r);
        return;
    }
    if (r->scan == NULL) /* the index is checked: now the directory */
        r->scan = tasks_scan_open(r->b->tasks);
    if (r->scan && tasks_scan_step(r->scan, RESET_BATCH, runjob_index_task, r->b)) {
        r->timer = loop_timer_add(r->b->loop, 0, reset_step, r);
        return;
    }
    reset_finish(r);
}

/* Leaves a reset waiting for the database to its answer, which frees it. */
static void reset_detach(struct reset *r)
{
    r->detached = true;
    r->call = NULL;
    r->b->reset = NULL;
}

/* The client went away: the walk stops (what it indexed so far stays; nothing is lost). */
static void reset_cancelled(struct mcp_call *c, void *arg)
{
    struct reset *r = arg;
    (void)c;
    if (r->reading)
        reset_detach(r);
    else
        reset_free(r);
}

void tool_reset_abort(struct bridge *b)
{
    if (b->reset == NULL)
        return;
    mcp_call_on_cancel(b->reset->call, NULL, NULL);
    if (b->reset->reading)
        reset_detach(b->reset);
    else
        reset_free(b->reset);
}

/* ---------- with a database ---------- */

/* What the replica must keep of a task: what a job, a write or a result waiting here uses. */
static bool keep_cached(const char *id, void *arg)
{
    struct bridge *b = arg;
    return strmap_get(b->jobs, id) || tasks_pending(b->tasks, id) || unsaved_has(b, id);
}

static void refollow(const char *id, const char *run, void *arg)
{
    struct reset *r = arg;
    struct bridge *b = r->b;
    /* A result being written (queued behind a batch) ends the run: it is not followed again. */
    if (r->detached || strmap_get(b->jobs, id) || unsaved_has(b, id) || tasks_pending(b->tasks, id))
        return;
    runjob_take_over(id, run, b);
    if (strmap_get(b->jobs, id)) {
        log_info("task %s: its run is followed again (hermes_reset)", id);
        r->followed++;
    }
}

static void store_read_done(enum tasks_rc rc, size_t n, void *arg)
{
    struct reset *r = arg;
    (void)n;
    r->reading = false;
    if (r->detached) {
        r->b = NULL;
        json_decref(r->by);
        free(r);
        return;
    }
    struct bridge *b = r->b;
    mcp_call_on_cancel(r->call, NULL, NULL);
    json_object_set_new(r->by, "indexed_runs", json_integer((json_int_t)strmap_count(b->runs)));
    /* The copies are dropped whether the database answers or not; the runs it follows are read
     * back only when it does (a reset made while it is away says so, and may be made again). */
    bool read = rc == TASKS_OK;
    log_warn("hermes_reset: the task store's copies held here were dropped (%zu tasks, %lld run "
             "index entries); the runs this replica follows %s (%zu followed again); nothing in "
             "flight was dropped",
             r->dropped, (long long)r->cleared,
             read ? "were read back" : "could not be read back (the database is away)",
             r->followed);
    mcp_call_tool_result_take(
        r->call,
        json_pack("{s:I, s:O, s:s, s:I, s:I, s:s}", "cleared", r->cleared, "by_status", r->by,
                  "store", "database", "dropped", (json_int_t)r->dropped, "followed",
                  (json_int_t)r->followed, "message",
                  read ? "the run index and task records are the database's: the copies this "
                         "replica held were dropped and are read again when asked; the runs it "
                         "follows were read back from the database"
                       : "the run index and task records are the database's: the copies this "
                         "replica held were dropped and are read again when asked; the runs it "
                         "follows could not be read back (the database is away): call "
                         "hermes_reset again once it is back"));
    reset_free(r);
}

static void collect_index(const char *run_id, void *task_id, void *arg)
{
    json_object_set_new(arg, run_id, json_string(task_id));
}

/* The run index entries and cached records go, but a job's (the database answers the next
 * lookup); then the runs this replica follows are read back. */
static void store_reset(struct reset *r)
{
    struct bridge *b = r->b;
    json_t *index = json_object();
    strmap_each(b->runs, collect_index, index);
    const char *run_id;
    json_t *task;
    json_object_foreach(index, run_id, task)
    {
        bridge_run_forget(b, run_id, json_string_value(task));
        if (strmap_get(b->runs, run_id) == NULL)
            r->cleared++;
    }
    json_decref(index);
    r->dropped = taskspg_forget(tasks_pg(b->tasks), keep_cached, b);
    r->reading = true;
    taskspg_followed(tasks_pg(b->tasks), refollow, store_read_done, r);
}

/* Starts the walk (confirmed by the caller or the user). */
static void start_reset(struct bridge *b, struct mcp_call *c)
{
    /* Nothing in flight is dropped: a followed run still gets its result.json when it ends,
     * a waiting call still gets its answer (dropping them lost results until a restart). What
     * is reset is the run index, rebuilt from the task directory: entries whose task is gone
     * are cleared, runs on disk without a result are followed (again, if they were not). */
    if (b->reset) {
        bridge_tool_error(c, TE_BUSY, 1, "a hermes_reset is already running");
        return;
    }
    json_t *by = json_object();
    size_t n;
    void **v = strmap_values(b->jobs, &n);
    for (size_t i = 0; i < n; i++)
        count_status(by, ((struct job *)v[i])->ops->kind == JOB_FOLLOW ? "following" : "in_flight");
    free(v);
    struct reset *r = xcalloc(1, sizeof *r);
    r->b = b;
    r->call = c;
    r->by = by;
    if (tasks_remote(b->tasks)) {
        b->reset = r;
        log_event(EV_RESET_STARTED, LOG_FIELDS(LF_N("entries", strmap_count(b->runs))),
                  "hermes_reset: dropping the task store's copies held here (%zu run index "
                  "entries), then reading back the runs this replica follows",
                  strmap_count(b->runs));
        mcp_call_on_cancel(c, reset_cancelled, r);
        store_reset(r);
        return;
    }
    r->keys = xcalloc(strmap_count(b->runs) + 1, sizeof *r->keys);
    strmap_each(b->runs, collect_run, r); /* copies only: the checks come in steps */
    b->reset = r;
    log_event(EV_RESET_STARTED, LOG_FIELDS(LF_N("entries", r->nkeys)),
              "hermes_reset: checking %zu run index entries, then the task directory", r->nkeys);
    mcp_call_on_cancel(c, reset_cancelled, r);
    r->timer = loop_timer_add(b->loop, 0, reset_step, r);
}

#define ASK_MESSAGE                                                                                \
    "An agent asks to rebuild the Hermes bridge's job bookkeeping (the run index) from the "       \
    "task directory, for every caller. Results are kept and nothing in flight is dropped."

/* The elicitation that asks the user (form mode: one boolean). */
static json_t *ask_params(void)
{
    return json_pack("{s:s, s:{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}}", "message", ASK_MESSAGE,
                     "requestedSchema", "type", "object", "properties", "confirm", "type",
                     "boolean", "title", "Rebuild the job bookkeeping", "description",
                     "Yes: rebuild it now", "required", "confirm");
}

/* Whether an elicitation result (ElicitResult) says yes. */
static bool user_said_yes(json_t *result)
{
    const char *action = json_string_value(json_object_get(result, "action"));
    return action && strcmp(action, "accept") == 0 &&
           json_is_true(json_object_get(json_object_get(result, "content"), "confirm"));
}

static void refuse_unconfirmed(struct mcp_call *c, const char *why)
{
    bridge_tool_error(c, TE_CONFIRMATION_REQUIRED, 0, "%s", why);
}

/* Session era: the answer to our elicitation/create request. */
static void legacy_answer(struct mcp_call *c, json_t *result, json_t *error, void *arg)
{
    struct bridge *b = arg;
    (void)error;
    if (user_said_yes(result))
        start_reset(b, c);
    else
        refuse_unconfirmed(c, result ? "the user did not confirm hermes_reset"
                                     : "hermes_reset was not confirmed (no answer from the "
                                       "client)");
}

/* Without confirmed: true the user is asked, when the client can show a form. 2026-07-28: an
 * input-required round whose sealed state says we asked; before: an elicitation request on the
 * call's stream. Else the model is told to get the user's confirmation. */
static bool ask_user(struct bridge *b, struct mcp_call *c)
{
    if (!mcp_call_client_supports(c, "elicitation.form"))
        return false;
    if (!mcp_call_is_modern(c))
        return mcp_call_request(c, "elicitation/create", ask_params(), legacy_answer, b);
    json_t *asked = json_object_get(mcp_call_input_state(c), "asked");
    json_t *answer = json_object_get(mcp_call_input_responses(c), "confirm");
    if (json_is_true(asked) && answer) {
        if (user_said_yes(answer))
            start_reset(b, c);
        else
            refuse_unconfirmed(c, "the user did not confirm hermes_reset");
        return true;
    }
    mcp_call_input_required(c,
                            json_pack("{s:{s:s, s:o}}", "confirm", "method", "elicitation/create",
                                      "params", ask_params()),
                            json_pack("{s:b}", "asked", 1));
    return true;
}

static void hermes_reset(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *a[ARGS_MAX];
    if (!toolspec_check_args(c, reset_args, args, a))
        return;
    if (json_is_true(a[0])) {
        start_reset(b, c);
        return;
    }
    if (!ask_user(b, c))
        refuse_unconfirmed(c, "hermes_reset rebuilds the job bookkeeping of every caller; call "
                              "it again with confirmed: true");
}

static const char *const reset_stores[] = {"database", NULL};

static const struct toolout reset_output[] = {
    {.name = "cleared", .type = TOOLOUT_INT, .required = true},
    {.name = "by_status", .type = TOOLOUT_OBJECT, .required = true},
    /* With a database: what was dropped and read back. */
    {.name = "store", .type = TOOLOUT_STRING, .one_of = reset_stores},
    {.name = "dropped", .type = TOOLOUT_INT},
    {.name = "followed", .type = TOOLOUT_INT},
    {.name = "message", .type = TOOLOUT_STRING},
    TOOLOUT_END,
};

const struct bridge_tool_spec tool_reset_spec = {
    .name = "hermes_reset",
    .title = "Reset the job bookkeeping",
    .description = "GLOBAL: rebuilds the bridge's job bookkeeping (the run index) from the "
                   "task directory (with a database: drops the copies this server holds and "
                   "reads back the runs it follows), for every caller; results are kept and "
                   "nothing in flight is dropped (followed runs still get their results). Ask "
                   "the user before calling it when other work may be in flight. Needs "
                   "confirmed: true, or the user's yes when the client supports elicitation.",
    .args = reset_args,
    .output = reset_output,
    .hints = {.destructive = true},
    .scope = SCOPE_ADMIN,
    .handler = hermes_reset,
};
