/* methods.c — the MCP methods: what initialize, ping, the list methods, tools/call,
 * resources/read, subscriptions, prompts/get, completion/complete and logging/setLevel answer,
 * and what the notifications do. A method either answers at once (answer, answer_text) or
 * starts a call whose handler a provider registered (start_call). One table (methods[]) names
 * every method with its handler and flags; the dispatch and the audit log's method names both
 * read it. Kept apart from the HTTP and call plumbing so the protocol's surface reads in one
 * place. */
#include "methods.h"
#include "session.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "crypto.h"
#include "era.h"
#include "exchange.h"
#include "httpd.h"
#include "listen.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "otel.h"
#include "registry.h"
#include "strmap.h"
#include "toolerr.h"

/* Matches uri against a template of literal text and {name} parts (a part stops at '/'). */
static json_t *template_match(const char *tpl, const char *uri)
{
    json_t *vars = json_object();
    const char *t = tpl, *u = uri;

    while (*t) {
        if (*t == '{') {
            const char *close = strchr(t, '}');
            if (close == NULL)
                goto fail;
            char name[64];
            size_t nlen = (size_t)(close - t - 1);
            if (nlen == 0 || nlen >= sizeof name)
                goto fail;
            memcpy(name, t + 1, nlen);
            name[nlen] = '\0';
            size_t vlen = strcspn(u, "/?#");
            if (vlen == 0)
                goto fail;
            json_object_set_new(vars, name, json_stringn(u, vlen));
            t = close + 1;
            u += vlen;
        } else {
            if (*t != *u)
                goto fail;
            t++;
            u++;
        }
    }
    if (*u == '\0')
        return vars;
fail:
    json_decref(vars);
    return NULL;
}

static json_t *build_capabilities(struct mcp_server *srv)
{
    json_t *caps = json_object();
    json_object_set_new(caps, "logging", json_object());
    if (srv->tools.n)
        json_object_set_new(caps, "tools", json_pack("{s:b}", "listChanged", 0));
    if (srv->resources.n || srv->templates.n)
        json_object_set_new(caps, "resources",
                            json_pack("{s:b, s:b}", "subscribe", 1, "listChanged", 0));
    if (srv->prompts.n)
        json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 0));
    if (srv->complete)
        json_object_set_new(caps, "completions", json_object());
    return caps;
}

/* 2026-07-28: no listChanged or resource subscriptions are announced (our lists do not
 * change while we run; subscriptions/listen carries task notifications); the tasks extension
 * when a provider runs tasks. */
static json_t *build_modern_capabilities(struct mcp_server *srv)
{
    json_t *caps = json_object();
    json_object_set_new(caps, "logging", json_object());
    if (srv->tools.n)
        json_object_set_new(caps, "tools", json_object());
    if (srv->resources.n || srv->templates.n)
        json_object_set_new(caps, "resources", json_object());
    if (srv->prompts.n)
        json_object_set_new(caps, "prompts", json_object());
    if (srv->complete)
        json_object_set_new(caps, "completions", json_object());
    if (mcp_has_tasks(srv))
        json_object_set_new(caps, "extensions", json_pack("{s:{}}", MCP_TASKS_EXTENSION));
    return caps;
}

static void start_call(struct rpc_ctx *x, struct jrpc_msg *m, struct named *n, json_t *args)
{
    struct mcp_call *c = mcp_call_new(x, m);
    n->handler(c, args, n->arg);
}

void mcp_answer(struct rpc_ctx *x, json_t *msg_take)
{
    /* Answer without a handler: goes where call answers go. */
    if (x->ex->modern && (x->ex->stream || x->ex->batch))
        era_decorate(x->srv, x->ex->method, msg_take, false);
    if (!x->ex->batch)
        exchange_note_answer(x->srv, x->req, msg_take);
    json_array_append_new(x->ex->answers, msg_take);
}

/* A lone request answered with a fixed result: the response text is made directly, with the
 * request's id spliced in (the same bytes as the JSON path); a batch member takes the JSON path
 * (make_result builds the result there). */
static void answer_text(struct rpc_ctx *x, struct jrpc_msg *m, const char *head, const char *text,
                        size_t len, const char *tail, json_t *(*make_result)(void *), void *arg)
{
    char *id = x->ex->batch || x->ex->raw_answer || text == NULL
                   ? NULL
                   : json_dumps(m->id, JSON_ENCODE_ANY | JSON_COMPACT);
    if (id == NULL) {
        mcp_answer(x, jrpc_result(m->id, make_result(arg)));
        return;
    }
    size_t cap = strlen(id) + strlen(head) + len + strlen(tail) + 40;
    char *out = xmalloc(cap);
    int n = snprintf(out, cap, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s", id, head);
    memcpy(out + n, text, len);
    snprintf(out + n + len, cap - (size_t)n - len, "%s}", tail);
    free(id);
    x->ex->raw_answer = out;
    x->ex->raw_len = (size_t)n + len + strlen(tail) + 1;
}

struct list_arg {
    struct registry *reg;
    const char *field;
};

static json_t *make_list(void *arg)
{
    struct list_arg *l = arg;
    return mcp_registry_list(l->reg, l->field);
}

static json_t *make_empty(void *arg)
{
    (void)arg;
    return json_object();
}

/* tools/list and the other list methods: the registry's cached listing. */
static void answer_list(struct rpc_ctx *x, struct jrpc_msg *m, struct registry *reg,
                        const char *field)
{
    size_t len = 0;
    struct list_arg l = {reg, field};
    const char *text = x->ex->batch ? NULL : mcp_registry_text(reg, &len);
    bool modern = x->ex->modern;
    const char *head = modern ? era_list_head(x->srv) : "{";
    if (head == NULL) /* no text form of our decoration: the JSON path decorates */
        text = NULL;
    else if (reg->list_head[modern] == NULL)
        reg->list_head[modern] = xasprintf("%s\"%s\":", head, field);
    answer_text(x, m, text ? reg->list_head[modern] : "", text, len, "}", make_list, &l);
}

/* Answers -32602 when v is a string holding a NUL character (valid JSON, but no name, URI or
 * version of ours has one, and as a C string it would pass for a shorter one). */
static bool refuse_nul(struct rpc_ctx *x, struct jrpc_msg *m, json_t *v, const char *field)
{
    if (!json_is_string(v) || jrpc_str(v))
        return false;
    char msg[120];
    snprintf(msg, sizeof msg, "Invalid params: %s must not contain a NUL character", field);
    mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, msg));
    return true;
}

static void do_initialize(struct rpc_ctx *x, struct jrpc_msg *m)
{
    struct mcp_server *srv = x->srv;
    json_t *pv = json_object_get(m->params, "protocolVersion");

    if (!json_is_string(pv)) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                                 "Invalid params: protocolVersion must be a string"));
        return;
    }
    if (refuse_nul(x, m, pv, "protocolVersion"))
        return;
    const char *want = json_string_value(pv);
    const char *version = mcp_version_supported(want) ? want : LATEST_VERSION;
    /* The request's span carries the version answered, not the one asked for. */
    otel_span_mcp_version(srv->span_of && x->req ? srv->span_of(x->req, srv->span_of_arg) : NULL,
                          version);

    if (srv->o.sessions) {
        unsigned max = srv->o.max_sessions ? srv->o.max_sessions : 10000;
        if (strmap_count(srv->sessions) >= max) {
            mcp_answer(x, jrpc_error(m->id, JRPC_INTERNAL_ERROR,
                                     "Too many sessions; end one with DELETE and retry"));
            return;
        }
        struct mcp_session *s = xcalloc(1, sizeof *s);
        if (!session_make_id(srv, s->id, sizeof s->id)) {
            free(s);
            mcp_answer(x, jrpc_error(m->id, JRPC_INTERNAL_ERROR, "Internal error"));
            return;
        }
        snprintf(s->version, sizeof s->version, "%s", version);
        s->log_level = 1; /* info */
        json_t *caps = json_object_get(m->params, "capabilities");
        s->client_caps = mcp_client_caps_kept(caps);
        s->subs = json_object();
        s->streams = strmap_new();
        s->refs = 1;
        s->last_used = loop_now(srv->loop);
        strmap_put(srv->sessions, s->id, s);
        if (srv->sweep == NULL) /* else it is due no later than this session's expiry */
            session_sweep_arm(srv);
        hreq_add_header(x->req, "Mcp-Session-Id", s->id);
        log_debug("session started, protocol %s", version);
    }
    json_t *info = json_pack("{s:s, s:s}", "name", srv->name, "version", srv->version);
    if (srv->title)
        json_object_set_new(info, "title", json_string(srv->title));
    json_t *result = json_pack("{s:s, s:o, s:o}", "protocolVersion", version, "capabilities",
                               build_capabilities(srv), "serverInfo", info);
    if (srv->instructions)
        json_object_set_new(result, "instructions", json_string(srv->instructions));
    mcp_answer(x, jrpc_result(m->id, result));
}

/* A tools/call the tool filter refused: a lone request gets HTTP 403 (the filter added its
 * WWW-Authenticate), as the MCP authorization spec's step-up asks; a batch member only the
 * JSON-RPC error. */
static void refuse_tool(struct rpc_ctx *x, struct jrpc_msg *m, const struct named *t)
{
    char msg[300];

    if (t->scope)
        snprintf(msg, sizeof msg,
                 "Forbidden: calling %s needs the scope %s, which this "
                 "credential does not have",
                 t->name, t->scope);
    else
        snprintf(msg, sizeof msg, "Forbidden: this credential may not call %s", t->name);
    mcp_audit_note(x->srv, x->req, NULL, t->name, jrpc_err_text(JRPC_FORBIDDEN));
    if (x->ex->batch) {
        mcp_answer(x, jrpc_error(m->id, JRPC_FORBIDDEN, msg));
        return;
    }
    hreq_on_abort(x->req, NULL, NULL);
    x->ex->req = NULL; /* answered here: the exchange has nothing left to send */
    mcp_reply_rpc_error(x->req, 403, m->id, JRPC_FORBIDDEN, msg);
}

static void do_discover(struct rpc_ctx *x, struct jrpc_msg *m)
{
    struct mcp_server *srv = x->srv;
    json_t *result = json_pack("{s:o, s:o}", "supportedVersions", era_versions(), "capabilities",
                               build_modern_capabilities(srv));
    if (srv->instructions)
        json_object_set_new(result, "instructions", json_string(srv->instructions));
    mcp_answer(x, jrpc_result(m->id, result));
}

/* ---------- the tasks extension: the provider's three methods ---------- */

/* The provider of task id: the added one whose prefix it starts with, else the default. NULL
 * (the call answered "not found") when none. */
static const struct mcp_task_ops *provider_of(struct mcp_call *c, struct mcp_server *srv,
                                              const char *id, void **arg)
{
    for (size_t i = 0; i < srv->ntask_more; i++)
        if (strncmp(id, srv->task_more[i].prefix, strlen(srv->task_more[i].prefix)) == 0) {
            *arg = srv->task_more[i].arg;
            return srv->task_more[i].ops;
        }
    *arg = srv->task_arg;
    if (srv->task_ops == NULL)
        mcp_call_task_not_found(c);
    return srv->task_ops;
}

static void task_get(struct mcp_call *c, json_t *params, void *arg)
{
    const char *id = json_string_value(json_object_get(params, "taskId"));
    void *parg;
    const struct mcp_task_ops *ops = provider_of(c, arg, id, &parg);
    if (ops)
        ops->get(c, id, parg);
}

static void task_update(struct mcp_call *c, json_t *params, void *arg)
{
    const char *id = json_string_value(json_object_get(params, "taskId"));
    void *parg;
    const struct mcp_task_ops *ops = provider_of(c, arg, id, &parg);
    if (ops)
        ops->update(c, id, json_object_get(params, "inputResponses"), parg);
}

static void task_cancel(struct mcp_call *c, json_t *params, void *arg)
{
    const char *id = json_string_value(json_object_get(params, "taskId"));
    void *parg;
    const struct mcp_task_ops *ops = provider_of(c, arg, id, &parg);
    if (ops)
        ops->cancel(c, id, parg);
}

/* Checks what every task method needs, then hands the call to the provider. */
static void task_method(struct rpc_ctx *x, struct jrpc_msg *m, mcp_handler *h)
{
    json_t *ext = json_object_get(json_object_get(x->ex->caps, "extensions"), MCP_TASKS_EXTENSION);
    if (ext == NULL) {
        mcp_answer(x, era_missing_tasks(m->id, "Missing required client capability: the tasks "
                                               "extension (" MCP_TASKS_EXTENSION ")"));
        return;
    }
    json_t *id = json_object_get(m->params, "taskId");
    if (!jrpc_str(id) || json_string_length(id) == 0 || json_string_length(id) > 128) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                                 "Invalid params: taskId must be a non-empty string"));
        return;
    }
    json_t *responses = json_object_get(m->params, "inputResponses");
    if (h == task_update && !json_is_object(responses)) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                                 "Invalid params: inputResponses must be an object"));
        return;
    }
    struct named n = {.handler = h, .arg = x->srv};
    start_call(x, m, &n, m->params);
}

static void do_tools_call(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *name = json_object_get(m->params, "name");
    json_t *args = json_object_get(m->params, "arguments");
    struct named *t;

    if (!json_is_string(name)) {
        mcp_answer(x,
                   jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: name must be a string"));
        return;
    }
    if (refuse_nul(x, m, name, "name"))
        return;
    if (args != NULL && !json_is_object(args) && !json_is_null(args)) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                                 "Invalid params: arguments must be an object"));
        return;
    }
    t = mcp_registry_find(&x->srv->tools, json_string_value(name));
    if (t == NULL || t->disabled) {
        char msg[200];
        snprintf(msg, sizeof msg, "Unknown tool: %.128s", json_string_value(name));
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, msg));
        return;
    }
    if (x->srv->tool_filter &&
        !x->srv->tool_filter(x->req, t->name, t->scope, !x->ex->batch, x->srv->tool_filter_arg)) {
        refuse_tool(x, m, t);
        return;
    }
    mcp_audit_note(x->srv, x->req, NULL, t->name, NULL);
    char msg[256];
    if (x->ex->modern && t->param_headers &&
        !era_param_headers_match(x->req, t->param_headers, args, msg, sizeof msg)) {
        mcp_answer(x, jrpc_error(m->id, JRPC_HEADER_MISMATCH, msg));
        return;
    }
    void *ticket = NULL;
    unsigned wait =
        x->srv->call_gate ? x->srv->call_gate(x->req, t->name, &ticket, x->srv->call_gate_arg) : 0;
    if (wait) {
        mcp_audit_note(x->srv, x->req, NULL, t->name, toolerr_name(TE_BUSY));
        mcp_answer(x, jrpc_result(m->id, tool_error_json(TE_BUSY, wait,
                                                         "over a limit of calls (this "
                                                         "credential's or this tool's); retry "
                                                         "after %u s",
                                                         wait)));
        return;
    }
    json_t *a = json_is_object(args) ? json_incref(args) : json_object();
    struct mcp_call *c = mcp_call_new(x, m);
    c->ticket = ticket; /* before the handler, which may answer and free the call */
    t->handler(c, a, t->arg);
    json_decref(a);
}

static void do_resources_read(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *uri = json_object_get(m->params, "uri");
    if (!json_is_string(uri)) {
        mcp_answer(x,
                   jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: uri must be a string"));
        return;
    }
    if (refuse_nul(x, m, uri, "uri"))
        return;
    const char *u = json_string_value(uri);
    for (size_t i = 0; i < x->srv->resources.n; i++)
        if (strcmp(x->srv->resources.v[i].name, u) == 0) {
            start_call(x, m, &x->srv->resources.v[i], m->params);
            return;
        }
    for (size_t i = 0; i < x->srv->templates.n; i++) {
        json_t *vars = template_match(x->srv->templates.v[i].uri_template, u);
        if (vars) {
            json_t *p = json_deep_copy(m->params);
            json_object_set_new(p, "vars", vars);
            start_call(x, m, &x->srv->templates.v[i], p);
            json_decref(p);
            return;
        }
    }
    /* 2026-07-28 made it an invalid-params error (SEP-2164); before, -32002. */
    json_t *err = jrpc_error(m->id, x->ex->modern ? JRPC_INVALID_PARAMS : JRPC_RESOURCE_NOT_FOUND,
                             "Resource not found");
    json_object_set_new(json_object_get(err, "error"), "data", json_pack("{s:s}", "uri", u));
    mcp_answer(x, err);
}

/* resources/subscribe and resources/unsubscribe. */
static void do_subscribe(struct rpc_ctx *x, struct jrpc_msg *m)
{
    bool on = strcmp(m->method, "resources/subscribe") == 0;
    json_t *uri = json_object_get(m->params, "uri");
    if (!json_is_string(uri)) {
        mcp_answer(x,
                   jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: uri must be a string"));
        return;
    }
    if (refuse_nul(x, m, uri, "uri"))
        return;
    if (x->sess) {
        if (on && json_object_size(x->sess->subs) < 1000 && json_string_length(uri) <= 2048)
            json_object_set_new(x->sess->subs, json_string_value(uri), json_true());
        else if (!on)
            json_object_del(x->sess->subs, json_string_value(uri));
    }
    mcp_answer(x, jrpc_result(m->id, json_object()));
}

static void do_prompts_get(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *name = json_object_get(m->params, "name");
    json_t *args = json_object_get(m->params, "arguments");
    if (!json_is_string(name)) {
        mcp_answer(x,
                   jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: name must be a string"));
        return;
    }
    if (refuse_nul(x, m, name, "name"))
        return;
    struct named *p = mcp_registry_find(&x->srv->prompts, json_string_value(name));
    if (p == NULL) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: unknown prompt"));
        return;
    }
    if (args != NULL && !json_is_object(args)) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                                 "Invalid params: arguments must be an object"));
        return;
    }
    json_t *a = args ? json_incref(args) : json_object();
    start_call(x, m, p, a);
    json_decref(a);
}

static void do_complete(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *ref = json_object_get(m->params, "ref");
    json_t *arg = json_object_get(m->params, "argument");
    if (!json_is_object(ref) || !json_is_string(json_object_get(ref, "type")) ||
        !json_is_object(arg)) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                                 "Invalid params: ref and argument objects are required"));
        return;
    }
    if (x->srv->complete == NULL) {
        mcp_answer(
            x, jrpc_error(m->id, JRPC_METHOD_NOT_FOUND, "Method not found: completion/complete"));
        return;
    }
    struct named n = {.handler = x->srv->complete, .arg = x->srv->complete_arg};
    start_call(x, m, &n, m->params);
}

static void do_set_level(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *level = json_object_get(m->params, "level");
    int li = jrpc_str(level) ? mcp_level_index(json_string_value(level)) : -1;
    if (li < 0) {
        mcp_answer(x,
                   jrpc_error(m->id, JRPC_INVALID_PARAMS,
                              "Invalid params: level must be one of debug, info, notice, warning, "
                              "error, critical, alert, emergency"));
        return;
    }
    if (x->sess)
        x->sess->log_level = li;
    mcp_answer(x, jrpc_result(m->id, json_object()));
}

static void do_ping(struct rpc_ctx *x, struct jrpc_msg *m)
{
    answer_text(x, m, "{}", "", 0, "", make_empty, NULL);
}

/* tools/list: the cached listing, or, when the tool filter hides some tool from this caller,
 * only the tools it may use. */
struct view_arg {
    const struct registry *reg;
    const unsigned char *mask;
};

static json_t *make_view(void *arg)
{
    const struct view_arg *v = arg;
    return json_pack("{s:o}", "tools", listviews_array(v->reg, v->mask));
}

/* tools/list for a caller who sees only the tools of mask: its kept text (listviews.h). */
static void answer_view(struct rpc_ctx *x, struct jrpc_msg *m, const unsigned char *mask)
{
    struct registry *reg = &x->srv->tools;
    size_t len = 0;
    struct view_arg v = {reg, mask};
    const char *text = x->ex->batch ? NULL : listviews_text(&reg->views, reg, mask, &len);
    bool modern = x->ex->modern;
    const char *head = modern ? era_list_head(x->srv) : "{";
    if (head == NULL)
        text = NULL;
    else if (reg->list_head[modern] == NULL)
        reg->list_head[modern] = xasprintf("%s\"tools\":", head);
    answer_text(x, m, text ? reg->list_head[modern] : "", text, len, "}", make_view, &v);
}

static void do_tools_list(struct rpc_ctx *x, struct jrpc_msg *m)
{
    struct mcp_server *srv = x->srv;
    const struct registry *reg = &srv->tools;
    if (srv->tool_filter == NULL && srv->tools_hidden == 0) {
        answer_list(x, m, &srv->tools, "tools");
        return;
    }
    unsigned char on_stack[512];
    size_t mask_len = (reg->n + 7) / 8;
    unsigned char *mask = mask_len <= sizeof on_stack ? on_stack : xmalloc(mask_len);
    bool all = true;
    memset(mask, 0, mask_len);
    for (size_t i = 0; i < reg->n; i++) {
        const struct named *t = &reg->v[i];
        bool ok = !t->hidden && !t->disabled &&
                  (srv->tool_filter == NULL ||
                   srv->tool_filter(x->req, t->name, t->scope, false, srv->tool_filter_arg));
        if (ok)
            mask[i / 8] |= (unsigned char)(1u << (i % 8));
        all = all && ok;
    }
    if (all)
        answer_list(x, m, &srv->tools, "tools");
    else
        answer_view(x, m, mask);
    if (mask != on_stack)
        free(mask);
}

static void do_cancelled(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *rid = json_object_get(m->params, "requestId");
    char idkey[160], key[240];
    if (!jrpc_id_key(rid, idkey, sizeof idkey))
        return;
    /* A client may cancel only its own calls, and a cancel that cannot be attributed
     * without doubt cancels nothing. With sessions the caller is its session (an id only
     * that client holds), so session + request id names the call. Stateless there is no
     * identity: behind a tunnel or proxy every peer is 127.0.0.1, every client shares the
     * token and SDK ids start at 0, so one client's cancel would stop another's call. It is
     * ignored; a stateless client cancels by closing its POST (exchange_on_abort), which is
     * always its own. */
    if (x->sess == NULL) {
        log_info("notifications/cancelled ignored: without a session it cannot be told "
                 "which client's call it means (close the request to cancel it, or set "
                 "MCP_SESSIONS=1)");
        return;
    }
    snprintf(key, sizeof key, "%s|%s", x->sess->id, idkey);
    struct mcp_call *c = strmap_get(x->srv->inflight, key);
    if (c) {
        log_debug("request cancelled by the client");
        mcp_call_cancel(c);
    } else {
        log_debug("notifications/cancelled for no call in flight in this session");
    }
}

/* ---------- dispatch ---------- */

typedef void method_fn(struct rpc_ctx *x, struct jrpc_msg *m);

enum {
    METHOD_NOTIFICATION = 1 << 0, /* comes as a notification and is never answered */
    METHOD_ALONE = 1 << 1,        /* refused inside a batch (initialize) */
    METHOD_LEGACY = 1 << 2,       /* removed in 2026-07-28 */
    METHOD_MODERN = 1 << 3,       /* new in 2026-07-28 */
    /* In 2026-07-28 served only while the server offers the capability. */
    METHOD_TOOLS = 1 << 4,
    METHOD_RESOURCES = 1 << 5,
    METHOD_PROMPTS = 1 << 6,
    METHOD_COMPLETIONS = 1 << 7,
    METHOD_TASKS = 1 << 8,
};

/* Whether the server offers what a capability flag names: in the 2026-07-28 era its methods
 * exist only then (discover advertises it then too). */
static bool offers(const struct mcp_server *srv, unsigned cap_flag)
{
    switch (cap_flag) {
    case METHOD_TOOLS:
        return srv->tools.n > 0;
    case METHOD_RESOURCES:
        return srv->resources.n > 0 || srv->templates.n > 0;
    case METHOD_PROMPTS:
        return srv->prompts.n > 0;
    case METHOD_COMPLETIONS:
        return srv->complete != NULL;
    case METHOD_TASKS:
        return mcp_has_tasks(srv);
    default:
        return true;
    }
}

/* Every method we know, requests and notifications: the one list the dispatch and the audit
 * log's method names come from. */
static const struct method {
    const char *name;
    method_fn *fn; /* NULL: nothing to do (or one of the two columns below) */
    unsigned flags;
    const char *name_field; /* the params field a 2026-07-28 Mcp-Name header mirrors */
    mcp_handler *task;      /* a task method: the operation task_method hands the call to */
    const char *list;       /* a list method: the result's member, for answer_list ... */
    size_t registry;        /* ... of the registry at this offset in struct mcp_server */
} methods[] = {
    {"initialize", do_initialize, .flags = METHOD_ALONE | METHOD_LEGACY},
    {"ping", do_ping, .flags = METHOD_LEGACY},
    {"server/discover", do_discover, .flags = METHOD_MODERN},
    {"tools/list", do_tools_list, .flags = METHOD_TOOLS},
    {"tools/call", do_tools_call, METHOD_TOOLS, .name_field = "name"},
    {"resources/list", NULL, .flags = METHOD_RESOURCES, .list = "resources",
     .registry = offsetof(struct mcp_server, resources)},
    {"resources/read", do_resources_read, METHOD_RESOURCES, .name_field = "uri"},
    {"resources/templates/list", NULL, .flags = METHOD_RESOURCES, .list = "resourceTemplates",
     .registry = offsetof(struct mcp_server, templates)},
    {"resources/subscribe", do_subscribe, .flags = METHOD_LEGACY},
    {"resources/unsubscribe", do_subscribe, .flags = METHOD_LEGACY},
    {"prompts/list", NULL, .flags = METHOD_PROMPTS, .list = "prompts",
     .registry = offsetof(struct mcp_server, prompts)},
    {"prompts/get", do_prompts_get, METHOD_PROMPTS, .name_field = "name"},
    {"completion/complete", do_complete, .flags = METHOD_COMPLETIONS},
    {"logging/setLevel", do_set_level, .flags = METHOD_LEGACY},
    /* tasks/result and tasks/list of the 2025-11-25 draft are gone: unknown, -32601. */
    {"subscriptions/listen", listen_start, .flags = METHOD_MODERN},
    {"tasks/get", NULL, METHOD_MODERN | METHOD_TASKS, .name_field = "taskId", .task = task_get},
    {"tasks/update", NULL, METHOD_MODERN | METHOD_TASKS, .name_field = "taskId",
     .task = task_update},
    {"tasks/cancel", NULL, METHOD_MODERN | METHOD_TASKS, .name_field = "taskId",
     .task = task_cancel},
    {"notifications/initialized", NULL, .flags = METHOD_NOTIFICATION},
    {"notifications/cancelled", do_cancelled, .flags = METHOD_NOTIFICATION},
    {"notifications/progress", NULL, .flags = METHOD_NOTIFICATION},
    {"notifications/roots/list_changed", NULL, .flags = METHOD_NOTIFICATION},
};

/* The method called name that comes as a notification (or as a request when not). */
static const struct method *method_find(const char *name, bool notification)
{
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(name, methods[i].name) == 0 &&
            !(methods[i].flags & METHOD_NOTIFICATION) == !notification)
            return &methods[i];
    return NULL;
}

const char *mcp_audit_method(const char *m)
{
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(m, methods[i].name) == 0)
            return m;
    return "unknown";
}

const char *mcp_modern_method(struct mcp_server *srv, const char *name, const char **name_field)
{
    const struct method *method = method_find(name, false);
    const unsigned caps =
        METHOD_TOOLS | METHOD_RESOURCES | METHOD_PROMPTS | METHOD_COMPLETIONS | METHOD_TASKS;

    if (method == NULL || (method->flags & METHOD_LEGACY) || !offers(srv, method->flags & caps))
        return NULL;
    *name_field = method->name_field;
    return method->name;
}

void mcp_dispatch_request(struct rpc_ctx *x, struct jrpc_msg *m)
{
    const struct method *method = method_find(m->method, false);

    /* The era's own methods exist only in it (era.c has checked a 2026-07-28 request). */
    if (method && (method->flags & METHOD_MODERN) && !x->ex->modern)
        method = NULL;
    if (method == NULL) {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.128s", m->method);
        mcp_answer(x, jrpc_error(m->id, JRPC_METHOD_NOT_FOUND, msg));
    } else if (x->ex->batch && (method->flags & METHOD_ALONE)) {
        char msg[200];
        snprintf(msg, sizeof msg, "Invalid Request: %s cannot be batched", method->name);
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_REQUEST, msg));
    } else if (method->task) {
        task_method(x, m, method->task);
    } else if (method->list) {
        answer_list(x, m, (struct registry *)((char *)x->srv + method->registry), method->list);
    } else {
        method->fn(x, m);
    }
}

void mcp_dispatch_notification(struct rpc_ctx *x, struct jrpc_msg *m)
{
    const struct method *method = method_find(m->method, true);

    /* notifications/initialized, progress, roots changes, unknown ones: nothing to do. */
    if (method && method->fn)
        method->fn(x, m);
}
