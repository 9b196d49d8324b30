/* hreq.c — one HTTP request as the layers above see it: its answer (whole, or a stream with a
 * capped backlog), its accessors, and its suspension while it waits for an answer, with the
 * hang-up watch MHD lacks for suspended connections. httpd.c runs the MHD side. */
#include "httpd_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "log.h"
#include "mem.h"

/* ---- live list, suspension and hang-up watch ---- */

void hreq_live_add(struct httpd *h, struct hreq *r)
{
    list_push_front(&h->live, &r->link);
    h->nlive++;
}

void hreq_live_del(struct httpd *h, struct hreq *r)
{
    list_unlink(&r->link);
    h->nlive--;
}

void hreq_fire_abort(struct hreq *r)
{
    httpd_cb *cb = r->abort_cb;
    r->abort_cb = NULL;
    if (cb)
        cb(r, r->abort_arg);
}

void hreq_resume(struct hreq *r)
{
    if (!r->suspended)
        return;
    loop_watch_del(r->hup);
    r->hup = NULL;
    r->suspended = false;
    MHD_resume_connection(r->conn);
    /* In external-epoll mode MHD does not reliably wake itself for a resumed connection. */
    httpd_kick(r->h);
}

static void on_hangup(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct hreq *r = arg;
    (void)l, (void)fd, (void)events;
    log_debug("client %s hung up while waiting", r->peer);
    r->state = HREQ_ABORTED;
    hreq_fire_abort(r);
    hreq_resume(r);
}

void hreq_suspend(struct hreq *r)
{
    const union MHD_ConnectionInfo *ci;

    if (r->suspended)
        return;
    MHD_suspend_connection(r->conn);
    r->suspended = true;
    ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    /* MHD does not notice a client leaving while suspended; we do. */
    if (ci)
        r->hup = loop_watch_add(r->h->loop, ci->connect_fd, EPOLLRDHUP, on_hangup, r);
}

/* ---- responses ---- */

static void add_headers(struct hreq *r, struct MHD_Response *resp)
{
    if (r->content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    for (size_t i = 0; i < r->nhdrs; i++)
        MHD_add_response_header(resp, r->hdrs[i].name, r->hdrs[i].value);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *dst, size_t max)
{
    struct hreq *r = cls;
    (void)pos;

    if (r->state == HREQ_ABORTED)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (r->out.len > 0) {
        size_t n = r->out.len < max ? r->out.len : max;
        memcpy(dst, r->out.data, n);
        buf_consume(&r->out, n);
        return (ssize_t)n;
    }
    if (r->stream_ended)
        return MHD_CONTENT_READER_END_OF_STREAM;
    /* Nothing to send yet: park the connection instead of letting MHD poll us. */
    hreq_suspend(r);
    return 0;
}

enum MHD_Result hreq_queue_response(struct hreq *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    if (r->state == HREQ_STREAMING) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, r, NULL);
    } else if (r->reply == NULL) {
        static char empty[1];
        resp = MHD_create_response_from_buffer(0, empty, MHD_RESPMEM_PERSISTENT);
    } else {
        /* The reply's bytes go to MHD as they are (it frees them): no second copy. */
        resp = MHD_create_response_from_buffer(r->reply_len, r->reply, MHD_RESPMEM_MUST_FREE);
        if (resp)
            r->reply = NULL;
    }
    if (resp == NULL)
        return MHD_NO;
    add_headers(r, resp);
    ret = MHD_queue_response(r->conn, r->status, resp);
    MHD_destroy_response(resp);
    r->queued = true;
    return ret;
}

void hreq_add_header(struct hreq *r, const char *name, const char *value)
{
    r->hdrs = xrealloc(r->hdrs, (r->nhdrs + 1) * sizeof *r->hdrs);
    r->hdrs[r->nhdrs++] = (struct resp_header){xstrdup(name), xstrdup(value)};
}

void hreq_reply(struct hreq *r, unsigned status, const char *content_type, const char *body,
                size_t len)
{
    char *copy = NULL;
    if (len) {
        copy = xmalloc(len);
        memcpy(copy, body, len);
    }
    hreq_reply_take(r, status, content_type, copy, len);
}

void hreq_reply_take(struct hreq *r, unsigned status, const char *content_type, char *body,
                     size_t len)
{
    if (r->state == HREQ_REPLIED || r->state == HREQ_STREAMING || r->state == HREQ_ABORTED) {
        free(body);
        return;
    }
    r->status = status;
    free(r->content_type);
    r->content_type = content_type ? xstrdup(content_type) : NULL;
    free(r->reply);
    r->reply = len ? body : NULL;
    r->reply_len = len;
    if (len == 0)
        free(body);
    bool was_waiting = r->state == HREQ_WAITING || r->state == HREQ_HELD;
    r->state = HREQ_REPLIED;
    r->abort_cb = NULL;
    if (was_waiting)
        hreq_resume(r);
}

void hreq_stream_start(struct hreq *r, unsigned status, const char *content_type)
{
    if (r->state != HREQ_HANDLING && r->state != HREQ_WAITING && r->state != HREQ_HELD)
        return;
    r->status = status;
    free(r->content_type);
    r->content_type = xstrdup(content_type);
    bool was_waiting = r->state == HREQ_WAITING || r->state == HREQ_HELD;
    r->state = HREQ_STREAMING;
    if (was_waiting)
        hreq_resume(r);
}

/* The owner hears that its stream was dropped, from the loop: see hreq_stream_write. */
static void abort_dropped_stream(struct loop *l, void *arg)
{
    struct hreq *r = arg;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    (void)l;
    r->abort_later = NULL;
    hreq_fire_abort(r);
    /* A client that reads nothing would never let MHD notice the end: close the socket under
     * it (as conn_expired does), which MHD sees at once. */
    if (ci)
        shutdown(ci->connect_fd, SHUT_RDWR);
    hreq_resume(r);
    httpd_kick(r->h);
}

bool hreq_stream_write(struct hreq *r, const char *data, size_t len)
{
    if (r->state != HREQ_STREAMING || r->stream_ended)
        return false;
    if (r->out.len + len > STREAM_BACKLOG_MAX) {
        /* The client stopped reading: drop it rather than buffer without end. Not by firing
         * the abort here: the writer may be deep inside another callback (libcurl's write
         * callback feeding the SSE decoder feeding progress), and the owner frees what it
         * holds when it hears of the abort. The response is dead from now on (writes are
         * dropped), and the owner hears of it from a 0 ms timer, as redis frees clients
         * asynchronously. */
        log_event(EV_STREAM_DROPPED, LOG_FIELDS(LF_S("peer", r->peer)),
                  "client %s does not read its stream; closing it", r->peer);
        r->state = HREQ_ABORTED;
        if (r->abort_later == NULL)
            r->abort_later = loop_timer_add(r->h->loop, 0, abort_dropped_stream, r);
        return false;
    }
    buf_append(&r->out, data, len);
    hreq_resume(r);
    return true;
}

void hreq_stream_end(struct hreq *r)
{
    if (r->state != HREQ_STREAMING || r->stream_ended)
        return;
    r->stream_ended = true;
    r->abort_cb = NULL;
    hreq_resume(r);
}

void hreq_hold(struct hreq *r)
{
    if (r->state == HREQ_HANDLING)
        r->state = HREQ_HELD; /* on_access parks it once on_headers returns */
}

void hreq_release(struct hreq *r)
{
    if (r->state != HREQ_HELD)
        return;
    r->state = HREQ_RELEASED;
    hreq_resume(r);
}

void hreq_on_abort(struct hreq *r, httpd_cb *cb, void *arg)
{
    r->abort_cb = cb;
    r->abort_arg = arg;
}

void hreq_user_drop(struct hreq *r)
{
    if (r->user && r->user_free)
        r->user_free(r->user);
    r->user = NULL;
    r->user_free = NULL;
}

void hreq_set_user(struct hreq *r, void *user, void (*free_fn)(void *user))
{
    hreq_user_drop(r);
    r->user = user;
    r->user_free = free_fn;
}

void *hreq_user(const struct hreq *r)
{
    return r->user;
}

/* ---- request accessors ---- */

const char *hreq_method(const struct hreq *r)
{
    return r->method;
}

const char *hreq_path(const struct hreq *r)
{
    return r->path;
}

const char *hreq_header(const struct hreq *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

struct count_ctx {
    const char *name;
    unsigned n;
    const char *last;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    struct count_ctx *c = cls;
    (void)kind;
    if (strcasecmp(key, c->name) == 0) {
        c->n++;
        c->last = value;
    }
    return MHD_YES;
}

unsigned hreq_header_count(const struct hreq *r, const char *name)
{
    struct count_ctx c = {name, 0, NULL};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_header, &c);
    return c.n;
}

const char *hreq_header_last(const struct hreq *r, const char *name)
{
    struct count_ctx c = {name, 0, NULL};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_header, &c);
    return c.last;
}

const char *hreq_query(const struct hreq *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *hreq_body(const struct hreq *r, size_t *len)
{
    *len = r->body.len;
    return r->body.data ? r->body.data : "";
}

const char *hreq_peer(const struct hreq *r)
{
    return r->peer;
}

bool hreq_is_head(const struct hreq *r)
{
    return strcmp(r->method, "HEAD") == 0;
}
