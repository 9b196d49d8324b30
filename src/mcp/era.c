/* era.c — MCP 2026-07-28 beside the session era, on the same endpoint, chosen per request.
 *
 * 2026-07-28 is stateless: no initialize and no session; every request names its protocol
 * version and the client's capabilities in params._meta, mirrors its method (and the tool,
 * prompt or resource it names) in headers that must agree with the body, and every result
 * says what it is (resultType) and, for lists, how long it may be cached. A request is served
 * by these rules when its _meta names a protocol version or its MCP-Protocol-Version header
 * names 2026-07-28; anything else (initialize, a session's requests, headers of 2024-11-05 ...
 * 2025-11-25 or none) goes the session era's way exactly as before.
 *
 * The checks run in the order the revision's conformance suite expects: method (unknown or
 * removed: 404), _meta (-32602), headers against the body (-32020), version (-32022 with the
 * versions we serve), then the request is dispatched like any other, with what its calls need
 * (capabilities, log level, the answers to an earlier input_required result) on the exchange.
 * Every error carries the request's id. */
#include "era.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "exchange.h"
#include "hdr.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "methods.h"
#include "reqstate.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"

/* Newest first: what server/discover and the unsupported-version error list. */
static const char *const served_versions[] = {MODERN_VERSION, "2025-11-25", "2025-06-18",
                                              "2025-03-26", "2024-11-05"};

json_t *era_versions(void)
{
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof served_versions / sizeof *served_versions; i++)
        json_array_append_new(a, json_string(served_versions[i]));
    return a;
}

bool era_version_served(const char *v)
{
    for (size_t i = 0; i < sizeof served_versions / sizeof *served_versions; i++)
        if (strcmp(v, served_versions[i]) == 0)
            return true;
    return false;
}

static bool is_modern_version(const char *v)
{
    return strcmp(v, MODERN_VERSION) == 0;
}

static json_t *meta_of(json_t *msg)
{
    return json_object_get(json_object_get(msg, "params"), "_meta");
}

enum era era_of(struct hreq *r, json_t *root)
{
    const char *pv = hreq_header(r, "MCP-Protocol-Version");
    bool modern_body = json_is_object(root) && json_object_get(meta_of(root), META_VERSION);

    if (modern_body)
        return ERA_MODERN;
    if (pv == NULL || mcp_version_supported(pv))
        return ERA_LEGACY;
    return is_modern_version(pv) ? ERA_MODERN : ERA_UNSUPPORTED;
}

static void reply_error(struct hreq *r, unsigned status, json_t *id, int code, const char *msg,
                        json_t *data_take)
{
    json_t *err = jrpc_error(id, code, msg);
    if (data_take)
        json_object_set_new(json_object_get(err, "error"), "data", data_take);
    mcp_reply_json(r, status, err);
}

static void reply_unsupported(struct hreq *r, json_t *id, const char *requested)
{
    /* Echoed as printable ASCII only: the client's bytes must not break the JSON (nor the
     * list of versions it needs). */
    char shown[64];
    size_t n = 0;
    for (; requested[n] && n < 60; n++) {
        unsigned char c = (unsigned char)requested[n];
        shown[n] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    shown[n] = '\0';
    json_t *data = json_object();
    json_object_set_new(data, "supported", era_versions());
    json_object_set_new(data, "requested", json_string(shown));
    reply_error(r, 400, id, JRPC_UNSUPPORTED_VERSION, "Unsupported protocol version", data);
}

json_t *era_missing_tasks(json_t *id, const char *message)
{
    json_t *err = jrpc_error(id, JRPC_MISSING_CAPABILITY, message);
    json_object_set_new(
        json_object_get(err, "error"), "data",
        json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", MCP_TASKS_EXTENSION));
    return err;
}

void era_refuse_version(struct hreq *r, json_t *root)
{
    json_t *id = json_object_get(root, "id");
    const char *pv = hreq_header(r, "MCP-Protocol-Version");
    reply_unsupported(r, json_is_string(id) || json_is_integer(id) ? id : NULL, pv ? pv : "");
}

/* A header value as the client meant it (allocated): plain text without the white space around
 * it, or the UTF-8 text of a "=?base64?...?=" value. NULL when it cannot be read (bad base64,
 * control characters). */
static char *header_text(const char *raw)
{
    while (*raw == ' ' || *raw == '\t')
        raw++;
    size_t n = strlen(raw);
    while (n > 0 && (raw[n - 1] == ' ' || raw[n - 1] == '\t'))
        n--;
    /* n is bounded by the HTTP layer's header cap; a decoded value is never longer */
    char *out = xmalloc(n + 1);
    if (n >= 12 && strncmp(raw, "=?base64?", 9) == 0 && strncmp(raw + n - 2, "?=", 2) == 0) {
        size_t len;
        if (!crypto_b64_decode(false, raw + 9, n - 11, (unsigned char *)out, n, &len) ||
            memchr(out, '\0', len)) {
            free(out);
            return NULL;
        }
        out[len] = '\0';
        return out;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)raw[i] < 0x20 || (unsigned char)raw[i] > 0x7e) {
            free(out);
            return NULL;
        }
    memcpy(out, raw, n);
    out[n] = '\0';
    return out;
}

/* A decimal number as a header writes it: -?digits[.digits][e[+-]digits], nothing else (no
 * hex, no "inf", no leading "+"): intermediaries must not read it differently. */
static bool decimal_syntax(const char *t)
{
    if (*t == '-')
        t++;
    if (*t < '0' || *t > '9')
        return false;
    while (*t >= '0' && *t <= '9')
        t++;
    if (*t == '.') {
        t++;
        if (*t < '0' || *t > '9')
            return false;
        while (*t >= '0' && *t <= '9')
            t++;
    }
    if (*t == 'e' || *t == 'E') {
        t++;
        if (*t == '+' || *t == '-')
            t++;
        if (*t < '0' || *t > '9')
            return false;
        while (*t >= '0' && *t <= '9')
            t++;
    }
    return *t == '\0';
}

/* Whether a header's text stands for a body value: strings exactly, booleans as
 * "true"/"false", numbers numerically (42 and 42.0 alike; integers exactly, by strtoll, when
 * the text is plain digits). */
static bool value_matches(const char *text, json_t *v)
{
    if (json_is_string(v))
        return strcmp(text, json_string_value(v)) == 0;
    if (json_is_boolean(v))
        return strcmp(text, json_is_true(v) ? "true" : "false") == 0;
    if (!json_is_number(v) || !decimal_syntax(text))
        return false;
    if (json_is_integer(v) && strpbrk(text, ".eE") == NULL) {
        errno = 0;
        long long n = strtoll(text, NULL, 10);
        return errno == 0 && n == json_integer_value(v);
    }
    return strtod(text, NULL) == json_number_value(v);
}

bool era_param_headers_match(struct hreq *r, json_t *param_headers, json_t *args, char *msg,
                             size_t msgsz)
{
    const char *prop;
    json_t *header;
    json_object_foreach(param_headers, prop, header)
    {
        char name[96];
        snprintf(name, sizeof name, "Mcp-Param-%.80s", json_string_value(header));
        const char *raw = hreq_header(r, name);
        json_t *v = json_object_get(args, prop);
        if (v == NULL || json_is_null(v)) {
            if (raw == NULL)
                continue;
            snprintf(msg, msgsz, "Header mismatch: %s header sent without arguments.%.64s", name,
                     prop);
            return false;
        }
        char *value = raw ? header_text(raw) : NULL;
        bool same = value && value_matches(value, v);
        free(value);
        if (!same) {
            snprintf(msg, msgsz, "Header mismatch: %s header %s arguments.%.64s", name,
                     raw ? "does not match" : "is required and must equal", prop);
            return false;
        }
    }
    return true;
}

/* Checks the mirrored headers; on a mismatch fills msg and returns false. */
static bool headers_match(struct hreq *r, const struct jrpc_msg *m, const char *name_field,
                          const char *meta_version, char *msg, size_t msgsz)
{
    const char *pv = hreq_header(r, "MCP-Protocol-Version");
    const char *method = hreq_header(r, "Mcp-Method");

    if (pv == NULL) {
        snprintf(msg, msgsz, "Header mismatch: the MCP-Protocol-Version header is required");
        return false;
    }
    if (strcmp(pv, meta_version) != 0) {
        snprintf(msg, msgsz, "Header mismatch: MCP-Protocol-Version header does not match _meta %s",
                 META_VERSION);
        return false;
    }
    char *value = method ? header_text(method) : NULL;
    bool same = value && strcmp(value, m->method) == 0;
    free(value);
    if (!same) {
        snprintf(msg, msgsz, "Header mismatch: Mcp-Method header %s the body's method %.64s",
                 method ? "does not match" : "is required and must be", m->method);
        return false;
    }
    if (name_field == NULL)
        return true;
    const char *body = jrpc_str(json_object_get(m->params, name_field));
    const char *name = hreq_header(r, "Mcp-Name");
    if (body == NULL && name == NULL)
        return true; /* the method itself says what is missing */
    value = name && body ? header_text(name) : NULL;
    same = value && strcmp(value, body) == 0;
    free(value);
    if (!same) {
        snprintf(msg, msgsz, "Header mismatch: Mcp-Name header %s params.%s",
                 name ? "does not match" : "is required and must equal", name_field);
        return false;
    }
    return true;
}

/* The capabilities the engine looks at, as presence flags: a client cannot park a large
 * object in a call. */
static json_t *kept_caps(json_t *caps)
{
    if (json_object_size(caps) == 0)
        return NULL; /* the common case: nothing declared, nothing to keep */
    json_t *out = mcp_client_caps_kept(caps);
    json_t *ext = json_object_get(caps, "extensions");
    if (json_is_object(json_object_get(ext, MCP_TASKS_EXTENSION)))
        json_object_set_new(out, "extensions", json_pack("{s:{}}", MCP_TASKS_EXTENSION));
    return out;
}

/* A labelled digest (base64url): what identifies a caller when its name cannot. */
static void caller_digest(const char *what, const char *text, char out[45])
{
    size_t wlen = strlen(what) + 1, tlen = strlen(text); /* the label with its NUL */
    char *all = xmalloc(wlen + tlen);
    memcpy(all, what, wlen);
    memcpy(all + wlen, text, tlen);
    unsigned char h[32];
    crypto_sha256(all, wlen + tlen, h);
    explicit_bzero(all, wlen + tlen);
    free(all);
    crypto_b64_encode(true, h, sizeof h, out);
}

void era_caller(struct mcp_server *srv, struct hreq *r, char out[45])
{
    /* The principal the layer that authenticated r names (mcp_set_caller): the same caller
     * across its tokens (an OAuth client's refreshed ones). A long name goes as a digest. */
    const char *name = srv->caller_cb ? srv->caller_cb(r, srv->caller_arg) : NULL;
    if (name) {
        if (strlen(name) < 40)
            snprintf(out, 45, "p:%s", name);
        else
            caller_digest("hermes-mcp principal v1", name, out);
        return;
    }
    /* Else the bearer token as the server reads it (any case or spacing of the scheme),
     * hashed with a label of its own: never the credential, and the same caller however the
     * header is written. Tokens are 256-bit random: the digest gives nothing to guess from. */
    const char *auth = hreq_header(r, "Authorization");
    const char *token = auth ? hdr_bearer(auth) : NULL;
    if (token == NULL)
        snprintf(out, 45, "anonymous");
    else
        caller_digest("hermes-mcp caller v1", token, out);
}

/* The answers to an earlier input_required round; false (msg filled) when they are not ours
 * or not well formed. */
static bool open_round(struct mcp_server *srv, struct mcp_exchange *ex, const struct jrpc_msg *m,
                       char *msg, size_t msgsz)
{
    json_t *responses = json_object_get(m->params, "inputResponses");
    json_t *state = json_object_get(m->params, "requestState");

    if (responses && !json_is_object(responses)) {
        snprintf(msg, msgsz, "Invalid params: inputResponses must be an object");
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach(responses, key, v)
    {
        if (!json_is_object(v)) {
            snprintf(msg, msgsz,
                     "Invalid params: inputResponses.%.64s must be an object (the result of "
                     "the request under that key)",
                     key);
            return false;
        }
    }
    if (state && !json_is_string(state)) {
        snprintf(msg, msgsz, "Invalid params: requestState must be a string");
        return false;
    }
    if (state) {
        char digest[45];
        reqstate_params_digest(m->method, m->params, digest);
        ex->input_state = reqstate_open(srv, ex->caller, digest, json_string_value(state),
                                        json_string_length(state));
        if (ex->input_state == NULL) {
            snprintf(msg, msgsz,
                     "Invalid params: requestState is not one this server issued for this "
                     "request and caller, or it has expired");
            return false;
        }
    }
    ex->input_responses = json_incref(responses);
    return true;
}

void era_serve(struct mcp_server *srv, struct hreq *r, json_t *root)
{
    struct jrpc_msg m;
    char msg[256];

    if (!json_is_object(root)) {
        mcp_audit_note(srv, r, NULL, NULL, jrpc_err_text(JRPC_INVALID_REQUEST));
        mcp_reply_rpc_error(r, 400, NULL, JRPC_INVALID_REQUEST,
                            "Invalid Request: MCP 2026-07-28 has no batches; send one JSON-RPC "
                            "request per POST");
        return;
    }
    jrpc_classify(root, &m);
    if (m.kind == JRPC_INVALID) {
        char code[16];
        snprintf(code, sizeof code, "%d", m.why.code);
        mcp_audit_note(srv, r, NULL, NULL, code);
        mcp_reply_rpc_error(r, 400, m.id, m.why.code, m.why.msg);
        return;
    }
    if (m.kind != JRPC_REQUEST) {
        /* No client notification means anything over HTTP in this revision (a cancel is a
         * closed stream), and a client sends no responses: accepted, nothing to do. */
        hreq_reply(r, 202, NULL, "", 0);
        return;
    }
    const char *name_field = NULL;
    const char *method = mcp_modern_method(srv, m.method, &name_field);
    mcp_audit_note(srv, r, mcp_audit_method(m.method), NULL, NULL);
    if (method == NULL) {
        snprintf(msg, sizeof msg, "Method not found: %.128s", m.method);
        mcp_audit_note(srv, r, NULL, NULL, jrpc_err_text(JRPC_METHOD_NOT_FOUND));
        mcp_reply_rpc_error(r, 404, m.id, JRPC_METHOD_NOT_FOUND, msg);
        return;
    }
    json_t *meta = json_object_get(m.params, "_meta");
    json_t *version = json_object_get(meta, META_VERSION);
    json_t *caps = json_object_get(meta, META_CAPS);
    json_t *level = json_object_get(meta, META_LOG_LEVEL);
    int log_level = level ? (jrpc_str(level) ? mcp_level_index(json_string_value(level)) : -1) : -1;
    const char *bad = NULL;
    if (!json_is_object(meta))
        bad = "Invalid params: params._meta is required (protocol version and client "
              "capabilities)";
    else if (!jrpc_str(version))
        bad = "Invalid params: _meta." META_VERSION " must be a string";
    else if (!json_is_object(caps))
        bad = "Invalid params: _meta." META_CAPS " must be an object";
    else if (level && log_level < 0)
        bad = "Invalid params: _meta." META_LOG_LEVEL " must be one of debug, info, notice, "
              "warning, error, critical, alert, emergency";
    if (bad) {
        mcp_audit_note(srv, r, NULL, NULL, jrpc_err_text(JRPC_INVALID_PARAMS));
        mcp_reply_rpc_error(r, 400, m.id, JRPC_INVALID_PARAMS, bad);
        return;
    }
    if (!headers_match(r, &m, name_field, json_string_value(version), msg, sizeof msg)) {
        mcp_audit_note(srv, r, NULL, NULL, jrpc_err_text(JRPC_HEADER_MISMATCH));
        mcp_reply_rpc_error(r, 400, m.id, JRPC_HEADER_MISMATCH, msg);
        return;
    }
    if (!is_modern_version(json_string_value(version))) {
        mcp_audit_note(srv, r, NULL, NULL, jrpc_err_text(JRPC_UNSUPPORTED_VERSION));
        reply_unsupported(r, m.id, json_string_value(version));
        return;
    }

    struct mcp_exchange *ex = exchange_open(srv, r, NULL, false, MODERN_VERSION);
    ex->modern = true;
    ex->method = method;
    ex->caps = kept_caps(caps);
    ex->log_level = log_level;
    if (name_field && !open_round(srv, ex, &m, msg, sizeof msg)) {
        hreq_on_abort(r, NULL, NULL);
        ex->req = NULL;
        mcp_audit_note(srv, r, NULL, NULL, jrpc_err_text(JRPC_INVALID_PARAMS));
        mcp_reply_rpc_error(r, 400, m.id, JRPC_INVALID_PARAMS, msg);
        ex->dispatching = false;
        exchange_maybe_finish(ex);
        return;
    }
    struct rpc_ctx x = {.srv = srv, .ex = ex, .sess = NULL, .req = r};
    ex->nrequests = 1;
    mcp_dispatch_request(&x, &m);
    ex->dispatching = false;
    exchange_maybe_finish(ex);
}

static bool is_cacheable(const char *method)
{
    static const char *const cacheable[] = {
        "server/discover",          "tools/list",    "prompts/list", "resources/list",
        "resources/templates/list", "resources/read"};
    for (size_t i = 0; i < sizeof cacheable / sizeof *cacheable; i++)
        if (strcmp(method, cacheable[i]) == 0)
            return true;
    return false;
}

/* Built once: every 2026-07-28 result carries it (the same object, shared read-only). */
static json_t *server_info(struct mcp_server *srv)
{
    if (srv->server_info == NULL)
        srv->server_info = json_pack("{s:s, s:s}", "name", srv->name, "version", srv->version);
    return srv->server_info;
}

void era_decorate(struct mcp_server *srv, const char *method, json_t *msg, bool retry)
{
    json_t *result = json_object_get(msg, "result");
    if (!json_is_object(result))
        return;
    if (!json_is_string(json_object_get(result, "resultType")))
        json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    json_object_set(meta, META_SERVER_INFO, server_info(srv));
    const char *type = json_string_value(json_object_get(result, "resultType"));
    /* A retry's answer depends on what the client answered: never cached. */
    if (strcmp(type, "complete") != 0 || !is_cacheable(method) || retry)
        return;
    /* A resource's contents may change at any time: fresh unless its provider says more. */
    if (!json_is_integer(json_object_get(result, "ttlMs")))
        json_object_set_new(result, "ttlMs",
                            json_integer(strcmp(method, "resources/read") == 0 ? 0 : LIST_TTL_MS));
    if (!json_is_string(json_object_get(result, "cacheScope")))
        json_object_set_new(result, "cacheScope", json_string(era_cache_scope(srv)));
}

const char *era_cache_scope(const struct mcp_server *srv)
{
    return srv->o.cache_public ? "public" : "private";
}

/* The decoration era_decorate would add to a result that has none of its fields, as JSON
 * members (no braces), made once per server for each of its three forms. */
static const char *decoration_text(struct mcp_server *srv, const char *method, bool retry)
{
    int form = retry || !is_cacheable(method) ? 0 : strcmp(method, "resources/read") == 0 ? 1 : 2;
    if (srv->decoration[form] == NULL) {
        char *info = json_dumps(server_info(srv), JSON_COMPACT);
        if (info == NULL) /* an embedder's name that is not UTF-8: era_decorate copes */
            return NULL;
        if (form == 0)
            srv->decoration[form] = xasprintf(
                "\"resultType\":\"complete\",\"_meta\":{\"" META_SERVER_INFO "\":%s}", info);
        else
            srv->decoration[form] =
                xasprintf("\"resultType\":\"complete\",\"_meta\":{\"" META_SERVER_INFO
                          "\":%s},\"ttlMs\":%u,\"cacheScope\":\"%s\"",
                          info, form == 1 ? 0u : LIST_TTL_MS, era_cache_scope(srv));
        free(info);
    }
    return srv->decoration[form];
}

void era_reply(struct mcp_server *srv, struct hreq *r, const char *method, json_t *msg_take,
               bool retry)
{
    unsigned status = era_status(msg_take);
    json_t *result = json_object_get(msg_take, "result");
    json_t *id = json_object_get(msg_take, "id");
    char *id_text = NULL, *result_text = NULL;
    /* The shape jrpc_result makes ({jsonrpc, id, result}), which the text below spells out. */
    bool plain = json_object_size(msg_take) == 3 && json_is_object(result) &&
                 !json_object_get(result, "resultType") && !json_object_get(result, "_meta") &&
                 !json_object_get(result, "ttlMs") && !json_object_get(result, "cacheScope");
    if (plain) {
        id_text = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
        result_text = json_dumps(result, JSON_COMPACT);
    }
    const char *decoration = plain ? decoration_text(srv, method, retry) : NULL;
    if (id_text == NULL || result_text == NULL || decoration == NULL) {
        free(id_text);
        free(result_text);
        era_decorate(srv, method, msg_take, retry);
        mcp_reply_json(r, status, msg_take);
        return;
    }
    /* The result's members, then the decoration, as era_decorate would append them. */
    static const char open[] = "{\"jsonrpc\":\"2.0\",\"id\":", mid[] = ",\"result\":";
    size_t ol = sizeof open - 1, ml = sizeof mid - 1, il = strlen(id_text);
    size_t rl = strlen(result_text) - 1; /* without its closing brace */
    size_t dl = strlen(decoration);
    char *text = xmalloc(ol + il + ml + rl + 1 + dl + 3);
    char *w = text;
    memcpy(w, open, ol);
    w += ol;
    memcpy(w, id_text, il);
    w += il;
    memcpy(w, mid, ml);
    w += ml;
    memcpy(w, result_text, rl);
    w += rl;
    if (rl > 1) /* the result had members: the decoration follows them */
        *w++ = ',';
    memcpy(w, decoration, dl);
    w += dl;
    memcpy(w, "}}", 3);
    size_t k = (size_t)(w - text) + 2;
    free(id_text);
    free(result_text);
    json_decref(msg_take);
    hreq_reply_take(r, status, "application/json", text, k);
}

const char *era_list_head(struct mcp_server *srv)
{
    if (srv->modern_list_head == NULL) {
        char *text = json_dumps(server_info(srv), JSON_COMPACT);
        if (text == NULL) /* an embedder's name that is not UTF-8: the caller takes the JSON path */
            return NULL;
        size_t cap = strlen(text) + 200;
        srv->modern_list_head = xmalloc(cap);
        snprintf(srv->modern_list_head, cap,
                 "{\"resultType\":\"complete\",\"ttlMs\":%u,\"cacheScope\":\"%s\",\"_meta\":"
                 "{\"" META_SERVER_INFO "\":%s},",
                 LIST_TTL_MS, era_cache_scope(srv), text);
        free(text);
    }
    return srv->modern_list_head;
}

unsigned era_status(json_t *answer)
{
    json_int_t code = json_integer_value(json_object_get(json_object_get(answer, "error"), "code"));
    switch (code) {
    case JRPC_HEADER_MISMATCH:
    case JRPC_MISSING_CAPABILITY:
    case JRPC_UNSUPPORTED_VERSION:
        return 400;
    case JRPC_METHOD_NOT_FOUND:
        return 404;
    default:
        return 200;
    }
}
