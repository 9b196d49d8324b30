/* mcp.c — MCP engine: setup and glue. The server object, its registries of tools, resources,
 * templates and prompts, its counters, and the small helpers every module of the engine uses.
 * The engine's parts live beside it: http.c (HTTP checks and the POST/GET/DELETE exchanges),
 * exchange.c (one POST's answers), methods.c (the MCP methods), call.c (the call lifecycle),
 * stream.c (SSE streams and their replay), session.c (sessions); their shared objects and who
 * owns them are described in mcp_internal.h. */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "era.h"
#include "httpd.h"
#include "log.h"
#include "loop.h"
#include "mcp_internal.h"
#include "mem.h"
#include "metacache.h"
#include "registry.h"
#include "session.h"
#include "strmap.h"

static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

/* ---------- small helpers ---------- */

json_t *mcp_client_caps_kept(json_t *caps)
{
    static const char *const kept[] = {"sampling", "elicitation", "roots"};
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        if (json_is_object(json_object_get(caps, kept[i])))
            json_object_set_new(out, kept[i], json_object());
    /* Elicitation's modes: an empty object is form mode (the revisions' rule for clients
     * older than url mode). */
    json_t *el = json_object_get(caps, "elicitation");
    if (json_is_object(el) && (json_object_size(el) == 0 || json_object_get(el, "form")))
        json_object_set_new(out, "elicitation.form", json_object());
    if (json_is_object(el) && json_is_object(json_object_get(el, "url")))
        json_object_set_new(out, "elicitation.url", json_object());
    json_t *sampling = json_object_get(caps, "sampling");
    if (json_is_object(sampling) && json_is_object(json_object_get(sampling, "tools")))
        json_object_set_new(out, "sampling.tools", json_object());
    return out;
}

bool mcp_version_supported(const char *v)
{
    return era_version_served(v) && strcmp(v, MODERN_VERSION) != 0;
}

int mcp_level_index(const char *level)
{
    for (int i = 0; i < 8; i++)
        if (strcmp(level, log_levels[i]) == 0)
            return i;
    return -1;
}

void mcp_reply_json(struct hreq *r, unsigned status, json_t *msg_take)
{
    char *text = msg_take ? json_dumps(msg_take, JSON_COMPACT) : NULL;
    if (text == NULL) { /* cannot happen with cleaned text; never crash on it either */
        log_error("BUG: a reply could not be encoded");
        text = strdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,"
                      "\"message\":\"Internal error\"}}");
        status = 500;
    }
    hreq_reply(r, status, "application/json", text, strlen(text));
    free(text);
    json_decref(msg_take);
}

void mcp_reply_rpc_error(struct hreq *r, unsigned status, json_t *id, int code, const char *msg)
{
    mcp_reply_json(r, status, jrpc_error(id, code, msg));
}

void mcp_audit_note(struct mcp_server *srv, struct hreq *r, const char *rpc_method,
                    const char *tool, const char *error)
{
    if (srv->audit && r)
        srv->audit(r, rpc_method, tool, error, srv->audit_arg);
}

/* ---------- setup ---------- */

static void set_opt_str(json_t *o, const char *key, const char *value)
{
    if (value)
        json_object_set_new(o, key, json_string(value));
}

/* An x-mcp-header declaration a client can honour: not on an object or array property (a
 * string, number, integer or boolean one, or one without a single type), naming a header of
 * token characters (Mcp-Param-<name>). */
static bool param_header_ok(json_t *def, json_t *h)
{
    const char *name = json_string_value(h);
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 64 || n != json_string_length(h))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return false;
    }
    const char *type = json_string_value(json_object_get(def, "type"));
    return !type || (strcmp(type, "string") == 0 || strcmp(type, "number") == 0 ||
                     strcmp(type, "integer") == 0 || strcmp(type, "boolean") == 0);
}

json_t *mcp_param_headers(const char *tool, json_t *input_schema)
{
    const char *prop;
    json_t *def, *headers = json_object();
    json_object_foreach(json_object_get(input_schema, "properties"), prop, def)
    {
        json_t *h = json_object_get(def, "x-mcp-header");
        if (h == NULL)
            continue;
        if (param_header_ok(def, h))
            json_object_set(headers, prop, h);
        else /* a gateway relays upstream schemas: one bad declaration must not make the
                tool uncallable in 2026-07-28 (value_matches could never succeed) */
            log_warn("tool %s: x-mcp-header of %.64s ignored (a scalar property and a header "
                     "name of letters, digits and '-' only)",
                     tool, prop);
    }
    if (json_object_size(headers))
        return headers;
    json_decref(headers);
    return NULL;
}

void mcp_add_tool(struct mcp_server *s, const struct mcp_tool_def *d)
{
    json_t *t = json_pack("{s:s}", "name", d->name);
    set_opt_str(t, "title", d->title);
    set_opt_str(t, "description", d->description);
    json_object_set_new(t, "inputSchema", d->input_schema);
    if (d->output_schema)
        json_object_set_new(t, "outputSchema", d->output_schema);
    if (d->annotations)
        json_object_set_new(t, "annotations", d->annotations);
    mcp_registry_add(&s->tools, d->name, t, d->handler, d->arg, NULL);
    s->tools.v[s->tools.n - 1].scope = d->scope ? xstrdup(d->scope) : NULL;
    /* Found once here, not at each call: most tools have none. */
    s->tools.v[s->tools.n - 1].param_headers = mcp_param_headers(d->name, d->input_schema);
}

void mcp_set_call_gate(struct mcp_server *s, mcp_call_gate_cb *gate, mcp_call_release_cb *release,
                       void *arg)
{
    s->call_gate = gate;
    s->call_release = release;
    s->call_gate_arg = arg;
}

void mcp_set_tool_filter(struct mcp_server *s, mcp_tool_filter_cb *cb, void *arg)
{
    s->tool_filter = cb;
    s->tool_filter_arg = arg;
}

bool mcp_call_allowed(const struct mcp_call *c, const char *scope)
{
    struct mcp_server *s = c->srv;
    if (s->tool_filter == NULL)
        return true;
    /* Without its HTTP request (a call detached by a cancel) nobody can be asked: refuse. */
    struct hreq *r = c->ex ? c->ex->req : NULL;
    return r && s->tool_filter(r, NULL, scope, false, s->tool_filter_arg);
}

void mcp_set_agent_filter(struct mcp_server *s, mcp_agent_filter_cb *cb, void *arg)
{
    s->agent_filter = cb;
    s->agent_filter_arg = arg;
}

bool mcp_call_may_use_agent(const struct mcp_call *c, const char *agent)
{
    struct mcp_server *s = c->srv;
    if (s->agent_filter == NULL)
        return true;
    struct hreq *r = c->ex ? c->ex->req : NULL;
    return r && s->agent_filter(r, agent, s->agent_filter_arg);
}

void mcp_set_whoami(struct mcp_server *s, mcp_whoami_cb *cb, void *arg)
{
    s->whoami_cb = cb;
    s->whoami_arg = arg;
}

json_t *mcp_call_whoami(const struct mcp_call *c)
{
    struct mcp_server *s = c->srv;
    struct hreq *r = c->ex ? c->ex->req : NULL;
    return s->whoami_cb && r ? s->whoami_cb(r, s->whoami_arg) : NULL;
}

bool mcp_call_sees_all(const struct mcp_call *c)
{
    /* The owner token holds every scope; without authentication everyone does. */
    return mcp_call_allowed(c, MCP_SCOPE_SEES_ALL);
}

void mcp_add_resource(struct mcp_server *s, const struct mcp_resource_def *d)
{
    json_t *r = json_pack("{s:s, s:s}", "uri", d->uri, "name", d->name);
    set_opt_str(r, "title", d->title);
    set_opt_str(r, "description", d->description);
    set_opt_str(r, "mimeType", d->mime_type);
    mcp_registry_add(&s->resources, d->uri, r, d->handler, d->arg, NULL);
}

void mcp_add_template(struct mcp_server *s, const struct mcp_template_def *d)
{
    json_t *r = json_pack("{s:s, s:s}", "uriTemplate", d->uri_template, "name", d->name);
    set_opt_str(r, "title", d->title);
    set_opt_str(r, "description", d->description);
    set_opt_str(r, "mimeType", d->mime_type);
    mcp_registry_add(&s->templates, d->name, r, d->handler, d->arg, d->uri_template);
}

void mcp_add_prompt(struct mcp_server *s, const struct mcp_prompt_def *d)
{
    json_t *p = json_pack("{s:s}", "name", d->name);
    set_opt_str(p, "title", d->title);
    set_opt_str(p, "description", d->description);
    if (d->arguments)
        json_object_set_new(p, "arguments", d->arguments);
    mcp_registry_add(&s->prompts, d->name, p, d->handler, d->arg, NULL);
}

void mcp_set_audit(struct mcp_server *s, mcp_audit_cb *cb, void *arg)
{
    s->audit = cb;
    s->audit_arg = arg;
}

void mcp_set_message_hook(struct mcp_server *s, mcp_message_cb *cb, void *arg)
{
    s->on_message = cb;
    s->on_message_arg = arg;
}

void mcp_set_span_of(struct mcp_server *s, mcp_span_of_cb *cb, void *arg)
{
    s->span_of = cb;
    s->span_of_arg = arg;
}

void mcp_set_caller(struct mcp_server *s, mcp_caller_cb *cb, void *arg)
{
    s->caller_cb = cb;
    s->caller_arg = arg;
}

void mcp_set_task_ops(struct mcp_server *s, const struct mcp_task_ops *ops, void *arg)
{
    s->task_ops = ops;
    s->task_arg = arg;
}

void mcp_add_task_ops(struct mcp_server *s, const char *prefix, const struct mcp_task_ops *ops,
                      void *arg)
{
    if (s->ntask_more >= MCP_TASK_PROVIDERS_MAX || strlen(prefix) >= sizeof s->task_more[0].prefix)
        abort(); /* a wiring mistake, not an input */
    struct task_provider *p = &s->task_more[s->ntask_more++];
    snprintf(p->prefix, sizeof p->prefix, "%s", prefix);
    p->ops = ops;
    p->arg = arg;
}

bool mcp_has_tasks(const struct mcp_server *s)
{
    return s->task_ops != NULL || s->ntask_more > 0;
}

void mcp_set_completion(struct mcp_server *s, mcp_handler *handler, void *arg)
{
    s->complete = handler;
    s->complete_arg = arg;
}

size_t mcp_tool_count(const struct mcp_server *s)
{
    return s->tools.n - s->tools_hidden;
}

size_t mcp_session_count(const struct mcp_server *s)
{
    return strmap_count(s->sessions);
}

size_t mcp_calls_in_flight(const struct mcp_server *s)
{
    return s->ninflight;
}

struct mcp_server *mcp_new(struct loop *l, const struct mcp_opts *o)
{
    struct mcp_server *s = xcalloc(1, sizeof *s);
    list_init(&s->calls);
    list_init(&s->listens);
    s->loop = l;
    s->o = *o;
    s->name = xstrdup(o->name);
    s->title = o->title ? xstrdup(o->title) : NULL;
    s->version = xstrdup(o->version);
    s->instructions = o->instructions ? xstrdup(o->instructions) : NULL;
    s->public_hosts = o->public_hosts && *o->public_hosts ? xstrdup(o->public_hosts) : NULL;
    s->sessions = strmap_new();
    s->inflight = strmap_new();
    s->meta_cache = metacache_new();
    s->outgoing = strmap_new();
    if (!crypto_random_bytes(s->state_key, sizeof s->state_key)) {
        /* getrandom fails only without a kernel entropy source: nothing can be sealed. */
        log_error("fatal: no random bytes for the request-state key");
        abort();
    }
    return s;
}

void mcp_set_state_key(struct mcp_server *s, const unsigned char key[32])
{
    memcpy(s->state_key, key, sizeof s->state_key);
    s->state_key_shared = true;
}

void mcp_set_listen(struct mcp_server *s, const char *host, unsigned port)
{
    snprintf(s->listen_host, sizeof s->listen_host, "%s", host ? host : "");
    s->port = port;
}

void mcp_set_public_hosts(struct mcp_server *s, const char *hosts)
{
    free(s->public_hosts);
    s->public_hosts = hosts && *hosts ? xstrdup(hosts) : NULL;
}

size_t mcp_calls_active(const struct mcp_server *s)
{
    return s->ncalls;
}

uint64_t mcp_calls_started(const struct mcp_server *s)
{
    return s->calls_started;
}

void mcp_free(struct mcp_server *s)
{
    if (s == NULL)
        return;
    size_t n;
    void **v = strmap_values(s->sessions, &n);
    for (size_t i = 0; i < n; i++)
        session_end(s, v[i]);
    free(v);
    loop_timer_cancel(s->sweep);
    strmap_free(s->sessions);
    strmap_free(s->inflight);
    metacache_free(s->meta_cache);
    strmap_free(s->outgoing);
    mcp_registry_cleanup(&s->tools);
    mcp_registry_cleanup(&s->resources);
    mcp_registry_cleanup(&s->templates);
    mcp_registry_cleanup(&s->prompts);
    free(s->name);
    free(s->title);
    free(s->version);
    free(s->instructions);
    free(s->public_hosts);
    free(s->modern_list_head);
    for (int i = 0; i < 3; i++)
        free(s->decoration[i]);
    json_decref(s->server_info);
    explicit_bzero(s->state_key, sizeof s->state_key);
    free(s);
}
