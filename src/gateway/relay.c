/* relay.c — an upstream's sampling/createMessage or elicitation/create request, made while one
 * of our proxied calls runs there, goes to the client that made that call, and the client's
 * answer goes back to the upstream under the upstream's own request id.
 *
 * Which call a request belongs to: over Streamable HTTP it comes on the event stream of that
 * call's POST (httpup.c tells us the POST's id); over stdio the 2025-11-25 wire says nothing, so
 * it is relayed only when exactly one client request is at that upstream and it is a tool call
 * (a resources/read or prompts/get counts too), and refused when several are (guessing would
 * show one user's form, or send one user's prompt, to another). A client that did not declare
 * the capability, or no call at all: the upstream gets a JSON-RPC error at once, so its tool
 * never hangs waiting.
 *
 * A client of the 2026-07-28 era takes no request in the middle of a call; it is asked through
 * an input-required result instead. Its call ends with that result, carrying the upstream's
 * request (params as sent, capped) and sealed state naming a held call: a random handle (the
 * engine binds the state to the caller and the request). The upstream's call stays open and
 * keeps its max_in_flight slot and its deadline; the client's retry with the answer (and that
 * state) sends the answer upstream under the upstream's own id and takes the call over
 * (gwcall.c resume_held), once. A held call not resumed within the state's lifetime is
 * cancelled upstream and forgotten; one whose upstream ends it meanwhile is forgotten too. A
 * second request during a held call is refused: 2026-07-28 asks one round at a time here.
 *
 * A 2026-07-28 upstream's own input_required results, the other way round, are mrtr.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "gwcore.h"
#include "gwevent.h"
#include "jrpc.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "relay.h"
#include "strmap.h"
#include "toolerr.h"
#include "upstream.h"

/* A request relayed to a client, waiting for its answer. */
struct relay {
    struct gw_call *gc; /* which owns it (gc->relays) */
    struct relay *next;
    struct upstream *up;
    json_t *id;        /* the upstream's request id, as it sent it */
    unsigned restarts; /* the upstream's start it belongs to: a restarted one forgot it */
    char method[32];
};

/* A proxied call held for a 2026-07-28 client's answer to the upstream's request. */
struct gw_hold {
    struct gw_call *gc;
    char handle[33];          /* 128 random bits in hex: what the sealed state names */
    char caller[64];          /* who may resume it (mcp_call_caller) */
    char key[16];             /* the request's key in inputRequests and inputResponses */
    json_t *upstream_id;      /* the upstream's request id, to answer under */
    struct loop_timer *timer; /* the state's lifetime: not resumed by then, cancelled */
};

static void answer_upstream(struct upstream *u, json_t *id, json_t *result, int code,
                            const char *message)
{
    json_t *msg = result ? jrpc_result(id, json_incref(result)) : jrpc_error(id, code, message);
    up_send_message(u, msg);
    json_decref(msg);
}

static void refuse(struct upstream *u, json_t *id, const char *method, int code, const char *why)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s not relayed: %s", method, why);
    log_info("upstream %s: %s", u->cfg->name, msg);
    answer_upstream(u, id, NULL, code, msg);
}

static void relay_unlink(struct relay *rl)
{
    for (struct relay **p = &rl->gc->relays; *p; p = &(*p)->next)
        if (*p == rl) {
            *p = rl->next;
            return;
        }
}

/* The client's answer (or both NULL: the call ended first). */
static void on_client_answer(struct mcp_call *call, json_t *result, json_t *error, void *arg)
{
    struct relay *rl = arg;
    struct upstream *u = rl->up;
    (void)call;
    relay_unlink(rl);
    if (u->state != UP_DOWN && u->restarts == rl->restarts) {
        if (json_is_object(result)) {
            answer_upstream(u, rl->id, result, 0, NULL);
        } else if (error) {
            char msg[300];
            int code = gw_event_rpc_error(error, "the client refused the request", msg, sizeof msg);
            answer_upstream(u, rl->id, NULL, code, msg);
        } else {
            answer_upstream(u, rl->id, NULL, JRPC_INTERNAL_ERROR,
                            "the call ended before the client answered");
        }
    }
    json_decref(rl->id);
    free(rl);
}

/* The proxied call the request belongs to, or NULL (why says so). */
static struct gw_call *find_call(struct upstream *u, uint64_t related_id, const char **why)
{
    char key[24];
    if (related_id) {
        snprintf(key, sizeof key, "%llu", (unsigned long long)related_id);
        struct up_req *r = strmap_get(u->pending, key);
        *why = "it does not belong to a tool call";
        return r ? r->call : NULL;
    }
    /* Every request a client made counts, not only tool calls: a request made during another
     * client's resources/read or prompts/get must not reach the one caller of a tool. */
    size_t n, for_clients = 0;
    struct gw_call *only = NULL;
    void **v = strmap_values(u->pending, &n);
    for (size_t i = 0; i < n; i++) {
        struct up_req *r = v[i];
        for_clients += r->for_client;
        if (r->call)
            only = r->call;
    }
    free(v);
    *why = for_clients > 1 ? "several calls are in flight at this stdio upstream and the request "
                             "does not say which it belongs to"
           : for_clients && only == NULL ? "it does not belong to a tool call"
                                         : "no tool call is in flight";
    return for_clients == 1 ? only : NULL;
}

static const char *capability_of(const char *method)
{
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    return NULL;
}

/* The client capability this very request needs, with the refusal when it is missing: a
 * url-mode elicitation needs elicitation.url, a form one elicitation.form (an empty
 * elicitation object is form mode), sampling with tools sampling.tools (mcp.c keeps these). */
const char *gw_relay_needed_capability(const char *method, json_t *params, const char **refusal)
{
    if (strcmp(method, "sampling/createMessage") == 0) {
        bool tools = json_object_get(params, "tools") != NULL;
        *refusal = tools ? "the calling client does not support sampling with tools"
                         : "the calling client does not support sampling";
        return tools ? "sampling.tools" : "sampling";
    }
    const char *mode = json_string_value(json_object_get(params, "mode"));
    bool url = mode && strcmp(mode, "url") == 0;
    *refusal = url ? "the calling client does not support url-mode elicitation"
                   : "the calling client does not support elicitation";
    return url ? "elicitation.url" : "elicitation.form";
}

/* ---------- 2026-07-28: held calls ---------- */

static void on_hold_expired(struct loop *l, void *arg)
{
    struct gw_hold *h = arg;
    struct gw_call *gc = h->gc;
    struct upstream *u = gc->up;
    (void)l;
    h->timer = NULL;
    log_event(EV_HELD_CALL_EXPIRED,
              LOG_FIELDS(LF_S("upstream", u->cfg->name), LF_S("tool", gc->tool),
                         LF_S("why", "not_resumed")),
              "upstream %s: a call of %.64s held for the client's answer was not resumed within "
              "%u ms: cancelled upstream",
              u->cfg->name, gc->tool, mcp_state_ttl_ms(u->gw->mcp));
    answer_upstream(u, h->upstream_id, NULL, JRPC_INTERNAL_ERROR,
                    "the client did not answer in time (2026-07-28 input round expired)");
    gw_call_abandon(gc, "the client did not answer in time"); /* releases h */
}

void gw_relay_release(struct gw_call *gc)
{
    struct gw_hold *h = gc->hold;
    while (gc->relays) { /* the call ended before its client answered these */
        struct relay *rl = gc->relays;
        gc->relays = rl->next;
        if (rl->up->state != UP_DOWN && rl->up->restarts == rl->restarts)
            answer_upstream(rl->up, rl->id, NULL, JRPC_INTERNAL_ERROR,
                            "the call ended before the client answered");
        json_decref(rl->id);
        free(rl);
    }
    gw_mrtr_release(gc);
    if (h == NULL)
        return;
    strmap_del(gc->up->held, h->handle);
    loop_timer_cancel(h->timer);
    json_decref(h->upstream_id);
    free(h);
    gc->hold = NULL;
}

const char *gw_relay_caller(const struct gw_call *gc)
{
    return gc->hold ? gc->hold->caller : "anonymous";
}

void gw_relay_cleanup(struct upstream *u)
{
    gw_mrtr_cleanup(u);
    size_t n;
    void **v = strmap_values(u->held, &n);
    for (size_t i = 0; i < n; i++) {
        struct gw_hold *h = v[i];
        char key[24];
        snprintf(key, sizeof key, "%llu", (unsigned long long)h->gc->id);
        free(strmap_del(u->pending, key)); /* its answer, if any, has no one to go to */
        gw_call_drop(h->gc);               /* releases h */
    }
    free(v);
}

/* The calling client speaks 2026-07-28: its call ends with an input-required result carrying
 * the upstream's request, and the upstream's call is held for its retry. */
static void hold_for_answer(struct upstream *u, struct gw_call *gc, json_t *id, const char *method,
                            const char *capability, json_t *params)
{
    json_t *copy = json_is_object(params) ? json_deep_copy(params) : json_object();
    json_object_del(copy, "_meta"); /* the upstream's own tokens mean nothing to the client */
    char *text = json_dumps(copy, JSON_COMPACT);
    size_t size = text ? strlen(text) : SIZE_MAX;
    free(text);
    struct gw_hold *h = xcalloc(1, sizeof *h);
    if (size > RELAY_PARAMS_MAX || !crypto_random_hex(h->handle, 16)) {
        json_decref(copy);
        free(h);
        refuse(u, id, method, JRPC_INTERNAL_ERROR,
               size > RELAY_PARAMS_MAX ? "its params are too large to relay (over 1 MiB)"
                                       : "no random handle for the held call");
        return;
    }
    h->gc = gc;
    snprintf(h->caller, sizeof h->caller, "%s", mcp_call_caller(gc->call));
    snprintf(h->key, sizeof h->key, "%s", capability);
    h->upstream_id = json_incref(id);
    h->timer = loop_timer_add(u->loop, mcp_state_ttl_ms(u->gw->mcp), on_hold_expired, h);
    strmap_put(u->held, h->handle, h);
    gc->hold = h;
    struct mcp_call *call = gc->call;
    gc->call = NULL; /* ends with the result below; the client's retry brings the next */
    log_info("upstream %s: %s relayed to the calling 2026-07-28 client as an input-required "
             "result (tool %.64s)",
             u->cfg->name, method, gc->tool);
    mcp_call_input_required(call,
                            json_pack("{s:{s:s, s:o}}", h->key, "method", method, "params", copy),
                            json_pack("{s:s}", "held", h->handle));
}

/* The held call's handle that call's sealed state names, or NULL. */
static const char *held_handle(const struct mcp_call *call)
{
    if (!mcp_call_is_modern(call))
        return NULL;
    return json_string_value(json_object_get(mcp_call_input_state(call), "held"));
}

bool gw_relay_resumes(const struct mcp_call *call)
{
    return held_handle(call) != NULL;
}

bool gw_relay_resume(struct upstream *u, struct mcp_call *call, const char *tool,
                     struct gw_call **held)
{
    const char *handle = held_handle(call);
    *held = NULL;
    if (handle == NULL)
        return false;
    struct gw_hold *h = strmap_get(u->held, handle);
    /* The engine already refuses another caller's state; checked again, it costs nothing. */
    if (h == NULL || strcmp(h->caller, mcp_call_caller(call)) != 0 ||
        strcmp(h->gc->tool, tool) != 0) {
        mcp_call_result_take(call, tool_error_json(TE_NOT_FOUND, 0,
                                                   "no held call of upstream %s matches this "
                                                   "requestState: it was already resumed, it "
                                                   "expired, or the upstream ended it; call "
                                                   "the tool again",
                                                   u->cfg->name));
        return true;
    }
    json_t *answer = json_object_get(mcp_call_input_responses(call), h->key);
    if (json_is_object(answer))
        answer_upstream(u, h->upstream_id, answer, 0, NULL);
    else
        answer_upstream(u, h->upstream_id, NULL, JRPC_INTERNAL_ERROR,
                        "the client came back without answering the request");
    log_info("upstream %s: the held call of %.64s resumed with the client's answer", u->cfg->name,
             tool);
    *held = h->gc;
    gw_relay_release(h->gc);
    return true;
}

/* ---------- relaying ---------- */

bool gw_relay_request(struct upstream *u, json_t *msg, const char *method, uint64_t related_id)
{
    const char *capability = capability_of(method), *why;
    json_t *id = json_object_get(msg, "id");
    if (capability == NULL)
        return false;
    struct gw_call *gc = find_call(u, related_id, &why);
    if (gc && gc->hold) {
        refuse(u, id, method, JRPC_INTERNAL_ERROR,
               "the calling client is already answering another request of this call");
        return true;
    }
    if (gc == NULL || gc->call == NULL) {
        refuse(u, id, method, JRPC_INTERNAL_ERROR, why);
        return true;
    }
    json_t *params = json_object_get(msg, "params");
    const char *refusal, *needed = gw_relay_needed_capability(method, params, &refusal);
    if (!mcp_call_client_supports(gc->call, needed)) {
        refuse(u, id, method, JRPC_METHOD_NOT_FOUND, refusal);
        return true;
    }
    if (mcp_call_is_modern(gc->call)) {
        hold_for_answer(u, gc, id, method, capability, params);
        return true;
    }
    struct relay *rl = xcalloc(1, sizeof *rl);
    *rl = (struct relay){.gc = gc, .up = u, .id = json_incref(id), .restarts = u->restarts};
    snprintf(rl->method, sizeof rl->method, "%s", method);
    json_t *copy = json_is_object(params) ? json_deep_copy(params) : json_object();
    json_object_del(copy, "_meta"); /* the upstream's own tokens mean nothing to the client */
    if (!mcp_call_request(gc->call, method, copy, on_client_answer, rl)) {
        json_decref(rl->id);
        free(rl);
        refuse(u, id, method, JRPC_METHOD_NOT_FOUND,
               "the calling client cannot take a request now");
        return true;
    }
    rl->next = gc->relays;
    gc->relays = rl;
    log_info("upstream %s: %s relayed to the calling client (tool %.64s)", u->cfg->name, method,
             gc->tool);
    return true;
}
