/* gwresources.c — an upstream's resources and prompts behind our endpoint, for upstreams whose
 * file says tools.resources / tools.prompts: true (default false: nothing of theirs is served
 * unless asked for). Like tools, they are listed once at start (after tools/list, following
 * nextCursor) and registered then: the surface is frozen at discovery, an upstream's later
 * additions are not served before a restart. A prompt is exposed as prefix + its name (the same
 * name rule as tools); a resource keeps its URI (clients follow URIs the upstream hands out in
 * results), so two upstreams offering the same URI refuse the start naming both. Its resource
 * templates (resources/templates/list) come with its resources, kept as they are too: a read
 * of a URI that matches one goes to that upstream (two templates the same but for their
 * variable names, which match the same URIs, refuse the start naming both; templates that
 * differ but overlap go to the first upstream in file order). resources/read and prompts/get
 * are forwarded with our own id, within the upstream's timeout; a client's cancel becomes
 * notifications/cancelled upstream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcall.h"
#include "gwcore.h"
#include "gwevent.h"
#include "gwexpose.h"
#include "gwsurface.h"
#include "jrpc.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "relay.h"
#include "upstream.h"

/* An exposed resource or prompt: which upstream, and the upstream's own URI or name. */
struct gw_extra {
    struct upstream *up;
    char *name;
    struct gw_extra *next;
};

/* ---------- forwarding resources/read and prompts/get ---------- */

/* A 2026-07-28 upstream may answer these input_required too (the spec allows it for
 * tools/call, prompts/get and resources/read): relayed as a tool call's (mrtr.c), to a
 * 2026-07-28 caller as our own input_required result (its retry sends the request again with
 * the answers), to a session-era caller as requests on its stream (the request goes again once
 * all are answered, within the same deadline). */
struct fwd {
    struct upstream *up;
    struct mcp_call *call;
    uint64_t id;
    struct loop_timer *timer;
    char method[16];               /* resources/read or prompts/get */
    json_t *params;                /* as sent, without the round's answers and state */
    unsigned rounds;               /* input rounds the upstream asked so far */
    struct gw_round_claimed round; /* a 2026-07-28 caller's round this retry continues */
    struct gw_store_claim *claim;  /* with STORE_URL: that round's claim, waiting for the store */
    json_t *resume_state;          /* meanwhile: the upstream's requestState (the call's) */
    struct gw_collect *collect;    /* a session-era caller's answers being collected, or NULL */
    json_t *state;                 /* the upstream's requestState sent back with them, or NULL */
    struct otel_span *span;        /* tracing: the request's CLIENT span at the upstream */
};

/* The request failed at (or on the way to) the upstream: its span says so. */
static void fwd_span_error(struct fwd *f, const char *type)
{
    otel_span_str(f->span, "error.type", type);
    otel_span_status(f->span, OTEL_STATUS_ERROR, NULL);
}

static void fwd_free(struct fwd *f)
{
    gw_store_claim_cancel(f->claim);
    otel_span_end(f->span);
    loop_timer_cancel(f->timer);
    gw_mrtr_collect_free(f->collect); /* the engine drops a call's pending requests */
    json_decref(f->state);
    json_decref(f->params);
    free(f);
}

static void tell_cancelled(struct fwd *f, const char *reason)
{
    up_forget(f->up, f->id);
    up_notify(f->up, "notifications/cancelled",
              json_pack("{s:I, s:s}", "requestId", (json_int_t)f->id, "reason", reason));
}

static void unavailable(struct mcp_call *c, struct upstream *u)
{
    char msg[300];
    snprintf(msg, sizeof msg, "upstream %s is not available (%s); retry later", u->cfg->name,
             u->error ? u->error : "not started");
    mcp_call_error(c, JRPC_INTERNAL_ERROR, msg);
}

static bool fwd_input(struct fwd *f, json_t *result);

static void on_fwd_answer(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    struct fwd *f = arg;
    if (result && fwd_input(f, result))
        return; /* the upstream asked for input: the round is relayed */
    mcp_call_on_cancel(f->call, NULL, NULL);
    if (result) {
        mcp_call_result_take(f->call, json_incref(result));
    } else if (error) {
        char msg[300];
        fwd_span_error(f, "upstream_error");
        int code = gw_event_rpc_error(error, "the upstream refused the request", msg, sizeof msg);
        mcp_call_error(f->call, code, msg);
    } else {
        fwd_span_error(f, "upstream_unavailable");
        unavailable(f->call, u);
    }
    fwd_free(f);
}

static void on_fwd_timeout(struct loop *l, void *arg)
{
    struct fwd *f = arg;
    char msg[200];
    (void)l;
    f->timer = NULL;
    if (f->collect == NULL) /* else the upstream answered already: nothing runs there */
        tell_cancelled(f, "timed out at the gateway");
    snprintf(msg, sizeof msg, "upstream %s did not answer within %u s", f->up->cfg->name,
             f->up->cfg->timeout_s);
    fwd_span_error(f, "upstream_timeout");
    mcp_call_on_cancel(f->call, NULL, NULL);
    mcp_call_error(f->call, JRPC_INTERNAL_ERROR, msg);
    fwd_free(f);
}

static void on_fwd_cancel(struct mcp_call *c, void *arg)
{
    struct fwd *f = arg;
    (void)c;                                    /* gone after this callback */
    if (f->collect == NULL && f->claim == NULL) /* else nothing runs there */
        tell_cancelled(f, "cancelled by the client");
    fwd_free(f);
}

/* The request goes (again) to the upstream: with the round's answers and the upstream's state
 * when there are. False when it cannot be sent. */
static bool fwd_send(struct fwd *f, json_t *answers, json_t *state)
{
    json_t *params = json_deep_copy(f->params);
    if (f->up->modern)
        json_object_set_new(params, "_meta",
                            json_pack("{s:o}", "io.modelcontextprotocol/clientCapabilities",
                                      gw_mrtr_caps(f->call)));
    if (answers)
        json_object_set(params, "inputResponses", answers);
    if (state)
        json_object_set(params, "requestState", state);
    if (f->span == NULL) /* one span for the request, whatever its rounds */
        f->span = gw_call_trace_start(f->call, f->up, f->method,
                                      json_string_value(json_object_get(f->params, "name")));
    gw_call_trace_meta(params, f->span);
    if (!up_request(f->up, f->method, params, on_fwd_answer, f, NULL, &f->id))
        return false;
    up_request_for_client(f->up, f->id);
    return true;
}

static void fwd_fail(struct fwd *f, int code, const char *fmt_why)
{
    char msg[400];
    snprintf(msg, sizeof msg, "upstream %s asked for input: %s", f->up->cfg->name, fmt_why);
    log_info("upstream %s: the input it asked for in a %s is not relayed: %s", f->up->cfg->name,
             f->method, fmt_why);
    mcp_call_on_cancel(f->call, NULL, NULL);
    mcp_call_error(f->call, code, msg);
    fwd_free(f);
}

/* What a 2026-07-28 caller's round is bound to: the method and the resource or prompt. */
static void fwd_bound_to(const struct fwd *f, char *out, size_t outlen)
{
    const char *what = json_string_value(
        json_object_get(f->params, strcmp(f->method, "resources/read") == 0 ? "uri" : "name"));
    snprintf(out, outlen, "%s %s", f->method, what ? what : "");
}

/* Every answer of the session-era caller is in: the request goes again with them. */
static void on_fwd_answered(void *owner, json_t *answers, const char *refused)
{
    struct fwd *f = owner;
    if (answers == NULL) {
        fwd_fail(f, JRPC_INTERNAL_ERROR, refused);
        return;
    }
    json_t *kept = json_incref(answers), *state = f->state;
    gw_mrtr_collect_free(f->collect);
    f->collect = NULL;
    f->state = NULL;
    bool sent = fwd_send(f, kept, state);
    json_decref(kept);
    json_decref(state);
    if (!sent) {
        mcp_call_on_cancel(f->call, NULL, NULL);
        unavailable(f->call, f->up);
        fwd_free(f);
    }
}

/* The upstream's input_required answer to f (a 2026-07-28 upstream): false when it is none. */
static bool fwd_input(struct fwd *f, json_t *result)
{
    const char *type = json_string_value(json_object_get(result, "resultType"));
    if (!f->up->modern || type == NULL || strcmp(type, "input_required") != 0)
        return false;
    char why[300];
    json_t *state = json_object_get(result, "requestState");
    json_t *requests = gw_mrtr_requests(f->call, result, ++f->rounds, why, sizeof why);
    if (requests == NULL) {
        fwd_fail(f, JRPC_INTERNAL_ERROR, why);
        return true;
    }
    if (mcp_call_is_modern(f->call)) {
        char bound[300];
        bool busy;
        fwd_bound_to(f, bound, sizeof bound);
        json_t *ours =
            gw_mrtr_round_open(f->up, f->call, bound, f->rounds, state, &busy, why, sizeof why);
        if (ours == NULL) {
            json_decref(requests);
            fwd_fail(f, JRPC_INTERNAL_ERROR, why);
            return true;
        }
        log_info("upstream %s: its input_required answer to a %s (round %u) relayed to the "
                 "calling 2026-07-28 client",
                 f->up->cfg->name, f->method, f->rounds);
        mcp_call_on_cancel(f->call, NULL, NULL);
        mcp_call_input_required(f->call, requests, ours);
        fwd_free(f);
        return true;
    }
    /* A session-era caller: each request on its stream; the state waits with the answers. */
    f->state = state ? json_incref(state) : NULL;
    if (!gw_mrtr_collect_start(&f->collect, f->call, requests, on_fwd_answered, f)) {
        json_decref(requests);
        fwd_fail(f, JRPC_INTERNAL_ERROR, "the calling client cannot take a request now");
        return true;
    }
    log_info("upstream %s: its input_required answer to a %s (round %u) relayed to the calling "
             "client as %zu request(s)",
             f->up->cfg->name, f->method, f->rounds, json_object_size(requests));
    json_decref(requests);
    return true;
}

/* Sends f's request (a retry: with the caller's answers and the upstream's state). */
static void fwd_go(struct fwd *f, json_t *state)
{
    struct upstream *u = f->up;
    struct mcp_call *c = f->call;
    json_t *answers = f->round.nonce[0] ? mcp_call_input_responses(c) : NULL; /* a retry's */
    json_t *none = state && !answers ? json_object() : NULL; /* a retry carries its answers */
    bool sent = fwd_send(f, answers ? answers : none, state);
    json_decref(none);
    if (!sent) {
        gw_mrtr_round_give_back(u, &f->round); /* nothing reached the upstream */
        fwd_span_error(f, "upstream_unavailable");
        mcp_call_on_cancel(c, NULL, NULL);
        fwd_free(f);
        unavailable(c, u);
        return;
    }
    f->timer = loop_timer_add(u->loop, (uint64_t)u->cfg->timeout_s * 1000, on_fwd_timeout, f);
    mcp_call_on_cancel(c, on_fwd_cancel, f);
}

/* The store's word on a 2026-07-28 retry's round, shared by the replicas. */
static void on_fwd_claimed(void *arg, enum gw_store_claim_rc rc)
{
    struct fwd *f = arg;
    struct mcp_call *c = f->call;
    f->claim = NULL;
    if (rc == GW_CLAIM_FIRST && f->up->state == UP_READY) {
        fwd_go(f, f->resume_state);
        return;
    }
    mcp_call_on_cancel(c, NULL, NULL);
    if (rc == GW_CLAIM_FIRST) {
        gw_mrtr_round_give_back(f->up, &f->round);
        unavailable(c, f->up);
    } else if (rc == GW_CLAIM_TAKEN) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "no input round of upstream %s matches this requestState: it was already "
                 "answered; ask again",
                 f->up->cfg->name);
        mcp_call_error(c, JRPC_INVALID_PARAMS, msg);
    } else {
        mcp_call_error(c, JRPC_INTERNAL_ERROR,
                       "the store that shares input rounds between replicas is unavailable; "
                       "retry shortly");
    }
    fwd_free(f);
}

static void forward(struct mcp_call *c, struct upstream *u, const char *method, json_t *params)
{
    if (u->state != UP_READY) {
        json_decref(params);
        unavailable(c, u);
        return;
    }
    struct fwd *f = xcalloc(1, sizeof *f);
    *f = (struct fwd){.up = u, .call = c, .params = params};
    snprintf(f->method, sizeof f->method, "%s", method);
    json_t *state = NULL;
    if (mcp_call_is_modern(c) && json_object_get(mcp_call_input_state(c), "mrtr")) {
        /* a 2026-07-28 caller's retry with the answers to an input round of ours */
        char bound[300];
        fwd_bound_to(f, bound, sizeof bound);
        if (!gw_mrtr_round_claim(u, c, bound, &f->rounds, &state, &f->round)) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "no input round of upstream %s matches this "
                     "requestState: it was already answered, or it expired; ask again",
                     u->cfg->name);
            mcp_call_error(c, JRPC_INVALID_PARAMS, msg);
            fwd_free(f);
            return;
        }
        f->claim = gw_mrtr_round_confirm(u, &f->round, on_fwd_claimed, f);
        if (f->claim) { /* once across replicas: the store says (on_fwd_claimed) */
            f->resume_state = state;
            mcp_call_on_cancel(c, on_fwd_cancel, f);
            return;
        }
    }
    fwd_go(f, state);
}

static void read_handler(struct mcp_call *c, json_t *params, void *arg)
{
    struct gw_extra *x = arg;
    (void)params; /* only the URI goes upstream: it is this resource's */
    forward(c, x->up, "resources/read", json_pack("{s:s}", "uri", x->name));
}

static void template_read_handler(struct mcp_call *c, json_t *params, void *arg)
{
    struct gw_extra *x = arg;
    /* the URI the client asked for (it matched x's template), nothing else of its params */
    forward(c, x->up, "resources/read", json_pack("{s:O}", "uri", json_object_get(params, "uri")));
}

static void prompt_handler(struct mcp_call *c, json_t *args, void *arg)
{
    struct gw_extra *x = arg;
    forward(c, x->up, "prompts/get", json_pack("{s:s, s:O}", "name", x->name, "arguments", args));
}

/* ---------- the surface ---------- */

static struct gw_extra *extra_new(struct gateway *g, struct upstream *u, const char *name)
{
    struct gw_extra *x = xcalloc(1, sizeof *x);
    x->up = u;
    x->name = xstrdup(name);
    x->next = g->extras;
    g->extras = x;
    return x;
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The items of upstream k of kind in the plan, in its order. */
#define PLAN_EACH(p, k, kind_, it)                                                                 \
    for (const struct gw_plan_item *it = (p)->items; it < (p)->items + (p)->n; it++)               \
        if (it->up == (k) && it->kind == (kind_))

static bool expose_resources(struct gateway *g, struct upstream *u, const struct gw_plan *p,
                             size_t k)
{
    PLAN_EACH(p, k, GW_PLAN_RESOURCE, it)
    {
        if (it->status == GW_PLAN_UNFIT) {
            log_warn("upstream %s: resource '%s' not exposed (%s)", u->cfg->name, it->shown_long,
                     it->unfit);
            continue;
        }
        if (it->status == GW_PLAN_TAKEN) {
            log_error("gateway: upstream %s offers resource '%s', which %s offers too; set "
                      "tools.resources: false on one",
                      u->cfg->name, it->shown_long, it->owner);
            return false;
        }
        const char *name = str(it->def, "name");
        struct gw_extra *x = extra_new(g, u, it->name);
        mcp_add_resource(g->mcp,
                         &(struct mcp_resource_def){.uri = it->name,
                                                    .name = name ? name : it->name,
                                                    .title = str(it->def, "title"),
                                                    .description = str(it->def, "description"),
                                                    .mime_type = str(it->def, "mimeType"),
                                                    .handler = read_handler,
                                                    .arg = x});
    }
    log_info("upstream %s: %zu resources exposed", u->cfg->name, json_array_size(u->resources));
    return true;
}

static bool expose_templates(struct gateway *g, struct upstream *u, const struct gw_plan *p,
                             size_t k)
{
    PLAN_EACH(p, k, GW_PLAN_TEMPLATE, it)
    {
        if (it->status == GW_PLAN_UNFIT) {
            log_warn("upstream %s: resource template '%s' not exposed (%s)", u->cfg->name,
                     it->shown_long, it->unfit);
            continue;
        }
        if (it->status == GW_PLAN_TAKEN) {
            log_error("gateway: upstream %s offers resource template '%s', which matches the "
                      "same URIs as %s; set tools.resources: false on one",
                      u->cfg->name, it->shown_long, it->owner);
            return false;
        }
        const char *name = str(it->def, "name");
        mcp_add_template(g->mcp,
                         &(struct mcp_template_def){.uri_template = it->name,
                                                    .name = name ? name : it->name,
                                                    .title = str(it->def, "title"),
                                                    .description = str(it->def, "description"),
                                                    .mime_type = str(it->def, "mimeType"),
                                                    .handler = template_read_handler,
                                                    .arg = extra_new(g, u, it->name)});
    }
    if (json_array_size(u->templates))
        log_info("upstream %s: %zu resource templates exposed", u->cfg->name,
                 json_array_size(u->templates));
    return true;
}

static bool expose_prompts(struct gateway *g, struct upstream *u, const struct gw_plan *p, size_t k)
{
    PLAN_EACH(p, k, GW_PLAN_PROMPT, it)
    {
        if (it->status == GW_PLAN_TAKEN) {
            log_error("gateway: upstream %s, prompt '%s' would be exposed as '%s', which is "
                      "taken by %s; change a prefix or set tools.prompts: false",
                      u->cfg->name, it->shown, it->shown_exposed, it->owner);
            return false;
        }
        if (it->status == GW_PLAN_BAD_NAME) {
            log_error("gateway: upstream %s, prompt '%s': the exposed name '%s' is not "
                      "allowed (^[A-Za-z0-9_-]{1,64}$); change the prefix or set "
                      "tools.prompts: false",
                      u->cfg->name, it->shown, it->shown_exposed);
            return false;
        }
        json_t *args = json_object_get(it->def, "arguments");
        mcp_add_prompt(g->mcp, &(struct mcp_prompt_def){
                                   .name = it->exposed,
                                   .title = str(it->def, "title"),
                                   .description = str(it->def, "description"),
                                   .arguments = json_is_array(args) ? json_deep_copy(args) : NULL,
                                   .handler = prompt_handler,
                                   .arg = extra_new(g, u, it->name)});
    }
    log_info("upstream %s: %zu prompts exposed", u->cfg->name, json_array_size(u->prompts));
    return true;
}

bool gw_resources_expose(struct gateway *g, const struct gw_plan *p)
{
    for (size_t i = 0; i < g->nup; i++) {
        struct upstream *u = &g->ups[i];
        if (u->state != UP_READY)
            continue;
        if (u->cfg->resources && (!expose_resources(g, u, p, i) || !expose_templates(g, u, p, i)))
            return false;
        if (u->cfg->prompts && !expose_prompts(g, u, p, i))
            return false;
    }
    return true;
}

void gw_resources_free(struct gateway *g)
{
    while (g->extras) {
        struct gw_extra *x = g->extras;
        g->extras = x->next;
        free(x->name);
        free(x);
    }
}
