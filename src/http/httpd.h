/* httpd.h — libmicrohttpd glue: one daemon in external-epoll mode nested in our loop.
 *
 * A request is handed over twice: on_headers (headers only, body not read yet: reject early here)
 * and on_request (whole body read, within max_body). Either callback may answer at once with
 * hreq_reply(), open a stream with hreq_stream_start(), or return without answering: the
 * connection is then suspended until the owner answers later. While a request waits, a client
 * hang-up is seen (EPOLLRDHUP) and reported through the abort callback. Everything runs on the
 * loop thread. A struct hreq lives until its response is done; after the abort callback has
 * run, or once a reply or stream end was given, the owner must not touch it again. */
#ifndef HM_HTTPD_H
#define HM_HTTPD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct httpd;
struct hreq;

typedef void httpd_cb(struct hreq *req, void *arg);
/* Called once per request when its response is done or the connection died: status sent (0 if
 * none), milliseconds since the headers arrived. The request is still readable. */
typedef void httpd_done_cb(struct hreq *req, unsigned status, uint64_t duration_ms, void *arg);

/* Words an answer httpd gives on its own (400 for conflicting framing, control characters or
 * an unsupported Transfer-Encoding; 413 for a body too large; 503 while stopping) in the
 * owner's protocol: writes the body for message into out (outsz bytes, NUL-terminated) and
 * returns its content type. */
typedef const char *httpd_error_body_cb(char *out, size_t outsz, const char *message);

struct httpd_opts {
    const char *host;           /* listen address; ignored when listen_fd >= 0 */
    unsigned port;              /* 0: pick a free port */
    int listen_fd;              /* an already listening socket (systemd), or -1 */
    size_t max_body;            /* bytes; larger bodies get 413 */
    unsigned max_conns;         /* simultaneous connections */
    unsigned idle_timeout;      /* seconds a connection may sit idle between requests */
    unsigned header_timeout_ms; /* a request's headers must arrive within this (0: none) */
    unsigned body_timeout_ms;   /* and its body within this after the headers (0: none) */
    httpd_cb *on_headers;       /* may be NULL */
    httpd_cb *on_request;
    httpd_done_cb *on_done;          /* may be NULL */
    httpd_error_body_cb *error_body; /* NULL: the answers httpd gives itself are text/plain */
    void *arg;
};

/* Binds and starts serving on the loop. On failure returns NULL and writes a reason to err. */
struct httpd *httpd_new(struct loop *l, const struct httpd_opts *o, char *err, size_t errlen);
unsigned httpd_port(const struct httpd *h);
/* The first step of a graceful stop: no new connections (the listening socket is closed), and
 * a new request on a kept-alive connection gets 503 with Retry-After and Connection: close.
 * Requests already under way carry on. */
void httpd_drain(struct httpd *h);
/* Requests whose body is still arriving (not yet handed to on_request). */
size_t httpd_receiving(const struct httpd *h);
/* Answers every waiting request (503 with Retry-After, streams ended), lets the answers go out,
 * then stops. */
void httpd_shutdown(struct httpd *h);
struct httpd_stats {
    unsigned connections; /* open client connections */
    size_t requests;      /* requests received and not yet finished */
    size_t waiting;       /* of which held open, waiting for their answer */
    size_t streaming;     /* of which answering as a stream (SSE) */
};
void httpd_stats(const struct httpd *h, struct httpd_stats *st);
void httpd_free(struct httpd *h); /* NULL-safe; calls httpd_shutdown if needed */

const char *hreq_method(const struct hreq *r);
const char *hreq_path(const struct hreq *r);
const char *hreq_header(const struct hreq *r, const char *name);
/* Number of times a request header occurs (duplicates are not merged). */
unsigned hreq_header_count(const struct hreq *r, const char *name);
/* The last line of a header sent more than once (hreq_header gives the first). */
const char *hreq_header_last(const struct hreq *r, const char *name);
/* Every header line in the order received, until fn returns false: one pass where a caller
 * wants several headers (each hreq_header is a pass of its own). */
typedef bool hreq_header_fn(const char *name, const char *value, void *arg);
void hreq_each_header(const struct hreq *r, hreq_header_fn *fn, void *arg);
const char *hreq_query(const struct hreq *r, const char *name);
const char *hreq_body(const struct hreq *r, size_t *len);
const char *hreq_peer(const struct hreq *r); /* client IP as text */
bool hreq_is_head(const struct hreq *r);

/* Adds a header to the response that will be sent (before reply or stream start). */
void hreq_add_header(struct hreq *r, const char *name, const char *value);
/* Sends a complete response; body is copied. */
void hreq_reply(struct hreq *r, unsigned status, const char *content_type, const char *body,
                size_t len);
/* The same, taking body (malloc'd, len bytes, NUL not needed) instead of copying it. */
void hreq_reply_take(struct hreq *r, unsigned status, const char *content_type, char *body,
                     size_t len);
/* Starts a chunked response of unknown length, then hreq_stream_write/end. */
void hreq_stream_start(struct hreq *r, unsigned status, const char *content_type);
/* False when the bytes were not queued: the stream ended, or was dropped for its backlog (the
 * client stopped reading); the owner hears of a drop through hreq_on_abort, later. */
bool hreq_stream_write(struct hreq *r, const char *data, size_t len);
void hreq_stream_end(struct hreq *r);

/* From on_headers only: parks r before its body is read, while the owner learns what it needs
 * to judge the headers (a signing key to fetch). hreq_release() later (never from inside
 * on_headers) runs on_headers again, from the loop, as if the headers had just arrived; a
 * hang-up meanwhile runs the abort callback instead. A held request may also be answered. */
void hreq_hold(struct hreq *r);
void hreq_release(struct hreq *r);

/* cb runs at most once if the client goes away (or the server stops) before the response ends.
 * It never runs inside a call the owner made into httpd: a stream whose client stopped reading
 * (past the backlog cap, hreq_stream_write) is dropped at once, but cb runs from the loop. */
void hreq_on_abort(struct hreq *r, httpd_cb *cb, void *arg);
/* The owner's own record of a request (what it was about, for the audit log, say): httpd only
 * keeps it. free_fn (may be NULL) gets it once the request is done, after on_done, from httpd
 * itself; setting another record frees the one before the same way. */
void hreq_set_user(struct hreq *r, void *user, void (*free_fn)(void *user));
void *hreq_user(const struct hreq *r);

#endif
