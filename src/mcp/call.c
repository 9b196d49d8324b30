/* call.c — the call lifecycle: a call is one request being served by a handler, from mcp_call_new
 * to exactly one end: its answer, a cancel (the client's, its hang-up, session end), its
 * deadline, or the shutdown's abort. While it runs it may send progress, log messages and
 * requests to the client on its exchange's stream. The ownership rules (who frees a call, and
 * when a reply callback may still run) are subtle, so they live in this one file. */
#include "call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "era.h"
#include "exchange.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "reqstate.h"
#include "session.h"
#include "stream.h"
#include "strmap.h"

static void call_send(struct mcp_call *c, json_t *msg_take)
{
    if (c->ex && exchange_ensure_stream(c->ex))
        stream_send(c->ex->stream, msg_take);
    json_decref(msg_take);
}

void mcp_call_send_notification(struct mcp_call *c, json_t *msg_take)
{
    call_send(c, msg_take);
}

static void outgoing_drop_all(struct mcp_call *c)
{
    while (c->outgoing) {
        struct outgoing *o = c->outgoing;
        c->outgoing = o->next;
        strmap_del(c->srv->outgoing, o->key);
        free(o);
    }
}

/* The call is no longer in flight: a cancel cannot reach it and it is not counted. */
static void call_untrack(struct mcp_call *c)
{
    if (c->in_flight)
        strmap_del(c->srv->inflight, c->key);
    c->in_flight = false;
    if (c->counted)
        c->srv->ninflight--;
    c->counted = false;
    if (c->ticket && c->srv->call_release)
        c->srv->call_release(c->ticket, c->srv->call_gate_arg);
    c->ticket = NULL;
}

void mcp_call_make_lasting(struct mcp_call *c)
{
    loop_timer_cancel(c->deadline);
    c->deadline = NULL;
    call_untrack(c);
    c->srv->ncalls--;
    c->lasting = true;
}

static void call_free(struct mcp_call *c)
{
    if (c->holds) {
        c->dead = true;
        return;
    }
    loop_timer_cancel(c->deadline);
    outgoing_drop_all(c);
    call_untrack(c);
    if (c->sess)
        c->sess->active--;
    list_unlink(&c->srv_link);
    if (!c->lasting)
        c->srv->ncalls--;
    session_unref(c->sess);
    json_decref(c->id);
    json_decref(c->progress_token);
    json_decref(c->caps);
    json_decref(c->params);
    json_decref(c->input_responses);
    json_decref(c->input_state);
    free(c->method);
    free(c->tracestate);
    free(c);
}

/* Hands an answer (may be NULL) to the exchange and takes the call out of it. */
static struct mcp_exchange *call_detach(struct mcp_call *c, json_t *answer_take)
{
    struct mcp_exchange *ex = c->ex;

    loop_timer_cancel(c->deadline);
    c->deadline = NULL;
    if (ex) {
        bool retry = c->input_responses != NULL || c->input_state != NULL;
        /* A lone answer is decorated as it is sent (era_reply); a streamed or batched one
         * here. */
        if (ex->modern && answer_take && (ex->stream || ex->batch))
            era_decorate(ex->srv, c->method, answer_take, retry);
        ex->answer_retry = retry;
        if (!ex->batch)
            exchange_note_answer(ex->srv, ex->req, answer_take);
        if (answer_take && ex->stream)
            stream_send(ex->stream, answer_take);
        else if (answer_take && ex->req)
            json_array_append(ex->answers, answer_take);
        exchange_unlink(ex, c);
    }
    json_decref(answer_take);
    return ex;
}

/* Delivers a call's response (or nothing, when answer is NULL) and frees the call. */
static void call_finish(struct mcp_call *c, json_t *answer_take)
{
    struct mcp_exchange *ex = call_detach(c, answer_take);
    call_free(c);
    if (ex)
        exchange_maybe_finish(ex);
}

/* Ends a call before its handler finished: tells the handler (which must stop its work), and
 * answers with answer_take, or not at all when it is NULL. */
static void call_abort(struct mcp_call *c, json_t *answer_take)
{
    mcp_cancel_cb *cb = c->cancel_cb;

    call_untrack(c);
    if (cb) {
        outgoing_drop_all(c);
        c->cancel_cb = NULL;
        cb(c, c->cancel_arg);
        call_finish(c, answer_take);
        return;
    }
    /* No cancel callback: the handler still holds the call and will finish it; its answer is
     * dropped then. Requests it waits on end now with (NULL, NULL), as mcp.h promises. */
    struct outgoing *pending = c->outgoing;
    c->outgoing = NULL;
    for (struct outgoing *o = pending; o; o = o->next)
        strmap_del(c->srv->outgoing, o->key);
    struct mcp_exchange *ex = call_detach(c, answer_take);
    if (ex)
        exchange_maybe_finish(ex);
    c->holds++;
    while (pending) {
        struct outgoing *o = pending;
        pending = o->next;
        mcp_reply_cb *rcb = o->cb;
        void *rarg = o->arg;
        free(o);
        if (!c->dead)
            rcb(c, NULL, NULL, rarg); /* may finish, and so free, the call */
    }
    if (--c->holds == 0 && c->dead)
        call_free(c);
}

void mcp_call_cancel(struct mcp_call *c)
{
    call_abort(c, NULL);
}

static void call_deadline(struct loop *l, void *arg)
{
    struct mcp_call *c = arg;
    (void)l;
    c->deadline = NULL;
    log_event(EV_CALL_TIMED_OUT,
              LOG_FIELDS(LF_S("method", c->method), LF_N("ms", c->srv->o.call_timeout_ms)),
              "%s call timed out after %u ms", c->method, c->srv->o.call_timeout_ms);
    call_abort(c, jrpc_error(c->id, JRPC_REQUEST_TIMEOUT, "Request timed out"));
}

void mcp_call_result_take(struct mcp_call *c, json_t *result)
{
    call_finish(c, jrpc_result(c->id, result));
}

void mcp_call_error(struct mcp_call *c, int code, const char *message)
{
    call_finish(c, jrpc_error(c->id, code, message));
}

void mcp_call_task_not_found(struct mcp_call *c)
{
    mcp_call_error(c, JRPC_INVALID_PARAMS, "Failed to retrieve task: Task not found");
}

void mcp_call_task_forbidden(struct mcp_call *c)
{
    mcp_call_error(c, JRPC_FORBIDDEN, "Forbidden: this credential lacks the scope the task needs");
}

json_t *mcp_tool_result(json_t *structured)
{
    char *text = json_dumps(structured, JSON_COMPACT);
    json_t *result = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text",
                               text, "structuredContent", structured, "isError", 0);
    free(text);
    return result;
}

void mcp_call_tool_result_take(struct mcp_call *c, json_t *structured)
{
    mcp_call_result_take(c, mcp_tool_result(structured));
}

bool mcp_call_progress(struct mcp_call *c, double progress, double total, const char *message)
{
    if (c->progress_token == NULL || c->ex == NULL)
        return false;
    if (c->sent_progress && progress <= c->last_progress)
        return false; /* progress must strictly increase */
    /* Only a stream carries notifications: a client that takes JSON only, or a batch, gets
     * none, and the caller must not believe it got one. */
    if (!exchange_ensure_stream(c->ex))
        return false;
    json_t *p = json_pack("{s:O, s:f}", "progressToken", c->progress_token, "progress", progress);
    if (total > 0)
        json_object_set_new(p, "total", json_real(total));
    if (message)
        json_object_set_new(p, "message", json_string(message));
    /* Integral values go out as integers: nicer for clients that compare exactly. */
    if (progress == (double)(json_int_t)progress)
        json_object_set_new(p, "progress", json_integer((json_int_t)progress));
    if (total > 0 && total == (double)(json_int_t)total)
        json_object_set_new(p, "total", json_integer((json_int_t)total));
    c->last_progress = progress;
    c->sent_progress = true;
    call_send(c, jrpc_notification("notifications/progress", p));
    return true;
}

void mcp_call_log(struct mcp_call *c, const char *level, const char *logger, json_t *data_take)
{
    int li = mcp_level_index(level);
    /* 2026-07-28: only at the level the request asked for, and nothing when it asked none. */
    int threshold = c->modern ? (c->log_level < 0 ? 99 : c->log_level)
                    : c->sess ? c->sess->log_level
                              : 1;

    if (li < 0 || li < threshold || c->ex == NULL) {
        json_decref(data_take);
        return;
    }
    json_t *p = json_pack("{s:s, s:o}", "level", level, "data", data_take);
    if (logger)
        json_object_set_new(p, "logger", json_string(logger));
    call_send(c, jrpc_notification("notifications/message", p));
}

bool mcp_call_request(struct mcp_call *c, const char *method, json_t *params_take, mcp_reply_cb *cb,
                      void *arg)
{
    const char *cap = NULL;
    if (strcmp(method, "sampling/createMessage") == 0)
        cap = "sampling";
    else if (strcmp(method, "elicitation/create") == 0)
        cap = "elicitation";
    else if (strcmp(method, "roots/list") == 0)
        cap = "roots";
    /* 2026-07-28 has no server-to-client requests: a handler asks with
     * mcp_call_input_required instead. */
    if (c->ex == NULL || c->modern ||
        (cap && c->sess && !json_object_get(c->sess->client_caps, cap)) ||
        !exchange_ensure_stream(c->ex)) {
        json_decref(params_take);
        return false;
    }
    struct outgoing *o = xcalloc(1, sizeof *o);
    unsigned long n = ++c->srv->next_out;
    json_t *id = json_integer((json_int_t)n);
    jrpc_id_key(id, o->key, sizeof o->key);
    o->call = c;
    o->cb = cb;
    o->arg = arg;
    o->next = c->outgoing;
    c->outgoing = o;
    strmap_put(c->srv->outgoing, o->key, o);
    call_send(c, jrpc_request(id, method, params_take));
    json_decref(id);
    return true;
}

bool mcp_call_close_stream(struct mcp_call *c)
{
    struct mcp_exchange *ex = c->ex;
    /* Before 2025-11-25 a server SHOULD NOT close a stream before its response. */
    if (ex == NULL || !mcp_version_primes(ex->version) || !exchange_ensure_stream(ex) ||
        ex->stream->sess == NULL)
        return false;
    ex->req = NULL;
    stream_detach(ex->stream);
    return true;
}

void mcp_call_on_cancel(struct mcp_call *c, mcp_cancel_cb *cb, void *arg)
{
    c->cancel_cb = cb;
    c->cancel_arg = arg;
}

const char *mcp_call_protocol_version(const struct mcp_call *c)
{
    return c->ex ? c->ex->version : LATEST_VERSION;
}

const char *mcp_call_method(const struct mcp_call *c)
{
    return c->method;
}

json_t *mcp_call_progress_token(const struct mcp_call *c)
{
    return c->progress_token;
}

bool mcp_call_is_modern(const struct mcp_call *c)
{
    return c->modern;
}

bool mcp_call_client_supports(const struct mcp_call *c, const char *capability)
{
    if (c->modern)
        return json_object_get(c->caps, capability) != NULL;
    return c->sess && json_object_get(c->sess->client_caps, capability) != NULL;
}

bool mcp_call_client_extension(const struct mcp_call *c, const char *extension)
{
    return c->modern && json_object_get(json_object_get(c->caps, "extensions"), extension);
}

const char *mcp_call_caller(const struct mcp_call *c)
{
    return c->caller;
}

void mcp_caller_label(const char *caller, char *buf, size_t buflen)
{
    char shown[70];
    if (caller == NULL)
        snprintf(shown, sizeof shown, "-");
    else if (strncmp(caller, "p:", 2) == 0)
        snprintf(shown, sizeof shown, "%.64s", caller + 2);
    else if (strcmp(caller, "anonymous") == 0)
        snprintf(shown, sizeof shown, "%s", caller);
    else
        snprintf(shown, sizeof shown, "#%.12s", caller);
    bool ok = shown[0] != '\0' && strcmp(shown, "#") != 0 && strlen(shown) < buflen;
    for (const char *p = shown; ok && *p; p++)
        ok = *p > ' ' && *p < 0x7f; /* one word, never a control character */
    snprintf(buf, buflen, "%s", ok ? shown : "-");
}

json_t *mcp_call_input_responses(const struct mcp_call *c)
{
    return c->input_responses;
}

json_t *mcp_call_input_state(const struct mcp_call *c)
{
    return c->input_state;
}

void mcp_call_error_data(struct mcp_call *c, int code, const char *message, json_t *data_take)
{
    json_t *err = jrpc_error(c->id, code, message);
    if (data_take)
        json_object_set_new(json_object_get(err, "error"), "data", data_take);
    call_finish(c, err);
}

void mcp_call_unavailable(struct mcp_call *c, unsigned retry_after_s, const char *message)
{
    if (retry_after_s == 0)
        retry_after_s = 1;
    if (c->ex) /* read only where the answer is the response's whole body (exchange.c) */
        c->ex->retry_after_s = retry_after_s;
    mcp_call_error_data(c, JRPC_UNAVAILABLE, message,
                        json_pack("{s:I}", "retryAfter", (json_int_t)retry_after_s));
}

void mcp_call_require_capability(struct mcp_call *c, json_t *required_take, const char *what)
{
    char msg[160];
    snprintf(msg, sizeof msg, "Missing required client capability: this request needs %s", what);
    mcp_call_error_data(c, JRPC_MISSING_CAPABILITY, msg,
                        json_pack("{s:o}", "requiredCapabilities", required_take));
}

void mcp_call_input_required(struct mcp_call *c, json_t *requests_take, json_t *state_take)
{
    if (!c->modern) {
        log_error("BUG: an input_required result for a %s request of the session era", c->method);
        json_decref(requests_take);
        json_decref(state_take);
        mcp_call_error(c, JRPC_INTERNAL_ERROR, "Internal error");
        return;
    }
    json_t *result =
        json_pack("{s:s, s:o}", "resultType", "input_required", "inputRequests", requests_take);
    if (state_take) {
        char digest[45];
        reqstate_params_digest(c->method, c->params, digest);
        char *sealed = reqstate_seal(c->srv, c->caller, digest, state_take);
        json_decref(state_take);
        if (sealed == NULL) {
            log_error("BUG: a %s request's state is too large to send back", c->method);
            json_decref(result);
            mcp_call_error(c, JRPC_INTERNAL_ERROR, "Internal error");
            return;
        }
        json_object_set_new(result, "requestState", json_string(sealed));
        free(sealed);
    }
    mcp_call_result_take(c, result);
}

/* A client's answer to one of our requests. */
void mcp_route_response(struct mcp_server *srv, struct mcp_session *sess, struct jrpc_msg *m)
{
    char key[32];
    if (!jrpc_id_key(m->id, key, sizeof key))
        return;
    struct outgoing *o = strmap_get(srv->outgoing, key);
    if (o == NULL || o->call->sess != sess)
        return; /* unknown, late, or another session's: ignore */
    strmap_del(srv->outgoing, key);
    struct mcp_call *c = o->call;
    for (struct outgoing **pp = &c->outgoing; *pp; pp = &(*pp)->next)
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    mcp_reply_cb *cb = o->cb;
    void *arg = o->arg;
    free(o);
    cb(c, m->result, m->error, arg);
}

struct mcp_call *mcp_call_new(struct rpc_ctx *x, struct jrpc_msg *m)
{
    struct mcp_call *c = xcalloc(1, sizeof *c);
    char idkey[160];

    c->srv = x->srv;
    c->ex = x->ex;
    c->sess = session_ref(x->sess);
    if (c->sess)
        c->sess->active++;
    c->id = json_incref(m->id);
    c->method = xstrdup(m->method);
    if (x->ex->modern) {
        c->modern = true;
        c->caps = json_incref(x->ex->caps);
        c->log_level = x->ex->log_level;
        c->params = json_incref(m->params);
        c->input_responses = json_incref(x->ex->input_responses);
        c->input_state = json_incref(x->ex->input_state);
    }
    memcpy(c->caller, x->ex->caller, sizeof c->caller);
    struct otel_span *span =
        x->srv->span_of && x->req ? x->srv->span_of(x->req, x->srv->span_of_arg) : NULL;
    if (otel_span_ctx(span, &c->trace)) {
        const char *ts = otel_span_tracestate(span);
        c->tracer = otel_span_tracer(span);
        c->tracestate = ts ? xstrdup(ts) : NULL;
    }
    json_t *meta = json_object_get(m->params, "_meta");
    json_t *tok = json_object_get(meta, "progressToken");
    if (json_is_string(tok) || json_is_integer(tok))
        c->progress_token = json_incref(tok);
    c->counted = true;
    x->srv->ninflight++;
    /* Only a session's calls can be cancelled by id (see mcp_dispatch_notification). */
    if (x->sess && jrpc_id_key(m->id, idkey, sizeof idkey)) {
        snprintf(c->key, sizeof c->key, "%s|%s", x->sess->id, idkey);
        if (strmap_get(x->srv->inflight, c->key) == NULL) {
            strmap_put(x->srv->inflight, c->key, c);
            c->in_flight = true;
        }
    }
    if (x->srv->o.call_timeout_ms)
        c->deadline = loop_timer_add(x->srv->loop, x->srv->o.call_timeout_ms, call_deadline, c);
    list_push_front(&x->ex->calls, &c->ex_link);
    x->ex->pending++;
    list_push_front(&x->srv->calls, &c->srv_link);
    x->srv->ncalls++;
    x->srv->calls_started++;
    return c;
}

void mcp_abort_streams(struct mcp_server *s, int code, const char *message)
{
    /* One at a time from the head: aborting a call may end others of its exchange, and each
     * abort takes the call out of its exchange, so the search moves on. */
    for (;;) {
        struct mcp_call *found = NULL;
        LIST_FOREACH(node, &s->calls)
        {
            struct mcp_call *c = list_entry(node, struct mcp_call, srv_link);
            if (c->ex && c->ex->stream) {
                found = c;
                break;
            }
        }
        if (found == NULL)
            return;
        call_abort(found, jrpc_error(found->id, code, message));
    }
}

struct otel_span *mcp_call_span(const struct mcp_call *c, const char *name, enum otel_kind kind)
{
    return c && c->tracer ? otel_span_start_in(c->tracer, name, kind, &c->trace, c->tracestate)
                          : NULL;
}
