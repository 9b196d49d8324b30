/* upstream.c — the MCP client side of one upstream: newline-delimited JSON-RPC over a stdio
 * child, or Streamable HTTP (httpup.c) for a url upstream; our own ids on the wire (many clients share the child, so their ids cannot be used),
 * the start-up handshake (initialize, notifications/initialized, tools/list following
 * nextCursor) within connect_timeout, and what the upstream sends unasked: progress (relayed to
 * the call it belongs to), log messages (our log), list_changed (logged: discovery is frozen),
 * ping (answered), sampling and elicitation requests (relayed to the calling client, relay.c:
 * as a request on its stream, or as an input-required result to a 2026-07-28 client)
 * and other requests (refused). A 2026-07-28 upstream asks with an input_required result
 * instead, passed to the tool call it answers (mrtr.c takes it from there).
 * When the child exits or misbehaves (or the HTTP upstream fails) every request in flight is
 * answered "gone" (both NULL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "child.h"
#include "gw_internal.h"
#include "gwinstance.h"
#include "jscan.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "strmap.h"
#include "toolerr.h"
#include "utf8.h"
#include "version.h"


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
static bool send_request_line(struct upstream *u, uint64_t id, const char *method,
                              json_t *params)
{
    char head[96];
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
            json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities",
                                json_object());
    }
    if (call && call->has_progress) {
        /* Our id is the progress token upstream: its progress finds the call by it. */
        json_t *meta = json_object_get(params_take, "_meta");
        if (!json_is_object(meta))
            json_object_set_new(params_take, "_meta", meta = json_object());
        json_object_set_new(meta, "progressToken", json_integer((json_int_t)id));
    }
    bool ok;
    if (u->http == NULL && json_is_object(params_take) && plain_method(method)) {
        ok = send_request_line(u, id, method, params_take);
        json_decref(params_take);
    } else {
        json_t *msg = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)id,
                                "method", method, "params", params_take);
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
    json_t *msg = json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params",
                            params_take ? params_take : json_object());
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
    /* input_required answering a client's request goes on to mrtr.c (gw_relay_input), or to
     * gwresources.c for a resources/read or prompts/get */
    bool relayed = u->modern && (r->call || r->for_client) && type &&
                   strcmp(type, "input_required") == 0;
    if (u->modern && type && strcmp(type, "complete") != 0 && !relayed) {
        /* a task, or input asked outside a client's request: not relayed */
        result = NULL;
        error = json_pack("{s:i, s:s}", "code", -32603, "message",
                          "the upstream answered with a result the gateway does not relay "
                          "here (2026-07-28: a task, or input asked outside a client's "
                          "request)");
    } else if (result == NULL && !json_is_object(error)) {
        error = json_pack("{s:i, s:s}", "code", -32603, "message", "malformed answer upstream");
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
    if (gw_relay_request(u, msg, method, u->related_id))
        return;
    if (strcmp(method, "ping") == 0)
        answer = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
    else
        answer = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                           "code", -32601, "message",
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
        gw_call_progress(r->call, params);
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
        log_info("upstream %s: %.60s ignored: discovery is frozen until a restart", u->cfg->name,
                 method);
}

void up_receive(struct upstream *u, const char *line, size_t len)
{
    if (u->state == UP_DOWN)
        return;
    /* A NUL in a string is valid JSON (an echo of a client's "x\u0000y"): refusing it would
     * take the upstream down for everyone. What we read of its strings as C strings (method,
     * protocolVersion, names, messages) is only compared or printed, so a NUL truncates them. */
    up_receive_parsed(u, json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL),
                      len);
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
        snprintf(why, sizeof why, "wrote a line that is not a JSON-RPC message (%zu bytes)",
                 len);
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

static void on_line(char *line, size_t len, void *arg)
{
    up_receive(arg, line, len);
}

/* The upstream asked something too large to read: it gets an error under its own id, so it
 * does not wait for an answer, and none of our requests is touched. */
static void refuse_oversized_request(struct upstream *u, json_t *id)
{
    json_t *answer = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                               "code", -32600, "message", "request too large");
    send_json(u, answer);
    json_decref(answer);
}

/* A message over the cap: the call a response answers (if we can tell) gets a tool error and
 * the upstream keeps serving the others (a start-up answer that large makes the upstream
 * useless); a request is refused to the upstream; a notification is dropped. */
static void on_oversized(const char *head, size_t head_len, const char *tail, size_t tail_len,
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

static void on_exited(int status, void *arg)
{
    struct upstream *u = arg;
    char why[80];
    if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(status));
    up_down(u, why);
}

/* ---------- start-up: initialize, tools/list ---------- */

static void on_tools(struct upstream *u, json_t *result, json_t *error, void *arg);

static void request_tools(struct upstream *u, const char *cursor)
{
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
    if (!up_request(u, "tools/list", params, on_tools, NULL, NULL, NULL))
        up_down(u, "cannot send tools/list");
}

static void on_tools(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    size_t i;
    json_t *t;
    (void)arg;
    if (u->state != UP_LISTING)
        return;
    if (result == NULL) {
        up_down(u, error ? "tools/list failed" : "gone during tools/list");
        return;
    }
    json_array_foreach(json_object_get(result, "tools"), i, t) {
        if (json_array_size(u->tools) >= GW_TOOLS_MAX)
            break;
        if (json_is_object(t) && json_is_string(json_object_get(t, "name")))
            json_array_append(u->tools, t);
    }
    const char *next = json_string_value(json_object_get(result, "nextCursor"));
    if (next && *next && json_array_size(u->tools) < GW_TOOLS_MAX && ++u->pages < GW_LIST_PAGES) {
        request_tools(u, next);
        return;
    }
    gw_list_extras(u);
}

void up_listed(struct upstream *u)
{
    if (!gwi_check_listed(u))
        return; /* refused: down for good, the reason in u->error */
    loop_timer_cancel(u->connect_timer);
    u->connect_timer = NULL;
    u->state = UP_READY;
    u->ready_since = loop_now(u->loop);
    log_info("upstream %s: ready, %zu tools", u->cfg->name, json_array_size(u->tools));
    gw_circuit_ready(u);
    gw_pins_rediscovered(u);
    gw_smoke_start(u);
    gwi_ready(u);
}

static const char *text_or(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "?";
}

static void on_initialized(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    (void)arg;
    if (u->state != UP_STARTING)
        return;
    const char *version = json_string_value(json_object_get(result, "protocolVersion"));
    if (result == NULL || version == NULL) {
        up_down(u, error ? "initialize was refused" : "gone during initialize");
        return;
    }
    snprintf(u->protocol, sizeof u->protocol, "%s", version);
    utf8_clean(u->protocol);
    json_t *info = json_object_get(result, "serverInfo");
    log_info("upstream %s: initialized (%.40s %.20s, protocol %.20s)", u->cfg->name,
             text_or(json_object_get(info, "name")), text_or(json_object_get(info, "version")),
             version);
    up_notify(u, "notifications/initialized", NULL);
    u->state = UP_LISTING;
    request_tools(u, NULL);
}

static bool send_initialize(struct upstream *u, char *err, size_t errlen);

/* The answer to server/discover: 2026-07-28 offered, we speak it (no initialize, no session);
 * anything else (an error, an HTTP 4xx, a list without it), the session era's initialize. */
static void on_discover(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    char err[100];
    size_t i;
    json_t *v;
    bool offered = false;
    (void)arg, (void)error;
    u->discover_id = 0;
    if (u->state != UP_STARTING)
        return;
    json_array_foreach(json_object_get(result, "supportedVersions"), i, v)
        offered = offered || (json_is_string(v) && strcmp(json_string_value(v), GW_MODERN) == 0);
    if (offered) {
        log_info("upstream %s: discovered (protocol %s)", u->cfg->name, GW_MODERN);
        snprintf(u->protocol, sizeof u->protocol, "%s", GW_MODERN);
        u->state = UP_LISTING;
        request_tools(u, NULL);
        return;
    }
    log_info("upstream %s: no %s offered; initialize instead", u->cfg->name, GW_MODERN);
    u->modern = false;
    httpup_set_version(u->http, "");
    if (!send_initialize(u, err, sizeof err))
        log_error("upstream %s: %s", u->cfg->name, err);
}

static void on_connect_timeout(struct loop *l, void *arg)
{
    struct upstream *u = arg;
    char why[80];
    (void)l;
    u->connect_timer = NULL;
    snprintf(why, sizeof why, "not initialized and listed within connect_timeout (%u s)",
             u->cfg->connect_timeout_s);
    up_down(u, why);
}

/* A stdio upstream's child, or a url upstream's HTTP transport (no session yet). */
static bool connect_transport(struct upstream *u, char *err, size_t errlen)
{
    char name[64];
    if (u->cfg->kind == GW_HTTP) {
        u->http = u->http ? u->http : httpup_new(u);
        httpup_start(u->http);
        return true;
    }
    snprintf(name, sizeof name, "upstream %s", u->cfg->name);
    struct child_spec spec = {.name = name, .command = u->cfg->command, .args = u->cfg->args,
                              .env = u->cfg->env, .cwd = u->cfg->cwd};
    static const struct child_events ev = {.line = on_line, .oversized = on_oversized,
                                           .exited = on_exited};
    u->child = child_start(u->loop, &spec, &ev, u, err, errlen);
    return u->child != NULL;
}

bool up_start(struct upstream *u, char *err, size_t errlen)
{
    u->pending = u->pending ? u->pending : strmap_new();
    u->held = u->held ? u->held : strmap_new();
    u->rounds = u->rounds ? u->rounds : strmap_new();
    u->tools = u->tools ? u->tools : json_array();
    json_array_clear(u->tools); /* a restart lists again; the surface stays as built */
    u->resources = u->resources ? u->resources : json_array();
    json_array_clear(u->resources);
    u->prompts = u->prompts ? u->prompts : json_array();
    json_array_clear(u->prompts);
    u->templates = u->templates ? u->templates : json_array();
    json_array_clear(u->templates);
    u->pages = 0;
    u->protocol[0] = '\0';
    u->state = UP_STARTING;
    if (!connect_transport(u, err, errlen)) {
        u->state = UP_DOWN;
        return false;
    }
    u->connect_timer = loop_timer_add(u->loop, (uint64_t)u->cfg->connect_timeout_s * 1000,
                                      on_connect_timeout, u);
    u->modern = false;
    u->discover_id = 0;
    if (u->http) { /* probe for 2026-07-28 first (on_discover falls back to initialize) */
        u->modern = true;
        httpup_set_version(u->http, GW_MODERN);
        if (up_request(u, "server/discover", json_object(), on_discover, NULL, NULL,
                       &u->discover_id))
            return true;
        snprintf(err, errlen, "cannot send server/discover");
        up_down(u, err);
        return false;
    }
    return send_initialize(u, err, errlen);
}

/* The session era's handshake (stdio, or an HTTP upstream without 2026-07-28). */
static bool send_initialize(struct upstream *u, char *err, size_t errlen)
{
    /* sampling and elicitation: relayed to the client whose call asks (relay.c), refused
     * when that client lacks them. */
    json_t *params = json_pack("{s:s, s:{s:{}, s:{}}, s:{s:s, s:s}}", "protocolVersion",
                               GW_PROTOCOL, "capabilities", "sampling", "elicitation",
                               "clientInfo", "name", "hermes-mcp-gateway",
                               "version", HM_VERSION);
    if (!up_request(u, "initialize", params, on_initialized, NULL, NULL, NULL)) {
        snprintf(err, errlen, "cannot send initialize");
        up_down(u, err);
        return false;
    }
    return true;
}

/* ---------- going down, coming back ---------- */

static void on_restart(struct loop *l, void *arg)
{
    struct upstream *u = arg;
    char err[300];
    (void)l;
    u->restart_timer = NULL;
    u->restarts++;
    log_info("upstream %s: restarting (attempt %u in a row)", u->cfg->name, u->failures);
    if (!up_start(u, err, sizeof err)) {
        free(u->error);
        u->error = xstrdup(err);
        log_error("upstream %s could not start: %s", u->cfg->name, err);
        up_schedule_restart(u);
    }
}

/* Exponential backoff with jitter: 0.5 s doubling to 30 s, each delay 75-125 %, so upstreams
 * that failed together do not come back in lockstep. */
unsigned gw_backoff_ms(unsigned failures, unsigned *seed)
{
    uint64_t ms = GW_BACKOFF_MIN_MS;
    for (unsigned i = 0; i < failures && ms < GW_BACKOFF_MAX_MS; i++)
        ms *= 2;
    if (ms > GW_BACKOFF_MAX_MS)
        ms = GW_BACKOFF_MAX_MS;
    return (unsigned)(ms * 3 / 4 + (uint64_t)rand_r(seed) % (ms / 2 + 1));
}

void up_schedule_restart(struct upstream *u)
{
    if (u->gw->stopping || u->refused || u->restart_timer)
        return;
    if (u->ready_since && loop_now(u->loop) - u->ready_since > GW_STABLE_MS)
        u->failures = 0;
    u->ready_since = 0;
    uint64_t ms = gw_backoff_ms(u->failures, &u->seed);
    u->failures++;
    log_info("upstream %s: next start in %llu ms", u->cfg->name, (unsigned long long)ms);
    u->restart_timer = loop_timer_add(u->loop, ms, on_restart, u);
    gw_circuit_failed(u, ms);
}

static void reap(struct loop *l, void *arg)
{
    struct upstream *u = arg;
    (void)l;
    u->reap_timer = NULL;
    child_free(u->dead_child);
    u->dead_child = NULL;
}

/* Answers everything pending with "gone"; each callback may send nothing (we are down). */
static void fail_pending(struct upstream *u)
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

/* The upstream stops serving: the child is killed (freed outside its own callbacks), calls in
 * flight and waiting are answered upstream_unavailable. */
void up_down(struct upstream *u, const char *why)
{
    if (u->state == UP_DOWN)
        return;
    log_error("upstream %s is down: %s", u->cfg->name, why);
    free(u->error);
    u->error = xstrdup(why);
    u->state = UP_DOWN;
    loop_timer_cancel(u->connect_timer);
    u->connect_timer = NULL;
    if (u->child) {
        u->dead_child = u->child;
        u->child = NULL;
        if (u->reap_timer == NULL)
            u->reap_timer = loop_timer_add(u->loop, 0, reap, u);
    }
    if (u->http)
        httpup_reset(u->http); /* its transfers end; the session is forgotten */
    fail_pending(u);
    gw_calls_fail_waiting(u);
    up_schedule_restart(u);
}

void up_cleanup(struct upstream *u)
{
    gw_smoke_cleanup(u);
    loop_timer_cancel(u->restart_timer);
    loop_timer_cancel(u->connect_timer);
    loop_timer_cancel(u->reap_timer);
    child_free(u->child);
    child_free(u->dead_child);
    httpup_free(u->http); /* ends its session (DELETE) */
    if (u->held) {
        gw_relay_cleanup(u);
        strmap_free(u->held);
    }
    if (u->pending) {
        size_t n;
        void **v = strmap_values(u->pending, &n);
        for (size_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
        strmap_free(u->pending);
    }
    json_decref(u->tools);
    json_decref(u->listed_at_start);
    json_decref(u->resources);
    json_decref(u->prompts);
    json_decref(u->templates);
    free(u->error);
    memset(u, 0, sizeof *u);
}
