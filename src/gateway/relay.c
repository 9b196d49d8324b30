/* relay.c — an upstream's sampling/createMessage or elicitation/create request, made while one
 * of our proxied calls runs there, goes to the client that made that call (issue 14, behaviour
 * 3), and the client's answer goes back to the upstream under the upstream's own request id.
 *
 * Which call a request belongs to: over Streamable HTTP it comes on the event stream of that
 * call's POST (httpup.c tells us the POST's id); over stdio the 2025-11-25 wire says nothing, so
 * it is relayed only when exactly one proxied call is at that upstream, and refused when several
 * are (guessing would show one user's form, or send one user's prompt, to another). A client
 * that did not declare the capability, a client of the 2026-07-28 era (it cannot take a request
 * in the middle of a call), or no call at all: the upstream gets a JSON-RPC error at once, so
 * its tool never hangs waiting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_internal.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"

/* A request relayed to a client, waiting for its answer. */
struct relay {
    struct upstream *up;
    json_t *id;          /* the upstream's request id, as it sent it */
    unsigned restarts;   /* the upstream's start it belongs to: a restarted one forgot it */
    char method[32];
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

/* The client's answer (or both NULL: the call ended first). */
static void on_client_answer(struct mcp_call *call, json_t *result, json_t *error, void *arg)
{
    struct relay *rl = arg;
    struct upstream *u = rl->up;
    (void)call;
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
    size_t n, calls = 0;
    struct gw_call *only = NULL;
    void **v = strmap_values(u->pending, &n);
    for (size_t i = 0; i < n; i++) {
        struct up_req *r = v[i];
        if (r->call) {
            only = r->call;
            calls++;
        }
    }
    free(v);
    *why = calls ? "several calls are in flight at this stdio upstream and the request does not "
                   "say which it belongs to"
                 : "no tool call is in flight";
    return calls == 1 ? only : NULL;
}

static const char *capability_of(const char *method)
{
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    return NULL;
}

bool gw_relay_request(struct upstream *u, json_t *msg, const char *method, uint64_t related_id)
{
    const char *capability = capability_of(method), *why;
    json_t *id = json_object_get(msg, "id");
    if (capability == NULL)
        return false;
    struct gw_call *gc = find_call(u, related_id, &why);
    if (gc == NULL || gc->call == NULL) {
        refuse(u, id, method, -32603, why);
        return true;
    }
    if (!mcp_call_client_supports(gc->call, capability)) {
        refuse(u, id, method, -32601, capability[0] == 's'
                                          ? "the calling client does not support sampling"
                                          : "the calling client does not support elicitation");
        return true;
    }
    json_t *params = json_object_get(msg, "params");
    struct relay *rl = xcalloc(1, sizeof *rl);
    *rl = (struct relay){.up = u, .id = json_incref(id), .restarts = u->restarts};
    snprintf(rl->method, sizeof rl->method, "%s", method);
    json_t *copy = json_is_object(params) ? json_deep_copy(params) : json_object();
    json_object_del(copy, "_meta"); /* the upstream's own tokens mean nothing to the client */
    if (!mcp_call_request(gc->call, method, copy, on_client_answer, rl)) {
        json_decref(rl->id);
        free(rl);
        refuse(u, id, method, -32601,
               mcp_call_is_modern(gc->call)
                   ? "the calling client speaks 2026-07-28, which takes no request during a call"
                   : "the calling client cannot take a request now");
        return true;
    }
    log_info("upstream %s: %s relayed to the calling client (tool %.64s)", u->cfg->name, method,
             gc->tool);
    return true;
}
