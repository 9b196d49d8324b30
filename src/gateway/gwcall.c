/* gwcall.c — a client's tools/call on an exposed tool, proxied to its upstream. At most
 * max_in_flight calls are at the upstream at once; up to GW_QUEUE_MAX more wait in order, then
 * calls are answered busy. Each sent call has its own deadline (timeout: upstream_timeout); a
 * call held for a 2026-07-28 client's answer (relay.c) keeps its slot and deadline and has no
 * client call until the client's retry takes it over (resume_held); a 2026-07-28 upstream's
 * input_required answer goes to mrtr.c, which sends the call again with the caller's answers
 * (gw_call_retry, same slot and deadline) or ends it (gw_call_record, gw_call_release); a
 * client's cancel becomes notifications/cancelled with our id on the wire; progress comes back
 * under the caller's own token (the engine adds it). An upstream that goes away answers its
 * calls upstream_unavailable. Tool errors have the bridge's shape (toolerr). Every end of a
 * call, whichever path answers it, goes through record(): the per-upstream metrics and one
 * audit event (upstream, names, outcome, duration; never arguments or results). A tool guarded
 * `approve` waits for the operator first (gwapprove.c) and comes back here once approved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gwcore.h"
#include "gwevent.h"
#include "gwexpose.h"
#include "gwinstance.h"
#include "gwpolicy.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "metrics.h"
#include "relay.h"
#include "toolerr.h"
#include "upstream.h"
#include "utf8.h"

static void call_free(struct gw_call *gc)
{
    otel_span_discard(gc->span); /* ended by record_call when the call was recorded */
    gw_store_claim_cancel(gc->claim);
    gw_relay_release(gc);
    loop_timer_cancel(gc->timer);
    json_decref(gc->input_state);
    json_decref(gc->input_answers);
    json_decref(gc->args);
    free(gc->tool);
    free(gc);
}

/* ---------- what every end of a call records ---------- */

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The outcome in the metrics and the audit line: "ok", a tool error code, "cancelled", or a
 * JSON-RPC error code. Call before the call is answered (the caller is read from it). */
static void record_as(struct upstream *u, const char *caller, const char *exposed, const char *tool,
                      uint64_t started_us, const char *status)
{
    struct gateway *g = u->gw;
    char labels[160];
    uint64_t took = now_us() - started_us;
    metric_labels(labels, sizeof labels, "upstream", u->cfg->name, "outcome", status, NULL);
    metric_add(g->m_calls, labels, 1);
    metric_labels(labels, sizeof labels, "upstream", u->cfg->name, NULL);
    if (strcmp(status, "ok") != 0 && strcmp(status, "input_required") != 0) /* relay.c: a
                                                                    round, not a failure */
        metric_add(g->m_errors, labels, 1);
    metric_observe(g->m_seconds, labels, (double)took / 1e6);
    gw_event(g, &(struct gw_event){.kind = GW_EVENT_CALL,
                                   .upstream = u->cfg->name,
                                   .tool = exposed,
                                   .upstream_tool = tool,
                                   .status = status,
                                   .caller = caller,
                                   .duration_us = took});
}

static void record(struct upstream *u, struct mcp_call *call, const char *exposed, const char *tool,
                   uint64_t started_us, const char *status)
{
    record_as(u, mcp_call_caller(call), exposed, tool, started_us, status);
}

static void record_call(struct gw_call *gc, const char *status)
{
    if (gc->span) {
        if (strcmp(status, "ok") != 0 && strcmp(status, "input_required") != 0) {
            otel_span_str(gc->span, "error.type", status);
            otel_span_status(gc->span, OTEL_STATUS_ERROR, NULL);
        }
        otel_span_end(gc->span);
        gc->span = NULL;
    }
    record_as(gc->up, gc->call ? mcp_call_caller(gc->call) : gw_relay_caller(gc), gc->exposed,
              gc->tool, gc->started_us, status);
}

/* ---------- the wait queue ---------- */

/* u's queue. Upstreams are made by value in several places (the file's, probes', instances')
 * and zeroed when freed, so the anchor is set up here, on first use. */
static struct list *queue_of(struct upstream *u)
{
    if (!list_is_linked(&u->wait_queue))
        list_init(&u->wait_queue);
    return &u->wait_queue;
}

/* The oldest call waiting at u, or NULL. */
static struct gw_call *queue_head(struct upstream *u)
{
    struct list *n = list_first(queue_of(u));
    return n ? list_entry(n, struct gw_call, link) : NULL;
}

static void enqueue(struct upstream *u, struct gw_call *gc)
{
    gc->queued = true;
    list_push_back(queue_of(u), &gc->link);
    u->waiting++;
}

static void dequeue(struct upstream *u, struct gw_call *gc)
{
    list_unlink(&gc->link);
    gc->queued = false;
    u->waiting--;
}

/* ---------- answers ---------- */

static void unavailable(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    char msg[400];
    const char *circuit = gw_circuit_state(u);
    unsigned retry_in = circuit ? gw_circuit_retry_in_s(u) : 0;
    if (u->gw->draining)
        snprintf(msg, sizeof msg,
                 "the server is stopping: the call was not sent to upstream %s; "
                 "retry it after the restart",
                 u->cfg->name);
    else if (circuit && retry_in)
        snprintf(msg, sizeof msg,
                 "upstream %s is open-circuit after %u failures in a row (last: %s); it will be "
                 "tried again in %u s",
                 u->cfg->name, u->failures, u->error ? u->error : "?", retry_in);
    else if (circuit)
        snprintf(msg, sizeof msg,
                 "upstream %s is open-circuit after %u failures in a row (last: %s); a trial "
                 "start is under way",
                 u->cfg->name, u->failures, u->error ? u->error : "?");
    else
        snprintf(msg, sizeof msg, "upstream %s is not available (%s); retry later", u->cfg->name,
                 u->error ? u->error : "not started");
    record_call(gc, toolerr_name(TE_UPSTREAM_UNAVAILABLE));
    mcp_call_result_take(gc->call, tool_error_json(TE_UPSTREAM_UNAVAILABLE, retry_in, "%s", msg));
}

/* A JSON-RPC error from the upstream goes to the client as one (its code, a capped text). */
static void forward_error(struct gw_call *gc, json_t *error)
{
    char msg[300], status[24];
    int rpc_code = gw_event_rpc_error(error, "the upstream refused the call", msg, sizeof msg);
    snprintf(status, sizeof status, "%d", rpc_code);
    record_call(gc, status);
    mcp_call_error(gc->call, rpc_code, msg);
}

/* A result's outcome: "ok", or for isError the code in its structuredContent when it is one of
 * the tool error codes we know (a message over the cap is answered with ours), else
 * "tool_error": an upstream's own text never becomes a label or an audit field. */
static const char *result_status(json_t *result)
{
    if (!json_is_true(json_object_get(result, "isError")))
        return "ok";
    const char *code =
        json_string_value(json_object_get(json_object_get(result, "structuredContent"), "error"));
    for (int e = 0; code && e < TE_COUNT; e++)
        if (strcmp(code, toolerr_name((enum toolerr)e)) == 0)
            return toolerr_name((enum toolerr)e);
    return "tool_error";
}

static void on_answer(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    struct gw_call *gc = arg;
    if (result && gc->call && gw_mrtr_input(gc, result))
        return; /* the upstream asked for input: mrtr.c has the call now */
    u->in_flight--;
    if (gc->call == NULL) /* held: its client is answering our input round; no one to tell */
        record_call(gc, result  ? result_status(result)
                        : error ? toolerr_name(TE_UPSTREAM_ERROR)
                                : toolerr_name(TE_UPSTREAM_UNAVAILABLE));
    else if (result) {
        record_call(gc, result_status(result));
        mcp_call_result_take(gc->call, json_incref(result));
    } else if (error)
        forward_error(gc, error);
    else
        unavailable(gc);
    call_free(gc);
    gw_call_next(u);
}

/* ---------- deadline and cancel ---------- */

static void tell_cancelled(struct upstream *u, uint64_t id, const char *reason)
{
    up_forget(u, id);
    up_notify(u, "notifications/cancelled",
              json_pack("{s:I, s:s}", "requestId", (json_int_t)id, "reason", reason));
    u->in_flight--;
}

/* The call ends at the gateway: the upstream is told, unless it already answered and the call
 * waits for its session-era client's answers to the upstream's input round (mrtr.c). */
static void end_upstream_side(struct gw_call *gc, const char *reason)
{
    if (gc->collect)
        gc->up->in_flight--; /* its slot only: the upstream has nothing running for it */
    else
        tell_cancelled(gc->up, gc->id, reason);
}

static void on_timeout(struct loop *l, void *arg)
{
    struct gw_call *gc = arg;
    struct upstream *u = gc->up;
    char msg[300];
    (void)l;
    gc->timer = NULL;
    end_upstream_side(gc, "timed out at the gateway");
    if (gc->collect)
        snprintf(msg, sizeof msg,
                 "the calling client did not answer the input upstream %s asked "
                 "for (%.100s) within %u s",
                 u->cfg->name, gc->tool, u->cfg->timeout_s);
    else
        snprintf(msg, sizeof msg, "upstream %s did not answer %.100s within %u s", u->cfg->name,
                 gc->tool, u->cfg->timeout_s);
    utf8_clean(msg);
    record_call(gc, toolerr_name(TE_UPSTREAM_TIMEOUT));
    if (gc->call)
        mcp_call_result_take(gc->call, tool_error_json(TE_UPSTREAM_TIMEOUT, 0, "%s", msg));
    else /* held (relay.c): the client's retry finds no held call */
        log_event(EV_HELD_CALL_EXPIRED,
                  LOG_FIELDS(LF_S("upstream", u->cfg->name), LF_S("tool", gc->tool),
                             LF_S("why", "timeout")),
                  "upstream %s: a call of %.100s held for the client's answer reached its "
                  "timeout (%u s): cancelled upstream",
                  u->cfg->name, gc->tool, u->cfg->timeout_s);
    call_free(gc);
    gw_call_next(u);
}

static void on_cancel(struct mcp_call *call, void *arg)
{
    struct gw_call *gc = arg;
    struct upstream *u = gc->up;
    (void)call; /* gone after this callback */
    record_call(gc, "cancelled");
    if (gc->queued)
        dequeue(u, gc);
    else
        end_upstream_side(gc, "cancelled by the client");
    call_free(gc);
    gw_call_next(u);
}

/* ---------- sending ---------- */

/* The tools/call as sent: to a 2026-07-28 upstream with the caller's capabilities (so it
 * may ask for what the caller can answer) and, after an input round, what it asked to get
 * back (mrtr.c). */
static bool send_request(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    json_t *params = json_pack("{s:s, s:O}", "name", gc->tool, "arguments", gc->args);
    if (u->modern && gc->call)
        json_object_set_new(params, "_meta",
                            json_pack("{s:o}", "io.modelcontextprotocol/clientCapabilities",
                                      gw_mrtr_caps(gc->call)));
    if (gc->input_answers)
        json_object_set(params, "inputResponses", gc->input_answers);
    if (gc->input_state)
        json_object_set(params, "requestState", gc->input_state);
    if (gc->has_progress) { /* up_request puts our id here */
        json_t *meta = json_object_get(params, "_meta");
        if (meta == NULL)
            json_object_set_new(params, "_meta", meta = json_object());
        json_object_set_new(meta, "progressToken", json_integer(0));
    }
    gw_call_trace_meta(params, gc->span);
    return up_request(u, "tools/call", params, on_answer, gc, gc, &gc->id);
}

void gw_call_trace_meta(json_t *params, const struct otel_span *span)
{
    char tp[OTEL_TRACEPARENT_LEN + 1];
    if (!otel_span_traceparent(span, tp))
        return;
    json_t *meta = json_object_get(params, "_meta");
    const char *ts = otel_span_tracestate(span);
    if (meta == NULL)
        json_object_set_new(params, "_meta", meta = json_object());
    json_object_set_new(meta, "traceparent", json_string(tp));
    if (ts && *ts)
        json_object_set_new(meta, "tracestate", json_string(ts));
}

struct otel_span *gw_call_trace_start(const struct mcp_call *c, const struct upstream *u,
                                      const char *method, const char *target)
{
    char name[200];
    snprintf(name, sizeof name, "%s%s%s", method, target ? " " : "", target ? target : "");
    struct otel_span *s = mcp_call_span(c, name, OTEL_KIND_CLIENT);
    otel_span_str(s, "mcp.method.name", method);
    otel_span_str(s, "hermes.upstream", u->cfg->name);
    return s;
}

/* The call's CLIENT span, after the semantic conventions for MCP. */
static void start_span(struct gw_call *gc)
{
    gc->span = gw_call_trace_start(gc->call, gc->up, "tools/call", gc->tool);
    otel_span_str(gc->span, "gen_ai.tool.name", gc->tool);
    otel_span_lit(gc->span, "gen_ai.operation.name", "execute_tool");
}

static void send_call(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    if (gc->span == NULL && gc->call)
        start_span(gc);
    if (!send_request(gc)) {
        gw_mrtr_give_back(gc); /* nothing reached the upstream: the round may be tried again */
        unavailable(gc);
        call_free(gc);
        return;
    }
    u->in_flight++;
    gc->restarts = u->restarts;
    gc->timer = loop_timer_add(u->loop, (uint64_t)u->cfg->timeout_s * 1000, on_timeout, gc);
}

void gw_call_retry(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    /* Only to the start that asked: a restarted upstream forgot the round, and its tools are
     * checked against the pins again before anything is sent to it. */
    if (u->state == UP_READY && u->restarts == gc->restarts && send_request(gc))
        return; /* the slot and the deadline stay the call's */
    u->in_flight--;
    unavailable(gc);
    call_free(gc);
    gw_call_next(u);
}

void gw_call_record(struct gw_call *gc, const char *status)
{
    record_call(gc, status);
}

void gw_call_release(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    u->in_flight--;
    call_free(gc);
    gw_call_next(u);
}

void gw_call_next(struct upstream *u)
{
    gw_task_slot_free(u);  /* an approved task waiting there goes first (gwtask.c) */
    if (u->gw->draining) { /* a freed slot: what waits would only be sent to be cancelled */
        gw_call_fail_waiting(u);
        return;
    }
    if (gwi_starting(u))
        return; /* its calls wait until it is listed (gwi_ready) */
    if (u->state != UP_READY) {
        gw_call_fail_waiting(u);
        return;
    }
    for (struct gw_call *gc; u->in_flight < u->cfg->max_in_flight && (gc = queue_head(u));) {
        dequeue(u, gc);
        send_call(gc);
    }
}

void gw_call_fail_waiting(struct upstream *u)
{
    for (struct gw_call *gc; (gc = queue_head(u)) != NULL;) {
        dequeue(u, gc);
        gw_mrtr_give_back(gc); /* never sent: the round may be tried again */
        unavailable(gc);
        call_free(gc);
    }
}

void gw_call_progress(struct gw_call *gc, json_t *params)
{
    json_t *p = json_object_get(params, "progress"), *t = json_object_get(params, "total");
    const char *msg = json_string_value(json_object_get(params, "message"));
    if (!json_is_number(p) || gc->call == NULL)
        return;
    mcp_call_progress(gc->call, json_number_value(p), json_is_number(t) ? json_number_value(t) : 0,
                      msg);
}

/* Per-root instances: the instance the call goes to, or NULL after answering it. */
static struct upstream *route_instance(struct gw_tool *t, struct mcp_call *call, json_t *args,
                                       uint64_t started_us)
{
    char msg[400];
    bool busy;
    struct upstream *inst = gwi_route(t->up, args, &busy, msg, sizeof msg);
    if (inst)
        return inst;
    enum toolerr code = busy ? TE_BUSY : TE_INVALID_ARGUMENTS;
    record(t->up, call, t->exposed, t->name, started_us, toolerr_name(code));
    mcp_call_result_take(call, tool_error_json(code, busy ? 1 : 0, "%s", msg));
    return NULL;
}

void gw_call_abandon(struct gw_call *gc, const char *reason)
{
    struct upstream *u = gc->up;
    tell_cancelled(u, gc->id, reason);
    record_call(gc, "cancelled");
    call_free(gc);
    gw_call_next(u);
}

void gw_call_drop(struct gw_call *gc)
{
    call_free(gc);
}

/* gc (not sent yet, its round claimed if it continues one) to its upstream, or to the queue. */
static void go(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    mcp_call_on_cancel(gc->call, on_cancel, gc);
    if (u->in_flight >= u->cfg->max_in_flight || gwi_starting(u))
        enqueue(u, gc);
    else
        send_call(gc);
}

/* Cancelled while the store decides on its round: nothing was sent, the claim is dropped (a
 * round the store gave it stays used: the caller asks again). */
static void on_claim_cancel(struct mcp_call *call, void *arg)
{
    struct gw_call *gc = arg;
    (void)call;
    gw_store_claim_cancel(gc->claim);
    record_call(gc, "cancelled");
    call_free(gc);
}

/* The store's word on a 2026-07-28 retry's round, shared by the replicas. */
static void on_claimed(void *arg, enum gw_store_claim_rc rc)
{
    struct gw_call *gc = arg;
    struct upstream *u = gc->up;
    gc->claim = NULL;
    if (rc == GW_CLAIM_FIRST && !u->gw->draining && (u->state == UP_READY || gwi_starting(u))) {
        go(gc);
        return;
    }
    mcp_call_on_cancel(gc->call, NULL, NULL);
    if (rc == GW_CLAIM_FIRST) { /* the upstream went away meanwhile: the round is given back */
        gw_mrtr_give_back(gc);
        unavailable(gc);
    } else if (rc == GW_CLAIM_TAKEN) {
        gc->round.nonce[0] = '\0'; /* not this call's to give back */
        record_call(gc, toolerr_name(TE_NOT_FOUND));
        mcp_call_result_take(gc->call,
                             tool_error_json(TE_NOT_FOUND, 0,
                                             "no input round of upstream %s matches this "
                                             "requestState: it was already answered; call the "
                                             "tool again",
                                             u->cfg->name));
    } else {
        gc->round.nonce[0] = '\0';
        record_call(gc, toolerr_name(TE_BUSY));
        mcp_call_result_take(gc->call, tool_error_json(TE_BUSY, 1,
                                                       "the store that shares input rounds "
                                                       "between replicas is unavailable; "
                                                       "retry shortly"));
    }
    call_free(gc);
}

/* A 2026-07-28 retry whose state names a held call takes it over: its answer, a further
 * round, progress, cancel and deadline are this call's from now on. */
static bool resume_held(struct upstream *u, struct mcp_call *call, const struct gw_tool *t)
{
    struct gw_call *gc;
    if (!gw_relay_resume(u, call, t->name, &gc))
        return false;
    if (gc) {
        gc->call = call;
        mcp_call_on_cancel(call, on_cancel, gc);
    }
    return true;
}

/* The guard and argument policies (gwpolicy.h): the arguments to send (a new reference), or
 * NULL after answering the call with the tool error. */
static json_t *admit(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us)
{
    enum toolerr code;
    char msg[300];
    json_t *sent = gw_policy_args(t->guard, t->policy, args, &code, msg, sizeof msg);
    if (sent == NULL) {
        record(t->up, call, t->exposed, t->name, started_us, toolerr_name(code));
        mcp_call_result_take(call, tool_error_json(code, 0, "%s", msg));
    }
    return sent;
}

/* A withheld tool (its definition no longer matches its pin) is refused; also checked again
 * where a call goes upstream later (approved after a wait, during which a restart may have
 * withheld it). */
static bool refused_withheld(struct gw_tool *t, struct mcp_call *call, uint64_t started_us)
{
    if (!t->withheld)
        return false;
    record(t->up, call, t->exposed, t->name, started_us, toolerr_name(TE_DEFINITION_CHANGED));
    mcp_call_result_take(call, tool_error_json(TE_DEFINITION_CHANGED, 0,
                                               "the definition of %s changed upstream (%s) since "
                                               "it was pinned; it is withheld until an operator "
                                               "accepts it",
                                               t->exposed, t->up->cfg->name));
    return true;
}

/* A tool a reloaded gateway file no longer includes (gwreload.c): new calls are refused. */
static bool refused_dropped(struct gw_tool *t, struct mcp_call *call, uint64_t started_us)
{
    if (!t->dropped)
        return false;
    record(t->up, call, t->exposed, t->name, started_us, toolerr_name(TE_NOT_FOUND));
    mcp_call_result_take(call, tool_error_json(TE_NOT_FOUND, 0,
                                               "%s is no longer exposed: the gateway file's "
                                               "tools rules of upstream %s leave it out",
                                               t->exposed, t->up->cfg->name));
    return true;
}

void gw_call_handler(struct mcp_call *call, json_t *args, void *arg)
{
    struct gw_tool *t = arg;
    uint64_t started_us = now_us();
    if (refused_dropped(t, call, started_us) || refused_withheld(t, call, started_us))
        return;
    json_t *sent = admit(t, call, args, started_us);
    if (sent == NULL)
        return;
    gw_call_forward(t, call, sent, started_us, false);
    json_decref(sent);
}

void gw_call_record_tool(struct gw_tool *t, struct mcp_call *call, uint64_t started_us,
                         const char *status)
{
    record(t->up, call, t->exposed, t->name, started_us, status);
}

void gw_call_record_tool_as(struct gw_tool *t, struct upstream *u, const char *caller,
                            uint64_t started_us, const char *status)
{
    record_as(u, caller, t->exposed, t->name, started_us, status);
}

static struct gw_call *call_new(struct upstream *u, const struct gw_tool *t, struct mcp_call *call,
                                json_t *args, uint64_t started_us)
{
    struct gw_call *gc = xcalloc(1, sizeof *gc);
    gc->up = u;
    gc->call = call;
    gc->tool = xstrdup(t->name);
    gc->args = json_incref(args);
    gc->has_progress = mcp_call_progress_token(call) != NULL;
    gc->exposed = t->exposed;
    gc->started_us = started_us;
    return gc;
}

/* The part of a call after the gateway's own checks: to its upstream (or instance). A client's
 * retry that resumes a held call was approved with its first round; any other call of an
 * approve-guarded tool waits for the operator, routed again once approved (an instance may
 * have been stopped meanwhile). */

void gw_call_forward(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us,
                     bool approved)
{
    struct upstream *u = t->up;
    if (u->gw->draining) { /* first: a stopping server neither asks the operator nor routes */
        struct gw_call *gc = call_new(u, t, call, args, started_us);
        unavailable(gc);
        call_free(gc);
        return;
    }
    /* Approved after a wait, during which a restart may have withheld it or a reload left
     * it out (gwreload.c denies those waiting then, but a call may be past its wait). */
    if (refused_dropped(t, call, started_us) || refused_withheld(t, call, started_us))
        return;
    /* Only a retry that resumes a held call (approved with its first round, its state sealed
     * to this caller) skips the wait; any other state waits before an instance is routed. */
    if (t->guard == GW_GUARD_APPROVE && !approved && !gw_relay_resumes(call)) {
        gw_approval_wait(t, call, args, started_us);
        return;
    }
    if (u->pool && (u = route_instance(t, call, args, started_us)) == NULL)
        return;
    if (resume_held(u, call, t))
        return;
    if (t->guard == GW_GUARD_APPROVE && !approved) { /* a state that resumed nothing */
        gw_approval_wait(t, call, args, started_us);
        return;
    }
    struct gw_call *gc = call_new(u, t, call, args, started_us);
    if (u->state != UP_READY && !gwi_starting(u)) {
        unavailable(gc);
        call_free(gc);
        return;
    }
    /* A starting instance sends nothing yet: what it queues is capped all the same. */
    if ((u->in_flight >= u->cfg->max_in_flight || gwi_starting(u)) && u->waiting >= GW_QUEUE_MAX) {
        record_call(gc, toolerr_name(TE_BUSY));
        mcp_call_result_take(call, tool_error_json(TE_BUSY, 1,
                                                   "upstream %s has too many calls waiting; "
                                                   "retry shortly",
                                                   u->cfg->name));
        call_free(gc);
        return;
    }
    /* A 2026-07-28 retry's round is claimed (once) only now that the call can go: refused for
     * unavailable or busy above, its answers stay good for another try. */
    json_t *refused = gw_mrtr_continue(gc);
    if (refused) {
        record_call(gc, toolerr_name(TE_NOT_FOUND));
        mcp_call_result_take(call, refused);
        call_free(gc);
        return;
    }
    gc->claim = gw_mrtr_round_confirm(u, &gc->round, on_claimed, gc);
    if (gc->claim) { /* once across replicas: the store says (on_claimed) */
        mcp_call_on_cancel(call, on_claim_cancel, gc);
        return;
    }
    go(gc);
}
