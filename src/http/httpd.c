/* httpd.c — libmicrohttpd in external-epoll mode, suspend/resume, streaming, hang-up detection.
 *
 * MHD's own epoll fd is nested in our loop: whenever it is readable, or MHD's timeout expires, we
 * call MHD_run(). Resuming a connection writes to MHD's inter-thread pipe, which is in that epoll
 * set, so a reply given from any loop callback wakes MHD by itself. One request's side (its
 * answer, stream and accessors, its suspension) is hreq.c. */
#include "httpd_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mem.h"

static void httpd_pump(struct httpd *h);
static void conn_arm(struct conn *c, unsigned ms);

void httpd_stats(const struct httpd *h, struct httpd_stats *st)
{
    const union MHD_DaemonInfo *di =
        h->mhd ? MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
    memset(st, 0, sizeof *st);
    st->connections = di ? di->num_connections : 0;
    st->requests = h->nlive;
    LIST_FOREACH(node, &h->live)
    {
        const struct hreq *r = list_entry(node, struct hreq, link);
        st->waiting += r->state == HREQ_WAITING || r->state == HREQ_HELD;
        st->streaming += r->state == HREQ_STREAMING;
    }
}

/* ---- per-connection deadlines ---- */

static struct conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void conn_expired(struct loop *l, void *arg)
{
    struct conn *c = arg;
    (void)l;
    c->deadline = NULL;
    log_debug("closing a connection that sent its request too slowly");
    /* MHD has no call to drop a connection; a shut-down socket makes it close it at once. */
    shutdown(c->fd, SHUT_RDWR);
    httpd_kick(c->h);
}

/* (Re)arms the connection's deadline; 0 disarms it. */
static void conn_arm(struct conn *c, unsigned ms)
{
    if (c == NULL)
        return;
    loop_timer_cancel(c->deadline);
    c->deadline = ms ? loop_timer_add(c->h->loop, ms, conn_expired, c) : NULL;
}

static void peer_text(struct MHD_Connection *mc, char *out, size_t outlen)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    out[0] = '\0';
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                      (socklen_t)outlen);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                      (socklen_t)outlen);
    }
    if (out[0] == '\0')
        snprintf(out, outlen, "unknown");
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct httpd *h = cls;
    struct conn *c = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        c = xcalloc(1, sizeof *c);
        c->h = h;
        c->fd = ci ? ci->connect_fd : -1;
        peer_text(mc, c->peer, sizeof c->peer);
        *socket_context = c;
        conn_arm(c, h->o.header_timeout_ms);
    } else if (c) {
        loop_timer_cancel(c->deadline);
        free(c);
        *socket_context = NULL;
    }
}

/* ---- MHD callbacks ---- */

/* An answer httpd gives on its own: worded by the owner (error_body), else plain text. */
static void reply_error(struct hreq *r, unsigned status, const char *msg)
{
    char body[256];
    const char *type = "text/plain; charset=utf-8";

    if (r->h->o.error_body)
        type = r->h->o.error_body(body, sizeof body, msg);
    else
        snprintf(body, sizeof body, "%s\n", msg);
    hreq_reply(r, status, type, body, strlen(body));
}

/* 503 while shutting down: the client may come back to the next instance soon. */
static void reply_unavailable(struct hreq *r)
{
    hreq_add_header(r, "Retry-After", RETRY_AFTER_S);
    reply_error(r, 503, "Server is shutting down; retry after the Retry-After seconds");
}

static struct hreq *hreq_new(struct httpd *h, struct MHD_Connection *conn, const char *method,
                             const char *url)
{
    struct hreq *r = xcalloc(1, sizeof *r);

    r->h = h;
    r->conn = conn;
    r->method = method;
    r->path = url;
    r->started_ms = loop_now(h->loop);
    buf_init(&r->body, h->o.max_body);
    buf_init(&r->out, 0);
    struct conn *c = conn_of(conn);
    if (c)
        memcpy(r->peer, c->peer, sizeof r->peer);
    else
        peer_text(conn, r->peer, sizeof r->peer);
    hreq_live_add(h, r);
    return r;
}

static void hreq_free(struct hreq *r)
{
    hreq_user_drop(r);
    loop_watch_del(r->hup);
    loop_timer_cancel(r->abort_later);
    buf_cleanup(&r->body);
    buf_cleanup(&r->out);
    free(r->reply);
    free(r->content_type);
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].name);
        free(r->hdrs[i].value);
    }
    free(r->hdrs);
    free(r);
}

/* After a callback returned: send what it produced, or park the connection. */
static enum MHD_Result settle(struct hreq *r)
{
    switch (r->state) {
    case HREQ_REPLIED:
    case HREQ_STREAMING:
        return r->queued ? MHD_YES : hreq_queue_response(r);
    case HREQ_ABORTED:
        return MHD_NO;
    case HREQ_HANDLING:
        if (r->h->stopping) {
            hreq_fire_abort(r); /* the owner holds r: let it drop it before httpd answers */
            reply_unavailable(r);
            return hreq_queue_response(r);
        }
        r->state = HREQ_WAITING;
        hreq_suspend(r);
        return MHD_YES;
    default:
        return MHD_YES;
    }
}

static enum MHD_Result find_control(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    bool *bad = cls;
    (void)kind;
    for (const char *p = value ? value : ""; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            *bad = true;
    for (const char *p = key; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            *bad = true;
    return *bad ? MHD_NO : MHD_YES;
}

/* MHD lets a bare CR (or other controls) through inside header values; we do not. */
static bool headers_malformed(struct hreq *r)
{
    bool bad = false;
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, find_control, &bad);
    return bad;
}

static bool content_length_conflict(struct hreq *r)
{
    return hreq_header_count(r, MHD_HTTP_HEADER_CONTENT_LENGTH) > 1;
}

/* The headers are in: the owner judges them (authentication, routing) before how big the body
 * is. True when the body is to be read; false with what to tell MHD in *res. */
static bool judge_headers(struct httpd *h, struct hreq *r, enum MHD_Result *res)
{
    if (h->o.on_headers)
        h->o.on_headers(r, h->o.arg);
    if (r->state == HREQ_HELD) {
        conn_arm(conn_of(r->conn), 0); /* waiting on us is not the client's fault */
        hreq_suspend(r);
        *res = MHD_YES;
        return false;
    }
    if (r->state != HREQ_HANDLING) {
        *res = settle(r);
        return false;
    }
    const char *cl = hreq_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > h->o.max_body) {
        reply_error(r, 413, "Request body too large");
        *res = hreq_queue_response(r);
        return false;
    }
    r->state = HREQ_READING;
    return true;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    struct httpd *h = cls;
    struct hreq *r = *con_cls;
    (void)version;

    if (r == NULL) {
        r = hreq_new(h, conn, method, url);
        *con_cls = r;
        r->state = HREQ_HANDLING;
        conn_arm(conn_of(conn), h->o.body_timeout_ms);
        if (h->draining) {
            /* A new request on a kept-alive connection: not ours to start any more. */
            hreq_add_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
            reply_unavailable(r);
            return hreq_queue_response(r);
        }
        const char *te = hreq_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if (content_length_conflict(r) || (te && hreq_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH))) {
            /* Two framings for one body is how requests get smuggled past proxies. */
            reply_error(r, 400, "Conflicting Content-Length or Transfer-Encoding headers");
            return hreq_queue_response(r);
        }
        if (headers_malformed(r)) {
            reply_error(r, 400, "Control characters in a header");
            return hreq_queue_response(r);
        }
        if (te && strcasecmp(te, "chunked") != 0) {
            reply_error(r, 400, "Unsupported Transfer-Encoding");
            return hreq_queue_response(r);
        }
        enum MHD_Result res;
        return judge_headers(h, r, &res) ? MHD_YES : res;
    }
    if (r->state == HREQ_RELEASED) {
        /* Released after a hold: MHD repeats the call it was suspended in, the headers' one
         * (nothing of the body has been read yet), so the headers are judged again. */
        r->state = HREQ_HANDLING;
        conn_arm(conn_of(conn), h->o.body_timeout_ms); /* the body's time starts now */
        enum MHD_Result res;
        return judge_headers(h, r, &res) ? MHD_YES : res;
    }
    if (r->state == HREQ_READING) {
        if (*upload_size > 0) {
            if (!r->too_big && !buf_append(&r->body, upload, *upload_size)) {
                r->too_big = true;
                buf_cleanup(&r->body);
            }
            if (r->too_big) {
                /* MHD 0.9.75 cannot answer in the middle of a body: drop what comes (nothing
                 * is stored) and answer 413 at its end; a body far past the cap is cut off. */
                r->discarded += *upload_size;
                if (r->discarded > 4 * h->o.max_body)
                    return MHD_NO;
            }
            *upload_size = 0;
            return MHD_YES;
        }
        conn_arm(conn_of(conn), 0); /* all in: waiting on us is not the client's fault */
        if (r->too_big) {
            r->state = HREQ_HANDLING;
            reply_error(r, 413, "Request body too large");
            return hreq_queue_response(r);
        }
        r->state = HREQ_HANDLING;
        h->o.on_request(r, h->o.arg);
        return settle(r);
    }
    if (*upload_size > 0) { /* body still arriving after an early answer: drop it */
        *upload_size = 0;
        return MHD_YES;
    }
    return settle(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct httpd *h = cls;
    struct hreq *r = *con_cls;

    if (r == NULL)
        return;
    *con_cls = NULL;
    if (r->abort_cb && !(r->state == HREQ_STREAMING && r->stream_ended)) {
        r->state = HREQ_ABORTED;
        hreq_fire_abort(r);
    }
    if (h->o.on_done) {
        bool sent = r->queued && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
        h->o.on_done(r, sent ? r->status : 0, loop_now(h->loop) - r->started_ms, h->o.arg);
    }
    /* The next request on this keep-alive connection gets a fresh header deadline. */
    conn_arm(conn_of(conn), h->o.header_timeout_ms);
    hreq_live_del(h, r);
    hreq_free(r);
}

/* Paths are matched as sent: no %-decoding, so "/mcp%00" or "/%2e%2e/" never become ours. */
static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls, (void)c;
    return strlen(s);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    (void)cls;
    vsnprintf(line, sizeof line, fmt, ap);
    log_debug("httpd: %s", line);
}

/* ---- daemon in the loop ---- */

static void on_timer(struct loop *l, void *arg)
{
    struct httpd *h = arg;
    (void)l;
    h->timer = NULL;
    httpd_pump(h);
}

static void httpd_pump(struct httpd *h)
{
    MHD_UNSIGNED_LONG_LONG ms;

    h->in_pump = true;
    h->kick = false;
    MHD_run(h->mhd);
    h->in_pump = false;
    loop_timer_cancel(h->timer);
    h->timer = NULL;
    if (h->kick)
        h->timer = loop_timer_add(h->loop, 0, on_timer, h);
    else if (MHD_get_timeout(h->mhd, &ms) == MHD_YES)
        h->timer = loop_timer_add(h->loop, ms, on_timer, h);
}

/* Runs MHD again on the next loop iteration (a connection was resumed). */
void httpd_kick(struct httpd *h)
{
    h->kick = true;
    if (h->in_pump || h->mhd == NULL)
        return;
    loop_timer_cancel(h->timer);
    h->timer = loop_timer_add(h->loop, 0, on_timer, h);
}

static void on_mhd_fd(struct loop *l, int fd, uint32_t events, void *arg)
{
    (void)l, (void)fd, (void)events;
    httpd_pump(arg);
}

static int open_listener(const char *host, unsigned port, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[16];
    int fd = -1, one = 1;

    snprintf(portstr, sizeof portstr, "%u", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve listen address %s: %s", host, gai_strerror(rc));
        return -1;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 4096) == 0)
            break;
        snprintf(err, errlen, "cannot listen on %s:%u: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static unsigned socket_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;

    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

struct httpd *httpd_new(struct loop *l, const struct httpd_opts *o, char *err, size_t errlen)
{
    struct httpd *h = xcalloc(1, sizeof *h);
    const union MHD_DaemonInfo *di;
    int fd = o->listen_fd;

    h->loop = l;
    h->o = *o;
    h->lfd = MHD_INVALID_SOCKET;
    list_init(&h->live);
    if (fd < 0)
        fd = open_listener(o->host, o->port, err, errlen);
    if (fd < 0)
        goto fail;
    h->port = socket_port(fd);
    h->mhd = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_access, h,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_conns,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, h,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)4096, MHD_OPTION_END);
    if (h->mhd == NULL) {
        snprintf(err, errlen, "cannot start the HTTP daemon on port %u", h->port);
        close(fd);
        goto fail;
    }
    di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    h->w = loop_watch_add(l, di->epoll_fd, EPOLLIN, on_mhd_fd, h);
    if (h->w == NULL) {
        snprintf(err, errlen, "cannot watch the HTTP daemon: %s", strerror(errno));
        goto fail;
    }
    httpd_pump(h);
    return h;
fail:
    if (h->mhd)
        MHD_stop_daemon(h->mhd);
    free(h);
    return NULL;
}

unsigned httpd_port(const struct httpd *h)
{
    return h->port;
}

static void quiesce(struct httpd *h)
{
    if (h->quiesced || h->mhd == NULL)
        return;
    h->quiesced = true;
    h->lfd = MHD_quiesce_daemon(h->mhd); /* stop accepting; the socket is ours now */
}

void httpd_drain(struct httpd *h)
{
    if (h->draining || h->mhd == NULL)
        return;
    h->draining = true;
    quiesce(h);
    /* Closed, so new connections are refused at once rather than left in the backlog. (Under
     * socket activation systemd keeps its copy open: they wait there for the next start.) */
    if (h->lfd != MHD_INVALID_SOCKET)
        close(h->lfd);
    h->lfd = MHD_INVALID_SOCKET;
}

size_t httpd_receiving(const struct httpd *h)
{
    size_t n = 0;
    LIST_FOREACH(node, &h->live)
    n += list_entry(node, struct hreq, link)->state == HREQ_READING;
    return n;
}

void httpd_shutdown(struct httpd *h)
{
    if (h->stopping || h->mhd == NULL)
        return;
    h->stopping = true;
    h->draining = true;
    quiesce(h);
    LIST_FOREACH_SAFE(node, &h->live)
    {
        struct hreq *r = list_entry(node, struct hreq, link);
        hreq_fire_abort(r);
        if (r->state == HREQ_WAITING || r->state == HREQ_HELD)
            reply_unavailable(r);
        else if (r->state == HREQ_STREAMING)
            hreq_stream_end(r);
    }
    /* Let the answers go out; MHD_stop_daemon with a suspended connection is fatal. */
    for (int i = 0; i < 200 && h->nlive > 0; i++)
        loop_once(h->loop, 10);
    LIST_FOREACH(node, &h->live)
    {
        struct hreq *r = list_entry(node, struct hreq, link);
        if (r->suspended)
            hreq_resume(r);
    }
    loop_watch_del(h->w);
    h->w = NULL;
    loop_timer_cancel(h->timer);
    h->timer = NULL;
    MHD_stop_daemon(h->mhd);
    h->mhd = NULL;
    if (h->lfd != MHD_INVALID_SOCKET)
        close(h->lfd);
    h->lfd = MHD_INVALID_SOCKET;
}

void httpd_free(struct httpd *h)
{
    if (h == NULL)
        return;
    httpd_shutdown(h);
    free(h);
}
