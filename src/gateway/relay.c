/* relay.c — an upstream's sampling/createMessage or elicitation/create request, made while one
 * of our proxied calls runs there, goes to the client that made that call (issue 14, behaviour
 * 3), and the client's answer goes back to the upstream under the upstream's own request id.
 *
 * Which call a request belongs to: over Streamable HTTP it comes on the event stream of that
 * call's POST (httpup.c tells us the POST's id); over stdio the 2025-11-25 wire says nothing, so
 * it is relayed only when exactly one client request is at that upstream and it is a tool call
 * (a resources/read or prompts/get counts too), and refused when several are (guessing would show one user's form, or send one user's prompt, to another). A client
 * that did not declare the capability, or no call at all: the upstream gets a JSON-RPC error at
 * once, so its tool never hangs waiting.
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
 * A 2026-07-28 upstream asks the other way: its tools/call answers input_required
 * (inputRequests, requestState) and forgets the call. To a 2026-07-28 caller that result goes
 * on as ours: the same requests under the same keys, and sealed state carrying the upstream's
 * requestState, the round count and a nonce (the engine binds the state to the caller and to
 * the tool and arguments); the caller's retry sends the call again with its inputResponses and
 * the upstream's requestState, once per nonce. To a session-era caller each request goes on
 * the call's stream; with every answer in, the call is sent again the same way, keeping its
 * slot and deadline. Either way the caller's declared capabilities are what the upstream was
 * told (gw_relay_caps) and are checked again per request; past INPUT_ROUNDS_MAX rounds the
 * call ends with a tool error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "gw_internal.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "toolerr.h"

/* The largest upstream request params relayed in an input-required result (as JSON). */
#define RELAY_PARAMS_MAX (1024 * 1024)
/* A 2026-07-28 upstream's input rounds: how many in one call, requests in one round, the
 * longest requestState carried back to a 2026-07-28 caller (it rides in our sealed state:
 * REQSTATE_MAX, 8 KiB; a session-era caller's round keeps it here, up to RELAY_PARAMS_MAX),
 * and rounds handed to clients and not yet resumed, per upstream and per caller there (so
 * one caller that never comes back cannot use up the upstream's rounds for everyone else). */
#define INPUT_ROUNDS_MAX 8
#define INPUT_REQUESTS_MAX 16
#define UPSTREAM_STATE_MAX 4096
#define OPEN_ROUNDS_MAX 4096
#define OPEN_ROUNDS_PER_CALLER 64

/* A request relayed to a client, waiting for its answer. */
struct relay {
    struct gw_call *gc;  /* which owns it (gc->relays) */
    struct relay *next;
    struct upstream *up;
    json_t *id;          /* the upstream's request id, as it sent it */
    unsigned restarts;   /* the upstream's start it belongs to: a restarted one forgot it */
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

/* A 2026-07-28 upstream's input round handed to a 2026-07-28 client: resumable once, within
 * the sealed state's lifetime. */
struct gw_round {
    struct upstream *up;
    char nonce[33];
    char caller[64];          /* who it was handed to (mcp_call_caller): the per-caller cap */
    uint64_t expires_at;      /* loop ms: the sealed state's lifetime */
    struct loop_timer *timer;
};

/* A session-era caller answering a 2026-07-28 upstream's requests, one ask per request. */
struct gw_ask {
    struct gw_collect *co;
    char *key;
    struct gw_ask *next;
};

struct gw_collect {
    struct gw_call *gc;
    json_t *answers;      /* key -> the caller's result */
    size_t waiting;       /* asks sent, not yet answered */
    struct gw_ask *asks;  /* freed with the collect: the engine drops unanswered ones */
};

static void answer_upstream(struct upstream *u, json_t *id, json_t *result, int code,
                            const char *message)
{
    json_t *msg = result ? json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", id, "result",
                                     result)
                         : json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id,
                                     "error", "code", code, "message", message);
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
            int code = gw_rpc_error(error, "the client refused the request", msg, sizeof msg);
            answer_upstream(u, rl->id, NULL, code, msg);
        } else {
            answer_upstream(u, rl->id, NULL, -32603,
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
static const char *needed_capability(const char *method, json_t *params, const char **refusal)
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
    log_info("upstream %s: a call of %.64s held for the client's answer was not resumed within "
             "%u ms: cancelled upstream",
             u->cfg->name, gc->tool, mcp_state_ttl_ms(u->gw->mcp));
    answer_upstream(u, h->upstream_id, NULL, -32603,
                    "the client did not answer in time (2026-07-28 input round expired)");
    gw_call_abandon(gc, "the client did not answer in time"); /* releases h */
}

static void collect_free(struct gw_collect *co)
{
    while (co->asks) {
        struct gw_ask *a = co->asks;
        co->asks = a->next;
        free(a->key);
        free(a);
    }
    json_decref(co->answers);
    free(co);
}

void gw_relay_release(struct gw_call *gc)
{
    struct gw_hold *h = gc->hold;
    while (gc->relays) { /* the call ended before its client answered these */
        struct relay *rl = gc->relays;
        gc->relays = rl->next;
        if (rl->up->state != UP_DOWN && rl->up->restarts == rl->restarts)
            answer_upstream(rl->up, rl->id, NULL, -32603,
                            "the call ended before the client answered");
        json_decref(rl->id);
        free(rl);
    }
    if (gc->collect) {
        collect_free(gc->collect);
        gc->collect = NULL;
    }
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

static void round_free(struct gw_round *r)
{
    strmap_del(r->up->rounds, r->nonce);
    loop_timer_cancel(r->timer);
    free(r);
}

static void rounds_cleanup(struct upstream *u)
{
    size_t n;
    void **v = strmap_values(u->rounds, &n);
    for (size_t i = 0; i < n; i++)
        round_free(v[i]);
    free(v);
    strmap_free(u->rounds);
    u->rounds = NULL;
}

void gw_relay_cleanup(struct upstream *u)
{
    if (u->rounds)
        rounds_cleanup(u);
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
        refuse(u, id, method, -32603,
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
             "result (tool %.64s)", u->cfg->name, method, gc->tool);
    mcp_call_input_required(call,
                            json_pack("{s:{s:s, s:o}}", h->key, "method", method, "params", copy),
                            json_pack("{s:s}", "held", h->handle));
}

bool gw_relay_resume(struct upstream *u, struct mcp_call *call, const char *tool,
                     struct gw_call **held)
{
    const char *handle = json_string_value(json_object_get(mcp_call_input_state(call), "held"));
    *held = NULL;
    if (!mcp_call_is_modern(call) || handle == NULL)
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
        answer_upstream(u, h->upstream_id, NULL, -32603,
                        "the client came back without answering the request");
    log_info("upstream %s: the held call of %.64s resumed with the client's answer",
             u->cfg->name, tool);
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
        refuse(u, id, method, -32603,
               "the calling client is already answering another request of this call");
        return true;
    }
    if (gc == NULL || gc->call == NULL) {
        refuse(u, id, method, -32603, why);
        return true;
    }
    json_t *params = json_object_get(msg, "params");
    const char *refusal, *needed = needed_capability(method, params, &refusal);
    if (!mcp_call_client_supports(gc->call, needed)) {
        refuse(u, id, method, -32601, refusal);
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
        refuse(u, id, method, -32601, "the calling client cannot take a request now");
        return true;
    }
    rl->next = gc->relays;
    gc->relays = rl;
    log_info("upstream %s: %s relayed to the calling client (tool %.64s)", u->cfg->name, method,
             gc->tool);
    return true;
}

/* ---------- a 2026-07-28 upstream's input_required result ---------- */

json_t *gw_relay_caps(struct mcp_call *call)
{
    json_t *caps = json_object(), *elicitation = json_object();
    if (mcp_call_client_supports(call, "elicitation.form"))
        json_object_set_new(elicitation, "form", json_object());
    if (mcp_call_client_supports(call, "elicitation.url"))
        json_object_set_new(elicitation, "url", json_object());
    if (json_object_size(elicitation))
        json_object_set_new(caps, "elicitation", elicitation);
    else
        json_decref(elicitation);
    if (mcp_call_client_supports(call, "sampling"))
        json_object_set_new(caps, "sampling",
                            mcp_call_client_supports(call, "sampling.tools")
                                ? json_pack("{s:{}}", "tools")
                                : json_object());
    if (mcp_call_client_supports(call, "roots"))
        json_object_set_new(caps, "roots", json_object());
    return caps;
}

/* Whether the caller can answer the request (method, params); why says so when not. */
static bool caller_can_answer(struct mcp_call *call, const char *method, json_t *params,
                              char *why, size_t whylen)
{
    const char *refusal = "the calling client does not support roots";
    const char *needed = strcmp(method, "roots/list") == 0
                             ? "roots"
                             : needed_capability(method, params, &refusal);
    if (mcp_call_client_supports(call, needed))
        return true;
    snprintf(why, whylen, "%s not relayed: %s", method, refusal);
    return false;
}

/* The upstream's inputRequests as we pass them on (keys kept, each params without _meta), or
 * NULL with why: not well formed, too many or too large, or one the caller cannot answer. */
static json_t *relayable_requests(struct mcp_call *call, json_t *requests, char *why,
                                  size_t whylen)
{
    size_t n = json_object_size(requests);
    if (!json_is_object(requests) || n == 0 || n > INPUT_REQUESTS_MAX) {
        snprintf(why, whylen, "its inputRequests is not an object of 1 to %d requests",
                 INPUT_REQUESTS_MAX);
        return NULL;
    }
    json_t *out = json_object(), *req;
    const char *key;
    json_object_foreach(requests, key, req)
    {
        const char *method = json_string_value(json_object_get(req, "method"));
        json_t *params = json_object_get(req, "params");
        if (strlen(key) > 64 || method == NULL || (params && !json_is_object(params)) ||
            (capability_of(method) == NULL && strcmp(method, "roots/list") != 0)) {
            snprintf(why, whylen, "a request of its inputRequests is not sampling/createMessage, "
                                  "elicitation/create or roots/list with object params");
            json_decref(out);
            return NULL;
        }
        if (!caller_can_answer(call, method, params, why, whylen)) {
            json_decref(out);
            return NULL;
        }
        json_t *copy = params ? json_deep_copy(params) : json_object();
        json_object_del(copy, "_meta"); /* the upstream's own tokens mean nothing to the client */
        json_object_set_new(out, key, json_pack("{s:s, s:o}", "method", method, "params", copy));
    }
    char *text = json_dumps(out, JSON_COMPACT);
    size_t size = text ? strlen(text) : SIZE_MAX;
    free(text);
    if (size > RELAY_PARAMS_MAX) {
        snprintf(why, whylen, "its inputRequests are too large to relay (over 1 MiB)");
        json_decref(out);
        return NULL;
    }
    return out;
}

static void end_with_error(struct gw_call *gc, const char *why)
{
    log_info("upstream %s: the input it asked for in a call of %.64s is not relayed: %s",
             gc->up->cfg->name, gc->tool, why);
    gw_call_record(gc, toolerr_name(TE_UPSTREAM_ERROR));
    mcp_call_result_take(gc->call, tool_error_json(TE_UPSTREAM_ERROR, 0,
                                                   "upstream %s asked for input: %s",
                                                   gc->up->cfg->name, why));
    gw_call_release(gc);
}

static void on_round_expired(struct loop *l, void *arg)
{
    struct gw_round *r = arg;
    (void)l;
    r->timer = NULL;
    round_free(r);
}

static struct gw_round *round_add(struct upstream *u, const char *nonce, const char *caller,
                                  uint64_t expires_at)
{
    struct gw_round *r = xcalloc(1, sizeof *r);
    uint64_t now = loop_now(u->loop);
    r->up = u;
    snprintf(r->nonce, sizeof r->nonce, "%s", nonce);
    snprintf(r->caller, sizeof r->caller, "%s", caller);
    r->expires_at = expires_at;
    r->timer = loop_timer_add(u->loop, expires_at > now ? expires_at - now : 0, on_round_expired,
                              r);
    strmap_put(u->rounds, r->nonce, r);
    return r;
}

static size_t rounds_of(struct upstream *u, const char *caller)
{
    size_t n, mine = 0;
    void **v = strmap_values(u->rounds, &n);
    for (size_t i = 0; i < n; i++)
        mine += strcmp(((struct gw_round *)v[i])->caller, caller) == 0;
    free(v);
    return mine;
}

/* Too many rounds wait for this caller's answers: the call ends busy (its upstream already
 * forgot it), and the caller may retry once it answered or dropped some. */
static void end_busy(struct gw_call *gc)
{
    log_info("upstream %s: %d of its input rounds already wait for the answers of the caller "
             "of %.64s: busy",
             gc->up->cfg->name, OPEN_ROUNDS_PER_CALLER, gc->tool);
    gw_call_record(gc, toolerr_name(TE_BUSY));
    mcp_call_result_take(gc->call,
                         tool_error_json(TE_BUSY, 1,
                                         "upstream %s asked for input, but %d of its input "
                                         "rounds already wait for your answers; answer them "
                                         "or let them expire, then retry",
                                         gc->up->cfg->name, OPEN_ROUNDS_PER_CALLER));
    gw_call_release(gc);
}

static struct gw_round *round_add(struct upstream *u, const char *nonce, const char *caller,
                                  uint64_t expires_at);

/* A 2026-07-28 caller: the call ends with our input_required result. */
static void ask_modern(struct gw_call *gc, json_t *requests_take, json_t *state)
{
    struct upstream *u = gc->up;
    const char *caller = mcp_call_caller(gc->call);
    if (state && json_string_length(state) > UPSTREAM_STATE_MAX) {
        char why[200];
        json_decref(requests_take);
        snprintf(why, sizeof why, "its requestState (%zu bytes) is larger than the %d bytes a "
                 "2026-07-28 caller's state can carry back",
                 json_string_length(state), UPSTREAM_STATE_MAX);
        end_with_error(gc, why);
        return;
    }
    if (strmap_count(u->rounds) >= OPEN_ROUNDS_MAX) {
        json_decref(requests_take);
        end_with_error(gc, "too many of its input rounds wait for their clients' answers");
        return;
    }
    if (rounds_of(u, caller) >= OPEN_ROUNDS_PER_CALLER) {
        json_decref(requests_take);
        end_busy(gc);
        return;
    }
    char nonce[33];
    if (!crypto_random_hex(nonce, 16)) {
        json_decref(requests_take);
        end_with_error(gc, "no random nonce for the round");
        return;
    }
    json_t *ours = json_pack("{s:{s:s, s:s, s:s, s:i, s:O}}", "mrtr", "n", nonce, "u",
                             u->cfg->name, "t", gc->tool, "r", (int)gc->rounds, "s",
                             state ? state : json_null());
    char *text = json_dumps(ours, JSON_COMPACT);
    size_t size = text ? strlen(text) : SIZE_MAX;
    free(text);
    if (size > UPSTREAM_STATE_MAX + 1024) { /* sealed, it must stay under REQSTATE_MAX */
        json_decref(ours);
        json_decref(requests_take);
        end_with_error(gc, "its requestState is too large to carry back");
        return;
    }
    round_add(u, nonce, caller, loop_now(u->loop) + mcp_state_ttl_ms(u->gw->mcp));
    log_info("upstream %s: its input_required result (round %u, tool %.64s) relayed to the "
             "calling 2026-07-28 client",
             u->cfg->name, gc->rounds, gc->tool);
    gw_call_record(gc, "input_required");
    mcp_call_input_required(gc->call, requests_take, ours);
    gw_call_release(gc);
}

json_t *gw_relay_continue(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    json_t *m = json_object_get(mcp_call_input_state(gc->call), "mrtr");
    if (!mcp_call_is_modern(gc->call) || !json_is_object(m))
        return NULL;
    const char *nonce = json_string_value(json_object_get(m, "n"));
    const char *name = json_string_value(json_object_get(m, "u"));
    const char *tool = json_string_value(json_object_get(m, "t"));
    struct gw_round *r = nonce && u->rounds ? strmap_get(u->rounds, nonce) : NULL;
    if (r == NULL || name == NULL || tool == NULL || strcmp(name, u->cfg->name) != 0 ||
        strcmp(tool, gc->tool) != 0)
        return tool_error_json(TE_NOT_FOUND, 0,
                               "no input round of upstream %s matches this requestState: it was "
                               "already answered, or it expired; call the tool again",
                               u->cfg->name);
    /* Once: taken now, given back by gw_relay_give_back when the upstream never answered. */
    snprintf(gc->round_nonce, sizeof gc->round_nonce, "%s", r->nonce);
    snprintf(gc->round_caller, sizeof gc->round_caller, "%s", r->caller);
    gc->round_expires_at = r->expires_at;
    round_free(r);
    json_t *state = json_object_get(m, "s");
    gc->rounds = (unsigned)json_integer_value(json_object_get(m, "r"));
    gc->input_state = json_is_string(state) ? json_incref(state) : NULL;
    json_t *answers = mcp_call_input_responses(gc->call);
    gc->input_answers = answers ? json_incref(answers) : json_object();
    return NULL;
}

void gw_relay_give_back(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    if (gc->round_nonce[0] == '\0' || u->rounds == NULL)
        return;
    if (loop_now(u->loop) < gc->round_expires_at && strmap_get(u->rounds, gc->round_nonce) == NULL)
        round_add(u, gc->round_nonce, gc->round_caller, gc->round_expires_at);
    gc->round_nonce[0] = '\0';
}

/* A session-era caller's answer to one of the upstream's requests. */
static void on_collected(struct mcp_call *call, json_t *result, json_t *error, void *arg)
{
    struct gw_ask *a = arg;
    (void)call;
    if (result == NULL && error == NULL)
        return; /* the call ended first: whoever ended it freed the collect */
    struct gw_collect *co = a->co;
    struct gw_call *gc = co->gc;
    if (!json_is_object(result)) {
        char msg[300], why[400];
        gw_rpc_error(error, "the client refused the request", msg, sizeof msg);
        snprintf(why, sizeof why, "the calling client refused it: %s", msg);
        end_with_error(gc, why);
        return;
    }
    json_object_set(co->answers, a->key, result);
    if (--co->waiting)
        return;
    json_decref(gc->input_answers);
    gc->input_answers = json_incref(co->answers);
    log_info("upstream %s: the calling client answered its input round %u (tool %.64s): "
             "sent again",
             gc->up->cfg->name, gc->rounds, gc->tool);
    collect_free(co);
    gc->collect = NULL;
    gw_call_retry(gc);
}

/* A session-era caller: each request on the call's stream; the call waits for the answers. */
static void ask_on_stream(struct gw_call *gc, json_t *requests_take, json_t *state)
{
    struct gw_collect *co = xcalloc(1, sizeof *co);
    co->gc = gc;
    co->answers = json_object();
    gc->collect = co;
    json_decref(gc->input_state);
    gc->input_state = state ? json_incref(state) : NULL;
    const char *key;
    json_t *req;
    json_object_foreach(requests_take, key, req)
    {
        struct gw_ask *a = xcalloc(1, sizeof *a);
        *a = (struct gw_ask){.co = co, .key = xstrdup(key), .next = co->asks};
        co->asks = a;
        const char *method = json_string_value(json_object_get(req, "method"));
        if (!mcp_call_request(gc->call, method, json_incref(json_object_get(req, "params")),
                              on_collected, a)) {
            json_decref(requests_take);
            end_with_error(gc, "the calling client cannot take a request now");
            return;
        }
        co->waiting++;
    }
    log_info("upstream %s: its input_required result (round %u, tool %.64s) relayed to the "
             "calling client as %zu request(s)",
             gc->up->cfg->name, gc->rounds, gc->tool, co->waiting);
    json_decref(requests_take);
}

bool gw_relay_input(struct gw_call *gc, json_t *result)
{
    const char *type = json_string_value(json_object_get(result, "resultType"));
    if (!gc->up->modern || type == NULL || strcmp(type, "input_required") != 0)
        return false;
    json_t *state = json_object_get(result, "requestState"), *requests = NULL;
    char why[300];
    if (++gc->rounds > INPUT_ROUNDS_MAX)
        snprintf(why, sizeof why, "more than %d rounds of input in one call; the gateway stops "
                                  "there",
                 INPUT_ROUNDS_MAX);
    else if (state && (!json_is_string(state) || json_string_length(state) > RELAY_PARAMS_MAX))
        snprintf(why, sizeof why, "its requestState is not a string of at most %d bytes",
                 RELAY_PARAMS_MAX);
    else
        requests = relayable_requests(gc->call, json_object_get(result, "inputRequests"), why,
                                      sizeof why);
    if (requests == NULL)
        end_with_error(gc, why);
    else if (mcp_call_is_modern(gc->call))
        ask_modern(gc, requests, state);
    else
        ask_on_stream(gc, requests, state);
    return true;
}
