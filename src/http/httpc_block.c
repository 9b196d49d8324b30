/* httpc_block.c — HTTP requests of callers without a loop: the command-line tools' blocking
 * requests (one curl handle per session, reused so its connection is), and the batch of
 * requests sent at exit, all at once on a private multi handle. Their handles are set up as the
 * loop's are (httpc_internal.h). */
#include "curlrt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpc.h"
#include "httpc_internal.h"
#include "mem.h"

/* ---------- blocking requests ---------- */

struct httpc_session {
    CURL *easy;
    struct httpc_req req; /* the last request: its answer lives here until the next */
};

struct httpc_session *httpc_session_new(void)
{
    if (!httpc_global_ready())
        return NULL;
    struct httpc_session *s = xcalloc(1, sizeof *s);
    s->easy = curl_easy_init();
    if (s->easy == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

void httpc_session_free(struct httpc_session *s)
{
    if (s == NULL)
        return;
    curl_easy_cleanup(s->easy);
    httpc_req_clear(&s->req);
    free(s);
}

void httpc_fetch(struct httpc_session *s, const struct httpc_opts *o, struct httpc_result *res)
{
    struct httpc_req *r = &s->req;

    httpc_req_clear(r);
    *r = (struct httpc_req){0};
    httpc_req_fill(r, o);
    r->on_done = NULL;
    curl_easy_reset(s->easy); /* keeps the connection for this request */
    httpc_req_setup(r, s->easy, (long)o->deadline_ms);
    CURLcode code = curl_easy_perform(s->easy);
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, NULL);
    httpc_headers_free(r->headers); /* now: a line may carry a key */
    r->headers = NULL;
    httpc_req_result(r, s->easy, code, res);
    if (code == CURLE_SEND_ERROR && res->status >= 400) {
        res->failed = false; /* refused before the whole body was sent: the status answers */
        res->error = res->reason = NULL;
    }
}

/* ---------- a batch at exit ---------- */
struct batch_item {
    CURL *easy;
    struct curl_slist *headers;
    char *label;
    char errbuf[CURL_ERROR_SIZE];
    struct batch_item *next;
};

struct httpc_batch {
    struct batch_item *items;
};

struct httpc_batch *httpc_batch_new(void)
{
    return xcalloc(1, sizeof(struct httpc_batch));
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

bool httpc_batch_add(struct httpc_batch *b, const struct httpc_opts *o, const char *label)
{
    if (!httpc_global_ready())
        return false;
    struct batch_item *it = xcalloc(1, sizeof *it);
    for (size_t i = 0; i < o->nheaders; i++)
        it->headers = curl_slist_append(it->headers, o->headers[i]);
    it->easy = httpc_easy_new(o->url, o->method, it->headers,
                              (long)(o->connect_timeout_ms ? o->connect_timeout_ms : 5000),
                              o->https_only, it->errbuf);
    if (it->easy == NULL) {
        httpc_headers_free(it->headers);
        free(it);
        return false;
    }
    curl_easy_setopt(it->easy, CURLOPT_WRITEFUNCTION, discard);
    it->label = xstrdup(label);
    it->next = b->items;
    b->items = it;
    return true;
}

static long ms_left(const struct timespec *until)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (until->tv_sec - now.tv_sec) * 1000L + (until->tv_nsec - now.tv_nsec) / 1000000L;
}

static void batch_item_free(CURLM *m, struct batch_item *it)
{
    if (it->easy) {
        if (m)
            curl_multi_remove_handle(m, it->easy);
        curl_easy_cleanup(it->easy); /* QUICK_EXIT: a lookup still running is left behind */
    }
    httpc_headers_free(it->headers);
    free(it->label);
    free(it);
}

void httpc_batch_run(struct httpc_batch *b, unsigned timeout_ms, httpc_batch_cb *report, void *arg)
{
    if (b == NULL)
        return;
    CURLM *m = b->items ? curl_multi_init() : NULL;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L)
        until.tv_sec++, until.tv_nsec -= 1000000000L;
    for (struct batch_item *it = b->items; m && it; it = it->next) {
        curl_easy_setopt(it->easy, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        curl_multi_add_handle(m, it->easy);
    }
    int running = m != NULL;
    while (running && ms_left(&until) > 0) {
        if (curl_multi_perform(m, &running) != CURLM_OK)
            break;
        if (running)
            curl_multi_poll(m, NULL, 0, (int)ms_left(&until), NULL);
    }
    CURLMsg *msg;
    int queued;
    while (m && (msg = curl_multi_info_read(m, &queued)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        /* The message lives in its easy handle: read it before that handle is freed. */
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        for (struct batch_item *it = b->items; it; it = it->next)
            if (it->easy == easy) {
                report(it->label, true, result == CURLE_OK ? NULL : curl_easy_strerror(result),
                       arg);
                curl_multi_remove_handle(m, it->easy);
                curl_easy_cleanup(it->easy);
                it->easy = NULL;
                break;
            }
    }
    while (b->items) {
        struct batch_item *it = b->items;
        b->items = it->next;
        if (it->easy)
            report(it->label, false, NULL, arg);
        batch_item_free(m, it);
    }
    curl_multi_cleanup(m);
    free(b);
}
