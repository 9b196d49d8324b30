/* httpup.c — the Streamable HTTP transport (MCP 2025-11-25) of a url upstream, on the loop's
 * HTTP client (http/httpc.c): each message rpcclient.c sends is one POST with
 * `Accept: application/json, text/event-stream` and the file's headers; the answer is either one
 * JSON message or an SSE stream (progress, then the answer), each message handed to its owner
 * (struct httpup_owner: the upstream's JSON-RPC client) as it arrives. The Mcp-Session-Id the
 * initialize answer carries is sent, with MCP-Protocol-Version, on every later POST, and
 * DELETEd when we stop: every url upstream's at once (one httpc batch, HU_DELETE_TIMEOUT_MS in
 * all), sent when the last transport is freed, so a slow upstream does not hold the others'
 * DELETEs or the exit behind it.
 *
 * Failures map onto the stdio ones so the gateway's recovery stays one path: no connection, a
 * 5xx or a start-up request refused make the upstream down (its calls upstream_unavailable, a
 * restart with backoff, re-listing, pins re-checked); a 404 for our session means the upstream
 * forgot it (it restarted, mcp-proxy #149): we initialize a new session and send that request
 * again, once; a message over the cap fails the call it belongs to. Request deadlines are
 * gwcall.c's (timeout) and upstream.c's (connect_timeout); only connecting is capped here.
 *
 * An answer's event stream may close before the answer (a server switching a long call to
 * polling, the SDK's closeSSEStream; a proxy's idle timeout). When it carried an event id we
 * resume it as the 2025-11-25 spec says: GET with Last-Event-ID, after the stream's retry:
 * (from HU_RESUME_FIRST_MS to HU_RESUME_MAX_DELAY_MS) or a short backoff, and what comes on
 * the new stream is handled as on the first; HU_RESUME_TRIES resumes in a row that bring no
 * message, or HU_RESUME_MAX in all, end the call (one that cannot connect, as any request that
 * cannot, makes the upstream down). A stream with no usable id (none, too long, a control
 * character in it) cannot be resumed: its call fails as before. The call's timeout bounds it
 * all (gwcall.c forgets the request, which ends the wait). Every version before 2026-07-28 is
 * resumed so (2025-03-26 and 2025-06-18 define the same GET).
 *
 * Callbacks from httpc run inside curl, and what they hand to the owner may end this upstream
 * (down -> httpup_reset): a POST whose callback is running is only marked dead then and freed
 * by that callback once the owner returned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "child.h"
#include "httpc.h"
#include "httpup.h"
#include "jrpc.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "sse.h"
#include "utf8.h"

#define HU_MESSAGE_MAX CHILD_LINE_MAX /* one message from the upstream, as for stdio */
/* POSTs at once to one upstream beyond its max_in_flight calls: each call's POST may stay open
 * (an SSE answer), and what it waits for (a relayed answer, notifications/cancelled, the
 * session's initialize or DELETE, a resources/read) must not queue behind them. */
#define HU_PER_ORIGIN_SPARE 8
#define HU_NOTIFY_DEADLINE_MS 10000 /* a notification's POST */
#define HU_DELETE_TIMEOUT_MS 1000   /* ending the sessions at shutdown, all together */
#define HU_RESUME_TRIES 4           /* resumes in a row that bring no message */
#define HU_RESUME_MAX                                                                              \
    32 /* resumes of one call in all: a stream that keeps                                          \
          bringing notes but never the answer ends too */
#define HU_RESUME_FIRST_MS                                                                         \
    100                              /* the backoff without a retry: field, doubling; also         \
                                        the floor of a retry: (retry: 0 is no storm) */
#define HU_RESUME_MAX_DELAY_MS 30000 /* a retry: field is honoured up to this */

static unsigned live_transports; /* the last one freed sends the sessions' DELETEs */

/* One message POSTed (or waiting to be, while the session is renewed). */
struct post {
    struct httpup *hu;
    struct httpc_req *req; /* NULL while held */
    json_t *msg;
    uint64_t id;                     /* a request's id, 0 for a notification or a response */
    bool is_init;                    /* initialize: its answer carries the session */
    bool is_renew;                   /* our own initialize for a new session (not upstream.c's) */
    bool retried;                    /* sent again after a 404 */
    bool with_session;               /* sent with a session id */
    unsigned generation;             /* of the session it was sent with */
    long status;                     /* from the status line */
    bool sse;                        /* the answer is an event stream */
    bool answered;                   /* the answer to id arrived (or the call was failed) */
    bool too_big;                    /* a JSON body over the cap */
    bool in_cb, dead;                /* see the file's comment */
    bool resuming;                   /* the transfer is a GET resuming the answer's stream */
    bool got_event;                  /* the transfer delivered a message */
    char last_event_id[SSE_ID_MAX];  /* where a resume starts */
    long retry_ms;                   /* the stream's retry: field, -1 when none came */
    unsigned resume_misses;          /* resumes in a row that brought no message */
    unsigned resumes;                /* resumes of this call so far */
    struct loop_timer *resume_timer; /* the wait before the next resume */
    struct sse_decoder dec;
    struct buf body;  /* a JSON answer, or an error's body */
    struct list link; /* in the transport's posts or held */
};

struct httpup {
    const struct gw_upstream *cfg;
    struct loop *loop;
    const struct httpup_owner *ops; /* the upstream it carries messages for */
    void *owner;
    struct httpc *http;
    char *session;       /* Mcp-Session-Id, NULL before initialize answered */
    unsigned generation; /* counts the sessions: a 404 for an older one is not news */
    char version[32];    /* the negotiated protocol version, "" before */
    json_t *init_msg;    /* upstream.c's initialize: replayed to renew the session */
    bool renewing;
    struct list posts; /* sent and not finished, the newest first */
    struct list held;  /* waiting for the new session, oldest first */
};

static const char *name_of(const struct httpup *h)
{
    return h->cfg->name;
}

static void post_free(struct post *p)
{
    loop_timer_cancel(p->resume_timer);
    json_decref(p->msg);
    sse_cleanup(&p->dec);
    buf_cleanup(&p->body);
    free(p);
}

static struct post *post_of(struct list *node)
{
    return list_entry(node, struct post, link);
}

static void unlink_post(struct post *p)
{
    list_unlink(&p->link);
}

static void link_post(struct post *p)
{
    list_push_front(&p->hu->posts, &p->link);
}

/* Ends p's transfer (no callback after this); freed now, or by its running callback. */
static void drop(struct post *p)
{
    httpc_cancel(p->req);
    p->req = NULL;
    loop_timer_cancel(p->resume_timer);
    p->resume_timer = NULL;
    unlink_post(p);
    if (p->in_cb)
        p->dead = true;
    else
        post_free(p);
}

/* ---------- what comes back ---------- */

static void renewed(struct httpup *h, json_t *msg);

/* One message of an answer (a JSON body or an SSE event's data), parsed once here for what
 * this transport needs of it and handed on parsed (the owner takes it). */
static void deliver(struct post *p, const char *text, size_t len)
{
    struct httpup *h = p->hu;
    json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL); /* as
                                                                 up_receive: a NUL is valid */
    json_t *id = json_object_get(msg, "id");
    bool is_answer = json_is_integer(id) && !json_object_get(msg, "method") && p->id &&
                     (uint64_t)json_integer_value(id) == p->id;
    if (is_answer)
        p->answered = true;
    if (is_answer && p->is_renew) {
        renewed(h, msg);
        json_decref(msg);
        return;
    }
    if (is_answer && p->is_init) {
        const char *v =
            json_string_value(json_object_get(json_object_get(msg, "result"), "protocolVersion"));
        snprintf(h->version, sizeof h->version, "%s", v ? v : "");
    }
    h->ops->message(h->owner, msg, len, p->id); /* a request on this stream belongs to p's */
}

static void on_event(const char *event, const char *data, size_t len, const char *id, void *arg)
{
    struct post *p = arg;
    if (p->dead)
        return;
    (void)id; /* the resume point is the decoder's last_id, read when the stream ends */
    if ((event[0] && strcmp(event, "message") != 0) || len == 0)
        return; /* a priming event is no progress: it must not keep resumes going */
    p->got_event = true;
    deliver(p, data, len);
}

static void on_header(struct httpc_req *r, const char *line, void *arg)
{
    struct post *p = arg;
    (void)r;
    if (strncmp(line, "HTTP/", 5) == 0) {
        const char *sp = strchr(line, ' ');
        p->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        p->sse = false;
    } else if (strncasecmp(line, "Content-Type:", 13) == 0) {
        p->sse = strstr(line + 13, "text/event-stream") != NULL;
    } else if (strncasecmp(line, "Mcp-Session-Id:", 15) == 0 && (p->is_init || p->is_renew) &&
               p->status >= 200 && p->status < 300) {
        const char *v = line + 15 + strspn(line + 15, " \t");
        size_t n = strcspn(v, " \t");
        bool visible = n > 0 && n < 256;
        for (size_t i = 0; i < n && visible; i++)
            visible = v[i] > 0x20 && v[i] < 0x7f; /* the spec's visible ASCII only */
        if (visible) {
            free(p->hu->session);
            p->hu->session = xstrndup(v, n);
            p->hu->generation++;
        }
    }
}

/* An event stream goes to upstream.c event by event (progress while the call runs). */
static bool on_data(struct httpc_req *r, const char *data, size_t len, void *arg)
{
    struct post *p = arg;
    struct httpup *h = p->hu;
    (void)r;
    bool ok = true;
    p->in_cb = true;
    if (p->sse && p->status >= 200 && p->status < 300) {
        if (!sse_feed(&p->dec, data, len, on_event, p) && !p->dead) {
            char why[80];
            snprintf(why, sizeof why, "answered with a message larger than %u MiB",
                     HU_MESSAGE_MAX >> 20);
            log_warn("upstream %s: an event over %u MiB was dropped (id %llu)", name_of(h),
                     HU_MESSAGE_MAX >> 20, (unsigned long long)p->id);
            if (p->id)
                h->ops->request_failed(h->owner, p->id, why);
            p->answered = true;
            ok = false;
        } else if (p->answered) {
            /* Nothing after the answer concerns this request, and the spec only says the
             * server SHOULD close: a stream kept open would hold a connection for good. */
            ok = false;
        }
    } else if (!buf_append(&p->body, data, len)) {
        p->too_big = true; /* on_done reports it */
        ok = false;
    }
    p->in_cb = false;
    if (p->dead) {
        post_free(p); /* dropped meanwhile; httpc frees r once curl returns */
        return false;
    }
    return ok;
}

/* A request whose answer is an HTTP error, not a message. */
static void request_failed_http(struct post *p, const struct httpc_result *res)
{
    struct httpup *h = p->hu;
    char why[200];
    if (res->timed_out)
        snprintf(why, sizeof why, "could not connect within connect_timeout (%u s)",
                 h->cfg->connect_timeout_s);
    else if (res->failed || res->status == 0) {
        /* why reaches the unauthenticated /readyz and tool errors: curl's generic reason only;
         * its full text (host, address, port) is for the operator's log. */
        log_warn("upstream %s: %s", h->cfg->name, res->error ? res->error : "no answer");
        snprintf(why, sizeof why, "cannot be reached (%.120s)",
                 res->reason ? res->reason : "no answer");
    } else
        snprintf(why, sizeof why, "answered HTTP %ld%s", res->status,
                 p->resuming ? " when its answer was resumed" : "");
    utf8_clean(why);
    if (res->failed || res->timed_out || res->status == 0 || res->status >= 500 || p->is_init ||
        p->is_renew) {
        h->ops->down(h->owner, why);
        return;
    }
    h->ops->request_failed(h->owner, p->id, why);
}

/* Readies p for another transfer of the same request: what the last one read is dropped (a
 * half event of a closed stream is not continued on the next). */
static void post_rewind(struct post *p)
{
    p->status = 0;
    p->sse = false;
    p->got_event = false;
    buf_cleanup(&p->body);
    buf_init(&p->body, HU_MESSAGE_MAX);
    sse_cleanup(&p->dec);
    sse_init(&p->dec, HU_MESSAGE_MAX);
}

static void start_renewal(struct httpup *h);
static bool post_start(struct post *p);
static bool resume_wanted(struct post *p, const struct httpc_result *res);
static void schedule_resume(struct post *p);

static void on_done(struct httpc_req *r, const struct httpc_result *res, void *arg)
{
    struct post *p = arg;
    struct httpup *h = p->hu;
    (void)r;
    p->req = NULL; /* httpc frees it after this */
    p->in_cb = true;
    unlink_post(p);
    bool ok_status = res->status >= 200 && res->status < 300;
    if (resume_wanted(p, res)) {
        schedule_resume(p);
        p->in_cb = false;
        return;
    }
    if (p->id == 0) {
        if (!ok_status && !p->is_renew)
            log_info("upstream %s: a notification got HTTP %ld", name_of(h), res->status);
    } else if (res->status == 404 && p->with_session && !p->retried && !p->is_renew &&
               !p->is_init && !p->resuming) {
        /* The upstream forgot our session: a new one, then this request again. */
        p->retried = true;
        post_rewind(p);
        p->in_cb = false;
        if (p->generation != h->generation && !h->renewing) {
            /* sent before the session was renewed: it only needs the new one */
            if (!post_start(p)) {
                h->ops->request_failed(h->owner, p->id, NULL);
                post_free(p);
            }
            return;
        }
        list_push_back(&h->held, &p->link);
        start_renewal(h);
        return;
    } else if (p->too_big) {
        char why[80];
        snprintf(why, sizeof why, "answered with a message larger than %u MiB",
                 HU_MESSAGE_MAX >> 20);
        log_warn("upstream %s: a message over %u MiB was dropped (id %llu)", name_of(h),
                 HU_MESSAGE_MAX >> 20, (unsigned long long)p->id);
        h->ops->request_failed(h->owner, p->id, why);
        p->answered = true;
    } else if (res->aborted) {
        /* over the cap in an event stream: already answered */
    } else if (ok_status && !p->sse && p->body.len) {
        deliver(p, p->body.data, p->body.len);
    } else if (!ok_status && p->body.len && p->body.data[0] == '{') {
        deliver(p, p->body.data, p->body.len); /* e.g. a JSON-RPC error with a 400 */
    }
    if (p->id && !p->answered && !p->dead && p->hu->ops->alive(p->hu->owner)) {
        if (!ok_status || res->failed || res->timed_out)
            request_failed_http(p, res);
        else
            h->ops->request_failed(h->owner, p->id, "ended its answer without a result");
    }
    post_free(p);
}

/* ---------- sending ---------- */

/* The headers of a request: ours, the session's, the file's (each "Name: value", allocated;
 * free_headers). With last_event_id, those of a GET resuming an answer's stream. */
/* 2026-07-28 mirrors the method, and the tool, prompt or resource it names, in headers. */
static void modern_headers(json_t *msg, char **out, size_t *n)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    const char *name = NULL;
    if (method == NULL || strpbrk(method, "\r\n"))
        return;
    out[(*n)++] = xasprintf("Mcp-Method: %s", method);
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        name = json_string_value(json_object_get(params, "name"));
    else if (strcmp(method, "resources/read") == 0)
        name = json_string_value(json_object_get(params, "uri"));
    if (name && !strpbrk(name, "\r\n"))
        out[(*n)++] = xasprintf("Mcp-Name: %s", name);
}

/* W3C trace context in headers too, from what gwcall.c put in params._meta (checked there:
 * no line breaks). */
static void trace_headers(json_t *msg, char **out, size_t *n)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    const char *tp = json_string_value(json_object_get(meta, "traceparent"));
    const char *ts = json_string_value(json_object_get(meta, "tracestate"));
    if (tp == NULL || strpbrk(tp, "\r\n"))
        return;
    out[(*n)++] = xasprintf("traceparent: %s", tp);
    if (ts && !strpbrk(ts, "\r\n"))
        out[(*n)++] = xasprintf("tracestate: %s", ts);
}

static char **build_headers(struct httpup *h, json_t *msg, const char *last_event_id, size_t *count)
{
    size_t n = 0, max = json_object_size(h->cfg->headers) + 8;
    char **out = xcalloc(max, sizeof *out);
    const char *key;
    json_t *v;
    if (last_event_id) {
        out[n++] = xstrdup("Accept: text/event-stream");
        out[n++] = xasprintf("Last-Event-ID: %s", last_event_id); /* a line of the stream: no
                                                                     CR, LF or NUL in it */
    } else {
        out[n++] = xstrdup("Content-Type: application/json");
        out[n++] = xstrdup("Accept: application/json, text/event-stream");
    }
    if (h->session)
        out[n++] = xasprintf("Mcp-Session-Id: %s", h->session);
    if (h->version[0])
        out[n++] = xasprintf("MCP-Protocol-Version: %s", h->version);
    if (strcmp(h->version, GW_MODERN) == 0)
        modern_headers(msg, out, &n);
    if (msg)
        trace_headers(msg, out, &n);
    json_object_foreach(h->cfg->headers, key, v)
    {
        const char *s = json_string_value(v);
        if (n == max || s == NULL || strpbrk(s, "\r\n") || strpbrk(key, "\r\n: "))
            continue; /* a header cannot carry a line break (the file's check too) */
        out[n++] = xasprintf("%s: %s", key, s);
    }
    *count = n;
    return out;
}

static void free_headers(char **hdr, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        explicit_bzero(hdr[i], strlen(hdr[i])); /* may hold a token */
        free(hdr[i]);
    }
    free(hdr);
}

/* What p's transfers (its POST, the GETs resuming its answer) share. */
static struct httpc_opts transfer_opts(struct post *p, const char *method, char **hdr, size_t n)
{
    return (struct httpc_opts){.method = method,
                               .url = p->hu->cfg->url,
                               .headers = (const char *const *)hdr,
                               .nheaders = n,
                               .connect_timeout_ms = p->hu->cfg->connect_timeout_s * 1000,
                               .on_data = on_data,
                               .on_header = on_header,
                               .on_done = on_done,
                               .arg = p};
}

/* Starts p's POST with the current session; false when curl refused. */
static bool post_start(struct post *p)
{
    struct httpup *h = p->hu;
    size_t n;
    char **hdr = build_headers(h, p->msg, NULL, &n);
    char *body = json_dumps(p->msg, JSON_COMPACT);
    p->with_session = h->session != NULL;
    p->generation = h->generation;
    struct httpc_opts o = transfer_opts(p, "POST", hdr, n);
    o.body = body;
    o.body_len = body ? strlen(body) : 0;
    o.deadline_ms = p->id ? 0 : HU_NOTIFY_DEADLINE_MS;
    p->req = body ? httpc_request(h->http, &o) : NULL;
    free_headers(hdr, n);
    free(body);
    if (p->req == NULL)
        return false;
    link_post(p);
    return true;
}

static struct post *post_new(struct httpup *h, json_t *msg)
{
    struct post *p = xcalloc(1, sizeof *p);
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    p->hu = h;
    p->msg = json_incref(msg);
    if (method && json_is_integer(id))
        p->id = (uint64_t)json_integer_value(id);
    p->is_init = method && strcmp(method, "initialize") == 0;
    p->retry_ms = -1;
    sse_init(&p->dec, HU_MESSAGE_MAX);
    buf_init(&p->body, HU_MESSAGE_MAX);
    return p;
}

void httpup_set_version(struct httpup *h, const char *version)
{
    snprintf(h->version, sizeof h->version, "%s", version);
}

bool httpup_send(struct httpup *h, json_t *msg)
{
    struct post *p = post_new(h, msg);
    if (p->is_init) {
        json_decref(h->init_msg);
        h->init_msg = json_deep_copy(msg);
    }
    if (h->renewing) {
        list_push_back(&h->held, &p->link); /* sent once the new session is there */
        return true;
    }
    if (!post_start(p)) {
        post_free(p);
        return false;
    }
    return true;
}

/* ---------- a new session after a 404 ---------- */

static void start_renewal(struct httpup *h)
{
    if (h->renewing)
        return;
    log_warn("upstream %s: session expired (HTTP 404); initializing a new one", name_of(h));
    h->renewing = true;
    free(h->session);
    h->session = NULL;
    h->version[0] = '\0';
    json_t *msg = json_deep_copy(h->init_msg);
    json_object_set_new(msg, "id", json_integer((json_int_t)h->ops->next_id(h->owner)));
    struct post *p = post_new(h, msg);
    json_decref(msg);
    p->is_renew = true;
    p->is_init = false;
    if (!post_start(p)) {
        post_free(p);
        h->ops->down(h->owner, "cannot send initialize for a new session");
    }
}

/* The new session's initialize answered: the held messages go again with it. */
static void renewed(struct httpup *h, json_t *msg)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(msg, "result"), "protocolVersion"));
    if (v == NULL) {
        h->ops->down(h->owner, "refused initialize for a new session");
        return;
    }
    snprintf(h->version, sizeof h->version, "%s", v);
    h->renewing = false;
    log_info("upstream %s: new session initialized", name_of(h));
    json_t *note = jrpc_notification("notifications/initialized", json_object());
    httpup_send(h, note);
    json_decref(note);
    struct list held;
    list_init(&held);
    list_splice_back(&held, &h->held);
    /* Oldest first, as they were sent. */
    for (struct list *n; (n = list_first(&held)) != NULL;) {
        struct post *p = post_of(n);
        list_unlink(n);
        if (!post_start(p)) {
            uint64_t id = p->id;
            post_free(p);
            if (id)
                h->ops->request_failed(h->owner, id, NULL);
        }
    }
}

/* ---------- resuming an answer's stream ---------- */

/* How long to wait before a resume: the stream's retry: (bounded), else a backoff doubling from
 * HU_RESUME_FIRST_MS with each resume in a row that brought nothing. */
unsigned httpup_resume_delay_ms(long retry_ms, unsigned misses)
{
    if (retry_ms >= 0 && retry_ms < HU_RESUME_FIRST_MS)
        return HU_RESUME_FIRST_MS;
    if (retry_ms >= 0)
        return retry_ms < HU_RESUME_MAX_DELAY_MS ? (unsigned)retry_ms : HU_RESUME_MAX_DELAY_MS;
    unsigned ms = HU_RESUME_FIRST_MS << (misses < 8 ? misses : 8);
    return ms < HU_RESUME_MAX_DELAY_MS ? ms : HU_RESUME_MAX_DELAY_MS;
}

/* An event id fit for a Last-Event-ID header: printable ASCII or UTF-8, no control character
 * (a line end would split the header; strict servers refuse the others). */
static bool id_usable(const char *id)
{
    for (const unsigned char *c = (const unsigned char *)id; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return false;
    return id[0] != '\0';
}

/* A request's stream ended (or its resume could not connect) without the answer, and it can
 * be picked up where it stopped: it carried a usable event id, the session is the one it was
 * sent with, the last resumes did not all bring nothing and the call has not used up its
 * HU_RESUME_MAX. */
static bool resume_wanted(struct post *p, const struct httpc_result *res)
{
    struct httpup *h = p->hu;
    bool ok_status = res->status >= 200 && res->status < 300;
    bool stream_ended = ok_status && p->sse && !res->aborted;
    bool unreachable = p->resuming && (res->failed || res->status == 0 || res->status >= 500);
    if (stream_ended) /* the id as of the stream's last event, one without data too */
        memcpy(p->last_event_id, p->dec.last_id, sizeof p->last_event_id);
    if (p->id == 0 || p->answered || p->dead || p->is_init || p->is_renew ||
        !id_usable(p->last_event_id) || !h->ops->alive(h->owner) ||
        p->generation != h->generation || strcmp(h->version, GW_MODERN) == 0 ||
        !(stream_ended || unreachable) || p->resumes >= HU_RESUME_MAX)
        return false;
    p->resume_misses = p->got_event ? 0 : p->resume_misses + 1;
    return p->resume_misses < HU_RESUME_TRIES;
}

static void resume_now(struct loop *l, void *arg);

/* Waits, then resumes: p stays listed, so a call's end (httpup_forget) or the upstream's
 * (httpup_reset) finds it and cancels the wait. */
static void schedule_resume(struct post *p)
{
    struct httpup *h = p->hu;
    if (p->dec.retry_ms >= 0)
        p->retry_ms = p->dec.retry_ms;
    unsigned delay = httpup_resume_delay_ms(p->retry_ms, p->resume_misses);
    /* Once per call at info: a stream resumed over and over must not flood the log. */
    log_event_at(
        p->resumes == 0 ? LOG_INFO : LOG_DEBUG, EV_UPSTREAM_STREAM_RESUMING,
        LOG_FIELDS(LF_S("upstream", name_of(h)), LF_N("request", p->id), LF_N("delay_ms", delay)),
        "upstream %s: the answer's stream to request %llu ended early; resuming it in %u ms",
        name_of(h), (unsigned long long)p->id, delay);
    p->resumes++;
    post_rewind(p);
    /* The last event id lasts across reconnections (WHATWG): a resumed stream without ids
     * leaves it as it was. */
    memcpy(p->dec.id, p->last_event_id, sizeof p->dec.id);
    memcpy(p->dec.last_id, p->last_event_id, sizeof p->dec.last_id);
    link_post(p);
    p->resume_timer = loop_timer_add(h->loop, delay, resume_now, p);
}

/* GET with Last-Event-ID: the upstream replays what followed and goes on on the new stream. */
static void resume_now(struct loop *l, void *arg)
{
    struct post *p = arg;
    struct httpup *h = p->hu;
    (void)l;
    p->resume_timer = NULL;
    p->resuming = true;
    if (p->generation == h->generation && !h->renewing) {
        size_t n;
        char **hdr = build_headers(h, NULL, p->last_event_id, &n);
        struct httpc_opts o = transfer_opts(p, "GET", hdr, n);
        p->req = httpc_request(h->http, &o);
        free_headers(hdr, n);
        if (p->req)
            return;
    }
    uint64_t id = p->id;
    unlink_post(p);
    post_free(p);
    h->ops->request_failed(h->owner, id, "could not resume its answer");
}

/* ---------- life ---------- */

struct httpup *httpup_new(const struct gw_upstream *cfg, struct loop *l,
                          const struct httpup_owner *ops, void *owner)
{
    struct httpup *h = xcalloc(1, sizeof *h);
    h->cfg = cfg;
    h->loop = l;
    h->ops = ops;
    h->owner = owner;
    list_init(&h->posts);
    list_init(&h->held);
    h->http = httpc_new(l, cfg->max_in_flight + HU_PER_ORIGIN_SPARE);
    live_transports++;
    return h;
}

void httpup_start(struct httpup *h)
{
    httpup_reset(h);
}

void httpup_forget(struct httpup *h, uint64_t id)
{
    LIST_FOREACH(n, &h->posts)
    if (post_of(n)->id == id) {
        drop(post_of(n));
        return;
    }
    LIST_FOREACH(n, &h->held)
    if (post_of(n)->id == id) {
        list_unlink(n);
        post_free(post_of(n));
        return;
    }
}

void httpup_reset(struct httpup *h)
{
    for (struct list *n; (n = list_first(&h->posts)) != NULL;)
        drop(post_of(n));
    for (struct list *n; (n = list_first(&h->held)) != NULL;) {
        list_unlink(n);
        post_free(post_of(n));
    }
    h->renewing = false;
    free(h->session);
    h->session = NULL;
    h->version[0] = '\0';
}

/* The sessions' DELETEs at shutdown: queued as each transport is freed, sent together when the
 * last one is (the loop has stopped by then, so they are waited for, briefly; an upstream that
 * does not answer in time just keeps its session). */
static struct httpc_batch *sessions_to_end;

/* Queues the spec's DELETE of h's session. */
static void queue_session_end(struct httpup *h)
{
    size_t n;
    char **hdr = build_headers(h, NULL, NULL, &n);
    struct httpc_opts o = {.method = "DELETE",
                           .url = h->cfg->url,
                           .headers = (const char *const *)hdr,
                           .nheaders = n,
                           .connect_timeout_ms = HU_DELETE_TIMEOUT_MS};
    if (sessions_to_end == NULL)
        sessions_to_end = httpc_batch_new();
    httpc_batch_add(sessions_to_end, &o, name_of(h));
    free_headers(hdr, n);
}

static void session_ended(const char *name, bool done, const char *error, void *arg)
{
    (void)arg;
    if (done)
        log_event(EV_UPSTREAM_SESSION_ENDED, LOG_FIELDS(LF_S("upstream", name)),
                  "upstream %s: session ended (%s)", name, error ? error : "DELETE sent");
    else
        log_event(EV_UPSTREAM_SESSION_ENDED, LOG_FIELDS(LF_S("upstream", name)),
                  "upstream %s: session ended (no answer to DELETE within %u ms)", name,
                  HU_DELETE_TIMEOUT_MS);
}

void httpup_free(struct httpup *h)
{
    if (h == NULL)
        return;
    struct list live;
    list_init(&live);
    list_splice_back(&live, &h->posts);
    LIST_FOREACH_SAFE(n, &live)
    {
        httpc_cancel(post_of(n)->req);
        post_free(post_of(n));
    }
    if (h->session)
        queue_session_end(h);
    httpup_reset(h);
    httpc_free(h->http);
    json_decref(h->init_msg);
    free(h);
    if (--live_transports == 0) {
        httpc_batch_run(sessions_to_end, HU_DELETE_TIMEOUT_MS, session_ended, NULL);
        sessions_to_end = NULL;
    }
}
