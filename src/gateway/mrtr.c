/* mrtr.c — a 2026-07-28 upstream's input rounds (input-required results). An upstream of that
 * era asks for input the other way round from the session era's requests (relay.c): its
 * tools/call answers input_required
 * (inputRequests, requestState) and forgets the call. To a 2026-07-28 caller that result goes
 * on as ours: the same requests under the same keys, and sealed state carrying the upstream's
 * requestState, the round count and a nonce (the engine binds the state to the caller and to
 * the tool and arguments); the caller's retry sends the call again with its inputResponses and
 * the upstream's requestState, once per nonce. To a session-era caller each request goes on
 * the call's stream; with every answer in, the call is sent again the same way, keeping its
 * slot and deadline. Either way the caller's declared capabilities are what the upstream was
 * told (gw_mrtr_caps) and are checked again per request; past INPUT_ROUNDS_MAX rounds the
 * call ends with a tool error. With STORE_URL the retry may come to another replica: the sealed
 * state (under the key every replica shares) then stands for the round, and once is the
 * store's (hm_nonce, gwstore.h); the caps on open rounds stay each replica's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "gwcore.h"
#include "gwevent.h"
#include "gwstore.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "relay.h"
#include "strmap.h"
#include "toolerr.h"
#include "upstream.h"

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

/* A 2026-07-28 upstream's input round handed to a 2026-07-28 client: resumable once, within
 * the sealed state's lifetime. */
struct gw_round {
    struct upstream *up;
    char nonce[33];
    char caller[64];     /* who it was handed to (mcp_call_caller): the per-caller cap */
    uint64_t expires_at; /* loop ms: the sealed state's lifetime */
    struct loop_timer *timer;
};

/* A session-era caller answering a 2026-07-28 upstream's requests, one ask per request. */
struct gw_ask {
    struct gw_collect *co;
    char *key;
    struct gw_ask *next;
};

/* Its answers being collected, for a tools/call (gw_call) or a resources/read or prompts/get
 * (gwresources.c): done tells the owner once. */
struct gw_collect {
    gw_mrtr_collect_fn *done;
    void *owner;
    json_t *answers;     /* key -> the caller's result */
    size_t waiting;      /* asks sent, not yet answered */
    struct gw_ask *asks; /* freed with the collect: the engine drops unanswered ones */
};

/* The requests a 2026-07-28 upstream may ask for in an input round. */
static bool is_input_method(const char *method)
{
    return strcmp(method, "sampling/createMessage") == 0 ||
           strcmp(method, "elicitation/create") == 0 || strcmp(method, "roots/list") == 0;
}

void gw_mrtr_collect_free(struct gw_collect *co)
{
    if (co == NULL)
        return;
    while (co->asks) {
        struct gw_ask *a = co->asks;
        co->asks = a->next;
        free(a->key);
        free(a);
    }
    json_decref(co->answers);
    free(co);
}

void gw_mrtr_release(struct gw_call *gc)
{
    gw_mrtr_collect_free(gc->collect);
    gc->collect = NULL;
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

void gw_mrtr_cleanup(struct upstream *u)
{
    if (u->rounds)
        rounds_cleanup(u);
}

json_t *gw_mrtr_caps(struct mcp_call *call)
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
static bool caller_can_answer(struct mcp_call *call, const char *method, json_t *params, char *why,
                              size_t whylen)
{
    const char *refusal = "the calling client does not support roots";
    const char *needed = strcmp(method, "roots/list") == 0
                             ? "roots"
                             : gw_relay_needed_capability(method, params, &refusal);
    if (mcp_call_client_supports(call, needed))
        return true;
    snprintf(why, whylen, "%s not relayed: %s", method, refusal);
    return false;
}

/* The upstream's inputRequests as we pass them on (keys kept, each params without _meta), or
 * NULL with why: not well formed, too many or too large, or one the caller cannot answer. */
static json_t *relayable_requests(struct mcp_call *call, json_t *requests, char *why, size_t whylen)
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
            !is_input_method(method)) {
            snprintf(why, whylen,
                     "a request of its inputRequests is not sampling/createMessage, "
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
    mcp_call_result_take(gc->call,
                         tool_error_json(TE_UPSTREAM_ERROR, 0, "upstream %s asked for input: %s",
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
    r->timer =
        loop_timer_add(u->loop, expires_at > now ? expires_at - now : 0, on_round_expired, r);
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

json_t *gw_mrtr_round_open(struct upstream *u, struct mcp_call *call, const char *bound_to,
                           unsigned rounds, json_t *state, bool *busy, char *why, size_t whylen)
{
    const char *caller = mcp_call_caller(call);
    *busy = false;
    if (state && json_string_length(state) > UPSTREAM_STATE_MAX) {
        snprintf(why, whylen,
                 "its requestState (%zu bytes) is larger than the %d bytes a "
                 "2026-07-28 caller's state can carry back",
                 json_string_length(state), UPSTREAM_STATE_MAX);
        return NULL;
    }
    if (strmap_count(u->rounds) >= OPEN_ROUNDS_MAX) {
        snprintf(why, whylen, "too many of its input rounds wait for their clients' answers");
        return NULL;
    }
    if (rounds_of(u, caller) >= OPEN_ROUNDS_PER_CALLER) {
        *busy = true;
        snprintf(why, whylen,
                 "%d of its input rounds already wait for your answers; answer "
                 "them or let them expire, then retry",
                 OPEN_ROUNDS_PER_CALLER);
        return NULL;
    }
    char nonce[33];
    if (!crypto_random_hex(nonce, 16)) {
        snprintf(why, whylen, "no random nonce for the round");
        return NULL;
    }
    json_t *ours = json_pack("{s:{s:s, s:s, s:s, s:i, s:O}}", "mrtr", "n", nonce, "u", u->cfg->name,
                             "t", bound_to, "r", (int)rounds, "s", state ? state : json_null());
    char *text = json_dumps(ours, JSON_COMPACT);
    size_t size = text ? strlen(text) : SIZE_MAX;
    free(text);
    if (size > UPSTREAM_STATE_MAX + 1024) { /* sealed, it must stay under REQSTATE_MAX */
        json_decref(ours);
        snprintf(why, whylen, "its requestState is too large to carry back");
        return NULL;
    }
    round_add(u, nonce, caller, loop_now(u->loop) + mcp_state_ttl_ms(u->gw->mcp));
    return ours;
}

/* Shared rounds: the sealed state is the round (the engine checked its seal, caller, request
 * and lifetime), this replica may never have seen it; once is the store's (gw_mrtr_round_confirm).
 * A round of this replica's is closed here, for its caps. */
static bool claim_shared(struct upstream *u, struct mcp_call *call, json_t *m, const char *nonce,
                         struct gw_round_claimed *claimed)
{
    if (nonce == NULL || strlen(nonce) != 32 || strspn(nonce, "0123456789abcdef") != 32 ||
        !json_is_integer(json_object_get(m, "r")))
        return false;
    struct gw_round *r = u->rounds ? strmap_get(u->rounds, nonce) : NULL;
    if (r)
        round_free(r);
    snprintf(claimed->nonce, sizeof claimed->nonce, "%s", nonce);
    snprintf(claimed->caller, sizeof claimed->caller, "%s", mcp_call_caller(call));
    claimed->expires_at = loop_now(u->loop) + mcp_state_ttl_ms(u->gw->mcp);
    return true;
}

bool gw_mrtr_round_claim(struct upstream *u, struct mcp_call *call, const char *bound_to,
                         unsigned *rounds, json_t **state, struct gw_round_claimed *claimed)
{
    json_t *m = json_object_get(mcp_call_input_state(call), "mrtr");
    const char *nonce = json_string_value(json_object_get(m, "n"));
    const char *name = json_string_value(json_object_get(m, "u"));
    const char *bound = json_string_value(json_object_get(m, "t"));
    if (u->gw->store) {
        if (name == NULL || bound == NULL || strcmp(name, u->cfg->name) != 0 ||
            strcmp(bound, bound_to) != 0 || !claim_shared(u, call, m, nonce, claimed))
            return false;
        json_t *s = json_object_get(m, "s");
        *rounds = (unsigned)json_integer_value(json_object_get(m, "r"));
        *state = json_is_string(s) ? s : NULL;
        return true;
    }
    struct gw_round *r = nonce && u->rounds ? strmap_get(u->rounds, nonce) : NULL;
    if (r == NULL || name == NULL || bound == NULL || strcmp(name, u->cfg->name) != 0 ||
        strcmp(bound, bound_to) != 0 || strcmp(r->caller, mcp_call_caller(call)) != 0)
        return false;
    snprintf(claimed->nonce, sizeof claimed->nonce, "%s", r->nonce);
    snprintf(claimed->caller, sizeof claimed->caller, "%s", r->caller);
    claimed->expires_at = r->expires_at;
    round_free(r); /* once */
    json_t *s = json_object_get(m, "s");
    *rounds = (unsigned)json_integer_value(json_object_get(m, "r"));
    *state = json_is_string(s) ? s : NULL;
    return true;
}

/* A 2026-07-28 caller: the call ends with our input_required result. */
static void ask_modern(struct gw_call *gc, json_t *requests_take, json_t *state)
{
    struct upstream *u = gc->up;
    char why[200];
    bool busy;
    json_t *ours =
        gw_mrtr_round_open(u, gc->call, gc->tool, gc->rounds, state, &busy, why, sizeof why);
    if (ours == NULL) {
        json_decref(requests_take);
        if (busy)
            end_busy(gc);
        else
            end_with_error(gc, why);
        return;
    }
    log_info("upstream %s: its input_required result (round %u, tool %.64s) relayed to the "
             "calling 2026-07-28 client",
             u->cfg->name, gc->rounds, gc->tool);
    gw_call_record(gc, "input_required");
    mcp_call_input_required(gc->call, requests_take, ours);
    gw_call_release(gc);
}

json_t *gw_mrtr_continue(struct gw_call *gc)
{
    struct upstream *u = gc->up;
    json_t *m = json_object_get(mcp_call_input_state(gc->call), "mrtr"), *state;
    if (!mcp_call_is_modern(gc->call) || !json_is_object(m))
        return NULL;
    /* Once: claimed now, given back by gw_mrtr_give_back when the retry is never sent. */
    if (!gw_mrtr_round_claim(u, gc->call, gc->tool, &gc->rounds, &state, &gc->round))
        return tool_error_json(TE_NOT_FOUND, 0,
                               "no input round of upstream %s matches this requestState: it was "
                               "already answered, or it expired; call the tool again",
                               u->cfg->name);
    gc->input_state = state ? json_incref(state) : NULL;
    json_t *answers = mcp_call_input_responses(gc->call);
    gc->input_answers = answers ? json_incref(answers) : json_object();
    return NULL;
}

struct gw_store_claim *gw_mrtr_round_confirm(struct upstream *u,
                                             const struct gw_round_claimed *claimed,
                                             gw_store_claimed_fn *cb, void *arg)
{
    if (u->gw->store == NULL || claimed->nonce[0] == '\0')
        return NULL;
    /* Kept as long as a state sealed now lives: later the state itself is refused. */
    return gw_store_nonce_claim(u->gw->store, claimed->nonce, mcp_state_ttl_ms(u->gw->mcp), cb,
                                arg);
}

void gw_mrtr_round_give_back(struct upstream *u, struct gw_round_claimed *claimed)
{
    if (claimed->nonce[0] != '\0' && u->gw->store) {
        gw_store_nonce_give_back(u->gw->store, claimed->nonce);
        claimed->nonce[0] = '\0';
        return;
    }
    if (claimed->nonce[0] == '\0' || u->rounds == NULL)
        return;
    if (loop_now(u->loop) < claimed->expires_at && strmap_get(u->rounds, claimed->nonce) == NULL)
        round_add(u, claimed->nonce, claimed->caller, claimed->expires_at);
    claimed->nonce[0] = '\0';
}

void gw_mrtr_give_back(struct gw_call *gc)
{
    gw_mrtr_round_give_back(gc->up, &gc->round);
}

/* A session-era caller's answer to one of the upstream's requests. */
static void on_collected(struct mcp_call *call, json_t *result, json_t *error, void *arg)
{
    struct gw_ask *a = arg;
    (void)call;
    if (result == NULL && error == NULL)
        return; /* the call ended first: whoever ended it frees the collect */
    struct gw_collect *co = a->co;
    if (!json_is_object(result)) {
        char msg[300], why[400];
        gw_event_rpc_error(error, "the client refused the request", msg, sizeof msg);
        snprintf(why, sizeof why, "the calling client refused it: %s", msg);
        co->done(co->owner, NULL, why); /* the owner may free co */
        return;
    }
    json_object_set(co->answers, a->key, result);
    if (--co->waiting == 0)
        co->done(co->owner, co->answers, NULL); /* the owner may free co */
}

bool gw_mrtr_collect_start(struct gw_collect **co_out, struct mcp_call *call, json_t *requests,
                           gw_mrtr_collect_fn *done, void *owner)
{
    struct gw_collect *co = xcalloc(1, sizeof *co);
    *co = (struct gw_collect){.done = done, .owner = owner, .answers = json_object()};
    *co_out = co;
    const char *key;
    json_t *req;
    json_object_foreach(requests, key, req)
    {
        struct gw_ask *a = xcalloc(1, sizeof *a);
        *a = (struct gw_ask){.co = co, .key = xstrdup(key), .next = co->asks};
        co->asks = a;
        const char *method = json_string_value(json_object_get(req, "method"));
        if (!mcp_call_request(call, method, json_incref(json_object_get(req, "params")),
                              on_collected, a))
            return false;
        co->waiting++;
    }
    return true;
}

/* Every answer of gc's session-era caller is in: the call is sent again with them. */
static void on_answered(void *owner, json_t *answers, const char *refused)
{
    struct gw_call *gc = owner;
    if (answers == NULL) {
        end_with_error(gc, refused);
        return;
    }
    json_decref(gc->input_answers);
    gc->input_answers = json_incref(answers);
    log_info("upstream %s: the calling client answered its input round %u (tool %.64s): "
             "sent again",
             gc->up->cfg->name, gc->rounds, gc->tool);
    gw_mrtr_collect_free(gc->collect);
    gc->collect = NULL;
    gw_call_retry(gc);
}

/* A session-era caller: each request on the call's stream; the call waits for the answers. */
static void ask_on_stream(struct gw_call *gc, json_t *requests_take, json_t *state)
{
    json_decref(gc->input_state);
    gc->input_state = state ? json_incref(state) : NULL;
    if (!gw_mrtr_collect_start(&gc->collect, gc->call, requests_take, on_answered, gc)) {
        json_decref(requests_take);
        end_with_error(gc, "the calling client cannot take a request now");
        return;
    }
    log_info("upstream %s: its input_required result (round %u, tool %.64s) relayed to the "
             "calling client as %zu request(s)",
             gc->up->cfg->name, gc->rounds, gc->tool, json_object_size(requests_take));
    json_decref(requests_take);
}

json_t *gw_mrtr_requests(struct mcp_call *call, json_t *result, unsigned rounds, char *why,
                         size_t whylen)
{
    json_t *state = json_object_get(result, "requestState");
    if (rounds > INPUT_ROUNDS_MAX)
        snprintf(why, whylen,
                 "more than %d rounds of input in one call; the gateway stops "
                 "there",
                 INPUT_ROUNDS_MAX);
    else if (state && (!json_is_string(state) || json_string_length(state) > RELAY_PARAMS_MAX))
        snprintf(why, whylen, "its requestState is not a string of at most %d bytes",
                 RELAY_PARAMS_MAX);
    else
        return relayable_requests(call, json_object_get(result, "inputRequests"), why, whylen);
    return NULL;
}

bool gw_mrtr_input(struct gw_call *gc, json_t *result)
{
    const char *type = json_string_value(json_object_get(result, "resultType"));
    if (!gc->up->modern || type == NULL || strcmp(type, "input_required") != 0)
        return false;
    json_t *state = json_object_get(result, "requestState");
    char why[300];
    json_t *requests = gw_mrtr_requests(gc->call, result, ++gc->rounds, why, sizeof why);
    if (requests == NULL)
        end_with_error(gc, why);
    else if (mcp_call_is_modern(gc->call))
        ask_modern(gc, requests, state);
    else
        ask_on_stream(gc, requests, state);
    return true;
}
