/* runjob.c — an async task: POST /v1/runs (Idempotency-Key: the owner's tag and the task id),
 * run.json written before the call is answered, then the run followed by polling
 * GET /v1/runs/{id} until it is terminal and its result.json is written (also after a restart:
 * runjob_index_task finds the runs with run.json but no result.json). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agentclient.h"
#include "bridge_internal.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"

/* ---------- async: POST /v1/runs, then follow ---------- */

static void follow_poll(struct loop *l, void *arg);

/* A follow has no waiting call and schedules its own polls. */
static const struct job_ops follow_ops = {.kind = JOB_FOLLOW};

/* How far the wait between polls of a run whose agent is not configured (after a restart)
 * grows, if HERMES_POLL_MS itself is shorter. */
#define FOLLOW_BACKOFF_MAX_MS 60000

static void follow_schedule(struct job *j)
{
    uint64_t poll = j->b->opts.poll_ms, ms = poll;
    uint64_t cap = poll > FOLLOW_BACKOFF_MAX_MS ? poll : FOLLOW_BACKOFF_MAX_MS;
    for (unsigned i = 0; i < j->follow_misses && ms < cap; i++)
        ms *= 2;
    if (ms > cap)
        ms = cap;
    j->timer = loop_timer_add(j->b->loop, ms, follow_poll, j);
}

/* A run that ended, its result being written. A write the store could not make (its database
 * away) must not lose the result: the record is kept and written again (unsaved.c) without
 * asking the agent, which may forget the run meanwhile. Beyond that module's bound the run is
 * followed again once the store may be back, and its result written then. */
struct ending {
    struct bridge *b;
    char id[129], agent[65], run_id[128];
    char *base_url, *key, *owner; /* the job's, for the follow that tries again */
    json_t *record;               /* the result record being written */
};

static void ending_written(enum tasks_rc rc, void *arg)
{
    struct ending *e = arg;
    struct bridge *b = e->b;
    /* b->jobs is NULL once the bridge stops: the run is followed again at the next start (or
     * taken over by another replica), as a run whose result was never written. */
    /* Only a database that is away: a file store's I/O error (a full disk) would come back at
     * every try for ever, so it is logged by the write and the result dropped, as before. */
    if (rc == TASKS_UNAVAILABLE && b->jobs && unsaved_keep(b, e->id, e->record)) {
        log_warn("task %s: run %s ended but its result could not be stored (the task store's "
                 "database is away); the result is kept and stored once it is back",
                 e->id, e->run_id);
    } else if (rc == TASKS_UNAVAILABLE && b->jobs) {
        unsigned wait = tasks_retry_after_s(b->tasks);
        uint64_t ms = wait ? wait * 1000ull : b->opts.poll_ms;
        log_warn("task %s: run %s ended but its result could not be stored (the task store's "
                 "database is away); the run is asked for again in %llu ms",
                 e->id, e->run_id, (unsigned long long)ms);
        struct job *f = runjob_follow(b, e->id, e->agent, e->run_id);
        if (f) {
            f->base_url = e->base_url;
            f->key = e->key;
            f->owner = e->owner;
            e->base_url = e->key = e->owner = NULL;
            loop_timer_cancel(f->timer);
            f->timer = loop_timer_add(b->loop, ms, follow_poll, f);
        }
    }
    json_decref(e->record);
    free(e->base_url);
    wipe_free(e->key);
    free(e->owner);
    free(e);
}

/* Ends the follow of j: parsed_take is the run's outcome, written as its result. */
static void follow_end(struct job *j, json_t *parsed_take)
{
    struct bridge *b = j->b;
    struct ending *e = xcalloc(1, sizeof *e);
    e->b = b;
    snprintf(e->id, sizeof e->id, "%s", j->id);
    snprintf(e->agent, sizeof e->agent, "%s", j->agent);
    snprintf(e->run_id, sizeof e->run_id, "%s", j->run_id);
    e->base_url = j->base_url;
    e->key = j->key;
    e->owner = j->owner;
    j->base_url = j->key = j->owner = NULL;
    bridge_job_free(j);
    bridge_run_forget(b, e->run_id, e->id); /* with a database: no longer followed here */
    e->record = results_record(e->id, e->agent, parsed_take, e->run_id);
    json_decref(parsed_take);
    results_write_record_then(b, e->id, e->record, ending_written, e);
}

static void follow_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    (void)r;
    j->req = NULL;
    if (res->status == 200) {
        json_t *run = json_loadb(res->body, res->body_len, 0, NULL);
        const char *st = json_string_value(json_object_get(run, "status"));
        if (results_is_terminal(st)) {
            log_info("task %s: run %s ended %s", j->id, j->run_id, st);
            follow_end(j, results_run_outcome(run));
            json_decref(run);
            return;
        }
        runapproval_seen(j, run);
        json_decref(run);
    } else if (res->status == 404) {
        follow_end(j, json_pack("{s:s, s:s, s:[], s:[]}", "status", "interrupted", "summary",
                                "the agent no longer knows this run (restarted or expired)",
                                "artifacts", "next_steps"));
        return;
    } else if (res->status == 401) {
        log_event(EV_AGENT_KEY_REJECTED, LOG_FIELDS(LF_S("agent", j->agent)),
                  "agent %s rejected our API key while following run %s", j->agent, j->run_id);
    }
    follow_schedule(j); /* busy, unreachable, or still running: try again later */
}

/* The stop a tasks/cancel asked for while the run was being submitted: answered, or the run
 * is over or unknown there (the next poll says how it ended); else it is tried again. */
static void follow_stopped(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    (void)r;
    j->req = NULL;
    if (res->status == 200 || res->status == 409 || res->status == 404) {
        j->stop_pending = false;
        log_info("task %s: run %s stopped (tasks/cancel during its submission)", j->id, j->run_id);
    }
    follow_schedule(j);
}

static void follow_poll(struct loop *l, void *arg)
{
    struct job *j = arg;
    (void)l;
    j->timer = NULL;
    /* A run outlives tool calls: without this, an agent put back in the registry file would
     * not be seen until some tool call or SIGHUP re-read it. Only a stat: probing every agent
     * from here would wake them all for one run. */
    agents_registry_refresh(j->b);
    struct agentdef *a = bridge_find_agent(j->b, j->agent);
    if (a && a->key) /* as configured now (a new key, a new address) */
        bridge_job_use_agent(j, a);
    if (j->key == NULL) {
        /* Not configured, and never known to this process (a restart): wait for it, less and
         * less often. */
        if (j->follow_misses++ == 0)
            log_warn("task %s: agent %s is not configured; run %s is polled when it is", j->id,
                     j->agent, j->run_id);
        follow_schedule(j);
        return;
    }
    j->follow_misses = 0;
    char path[200];
    snprintf(path, sizeof path, "/v1/runs/%s%s", j->run_id, j->stop_pending ? "/stop" : "");
    char *url = agentcfg_url(j->base_url, path);
    struct agent_opts o = {.method = j->stop_pending ? "POST" : "GET",
                           .url = url,
                           .key = j->key,
                           .body = j->stop_pending ? "{}" : NULL,
                           .body_len = j->stop_pending ? 2 : 0,
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS,
                           .deadline_ms = 30000,
                           .max_response = RESPONSE_MAX,
                           .on_done = j->stop_pending ? follow_stopped : follow_done,
                           .arg = j,
                           .label = j->agent,
                           .endpoint = j->stop_pending ? "stop" : "run"};
    j->req = agent_request(j->b->http, &o);
    j->poll_seq++;
    free(url);
    if (j->req == NULL)
        follow_schedule(j);
}

struct job *runjob_follow(struct bridge *b, const char *id, const char *agent, const char *run_id)
{
    if (strmap_get(b->jobs, id))
        return NULL;
    struct job *j = bridge_job_new(b, &follow_ops, id, agent);
    snprintf(j->run_id, sizeof j->run_id, "%s", run_id);
    j->timer = loop_timer_add(b->loop, 0, follow_poll, j);
    return j;
}

static void submit_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    struct bridge *b = j->b;
    struct mcp_call *c = bridge_job_answered(j);
    (void)r;
    json_t *body = res->status == 202 ? json_loadb(res->body, res->body_len, 0, NULL) : NULL;
    const char *run_id = json_string_value(json_object_get(body, "run_id"));
    if (run_id == NULL || strlen(run_id) >= sizeof j->run_id) {
        json_t *err = res->status == 202
                          ? tool_error_json(TE_UPSTREAM_ERROR, 0,
                                            "the agent accepted the run without a run id")
                          : bridge_upstream_error(j->agent, res, "run submission");
        bridge_job_trace_outcome(j, err);
        bridge_remove_then_answer(b, j->id, "request.json", c, err);
        json_decref(body);
        bridge_job_free(j);
        return;
    }
    snprintf(j->run_id, sizeof j->run_id, "%s", run_id);
    json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "run_id", run_id, "session_id",
                            j->session_id, "task_id", j->id, "agent", j->agent, "agent_base_url",
                            j->base_url, "created_at", bridge_iso_now());
    /* The answer waits for run.json: after a restart the run is followed from it. An MCP
     * task is answered with the task (its ops), anything else with "accepted". */
    bridge_store_then_answer(
        b, j->id, "run.json", run, c,
        j->ops->accepted
            ? j->ops->accepted(j)
            : mcp_tool_result(json_pack("{s:s, s:s, s:s, s:s, s:[], s:[]}", "id", j->id, "status",
                                        "accepted", "run_id", j->run_id, "summary",
                                        "accepted; follow it with hermes_status or read "
                                        "it with hermes_result when done",
                                        "artifacts", "next_steps")));
    json_decref(run);
    bridge_run_index(b, run_id, j->id);
    json_decref(body);
    /* The run is followed by the bridge itself from here, and the session is free again. */
    char agent[65], id[129], rid[128];
    snprintf(agent, sizeof agent, "%s", j->agent);
    snprintf(id, sizeof id, "%s", j->id);
    snprintf(rid, sizeof rid, "%s", j->run_id);
    char *base_url = j->base_url, *key = j->key; /* the agent the run started on */
    char *owner = j->owner; /* whose it is, while request.json may still be queued */
    bool stop = j->stop_pending;
    j->base_url = j->key = j->owner = NULL;
    bridge_job_free(j);
    struct job *f = runjob_follow(b, id, agent, rid);
    if (f) {
        f->base_url = base_url;
        f->key = key;
        f->owner = owner;
        f->stop_pending = stop;
    } else {
        free(base_url);
        wipe_free(key);
        free(owner);
    }
}

void runjob_cancelled(struct mcp_call *c, void *arg)
{
    (void)c;
    bridge_job_withdraw(arg);
}

void runjob_start(struct job *j)
{
    struct bridge *b = j->b;
    struct agentdef *a = bridge_job_agent(j);
    if (a == NULL)
        return;
    json_t *body = json_pack("{s:s, s:s, s:s}", "input", j->prompt, "instructions",
                             contract_text(b), "session_id", j->session_id);
    char *text = json_dumps(body, JSON_COMPACT);
    char *url = agent_url(a, "/v1/runs");
    struct agent_opts o = {.method = "POST",
                           .url = url,
                           .key = a->key,
                           .idempotency_key = j->idem_key,
                           .body = text,
                           .body_len = strlen(text),
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS,
                           .deadline_ms = 60000,
                           .max_response = RESPONSE_MAX,
                           .on_done = submit_done,
                           .arg = j,
                           .label = a->name,
                           .endpoint = "runs"};
    bridge_job_send(j, &o); /* may end the job */
    free(url);
    free(text);
    json_decref(body);
}

const struct job_ops runjob_submit_ops = {
    .kind = JOB_SUBMIT, .start = runjob_start, .cancelled = runjob_cancelled};

void runjob_index_task(const char *id, void *arg)
{
    struct bridge *b = arg;
    /* A write in flight (hermes_reset while a run settles): its job already did the work. */
    if (tasks_pending(b->tasks, id))
        return;
    json_t *run = NULL;
    if (tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) != TASKS_OK)
        return;
    const char *run_id = json_string_value(json_object_get(run, "run_id"));
    const char *agent = json_string_value(json_object_get(run, "agent"));
    if (run_id && strlen(run_id) < 128) {
        bridge_run_index(b, run_id, id);
        char path[300];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/result.json", tasks_dir(b->tasks), id);
        if (stat(path, &st) < 0) {
            log_info("task %s: following run %s again after the restart", id, run_id);
            runjob_follow(b, id, agent ? agent : b->default_agent, run_id);
        }
    }
    json_decref(run);
}

void runjob_take_over(const char *id, const char *run_text, void *arg)
{
    struct bridge *b = arg;
    if (unsaved_has(b, id)) { /* its result is here already: written, not asked of the agent */
        unsaved_kick(b);
        return;
    }
    json_t *run = tasks_parse(run_text, strlen(run_text));
    const char *run_id = json_string_value(json_object_get(run, "run_id"));
    const char *agent = json_string_value(json_object_get(run, "agent"));
    if (run_id && strlen(run_id) < 128 && !strmap_get(b->jobs, id)) {
        bridge_run_index(b, run_id, id);
        runjob_follow(b, id, agent ? agent : b->default_agent, run_id);
    }
    json_decref(run);
}
