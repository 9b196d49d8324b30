/* httpc.c — libcurl multi in our epoll loop (the pattern of curl's ephiperfifo example); moved
 * here from the agent client so the gateway's HTTP upstreams drive curl the same way.
 *
 * At most per_origin transfers run per origin; the others wait in our own queue, holding only
 * their options. A curl handle costs ~20 KiB (it allocates its receive buffer before it even
 * waits for a connection), which thousands of waiting transfers should not pay.
 *
 * libcurl forbids removing a handle from inside its own callbacks, and our callers' callbacks
 * run there (on_data inside curl's write callback). So httpc_cancel() from inside curl only
 * silences the request and aborts its transfer; it is freed as soon as curl returns.
 *
 * The requests of callers without a loop (doctor, smoke, the batch at exit) are in
 * httpc_block.c, on the same handle setup and answer reading (httpc_internal.h). */
#include "httpc.h"

#include "curlrt.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "buf.h"
#include "httpc_internal.h"
#include "list.h"
#include "loop.h"
#include "mem.h"
#include "strmap.h"

/* One origin: its running transfers and the ones waiting for a slot. */
struct host {
    unsigned active;
    struct list waiting; /* struct httpc_req by qlink, first come first started */
};

struct httpc {
    struct loop *loop;
    CURLM *multi;
    unsigned per_origin;
    struct loop_timer *timer;
    struct loop_timer *kick; /* starts waiting transfers outside curl's callbacks */
    struct list reqs;        /* every request, running or waiting (by link) */
    unsigned n;
    unsigned in_curl;         /* >0 while curl runs (and so our callbacks from it) */
    struct httpc_req *doomed; /* cancelled inside curl: freed once it returns */
    struct strmap *hosts;     /* origin -> struct host */
};

/* A socket curl asked us to watch. */
struct sockw {
    struct loop_watch *w;
    curl_socket_t fd;
};

static void check_done(struct httpc *c);
static void req_free(struct httpc_req *r);

/* Frees the requests cancelled while curl ran: now it does not any more. */
static void reap(struct httpc *c)
{
    while (c->doomed) {
        struct httpc_req *r = c->doomed;
        c->doomed = r->dnext;
        req_free(r);
    }
}

/* Every entry into curl that can run our callbacks goes through here. */
static void curl_action(struct httpc *c, curl_socket_t fd, int mask)
{
    int running;
    c->in_curl++;
    curl_multi_socket_action(c->multi, fd, mask, &running);
    c->in_curl--;
    reap(c);
    check_done(c);
}

static void on_fd(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct httpc *c = arg;
    int mask = 0;
    (void)l;
    if (events & EPOLLIN)
        mask |= CURL_CSELECT_IN;
    if (events & EPOLLOUT)
        mask |= CURL_CSELECT_OUT;
    if (events & (EPOLLERR | EPOLLHUP))
        mask |= CURL_CSELECT_ERR;
    curl_action(c, fd, mask);
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct httpc *c = userp;
    struct sockw *sw = socketp;
    uint32_t ev = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    (void)easy;

    if (what == CURL_POLL_REMOVE) {
        if (sw) {
            loop_watch_del(sw->w);
            free(sw);
            curl_multi_assign(c->multi, s, NULL);
        }
        return 0;
    }
    if (sw == NULL) {
        sw = xcalloc(1, sizeof *sw);
        sw->fd = s;
        sw->w = loop_watch_add(c->loop, s, ev, on_fd, c);
        curl_multi_assign(c->multi, s, sw);
    } else {
        loop_watch_mod(sw->w, ev);
    }
    return 0;
}

static void on_timer(struct loop *l, void *arg)
{
    struct httpc *c = arg;
    (void)l;
    c->timer = NULL;
    curl_action(c, CURL_SOCKET_TIMEOUT, 0);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct httpc *c = userp;
    (void)multi;
    loop_timer_cancel(c->timer);
    c->timer = NULL;
    /* Never call back into curl from here: a 0 ms timer runs on the next iteration. */
    if (timeout_ms >= 0)
        c->timer = loop_timer_add(c->loop, (uint64_t)timeout_ms, on_timer, c);
    return 0;
}

static size_t write_cb(char *p, size_t size, size_t nmemb, void *userp)
{
    struct httpc_req *r = userp;
    size_t n = size * nmemb;

    if (r->is_doomed)
        return 0; /* cancelled: abort the transfer */
    if (r->on_data) {
        if (!r->on_data(r, p, n, r->arg)) {
            r->aborted = true;
            return 0;
        }
        return n;
    }
    if (!buf_append(&r->resp, p, n)) {
        r->too_big = true;
        return 0; /* aborts the transfer */
    }
    return n;
}

static size_t header_cb(char *p, size_t size, size_t nmemb, void *userp)
{
    struct httpc_req *r = userp;
    size_t n = size * nmemb;
    char small[512];

    if (r->is_doomed)
        return 0;
    if (r->on_header == NULL)
        return n;
    /* curl hands over whole lines, each capped by curl (CURL_MAX_HTTP_HEADER, 100 KiB): a long
     * one (a WWW-Authenticate with many parameters) is copied to the heap, not skipped. */
    char *line = n < sizeof small ? small : malloc(n + 1);
    if (line == NULL)
        return 0; /* fails the transfer rather than hide a header from the caller */
    memcpy(line, p, n);
    line[n] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    r->on_header(r, line, r->arg);
    if (line != small)
        free(line);
    return n;
}

/* Every connection curl opens, when the owner checks addresses: this is where DNS rebinding
 * would land, so the address checked is the one connected to. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct httpc_req *r = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN || !r->addr_ok(&a->addr, r->arg)) {
        r->addr_refused = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static void kick(struct httpc *c);

static void req_free(struct httpc_req *r)
{
    struct httpc *c = r->c;
    struct host *h = r->host;
    if (r->easy) {
        curl_multi_remove_handle(c->multi, r->easy);
        curl_easy_cleanup(r->easy);
        h->active--;
        if (!list_empty(&h->waiting))
            kick(c); /* a slot is free */
    } else {
        list_unlink(&r->qlink);
    }
    httpc_req_clear(r);
    list_unlink(&r->link);
    c->n--;
    free(r);
}

/* Calls on_done once (it may not start another callback for r) and frees r. */
static void finish(struct httpc_req *r, const struct httpc_result *res)
{
    httpc_done_cb *cb = r->on_done;
    void *arg = r->arg;
    r->on_done = NULL;
    r->in_done = true; /* an httpc_cancel(r) from cb is a no-op: r is freed right here */
    if (cb)
        cb(r, res, arg);
    req_free(r);
}

/* Reports a request that never got to run. */
static void fail_unstarted(struct httpc_req *r, bool timed_out, const char *why)
{
    struct httpc_result res = {
        .timed_out = timed_out, .failed = !timed_out, .error = why, .body = "", .seconds = -1};
    finish(r, &res);
}

static void check_done(struct httpc *c)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct httpc_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        struct httpc_result res;
        httpc_req_result(r, r->easy, m->data.result, &res);
        finish(r, &res);
    }
}

struct httpc *httpc_new(struct loop *l, unsigned per_origin)
{
    struct httpc *c = xcalloc(1, sizeof *c);
    list_init(&c->reqs);
    c->loop = l;
    c->per_origin = per_origin ? per_origin : 1;
    c->hosts = strmap_new();
    return c;
}

/* libcurl is loaded (curlrt.c) and set up (OpenSSL, libssh2: ~2.5 MiB of touched pages) on
 * the first transfer, not at start: a server no one calls stays small. Called on the loop's
 * thread (or a command's only one), so the flag needs no lock. */
bool httpc_global_ready(void)
{
    static bool global_done;
    if (!global_done && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
        global_done = true;
    return global_done;
}

const char *httpc_setup_error(void)
{
    const char *why = curlrt_error();
    return why ? why : "libcurl failed to initialise";
}

static bool multi_ready(struct httpc *c)
{
    if (c->multi)
        return true;
    if (!httpc_global_ready())
        return false;
    c->multi = curl_multi_init();
    if (c->multi == NULL)
        return false;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->per_origin);
    return true;
}

void httpc_free(struct httpc *c)
{
    if (c == NULL)
        return;
    reap(c);
    while (!list_empty(&c->reqs))
        httpc_cancel(list_entry(list_first(&c->reqs), struct httpc_req, link));
    loop_timer_cancel(c->timer);
    loop_timer_cancel(c->kick);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    size_t n;
    void **v = strmap_values(c->hosts, &n);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    strmap_free(c->hosts);
    free(c);
}

/* The part of url that names the server: scheme://authority. */
static void origin_of(const char *url, char *out, size_t outlen)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t n = (size_t)(p - url) + strcspn(p, "/?#");
    snprintf(out, outlen, "%.*s", (int)n, url);
}

/* What every transfer of ours has, the loop's, a blocking one's and a batch's alike. */
static void easy_base(CURL *e, const char *url, const char *method, struct curl_slist *headers,
                      long connect_timeout_ms, bool https_only, char *errbuf)
{
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* A transfer cancelled or timed out during its DNS lookup must not make the event loop
     * (or the exit) wait for libcurl's resolver thread (it joins it unless told to leave it). */
    curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, https_only ? "https" : "http,https");
    if (https_only)
        curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
}

CURL *httpc_easy_new(const char *url, const char *method, struct curl_slist *headers,
                     long connect_timeout_ms, bool https_only, char *errbuf)
{
    CURL *e = curl_easy_init();
    if (e)
        easy_base(e, url, method, headers, connect_timeout_ms, https_only, errbuf);
    return e;
}

void httpc_req_setup(struct httpc_req *r, CURL *e, long deadline_ms)
{
    easy_base(e, r->url, r->method, r->headers, r->connect_timeout_ms, r->https_only, r->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    if (r->no_env_proxy)
        curl_easy_setopt(e, CURLOPT_PROXY, "");
    if (r->addr_ok) {
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, r);
    }
    if (r->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, r->ca_file); /* with the system's CA directory */
    if (r->user_agent)
        curl_easy_setopt(e, CURLOPT_USERAGENT, r->user_agent);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    if (deadline_ms)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, deadline_ms);
    if (strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)r->body_len);
    }
}

void httpc_req_result(struct httpc_req *r, CURL *e, CURLcode code, struct httpc_result *res)
{
    long os_errno = 0;
    *res = (struct httpc_result){0};
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &res->status);
    res->too_big = r->too_big;
    res->aborted = r->aborted;
    res->timed_out = code == CURLE_OPERATION_TIMEDOUT;
    res->failed = code != CURLE_OK && !r->too_big && !r->aborted && !res->timed_out;
    res->tls_failed = code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
                      code == CURLE_SSL_CONNECT_ERROR;
    res->cert_untrusted = code == CURLE_PEER_FAILED_VERIFICATION;
    res->no_host = code == CURLE_COULDNT_RESOLVE_HOST;
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
    res->os_errno = (int)os_errno;
    res->addr_refused = r->addr_refused;
    res->error = code != CURLE_OK ? (r->errbuf[0] ? r->errbuf : curl_easy_strerror(code)) : NULL;
    res->reason = code != CURLE_OK ? curl_easy_strerror(code) : NULL;
    res->body = r->resp.data ? r->resp.data : "";
    res->body_len = r->resp.len;
    curl_off_t us = 0;
    curl_easy_getinfo(e, CURLINFO_TOTAL_TIME_T, &us);
    res->seconds = (double)us / 1e6;
}

/* Creates the curl handle and hands it to the multi; false if curl refused. */
static bool start(struct httpc_req *r)
{
    struct httpc *c = r->c;
    long deadline = 0;
    if (r->deadline_ms) {
        /* The deadline covers the time spent waiting for a slot, as curl's own would. */
        uint64_t waited = loop_now(c->loop) - r->queued_at;
        if (waited >= r->deadline_ms)
            return false;
        deadline = (long)(r->deadline_ms - waited);
    }
    if (!multi_ready(c))
        return false;
    CURL *e = curl_easy_init();
    if (e == NULL)
        return false;
    httpc_req_setup(r, e, deadline);
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        return false;
    }
    r->easy = e;
    r->host->active++;
    return true;
}

/* Starts waiting requests while their origin has free slots. */
static void start_waiting(struct loop *l, void *arg)
{
    struct httpc *c = arg;
    (void)l;
    c->kick = NULL;
    size_t n;
    void **v = strmap_values(c->hosts, &n);
    for (size_t i = 0; i < n; i++) {
        struct host *h = v[i];
        while (!list_empty(&h->waiting) && h->active < c->per_origin) {
            struct httpc_req *r = list_entry(list_first(&h->waiting), struct httpc_req, qlink);
            list_unlink(&r->qlink);
            if (!start(r)) {
                bool late = r->deadline_ms && loop_now(c->loop) - r->queued_at >= r->deadline_ms;
                fail_unstarted(r, late,
                               late ? "the deadline passed while waiting for a slot"
                                    : "could not start the transfer");
            }
        }
    }
    free(v);
}

static void kick(struct httpc *c)
{
    if (c->kick == NULL)
        c->kick = loop_timer_add(c->loop, 0, start_waiting, c);
}

void httpc_req_fill(struct httpc_req *r, const struct httpc_opts *o)
{
    r->on_data = o->on_data;
    r->on_header = o->on_header;
    r->on_done = o->on_done;
    r->arg = o->arg;
    r->https_only = o->https_only;
    r->no_env_proxy = o->no_env_proxy;
    r->addr_ok = o->addr_ok;
    r->ca_file = o->ca_file ? xstrdup(o->ca_file) : NULL;
    r->user_agent = o->user_agent ? xstrdup(o->user_agent) : NULL;
    r->url = xstrdup(o->url);
    snprintf(r->method, sizeof r->method, "%s", o->method);
    r->connect_timeout_ms = (long)(o->connect_timeout_ms ? o->connect_timeout_ms : 5000);
    r->deadline_ms = o->deadline_ms;
    buf_init(&r->resp, o->max_response);
    for (size_t i = 0; i < o->nheaders; i++)
        r->headers = curl_slist_append(r->headers, o->headers[i]);
    if (strcmp(o->method, "POST") == 0) {
        r->body = xstrndup(o->body ? o->body : "", o->body ? o->body_len : 0);
        r->body_len = o->body ? o->body_len : 0;
    }
}

void httpc_headers_free(struct curl_slist *h)
{
    for (struct curl_slist *i = h; i; i = i->next)
        explicit_bzero(i->data, strlen(i->data));
    curl_slist_free_all(h);
}

void httpc_req_clear(struct httpc_req *r)
{
    httpc_headers_free(r->headers);
    r->headers = NULL;
    free(r->url);
    if (r->body) /* it may hold a token or a client secret (an introspection request) */
        explicit_bzero(r->body, r->body_len);
    free(r->body);
    free(r->ca_file);
    free(r->user_agent);
    r->url = r->body = r->ca_file = r->user_agent = NULL;
    buf_cleanup(&r->resp);
}

struct httpc_req *httpc_request(struct httpc *c, const struct httpc_opts *o)
{
    struct httpc_req *r = xcalloc(1, sizeof *r);
    char origin[300];

    httpc_req_fill(r, o);
    r->c = c;
    r->queued_at = loop_now(c->loop);
    /* No "Expect: 100-continue": a peer that ignores it would cost each POST a second. */
    r->headers = curl_slist_append(r->headers, "Expect:");
    origin_of(o->url, origin, sizeof origin);
    r->host = strmap_get(c->hosts, origin);
    if (r->host == NULL) {
        r->host = xcalloc(1, sizeof *r->host);
        list_init(&r->host->waiting);
        strmap_put(c->hosts, origin, r->host);
    }
    list_push_front(&c->reqs, &r->link);
    c->n++;
    /* curl refuses a new handle from inside its callbacks: from there it waits for the kick. */
    if (r->host->active < c->per_origin && list_empty(&r->host->waiting) && !c->in_curl) {
        if (!start(r)) {
            r->on_done = NULL;
            req_free(r);
            return NULL;
        }
        return r;
    }
    list_push_back(&r->host->waiting, &r->qlink);
    if (c->in_curl && r->host->active < c->per_origin)
        kick(c);
    return r;
}

void httpc_cancel(struct httpc_req *r)
{
    if (r == NULL || r->is_doomed || r->in_done)
        return;
    r->on_done = NULL;
    r->on_data = NULL;
    r->on_header = NULL;
    if (r->easy && r->c->in_curl) {
        /* Inside curl (the owner cancelled from on_data): its callbacks now abort the
         * transfer, and r is freed when curl returns (curl_action). */
        r->is_doomed = true;
        r->dnext = r->c->doomed;
        r->c->doomed = r;
        return;
    }
    req_free(r); /* removing the handle closes its connection: the peer sees the hang-up */
}

unsigned httpc_in_flight(const struct httpc *c)
{
    return c->n;
}

bool httpc_url_parse(const char *url, struct httpc_url *u)
{
    CURLU *h = curl_url();
    char *host = NULL, *part = NULL;
    bool ok = false;

    *u = (struct httpc_url){0};
    if (h == NULL) {
        u->unusable = true; /* libcurl could not be loaded: httpc_setup_error() */
        return false;
    }
    if (curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK && host && *host &&
        strlen(host) < sizeof u->host) {
        snprintf(u->host, sizeof u->host, "%s", host);
        if (curl_url_get(h, CURLUPART_QUERY, &part, 0) == CURLUE_OK && part)
            u->has_query = true;
        curl_free(part);
        part = NULL;
        if (curl_url_get(h, CURLUPART_USER, &part, 0) == CURLUE_OK && part)
            u->has_user = true;
        curl_free(part);
        ok = true;
    }
    curl_free(host);
    curl_url_cleanup(h);
    return ok;
}
