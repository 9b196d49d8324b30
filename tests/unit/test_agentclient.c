/* Unit tests for agentclient.c: a request cancelled from inside its own callbacks. libcurl forbids
 * removing a handle from inside its callbacks, and on_data runs inside curl's write callback;
 * agent_cancel() there must silence the request and free it only once curl has returned. Run
 * under ASan (make SANITIZE=1 unit): freeing inside the callback is a use-after-free in curl.
 * A small server thread streams a chunked response slowly, like an agent's SSE stream. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "agentclient.h"
#include "loop.h"

struct server {
    int lfd;
    unsigned port;
    unsigned chunks; /* how many 1 KiB chunks to send, 2 ms apart */
    bool saw_close;  /* the client closed the connection before the end */
    pthread_t thread;
};

static void *serve(void *arg)
{
    struct server *s = arg;
    int fd = accept(s->lfd, NULL, NULL);
    char buf[4096];
    if (fd < 0)
        return NULL;
    if (read(fd, buf, sizeof buf) <= 0) { /* the request (small: one read) */
        close(fd);
        return NULL;
    }
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n";
    if (send(fd, head, strlen(head), MSG_NOSIGNAL) < 0)
        s->saw_close = true;
    char chunk[1100];
    memset(buf, 'x', 1024);
    for (unsigned i = 0; i < s->chunks && !s->saw_close; i++) {
        int n = snprintf(chunk, sizeof chunk, "400\r\n%.1024s\r\n", buf);
        if (send(fd, chunk, (size_t)n, MSG_NOSIGNAL) < 0)
            s->saw_close = true;
        usleep(2000);
    }
    if (!s->saw_close)
        send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
    close(fd);
    return NULL;
}

static void server_start(struct server *s, unsigned chunks)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    memset(s, 0, sizeof *s);
    s->chunks = chunks;
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

struct probe {
    struct loop *loop;
    struct agent_client *client;
    unsigned data_calls, done_calls;
    bool cancel_in_data, cancel_in_done;
};

static bool on_data(struct agent_req *r, const char *data, size_t len, void *arg)
{
    struct probe *p = arg;
    (void)data, (void)len;
    p->data_calls++;
    if (p->cancel_in_data) {
        agent_cancel(r); /* inside curl's write callback */
        loop_stop(p->loop);
    }
    return true;
}

static void on_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct probe *p = arg;
    (void)res;
    p->done_calls++;
    if (p->cancel_in_done)
        agent_cancel(r); /* its own, from its done callback: must not free it twice */
    loop_stop(p->loop);
}

static void stop_loop(struct loop *l, void *arg)
{
    (void)arg;
    loop_stop(l);
}

static struct agent_req *request(struct probe *p, unsigned port, bool stream)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/chat/completions", port);
    struct agent_opts o = {.method = "POST",
                           .url = url,
                           .body = "{}",
                           .body_len = 2,
                           .accept_sse = true,
                           .max_response = 1 << 20,
                           .on_data = stream ? on_data : NULL,
                           .on_done = on_done,
                           .arg = p};
    return agent_request(p->client, &o);
}

static void cancel_inside_on_data_is_deferred(void **state)
{
    (void)state;
    struct server srv;
    struct probe p = {.cancel_in_data = true};
    server_start(&srv, 2000);
    p.loop = loop_new();
    p.client = agent_client_new(p.loop);
    assert_non_null(request(&p, srv.port, true));
    struct loop_timer *guard = loop_timer_add(p.loop, 10000, stop_loop, NULL);
    loop_run(p.loop);
    assert_int_equal(p.data_calls, 1);
    /* Freed as soon as curl returned from the callback. */
    assert_int_equal(agent_in_flight(p.client), 0);
    /* No callback after the cancel, and the server sees the connection closed. */
    for (int i = 0; i < 50; i++)
        loop_once(p.loop, 10);
    assert_int_equal(p.data_calls, 1);
    assert_int_equal(p.done_calls, 0);
    loop_timer_cancel(guard);
    agent_client_free(p.client);
    server_stop(&srv);
    assert_true(srv.saw_close);
    loop_free(p.loop);
}

static void cancel_inside_on_done_is_harmless(void **state)
{
    (void)state;
    struct server srv;
    struct probe p = {.cancel_in_done = true};
    server_start(&srv, 3);
    p.loop = loop_new();
    p.client = agent_client_new(p.loop);
    assert_non_null(request(&p, srv.port, false));
    struct loop_timer *guard = loop_timer_add(p.loop, 10000, stop_loop, NULL);
    loop_run(p.loop);
    assert_int_equal(p.done_calls, 1);
    assert_int_equal(agent_in_flight(p.client), 0);
    loop_timer_cancel(guard);
    agent_client_free(p.client);
    server_stop(&srv);
    loop_free(p.loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cancel_inside_on_data_is_deferred),
        cmocka_unit_test(cancel_inside_on_done_is_harmless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
