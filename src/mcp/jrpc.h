/* jrpc.h — JSON-RPC 2.0 envelope parsing and building. Pure: no I/O, no globals; fuzzed. */
#ifndef HM_JRPC_H
#define HM_JRPC_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The JSON-RPC error codes this server answers with: the five of JSON-RPC 2.0 and those of
 * MCP and of this server, in one enum; jrpc_err_at walks their table (what each means here),
 * from which docs/reference/errors.md is made. Codes a peer sends are passed on as they are. */
enum jrpc_err {
    JRPC_PARSE_ERROR = -32700,
    JRPC_INVALID_REQUEST = -32600,
    JRPC_METHOD_NOT_FOUND = -32601,
    JRPC_INVALID_PARAMS = -32602,
    JRPC_INTERNAL_ERROR = -32603,
    JRPC_SHUTTING_DOWN = -32000,     /* the server stops: a call still running when it drains */
    JRPC_REQUEST_TIMEOUT = -32001,   /* the MCP SDKs' code for a request that timed out */
    JRPC_SESSION_NOT_FOUND = -32001, /* the SDKs' code too, with HTTP 404 */
    JRPC_RESOURCE_NOT_FOUND = -32002,
    JRPC_FORBIDDEN = -32003,           /* the credential lacks the scope */
    JRPC_UNAVAILABLE = -32004,         /* what the request needs is away for now: retry later */
    JRPC_HEADER_MISMATCH = -32020,     /* 2026-07-28: a header disagrees with the body */
    JRPC_MISSING_CAPABILITY = -32021,  /* 2026-07-28: the client did not declare what it uses */
    JRPC_UNSUPPORTED_VERSION = -32022, /* 2026-07-28: a protocol version we do not serve */
};

struct jrpc_err_info {
    int code;
    const char *text;    /* the code in decimal, for the audit log (the unit test checks it) */
    const char *name;    /* the message's usual first words */
    const char *meaning; /* when this server sends it */
};
/* The i-th row of the table (NULL past its end). */
const struct jrpc_err_info *jrpc_err_at(size_t i);
/* The code as text, e.g. "-32602" for the audit log (static storage). */
const char *jrpc_err_text(int code);

enum jrpc_kind { JRPC_REQUEST, JRPC_NOTIFICATION, JRPC_RESPONSE, JRPC_INVALID };

/* Client-safe reason a message was refused. */
struct jrpc_why {
    int code;
    char msg[256];
    json_t *id; /* the request's id when it could still be read (new reference), or NULL */
};

/* One classified message. Borrowed pointers into the parsed document. */
struct jrpc_msg {
    enum jrpc_kind kind;
    json_t *id; /* request/response id (string or integer), NULL for notifications */
    const char *method;
    json_t *params;      /* object or NULL */
    json_t *result;      /* responses */
    json_t *error;       /* responses */
    struct jrpc_why why; /* for JRPC_INVALID */
};

/* Parses a body. On success returns a new reference (object or non-empty array). On failure
 * returns NULL and fills why (-32700 for bad JSON, -32600 for an empty array, a scalar or a
 * NUL in an object key); the caller releases why->id. */
json_t *jrpc_parse(const char *p, size_t n, struct jrpc_why *why);
/* The flags jrpc_parse reads a body with (for code that parses a part of a body the same way). */
#define JRPC_LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL)
/* Where params._meta is in a body (jrpc_find_meta). */
struct jrpc_meta_at {
    size_t start, end; /* the _meta object's bytes */
    /* What may be cut out of the body, with one comma beside it: the params member (when it
     * holds only _meta), the _meta member, or nothing (then replace the value). */
    enum { JRPC_CUT_NONE, JRPC_CUT_PARAMS, JRPC_CUT_META } cut;
    size_t cut_start, cut_end;
};
/* The length of a complete JSON value that the n bytes at s begin with, when the caller knows
 * one (a value it parsed before: the same bytes end in the same place), else 0. */
typedef size_t jrpc_known_fn(void *arg, const char *s, size_t n);
/* Finds, without parsing, params._meta in a body that is one JSON object, when it is itself an
 * object. A scan, not a check: it takes the first "params" and its first "_meta" spelled
 * without escapes and stops there; the body may still be invalid JSON (the caller parses what
 * it uses). known (may be NULL) spares scanning a _meta value seen before. */
bool jrpc_find_meta(const char *p, size_t n, struct jrpc_meta_at *at, jrpc_known_fn *known,
                    void *arg);
/* Classifies one element. Never fails: malformed messages come back as JRPC_INVALID with the
 * id, if one could be salvaged, kept for the error reply. */
void jrpc_classify(json_t *m, struct jrpc_msg *out);

/* New references: a success response, an error response (id may be NULL → null). */
json_t *jrpc_result(json_t *id, json_t *result_take);
json_t *jrpc_error(json_t *id, int code, const char *message);
json_t *jrpc_notification(const char *method, json_t *params_take);
json_t *jrpc_request(json_t *id, const char *method, json_t *params_take);

/* The text of a JSON string that holds no NUL character, else NULL (not a string, or one with
 * "\u0000" in it: valid JSON, but as a C string it would read as a shorter one, and
 * "tools/list\u0000x" must never pass for "tools/list"). */
const char *jrpc_str(json_t *v);

/* A stable text key for an id: "s:<string>" or "i:<integer>". */
bool jrpc_id_key(json_t *id, char *out, size_t outlen);

#endif
