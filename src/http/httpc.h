/* httpc.h — the one HTTP client (libcurl). On the server: transfers on our loop, libcurl multi
 * driven by the loop's socket and timer callbacks, so a waiting transfer never blocks another.
 * The Hermes agent client (bridge/agentclient.c), the gateway's Streamable HTTP upstreams
 * (gateway/httpup.c) and the client metadata document fetches (auth/cimd.c) all sit on it. Loop
 * thread only. For a caller without a loop: blocking requests (the doctor and smoke commands)
 * and a batch sent at exit (below). libcurl is set up by the first request, not at start.
 *
 * A transfer either accumulates its response body (capped at max_response: past it the transfer
 * is aborted and reported as too_big) or, with on_data, streams it to the caller piece by piece.
 * on_done runs exactly once unless httpc_cancel() came first; httpc_cancel() is synchronous: no
 * callback runs after it returns. It may be called from any callback, r's own on_data and
 * on_done included (r is then freed once libcurl has returned). Never sends an Origin header. */
#ifndef HM_HTTPC_H
#define HM_HTTPC_H
#include <stdbool.h>
#include <stddef.h>

struct loop;
struct sockaddr;
struct httpc;
struct httpc_req;

struct httpc_result {
    long status;         /* HTTP status, 0 if none arrived */
    bool timed_out;      /* connect timeout or the deadline passed */
    bool too_big;        /* the response passed max_response */
    bool aborted;        /* on_data returned false */
    bool failed;         /* no HTTP answer (refused, reset, DNS...) */
    bool tls_failed;     /* the TLS handshake failed or the certificate was not trusted */
    bool cert_untrusted; /* of those, the server's certificate was not trusted */
    bool no_host;        /* the host name did not resolve */
    int os_errno;        /* the system's error of a failed connection (ECONNREFUSED), or 0 */
    bool addr_refused;   /* addr_ok refused a connection (another address may have served) */
    const char *error;   /* libcurl's text for failed/timed_out, for the operator's log */
    const char *reason;  /* libcurl's generic text for the error, naming no host or address:
                            for text a client sees; NULL when the transfer succeeded */
    const char *body;    /* accumulated body (NUL-terminated), "" when streamed */
    size_t body_len;
    double seconds; /* the transfer's duration; -1 when it never started */
};

typedef bool httpc_data_cb(struct httpc_req *r, const char *data, size_t len, void *arg);
/* One response header line without its line end, every line however long (curl caps it). */
typedef void httpc_header_cb(struct httpc_req *r, const char *line, void *arg);
typedef void httpc_done_cb(struct httpc_req *r, const struct httpc_result *res, void *arg);
/* The address of a connection curl is about to open, after resolution: false refuses it. Runs
 * inside curl: it may not cancel or start a request. */
typedef bool httpc_addr_cb(const struct sockaddr *addr, void *arg);

struct httpc_opts {
    const char *method; /* "GET", "POST" or "DELETE" */
    const char *url;
    const char *const *headers; /* "Name: value" lines (copied), may be NULL */
    size_t nheaders;
    const char *body; /* POST body, may be NULL */
    size_t body_len;
    unsigned connect_timeout_ms; /* 0: 5 s */
    unsigned deadline_ms;        /* whole transfer, time waiting for a slot included; 0: none */
    size_t max_response;         /* accumulated bytes (ignored with on_data) */
    httpc_data_cb *on_data;      /* stream the body; return false to abort the transfer */
    httpc_header_cb *on_header;  /* may be NULL */
    httpc_done_cb *on_done;
    void *arg;
    /* For a URL a stranger chose (auth/cimd.c), where the fetch is an SSRF hazard: */
    bool https_only;        /* no other protocol, for the request and any redirect */
    bool no_env_proxy;      /* no proxy from the environment: it would resolve for us */
    httpc_addr_cb *addr_ok; /* checks every connection's address; NULL: any */
    const char *ca_file;    /* an extra CA bundle (PEM, copied) to trust with the system's */
    const char *user_agent; /* copied; NULL: none */
};

/* At most per_origin transfers run at once per scheme://host:port; the others wait in our own
 * queue, holding only their options (a curl handle costs ~20 KiB before it even connects). */
struct httpc *httpc_new(struct loop *l, unsigned per_origin);
/* Cancels every transfer (no callbacks) and frees. NULL-safe. */
void httpc_free(struct httpc *c);
/* Starts a transfer. Returns NULL (and no callback) if libcurl refused the setup. */
struct httpc_req *httpc_request(struct httpc *c, const struct httpc_opts *o);
void httpc_cancel(struct httpc_req *r); /* NULL-safe */
unsigned httpc_in_flight(const struct httpc *c);

/* ---------- without a loop ---------- */

/* A blocking request, for the command-line tools: one at a time on the calling thread, which
 * waits for its end. A session keeps its connection open for its next request. */
struct httpc_session;
/* NULL when libcurl could not be set up; httpc_setup_error() says why. */
struct httpc_session *httpc_session_new(void);
/* Why libcurl could not be loaded or set up, as one line for a person. */
const char *httpc_setup_error(void);
void httpc_session_free(struct httpc_session *s); /* NULL-safe */
/* Sends o and waits for the end of its transfer (deadline_ms bounds it, 0: no bound). o's
 * on_data, on_header and arg work as on the loop (the request they get is s's own); on_done,
 * per_origin queueing and httpc_cancel do not apply. *res is valid until s's next request.
 * Unlike the loop's transfers, a large POST body goes with curl's "Expect: 100-continue", and an
 * HTTP error status that arrived while the body was still being sent is the answer: a server
 * may refuse a body before it has read it all. */
void httpc_fetch(struct httpc_session *s, const struct httpc_opts *o, struct httpc_result *res);

/* Requests sent at the very end, when the loop no longer runs (the gateway's session DELETEs at
 * shutdown): queued, then sent all at once and waited for, so a slow peer does not hold the
 * others or the exit. Their curl handles are built as the loop's are (one helper). */
struct httpc_batch;
/* done: the transfer ended in time; error: curl's text when it failed, NULL when it did not. */
typedef void httpc_batch_cb(const char *label, bool done, const char *error, void *arg);
struct httpc_batch *httpc_batch_new(void);
/* Queues a request without body (o's method, url, headers, connect_timeout_ms, https_only;
 * the answer is discarded); label (copied) names it in the report. False if curl refused. */
bool httpc_batch_add(struct httpc_batch *b, const struct httpc_opts *o, const char *label);
/* Sends every queued request, waits timeout_ms at most in all, reports each, frees b. NULL-safe. */
void httpc_batch_run(struct httpc_batch *b, unsigned timeout_ms, httpc_batch_cb *report, void *arg);

/* The parts of an absolute http(s) URL a caller checks before sending anything, as the client
 * itself reads the URL. */
struct httpc_url {
    char host[1024]; /* an IPv6 address in brackets */
    bool has_query;  /* "?..." */
    bool has_user;   /* a user name (and maybe a password) before the host */
    bool unusable;   /* false returned because libcurl is missing: httpc_setup_error() */
};
/* False when url is not a URL with a host, or the host does not fit. */
bool httpc_url_parse(const char *url, struct httpc_url *u);

#endif
