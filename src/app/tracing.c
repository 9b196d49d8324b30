/* tracing.c — one SERVER span per MCP request (and per OAuth endpoint request), after the
 * OpenTelemetry semantic conventions for MCP, and the mcp.server.operation.duration histogram
 * (kept with tracing off too). The span starts with the request's headers (a traceparent
 * there is its parent), takes a trace context from params._meta when the body has one (it
 * wins: it is the message's own), and ends when the answer is done. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "app_internal.h"
#include "authserver.h"
#include "config.h"
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

/* The headers a span reads, in one pass over the request's headers. */
struct trace_headers {
    const char *traceparent, *version, *session;
    char tracestate[2048]; /* every tracestate line, joined by commas (W3C trace-context) */
    size_t tslen;
    bool ts_full; /* a line did not fit: later ones are left out, as members from the end */
};

static bool scan_header(const char *name, const char *value, void *arg)
{
    struct trace_headers *h = arg;
    switch (name[0]) {
    case 't':
    case 'T':
        if (h->traceparent == NULL && strcasecmp(name, "traceparent") == 0)
            h->traceparent = value;
        else if (strcasecmp(name, "tracestate") == 0 && !h->ts_full) {
            size_t n = strlen(value), sep = h->tslen > 0;
            if (h->tslen + sep + n >= sizeof h->tracestate) {
                /* The whole members of this line that fit, then no more (the first ones
                 * matter most: W3C trace-context puts the newest first). */
                h->ts_full = true;
                size_t room = sizeof h->tracestate - h->tslen - sep - 1;
                while (n > 0 && (n > room || value[n] != ','))
                    n--;
                if (n == 0)
                    break;
            }
            if (sep)
                h->tracestate[h->tslen++] = ',';
            memcpy(h->tracestate + h->tslen, value, n);
            h->tslen += n;
            h->tracestate[h->tslen] = '\0';
        }
        break;
    case 'm':
    case 'M':
        if (h->version == NULL && strcasecmp(name, "MCP-Protocol-Version") == 0)
            h->version = value;
        else if (h->session == NULL && strcasecmp(name, "Mcp-Session-Id") == 0)
            h->session = value;
        break;
    }
    return true;
}

/* An HTTP method as a span may carry it: only the known ones (the HTTP semantic conventions),
 * so a client cannot write span names; NULL for any other. */
static const char *known_method(const char *m)
{
    static const char *const methods[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                          "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(m, methods[i]) == 0)
            return methods[i];
    return NULL;
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
    const char *method = known_method(hreq_method(r));
    char name[80];
    /* An MCP request's span is named again when its JSON-RPC method is known. */
    n->span = otel_span_start(
        a->otel,
        !oauth && method && method[0] == 'P' && method[1] == 'O'
            ? "POST /mcp"
            : join(name, sizeof name, method ? method : "HTTP", oauth ? path : "/mcp"),
        OTEL_KIND_SERVER, NULL);
    n->span_oauth = oauth;
    if (n->span == NULL)
        return;
    struct trace_headers h;
    h.traceparent = h.version = h.session = NULL;
    h.tslen = 0;
    h.ts_full = false;
    h.tracestate[0] = '\0';
    hreq_each_header(r, scan_header, &h);
    set_parent(n->span, h.traceparent, h.tslen ? h.tracestate : NULL);
    otel_span_lit(n->span, "network.transport", "tcp");
    otel_span_lit(n->span, "network.protocol.name", "http");
    /* The client, not a trusted proxy in front of it (without any, the peer). */
    char ip[64];
    if (a->cfg->trusted_proxies)
        app_client_ip(a, r, ip, sizeof ip);
    otel_span_str(n->span, "client.address", a->cfg->trusted_proxies ? ip : hreq_peer(r));
    if (oauth) {
        otel_span_lit(n->span, "http.request.method", method ? method : "_OTHER");
        otel_span_str(n->span, "http.route", path);
        return;
    }
    otel_span_mcp_version(n->span, h.version);
    /* A session id lets whoever holds a token use that session: the traces get a digest of it
     * (stable, so a session's spans still group), never the id. */
    if (h.session) {
        unsigned char d[32];
        char hex[33];
        crypto_sha256(h.session, strlen(h.session), d);
        hex_encode(d, 16, hex);
        otel_span_str(n->span, "mcp.session.id", hex);
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
    json_t *meta = params ? json_object_get(params, "_meta") : NULL;
    if (meta) {
        const char *tp = json_string_value(json_object_get(meta, META_TRACEPARENT));
        if (tp)
            set_parent(s, tp, json_string_value(json_object_get(meta, META_TRACESTATE)));
    }
    json_t *id = json_object_get(msg, "id");
    char idtext[72];
    if (json_is_string(id))
        otel_span_str(s, "jsonrpc.request.id", json_string_value(id));
    else if (json_is_integer(id)) {
        otel_span_str(s, "jsonrpc.request.id", decimal(idtext, json_integer_value(id)));
    }
    /* initialize's is the version answered (the engine sets it). */
    if (meta && !otel_span_has_mcp_version(s))
        otel_span_mcp_version(
            s, json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion")));
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
        otel_span_set_name2(s, rpc, tool);
        otel_span_str(s, "mcp.method.name", rpc);
    }
    if (tool) {
        otel_span_str(s, "gen_ai.tool.name", tool);
        otel_span_lit(s, "gen_ai.operation.name", "execute_tool");
    }
    if (n->id.who)
        otel_span_principal(s, n->id.who->name);
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
