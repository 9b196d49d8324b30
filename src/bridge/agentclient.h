/* agentclient.h — HTTP client for the Hermes Agent API: libcurl multi driven by our loop (socket
 * and timer callbacks), so a waiting call never blocks another. Loop thread only.
 *
 * A request either accumulates its response body (capped at max_response: past it the transfer
 * is aborted and reported as too_big) or, with on_data, streams it to the caller piece by piece.
 * on_done runs exactly once unless agent_cancel() came first; agent_cancel() is synchronous:
 * no callback runs after it returns. It may be called from any callback, r's own on_data and
 * on_done included (r is then freed once libcurl has returned). Never sends an Origin header. */
#ifndef HM_AGENTCLIENT_H
#define HM_AGENTCLIENT_H
#include <stdbool.h>
#include <stddef.h>

struct loop;
struct agent_client;
struct agent_req;

struct agent_result {
    long status;       /* HTTP status, 0 if none arrived */
    bool timed_out;    /* connect timeout or the deadline passed */
    bool too_big;      /* the response passed max_response */
    bool failed;       /* no HTTP answer (refused, reset, DNS...) */
    const char *error; /* libcurl's text for failed/timed_out, for the operator's log */
    const char *body;  /* accumulated body (NUL-terminated), "" when streamed */
    size_t body_len;
    unsigned retry_after;   /* seconds from Retry-After, 0 if absent */
    const char *session_id; /* X-Hermes-Session-Id of the answer, or NULL */
    bool replayed;          /* Idempotency-Replayed: true */
};

typedef bool agent_data_cb(struct agent_req *r, const char *data, size_t len, void *arg);
typedef void agent_done_cb(struct agent_req *r, const struct agent_result *res, void *arg);

struct agent_opts {
    const char *method; /* "GET" or "POST" */
    const char *url;
    const char *key;             /* Bearer key, may be NULL */
    const char *session_header;  /* X-Hermes-Session-Id, may be NULL */
    const char *idempotency_key; /* may be NULL */
    const char *traceparent;     /* W3C trace context headers (tracing), may be NULL */
    const char *tracestate;
    const char *body; /* JSON, may be NULL */
    size_t body_len;
    bool accept_sse; /* Accept: text/event-stream */
    unsigned connect_timeout_ms;
    unsigned deadline_ms;   /* whole transfer; 0: none */
    size_t max_response;    /* accumulated bytes, or per SSE event when streaming */
    agent_data_cb *on_data; /* stream the body; return false to abort the transfer */
    agent_done_cb *on_done;
    void *arg;
    const char *label;    /* for /metrics: the agent's name (copied), may be NULL */
    const char *endpoint; /* for /metrics: a fixed word such as "chat" (copied) */
};

struct agent_client *agent_client_new(struct loop *l);
/* Cancels every transfer (no callbacks) and frees. NULL-safe. */
void agent_client_free(struct agent_client *c);
/* Starts a transfer. Returns NULL (and no callback) if libcurl refused the setup. */
struct agent_req *agent_request(struct agent_client *c, const struct agent_opts *o);
void agent_cancel(struct agent_req *r); /* NULL-safe */
unsigned agent_in_flight(const struct agent_client *c);
/* Appends the transfer counters and durations by agent, endpoint and outcome (Prometheus). */
struct buf;
void agent_client_metrics(const struct agent_client *c, struct buf *out);

#endif
