/* agentclient.c — the Hermes Agent API client: an agent's requests on the loop's HTTP client
 * (http/httpc.c, libcurl multi in our epoll loop), with what is particular to agents: the
 * Bearer key, session and idempotency headers, the answers' Retry-After, X-Hermes-Session-Id
 * and Idempotency-Replayed, and the per-agent /metrics. At most HOST_ACTIVE transfers run per
 * agent origin; the others wait in httpc's queue.
 *
 * httpc frees its own request once curl has returned; ours (struct agent_req) is freed by the
 * trampoline that called the owner's callback, after it returned, when the owner cancelled from
 * inside it: never inside the owner's callback. */
#include "agentclient.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "httpc.h"
#include "list.h"
#include "log.h"
#include "mem.h"
#include "metrics.h"

#define HOST_ACTIVE 64 /* transfers at once per agent origin (scheme://host:port) */

struct agent_client {
    struct httpc *http;
    struct list reqs; /* every request, running or waiting (by link) */
    unsigned n;
    struct metric *requests, *duration;
};

struct agent_req {
    struct agent_client *c;
    struct httpc_req *h;
    agent_data_cb *on_data;
    agent_done_cb *on_done;
    void *arg;
    unsigned in_cb; /* >0 while the owner's on_data runs */
    bool cancelled; /* cancelled inside on_data: freed when it returns */
    bool in_done;   /* on_done is running: freed after it */
    unsigned retry_after;
    char session_id[300];
    bool replayed;
    char label[65], endpoint[16];
    struct list link; /* in c->reqs */
};

/* What became of a transfer, as a bounded word for the outcome label. */
static const char *outcome(const struct httpc_result *res, char *tmp, size_t n)
{
    if (res->timed_out)
        return "timeout";
    if (res->too_big)
        return "too_big";
    if (res->aborted)
        return "aborted";
    if (res->failed || res->status == 0)
        return "unreachable";
    if (res->status >= 200 && res->status < 300)
        return "ok";
    snprintf(tmp, n, "http_%ld", res->status < 100 || res->status > 599 ? 0 : res->status);
    return tmp;
}

static void count(struct agent_req *r, const char *what, double seconds)
{
    char labels[200];
    metric_labels(labels, sizeof labels, "agent", r->label[0] ? r->label : "(none)", "endpoint",
                  r->endpoint[0] ? r->endpoint : "other", "outcome", what, NULL);
    metric_add(r->c->requests, labels, 1);
    if (seconds >= 0) {
        metric_labels(labels, sizeof labels, "agent", r->label[0] ? r->label : "(none)", "endpoint",
                      r->endpoint[0] ? r->endpoint : "other", NULL);
        metric_observe(r->c->duration, labels, seconds);
    }
}

static void wrapper_free(struct agent_req *r)
{
    struct agent_client *c = r->c;
    list_unlink(&r->link);
    c->n--;
    free(r);
}

static bool on_data(struct httpc_req *h, const char *data, size_t len, void *arg)
{
    struct agent_req *r = arg;
    (void)h;
    r->in_cb++;
    bool ok = r->on_data(r, data, len, r->arg);
    r->in_cb--;
    if (r->cancelled) {
        wrapper_free(r); /* httpc frees h once curl returns */
        return false;
    }
    return ok;
}

static void on_header(struct httpc_req *h, const char *line, void *arg)
{
    struct agent_req *r = arg;
    (void)h;
    if (strncasecmp(line, "Retry-After:", 12) == 0)
        r->retry_after = (unsigned)strtoul(line + 12, NULL, 10);
    else if (strncasecmp(line, "X-Hermes-Session-Id:", 20) == 0)
        snprintf(r->session_id, sizeof r->session_id, "%s", line + 20 + strspn(line + 20, " "));
    else if (strncasecmp(line, "Idempotency-Replayed:", 21) == 0)
        r->replayed = strstr(line + 21, "true") != NULL;
}

static void on_done(struct httpc_req *h, const struct httpc_result *hres, void *arg)
{
    struct agent_req *r = arg;
    char tmp[16];
    (void)h;
    struct agent_result res = {.status = hres->status,
                               .timed_out = hres->timed_out,
                               .too_big = hres->too_big,
                               .failed = hres->failed,
                               .error = hres->error,
                               .body = hres->body,
                               .body_len = hres->body_len,
                               .retry_after = r->retry_after,
                               .session_id = r->session_id[0] ? r->session_id : NULL,
                               .replayed = r->replayed};
    count(r, outcome(hres, tmp, sizeof tmp), hres->seconds);
    r->in_done = true; /* an agent_cancel(r) from the callback is a no-op */
    if (r->on_done)
        r->on_done(r, &res, r->arg);
    wrapper_free(r);
}

struct agent_client *agent_client_new(struct loop *l)
{
    struct agent_client *c = xcalloc(1, sizeof *c);
    list_init(&c->reqs);
    c->http = httpc_new(l, HOST_ACTIVE);
    static const double bounds[] = {0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120, 600, 1800};
    c->requests = metric_new("hermes_mcp_agent_requests_total",
                             "HTTP requests to agents, by agent, endpoint and outcome",
                             METRIC_COUNTER, NULL, 0);
    c->duration = metric_new("hermes_mcp_agent_request_duration_seconds",
                             "Time to a finished agent request, by agent and endpoint",
                             METRIC_HISTOGRAM, bounds, sizeof bounds / sizeof *bounds);
    return c;
}

void agent_client_free(struct agent_client *c)
{
    if (c == NULL)
        return;
    while (!list_empty(&c->reqs))
        agent_cancel(list_entry(list_first(&c->reqs), struct agent_req, link));
    httpc_free(c->http);
    metric_free(c->requests);
    metric_free(c->duration);
    free(c);
}

struct agent_req *agent_request(struct agent_client *c, const struct agent_opts *o)
{
    struct agent_req *r = xcalloc(1, sizeof *r);
    char key[512], session[512], idem[512], tp[80], ts[560];
    const char *headers[8];
    size_t n = 0;

    r->c = c;
    r->on_data = o->on_data;
    r->on_done = o->on_done;
    r->arg = o->arg;
    snprintf(r->label, sizeof r->label, "%s", o->label ? o->label : "");
    snprintf(r->endpoint, sizeof r->endpoint, "%s", o->endpoint ? o->endpoint : "");
    if (o->key) {
        snprintf(key, sizeof key, "Authorization: Bearer %s", o->key);
        headers[n++] = key;
    }
    if (o->session_header) {
        snprintf(session, sizeof session, "X-Hermes-Session-Id: %s", o->session_header);
        headers[n++] = session;
    }
    if (o->idempotency_key) {
        snprintf(idem, sizeof idem, "Idempotency-Key: %s", o->idempotency_key);
        headers[n++] = idem;
    }
    if (o->traceparent) { /* ours, formatted; the tracestate was checked (no line breaks) */
        snprintf(tp, sizeof tp, "traceparent: %s", o->traceparent);
        headers[n++] = tp;
        if (o->tracestate && *o->tracestate) {
            snprintf(ts, sizeof ts, "tracestate: %s", o->tracestate);
            headers[n++] = ts;
        }
    }
    headers[n++] = o->accept_sse ? "Accept: text/event-stream" : "Accept: application/json";
    if (strcmp(o->method, "POST") == 0)
        headers[n++] = "Content-Type: application/json";
    struct httpc_opts ho = {.method = o->method,
                            .url = o->url,
                            .headers = headers,
                            .nheaders = n,
                            .body = o->body,
                            .body_len = o->body_len,
                            .connect_timeout_ms = o->connect_timeout_ms,
                            .deadline_ms = o->deadline_ms,
                            .max_response = o->max_response,
                            .on_data = o->on_data ? on_data : NULL,
                            .on_header = on_header,
                            .on_done = on_done,
                            .arg = r};
    list_push_front(&c->reqs, &r->link);
    c->n++;
    r->h = httpc_request(c->http, &ho);
    memset(key, 0, sizeof key);
    if (r->h == NULL) {
        wrapper_free(r);
        return NULL;
    }
    return r;
}

void agent_cancel(struct agent_req *r)
{
    if (r == NULL || r->cancelled || r->in_done)
        return;
    if (r->on_done)
        count(r, "cancelled", -1);
    httpc_cancel(r->h);
    if (r->in_cb) {
        r->cancelled = true; /* freed by on_data once the owner's callback returned */
        return;
    }
    wrapper_free(r);
}

unsigned agent_in_flight(const struct agent_client *c)
{
    return c->n;
}

void agent_client_metrics(const struct agent_client *c, struct buf *out)
{
    metric_render(c->requests, out);
    metric_render(c->duration, out);
    metric_render_value(out, "hermes_mcp_agent_requests_in_flight",
                        "Agent requests under way (including streams of running tasks)",
                        METRIC_GAUGE, c->n);
}
