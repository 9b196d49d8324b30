/* tracing.c — one SERVER span per MCP request (and per OAuth endpoint request), after the
 * OpenTelemetry semantic conventions for MCP, and the mcp.server.operation.duration histogram
 * (kept with tracing off too). The span starts with the request's headers (a traceparent
 * there is its parent), takes a trace context from params._meta when the body has one (it
 * wins: it is the message's own), and ends when the answer is done. */
#include <stdio.h>
#include <string.h>

#include "app_internal.h"
#include "authserver.h"
#include "crypto.h"
#include "hex.h"
#include "httpd.h"
#include "metrics.h"
#include "otel.h"

#define META_TRACEPARENT "traceparent"
#define META_TRACESTATE "tracestate"

/* The semantic conventions' buckets for MCP operation durations, in seconds. */
static const double duration_bounds[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1,
                                         2,    5,    10,   30,  60,  120, 300};

struct metric *app_trace_histogram(void)
{
    return metric_new(
        "mcp_server_operation_duration_seconds",
        "MCP request duration from request to answer, by mcp.method.name, "
        "gen_ai.tool.name and error.type (OpenTelemetry mcp.server.operation.duration)",
        METRIC_HISTOGRAM, duration_bounds, sizeof duration_bounds / sizeof *duration_bounds);
}

/* "a b" (or "a" when b is NULL) into out, cut to fit: a span's name without snprintf, which
 * costs more than the rest of the span on a request's path. */
static const char *join(char *out, size_t outsz, const char *a, const char *b)
{
    size_t na = strnlen(a, outsz - 1), nb = b ? strnlen(b, outsz - 1) : 0;
    memcpy(out, a, na);
    if (b && na + 1 < outsz) {
        out[na++] = ' ';
        nb = nb < outsz - 1 - na ? nb : outsz - 1 - na;
        memcpy(out + na, b, nb);
        na += nb;
    }
    out[na] = '\0';
    return out;
}

/* The decimal text of v into out (room for 22 bytes). */
static const char *decimal(char *out, json_int_t v)
{
    char tmp[24];
    size_t n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        tmp[n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    size_t o = 0;
    if (v < 0)
        out[o++] = '-';
    while (n)
        out[o++] = tmp[--n];
    out[o] = '\0';
    return out;
}

static void set_parent(struct otel_span *s, const char *traceparent, const char *tracestate)
{
    struct otel_ctx parent;
    if (traceparent && otel_traceparent_parse(traceparent, &parent))
        otel_span_set_remote_parent(s, &parent, tracestate);
}

void app_trace_start(struct app *a, struct hreq *r)
{
    if (a->otel == NULL)
        return;
    const char *path = hreq_path(r);
    bool oauth = a->oauth_server && authserver_owns(path);
    if (!oauth && strcmp(path, "/mcp") != 0)
        return;
    struct rpc_note *n = app_note(r);
    char name[80];
    n->span =
        otel_span_start(a->otel, join(name, sizeof name, hreq_method(r), oauth ? path : "/mcp"),
                        OTEL_KIND_SERVER, NULL);
    n->span_oauth = oauth;
    set_parent(n->span, hreq_header(r, "traceparent"), hreq_header(r, "tracestate"));
    otel_span_str(n->span, "network.transport", "tcp");
    otel_span_str(n->span, "network.protocol.name", "http");
    char ip[64];
    app_client_ip(a, r, ip, sizeof ip); /* the client, not a trusted proxy in front of it */
    otel_span_str(n->span, "client.address", ip);
    if (oauth) {
        otel_span_str(n->span, "http.request.method", hreq_method(r));
        otel_span_str(n->span, "http.route", path);
    }
}

/* The engine's question when a call starts (mcp_set_span_of). */
struct otel_span *app_trace_span_of(struct hreq *r, void *arg)
{
    const struct rpc_note *n = hreq_user(r);
    (void)arg;
    return n ? n->span : NULL;
}

/* The engine's message hook (mcp_set_message_hook). */
void app_trace_message(struct hreq *r, json_t *msg, void *arg)
{
    const struct rpc_note *n = hreq_user(r);
    struct otel_span *s = n ? n->span : NULL;
    (void)arg;
    if (s == NULL)
        return;
    json_t *params = json_object_get(msg, "params");
    json_t *meta = json_object_get(params, "_meta");
    const char *tp = json_string_value(json_object_get(meta, META_TRACEPARENT));
    if (tp)
        set_parent(s, tp, json_string_value(json_object_get(meta, META_TRACESTATE)));
    json_t *id = json_object_get(msg, "id");
    char idtext[72];
    if (json_is_string(id))
        otel_span_str(s, "jsonrpc.request.id", json_string_value(id));
    else if (json_is_integer(id)) {
        otel_span_str(s, "jsonrpc.request.id", decimal(idtext, json_integer_value(id)));
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *version = hreq_header(r, "MCP-Protocol-Version");
    if (method && strcmp(method, "initialize") == 0)
        version = json_string_value(json_object_get(params, "protocolVersion"));
    if (version == NULL)
        version =
            json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
    otel_span_str(s, "mcp.protocol.version", version);
    /* A session id lets whoever holds a token use that session: the traces get a digest of it
     * (stable, so a session's spans still group), never the id. */
    const char *sid = hreq_header(r, "Mcp-Session-Id");
    if (sid) {
        unsigned char d[32];
        char hex[33];
        crypto_sha256(sid, strlen(sid), d);
        hex_encode(d, 16, hex);
        otel_span_str(s, "mcp.session.id", hex);
    }
}

void app_trace_done(struct app *a, struct hreq *r, unsigned status, uint64_t duration_ms)
{
    struct rpc_note *n = hreq_user(r);
    if (n == NULL)
        return;
    const char *rpc = *n->rpc_method ? n->rpc_method : NULL;
    const char *tool = *n->tool ? n->tool : NULL;
    const char *error = *n->error ? n->error : NULL;
    if (rpc && a->mcp_duration) {
        char labels[200];
        metric_labels(labels, sizeof labels, "mcp_method_name", rpc, "gen_ai_tool_name", tool,
                      "error_type", error, NULL);
        metric_observe(a->mcp_duration, labels, (double)duration_ms / 1000.0);
    }
    struct otel_span *s = n->span;
    n->span = NULL;
    if (s == NULL)
        return;
    if (rpc == NULL && !n->span_oauth) { /* a stream (GET), a DELETE, an unreadable body */
        otel_span_discard(s);
        return;
    }
    if (rpc) {
        char name[128];
        otel_span_set_name(s, join(name, sizeof name, rpc, tool));
        otel_span_str(s, "mcp.method.name", rpc);
    }
    if (tool) {
        otel_span_str(s, "gen_ai.tool.name", tool);
        otel_span_str(s, "gen_ai.operation.name", "execute_tool");
    }
    if (n->id.who) {
        otel_span_str(s, "enduser.id", n->id.who->name);
        otel_span_str(s, "hermes.principal", n->id.who->name);
    }
    otel_span_int(s, "http.response.status_code", status);
    if (error || status >= 500) {
        char code[16];
        snprintf(code, sizeof code, "%u", status);
        otel_span_str(s, "error.type", error ? error : code);
        otel_span_status(s, OTEL_STATUS_ERROR, error ? error : NULL);
    }
    (void)a;
    otel_span_end(s);
}
