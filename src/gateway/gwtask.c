/* gwtask.c — an approve-guarded call as an MCP task (the tasks extension of MCP 2026-07-28).
 *
 * A call to a tool guarded `approve` waits for a person, which may take minutes; a 2026-07-28
 * client that declared io.modelcontextprotocol/tasks need not hold its connection meanwhile.
 * Such a call is answered at once with a CreateTaskResult (status working, the approval id in
 * statusMessage) and queued for the operator exactly as a held call is (same principal, masked
 * summary, caps, audit). Approved, the call goes to its upstream (or its per-root instance) with
 * its own request and deadline, outside the engine's call: the task, not a connection, waits for
 * the answer, which becomes the task's result (status completed; a tool error stays a completed
 * task whose result has isError, as the extension says). A JSON-RPC error from the upstream ends
 * it failed. Denied or timed out, it completes with the approval_denied tool error a held call
 * would get. tasks/cancel withdraws the request from the queue, or tells the upstream the call
 * is cancelled. Streams watching the task hear notifications/tasks when it ends.
 *
 * The upstream cannot ask the caller for input during a task's call: no connection carries it,
 * so such a request is refused (relay.c finds no call for it) and an input_required answer
 * completes the task with an upstream_error tool error. Once approved, the task takes one of
 * the upstream's max_in_flight slots, until the upstream's timeout: with none free it waits and
 * gets the next one freed, before the calls queued there (gw_call_next asks gw_task_slot_free
 * first: a person approved it after a wait already). A starting per-root instance with a task
 * holding its slot is not idle, so it is neither evicted nor stopped under the task (the task
 * asks again every GW_TASK_RETRY_MS whether it is ready).
 *
 * Tasks live in memory. At SIGTERM the pending approvals are denied and the drain waits for the
 * running calls (gateway_tasks_running) like any call; one still running at the end is
 * cancelled upstream and audited "cancelled". After a restart tasks/get answers "not found". A
 * task belongs to its caller (mcp_call_caller): another caller gets the same "not found" as an
 * unknown id. With STORE_URL each task is also a row every replica answers from (gwtaskpg.h):
 * the call stays here, the task is anyone's to follow, and the creating call is answered once
 * the row is written. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "approvals.h"
#include "crypto.h"
#include "gwcall.h"
#include "gwcore.h"
#include "gwevent.h"
#include "gwexpose.h"
#include "gwinstance.h"
#include "gwtaskpg.h"
#include "gwtaskrec.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "relay.h"
#include "toolerr.h"
#include "upstream.h"

/* ---------- the set of tasks ---------- */

/* Every change of waiting_on goes through here, so nwaiting counts the tasks waiting for a slot. */
static void wait_for_slot(struct gw_task *k, struct upstream *u)
{
    if (k->waiting_on && !u)
        k->all->nwaiting--;
    else if (!k->waiting_on && u)
        k->all->nwaiting++;
    k->waiting_on = u;
}

static struct gw_task *task_of(struct list *node)
{
    return list_entry(node, struct gw_task, link);
}

static void task_free(struct gw_task *k)
{
    struct gw_tasks *all = k->all;
    list_unlink(&k->link);
    all->n--;
    wait_for_slot(k, NULL);
    loop_timer_cancel(k->timer);
    if (k->creating)
        k->creating->k = NULL;
    otel_span_end(k->span);
    json_decref(k->args);
    json_decref(k->outcome);
    free(k->caller);
    free(k);
}

/* Finished tasks past GW_TASK_KEEP_MS are forgotten; called where tasks are looked at, so an
 * idle server has no timer for it. */
static void sweep(struct gw_tasks *all)
{
    uint64_t now = loop_now(all->g->loop);
    LIST_FOREACH_SAFE(n, &all->tasks)
    {
        struct gw_task *k = task_of(n);
        if (k->phase == GWT_DONE && now - k->done_ms >= GW_TASK_KEEP_MS)
            task_free(k);
    }
}

/* Room for one more task of caller: the oldest finished one (of the caller, else of anyone when
 * the total is at its cap) makes room; false when every task counted is still open. */
static bool make_room(struct gw_tasks *all, const char *caller)
{
    size_t mine = 0;
    struct gw_task *oldest_mine = NULL, *oldest = NULL;
    LIST_FOREACH(n, &all->tasks)
    {
        struct gw_task *k = task_of(n);
        bool is_mine = strcmp(k->caller, caller) == 0;
        mine += is_mine;
        if (k->phase != GWT_DONE)
            continue;
        if (is_mine && oldest_mine == NULL)
            oldest_mine = k;
        if (oldest == NULL)
            oldest = k;
    }
    if (mine >= GW_TASKS_PER_CALLER) {
        if (oldest_mine == NULL)
            return false;
        task_free(oldest_mine);
        return true;
    }
    if (all->n >= GW_TASKS_MAX) {
        if (oldest == NULL)
            return false;
        task_free(oldest);
    }
    return true;
}

/* The task with that id held here, whoever owns it, else NULL. */
static struct gw_task *find(const struct gw_tasks *all, const char *id)
{
    LIST_FOREACH(n, &all->tasks)
    {
        struct gw_task *k = task_of(n);
        if (strcmp(k->id, id) == 0)
            return k;
    }
    return NULL;
}

/* ---------- what clients see ---------- */

/* The task as tasks/get shows it (msg: room for its status message). */
static struct gw_task_view view_of(const struct gw_task *k, char *msg, size_t msglen)
{
    /* ttlMs counts from creation: the longest wait for the operator and for the upstream, then
     * the hour a finished task is kept */
    const struct upstream *u = k->t->up;
    struct gw_task_view v = {
        .id = k->id,
        .status = k->status,
        .outcome = k->outcome,
        .created = k->created,
        .updated = k->updated,
        .ttl_ms = ((long long)k->approval_timeout_s + u->cfg->timeout_s) * 1000 + GW_TASK_KEEP_MS};
    if (k->phase == GWT_WAITING) {
        snprintf(msg, msglen,
                 "waiting for the operator's approval: request %s (hermes-mcp approvals; "
                 "approve %s or deny %s)",
                 k->approval, k->approval, k->approval);
        v.message = msg;
    } else if (k->phase == GWT_RUNNING) {
        snprintf(msg, msglen, "approved; upstream %s is running %s", u->cfg->name, k->t->exposed);
        v.message = msg;
    } else if (strcmp(k->status, "failed") == 0) {
        v.message = k->why ? k->why : "the upstream answered the call with a JSON-RPC error";
    }
    return v;
}

/* The task as tasks/get and notifications/tasks give it (new reference). */
static json_t *task_json(const struct gw_task *k)
{
    char msg[300];
    struct gw_task_view v = view_of(k, msg, sizeof msg);
    return gwtaskpg_view_json(&v);
}

/* With a store, the task's row is written as it stands now (done: see gwtaskpg_put). */
static void share(struct gw_task *k, gwtaskpg_done_cb *done, void *arg)
{
    char msg[300];
    if (k->all->pg == NULL)
        return;
    struct gw_task_view v = view_of(k, msg, sizeof msg);
    gwtaskpg_put(k->all->pg, k->caller, k->t->up->cfg->name, &v, ++k->wseq, done, arg);
}

/* The task ends: status (outcome_take: the result or error, may be NULL), the call's audit
 * line (record_status), and the streams watching it are told. */
static void finish(struct gw_task *k, const char *status, json_t *outcome_take,
                   const char *record_status)
{
    struct gateway *g = k->t->up->gw;
    loop_timer_cancel(k->timer);
    k->timer = NULL;
    wait_for_slot(k, NULL);
    k->phase = GWT_DONE;
    k->confirming = false;
    k->status = status;
    k->outcome = outcome_take;
    k->done_ms = loop_now(g->loop);
    k->updated = time(NULL);
    struct upstream *at = k->at;
    if (strcmp(record_status, "ok") != 0) {
        otel_span_str(k->span, "error.type", record_status);
        otel_span_status(k->span, OTEL_STATUS_ERROR, NULL);
    }
    otel_span_end(k->span);
    k->span = NULL;
    gw_call_record_tool_as(k->t, at ? at : k->t->up, k->caller, k->started_us, record_status);
    k->at = NULL;
    if (at) { /* its slot is free: the next waiting call goes */
        at->in_flight--;
        gw_call_next(at);
    }
    if (mcp_task_watched(g->mcp, k->id)) {
        json_t *o = task_json(k);
        mcp_task_notify(g->mcp, k->caller, o);
        json_decref(o);
    }
    share(k, NULL, NULL); /* the other replicas' streams hear of it through the store */
}

static void finish_tool_error(struct gw_task *k, enum toolerr code, const char *msg)
{
    finish(k, "completed", tool_error_json(code, 0, "%s", msg), toolerr_name(code));
}

/* ---------- after the approval: the call at its upstream ---------- */

static void send_call(struct gw_task *k);

/* The call is no longer wanted: the upstream is told (its slot is freed by finish). */
static void stop_at_upstream(struct gw_task *k, const char *reason)
{
    if (!k->sent)
        return;
    k->sent = false;
    up_forget(k->at, k->wire_id);
    up_notify(k->at, "notifications/cancelled",
              json_pack("{s:I, s:s}", "requestId", (json_int_t)k->wire_id, "reason", reason));
}

static void on_answer(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    struct gw_task *k = arg;
    char msg[300];
    k->sent = false;
    const char *type = json_string_value(json_object_get(result, "resultType"));
    if (result && type && strcmp(type, "input_required") == 0) {
        snprintf(msg, sizeof msg,
                 "upstream %s asked for input during %s, which a task cannot "
                 "relay; call it without the tasks extension",
                 u->cfg->name, k->t->exposed);
        finish_tool_error(k, TE_UPSTREAM_ERROR, msg);
    } else if (result && json_dumpb(result, NULL, 0, JSON_COMPACT) > GW_TASK_RESULT_MAX) {
        snprintf(msg, sizeof msg,
                 "the result of %s is larger than a task keeps (%u KiB); call it "
                 "without the tasks extension",
                 k->t->exposed, GW_TASK_RESULT_MAX / 1024);
        finish_tool_error(k, TE_UPSTREAM_ERROR, msg);
    } else if (result) {
        json_t *copy = json_deep_copy(result);
        json_object_del(copy, "resultType");
        bool failed = json_is_true(json_object_get(copy, "isError"));
        finish(k, "completed", copy, failed ? "tool_error" : "ok");
    } else if (error) {
        char code[24];
        int rpc = gw_event_rpc_error(error, "the upstream refused the call", msg, sizeof msg);
        snprintf(code, sizeof code, "%d", rpc);
        finish(k, "failed", json_pack("{s:i, s:s}", "code", rpc, "message", msg), code);
    } else {
        snprintf(msg, sizeof msg, "upstream %s went away before it answered %s", u->cfg->name,
                 k->t->exposed);
        finish_tool_error(k, TE_UPSTREAM_UNAVAILABLE, msg);
    }
}

static void on_deadline(struct loop *l, void *arg)
{
    struct gw_task *k = arg;
    char msg[300];
    (void)l;
    k->timer = NULL;
    if (k->confirming) { /* its row could not be written meanwhile: never sent */
        snprintf(msg, sizeof msg,
                 "upstream %s could not take %s within %u s: the database "
                 "sharing the task could not be reached",
                 k->t->up->cfg->name, k->t->exposed, k->t->up->cfg->timeout_s);
        finish_tool_error(k, TE_UPSTREAM_TIMEOUT, msg);
        return;
    }
    if (!k->sent) { /* a starting instance, or the deadline while waiting for a slot */
        send_call(k);
        return;
    }
    snprintf(msg, sizeof msg, "upstream %s did not answer %s within %u s", k->at->cfg->name,
             k->t->exposed, k->at->cfg->timeout_s);
    stop_at_upstream(k, "timed out at the gateway");
    finish_tool_error(k, TE_UPSTREAM_TIMEOUT, msg);
}

/* The approved call goes out: routed (per-root instances), checked as gw_call_forward checks a
 * call, and sent with its own deadline. */
static void send_call(struct gw_task *k)
{
    struct gw_tool *t = k->t;
    struct upstream *u = t->up;
    char msg[400];
    uint64_t now = loop_now(u->loop);
    if (u->gw->draining) {
        snprintf(msg, sizeof msg,
                 "the server is stopping: the call was not sent to upstream %s; "
                 "retry it after the restart",
                 u->cfg->name);
        finish_tool_error(k, TE_UPSTREAM_UNAVAILABLE, msg);
        return;
    }
    if (t->withheld) {
        snprintf(msg, sizeof msg,
                 "the definition of %s changed upstream (%s) since it was "
                 "pinned; it is withheld until an operator accepts it",
                 t->exposed, u->cfg->name);
        finish_tool_error(k, TE_DEFINITION_CHANGED, msg);
        return;
    }
    if (t->dropped) { /* a reload left it out after the approval */
        snprintf(msg, sizeof msg,
                 "%s is no longer exposed: the gateway file's tools rules of "
                 "upstream %s leave it out",
                 t->exposed, u->cfg->name);
        finish_tool_error(k, TE_NOT_FOUND, msg);
        return;
    }
    if (k->at == NULL) { /* routed once, then a slot taken */
        bool busy = false;
        /* Woken (or timed out) while waiting for a slot: where it waits, never routed again (a
         * new route could stop the very instance whose callback woke it). */
        struct upstream *routed = k->waiting_on;
        wait_for_slot(k, NULL);
        if (routed)
            u = routed;
        else if (u->pool && (u = gwi_route(t->up, k->args, &busy, msg, sizeof msg)) == NULL) {
            finish_tool_error(k, busy ? TE_BUSY : TE_INVALID_ARGUMENTS, msg);
            return;
        }
        if (u->state != UP_READY && !gwi_starting(u)) {
            snprintf(msg, sizeof msg, "upstream %s is not available (%s); call it again later",
                     u->cfg->name, u->error ? u->error : "not started");
            finish_tool_error(k, TE_UPSTREAM_UNAVAILABLE, msg);
            return;
        }
        if (u->in_flight >= u->cfg->max_in_flight) {
            if (now < k->deadline_ms) { /* the next slot freed there is its (or the deadline) */
                wait_for_slot(k, u);
                k->timer = loop_timer_add(u->loop, k->deadline_ms - now, on_deadline, k);
                return;
            }
            snprintf(msg, sizeof msg, "upstream %s had no free slot for %s within %u s",
                     u->cfg->name, t->exposed, u->cfg->timeout_s);
            finish_tool_error(k, TE_BUSY, msg);
            return;
        }
        u->in_flight++; /* held from now on: a starting instance with it is not idle */
        k->at = u;
    }
    u = k->at;
    if (gwi_starting(u) && now < k->deadline_ms) {
        k->timer = loop_timer_add(u->loop, GW_TASK_RETRY_MS, on_deadline, k);
        return;
    }
    if (u->state != UP_READY) {
        snprintf(msg, sizeof msg, "upstream %s is not available (%s); call it again later",
                 u->cfg->name, u->error ? u->error : "not started");
        finish_tool_error(k, TE_UPSTREAM_UNAVAILABLE, msg);
        return;
    }
    if (now >= k->deadline_ms) { /* never sent only to be cancelled at once */
        snprintf(msg, sizeof msg, "upstream %s could not take %s within %u s", u->cfg->name,
                 t->exposed, u->cfg->timeout_s);
        finish_tool_error(k, TE_UPSTREAM_TIMEOUT, msg);
        return;
    }
    json_t *params = json_pack("{s:s, s:O}", "name", t->name, "arguments", k->args);
    if (u->modern) /* no connection to ask the caller anything on: it can answer nothing */
        json_object_set_new(params, "_meta",
                            json_pack("{s:{}}", "io.modelcontextprotocol/clientCapabilities"));
    gw_call_trace_meta(params, k->span);
    if (!up_request(u, "tools/call", params, on_answer, k, NULL, &k->wire_id)) {
        snprintf(msg, sizeof msg, "upstream %s could not be sent the call; call it again later",
                 u->cfg->name);
        finish_tool_error(k, TE_UPSTREAM_UNAVAILABLE, msg);
        return;
    }
    up_request_for_client(u, k->wire_id); /* its input requests find no call: refused */
    k->sent = true;
    uint64_t left = k->deadline_ms > now ? k->deadline_ms - now : 0;
    k->timer = loop_timer_add(u->loop, left, on_deadline, k);
}

/* ---------- the operator's decision ---------- */

static void on_decision(void *arg, enum approval_outcome outcome, const char *reason,
                        const char *decider)
{
    struct gw_task *k = arg;
    struct gw_tool *t = k->t;
    char why[400];
    k->approval[0] = '\0';
    if (gw_approval_decided(t, k->caller, outcome, reason, decider, k->approval_timeout_s, why,
                            sizeof why)) {
        k->phase = GWT_RUNNING;
        k->updated = time(NULL);
        k->deadline_ms = loop_now(t->up->loop) + (uint64_t)t->up->cfg->timeout_s * 1000u;
        if (k->all->pg == NULL) {
            send_call(k);
            return;
        }
        /* Sent once the row says working here still (gw_task_written): never a call whose task
         * another replica ended meanwhile. */
        k->confirming = true;
        k->timer =
            loop_timer_add(t->up->loop, (uint64_t)t->up->cfg->timeout_s * 1000u, on_deadline, k);
        share(k, NULL, NULL);
        return;
    }
    finish_tool_error(k, TE_APPROVAL_DENIED, why);
}

/* ---------- ending a task on request ---------- */

/* The task ends before its call did (status, outcome_take, the audit's record_status): the
 * request leaves the queue, or the upstream is told why; an ended task stays as it is. */
static void end_early(struct gw_task *k, const char *status, json_t *outcome_take,
                      const char *record_status, const char *why)
{
    if (k->phase == GWT_WAITING) {
        approvals_withdraw(k->t->up->gw->approvals, k->approval);
        k->approval[0] = '\0';
        gw_approval_audit(k->t, k->caller, "withdrawn", "withdrawn");
    } else if (k->phase == GWT_RUNNING) {
        stop_at_upstream(k, why);
    } else {
        json_decref(outcome_take);
        return;
    }
    finish(k, status, outcome_take, record_status);
}

/* tasks/cancel, here or through another replica. */
static void cancel_task(struct gw_task *k)
{
    end_early(k, "cancelled", NULL, "cancelled", "cancelled by the client (tasks/cancel)");
}

/* The store says the task ended with this replica (cut off from the database longer than a
 * beat allows, it counted as gone): it ends here too, failed, as everywhere else; one that
 * ended here meanwhile takes the row's end (one truth on every replica). */
void gw_task_lost(struct gw_tasks *all, const char *id)
{
    struct gw_task *k = find(all, id);
    if (k == NULL || (k->phase == GWT_DONE && k->why && strcmp(k->why, GWTASKPG_GONE_MESSAGE) == 0))
        return;
    json_t *error =
        json_pack("{s:i, s:s}", "code", JRPC_INTERNAL_ERROR, "message", GWTASKPG_GONE_MESSAGE);
    k->dirty = false; /* the row is final: nothing of ours goes over it */
    k->why = GWTASKPG_GONE_MESSAGE;
    if (k->phase != GWT_DONE) {
        log_warn("gateway task %s ended: the store counted this replica as gone", k->id);
        end_early(k, "failed", error, GW_TASK_LOST, "the replica holding the task lost the store");
        return;
    }
    log_warn("gateway task %s: its end (%s) was refused by the store, which ended it as this "
             "replica's while it counted as gone: it is failed here too",
             k->id, k->status);
    json_decref(k->outcome);
    k->status = "failed";
    k->outcome = error;
    k->updated = time(NULL);
    if (mcp_task_watched(all->g->mcp, k->id)) {
        json_t *o = task_json(k);
        mcp_task_notify(all->g->mcp, k->caller, o);
        json_decref(o);
    }
}

void gw_task_written(struct gw_tasks *all, const char *id, unsigned seq, enum gwtaskpg_put_result r)
{
    struct gw_task *k = find(all, id);
    if (k == NULL)
        return;
    if (r == GWTASKPG_ENDED) {
        gw_task_lost(all, id);
        return;
    }
    if (seq == k->wseq) /* an older write's fate says nothing of the row now */
        k->dirty = r == GWTASKPG_LOST;
    if (r == GWTASKPG_WRITTEN && k->confirming) { /* the row is working, ours: the call goes */
        k->confirming = false;
        loop_timer_cancel(k->timer);
        k->timer = NULL;
        send_call(k);
    }
}

bool gw_task_held(const struct gw_tasks *all, const char *id)
{
    return find(all, id) != NULL;
}

bool gw_task_open(const struct gw_tasks *all, const char *id)
{
    const struct gw_task *k = find(all, id);
    return k && k->phase != GWT_DONE;
}

void gw_task_cancel_held(struct gw_tasks *all, const char *id)
{
    struct gw_task *k = find(all, id);
    if (k) {
        log_info("gateway task %s cancelled through another replica", k->id);
        cancel_task(k);
    }
}

void gw_task_share_dirty(struct gw_tasks *all)
{
    LIST_FOREACH(n, &all->tasks)
    {
        struct gw_task *k = task_of(n);
        if (k->dirty) {
            k->dirty = false; /* in flight: its answer says again */
            share(k, NULL, NULL);
        }
    }
}

/* ---------- creating a task ---------- */

/* The creating call went away before the row was written: nobody learns of the task. */
static void creating_cancelled(struct mcp_call *call, void *arg)
{
    struct creating *cr = arg;
    (void)call;
    cr->call = NULL;
    if (cr->k)
        cancel_task(cr->k);
}

/* The row is written or could not be: the creating call is answered (at the stop: nothing
 * but cr is touched). */
static void created(enum gwtaskpg_put_result r, void *arg)
{
    struct creating *cr = arg;
    struct gw_task *k = cr->k;
    bool ok = r == GWTASKPG_WRITTEN;
    if (k)
        k->creating = NULL;
    if (cr->call && r != GWTASKPG_CLOSED) {
        mcp_call_on_cancel(cr->call, NULL, NULL);
        if (ok && k) {
            json_t *o = task_json(k);
            json_object_set_new(o, "resultType", json_string("task"));
            mcp_call_result_take(cr->call, o);
        } else {
            if (k)
                cancel_task(k); /* announced to nobody: it ends here */
            gwtaskpg_unavailable(cr->all->pg, cr->call);
        }
    }
    free(cr);
}

bool gw_task_wanted(struct mcp_call *call)
{
    return mcp_call_client_extension(call, MCP_TASKS_EXTENSION);
}

void gw_task_start(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us)
{
    struct gateway *g = t->up->gw;
    struct gw_tasks *all = g->tasks;
    const char *caller = mcp_call_caller(call);
    const char *p = caller && strncmp(caller, "p:", 2) == 0 ? caller + 2 : "-";
    char rnd[2 * GW_TASK_ID_BYTES + 1];
    sweep(all);
    if (all->pg && !gwtaskpg_up(all->pg)) { /* no task another replica could not answer */
        gw_call_record_tool(t, call, started_us, GW_TASK_UNAVAILABLE);
        gwtaskpg_unavailable(all->pg, call);
        return;
    }
    if (!make_room(all, caller)) {
        gw_call_record_tool(t, call, started_us, toolerr_name(TE_BUSY));
        mcp_call_result_take(call, tool_error_json(TE_BUSY, 60,
                                                   "too many gateway tasks are open (%u of "
                                                   "yours at most, %u in all); call it again "
                                                   "once some have ended",
                                                   GW_TASKS_PER_CALLER, GW_TASKS_MAX));
        return;
    }
    struct gw_task *k = xcalloc(1, sizeof *k);
    const char *aid = NULL;
    if (crypto_random_hex(rnd, GW_TASK_ID_BYTES))
        aid =
            g->approvals ? approvals_add(g->approvals, p, t->exposed, args, on_decision, k) : NULL;
    if (aid == NULL) {
        free(k);
        gw_call_record_tool(t, call, started_us, toolerr_name(TE_APPROVAL_DENIED));
        mcp_call_result_take(call, tool_error_json(TE_APPROVAL_DENIED, 0, "%s",
                                                   gw_approval_refusal(g->approvals, p)));
        return;
    }
    *k = (struct gw_task){.all = all,
                          .t = t,
                          .caller = xstrdup(caller),
                          .phase = GWT_WAITING,
                          .status = "working",
                          .args = json_incref(args),
                          .started_us = started_us,
                          .approval_timeout_s = g->approvals_timeout_s};
    snprintf(k->id, sizeof k->id, GW_TASK_PREFIX "%s", rnd);
    snprintf(k->approval, sizeof k->approval, "%s", aid);
    /* The call's span lives with the task (the approval, the call at the upstream): it is
     * made from the creating call's context, which the task outlives. */
    k->span = gw_call_trace_start(call, t->up, "tools/call", t->name);
    otel_span_str(k->span, "gen_ai.tool.name", t->name);
    otel_span_lit(k->span, "gen_ai.operation.name", "execute_tool");
    otel_span_str(k->span, "hermes.task.id", k->id);
    k->created = k->updated = time(NULL);
    list_push_back(&all->tasks, &k->link);
    all->n++;
    if (all->pg) {
        struct creating *cr = xcalloc(1, sizeof *cr);
        *cr = (struct creating){.all = all, .k = k, .call = call};
        k->creating = cr;
        mcp_call_on_cancel(call, creating_cancelled, cr);
        share(k, created, cr);
        return;
    }
    json_t *o = task_json(k);
    json_object_set_new(o, "resultType", json_string("task"));
    mcp_call_result_take(call, o);
}

/* ---------- the task methods ---------- */

/* The caller's task (swept first), or any for the owner token and hermes:admin (the bridge's
 * rule), else NULL with the call answered "not found"; a principal whose scope for the tool's
 * upstream was cut since gets forbidden. With a store, a task not held here is another
 * replica's, and another caller's is asked about as an unknown id is: the call is answered
 * from the row (gwtaskpg_ask: "not found", or 503 while the database is away), NULL returned. */
static struct gw_task *owned(struct gw_tasks *all, struct mcp_call *c, const char *id,
                             enum gwtaskpg_op op)
{
    sweep(all);
    struct gw_task *k = find(all, id);
    char scope[128];
    bool mine = k && (strcmp(k->caller, mcp_call_caller(c)) == 0 || mcp_call_sees_all(c));
    if (!mine && all->pg) {
        gwtaskpg_ask(all->pg, c, id, op);
        return NULL;
    }
    if (mine) {
        snprintf(scope, sizeof scope, SCOPE_GATEWAY_PREFIX "%s", k->t->up->cfg->name);
        if (!mcp_call_allowed(c, scope)) {
            mcp_call_task_forbidden(c);
            return NULL;
        }
        return k;
    }
    mcp_call_task_not_found(c);
    return NULL;
}

static void task_get(struct mcp_call *c, const char *id, void *arg)
{
    struct gw_task *k = owned(arg, c, id, GWTASKPG_GET);
    if (k)
        mcp_call_result_take(c, task_json(k));
}

/* A gateway task never asks for input: answers are acknowledged and ignored. */
static void task_update(struct mcp_call *c, const char *id, json_t *responses, void *arg)
{
    (void)responses;
    if (owned(arg, c, id, GWTASKPG_UPDATE))
        mcp_call_result_take(c, json_object());
}

static void task_cancel(struct mcp_call *c, const char *id, void *arg)
{
    struct gw_task *k = owned(arg, c, id, GWTASKPG_CANCEL);
    if (k == NULL)
        return;
    cancel_task(k);
    mcp_call_result_take(c, json_object()); /* an ended task: the same acknowledgement */
}

static const struct mcp_task_ops ops = {task_get, task_update, task_cancel};

void gw_task_methods_start(struct gateway *g)
{
    bool guarded = false;
    for (size_t i = 0; i < g->ntools; i++)
        guarded |= g->tools[i].guard == GW_GUARD_APPROVE;
    if (!guarded)
        return; /* no task of ours could exist: the extension is not advertised for us */
    g->tasks = xcalloc(1, sizeof *g->tasks);
    g->tasks->g = g;
    list_init(&g->tasks->tasks);
    g->tasks->pg = gwtaskpg_start(g, g->tasks);
    mcp_add_task_ops(g->mcp, GW_TASK_PREFIX, &ops, g->tasks);
}

void gw_task_slot_free(struct upstream *u)
{
    struct gw_tasks *all = u->gw->tasks;
    if (all == NULL || all->nwaiting == 0)
        return; /* the common case, on every call's completion: no walk */
    LIST_FOREACH(n, &all->tasks)
    {
        struct gw_task *k = task_of(n);
        if (k->waiting_on != u)
            continue;
        if (u->in_flight >= u->cfg->max_in_flight && u->state == UP_READY && !u->gw->draining)
            break; /* no slot for the oldest: none for the younger ones either */
        loop_timer_cancel(k->timer);
        k->timer = NULL;
        send_call(k); /* takes the slot, or answers the task (down, stopping), or waits again */
    }
}

size_t gateway_tasks_running(const struct gateway *g)
{
    size_t running = 0;
    if (g == NULL || g->tasks == NULL)
        return 0;
    LIST_FOREACH(n, &g->tasks->tasks)
    running += task_of(n)->phase == GWT_RUNNING;
    return running;
}

void gw_task_deny_dropped(struct gateway *g)
{
    if (g->tasks == NULL)
        return;
    LIST_FOREACH(n, &g->tasks->tasks)
    {
        struct gw_task *k = task_of(n);
        if (k->phase == GWT_WAITING && k->t->dropped && k->approval[0]) /* finished: kept */
            approvals_decide(g->approvals, k->approval, false, GW_DROPPED_REASON, GW_BY_RELOAD);
    }
}

void gw_task_free_all(struct gateway *g)
{
    struct gw_tasks *all = g->tasks;
    if (all == NULL)
        return;
    for (struct list *n; (n = list_first(&all->tasks)) != NULL;) {
        struct gw_task *k = task_of(n);
        if (all->pg && k->phase != GWT_DONE) { /* the row says the stop ended it */
            char msg[300];
            struct gw_task_view v = view_of(k, msg, sizeof msg);
            gwtaskpg_put_stopped(all->pg, k->caller, k->t->up->cfg->name, &v);
        }
        if (k->phase == GWT_WAITING) {
            approvals_withdraw(g->approvals, k->approval);
        } else if (k->phase == GWT_RUNNING) {
            /* The drain's grace is over (the engine is gone: no one hears of the task): the
             * upstream is told, the audit says how it ended. */
            stop_at_upstream(k, "the server is stopping");
            gw_call_record_tool_as(k->t, k->at ? k->at : k->t->up, k->caller, k->started_us,
                                   "cancelled");
        }
        task_free(k);
    }
    gwtaskpg_stop(all->pg); /* after the last writes: what the stop ended */
    assert(all->n == 0 && all->nwaiting == 0);
    free(all);
    g->tasks = NULL;
}
