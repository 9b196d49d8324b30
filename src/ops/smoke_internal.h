/* smoke_internal.h — what the files of `hermes-mcp smoke` share: its state, one HTTP exchange
 * (smoke_http.c: a blocking httpc request that reads a JSON body or an SSE stream up to
 * the JSON-RPC answer it waits for, and the MCP calls over it), where it points and its token
 * (smoke_config.c), and the report helpers of
 * smoke.c (text cleaned of the token; a failed step's reason and fix). */
#ifndef HM_SMOKE_INTERNAL_H
#define HM_SMOKE_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "httpc.h"
#include "report.h"
#include "sse.h"

#define ANSWER_MAX (8 * 1024 * 1024) /* the largest answer we read (result.json is <= 200 KiB) */
#define PROTOCOL_VERSION "2025-11-25"

struct smoke {
    char base[1024]; /* scheme://host[:port][/prefix], no trailing slash */
    char mcp_url[1100];
    char health_url[1100];
    char id[129];
    const char *env_file;
    const char *token_file;  /* --token-file, or NULL */
    char token_source[1100]; /* where the token came from, for the fix of a 401 */
    const char *cacert;      /* --cacert, or NULL for the system's CA store */
    char *token;             /* secret: wiped and freed at the end */
    struct report rep;       /* scrubs the token from every line printed */
    long timeout_s;
    struct httpc_session *http;               /* one connection, kept from request to request */
    char version[32];                         /* negotiated protocol version, after initialize */
    char server_name[80], server_version[40]; /* its serverInfo, cleaned, after initialize */
    char session[256];                        /* Mcp-Session-Id, when the server issued one */
    json_int_t next_id;
    int passed, failed, skipped;
    char why[1024]; /* what went wrong in the last helper that returned false */
    char fix[512];  /* and what to do about it */
};

/* One HTTP exchange. For MCP answers the JSON-RPC response with want_id is picked out of either
 * a JSON body or an SSE stream; reading stops as soon as it arrived. */
struct reply {
    bool failed;         /* the exchange did not complete: error says why */
    bool timed_out;      /* of those, no answer within --timeout */
    bool cert_untrusted; /* of those, the server's certificate was not trusted */
    long status;
    char ctype[128];
    char www_auth[256];
    char session[256];
    struct buf body;
    bool started, is_sse, done, too_big;
    struct sse_decoder sse;
    json_int_t want_id;
    json_t *msg;
    char error[256]; /* libcurl's text (operator-facing: smoke prints it, cleaned) */
};

enum { H_AUTH = 1, H_MCP = 2 };

/* smoke.c: server- or libcurl-provided text into out (at most outlen-1 bytes), the token
 * "[redacted]" and control characters '?' (report.h); the token goes before anything is cut. */
void smoke_clean_text(const struct smoke *s, const char *in, size_t inlen, char *out,
                      size_t outlen);
/* Server text (NULL: "(none)") cleaned and cut to outlen-1 bytes, in that order. */
const char *smoke_cut(const struct smoke *s, const char *in, char *out, size_t outlen);
/* Records why a step failed (s->why) and its fix (s->fix); returns false. */
bool smoke_problem(struct smoke *s, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* smoke_config.c: --base into s's URLs; the bearer token into s->token. False with err. */
bool smoke_parse_base(struct smoke *s, const char *url, char *err, size_t errlen);
bool smoke_read_token(struct smoke *s, char *err, size_t errlen);

/* smoke_http.c */
void smoke_request(struct smoke *s, const char *method, const char *url, const char *body,
                   size_t len, int flags, json_int_t want_id, struct reply *r);
void smoke_reply_cleanup(struct reply *r);
const char *smoke_transport_error(struct smoke *s, struct reply *r, char *out, size_t outlen);
void smoke_answer_excerpt(struct smoke *s, struct reply *r, char *out, size_t outlen);
void smoke_status_fix(struct smoke *s, long status, char *out, size_t outlen);
json_t *smoke_rpc(struct smoke *s, const char *method, json_t *params);
json_t *smoke_call_tool(struct smoke *s, const char *name, json_t *args, bool *is_error);
const char *smoke_str(json_t *o, const char *key);
void smoke_tool_error_why(struct smoke *s, const char *prefix, json_t *sc);

#endif
