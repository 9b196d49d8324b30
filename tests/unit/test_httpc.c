/* Unit tests for httpc: what a request gets back, blocking (httpc_fetch, as doctor and smoke
 * use it) and on the loop (httpc_request): status, headers (a long line included) and body; a
 * body over the cap; a refused connection; no answer before the deadline; an error status sent
 * before the request body was read. The batch sent at exit; the loop's per-origin queue;
 * httpc_cancel from inside callbacks. A small server thread on 127.0.0.1 answers as each test
 * scripts it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "httpc.h"
#include "loop.h"

enum mode {
    ANSWER,  /* "201 Created" with a header and "hello", keeping the connection */
    LARGE,   /* a 64 KiB body */
    SILENT,  /* reads the request, answers nothing until the client hangs up */
    REFUSE,  /* 413 as soon as the headers are in, without reading the body */
    CLOSE,   /* "204 No Content" and the connection closed, one connection per request */
    LONGHDR, /* "200 OK" with a header line of 2 KiB */
};

#define LONG_HEADER_LEN 2048 /* the whole line, "X-Long: " and its value, without CRLF */

struct server {
    int lfd;
    unsigned port;
    enum mode mode;
    unsigned requests; /* how many requests to answer before the thread ends */
    unsigned accepts;  /* connections accepted */
    char first[4096];  /* the first request as received, head and body (cut) */
    pthread_t thread;
};

/* Reads one request's head (and, unless the mode refuses it, its body). 0 at end of file. */
static size_t read_request(struct server *s, int fd, char *buf, size_t cap)
{
    size_t len = 0;
    char *end = NULL;
    while (end == NULL) {
        if (len + 1 >= cap)
            return 0;
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0)
            return 0;
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    size_t head = (size_t)(end + 4 - buf), want = 0;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (cl && cl < end)
        want = strtoul(cl + 17, NULL, 10);
    if (s->mode == REFUSE)
        return len;
    while (len < head + want && len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0)
            return 0;
        len += (size_t)n;
        buf[len] = '\0';
    }
    return len;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Waits (at most 5 s) for the client to hang up, reading whatever it still sends. */
static void drain(int fd)
{
    char buf[4096];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, 5000) > 0 && read(fd, buf, sizeof buf) > 0)
        ;
}

static void *serve(void *arg)
{
    struct server *s = arg;
    char buf[8192];
    unsigned answered = 0;
    while (answered < s->requests) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        s->accepts++;
        size_t n;
        while (answered < s->requests && (n = read_request(s, fd, buf, sizeof buf)) > 0) {
            if (answered++ == 0)
                snprintf(s->first, sizeof s->first, "%.*s", (int)sizeof s->first - 1, buf);
            if (s->mode == ANSWER) {
                static const char a[] = "HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\n"
                                        "X-Test: yes\r\nContent-Length: 5\r\n\r\nhello";
                send_all(fd, a, sizeof a - 1);
                continue; /* the same connection may carry the next request */
            }
            if (s->mode == LARGE) {
                static char big[65536];
                memset(big, 'x', sizeof big);
                static const char h[] = "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n";
                send_all(fd, h, sizeof h - 1);
                send_all(fd, big, sizeof big);
            } else if (s->mode == REFUSE) {
                static const char r[] = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n"
                                        "Connection: close\r\n\r\n";
                send_all(fd, r, sizeof r - 1);
                /* No close() with the body unread: that resets the connection, which may
                 * discard the 413 before the client read it. Half-close, then wait for the
                 * client to hang up, discarding the rest of its body. */
                shutdown(fd, SHUT_WR);
                drain(fd);
                break;
            } else if (s->mode == CLOSE) {
                static const char c[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
                send_all(fd, c, sizeof c - 1);
                break;
            } else if (s->mode == LONGHDR) {
                char h[LONG_HEADER_LEN + 128];
                int hl = snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nX-Long: %0*d\r\n",
                                  LONG_HEADER_LEN - 8, 7);
                hl += snprintf(h + hl, sizeof h - (size_t)hl,
                               "Content-Length: 0\r\nConnection: close\r\n\r\n");
                send_all(fd, h, (size_t)hl);
                break;
            }
            drain(fd); /* SILENT: until the client gives up */
            break;
        }
        close(fd);
    }
    return NULL;
}

static void server_start(struct server *s, enum mode mode, unsigned requests)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->requests = requests;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 4), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void server_stop(struct server *s)
{
    pthread_join(s->thread, NULL);
    close(s->lfd);
}

/* A port nothing listens on: bound, then closed. */
static unsigned closed_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct seen {
    char headers[1024];
    unsigned header_calls;
};

static void on_header(struct httpc_req *r, const char *line, void *arg)
{
    struct seen *s = arg;
    (void)r;
    s->header_calls++;
    strncat(s->headers, line, sizeof s->headers - strlen(s->headers) - 2);
    strcat(s->headers, "\n");
}

/* ---------- blocking ---------- */

static void fetch_gives_status_headers_and_body(void **state)
{
    (void)state;
    struct server srv;
    struct seen seen = {0};
    char url[64];
    const char *headers[] = {"X-Key: k1"};
    server_start(&srv, ANSWER, 2);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/path", srv.port);
    struct httpc_session *s = httpc_session_new();
    assert_non_null(s);
    struct httpc_opts o = {.method = "POST",
                           .url = url,
                           .headers = headers,
                           .nheaders = 1,
                           .body = "ping",
                           .body_len = 4,
                           .deadline_ms = 5000,
                           .max_response = 1024,
                           .on_header = on_header,
                           .arg = &seen,
                           .user_agent = "test-agent/1"};
    struct httpc_result res;
    httpc_fetch(s, &o, &res);
    assert_int_equal(res.status, 201);
    assert_false(res.failed || res.timed_out || res.too_big || res.aborted);
    assert_null(res.error);
    assert_int_equal(res.body_len, 5);
    assert_string_equal(res.body, "hello");
    assert_non_null(strstr(seen.headers, "HTTP/1.1 201 Created\n"));
    assert_non_null(strstr(seen.headers, "X-Test: yes\n")); /* without its line end */
    /* What the server got: method, path, our header and agent, the body. */
    assert_true(strncmp(srv.first, "POST /path HTTP/1.1\r\n", 21) == 0);
    assert_non_null(strstr(srv.first, "\r\nX-Key: k1\r\n"));
    assert_non_null(strstr(srv.first, "\r\nUser-Agent: test-agent/1\r\n"));
    assert_non_null(strstr(srv.first, "\r\n\r\nping"));

    /* The session's next request goes over the same connection. */
    o = (struct httpc_opts){.method = "GET", .url = url, .deadline_ms = 5000, .max_response = 1024};
    httpc_fetch(s, &o, &res);
    assert_int_equal(res.status, 201);
    assert_string_equal(res.body, "hello");
    httpc_session_free(s);
    server_stop(&srv);
    assert_int_equal(srv.accepts, 1);
}

static void fetch_body_over_the_cap_is_too_big(void **state)
{
    (void)state;
    struct server srv;
    char url[64];
    server_start(&srv, LARGE, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    struct httpc_session *s = httpc_session_new();
    struct httpc_opts o = {.method = "GET", .url = url, .deadline_ms = 5000, .max_response = 1024};
    struct httpc_result res;
    httpc_fetch(s, &o, &res);
    assert_true(res.too_big);
    assert_false(res.failed);
    assert_false(res.timed_out);
    assert_int_equal(res.status, 200);
    assert_true(res.body_len <= 1024); /* never more than the cap was kept */
    httpc_session_free(s);
    server_stop(&srv);
}

/* on_data sees the body piece by piece; returning false stops the transfer. */
static bool stop_after_first(struct httpc_req *r, const char *data, size_t len, void *arg)
{
    size_t *got = arg;
    (void)r, (void)data;
    *got += len;
    return false;
}

static void fetch_streamed_body_can_be_stopped(void **state)
{
    (void)state;
    struct server srv;
    char url[64];
    size_t got = 0;
    server_start(&srv, LARGE, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    struct httpc_session *s = httpc_session_new();
    struct httpc_opts o = {
        .method = "GET", .url = url, .deadline_ms = 5000, .on_data = stop_after_first, .arg = &got};
    struct httpc_result res;
    httpc_fetch(s, &o, &res);
    assert_true(res.aborted);
    assert_false(res.failed);
    assert_true(got > 0 && got < 65536);
    assert_string_equal(res.body, ""); /* streamed: nothing accumulated */
    httpc_session_free(s);
    server_stop(&srv);
}

static void fetch_refused_connection_fails(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", closed_port());
    struct httpc_session *s = httpc_session_new();
    struct httpc_opts o = {.method = "GET", .url = url, .deadline_ms = 5000};
    struct httpc_result res;
    httpc_fetch(s, &o, &res);
    assert_true(res.failed);
    assert_false(res.timed_out);
    assert_int_equal(res.status, 0);
    assert_int_equal(res.os_errno, ECONNREFUSED);
    assert_false(res.no_host);
    assert_non_null(res.error);
    assert_non_null(res.reason);
    assert_null(strstr(res.reason, "127.0.0.1")); /* the generic text names no address */
    httpc_session_free(s);
}

static void fetch_without_answer_times_out(void **state)
{
    (void)state;
    struct server srv;
    char url[64];
    server_start(&srv, SILENT, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    struct httpc_session *s = httpc_session_new();
    struct httpc_opts o = {.method = "GET", .url = url, .deadline_ms = 300};
    struct httpc_result res;
    double t0 = now_s();
    httpc_fetch(s, &o, &res);
    double took = now_s() - t0;
    assert_true(res.timed_out);
    assert_false(res.failed);
    assert_int_equal(res.status, 0);
    assert_true(took >= 0.25 && took < 3.0);
    httpc_session_free(s); /* hangs up: the server thread ends */
    server_stop(&srv);
}

/* A server may refuse a large body with its status before reading it: that is the answer. */
static void fetch_error_status_before_the_body_is_the_answer(void **state)
{
    (void)state;
    struct server srv;
    char url[64];
    size_t len = 4 << 20;
    char *body = malloc(len);
    memset(body, 'a', len);
    server_start(&srv, REFUSE, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", srv.port);
    struct httpc_session *s = httpc_session_new();
    const char *no_expect[] = {"Expect:"}; /* the body follows the head at once */
    struct httpc_opts o = {.method = "POST",
                           .url = url,
                           .headers = no_expect,
                           .nheaders = 1,
                           .body = body,
                           .body_len = len,
                           .deadline_ms = 5000,
                           .max_response = 1024};
    struct httpc_result res;
    httpc_fetch(s, &o, &res);
    assert_int_equal(res.status, 413);
    assert_false(res.failed);
    assert_false(res.timed_out);
    httpc_session_free(s);
    server_stop(&srv);
    free(body);
}

/* Every header line reaches on_header whole, however long (a WWW-Authenticate can be). */
struct long_seen {
    size_t longest;
    bool long_ok;
};

static void on_long_header(struct httpc_req *r, const char *line, void *arg)
{
    struct long_seen *s = arg;
    (void)r;
    size_t n = strlen(line);
    if (n > s->longest)
        s->longest = n;
    if (strncmp(line, "X-Long: ", 8) == 0)
        s->long_ok = n == LONG_HEADER_LEN && line[n - 1] == '7' &&
                     strspn(line + 8, "0") == LONG_HEADER_LEN - 9;
}

static void fetch_passes_a_long_header_line(void **state)
{
    (void)state;
    struct server srv;
    struct long_seen seen = {0};
    char url[64];
    server_start(&srv, LONGHDR, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    struct httpc_session *s = httpc_session_new();
    struct httpc_opts o = {.method = "GET",
                           .url = url,
                           .deadline_ms = 5000,
                           .on_header = on_long_header,
                           .arg = &seen};
    struct httpc_result res;
    httpc_fetch(s, &o, &res);
    assert_int_equal(res.status, 200);
    assert_int_equal(seen.longest, LONG_HEADER_LEN);
    assert_true(seen.long_ok);
    httpc_session_free(s);
    server_stop(&srv);
}

/* ---------- a batch at exit ---------- */

struct batch_seen {
    unsigned done, not_done, failed;
    char labels[64];
};

static void on_batch(const char *label, bool done, const char *error, void *arg)
{
    struct batch_seen *b = arg;
    if (done)
        b->done++;
    else
        b->not_done++;
    if (error)
        b->failed++;
    strncat(b->labels, label, sizeof b->labels - strlen(b->labels) - 1);
}

/* Several requests of one batch all end before they are reported: each is reported once and
 * each handle freed once (the end of one must not be read from another's freed handle). */
static void batch_reports_every_request(void **state)
{
    (void)state;
    struct server srv;
    struct batch_seen seen = {0};
    char url[64];
    server_start(&srv, CLOSE, 4);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", srv.port);
    struct httpc_batch *b = httpc_batch_new();
    const char *headers[] = {"Mcp-Session-Id: s1"};
    struct httpc_opts o = {.method = "DELETE", .url = url, .headers = headers, .nheaders = 1};
    assert_true(httpc_batch_add(b, &o, "a"));
    assert_true(httpc_batch_add(b, &o, "b"));
    assert_true(httpc_batch_add(b, &o, "c"));
    assert_true(httpc_batch_add(b, &o, "d"));
    httpc_batch_run(b, 5000, on_batch, &seen);
    server_stop(&srv);
    assert_int_equal(seen.done, 4);
    assert_int_equal(seen.not_done, 0);
    assert_int_equal(seen.failed, 0);
    assert_int_equal(strlen(seen.labels), 4);
    for (const char *l = "abcd"; *l; l++)
        assert_non_null(strchr(seen.labels, *l));
    assert_int_equal(srv.accepts, 4);
    assert_true(strncmp(srv.first, "DELETE /mcp HTTP/1.1\r\n", 22) == 0);
    assert_non_null(strstr(srv.first, "\r\nMcp-Session-Id: s1\r\n"));
}

static void url_parts(void **state)
{
    (void)state;
    struct httpc_url u;
    assert_true(httpc_url_parse("http://127.0.0.1:8765/base", &u));
    assert_string_equal(u.host, "127.0.0.1");
    assert_false(u.has_query || u.has_user);
    assert_true(httpc_url_parse("https://[::1]:9/x?a=1", &u));
    assert_string_equal(u.host, "[::1]");
    assert_true(u.has_query);
    assert_true(httpc_url_parse("https://me:pw@example.com", &u));
    assert_string_equal(u.host, "example.com");
    assert_true(u.has_user);
    assert_false(httpc_url_parse("http://", &u));
    assert_false(httpc_url_parse("not a url", &u));
}

/* ---------- on the loop ---------- */

struct done {
    struct loop *loop;
    long status;
    bool failed, timed_out, too_big;
    int os_errno;
    char body[64];
    unsigned calls;
};

static void on_done(struct httpc_req *r, const struct httpc_result *res, void *arg)
{
    struct done *d = arg;
    (void)r;
    d->calls++;
    d->status = res->status;
    d->failed = res->failed;
    d->timed_out = res->timed_out;
    d->too_big = res->too_big;
    d->os_errno = res->os_errno;
    snprintf(d->body, sizeof d->body, "%s", res->body);
    loop_stop(d->loop);
}

static void stop_loop(struct loop *l, void *arg)
{
    (void)arg;
    loop_stop(l);
}

/* Runs one request on a loop to its end; d has its answer. */
static void run_on_loop(const char *url, unsigned deadline_ms, size_t max, struct done *d)
{
    memset(d, 0, sizeof *d);
    d->loop = loop_new();
    struct httpc *c = httpc_new(d->loop, 2);
    struct httpc_opts o = {.method = "GET",
                           .url = url,
                           .deadline_ms = deadline_ms,
                           .max_response = max,
                           .on_done = on_done,
                           .arg = d};
    assert_non_null(httpc_request(c, &o));
    struct loop_timer *guard = loop_timer_add(d->loop, 10000, stop_loop, NULL);
    loop_run(d->loop);
    loop_timer_cancel(guard);
    assert_int_equal(d->calls, 1);
    assert_int_equal(httpc_in_flight(c), 0);
    httpc_free(c);
    loop_free(d->loop);
}

static void loop_request_answers(void **state)
{
    (void)state;
    struct server srv;
    struct done d;
    char url[64];

    server_start(&srv, ANSWER, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    run_on_loop(url, 5000, 1024, &d);
    server_stop(&srv);
    assert_int_equal(d.status, 201);
    assert_string_equal(d.body, "hello");
    assert_false(d.failed || d.timed_out || d.too_big);

    server_start(&srv, LARGE, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    run_on_loop(url, 5000, 1024, &d);
    server_stop(&srv);
    assert_true(d.too_big);
    assert_false(d.failed);

    snprintf(url, sizeof url, "http://127.0.0.1:%u/", closed_port());
    run_on_loop(url, 5000, 1024, &d);
    assert_true(d.failed);
    assert_int_equal(d.os_errno, ECONNREFUSED);

    server_start(&srv, SILENT, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    run_on_loop(url, 300, 1024, &d); /* httpc_free hangs up: the server thread ends */
    server_stop(&srv);
    assert_true(d.timed_out);
    assert_false(d.failed);
}

/* Several requests at once, each with a slot, a queue place or a cancel. */
struct many {
    struct loop *loop;
    struct httpc *c;
    struct httpc_req *req[3];
    unsigned done[3]; /* on_done calls of each */
    long status[3];
    char order[8];        /* indexes in the order their on_done ran */
    unsigned ndone;       /* on_done calls in all */
    unsigned stop_at;     /* stops the loop at this many on_done calls */
    unsigned headers;     /* on_header calls */
    size_t data;          /* bytes on_data saw */
    int cancel_in_header; /* index of the request an on_header cancels, -1: none */
    int cancel_in_data;   /* same, from on_data */
    int cancel_in_done;   /* same, from on_done */
};

static int many_index(struct many *m, struct httpc_req *r)
{
    for (int i = 0; i < 3; i++)
        if (m->req[i] == r)
            return i;
    fail_msg("a callback for a request not started here");
    return -1;
}

static void many_done(struct httpc_req *r, const struct httpc_result *res, void *arg)
{
    struct many *m = arg;
    int i = many_index(m, r);
    m->done[i]++;
    m->status[i] = res->status;
    m->order[strlen(m->order)] = (char)('0' + i);
    if (m->cancel_in_done >= 0)
        httpc_cancel(m->req[m->cancel_in_done]);
    m->cancel_in_done = -1; /* once: the request is gone */
    httpc_cancel(r);        /* in its own on_done: a no-op */
    if (++m->ndone == m->stop_at)
        loop_stop(m->loop);
}

static void many_header(struct httpc_req *r, const char *line, void *arg)
{
    struct many *m = arg;
    (void)r, (void)line;
    m->headers++;
    if (m->cancel_in_header >= 0)
        httpc_cancel(m->req[m->cancel_in_header]);
    m->cancel_in_header = -1;
}

static bool many_data(struct httpc_req *r, const char *data, size_t len, void *arg)
{
    struct many *m = arg;
    (void)r, (void)data;
    m->data += len;
    if (m->cancel_in_data >= 0)
        httpc_cancel(m->req[m->cancel_in_data]);
    m->cancel_in_data = -1;
    return true;
}

static void many_start(struct many *m, unsigned per_origin)
{
    memset(m, 0, sizeof *m);
    m->loop = loop_new();
    m->c = httpc_new(m->loop, per_origin);
    m->cancel_in_header = m->cancel_in_data = m->cancel_in_done = -1;
}

static struct httpc_req *many_add(struct many *m, int i, const char *url, bool stream)
{
    struct httpc_opts o = {.method = "GET",
                           .url = url,
                           .deadline_ms = 5000,
                           .max_response = 1 << 20,
                           .on_header = many_header,
                           .on_data = stream ? many_data : NULL,
                           .on_done = many_done,
                           .arg = m};
    m->req[i] = httpc_request(m->c, &o);
    assert_non_null(m->req[i]);
    return m->req[i];
}

/* Stops the loop once no request is left (those cancelled inside curl are freed after it). */
static void stop_when_idle(struct loop *l, void *arg)
{
    struct many *m = arg;
    if (httpc_in_flight(m->c) == 0)
        loop_stop(l);
    else
        loop_timer_add(l, 10, stop_when_idle, m);
}

static void guard_fired(struct loop *l, void *arg)
{
    *(bool *)arg = true;
    loop_stop(l);
}

/* Runs the loop until on_done stops it or, with until_idle, no request is left; fails after 5 s. */
static void many_run(struct many *m, bool until_idle)
{
    bool late = false;
    struct loop_timer *guard = loop_timer_add(m->loop, 5000, guard_fired, &late);
    if (until_idle)
        loop_timer_add(m->loop, 10, stop_when_idle, m);
    loop_run(m->loop);
    if (late)
        fail_msg("the requests did not end in 5 s");
    loop_timer_cancel(guard);
}

static void many_end(struct many *m)
{
    httpc_free(m->c); /* hangs up what is left: the server threads end */
    loop_free(m->loop);
}

/* With one slot per origin, the requests to one origin run one after another, first come first
 * served, over the one connection; the server here answers one connection at a time, so a
 * second connection opened early would hang until the guard stops the loop. */
static void loop_queues_requests_per_origin(void **state)
{
    (void)state;
    struct server srv;
    struct many m;
    char url[64];
    server_start(&srv, ANSWER, 3);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    many_start(&m, 1);
    for (int i = 0; i < 3; i++)
        many_add(&m, i, url, false);
    assert_int_equal(httpc_in_flight(m.c), 3);
    m.stop_at = 3;
    many_run(&m, false);
    assert_string_equal(m.order, "012");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(m.done[i], 1);
        assert_int_equal(m.status[i], 201);
    }
    assert_int_equal(httpc_in_flight(m.c), 0);
    many_end(&m);
    server_stop(&srv);
    assert_int_equal(srv.accepts, 1);
}

/* httpc_cancel from a callback: the cancelled request gets no callback after it, whether it is
 * the caller's own, another running one or one still waiting for its slot. */
static void loop_cancel_from_callbacks(void **state)
{
    (void)state;
    struct server srv;
    struct many m;
    char url[64];

    /* Its own request, from on_header (inside curl): no on_done, no further header. */
    server_start(&srv, LARGE, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    many_start(&m, 2);
    many_add(&m, 0, url, false);
    m.cancel_in_header = 0;
    many_run(&m, true);
    assert_int_equal(httpc_in_flight(m.c), 0);
    assert_int_equal(m.headers, 1);
    assert_int_equal(m.ndone, 0);
    many_end(&m);
    server_stop(&srv);

    /* Its own request, from on_data: the body stops, no on_done. */
    server_start(&srv, LARGE, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    many_start(&m, 2);
    many_add(&m, 0, url, true);
    m.cancel_in_data = 0;
    many_run(&m, true);
    assert_int_equal(httpc_in_flight(m.c), 0);
    assert_true(m.data > 0 && m.data < 65536);
    assert_int_equal(m.ndone, 0);
    many_end(&m);
    server_stop(&srv);

    /* Another running request, from on_data of the first: the first ends normally, the other
     * (connected, waiting for the server) never reports. */
    server_start(&srv, LARGE, 1);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    many_start(&m, 2);
    many_add(&m, 0, url, true);
    many_add(&m, 1, url, true);
    m.cancel_in_data = 1;
    many_run(&m, true);
    assert_int_equal(httpc_in_flight(m.c), 0);
    assert_string_equal(m.order, "0");
    assert_int_equal(m.status[0], 200);
    assert_int_equal(m.data, 65536);
    assert_int_equal(m.done[1], 0);
    many_end(&m);
    server_stop(&srv);

    /* A request waiting for its slot, from on_done of the one holding it: it never starts. */
    server_start(&srv, ANSWER, 2);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", srv.port);
    many_start(&m, 1);
    many_add(&m, 0, url, false);
    many_add(&m, 1, url, false);
    many_add(&m, 2, url, false);
    m.cancel_in_done = 1;
    m.stop_at = 2;
    many_run(&m, true);
    assert_string_equal(m.order, "02");
    assert_int_equal(m.done[1], 0);
    assert_int_equal(m.status[2], 201);
    assert_int_equal(httpc_in_flight(m.c), 0);
    many_end(&m);
    server_stop(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fetch_gives_status_headers_and_body),
        cmocka_unit_test(fetch_body_over_the_cap_is_too_big),
        cmocka_unit_test(fetch_streamed_body_can_be_stopped),
        cmocka_unit_test(fetch_refused_connection_fails),
        cmocka_unit_test(fetch_without_answer_times_out),
        cmocka_unit_test(fetch_error_status_before_the_body_is_the_answer),
        cmocka_unit_test(fetch_passes_a_long_header_line),
        cmocka_unit_test(batch_reports_every_request),
        cmocka_unit_test(url_parts),
        cmocka_unit_test(loop_request_answers),
        cmocka_unit_test(loop_queues_requests_per_origin),
        cmocka_unit_test(loop_cancel_from_callbacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
