/* rpcclient.c — an upstream's JSON-RPC client: our own ids on the wire (many clients share one
 * upstream, so their ids cannot be used), the pending map (id -> who waits for the answer),
 * sending over the upstream's transport (a stdio child's lines, or Streamable HTTP through
 * httpup.c), and what the upstream sends: answers (to whoever waits), progress (to the call
 * it belongs to), log messages (our log), list_changed (logged: discovery is frozen), ping
 * (answered), requests (sampling, elicitation: handed to the call pipeline through the
 * gateway's up_events, which relays them to the calling client; others refused). A 2026-07-28
 * upstream asks with an input_required result instead, passed to the request it answers. An
 * oversized message is judged by its visible ends (jscan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "gwcore.h"
#include "jrpc.h"
#include "jscan.h"
#include "log.h"
#include "mem.h"
#include "strmap.h"
#include "toolerr.h"
#include "upstream.h"
#include "utf8.h"

/* ---------- sending ---------- */

static bool send_json(struct upstream *u, json_t *msg)
{
    if (u->http)
        return httpup_send(u->http, msg);
    char *text = json_dumps(msg, JSON_COMPACT);
    bool ok = false;
    if (text && u->child) {
        size_t n = strlen(text);
        text[n] = '\n'; /* json_dumps' NUL becomes the line end */
        ok = child_write(u->child, text, n + 1);
    }
    free(text);
    return ok;
}

bool up_send_message(struct upstream *u, json_t *msg)
{
    return send_json(u, msg);
}

/* A request to a stdio child, written around its dumped params: the frame is ours (our id, a
 * method of the gateway's own), the same bytes json_dumps makes of the whole message, with
 * one object fewer to build and dump on every call. */
static bool send_request_line(struct upstream *u, uint64_t id, const char *method, json_t *params)
{
    char head[128]; /* the frame with a 20-digit id and a 47-byte method (plain_method) */
    int n = snprintf(head, sizeof head,
                     "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\",\"params\":",
                     (unsigned long long)id, method);
    char *text = json_dumps(params, JSON_COMPACT);
    bool ok = false;
    if (text && u->child && n > 0 && (size_t)n < sizeof head) {
        size_t plen = strlen(text);
        char *line = xmalloc((size_t)n + plen + 2);
        memcpy(line, head, (size_t)n);
        memcpy(line + n, text, plen);
        memcpy(line + (size_t)n + plen, "}\n", 2);
        ok = child_write(u->child, line, (size_t)n + plen + 2);
        free(line);
    }
    free(text);
    return ok;
}

/* A method we can put between quotes as it is (the gateway's own are plain ASCII names). */
static bool plain_method(const char *method)
{
    size_t n = 0;
    for (; method[n]; n++)
        if (method[n] < 0x20 || method[n] > 0x7e || method[n] == '"' || method[n] == '\\')
            return false;
    return n < 48;
}

/* The pending map's key of an id: its decimal digits (snprintf costs more than the rest of a
 * lookup, on every call). */
static void id_key(uint64_t id, char out[24])
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + id % 10);
        id /= 10;
    } while (id);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
}

bool up_request(struct upstream *u, const char *method, json_t *params_take, up_answer_fn *cb,
                void *arg, struct gw_call *call, uint64_t *id_out)
{
    char key[24];
    if ((u->child == NULL && u->http == NULL) || u->state == UP_DOWN) {
        json_decref(params_take);
        return false;
    }
    uint64_t id = ++u->next_id;
    if (u->modern) { /* 2026-07-28: each request says its version and our capabilities */
        json_t *meta = json_object_get(params_take, "_meta");
        if (!json_is_object(meta))
            json_object_set_new(params_take, "_meta", meta = json_object());
        json_object_set_new(meta, "io.modelcontextprotocol/protocolVersion",
                            json_string(GW_MODERN));
        if (!json_object_get(meta, "io.modelcontextprotocol/clientCapabilities")) /* a call's
                                                         are its caller's (gwcall.c) */
            json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities", json_object());
    }
    json_t *meta = json_object_get(params_take, "_meta");
    if (call && json_object_get(meta, "progressToken")) {
        /* Our id is the progress token upstream: its progress finds the call by it. */
        json_object_set_new(meta, "progressToken", json_integer((json_int_t)id));
    }
    bool ok;
    if (u->http == NULL && json_is_object(params_take) && plain_method(method)) {
        ok = send_request_line(u, id, method, params_take);
        json_decref(params_take);
    } else {
        json_t *wire_id = json_integer((json_int_t)id);
        json_t *msg = jrpc_request(wire_id, method, params_take);
        json_decref(wire_id);
        ok = send_json(u, msg);
        json_decref(msg);
    }
    if (!ok)
        return false;
    struct up_req *r = xcalloc(1, sizeof *r);
    *r = (struct up_req){.id = id, .cb = cb, .arg = arg, .call = call, .for_client = call != NULL};
    id_key(id, key);
    strmap_put(u->pending, key, r);
    if (id_out)
        *id_out = id;
    return true;
}

void up_request_for_client(struct upstream *u, uint64_t id)
{
    char key[24];
    id_key(id, key);
    struct up_req *r = strmap_get(u->pending, key);
    if (r)
        r->for_client = true;
}

void up_notify(struct upstream *u, const char *method, json_t *params_take)
{
    if (u->modern) { /* 2026-07-28: a cancel is the hang-up up_forget does; nothing else */
        json_decref(params_take);
        return;
    }
    json_t *msg = jrpc_notification(method, params_take ? params_take : json_object());
    send_json(u, msg);
    json_decref(msg);
}

void up_forget(struct upstream *u, uint64_t id)
{
    char key[24];
    id_key(id, key);
    free(strmap_del(u->pending, key));
    if (u->http)
        httpup_forget(u->http, id);
}

/* ---------- what the upstream sends ---------- */

static struct up_req *take_pending(struct upstream *u, json_t *id)
{
    char key[24];
    if (!json_is_integer(id) || json_integer_value(id) <= 0)
        return NULL;
    id_key((uint64_t)json_integer_value(id), key);
    return strmap_del(u->pending, key);
}

static void on_response(struct upstream *u, json_t *msg)
{
    struct up_req *r = take_pending(u, json_object_get(msg, "id"));
    if (r == NULL)
        return; /* cancelled or timed out meanwhile: dropped */
    json_t *result = json_object_get(msg, "result"), *error = json_object_get(msg, "error");
    if (!json_is_object(result))
        result = NULL;
    const char *type = json_string_value(json_object_get(result, "resultType"));
    /* input_required answering a client's request goes on to mrtr.c (gw_mrtr_input), or to
     * gwresources.c for a resources/read or prompts/get */
    bool relayed =
        u->modern && (r->call || r->for_client) && type && strcmp(type, "input_required") == 0;
    if (u->modern && type && strcmp(type, "complete") != 0 && !relayed) {
        /* a task, or input asked outside a client's request: not relayed */
        result = NULL;
        error = json_pack("{s:i, s:s}", "code", JRPC_INTERNAL_ERROR, "message",
                          "the upstream answered with a result the gateway does not relay "
                          "here (2026-07-28: a task, or input asked outside a client's "
                          "request)");
    } else if (result == NULL && !json_is_object(error)) {
        error = json_pack("{s:i, s:s}", "code", JRPC_INTERNAL_ERROR, "message",
                          "malformed answer upstream");
    } else {
        json_incref(error);
    }
    r->cb(u, result, error, r->arg);
    json_decref(error);
    free(r);
}

static void reply_to_request(struct upstream *u, json_t *msg, const char *method)
{
    json_t *id = json_object_get(msg, "id"), *answer;
    if (u->gw->events->request(u, msg, method, u->related_id))
        return;
    if (strcmp(method, "ping") == 0)
        answer = jrpc_result(id, json_object());
    else
        answer = jrpc_error(id, JRPC_METHOD_NOT_FOUND,
                            "the gateway does not relay this request to clients");
    send_json(u, answer);
    json_decref(answer);
}

static void on_progress(struct upstream *u, json_t *params)
{
    char key[24];
    json_t *token = json_object_get(params, "progressToken");
    if (!json_is_integer(token) || json_integer_value(token) <= 0)
        return;
    id_key((uint64_t)json_integer_value(token), key);
    struct up_req *r = strmap_get(u->pending, key);
    if (r && r->call)
        u->gw->events->progress(r->call, params);
}

static void on_log_message(struct upstream *u, json_t *params)
{
    char *text = json_dumps(json_object_get(params, "data"), JSON_COMPACT | JSON_ENCODE_ANY);
    const char *level = json_string_value(json_object_get(params, "level"));
    if (text && strlen(text) > 500)
        text[500] = '\0';
    if (text)
        utf8_clean(text);
    log_info("upstream %s log (%.16s): %s", u->cfg->name, level ? level : "?", text ? text : "");
    free(text);
}

static void on_notification(struct upstream *u, const char *method, json_t *params)
{
    if (strcmp(method, "notifications/progress") == 0)
        on_progress(u, params);
    else if (strcmp(method, "notifications/message") == 0)
        on_log_message(u, params);
    else if (strstr(method, "list_changed"))
        log_event(EV_UPSTREAM_NOTIFICATION_IGNORED,
                  LOG_FIELDS(LF_S("upstream", u->cfg->name), LF_S("method", method)),
                  "upstream %s: %.60s ignored: discovery is frozen until a restart", u->cfg->name,
                  method);
}

void up_receive(struct upstream *u, const char *line, size_t len)
{
    if (u->state == UP_DOWN)
        return;
    /* A NUL in a string is valid JSON (an echo of a client's "x\u0000y"): refusing it would
     * take the upstream down for everyone. What we read of its strings as C strings (method,
     * protocolVersion, names, messages) is only compared or printed, so a NUL truncates them. */
    up_receive_parsed(u, json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL), len);
}

void up_receive_parsed(struct upstream *u, json_t *msg, size_t len)
{
    char why[100];
    if (u->state == UP_DOWN) {
        json_decref(msg);
        return;
    }
    if (!json_is_object(msg)) {
        /* The stream is no longer trustworthy (a stray print, a crash dump): restart it. */
        snprintf(why, sizeof why, "wrote a line that is not a JSON-RPC message (%zu bytes)", len);
        json_decref(msg);
        up_down(u, why);
        return;
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method && json_object_get(msg, "id"))
        reply_to_request(u, msg, method);
    else if (method)
        on_notification(u, method, json_object_get(msg, "params"));
    else
        on_response(u, msg);
    json_decref(msg);
}

void up_on_line(char *line, size_t len, void *arg)
{
    up_receive(arg, line, len);
}

/* The upstream asked something too large to read: it gets an error under its own id, so it
 * does not wait for an answer, and none of our requests is touched. */
static void refuse_oversized_request(struct upstream *u, json_t *id)
{
    json_t *answer = jrpc_error(id, JRPC_INVALID_REQUEST, "request too large");
    send_json(u, answer);
    json_decref(answer);
}

/* A message over the cap: the call a response answers (if we can tell) gets a tool error and
 * the upstream keeps serving the others (a start-up answer that large makes the upstream
 * useless); a request is refused to the upstream; a notification is dropped. */
void up_on_oversized(const char *head, size_t head_len, const char *tail, size_t tail_len,
                     void *arg)
{
    struct upstream *u = arg;
    enum jscan_kind kind;
    json_t *id = jscan_oversized_id(head, head_len, tail, tail_len, &kind);
    char *id_text = id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    log_warn("upstream %s: a %s over %u MiB was dropped (id %s)", u->cfg->name,
             kind == JSCAN_REQUEST ? "request" : "message", CHILD_LINE_MAX >> 20,
             id_text ? id_text : "unknown");
    free(id_text);
    if (id && u->state != UP_DOWN && kind == JSCAN_REQUEST) {
        refuse_oversized_request(u, id);
    } else if (u->state != UP_DOWN && kind == JSCAN_RESPONSE && json_is_integer(id) &&
               json_integer_value(id) > 0) {
        char why[80];
        snprintf(why, sizeof why, "answered with a message larger than %u MiB",
                 CHILD_LINE_MAX >> 20);
        up_request_failed(u, (uint64_t)json_integer_value(id), why);
    }
    json_decref(id);
}

/* One request cannot be answered (an oversized answer, an HTTP error for it): a call gets a
 * tool error saying why (or upstream_unavailable without a why) and the upstream keeps
 * serving the others; a start-up request that fails makes the upstream useless. */
void up_request_failed(struct upstream *u, uint64_t id, const char *why)
{
    char key[24];
    if (u->state == UP_DOWN)
        return;
    id_key(id, key);
    struct up_req *r = strmap_del(u->pending, key);
    if (r == NULL)
        return;
    if (id == u->discover_id && u->state == UP_STARTING) {
        r->cb(u, NULL, NULL, r->arg); /* no 2026-07-28 there: initialize instead */
    } else if (r->call && why) {
        json_t *err = tool_error_json(TE_UPSTREAM_ERROR, 0, "upstream %s %s", u->cfg->name, why);
        r->cb(u, err, NULL, r->arg);
        json_decref(err);
    } else if (r->call || u->state == UP_READY) {
        /* a call, or a client's resources/read or prompts/get (start-up is over) */
        r->cb(u, NULL, NULL, r->arg);
    } else {
        up_down(u, why ? why : "a start-up request failed");
        r->cb(u, NULL, NULL, r->arg); /* down already: it only lets go */
    }
    free(r);
}

/* Answers everything pending with "gone"; each callback may send nothing (we are down). */
void up_fail_pending(struct upstream *u)
{
    size_t n;
    void **v = strmap_values(u->pending, &n);
    for (size_t i = 0; i < n; i++) {
        struct up_req *r = v[i];
        char key[24];
        id_key(r->id, key);
        strmap_del(u->pending, key);
    }
    for (size_t i = 0; i < n; i++) {
        struct up_req *r = v[i];
        r->cb(u, NULL, NULL, r->arg);
        free(r);
    }
    free(v);
}

void up_pending_free(struct upstream *u)
{
    if (u->pending == NULL)
        return;
    size_t n;
    void **v = strmap_values(u->pending, &n);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    strmap_free(u->pending);
    u->pending = NULL;
}
