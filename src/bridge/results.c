/* results.c — result.json: the record written when a task ends (from a sync answer, a
 * terminal run, or a status such as cancelled), and the one public projection of it that
 * hermes_task, a retry and hermes_result all return. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "contract.h"
#include "mcp.h"
#include "mem.h"
#include "taskfilespg.h"
#include "tasks.h"

/* ---------- results ---------- */

json_t *results_public(json_t *r)
{
    /* What hermes_task and hermes_result return: the contract fields plus id. */
    json_t *o = json_pack(
        "{s:O?, s:O?, s:O?, s:O?, s:O?}", "id", json_object_get(r, "id"), "status",
        json_object_get(r, "status"), "summary", json_object_get(r, "summary"), "artifacts",
        json_object_get(r, "artifacts"), "next_steps", json_object_get(r, "next_steps"));
    json_t *details = json_object_get(r, "details");
    if (details)
        json_object_set(o, "details", details);
    json_t *run = json_object_get(r, "run_id");
    if (run)
        json_object_set(o, "run_id", run);
    return o;
}

/* Whether storing task id's result must tell the streams watching it from here: with task
 * files; with a database every replica hears of it from the database instead (taskwatch.c). */
static bool watched_here(struct bridge *b, const char *id)
{
    return !tasks_remote(b->tasks) && mcp_task_watched(b->mcp, id);
}

json_t *results_record(const char *id, const char *agent, json_t *parsed, const char *run_id)
{
    json_t *r = json_pack(
        "{s:s, s:O, s:O, s:O, s:O, s:s, s:o}", "id", id, "status",
        json_object_get(parsed, "status"), "summary", json_object_get(parsed, "summary"),
        "artifacts", json_object_get(parsed, "artifacts"), "next_steps",
        json_object_get(parsed, "next_steps"), "agent", agent, "completed_at", bridge_iso_now());
    if (json_object_get(parsed, "details"))
        json_object_set(r, "details", json_object_get(parsed, "details"));
    if (json_object_get(parsed, "error"))
        json_object_set(r, "error", json_object_get(parsed, "error"));
    if (run_id && *run_id)
        json_object_set_new(r, "run_id", json_string(run_id));
    return r;
}

/* Queues result.json; c (if any) gets answer once it is durable. An MCP task watched on a
 * subscriptions/listen stream hears of its end (mcptask.c); with a database, through the end
 * every replica hears (taskwatch.c). */
static void store_answered(struct bridge *b, const char *id, json_t *r, struct mcp_call *c,
                           json_t *answer)
{
    bridge_store_then(b, id, "result.json", r, c, answer,
                      watched_here(b, id) ? b->task_ended : NULL);
}

struct written;
static void store_written(struct bridge *b, const char *id, json_t *r, struct written *w);

/* With STORE_URL, a result waits for the copy of the files the agent left here
 * (taskfilespg.h): once a client or another replica sees the result, hermes_files has them.
 * The task stays busy meanwhile (tasks_hold), as it is while its write is queued, so that a
 * retry neither starts it again nor finds it without a result. */
struct files_first {
    struct bridge *b;
    char id[129];
    json_t *record;
    struct mcp_call *c; /* NULL once the call went away */
    json_t *answer;
    struct written *w; /* the follower's write (results_write_record_then), or NULL */
};

static void files_first_cancelled(struct mcp_call *c, void *arg)
{
    struct files_first *f = arg;
    (void)c;
    f->c = NULL;
}

static void files_copied(void *arg)
{
    struct files_first *f = arg;
    tasks_release(f->b->tasks, f->id);
    if (f->c)
        mcp_call_on_cancel(f->c, NULL, NULL);
    if (f->w)
        store_written(f->b, f->id, f->record, f->w);
    else
        store_answered(f->b, f->id, f->record, f->c, f->answer); /* takes answer */
    json_decref(f->record);
    free(f);
}

/* True when a copy started: the result is stored once it ends (w: by store_written, else
 * answering c). */
static bool after_files(struct bridge *b, const char *id, json_t *r, struct mcp_call *c,
                        json_t *answer, struct written *w)
{
    if (b->files_pg == NULL)
        return false;
    struct files_first *f = xcalloc(1, sizeof *f);
    f->b = b;
    snprintf(f->id, sizeof f->id, "%s", id);
    f->record = json_incref(r);
    f->c = c;
    f->answer = answer;
    f->w = w;
    if (!taskfilespg_capture(b->files_pg, id, files_copied, f)) {
        json_decref(f->record);
        free(f);
        return false;
    }
    tasks_hold(b->tasks, id);
    if (c)
        mcp_call_on_cancel(c, files_first_cancelled, f);
    return true;
}

/* Writes result.json; c (if any) gets answer once it is durable. answer NULL: c gets the
 * record's public projection, the same one a retry and hermes_result give. */
void results_write(struct bridge *b, const char *id, const char *agent, json_t *parsed,
                   const char *run_id, struct mcp_call *c, json_t *answer)
{
    json_t *r = results_record(id, agent, parsed, run_id);
    if (answer == NULL && c)
        answer = mcp_tool_result(results_public(r));
    if (!after_files(b, id, r, c, answer, NULL))
        store_answered(b, id, r, c, answer);
    json_decref(r);
}

void results_write_status(struct bridge *b, const char *id, const char *agent, const char *status,
                          const char *summary, const char *run_id, struct mcp_call *c,
                          json_t *answer)
{
    json_t *p = json_pack("{s:s, s:s, s:[], s:[]}", "status", status, "summary", summary,
                          "artifacts", "next_steps");
    results_write(b, id, agent, p, run_id, c, answer);
    json_decref(p);
}

static const char *const terminal[] = {"completed", "failed", "cancelled", "interrupted"};

bool results_is_terminal(const char *s)
{
    for (size_t i = 0; s && i < 4; i++)
        if (strcmp(s, terminal[i]) == 0)
            return true;
    return false;
}

json_t *results_run_outcome(json_t *run)
{
    const char *status = json_string_value(json_object_get(run, "status"));
    json_t *output = json_object_get(run, "output");
    if (strcmp(status, "completed") == 0 && json_is_string(output))
        return contract_parse_answer(json_string_value(output), json_string_length(output));
    json_t *err = json_object_get(run, "error");
    const char *msg = json_is_string(err) ? json_string_value(err)
                                          : json_string_value(json_object_get(err, "message"));
    json_t *parsed = json_pack("{s:s, s:s, s:[], s:[]}", "status", status, "summary",
                               msg ? msg : "", "artifacts", "next_steps");
    if (msg)
        json_object_set_new(parsed, "error", json_string(msg));
    return parsed;
}

/* Writes result.json from a terminal run object; c (if any) gets answer once it is durable. */
void results_from_run(struct bridge *b, const char *id, const char *agent, json_t *run,
                      struct mcp_call *c, json_t *answer)
{
    json_t *parsed = results_run_outcome(run);
    results_write(b, id, agent, parsed, json_string_value(json_object_get(run, "run_id")), c,
                  answer);
    json_decref(parsed);
}

/* A write results_write_then made: who hears how it went. */
struct written {
    struct bridge *b;
    char id[129];
    bool watched; /* an MCP task on a subscriptions/listen stream: told once it is stored */
    tasks_done_cb *done;
    void *arg;
};

static void written(enum tasks_rc rc, void *arg)
{
    struct written *w = arg;
    if (rc == TASKS_OK && w->watched && w->b->task_ended)
        w->b->task_ended(w->b, w->id);
    w->done(rc, w->arg);
    free(w);
}

static void store_written(struct bridge *b, const char *id, json_t *r, struct written *w)
{
    enum tasks_rc rc = tasks_write(b->tasks, id, "result.json", r, written, w);
    if (rc != TASKS_OK) /* never queued: done hears it all the same */
        written(rc, w);
}

void results_write_record_then(struct bridge *b, const char *id, json_t *r, tasks_done_cb *done,
                               void *arg)
{
    struct written *w = xcalloc(1, sizeof *w);
    w->b = b;
    snprintf(w->id, sizeof w->id, "%s", id);
    w->watched = watched_here(b, id);
    w->done = done;
    w->arg = arg;
    if (!after_files(b, id, r, NULL, NULL, w))
        store_written(b, id, r, w);
}
