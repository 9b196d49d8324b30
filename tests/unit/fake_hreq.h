/* fake_hreq.h — the hreq_* functions the MCP engine calls (httpd.h), for unit tests of the
 * engine: a test's request is a struct hreq with the headers and body it sets, and what the
 * engine answers is recorded in it (status, reply, or the streamed text). Linking these instead
 * of httpd.o means no libmicrohttpd and no socket. A hang-up is the abort callback, fired as
 * httpd does (hang_up). Included by exactly one file of each test binary. */
#ifndef HM_FAKE_HREQ_H
#define HM_FAKE_HREQ_H
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "httpd.h"

struct hreq {
    const char *accept, *session, *body;
    const char *version;       /* MCP-Protocol-Version; NULL: 2025-06-18 */
    const char *headers[8][2]; /* any other request headers: {name, value} */
    unsigned status;
    char *reply;  /* a complete reply */
    char *stream; /* what was streamed, NUL-terminated */
    size_t stream_len;
    bool streaming, ended;
    char session_out[80]; /* Mcp-Session-Id the engine issued */
    char retry_after[16]; /* Retry-After the engine added */
    httpd_cb *abort_cb;
    void *abort_arg;
};

const char *hreq_method(const struct hreq *r)
{
    (void)r;
    return "POST";
}
const char *hreq_body(const struct hreq *r, size_t *len)
{
    *len = strlen(r->body);
    return r->body;
}
const char *hreq_header(const struct hreq *r, const char *name)
{
    if (strcasecmp(name, "Accept") == 0)
        return r->accept;
    if (strcasecmp(name, "Mcp-Session-Id") == 0)
        return r->session;
    if (strcasecmp(name, "Content-Type") == 0)
        return "application/json";
    for (size_t i = 0; i < 8 && r->headers[i][0]; i++)
        if (strcasecmp(name, r->headers[i][0]) == 0)
            return r->headers[i][1];
    if (strcasecmp(name, "MCP-Protocol-Version") == 0)
        return r->version ? r->version : "2025-06-18";
    return NULL;
}
void hreq_add_header(struct hreq *r, const char *name, const char *value)
{
    if (strcasecmp(name, "Mcp-Session-Id") == 0)
        snprintf(r->session_out, sizeof r->session_out, "%s", value);
    if (strcasecmp(name, "Retry-After") == 0)
        snprintf(r->retry_after, sizeof r->retry_after, "%s", value);
}
void hreq_on_abort(struct hreq *r, httpd_cb *cb, void *arg)
{
    r->abort_cb = cb;
    r->abort_arg = arg;
}
void hreq_reply_take(struct hreq *r, unsigned status, const char *ct, char *body, size_t len)
{
    (void)ct;
    assert_false(r->streaming);
    assert_null(r->reply); /* one answer per request */
    r->status = status;
    r->reply = strndup(body ? body : "", len);
    r->abort_cb = NULL;
    free(body);
}
void hreq_reply(struct hreq *r, unsigned status, const char *ct, const char *body, size_t len)
{
    char *copy = malloc(len + 1);
    memcpy(copy, body, len);
    hreq_reply_take(r, status, ct, copy, len);
}
void hreq_stream_start(struct hreq *r, unsigned status, const char *ct)
{
    (void)ct;
    r->status = status;
    r->streaming = true;
}
bool hreq_stream_write(struct hreq *r, const char *data, size_t len)
{
    assert_true(r->streaming);
    assert_false(r->ended);
    r->stream = realloc(r->stream, r->stream_len + len + 1);
    memcpy(r->stream + r->stream_len, data, len);
    r->stream_len += len;
    r->stream[r->stream_len] = '\0';
    return true;
}
void hreq_stream_end(struct hreq *r)
{
    r->ended = true;
    r->abort_cb = NULL;
}

/* What httpd does when the client goes away. */
static inline void hang_up(struct hreq *r)
{
    httpd_cb *cb = r->abort_cb;
    r->abort_cb = NULL;
    assert_non_null(cb);
    cb(r, r->abort_arg);
}

static inline void req_cleanup(struct hreq *r)
{
    free(r->reply);
    free(r->stream);
}

#endif
