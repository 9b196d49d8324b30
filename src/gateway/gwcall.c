/* gwcall.c — a client's tools/call on an exposed tool, proxied to its upstream. At most
 * max_in_flight calls are at the upstream at once; up to GW_QUEUE_MAX more wait in order, then
 * calls are answered busy. Each sent call has its own deadline (timeout: upstream_timeout); a
 * client's cancel becomes notifications/cancelled with our id on the wire; progress comes back
 * under the caller's own token (the engine adds it). An upstream that goes away answers its
 * calls upstream_unavailable. Tool errors have the bridge's shape (toolerr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_internal.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "toolerr.h"
#include "utf8.h"

static void call_free(struct gw_call *gc)
{
    loop_timer_cancel(gc->timer);
    json_decref(gc->args);
    free(gc->tool);
    free(gc);
}

/* ---------- the wait queue ---------- */

static void enqueue(struct upstream *u, struct gw_call *gc)
{
    gc->queued = true;
    gc->prev = u->wait_tail;
    gc->next = NULL;
    if (u->wait_tail)
        u->wait_tail->next = gc;
    else
        u->wait_head = gc;
    u->wait_tail = gc;
    u->waiting++;
}

static void dequeue(struct upstream *u, struct gw_call *gc)
{
    if (gc->prev)
        gc->prev->next = gc->next;
    else
        u->wait_head = gc->next;
    if (gc->next)
        gc->next->prev = gc->prev;
    else
        u->wait_tail = gc->prev;
    gc->queued = false;
    gc->next = gc->prev = NULL;
    u->waiting--;
}

/* ---------- answers ---------- */

static void unavailable(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    char msg[300];
    snprintf(msg, sizeof msg, "upstream %s is not available (%s); retry later", u->cfg->name,
             u->error ? u->error : "not started");
    mcp_call_result_take(gc->call, tool_error_json(TE_UPSTREAM_UNAVAILABLE, 0, "%s", msg));
}

/* A JSON-RPC error from the upstream goes to the client as one (its code, a capped text). */
static void forward_error(struct gw_call *gc, json_t *error)
{
    json_t *code = json_object_get(error, "code");
    char msg[300];
    snprintf(msg, sizeof msg, "%s",
             json_is_string(json_object_get(error, "message"))
                 ? json_string_value(json_object_get(error, "message"))
                 : "the upstream refused the call");
    utf8_clean(msg);
    mcp_call_error(gc->call, json_is_integer(code) ? (int)json_integer_value(code) : -32603, msg);
}

static void on_answer(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    struct gw_call *gc = arg;
    u->in_flight--;
    if (result)
        mcp_call_result_take(gc->call, json_incref(result));
    else if (error)
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

static void on_timeout(struct loop *l, void *arg)
{
    struct gw_call *gc = arg;
    struct upstream *u = gc->up;
    char msg[300];
    (void)l;
    gc->timer = NULL;
    tell_cancelled(u, gc->id, "timed out at the gateway");
    snprintf(msg, sizeof msg, "upstream %s did not answer %.100s within %u s", u->cfg->name,
             gc->tool, u->cfg->timeout_s);
    utf8_clean(msg);
    mcp_call_result_take(gc->call, tool_error_json(TE_UPSTREAM_TIMEOUT, 0, "%s", msg));
    call_free(gc);
    gw_call_next(u);
}

static void on_cancel(struct mcp_call *call, void *arg)
{
    struct gw_call *gc = arg;
    struct upstream *u = gc->up;
    (void)call; /* gone after this callback */
    if (gc->queued)
        dequeue(u, gc);
    else
        tell_cancelled(u, gc->id, "cancelled by the client");
    call_free(gc);
    gw_call_next(u);
}

/* ---------- sending ---------- */

static void send_call(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    json_t *params = json_pack("{s:s, s:O}", "name", gc->tool, "arguments", gc->args);
    if (!up_request(u, "tools/call", params, on_answer, gc, gc, &gc->id)) {
        unavailable(gc);
        call_free(gc);
        return;
    }
    u->in_flight++;
    gc->timer = loop_timer_add(u->loop, (uint64_t)u->cfg->timeout_s * 1000, on_timeout, gc);
}

void gw_call_next(struct upstream *u)
{
    if (u->state != UP_READY) {
        gw_calls_fail_waiting(u);
        return;
    }
    while (u->wait_head && u->in_flight < u->cfg->max_in_flight) {
        struct gw_call *gc = u->wait_head;
        dequeue(u, gc);
        send_call(gc);
    }
}

void gw_calls_fail_waiting(struct upstream *u)
{
    while (u->wait_head) {
        struct gw_call *gc = u->wait_head;
        dequeue(u, gc);
        unavailable(gc);
        call_free(gc);
    }
}

void gw_call_progress(struct gw_call *gc, json_t *params)
{
    json_t *p = json_object_get(params, "progress"), *t = json_object_get(params, "total");
    const char *msg = json_string_value(json_object_get(params, "message"));
    if (!json_is_number(p))
        return;
    mcp_call_progress(gc->call, json_number_value(p), json_is_number(t) ? json_number_value(t) : 0,
                      msg);
}

void gw_tool_handler(struct mcp_call *call, json_t *args, void *arg)
{
    struct gw_tool *t = arg;
    struct upstream *u = t->up;
    if (t->withheld) {
        mcp_call_result_take(call, tool_error_json(TE_DEFINITION_CHANGED, 0,
                                                   "the definition of %s changed upstream (%s) "
                                                   "since it was pinned; it is withheld until an "
                                                   "operator accepts it",
                                                   t->exposed, u->cfg->name));
        return;
    }
    struct gw_call *gc = xcalloc(1, sizeof *gc);
    gc->up = u;
    gc->call = call;
    gc->tool = xstrdup(t->name);
    gc->args = json_incref(args);
    gc->has_progress = mcp_call_progress_token(call) != NULL;
    if (u->state != UP_READY) {
        unavailable(gc);
        call_free(gc);
        return;
    }
    if (u->in_flight >= u->cfg->max_in_flight && u->waiting >= GW_QUEUE_MAX) {
        mcp_call_result_take(call, tool_error_json(TE_BUSY, 1,
                                                   "upstream %s has too many calls waiting; "
                                                   "retry shortly",
                                                   u->cfg->name));
        call_free(gc);
        return;
    }
    mcp_call_on_cancel(call, on_cancel, gc);
    if (u->in_flight >= u->cfg->max_in_flight)
        enqueue(u, gc);
    else
        send_call(gc);
}
