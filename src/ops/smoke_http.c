/* smoke_http.c — smoke's client: one blocking HTTP exchange (httpc_fetch) whose answer is a
 * JSON body or an SSE stream read up to the JSON-RPC response awaited, and the MCP calls made
 * with it (initialize, tools/call), their errors told as a reason and a fix. */
#include "smoke_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jrpc.h"
#include "mem.h"
#include "toolerr.h"
#include "version.h"

/* ---- HTTP ------------------------------------------------------------------------------- */

static void on_sse_event(const char *event, const char *data, size_t len, const char *id, void *arg)
{
    struct reply *r = arg;
    (void)event;
    (void)id;
    if (r->done || len == 0)
        return;
    json_t *m = json_loadb(data, len, 0, NULL);
    json_t *mid = json_object_get(m, "id");
    if (json_is_integer(mid) && json_integer_value(mid) == r->want_id &&
        (json_object_get(m, "result") || json_object_get(m, "error"))) {
        r->msg = m;
        r->done = true;
        return;
    }
    json_decref(m); /* a notification, a request to us, or not JSON: not what we wait for */
}

/* Returns false to stop reading: the answer is complete, or too large. */
static bool on_body(struct httpc_req *req, const char *p, size_t len, void *arg)
{
    struct reply *r = arg;
    (void)req;
    if (r->done)
        return false; /* we have our answer: stop reading */
    if (!r->started) {
        r->started = true;
        r->is_sse = strncasecmp(r->ctype, "text/event-stream", 17) == 0;
    }
    if (r->is_sse && r->want_id > 0) {
        if (!sse_feed(&r->sse, p, len, on_sse_event, r)) {
            r->too_big = true;
            return false;
        }
        return !r->done;
    }
    if (!buf_append(&r->body, p, len)) {
        r->too_big = true;
        return false;
    }
    return true;
}

static void header_value(const char *p, size_t len, size_t nlen, char *out, size_t outlen)
{
    const char *v = p + nlen + 1;
    size_t vlen = len - nlen - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    if (vlen < outlen)
        snprintf(out, outlen, "%.*s", (int)vlen, v);
}

/* One header line, without its line end. */
static void on_header(struct httpc_req *req, const char *p, void *arg)
{
    struct reply *r = arg;
    size_t len = strlen(p);
    (void)req;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue, say): forget the previous one's headers. */
        r->ctype[0] = r->www_auth[0] = r->session[0] = '\0';
        return;
    }
    const char *colon = memchr(p, ':', len);
    if (colon == NULL)
        return;
    size_t nlen = (size_t)(colon - p);
    if (nlen == 12 && strncasecmp(p, "Content-Type", 12) == 0)
        header_value(p, len, nlen, r->ctype, sizeof r->ctype);
    else if (nlen == 16 && strncasecmp(p, "WWW-Authenticate", 16) == 0)
        header_value(p, len, nlen, r->www_auth, sizeof r->www_auth);
    else if (nlen == 14 && strncasecmp(p, "Mcp-Session-Id", 14) == 0) {
        header_value(p, len, nlen, r->session, sizeof r->session);
        for (const char *c = r->session; *c; c++)
            if (*c < 0x21 || *c > 0x7e) {
                r->session[0] = '\0'; /* not a valid session id: never echo it back */
                break;
            }
    }
}

void smoke_reply_cleanup(struct reply *r)
{
    buf_cleanup(&r->body);
    sse_cleanup(&r->sse);
    json_decref(r->msg);
    r->msg = NULL;
}

void smoke_request(struct smoke *s, const char *method, const char *url, const char *body,
                   size_t len, int flags, json_int_t want_id, struct reply *r)
{
    char auth[400], version[400], session[400];
    const char *h[5];
    size_t nh = 0;

    memset(r, 0, sizeof *r);
    buf_init(&r->body, ANSWER_MAX);
    sse_init(&r->sse, ANSWER_MAX);
    r->want_id = want_id;
    if (flags & H_AUTH) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token);
        h[nh++] = auth;
    }
    if (flags & H_MCP) {
        h[nh++] = "Accept: application/json, text/event-stream";
        h[nh++] = "Content-Type: application/json";
        if (s->version[0]) {
            snprintf(version, sizeof version, "MCP-Protocol-Version: %s", s->version);
            h[nh++] = version;
        }
        if (s->session[0]) {
            snprintf(session, sizeof session, "Mcp-Session-Id: %s", s->session);
            h[nh++] = session;
        }
    }
    struct httpc_opts o = {.method = method,
                           .url = url,
                           .headers = h,
                           .nheaders = nh,
                           .body = body,
                           .body_len = len,
                           .user_agent = "hermes-mcp-smoke/" HM_VERSION,
                           .ca_file = s->cacert,
                           .connect_timeout_ms =
                               (unsigned)(s->timeout_s < 10 ? s->timeout_s * 1000 : 10000L),
                           .deadline_ms = (unsigned)(s->timeout_s * 1000),
                           .on_data = on_body,
                           .on_header = on_header,
                           .arg = r};
    struct httpc_result res;
    httpc_fetch(s->http, &o, &res);
    if (flags & H_AUTH)
        explicit_bzero(auth, sizeof auth);
    r->status = res.status;
    /* Stopped reading because the answer was complete: that is success. */
    r->failed = res.failed || res.timed_out || (res.aborted && !r->done);
    r->timed_out = res.timed_out;
    r->cert_untrusted = res.cert_untrusted;
    if (r->failed)
        snprintf(r->error, sizeof r->error, "%s", res.error ? res.error : "");
    if (!r->failed && !r->is_sse && want_id > 0 && r->body.len > 0) {
        json_t *m = json_loadb(r->body.data, r->body.len, 0, NULL);
        json_t *mid = json_object_get(m, "id");
        if (json_is_integer(mid) && json_integer_value(mid) == want_id)
            r->msg = m;
        else
            json_decref(m);
    }
}

/* The transport problem of r as one line, or NULL when the exchange completed. */
const char *smoke_transport_error(struct smoke *s, struct reply *r, char *out, size_t outlen)
{
    if (r->too_big) {
        snprintf(out, outlen, "the answer is larger than %d MiB", ANSWER_MAX / (1024 * 1024));
        return out;
    }
    if (!r->failed)
        return NULL;
    smoke_clean_text(s, r->error, strlen(r->error), out, outlen);
    return out;
}

/* A short excerpt of an error answer: its "message" when it is JSON, else its first bytes. */
void smoke_answer_excerpt(struct smoke *s, struct reply *r, char *out, size_t outlen)
{
    json_t *j = r->body.len ? json_loadb(r->body.data, r->body.len, 0, NULL) : NULL;
    json_t *m = json_object_get(j, "message");
    if (!json_is_string(m))
        m = json_object_get(json_object_get(j, "error"), "message");
    if (json_is_string(m))
        smoke_clean_text(s, json_string_value(m), json_string_length(m), out,
                         outlen < 160 ? outlen : 160);
    else if (r->body.len)
        smoke_clean_text(s, r->body.data, r->body.len, out, outlen < 120 ? outlen : 120);
    else
        snprintf(out, outlen, "empty body");
    json_decref(j);
}

/* What to do about an unexpected HTTP status on /mcp. */
void smoke_status_fix(struct smoke *s, long status, char *out, size_t outlen)
{
    if (status == 401 && strcmp(s->token_source, s->env_file) != 0)
        snprintf(out, outlen,
                 "the token in %.200s is not one this server accepts (expired, revoked, or "
                 "another server's); give a current one",
                 s->token_source);
    else if (status == 401)
        snprintf(out, outlen,
                 "the token in %s is not the server's; point --env-file at the env file "
                 "'hermes-mcp serve' reads (after 'token gen' restart the server, or use "
                 "'token rotate')",
                 s->env_file);
    else if (status == 403)
        snprintf(out, outlen,
                 "the server refuses this Host or Origin; add the public host name "
                 "to MCP_PUBLIC_HOSTS in the server's env file");
    else if (status == 404)
        snprintf(out, outlen,
                 "nothing serves /mcp there; --base should be the server's root URL, "
                 "for example http://127.0.0.1:8765");
    else if (status == 429)
        snprintf(out, outlen,
                 "rate limited; wait a minute, or raise RATE_LIMIT_PER_MIN in the "
                 "server's env file");
    else if (status >= 500)
        snprintf(out, outlen,
                 "the server or a tunnel in front of it failed; check that "
                 "hermes-mcp is running and read its log");
    else
        snprintf(out, outlen, "the server refused the request; read its log");
}

/* Sends one JSON-RPC request and returns its "result" object (new reference), or NULL with
 * s->why and s->fix set. params is stolen. */
json_t *smoke_rpc(struct smoke *s, const char *method, json_t *params)
{
    struct reply r;
    char terr[400], ex[200];
    json_int_t id = ++s->next_id;
    json_t *wire_id = json_integer(id);
    json_t *req = jrpc_request(wire_id, method, params); /* takes params, NULL: none */
    json_t *result = NULL;

    json_decref(wire_id);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    smoke_request(s, "POST", s->mcp_url, body, strlen(body), H_AUTH | H_MCP, id, &r);
    free(body);
    if (smoke_transport_error(s, &r, terr, sizeof terr)) {
        if (r.timed_out)
            smoke_problem(s, "raise --timeout, or check the agent and the server's log",
                          "no answer within %ld s", s->timeout_s);
        else
            smoke_problem(s, "is hermes-mcp still running? check --base", "%s", terr);
        goto out;
    }
    if (r.status != 200) {
        smoke_answer_excerpt(s, &r, ex, sizeof ex);
        smoke_status_fix(s, r.status, s->fix, sizeof s->fix);
        snprintf(s->why, sizeof s->why, "HTTP %ld (%s)", r.status, ex);
        goto out;
    }
    if (r.msg == NULL) {
        char ct[61];
        smoke_problem(s, "check that --base points at hermes-mcp and not at another service",
                      "no JSON-RPC response with id %lld in the answer (Content-Type '%s')",
                      (long long)id, smoke_cut(s, r.ctype, ct, sizeof ct));
        goto out;
    }
    json_t *err = json_object_get(r.msg, "error");
    if (err) {
        json_t *m = json_object_get(err, "message");
        const char *msg = json_is_string(m) ? json_string_value(m) : "";
        smoke_clean_text(s, msg, strlen(msg), ex, sizeof ex);
        smoke_problem(s, "read the server's log; is --base a hermes-mcp of this version?",
                      "JSON-RPC error %lld: %s",
                      (long long)json_integer_value(json_object_get(err, "code")), ex);
        goto out;
    }
    result = json_object_get(r.msg, "result");
    if (!json_is_object(result)) {
        result = NULL;
        smoke_problem(s, "check that --base points at hermes-mcp",
                      "the response has no result object");
        goto out;
    }
    json_incref(result);
    if (r.session[0] && !s->session[0])
        snprintf(s->session, sizeof s->session, "%s", r.session);
out:
    smoke_reply_cleanup(&r);
    return result;
}

/* Calls a tool. Returns its structured result (new reference; from the text content when the
 * server gave no structuredContent) and whether it is a tool error, or NULL with s->why. */
json_t *smoke_call_tool(struct smoke *s, const char *name, json_t *args, bool *is_error)
{
    json_t *res =
        smoke_rpc(s, "tools/call", json_pack("{s:s, s:o}", "name", name, "arguments", args));
    if (res == NULL)
        return NULL;
    *is_error = json_is_true(json_object_get(res, "isError"));
    json_t *sc = json_object_get(res, "structuredContent");
    if (json_is_object(sc)) {
        json_incref(sc);
    } else {
        json_t *text = json_object_get(json_array_get(json_object_get(res, "content"), 0), "text");
        sc = json_is_string(text) ? json_loads(json_string_value(text), 0, NULL) : NULL;
        if (!json_is_object(sc)) {
            json_decref(sc);
            sc = NULL;
            smoke_problem(s, "check that --base points at hermes-mcp of this version",
                          "the %s result carries no JSON object", name);
        }
    }
    json_decref(res);
    return sc;
}

const char *smoke_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The "error: message" of a tool error, cleaned, into s->why. */
void smoke_tool_error_why(struct smoke *s, const char *prefix, json_t *sc)
{
    char msg[300], code[41];
    const char *m = smoke_str(sc, "message");
    smoke_clean_text(s, m ? m : "", m ? strlen(m) : 0, msg, sizeof msg);
    const char *error = smoke_str(sc, "error");
    snprintf(s->why, sizeof s->why, "%stool error %s: %s", prefix,
             smoke_cut(s, error ? error : "(no code)", code, sizeof code), msg);
}
