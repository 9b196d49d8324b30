/* mcp.c — MCP engine: HTTP checks, sessions, JSON-RPC dispatch, calls, SSE streams.
 *
 * Objects and who owns them:
 * - session: in the session table until it ends (DELETE, expiry, shutdown); refcounted because
 *   exchanges, calls and streams may outlive its end by a moment.
 * - exchange: one POST carrying requests. Lives until every call in it finished and its answer
 *   went out (or the client left).
 * - call: one request being served by a handler. Freed when it finishes, or when it is cancelled
 *   and the handler had a cancel callback (else when the handler finishes anyway).
 * - stream: an SSE response body with its event ids. In session mode its events are kept
 *   (bounded) so a client can resume it with GET + Last-Event-ID after the connection closed. */
#include "mcp.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "crypto.h"
#include "hdr.h"
#include "httpd.h"
#include "jrpc.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "strmap.h"
#include "utf8.h"

#define MAX_BATCH 20
#define SESSION_IDLE_MS (60u * 60u * 1000u)
#define SWEEP_MS (60u * 1000u)
#define STREAM_KEEP_EVENTS 256
#define SSE_RETRY_MS 1000

static const char *const versions[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
#define LATEST_VERSION "2025-11-25"
static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

struct mcp_session;
struct mcp_exchange;

struct sse_event {
    struct sse_event *next;
    unsigned long seq;
    char *text;
    size_t len;
};

struct mcp_stream {
    struct mcp_server *srv;
    struct mcp_session *sess; /* NULL: not resumable */
    unsigned long no, seq;
    struct hreq *req; /* attached response, or NULL while the client is away */
    struct sse_event *head, *tail;
    size_t nevents;
    bool closed; /* no more events will come */
    unsigned refs;
    struct mcp_exchange *ex; /* the POST exchange that owns it, while it lives */
};

struct mcp_session {
    char id[65];
    char version[16];
    int log_level;
    json_t *client_caps;
    json_t *subs; /* set of subscribed URIs */
    struct strmap *streams; /* resumable streams by number */
    struct mcp_stream *get_stream;
    uint64_t last_used;
    unsigned refs;
    unsigned active; /* calls in flight */
    bool ended;
};

struct outgoing {
    struct outgoing *next; /* in the call's list */
    struct mcp_call *call;
    char key[32];
    mcp_reply_cb *cb;
    void *arg;
};

struct mcp_call {
    struct mcp_server *srv;
    struct mcp_exchange *ex; /* NULL once detached (cancelled without a cancel callback) */
    struct mcp_session *sess;
    json_t *id;
    char *method;
    json_t *progress_token;
    double last_progress;
    bool sent_progress;
    char key[240];
    mcp_cancel_cb *cancel_cb;
    void *cancel_arg;
    struct outgoing *outgoing;
    struct mcp_call *prev, *next; /* in the exchange's list */
    struct mcp_call *all_prev, *all_next; /* in the server's list of live calls */
    struct loop_timer *deadline;
    bool in_flight; /* in srv->inflight under key: a cancel by id can find it */
    bool counted;   /* in srv->ninflight: neither finished nor cancelled */
    unsigned holds; /* >0 while reply callbacks run: freeing waits until they are done */
    bool dead;      /* freed while held */
};

struct mcp_exchange {
    struct mcp_server *srv;
    struct mcp_session *sess;
    struct hreq *req;
    bool batch, accepts_sse, dispatching;
    char version[16];
    json_t *answers; /* array of responses (single: at most one) */
    unsigned nrequests; /* requests it carried (not notifications or responses) */
    unsigned pending;
    struct mcp_call *calls;
    struct mcp_stream *stream;
    char *raw_answer; /* single request: the whole response, already serialised */
    size_t raw_len;
};

struct named {
    char *name;
    json_t *listing; /* what the list method returns for it */
    mcp_handler *handler;
    void *arg;
    char *uri_template; /* templates only */
};

struct registry {
    struct named *v;
    size_t n;
    /* The list method's array as compact JSON, built on first use and dropped whenever the
     * registry changes: tools/list is the hottest read-only call, and serialising every schema
     * anew each time was most of its cost. */
    char *listing_text;
    size_t listing_len;
};

struct mcp_server {
    struct loop *loop;
    struct mcp_opts o;
    char *name, *title, *version, *instructions, *public_hosts;
    char listen_host[256];
    unsigned port;
    struct registry tools, resources, templates, prompts;
    mcp_handler *complete;
    void *complete_arg;
    struct strmap *sessions;
    struct strmap *inflight; /* session id|request id → call (session mode only) */
    size_t ninflight;        /* calls neither finished nor cancelled */
    struct strmap *outgoing; /* key → struct outgoing */
    unsigned long next_stream, next_out;
    struct loop_timer *sweep;
    struct mcp_call *calls; /* every call whose handler has not finished */
    size_t ncalls;
    uint64_t calls_started;
};

static void call_cancel(struct mcp_call *c);
static void ex_maybe_finish(struct mcp_exchange *ex);
static void ex_on_abort(struct hreq *r, void *arg);
static void stream_detach(struct mcp_stream *st);
static void stream_forget(struct mcp_stream *st);
static void stream_unref(struct mcp_stream *st);
static void note_answer(struct hreq *r, json_t *answer);

/* ---------- small helpers ---------- */

static bool version_supported(const char *v)
{
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
        if (strcmp(v, versions[i]) == 0)
            return true;
    return false;
}

static int level_index(const char *level)
{
    for (int i = 0; i < 8; i++)
        if (strcmp(level, log_levels[i]) == 0)
            return i;
    return -1;
}

static void reply_json(struct hreq *r, unsigned status, json_t *msg_take)
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

static void reply_rpc_error(struct hreq *r, unsigned status, json_t *id, int code, const char *msg)
{
    reply_json(r, status, jrpc_error(id, code, msg));
}

/* ---------- sessions ---------- */

static struct mcp_session *sess_ref(struct mcp_session *s)
{
    if (s)
        s->refs++;
    return s;
}

static void sess_unref(struct mcp_session *s)
{
    if (s == NULL || --s->refs > 0)
        return;
    json_decref(s->client_caps);
    json_decref(s->subs);
    strmap_free(s->streams);
    free(s);
}

/* Ends a session: cancels its calls, closes its streams, forgets it. */
static void sess_end(struct mcp_server *srv, struct mcp_session *s)
{
    size_t n;
    void **v;

    if (s->ended)
        return;
    s->ended = true;
    strmap_del(srv->sessions, s->id);
    v = strmap_values(srv->inflight, &n);
    for (size_t i = 0; i < n; i++)
        if (((struct mcp_call *)v[i])->sess == s)
            call_cancel(v[i]);
    free(v);
    v = strmap_values(s->streams, &n);
    for (size_t i = 0; i < n; i++) {
        struct mcp_stream *st = v[i];
        st->closed = true;
        stream_detach(st);
        stream_forget(st);
    }
    free(v);
    s->get_stream = NULL;
    sess_unref(s);
}

static void sweep_sessions(struct loop *l, void *arg)
{
    struct mcp_server *srv = arg;
    size_t n;
    void **v = strmap_values(srv->sessions, &n);

    for (size_t i = 0; i < n; i++) {
        struct mcp_session *s = v[i];
        if (s->active == 0 && s->get_stream == NULL &&
            loop_now(l) - s->last_used > SESSION_IDLE_MS) {
            log_debug("session expired after idling");
            sess_end(srv, s);
        }
    }
    free(v);
    srv->sweep = loop_timer_add(l, SWEEP_MS, sweep_sessions, srv);
}

/* ---------- streams ---------- */

static struct mcp_stream *stream_new(struct mcp_server *srv, struct mcp_session *sess)
{
    struct mcp_stream *st = xcalloc(1, sizeof *st);
    st->srv = srv;
    st->no = ++srv->next_stream;
    st->refs = 1;
    if (sess && !sess->ended) {
        char key[32];
        st->sess = sess_ref(sess);
        snprintf(key, sizeof key, "%lu", st->no);
        strmap_put(sess->streams, key, st);
        st->refs++; /* the session's table */
    }
    return st;
}

static void stream_unref(struct mcp_stream *st)
{
    if (st == NULL || --st->refs > 0)
        return;
    for (struct sse_event *e = st->head, *n; e; e = n) {
        n = e->next;
        free(e->text);
        free(e);
    }
    sess_unref(st->sess);
    free(st);
}

static void stream_on_abort(struct hreq *r, void *arg)
{
    struct mcp_stream *st = arg;
    (void)r;
    st->req = NULL;
    if (st->sess && st->sess->get_stream == st) {
        /* Nothing waits on a standalone stream: forget it rather than keep it forever. */
        st->sess->get_stream = NULL;
        stream_forget(st);
    }
    stream_unref(st);
}

static void stream_attach(struct mcp_stream *st, struct hreq *r)
{
    st->req = r;
    st->refs++;
    hreq_on_abort(r, stream_on_abort, st);
    hreq_add_header(r, "Cache-Control", "no-cache");
    hreq_add_header(r, "X-Accel-Buffering", "no");
    if (st->sess)
        hreq_add_header(r, "Mcp-Session-Id", st->sess->id);
    hreq_stream_start(r, 200, "text/event-stream");
}

static void stream_detach(struct mcp_stream *st)
{
    struct hreq *r = st->req;
    if (r == NULL)
        return;
    st->req = NULL;
    hreq_on_abort(r, NULL, NULL);
    hreq_stream_end(r);
    if (st->ex && st->ex->req == r)
        st->ex->req = NULL; /* the exchange must not touch the ended response again */
    if (st->sess && st->sess->get_stream == st)
        st->sess->get_stream = NULL;
    stream_unref(st);
}

static void stream_emit(struct mcp_stream *st, const char *text, size_t len, unsigned long seq)
{
    if (st->sess) {
        struct sse_event *e = xcalloc(1, sizeof *e);
        e->seq = seq;
        e->text = xstrndup(text, len);
        e->len = len;
        if (st->tail)
            st->tail->next = e;
        else
            st->head = e;
        st->tail = e;
        if (++st->nevents > STREAM_KEEP_EVENTS) {
            struct sse_event *old = st->head;
            st->head = old->next;
            free(old->text);
            free(old);
            st->nevents--;
        }
    }
    if (st->req)
        hreq_stream_write(st->req, text, len);
}

/* A priming event: an id the client can resume from, and how soon to come back. */
static void stream_prime(struct mcp_stream *st)
{
    char text[96];
    unsigned long seq = ++st->seq;
    int n = snprintf(text, sizeof text, "id: %lu_%lu\nretry: %u\ndata: \n\n", st->no, seq,
                     SSE_RETRY_MS);
    stream_emit(st, text, (size_t)n, seq);
}

static void stream_send(struct mcp_stream *st, json_t *msg)
{
    struct buf b;
    char *json = json_dumps(msg, JSON_COMPACT);
    unsigned long seq = ++st->seq;

    buf_init(&b, 0);
    buf_printf(&b, "id: %lu_%lu\ndata: %s\n\n", st->no, seq, json);
    stream_emit(st, b.data, b.len, seq);
    buf_cleanup(&b);
    free(json);
}

/* Drops the session table's hold: the stream can no longer be resumed. */
static void stream_forget(struct mcp_stream *st)
{
    char key[32];
    if (st->sess == NULL)
        return;
    snprintf(key, sizeof key, "%lu", st->no);
    if (strmap_del(st->sess->streams, key) == st)
        stream_unref(st);
}

/* The stream will carry nothing more. If the client is attached it gets everything now and
 * nothing is left to resume; otherwise the events wait for a GET with Last-Event-ID. */
static void stream_close(struct mcp_stream *st)
{
    bool delivered = st->req != NULL;
    st->closed = true;
    stream_detach(st);
    if (delivered)
        stream_forget(st);
}

static bool version_primes(const char *v)
{
    return strcmp(v, "2025-11-25") >= 0;
}

/* ---------- calls ---------- */

static bool ex_ensure_stream(struct mcp_exchange *ex)
{
    if (ex->stream)
        return ex->stream->req != NULL || ex->stream->sess != NULL;
    if (ex->req == NULL || !ex->accepts_sse || ex->batch)
        return false;
    ex->stream = stream_new(ex->srv, ex->sess);
    ex->stream->ex = ex;
    stream_attach(ex->stream, ex->req);
    /* The exchange, not the stream, hears of a hang-up on a POST: it cancels the calls. */
    hreq_on_abort(ex->req, ex_on_abort, ex);
    if (version_primes(ex->version))
        stream_prime(ex->stream);
    return true;
}

static void call_send(struct mcp_call *c, json_t *msg_take)
{
    if (c->ex && ex_ensure_stream(c->ex))
        stream_send(c->ex->stream, msg_take);
    json_decref(msg_take);
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
    if (c->all_prev)
        c->all_prev->all_next = c->all_next;
    else
        c->srv->calls = c->all_next;
    if (c->all_next)
        c->all_next->all_prev = c->all_prev;
    c->srv->ncalls--;
    sess_unref(c->sess);
    json_decref(c->id);
    json_decref(c->progress_token);
    free(c->method);
    free(c);
}

static void ex_unlink(struct mcp_exchange *ex, struct mcp_call *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        ex->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->ex = NULL;
    ex->pending--;
}

/* Hands an answer (may be NULL) to the exchange and takes the call out of it. */
static struct mcp_exchange *call_detach(struct mcp_call *c, json_t *answer_take)
{
    struct mcp_exchange *ex = c->ex;

    loop_timer_cancel(c->deadline);
    c->deadline = NULL;
    if (ex) {
        if (!ex->batch)
            note_answer(ex->req, answer_take);
        if (answer_take && ex->stream)
            stream_send(ex->stream, answer_take);
        else if (answer_take && ex->req)
            json_array_append(ex->answers, answer_take);
        ex_unlink(ex, c);
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
        ex_maybe_finish(ex);
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
        ex_maybe_finish(ex);
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

static void call_cancel(struct mcp_call *c)
{
    call_abort(c, NULL);
}

static void call_deadline(struct loop *l, void *arg)
{
    struct mcp_call *c = arg;
    (void)l;
    c->deadline = NULL;
    log_info("%s call timed out after %u ms", c->method, c->srv->o.call_timeout_ms);
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

void mcp_call_tool_error(struct mcp_call *c, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    utf8_clean(msg); /* %.Ns may have cut a character, or carried client text */
    json_t *sc = json_pack("{s:s, s:s}", "error", code, "message", msg);
    char *text = json_dumps(sc, JSON_COMPACT);
    json_t *result = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text",
                               text, "structuredContent", sc, "isError", 1);
    free(text);
    mcp_call_result_take(c, result);
}

bool mcp_call_progress(struct mcp_call *c, double progress, double total, const char *message)
{
    if (c->progress_token == NULL || c->ex == NULL)
        return false;
    if (c->sent_progress && progress <= c->last_progress)
        return false; /* progress must strictly increase */
    /* Only a stream carries notifications: a client that takes JSON only, or a batch, gets
     * none, and the caller must not believe it got one. */
    if (!ex_ensure_stream(c->ex))
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
    int li = level_index(level);
    int threshold = c->sess ? c->sess->log_level : 1;

    if (li < 0 || li < threshold || c->ex == NULL) {
        json_decref(data_take);
        return;
    }
    json_t *p = json_pack("{s:s, s:o}", "level", level, "data", data_take);
    if (logger)
        json_object_set_new(p, "logger", json_string(logger));
    call_send(c, jrpc_notification("notifications/message", p));
}

bool mcp_call_request(struct mcp_call *c, const char *method, json_t *params_take,
                      mcp_reply_cb *cb, void *arg)
{
    const char *cap = NULL;
    if (strcmp(method, "sampling/createMessage") == 0)
        cap = "sampling";
    else if (strcmp(method, "elicitation/create") == 0)
        cap = "elicitation";
    else if (strcmp(method, "roots/list") == 0)
        cap = "roots";
    if (c->ex == NULL || (cap && c->sess && !json_object_get(c->sess->client_caps, cap)) ||
        !ex_ensure_stream(c->ex)) {
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
    if (ex == NULL || !version_primes(ex->version) || !ex_ensure_stream(ex) ||
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

/* A client's answer to one of our requests. */
static void route_response(struct mcp_server *srv, struct mcp_session *sess, struct jrpc_msg *m)
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

/* ---------- audit notes ---------- */

static const char *const known_methods[] = {
    "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
    "resources/templates/list", "resources/subscribe", "resources/unsubscribe", "prompts/list",
    "prompts/get", "completion/complete", "logging/setLevel", "notifications/initialized",
    "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed"};

/* Method names go to the audit log only when they are ours: a client cannot write there. */
static const char *audit_method(const char *m)
{
    for (size_t i = 0; i < sizeof known_methods / sizeof *known_methods; i++)
        if (strcmp(m, known_methods[i]) == 0)
            return m;
    return "unknown";
}

/* Records the error an answer carries (JSON-RPC code, or a tool's error code). */
static void note_answer(struct hreq *r, json_t *answer)
{
    json_t *err = json_object_get(answer, "error");
    json_t *res = json_object_get(answer, "result");
    char code[24];

    if (r == NULL)
        return;
    if (json_is_object(err)) {
        snprintf(code, sizeof code, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(err, "code")));
        hreq_set_audit(r, NULL, NULL, code);
    } else if (json_is_true(json_object_get(res, "isError"))) {
        const char *c = json_string_value(
            json_object_get(json_object_get(res, "structuredContent"), "error"));
        hreq_set_audit(r, NULL, NULL, c ? c : "tool_error");
    }
}

/* ---------- exchanges ---------- */

static void ex_free(struct mcp_exchange *ex)
{
    if (ex->stream)
        ex->stream->ex = NULL;
    stream_unref(ex->stream);
    sess_unref(ex->sess);
    json_decref(ex->answers);
    free(ex->raw_answer);
    free(ex);
}

static void ex_on_abort(struct hreq *r, void *arg)
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
    while (ex->calls)
        call_cancel(ex->calls);
    ex->dispatching = false;
    ex_maybe_finish(ex);
}

static void ex_maybe_finish(struct mcp_exchange *ex)
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
            reply_json(ex->req, 200, json_incref(ex->answers));
        else
            reply_json(ex->req, 200, json_incref(json_array_get(ex->answers, 0)));
    }
    ex->req = NULL;
    ex->raw_answer = NULL; /* handed over above, or never set */
    ex_free(ex);
}

/* ---------- method handlers ---------- */

static json_t *registry_list(const struct registry *reg, const char *field)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < reg->n; i++)
        json_array_append(arr, reg->v[i].listing);
    return json_pack("{s:o}", field, arr);
}

static const char *registry_text(struct registry *reg, size_t *len)
{
    if (reg->listing_text == NULL) {
        json_t *arr = json_array();
        for (size_t i = 0; i < reg->n; i++)
            json_array_append(arr, reg->v[i].listing);
        reg->listing_text = json_dumps(arr, JSON_COMPACT);
        json_decref(arr);
        if (reg->listing_text == NULL)
            return NULL;
        reg->listing_len = strlen(reg->listing_text);
    }
    *len = reg->listing_len;
    return reg->listing_text;
}

static struct named *registry_find(const struct registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->n; i++)
        if (strcmp(reg->v[i].name, name) == 0)
            return &reg->v[i];
    return NULL;
}

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

/* What a request needs from its HTTP context. */
struct rpc_ctx {
    struct mcp_server *srv;
    struct mcp_exchange *ex;
    struct mcp_session *sess;
    struct hreq *req;
};

static struct mcp_call *call_new(struct rpc_ctx *x, struct jrpc_msg *m)
{
    struct mcp_call *c = xcalloc(1, sizeof *c);
    char idkey[160];

    c->srv = x->srv;
    c->ex = x->ex;
    c->sess = sess_ref(x->sess);
    if (c->sess)
        c->sess->active++;
    c->id = json_incref(m->id);
    c->method = xstrdup(m->method);
    json_t *meta = json_object_get(m->params, "_meta");
    json_t *tok = json_object_get(meta, "progressToken");
    if (json_is_string(tok) || json_is_integer(tok))
        c->progress_token = json_incref(tok);
    c->counted = true;
    x->srv->ninflight++;
    /* Only a session's calls can be cancelled by id (see dispatch_notification). */
    if (x->sess && jrpc_id_key(m->id, idkey, sizeof idkey)) {
        snprintf(c->key, sizeof c->key, "%s|%s", x->sess->id, idkey);
        if (strmap_get(x->srv->inflight, c->key) == NULL) {
            strmap_put(x->srv->inflight, c->key, c);
            c->in_flight = true;
        }
    }
    if (x->srv->o.call_timeout_ms)
        c->deadline = loop_timer_add(x->srv->loop, x->srv->o.call_timeout_ms, call_deadline, c);
    c->next = x->ex->calls;
    if (c->next)
        c->next->prev = c;
    x->ex->calls = c;
    x->ex->pending++;
    c->all_next = x->srv->calls;
    if (c->all_next)
        c->all_next->all_prev = c;
    x->srv->calls = c;
    x->srv->ncalls++;
    x->srv->calls_started++;
    return c;
}

static void start_call(struct rpc_ctx *x, struct jrpc_msg *m, struct named *n, json_t *args)
{
    struct mcp_call *c = call_new(x, m);
    n->handler(c, args, n->arg);
}

static void answer(struct rpc_ctx *x, json_t *msg_take)
{
    /* Answer without a handler: goes where call answers go. */
    if (!x->ex->batch)
        note_answer(x->req, msg_take);
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
        answer(x, jrpc_result(m->id, make_result(arg)));
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
    return registry_list(l->reg, l->field);
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
    char head[64];
    size_t len = 0;
    struct list_arg l = {reg, field};
    const char *text = x->ex->batch ? NULL : registry_text(reg, &len);
    snprintf(head, sizeof head, "{\"%s\":", field);
    answer_text(x, m, head, text, len, "}", make_list, &l);
}

/* Answers -32602 when v is a string holding a NUL character (valid JSON, but no name, URI or
 * version of ours has one, and as a C string it would pass for a shorter one). */
static bool refuse_nul(struct rpc_ctx *x, struct jrpc_msg *m, json_t *v, const char *field)
{
    if (!json_is_string(v) || jrpc_str(v))
        return false;
    char msg[120];
    snprintf(msg, sizeof msg, "Invalid params: %s must not contain a NUL character", field);
    answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, msg));
    return true;
}

static void do_initialize(struct rpc_ctx *x, struct jrpc_msg *m)
{
    struct mcp_server *srv = x->srv;
    json_t *pv = json_object_get(m->params, "protocolVersion");

    if (!json_is_string(pv)) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                             "Invalid params: protocolVersion must be a string"));
        return;
    }
    if (refuse_nul(x, m, pv, "protocolVersion"))
        return;
    const char *want = json_string_value(pv);
    const char *version = version_supported(want) ? want : LATEST_VERSION;

    if (srv->o.sessions) {
        unsigned max = srv->o.max_sessions ? srv->o.max_sessions : 10000;
        if (strmap_count(srv->sessions) >= max) {
            answer(x, jrpc_error(m->id, JRPC_INTERNAL_ERROR,
                                 "Too many sessions; end one with DELETE and retry"));
            return;
        }
        struct mcp_session *s = xcalloc(1, sizeof *s);
        if (!crypto_random_hex(s->id, 32)) {
            free(s);
            answer(x, jrpc_error(m->id, JRPC_INTERNAL_ERROR, "Internal error"));
            return;
        }
        snprintf(s->version, sizeof s->version, "%s", version);
        s->log_level = 1; /* info */
        json_t *caps = json_object_get(m->params, "capabilities");
        /* Only what we look at is kept: a client cannot park megabytes in a session. */
        s->client_caps = json_object();
        static const char *const kept[] = {"sampling", "elicitation", "roots"};
        for (size_t i = 0; i < 3; i++)
            if (json_object_get(caps, kept[i]))
                json_object_set_new(s->client_caps, kept[i], json_object());
        s->subs = json_object();
        s->streams = strmap_new();
        s->refs = 1;
        s->last_used = loop_now(srv->loop);
        strmap_put(srv->sessions, s->id, s);
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
    answer(x, jrpc_result(m->id, result));
}

static void do_tools_call(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *name = json_object_get(m->params, "name");
    json_t *args = json_object_get(m->params, "arguments");
    struct named *t;

    if (!json_is_string(name)) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: name must be a string"));
        return;
    }
    if (refuse_nul(x, m, name, "name"))
        return;
    if (args != NULL && !json_is_object(args) && !json_is_null(args)) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                             "Invalid params: arguments must be an object"));
        return;
    }
    t = registry_find(&x->srv->tools, json_string_value(name));
    if (t == NULL) {
        char msg[200];
        snprintf(msg, sizeof msg, "Unknown tool: %.128s", json_string_value(name));
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, msg));
        return;
    }
    hreq_set_audit(x->req, NULL, t->name, NULL);
    json_t *a = json_is_object(args) ? json_incref(args) : json_object();
    start_call(x, m, t, a);
    json_decref(a);
}

static void do_resources_read(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *uri = json_object_get(m->params, "uri");
    if (!json_is_string(uri)) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: uri must be a string"));
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
    json_t *err = jrpc_error(m->id, JRPC_RESOURCE_NOT_FOUND, "Resource not found");
    json_object_set_new(json_object_get(err, "error"), "data", json_pack("{s:s}", "uri", u));
    answer(x, err);
}

static void do_subscribe(struct rpc_ctx *x, struct jrpc_msg *m, bool on)
{
    json_t *uri = json_object_get(m->params, "uri");
    if (!json_is_string(uri)) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: uri must be a string"));
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
    answer(x, jrpc_result(m->id, json_object()));
}

static void do_prompts_get(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *name = json_object_get(m->params, "name");
    json_t *args = json_object_get(m->params, "arguments");
    if (!json_is_string(name)) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: name must be a string"));
        return;
    }
    if (refuse_nul(x, m, name, "name"))
        return;
    struct named *p = registry_find(&x->srv->prompts, json_string_value(name));
    if (p == NULL) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS, "Invalid params: unknown prompt"));
        return;
    }
    if (args != NULL && !json_is_object(args)) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
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
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                             "Invalid params: ref and argument objects are required"));
        return;
    }
    if (x->srv->complete == NULL) {
        answer(x, jrpc_error(m->id, JRPC_METHOD_NOT_FOUND, "Method not found: completion/complete"));
        return;
    }
    struct named n = {.handler = x->srv->complete, .arg = x->srv->complete_arg};
    start_call(x, m, &n, m->params);
}

static void do_set_level(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *level = json_object_get(m->params, "level");
    int li = jrpc_str(level) ? level_index(json_string_value(level)) : -1;
    if (li < 0) {
        answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                             "Invalid params: level must be one of debug, info, notice, warning, "
                             "error, critical, alert, emergency"));
        return;
    }
    if (x->sess)
        x->sess->log_level = li;
    answer(x, jrpc_result(m->id, json_object()));
}

static void dispatch_request(struct rpc_ctx *x, struct jrpc_msg *m)
{
    const char *method = m->method;

    if (strcmp(method, "initialize") == 0)
        do_initialize(x, m);
    else if (strcmp(method, "ping") == 0)
        answer_text(x, m, "{}", "", 0, "", make_empty, NULL);
    else if (strcmp(method, "tools/list") == 0)
        answer_list(x, m, &x->srv->tools, "tools");
    else if (strcmp(method, "tools/call") == 0)
        do_tools_call(x, m);
    else if (strcmp(method, "resources/list") == 0)
        answer_list(x, m, &x->srv->resources, "resources");
    else if (strcmp(method, "resources/templates/list") == 0)
        answer_list(x, m, &x->srv->templates, "resourceTemplates");
    else if (strcmp(method, "resources/read") == 0)
        do_resources_read(x, m);
    else if (strcmp(method, "resources/subscribe") == 0)
        do_subscribe(x, m, true);
    else if (strcmp(method, "resources/unsubscribe") == 0)
        do_subscribe(x, m, false);
    else if (strcmp(method, "prompts/list") == 0)
        answer_list(x, m, &x->srv->prompts, "prompts");
    else if (strcmp(method, "prompts/get") == 0)
        do_prompts_get(x, m);
    else if (strcmp(method, "completion/complete") == 0)
        do_complete(x, m);
    else if (strcmp(method, "logging/setLevel") == 0)
        do_set_level(x, m);
    else {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.128s", method);
        answer(x, jrpc_error(m->id, JRPC_METHOD_NOT_FOUND, msg));
    }
}

static void dispatch_notification(struct rpc_ctx *x, struct jrpc_msg *m)
{
    if (strcmp(m->method, "notifications/cancelled") == 0) {
        json_t *rid = json_object_get(m->params, "requestId");
        char idkey[160], key[240];
        if (!jrpc_id_key(rid, idkey, sizeof idkey))
            return;
        /* A client may cancel only its own calls, and a cancel that cannot be attributed
         * without doubt cancels nothing. With sessions the caller is its session (an id only
         * that client holds), so session + request id names the call. Stateless there is no
         * identity: behind a tunnel or proxy every peer is 127.0.0.1, every client shares the
         * token and SDK ids start at 0, so one client's cancel would stop another's call. It is
         * ignored; a stateless client cancels by closing its POST (ex_on_abort), which is
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
            call_cancel(c);
        } else {
            log_debug("notifications/cancelled for no call in flight in this session");
        }
    }
    /* notifications/initialized, progress, roots changes: nothing to do. */
}

/* ---------- HTTP ---------- */

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
    return host_allowed(srv, host, hlen, -1) ||
           (port >= 0 && host_allowed(srv, host, hlen, port));
}

static void reply_http_error(struct hreq *r, unsigned status, const char *msg)
{
    reply_rpc_error(r, status, NULL, JRPC_INVALID_REQUEST, msg);
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
    log_warn("refused a request with %s '%s': not this server's name nor in MCP_PUBLIC_HOSTS", what,
             name);
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
    if (pv && !version_supported(pv)) {
        reply_http_error(r, 400, "Bad Request: unsupported MCP-Protocol-Version");
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
        reply_rpc_error(r, 404, NULL, -32001, "Session not found");
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
    sess_end(srv, s);
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
        for (struct sse_event *e = st->head; e; e = e->next)
            if (e->seq > seq)
                hreq_stream_write(r, e->text, e->len);
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
    if (version_primes(s->version))
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
    json_t *root = jrpc_parse(body, len, &why);
    if (root == NULL) {
        char code[16];
        snprintf(code, sizeof code, "%d", why.code);
        hreq_set_audit(r, NULL, NULL, code);
        reply_rpc_error(r, 400, NULL, why.code, why.msg);
        return;
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
                 jrpc_str(want) && version_supported(json_string_value(want))
                     ? json_string_value(want)
                     : LATEST_VERSION);
    } else {
        /* Stateless: the header tells the version; the spec says assume 2025-03-26 without. */
        snprintf(version, sizeof version, "%s", pv ? pv : "2025-03-26");
    }
    if (batch && !batch_allowed(version)) {
        reply_rpc_error(r, 400, NULL, JRPC_INVALID_REQUEST,
                        "Invalid Request: batches are only allowed with protocol 2025-03-26");
        goto out;
    }
    if (batch && json_array_size(root) > MAX_BATCH) {
        reply_rpc_error(r, 400, NULL, JRPC_INVALID_REQUEST,
                        "Invalid Request: a batch may hold at most 20 messages");
        goto out;
    }

    struct mcp_exchange *ex = xcalloc(1, sizeof *ex);
    const char *accept = hreq_header(r, "Accept");
    ex->srv = srv;
    ex->sess = sess_ref(sess);
    ex->req = r;
    ex->batch = batch;
    ex->accepts_sse = accept && hdr_list_has(accept, "text/event-stream");
    ex->answers = json_array();
    ex->dispatching = true;
    snprintf(ex->version, sizeof ex->version, "%s", version);
    hreq_on_abort(r, ex_on_abort, ex);

    struct rpc_ctx x = {.srv = srv, .ex = ex, .sess = sess, .req = r};
    size_t n = batch ? json_array_size(root) : 1;
    if (batch)
        hreq_set_audit(r, "batch", NULL, NULL);
    else if (jrpc_str(first_method))
        hreq_set_audit(r, audit_method(json_string_value(first_method)), NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        struct jrpc_msg m;
        jrpc_classify(batch ? json_array_get(root, i) : root, &m);
        switch (m.kind) {
        case JRPC_REQUEST:
            ex->nrequests++;
            if (batch && strcmp(m.method, "initialize") == 0)
                answer(&x, jrpc_error(m.id, JRPC_INVALID_REQUEST,
                                      "Invalid Request: initialize cannot be batched"));
            else
                dispatch_request(&x, &m);
            break;
        case JRPC_NOTIFICATION:
            dispatch_notification(&x, &m);
            break;
        case JRPC_RESPONSE:
            route_response(srv, sess, &m);
            break;
        case JRPC_INVALID:
            if (!batch) {
                /* A lone malformed message is the client's fault at the HTTP level too. */
                char code[16];
                snprintf(code, sizeof code, "%d", m.why.code);
                hreq_set_audit(r, NULL, NULL, code);
                hreq_on_abort(r, NULL, NULL);
                ex->req = NULL;
                reply_rpc_error(r, 400, m.id, m.why.code, m.why.msg);
            } else {
                answer(&x, jrpc_error(m.id, m.why.code, m.why.msg));
            }
            break;
        }
    }
    ex->dispatching = false;
    ex_maybe_finish(ex);
out:
    json_decref(root);
}

/* ---------- notifications to sessions ---------- */

void mcp_resource_updated(struct mcp_server *s, const char *uri)
{
    size_t n;
    void **v = strmap_values(s->sessions, &n);

    for (size_t i = 0; i < n; i++) {
        struct mcp_session *sess = v[i];
        if (sess->get_stream && json_object_get(sess->subs, uri)) {
            json_t *msg = jrpc_notification("notifications/resources/updated",
                                            json_pack("{s:s}", "uri", uri));
            stream_send(sess->get_stream, msg);
            json_decref(msg);
        }
    }
    free(v);
}

/* ---------- setup ---------- */

static void registry_add(struct registry *reg, const char *name, json_t *listing,
                         mcp_handler *h, void *arg, const char *tpl)
{
    free(reg->listing_text); /* the listing changed */
    reg->listing_text = NULL;
    reg->v = xrealloc(reg->v, (reg->n + 1) * sizeof *reg->v);
    reg->v[reg->n++] = (struct named){.name = xstrdup(name), .listing = listing, .handler = h,
                                      .arg = arg, .uri_template = tpl ? xstrdup(tpl) : NULL};
}

static void registry_cleanup(struct registry *reg)
{
    for (size_t i = 0; i < reg->n; i++) {
        free(reg->v[i].name);
        free(reg->v[i].uri_template);
        json_decref(reg->v[i].listing);
    }
    free(reg->v);
    free(reg->listing_text);
}

static void set_opt_str(json_t *o, const char *key, const char *value)
{
    if (value)
        json_object_set_new(o, key, json_string(value));
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
    registry_add(&s->tools, d->name, t, d->handler, d->arg, NULL);
}

void mcp_add_resource(struct mcp_server *s, const struct mcp_resource_def *d)
{
    json_t *r = json_pack("{s:s, s:s}", "uri", d->uri, "name", d->name);
    set_opt_str(r, "title", d->title);
    set_opt_str(r, "description", d->description);
    set_opt_str(r, "mimeType", d->mime_type);
    registry_add(&s->resources, d->uri, r, d->handler, d->arg, NULL);
}

void mcp_add_template(struct mcp_server *s, const struct mcp_template_def *d)
{
    json_t *r = json_pack("{s:s, s:s}", "uriTemplate", d->uri_template, "name", d->name);
    set_opt_str(r, "title", d->title);
    set_opt_str(r, "description", d->description);
    set_opt_str(r, "mimeType", d->mime_type);
    registry_add(&s->templates, d->name, r, d->handler, d->arg, d->uri_template);
}

void mcp_add_prompt(struct mcp_server *s, const struct mcp_prompt_def *d)
{
    json_t *p = json_pack("{s:s}", "name", d->name);
    set_opt_str(p, "title", d->title);
    set_opt_str(p, "description", d->description);
    if (d->arguments)
        json_object_set_new(p, "arguments", d->arguments);
    registry_add(&s->prompts, d->name, p, d->handler, d->arg, NULL);
}

void mcp_set_completion(struct mcp_server *s, mcp_handler *handler, void *arg)
{
    s->complete = handler;
    s->complete_arg = arg;
}

size_t mcp_tool_count(const struct mcp_server *s)
{
    return s->tools.n;
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
    s->loop = l;
    s->o = *o;
    s->name = xstrdup(o->name);
    s->title = o->title ? xstrdup(o->title) : NULL;
    s->version = xstrdup(o->version);
    s->instructions = o->instructions ? xstrdup(o->instructions) : NULL;
    s->public_hosts = o->public_hosts && *o->public_hosts ? xstrdup(o->public_hosts) : NULL;
    s->sessions = strmap_new();
    s->inflight = strmap_new();
    s->outgoing = strmap_new();
    if (o->sessions)
        s->sweep = loop_timer_add(l, SWEEP_MS, sweep_sessions, s);
    return s;
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

void mcp_abort_streams(struct mcp_server *s, int code, const char *message)
{
    /* One at a time from the head: aborting a call may end others of its exchange, and each
     * abort takes the call out of its exchange, so the search moves on. */
    for (;;) {
        struct mcp_call *c = s->calls;
        while (c && !(c->ex && c->ex->stream))
            c = c->all_next;
        if (c == NULL)
            return;
        call_abort(c, jrpc_error(c->id, code, message));
    }
}

void mcp_free(struct mcp_server *s)
{
    if (s == NULL)
        return;
    size_t n;
    void **v = strmap_values(s->sessions, &n);
    for (size_t i = 0; i < n; i++)
        sess_end(s, v[i]);
    free(v);
    loop_timer_cancel(s->sweep);
    strmap_free(s->sessions);
    strmap_free(s->inflight);
    strmap_free(s->outgoing);
    registry_cleanup(&s->tools);
    registry_cleanup(&s->resources);
    registry_cleanup(&s->templates);
    registry_cleanup(&s->prompts);
    free(s->name);
    free(s->title);
    free(s->version);
    free(s->instructions);
    free(s->public_hosts);
    free(s);
}
