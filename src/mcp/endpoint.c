/* endpoint.c — the engine's HTTP face: the checks every request to the endpoint passes before its
 * body is read (Host and Origin against DNS rebinding, method, protocol version, media types),
 * then the three exchanges: POST (JSON-RPC messages, handed to the methods; those of MCP
 * 2026-07-28 go to era.c, which serves them without a session), GET (a session's
 * standalone stream, or the resume of one with Last-Event-ID) and DELETE (ends a session).
 * Kept apart so that what reaches the protocol, and what is refused before, reads in one place. */
#include "mcp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "call.h"
#include "era.h"
#include "exchange.h"
#include "hdr.h"
#include "httpd.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "metacache.h"
#include "methods.h"
#include "session.h"
#include "stream.h"
#include "strmap.h"

/* Host names allowed in Host and Origin: our own, and configured public ones. */
static bool host_allowed(struct mcp_server *srv, const char *host, size_t hlen, long port)
{
    static const char *const local[] = {"localhost", "127.0.0.1", "::1"};
    bool is_local = false;

    for (size_t i = 0; i < 3; i++)
        if (strlen(local[i]) == hlen && strncasecmp(host, local[i], hlen) == 0)
            is_local = true;
    if (!is_local && srv->listen_host[0] && strlen(srv->listen_host) == hlen &&
        strncasecmp(host, srv->listen_host, hlen) == 0 && strcmp(srv->listen_host, "0.0.0.0") &&
        strcmp(srv->listen_host, "::"))
        is_local = true;
    if (is_local)
        return port < 0 || (unsigned long)port == srv->port;
    if (srv->public_hosts) {
        if (strcmp(srv->public_hosts, "*") == 0)
            return true;
        for (const char *p = srv->public_hosts; *p;) {
            size_t n = strcspn(p, ", ");
            if (n == hlen && strncasecmp(p, host, hlen) == 0)
                return true;
            /* ".example.com": any name under it (quick-tunnel names change at each start). */
            if (n > 1 && p[0] == '.' && hlen > n && strncasecmp(host + hlen - n, p, n) == 0)
                return true;
            p += n;
            p += strspn(p, ", ");
        }
    }
    return false;
}

static bool origin_allowed(struct mcp_server *srv, const char *origin)
{
    const char *host;
    size_t hlen;
    long port;

    if (!hdr_split_origin(origin, &host, &hlen, &port))
        return false;
    /* Any port of our own host names: a local page was served by someone on this machine. */
    return host_allowed(srv, host, hlen, -1) || (port >= 0 && host_allowed(srv, host, hlen, port));
}

const char *mcp_http_error_body(char *out, size_t outsz, const char *message)
{
    json_t *err = jrpc_error(NULL, JRPC_INVALID_REQUEST, message);
    char *text = json_dumps(err, JSON_COMPACT);

    snprintf(out, outsz, "%s", text ? text : "");
    free(text);
    json_decref(err);
    return "application/json";
}

static void reply_http_error(struct hreq *r, unsigned status, const char *msg)
{
    mcp_reply_rpc_error(r, status, NULL, JRPC_INVALID_REQUEST, msg);
}

/* A client-sent name as it may appear in an error text and the log: printable ASCII without
 * quotes or backslashes, at most 100 characters (then "..."), so nothing it sends can forge a
 * log line or grow the answer. */
static void sanitize_client_name(const char *in, char *out, size_t outsz)
{
    size_t n = 0;
    const size_t keep = outsz > 4 ? outsz - 4 : 0;

    for (; *in && n < keep; in++) {
        unsigned char c = (unsigned char)*in;
        out[n++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
    }
    if (*in && outsz >= 4) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

/* 403 naming the refused Host or Origin and the setting that would allow it (also logged: an
 * operator behind a new tunnel name sees why its clients are refused). */
static void reply_name_refused(struct hreq *r, const char *what, const char *value)
{
    char name[104], msg[320];

    sanitize_client_name(value, name, sizeof name);
    snprintf(msg, sizeof msg,
             "Forbidden: %s '%s' is not allowed; add the host name to MCP_PUBLIC_HOSTS "
             "and reload",
             what, name);
    log_event(EV_NAME_REFUSED, LOG_FIELDS(LF_S("header", what), LF_S("value", name)),
              "refused a request with %s '%s': not this server's name nor in MCP_PUBLIC_HOSTS",
              what, name);
    reply_http_error(r, 403, msg);
}

void mcp_http_headers(struct mcp_server *srv, struct hreq *r)
{
    const char *method = hreq_method(r);
    const char *host = hreq_header(r, "Host");
    const char *origin = hreq_header(r, "Origin");
    const char *pv = hreq_header(r, "MCP-Protocol-Version");
    const char *h;
    size_t hlen;
    long port;

    if (host == NULL || *host == '\0') {
        reply_http_error(r, 400, "Bad Request: a Host header is required");
        return;
    }
    if (!hdr_split_hostport(host, &h, &hlen, &port) || !host_allowed(srv, h, hlen, port)) {
        reply_name_refused(r, "Host", host);
        return;
    }
    if (origin && !origin_allowed(srv, origin)) {
        reply_name_refused(r, "Origin", origin);
        return;
    }
    bool post = strcmp(method, "POST") == 0;
    bool get = strcmp(method, "GET") == 0;
    bool del = strcmp(method, "DELETE") == 0;
    if (!post && !(srv->o.sessions && (get || del))) {
        hreq_add_header(r, "Allow", srv->o.sessions ? "GET, POST, DELETE" : "POST");
        reply_http_error(r, 405,
                         get ? "Method Not Allowed: send JSON-RPC requests with POST; "
                               "GET streams need MCP_SESSIONS=1"
                             : "Method Not Allowed: send JSON-RPC requests with POST");
        return;
    }
    /* A POST's version is the body's to tell as well (era.c); a GET or DELETE has only this.
     * 2026-07-28 has neither a GET stream nor sessions to delete. */
    if (pv && !post && strcmp(pv, MODERN_VERSION) == 0) {
        hreq_add_header(r, "Allow", "POST");
        reply_http_error(r, 405,
                         "Method Not Allowed: MCP 2026-07-28 has no GET stream and no "
                         "sessions; send each request with POST");
        return;
    }
    if (pv && !post && !mcp_version_supported(pv)) {
        era_refuse_version(r, NULL);
        return;
    }
    if (post) {
        const char *ct = hreq_header(r, "Content-Type");
        if (ct == NULL || !hdr_media_type_is(ct, "application/json")) {
            reply_http_error(r, 415, "Unsupported Media Type: use application/json");
            return;
        }
        const char *accept = hreq_header(r, "Accept");
        if (accept && !hdr_list_has(accept, "application/json") &&
            !hdr_list_has(accept, "text/event-stream") && !hdr_list_has(accept, "*/*") &&
            !hdr_list_has(accept, "application/*")) {
            reply_http_error(r, 406, "Not Acceptable: accept application/json");
            return;
        }
    }
    if (get) {
        const char *accept = hreq_header(r, "Accept");
        if (accept == NULL || !hdr_list_has(accept, "text/event-stream")) {
            reply_http_error(r, 406, "Not Acceptable: GET needs Accept: text/event-stream");
            return;
        }
    }
}

/* Finds the request's session; replies 400/404 and returns NULL when it cannot be used. */
static struct mcp_session *lookup_session(struct mcp_server *srv, struct hreq *r)
{
    const char *sid = hreq_header(r, "Mcp-Session-Id");
    if (sid == NULL) {
        reply_http_error(r, 400,
                         "Bad Request: Mcp-Session-Id header is required (the one the "
                         "server returned on initialize)");
        return NULL;
    }
    struct mcp_session *s = strmap_get(srv->sessions, sid);
    if (s == NULL) {
        mcp_reply_rpc_error(r, 404, NULL, JRPC_SESSION_NOT_FOUND, "Session not found");
        return NULL;
    }
    s->last_used = loop_now(srv->loop);
    return s;
}

static void http_delete(struct mcp_server *srv, struct hreq *r)
{
    struct mcp_session *s = lookup_session(srv, r);
    if (s == NULL)
        return;
    session_end(srv, s);
    hreq_reply(r, 200, NULL, "", 0);
}

static void http_get(struct mcp_server *srv, struct hreq *r)
{
    struct mcp_session *s = lookup_session(srv, r);
    if (s == NULL)
        return;
    const char *last = hreq_header(r, "Last-Event-ID");
    if (last) {
        unsigned long no, seq;
        char key[32], extra;
        if (sscanf(last, "%lu_%lu%c", &no, &seq, &extra) != 2) {
            reply_http_error(r, 400, "Bad Request: malformed Last-Event-ID");
            return;
        }
        snprintf(key, sizeof key, "%lu", no);
        struct mcp_stream *st = strmap_get(s->streams, key);
        if (st == NULL) {
            reply_http_error(r, 404, "Not Found: no such stream to resume");
            return;
        }
        bool was_get = s->get_stream == st;
        if (st->req)
            stream_detach(st); /* a newer connection takes over */
        stream_attach(st, r);
        if (was_get)
            s->get_stream = st;
        for (struct sse_event *e = st->head; e && !st->dropped; e = e->next)
            if (e->seq > seq && !hreq_stream_write(r, e->text, e->len))
                st->dropped = true; /* the replay itself overflowed: still resumable */
        if (st->closed)
            stream_close(st);
        return;
    }
    if (s->get_stream) {
        reply_http_error(r, 409, "Conflict: this session already has a GET stream");
        return;
    }
    struct mcp_stream *st = stream_new(srv, s);
    s->get_stream = st;
    stream_attach(st, r);
    if (mcp_version_primes(s->version))
        stream_prime(st);
    stream_unref(st); /* the session table and the attached response hold it */
}

static bool batch_allowed(const char *version)
{
    return strcmp(version, "2025-03-26") == 0;
}

void mcp_http_request(struct mcp_server *srv, struct hreq *r)
{
    const char *method = hreq_method(r);
    struct jrpc_why why;
    struct mcp_session *sess = NULL;
    size_t len;
    const char *body;

    if (strcmp(method, "DELETE") == 0) {
        http_delete(srv, r);
        return;
    }
    if (strcmp(method, "GET") == 0) {
        http_get(srv, r);
        return;
    }
    body = hreq_body(r, &len);
    json_t *root = metacache_parse(srv->meta_cache, body, len, &why);
    if (root == NULL) {
        char code[16];
        snprintf(code, sizeof code, "%d", why.code);
        mcp_audit_note(srv, r, NULL, NULL, code);
        mcp_reply_rpc_error(r, 400, why.id, why.code, why.msg);
        json_decref(why.id);
        return;
    }
    if (srv->on_message)
        srv->on_message(r, json_is_array(root) ? json_array_get(root, 0) : root,
                        srv->on_message_arg);
    switch (era_of(r, root)) {
    case ERA_MODERN:
        era_serve(srv, r, root);
        goto out;
    case ERA_UNSUPPORTED:
        mcp_audit_note(srv, r, NULL, NULL, jrpc_err_text(JRPC_UNSUPPORTED_VERSION));
        era_refuse_version(r, root);
        goto out;
    case ERA_LEGACY:
        break;
    }
    bool batch = json_is_array(root);
    json_t *first = batch ? json_array_get(root, 0) : root;
    json_t *first_method = json_object_get(first, "method");
    bool is_init = !batch && jrpc_str(first_method) &&
                   strcmp(json_string_value(first_method), "initialize") == 0;

    const char *pv = hreq_header(r, "MCP-Protocol-Version");
    char version[16];
    if (srv->o.sessions && !is_init) {
        sess = lookup_session(srv, r);
        if (sess == NULL)
            goto out;
        snprintf(version, sizeof version, "%s", sess->version);
    } else if (is_init) {
        json_t *want = json_object_get(json_object_get(root, "params"), "protocolVersion");
        snprintf(version, sizeof version, "%s",
                 jrpc_str(want) && mcp_version_supported(json_string_value(want))
                     ? json_string_value(want)
                     : LATEST_VERSION);
    } else {
        /* Stateless: the header tells the version; the spec says assume 2025-03-26 without. */
        snprintf(version, sizeof version, "%s", pv ? pv : "2025-03-26");
    }
    if (batch && !batch_allowed(version)) {
        mcp_reply_rpc_error(r, 400, NULL, JRPC_INVALID_REQUEST,
                            "Invalid Request: batches are only allowed with protocol 2025-03-26");
        goto out;
    }
    if (batch && json_array_size(root) > MAX_BATCH) {
        mcp_reply_rpc_error(r, 400, NULL, JRPC_INVALID_REQUEST,
                            "Invalid Request: a batch may hold at most 20 messages");
        goto out;
    }

    struct mcp_exchange *ex = exchange_open(srv, r, sess, batch, version);

    struct rpc_ctx x = {.srv = srv, .ex = ex, .sess = sess, .req = r};
    size_t n = batch ? json_array_size(root) : 1;
    if (batch)
        mcp_audit_note(srv, r, "batch", NULL, NULL);
    else if (jrpc_str(first_method))
        mcp_audit_note(srv, r, mcp_audit_method(json_string_value(first_method)), NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        struct jrpc_msg m;
        jrpc_classify(batch ? json_array_get(root, i) : root, &m);
        switch (m.kind) {
        case JRPC_REQUEST:
            ex->nrequests++;
            mcp_dispatch_request(&x, &m);
            break;
        case JRPC_NOTIFICATION:
            mcp_dispatch_notification(&x, &m);
            break;
        case JRPC_RESPONSE:
            mcp_route_response(srv, sess, &m);
            break;
        case JRPC_INVALID:
            if (!batch) {
                /* A lone malformed message is the client's fault at the HTTP level too. */
                char code[16];
                snprintf(code, sizeof code, "%d", m.why.code);
                mcp_audit_note(srv, r, NULL, NULL, code);
                hreq_on_abort(r, NULL, NULL);
                ex->req = NULL;
                mcp_reply_rpc_error(r, 400, m.id, m.why.code, m.why.msg);
            } else {
                mcp_answer(&x, jrpc_error(m.id, m.why.code, m.why.msg));
            }
            break;
        }
    }
    ex->dispatching = false;
    exchange_maybe_finish(ex);
out:
    json_decref(root);
}
