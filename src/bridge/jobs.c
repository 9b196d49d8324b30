/* jobs.c — the jobs the bridge is working on and the session queues: jobs of one session run
 * one at a time, at most SESSION_QUEUE_MAX waiting. A job that starts after a reload dropped
 * its agent fails cleanly as agent_unavailable. What a job does is its kind's job_ops, which
 * the module running it supplies: the queue knows none of them. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentclient.h"
#include "bridge_internal.h"
#include "buf.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "sse.h"
#include "strmap.h"
#include "tasks.h"

/* ---------- jobs and session queues ---------- */

static void job_start(struct job *j);

struct job *bridge_job_new(struct bridge *b, const struct job_ops *ops, const char *id,
                           const char *agent)
{
    struct job *j = xcalloc(1, sizeof *j);
    j->b = b;
    j->ops = ops;
    snprintf(j->id, sizeof j->id, "%s", id);
    snprintf(j->agent, sizeof j->agent, "%s", agent);
    buf_init(&j->answer, ANSWER_MAX);
    sse_init(&j->sse, RESPONSE_MAX);
    strmap_put(b->jobs, j->id, j);
    return j;
}

static void queue_next(struct bridge *b, struct sessq *q)
{
    q->active = NULL;
    if (q->head) {
        struct job *n = q->head;
        q->head = n->qnext;
        if (q->head == NULL)
            q->tail = NULL;
        q->waiting--;
        n->qnext = NULL;
        q->active = n;
        job_start(n);
        return;
    }
    strmap_del(b->queues, q->key);
    free(q);
}

void bridge_job_free(struct job *j)
{
    struct bridge *b = j->b;
    struct sessq *q = j->q;

    agent_cancel(j->req);
    otel_span_end(j->span);
    runapproval_drop(j);
    loop_timer_cancel(j->timer);
    if (strmap_get(b->jobs, j->id) == j)
        strmap_del(b->jobs, j->id);
    sse_cleanup(&j->sse);
    buf_cleanup(&j->answer);
    free(j->stream_error);
    free(j->prompt);
    free(j->base_url);
    wipe_free(j->key);
    json_decref(j->task_created);
    free(j->owner);
    if (q) {
        if (q->active == j) {
            free(j);
            queue_next(b, q);
            return;
        }
        /* still waiting: unlink */
        for (struct job **pp = &q->head; *pp; pp = &(*pp)->qnext)
            if (*pp == j) {
                *pp = j->qnext;
                if (q->tail == j) {
                    q->tail = NULL;
                    for (struct job *t = q->head; t; t = t->qnext)
                        q->tail = t;
                }
                q->waiting--;
                break;
            }
    }
    free(j);
}

/* A queue per conversation at the agent: its key is the session header the jobs send, which
 * names the agent, the owner (taskowner_tag) and the session, so one principal's calls never wait
 * behind (or tell of) another's. */
bool bridge_job_queue_full(struct bridge *b, const char *session_id)
{
    struct sessq *q = strmap_get(b->queues, session_id);
    return q && q->active && q->waiting >= SESSION_QUEUE_MAX;
}

/* Joins the session's queue; returns false when it is full. Starts the job if it is first. */
bool bridge_job_enqueue(struct job *j, bool in_session)
{
    struct bridge *b = j->b;

    if (!in_session) {
        job_start(j);
        return true;
    }
    struct sessq *q = strmap_get(b->queues, j->session_id);
    if (q == NULL) {
        q = xcalloc(1, sizeof *q);
        snprintf(q->key, sizeof q->key, "%s", j->session_id);
        strmap_put(b->queues, q->key, q);
    }
    if (q->active && q->waiting >= SESSION_QUEUE_MAX)
        return false;
    j->q = q;
    if (q->active == NULL) {
        q->active = j;
        job_start(j);
    } else {
        if (q->tail)
            q->tail->qnext = j;
        else
            q->head = j;
        q->tail = j;
        q->waiting++;
    }
    return true;
}

/* A job waiting in a session queue starts when its turn comes, maybe after a reload dropped its
 * agent or its key: it then fails as agent_unavailable (and frees itself) instead of going on
 * with an agent that is no longer configured. Returns the agent, or NULL when it failed. */
struct agentdef *bridge_job_agent(struct job *j)
{
    struct bridge *b = j->b;
    struct agentdef *a = bridge_find_agent(b, j->agent);
    if (a && a->key) {
        bridge_job_use_agent(j, a);
        return a;
    }
    struct mcp_call *c = j->call;
    j->call = NULL;
    if (c)
        mcp_call_on_cancel(c, NULL, NULL);
    log_warn("task %s: agent %s %s before the task could start", j->id, j->agent,
             a ? "lost its key" : "was removed from the registry");
    bridge_remove_then_answer(
        b, j->id, "request.json", c,
        tool_error_json(TE_AGENT_UNAVAILABLE, 0, "the agent '%s' is no longer available (%s)",
                        j->agent, a ? "missing_credentials" : "removed from the registry"));
    bridge_job_free(j);
    return NULL;
}

void bridge_job_use_agent(struct job *j, const struct agentdef *a)
{
    free(j->base_url);
    j->base_url = xstrdup(a->base_url);
    wipe_free(j->key);
    j->key = a->key ? xstrdup(a->key) : NULL;
}

static void job_start(struct job *j)
{
    if (j->ops->start)
        j->ops->start(j);
}

struct mcp_call *bridge_job_answered(struct job *j)
{
    struct mcp_call *c = j->call;
    j->req = NULL;
    j->call = NULL;
    return c;
}

void bridge_job_trace_outcome(struct job *j, const json_t *r)
{
    const char *type = NULL;
    if (j->span == NULL || r == NULL)
        return;
    if (json_is_true(json_object_get(r, "isError"))) {
        type = json_string_value(json_object_get(json_object_get(r, "structuredContent"), "error"));
        if (type == NULL)
            type = "upstream_error";
    } else {
        const char *st = json_string_value(json_object_get(r, "status"));
        if (st && (strcmp(st, "failed") == 0 || strcmp(st, "interrupted") == 0))
            type = st;
    }
    if (type) {
        otel_span_str(j->span, "error.type", type);
        otel_span_status(j->span, OTEL_STATUS_ERROR, NULL);
    }
}

/* The agent run's span, after the semantic conventions for generative AI agents: started by
 * the first request of a job whose MCP call waits, its context sent to the agent in headers. */
static void trace_run(struct job *j, struct agent_opts *o, char *tp)
{
    if (j->span == NULL && j->call) {
        char name[96];
        snprintf(name, sizeof name, "invoke_agent %s", j->agent);
        j->span = mcp_call_span(j->call, name, OTEL_KIND_CLIENT);
        otel_span_str(j->span, "gen_ai.operation.name", "invoke_agent");
        otel_span_str(j->span, "gen_ai.agent.name", j->agent);
        otel_span_str(j->span, "hermes.task.id", j->id);
    }
    if (otel_span_traceparent(j->span, tp)) {
        o->traceparent = tp;
        o->tracestate = otel_span_tracestate(j->span);
    }
}

void bridge_job_send(struct job *j, const struct agent_opts *opts)
{
    struct agent_opts o2 = *opts, *o = &o2;
    char tp[OTEL_TRACEPARENT_LEN + 1];
    trace_run(j, o, tp);
    j->req = agent_request(j->b->http, o);
    if (j->req)
        return;
    struct mcp_call *c = j->call;
    j->call = NULL;
    otel_span_str(j->span, "error.type", "upstream_error");
    otel_span_status(j->span, OTEL_STATUS_ERROR, NULL);
    bridge_tool_error(c, TE_UPSTREAM_ERROR, 0, "could not start the request to the agent");
    bridge_job_free(j);
}

void bridge_job_withdraw(struct job *j)
{
    j->call = NULL;
    tasks_remove(j->b->tasks, j->id, "request.json", NULL, NULL);
    bridge_job_free(j);
}
