/* exchange.c — exchanges: one POST carrying one request (or a batch, or notifications). It
 * collects the answers of its calls and sends them as one JSON reply, or streams them as SSE
 * when a call has something to say before its answer; a hang-up cancels its calls unless the
 * client can resume the stream. Kept apart so that how a POST is answered reads in one place. */
#include "exchange.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "call.h"
#include "era.h"
#include "hdr.h"
#include "httpd.h"
#include "mem.h"
#include "session.h"
#include "stream.h"

/* The client hung up on the POST (httpd's abort callback). */
static void exchange_on_abort(struct hreq *r, void *arg);

bool exchange_ensure_stream(struct mcp_exchange *ex)
{
    if (ex->stream)
        return ex->stream->req != NULL || ex->stream->sess != NULL;
    if (ex->req == NULL || !ex->accepts_sse || ex->batch)
        return false;
    ex->stream = stream_new(ex->srv, ex->sess);
    ex->stream->ex = ex;
    ex->stream->no_ids = ex->modern;
    stream_attach(ex->stream, ex->req);
    /* The exchange, not the stream, hears of a hang-up on a POST: it cancels the calls. */
    hreq_on_abort(ex->req, exchange_on_abort, ex);
    if (mcp_version_primes(ex->version))
        stream_prime(ex->stream);
    return true;
}

void exchange_unlink(struct mcp_exchange *ex, struct mcp_call *c)
{
    list_unlink(&c->ex_link);
    c->ex = NULL;
    ex->pending--;
}

/* Records the error an answer carries (JSON-RPC code, or a tool's error code). */
void exchange_note_answer(struct mcp_server *srv, struct hreq *r, json_t *answer)
{
    json_t *err = json_object_get(answer, "error");
    json_t *res = json_object_get(answer, "result");
    char code[24];

    if (r == NULL)
        return;
    if (json_is_object(err)) {
        snprintf(code, sizeof code, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(err, "code")));
        mcp_audit_note(srv, r, NULL, NULL, code);
    } else if (json_is_true(json_object_get(res, "isError"))) {
        const char *c =
            json_string_value(json_object_get(json_object_get(res, "structuredContent"), "error"));
        mcp_audit_note(srv, r, NULL, NULL, c ? c : "tool_error");
    }
}

/* ---------- exchanges ---------- */

struct mcp_exchange *exchange_open(struct mcp_server *srv, struct hreq *r, struct mcp_session *sess,
                                   bool batch, const char *version)
{
    struct mcp_exchange *ex = xcalloc(1, sizeof *ex);
    list_init(&ex->calls);
    const char *accept = hreq_header(r, "Accept");
    ex->srv = srv;
    ex->sess = session_ref(sess);
    ex->req = r;
    ex->batch = batch;
    ex->accepts_sse = accept && hdr_list_has(accept, "text/event-stream");
    ex->answers = json_array();
    ex->dispatching = true;
    ex->log_level = -1;
    era_caller(srv, r, ex->caller);
    snprintf(ex->version, sizeof ex->version, "%s", version);
    hreq_on_abort(r, exchange_on_abort, ex);
    return ex;
}

static void ex_free(struct mcp_exchange *ex)
{
    if (ex->stream)
        ex->stream->ex = NULL;
    stream_unref(ex->stream);
    session_unref(ex->sess);
    json_decref(ex->answers);
    json_decref(ex->caps);
    json_decref(ex->input_responses);
    json_decref(ex->input_state);
    free(ex->raw_answer);
    free(ex);
}

static void exchange_on_abort(struct hreq *r, void *arg)
{
    struct mcp_exchange *ex = arg;
    (void)r;
    ex->req = NULL;
    bool resumable = ex->stream && ex->stream->sess;
    if (ex->stream && ex->stream->req) {
        ex->stream->req = NULL;
        stream_unref(ex->stream);
    }
    /* A disconnect is not a cancel when the client can come back for the rest (GET with
     * Last-Event-ID); the spec says so. Without a resumable stream nobody will read the answers,
     * so stop the work. */
    if (resumable)
        return;
    ex->dispatching = true; /* keep ex alive while cancelling */
    while (!list_empty(&ex->calls))
        mcp_call_cancel(list_entry(list_first(&ex->calls), struct mcp_call, ex_link));
    ex->dispatching = false;
    exchange_maybe_finish(ex);
}

void exchange_maybe_finish(struct mcp_exchange *ex)
{
    if (ex->pending > 0 || ex->dispatching)
        return;
    if (ex->stream) {
        stream_close(ex->stream);
    } else if (ex->req) {
        hreq_on_abort(ex->req, NULL, NULL);
        if (ex->raw_answer)
            hreq_reply_take(ex->req, 200, "application/json", ex->raw_answer, ex->raw_len);
        else if (json_array_size(ex->answers) == 0 && ex->nrequests > 0 && ex->accepts_sse)
            hreq_reply(ex->req, 200, "text/event-stream", "", 0); /* all cancelled */
        else if (json_array_size(ex->answers) == 0)
            hreq_reply(ex->req, 202, NULL, "", 0);
        else if (ex->batch)
            mcp_reply_json(ex->req, 200, json_incref(ex->answers));
        else {
            json_t *a = json_array_get(ex->answers, 0);
            if (ex->retry_after_s) {
                /* The status, not only the body, says "try again later": a proxy or a client
                 * that reads no JSON-RPC acts on it. */
                char wait[16];
                snprintf(wait, sizeof wait, "%u", ex->retry_after_s);
                hreq_add_header(ex->req, "Retry-After", wait);
                mcp_reply_json(ex->req, 503, json_incref(a));
            } else if (ex->modern)
                era_reply(ex->srv, ex->req, ex->method, json_incref(a), ex->answer_retry);
            else
                mcp_reply_json(ex->req, 200, json_incref(a));
        }
    }
    ex->req = NULL;
    ex->raw_answer = NULL; /* handed over above, or never set */
    ex_free(ex);
}
