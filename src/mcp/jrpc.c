/* jrpc.c — JSON-RPC 2.0 envelope parsing and building. */
#include "jrpc.h"

#include "utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void why_set(struct jrpc_why *why, int code, const char *msg)
{
    why->code = code;
    snprintf(why->msg, sizeof why->msg, "%s", msg);
}

static bool id_ok(json_t *id);

/* The id of a request jansson refused for a NUL in an object key: parsed again with every
 * \u0000 escape read as \u0001 (same length, still valid), so the client can match the error
 * to its request instead of waiting for its timeout. NULL if there is none to give. */
static json_t *salvage_id(const char *p, size_t n)
{
    char *copy = malloc(n ? n : 1);
    if (copy == NULL)
        return NULL;
    memcpy(copy, p, n);
    for (size_t i = 0; i + 1 < n; i++) {
        if (copy[i] != '\\')
            continue;
        if (copy[i + 1] == 'u' && i + 5 < n && memcmp(copy + i + 2, "0000", 4) == 0)
            copy[i + 5] = '1';
        i++; /* the escaped character, so \\u0000 (a backslash, then text) stays as it is */
    }
    json_t *root = json_loadb(copy, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    free(copy);
    json_t *id = json_object_get(root, "id");
    /* A string id that held \u0000 itself now reads otherwise: better none than another. */
    if (json_is_string(id) && memchr(json_string_value(id), '\1', json_string_length(id)))
        id = NULL;
    id = id && id_ok(id) ? json_incref(id) : NULL;
    json_decref(root);
    return id;
}

json_t *jrpc_parse(const char *p, size_t n, struct jrpc_why *why)
{
    json_error_t je;
    why->id = NULL;
    /* JSON_ALLOW_NUL: "\u0000" in a string is valid JSON; each field decides (jrpc_str). */
    json_t *root = json_loadb(p, n, JRPC_LOAD_FLAGS, &je);

    if (root == NULL && json_error_code(&je) == json_error_null_byte_in_key) {
        /* Valid JSON, but jansson cannot hold such a key; no key of MCP has one. */
        why_set(why, JRPC_INVALID_REQUEST,
                "Invalid Request: an object key holds a NUL character (\\u0000)");
        why->id = salvage_id(p, n);
        return NULL;
    }
    if (root == NULL) {
        why->code = JRPC_PARSE_ERROR;
        snprintf(why->msg, sizeof why->msg, "Parse error: %s at line %d column %d", je.text,
                 je.line, je.column);
        utf8_clean(why->msg); /* jansson quotes the input, which may not be UTF-8 */
        return NULL;
    }
    if (json_is_array(root) && json_array_size(root) == 0) {
        why_set(why, JRPC_INVALID_REQUEST, "Invalid Request: empty batch");
        json_decref(root);
        return NULL;
    }
    if (!json_is_object(root) && !json_is_array(root)) {
        why_set(why, JRPC_INVALID_REQUEST, "Invalid Request: expected an object or an array");
        json_decref(root);
        return NULL;
    }
    return root;
}

/* jrpc_find_meta's scanner: each step returns the index after what it skipped, or SCAN_FAIL. */
#define SCAN_FAIL ((size_t)-1)

static size_t scan_ws(const char *p, size_t n, size_t i)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

/* i is at a string's opening quote. (A byte loop: the strings of an envelope are short, and
 * memchr's set-up costs more than it saves on them.) */
static size_t scan_string(const char *p, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\')
            i++;
        else if (p[i] == '"')
            return i + 1;
    }
    return SCAN_FAIL;
}

/* i is at a value's first byte: a string, an object or array (brackets counted, strings
 * skipped), or a scalar (up to the next delimiter). */
static size_t scan_value(const char *p, size_t n, size_t i)
{
    if (i >= n)
        return SCAN_FAIL;
    if (p[i] == '"')
        return scan_string(p, n, i);
    if (p[i] != '{' && p[i] != '[') {
        size_t j = i;
        while (j < n && p[j] != '\0' && !strchr(",}] \t\r\n", p[j]))
            j++;
        return j > i ? j : SCAN_FAIL;
    }
    size_t depth = 0;
    while (i < n) {
        char c = p[i];
        if (c == '"') {
            i = scan_string(p, n, i);
            if (i == SCAN_FAIL)
                return SCAN_FAIL;
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return i + 1;
        i++;
    }
    return SCAN_FAIL;
}

/* Where scan_object found a member. */
struct member_at {
    size_t key;          /* its key's opening quote */
    size_t comma_before; /* the comma before it, SCAN_FAIL when it comes first */
    size_t value, end;   /* its value's bytes */
};

/* Walks the object whose '{' is at i and returns the index after its '}'. The first member named
 * key (given with its quotes, unescaped) is reported in *m (m->key is SCAN_FAIL when there is
 * none); known, when given, may tell that member's value length, which is then not scanned. */
static size_t scan_object(const char *p, size_t n, size_t i, const char *key, struct member_at *m,
                          jrpc_known_fn *known, void *arg)
{
    size_t klen = strlen(key), comma = SCAN_FAIL;
    m->key = SCAN_FAIL;
    i = scan_ws(p, n, i + 1);
    if (i < n && p[i] == '}')
        return i + 1;
    while (i < n && p[i] == '"') {
        size_t k = i;
        i = scan_string(p, n, i);
        if (i == SCAN_FAIL)
            return SCAN_FAIL;
        bool match = m->key == SCAN_FAIL && i - k == klen && memcmp(p + k, key, klen) == 0;
        i = scan_ws(p, n, i);
        if (i >= n || p[i] != ':')
            return SCAN_FAIL;
        i = scan_ws(p, n, i + 1);
        size_t len = match && known ? known(arg, p + i, n - i) : 0;
        size_t end = len ? i + len : scan_value(p, n, i);
        if (end == SCAN_FAIL)
            return SCAN_FAIL;
        if (match)
            *m = (struct member_at){k, comma, i, end};
        i = scan_ws(p, n, end);
        if (i < n && p[i] == '}')
            return i + 1;
        if (i >= n || p[i] != ',')
            return SCAN_FAIL;
        comma = i;
        i = scan_ws(p, n, i + 1);
    }
    return SCAN_FAIL;
}

/* The top level's first "params" member, its value walked by scan_object for "_meta". */
static bool scan_params(const char *p, size_t n, struct member_at *params, struct member_at *meta,
                        jrpc_known_fn *known, void *arg)
{
    size_t i = scan_ws(p, n, 0), comma = SCAN_FAIL;
    if (i >= n || p[i] != '{')
        return false;
    i = scan_ws(p, n, i + 1);
    while (i < n && p[i] == '"') {
        size_t k = i;
        i = scan_string(p, n, i);
        if (i == SCAN_FAIL)
            return false;
        bool is_params = i - k == 8 && memcmp(p + k, "\"params\"", 8) == 0;
        i = scan_ws(p, n, i);
        if (i >= n || p[i] != ':')
            return false;
        i = scan_ws(p, n, i + 1);
        if (is_params) {
            if (i >= n || p[i] != '{')
                return false;
            size_t end = scan_object(p, n, i, "\"_meta\"", meta, known, arg);
            *params = (struct member_at){k, comma, i, end};
            return end != SCAN_FAIL && meta->key != SCAN_FAIL;
        }
        size_t end = scan_value(p, n, i);
        if (end == SCAN_FAIL)
            return false;
        i = scan_ws(p, n, end);
        if (i >= n || p[i] != ',')
            return false;
        comma = i;
        i = scan_ws(p, n, i + 1);
    }
    return false;
}

/* The bytes of member m (of an object that ends before n) with one comma beside it, when what
 * is left around them is what a valid object has there: cut from {"a":{..}"x":1} or
 * {"a":{..},} the object would turn valid, so such a member is not cut. */
static bool member_cut(const char *p, size_t n, const struct member_at *m, size_t *start,
                       size_t *end)
{
    size_t after = scan_ws(p, n, m->end);
    if (after >= n)
        return false;
    if (m->comma_before != SCAN_FAIL && (p[after] == ',' || p[after] == '}')) {
        *start = m->comma_before;
        *end = m->end;
        return true;
    }
    if (m->comma_before == SCAN_FAIL && p[after] == '}') {
        *start = m->key;
        *end = m->end;
        return true;
    }
    if (m->comma_before == SCAN_FAIL && p[after] == ',') {
        size_t next = scan_ws(p, n, after + 1);
        if (next < n && p[next] == '"') {
            *start = m->key;
            *end = after + 1;
            return true;
        }
    }
    return false;
}

bool jrpc_find_meta(const char *p, size_t n, struct jrpc_meta_at *at, jrpc_known_fn *known,
                    void *arg)
{
    struct member_at params = {0}, meta = {0};
    if (!scan_params(p, n, &params, &meta, known, arg) || p[meta.value] != '{')
        return false;
    *at = (struct jrpc_meta_at){.start = meta.value, .end = meta.end, .cut = JRPC_CUT_NONE};
    /* params is {"_meta":{...}} and nothing else: the params member goes; else the _meta
     * member alone. */
    size_t close = scan_ws(p, params.end, meta.end);
    if (meta.comma_before == SCAN_FAIL && close == params.end - 1) {
        if (member_cut(p, n, &params, &at->cut_start, &at->cut_end))
            at->cut = JRPC_CUT_PARAMS;
    } else if (member_cut(p, params.end, &meta, &at->cut_start, &at->cut_end)) {
        at->cut = JRPC_CUT_META;
    }
    return true;
}

const char *jrpc_str(json_t *v)
{
    const char *s = json_string_value(v);
    return s && strlen(s) == json_string_length(v) ? s : NULL;
}

/* A string id with a NUL is refused: ids are keys (jrpc_id_key), and "a\u0000b" would be "a". */
static bool id_ok(json_t *id)
{
    return jrpc_str(id) || json_is_integer(id);
}

void jrpc_classify(json_t *m, struct jrpc_msg *out)
{
    memset(out, 0, sizeof *out);
    out->kind = JRPC_INVALID;
    if (!json_is_object(m)) {
        why_set(&out->why, JRPC_INVALID_REQUEST, "Invalid Request: not an object");
        return;
    }
    json_t *id = json_object_get(m, "id");
    json_t *method = json_object_get(m, "method");
    json_t *params = json_object_get(m, "params");
    json_t *result = json_object_get(m, "result");
    json_t *error = json_object_get(m, "error");
    json_t *version = json_object_get(m, "jsonrpc");

    if (id_ok(id))
        out->id = id;
    if (jrpc_str(version) == NULL || strcmp(json_string_value(version), "2.0") != 0) {
        why_set(&out->why, JRPC_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
        return;
    }
    if (id != NULL && !id_ok(id)) {
        why_set(&out->why, JRPC_INVALID_REQUEST,
                json_is_string(id) ? "Invalid Request: id must not contain a NUL character"
                                   : "Invalid Request: id must be a string or an integer");
        return;
    }
    if (method != NULL) {
        if (!json_is_string(method) || json_string_length(method) == 0) {
            why_set(&out->why, JRPC_INVALID_REQUEST, "Invalid Request: method must be a string");
            return;
        }
        if (jrpc_str(method) == NULL) {
            why_set(&out->why, JRPC_INVALID_REQUEST,
                    "Invalid Request: method must not contain a NUL character");
            return;
        }
        if (result != NULL || error != NULL) {
            why_set(&out->why, JRPC_INVALID_REQUEST,
                    "Invalid Request: a request cannot carry result or error");
            return;
        }
        if (params != NULL && !json_is_object(params)) {
            why_set(&out->why, JRPC_INVALID_PARAMS, "Invalid params: params must be an object");
            return;
        }
        out->method = json_string_value(method);
        out->params = params;
        out->kind = id ? JRPC_REQUEST : JRPC_NOTIFICATION;
        return;
    }
    if (id != NULL && ((result != NULL) != (error != NULL))) {
        if (error != NULL && !json_is_object(error)) {
            why_set(&out->why, JRPC_INVALID_REQUEST, "Invalid Request: error must be an object");
            return;
        }
        out->result = result;
        out->error = error;
        out->kind = JRPC_RESPONSE;
        return;
    }
    why_set(&out->why, JRPC_INVALID_REQUEST, "Invalid Request: no method");
}

json_t *jrpc_result(json_t *id, json_t *result_take)
{
    return json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", id, "result", result_take);
}

json_t *jrpc_error(json_t *id, int code, const char *message)
{
    char clean[512];
    snprintf(clean, sizeof clean, "%s", message);
    utf8_clean(clean);
    json_t *m = json_pack("{s:s, s:O?, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                          code, "message", clean);
    if (id == NULL)
        json_object_set_new(m, "id", json_null());
    return m;
}

json_t *jrpc_notification(const char *method, json_t *params_take)
{
    return json_pack("{s:s, s:s, s:o*}", "jsonrpc", "2.0", "method", method, "params", params_take);
}

json_t *jrpc_request(json_t *id, const char *method, json_t *params_take)
{
    return json_pack("{s:s, s:O, s:s, s:o*}", "jsonrpc", "2.0", "id", id, "method", method,
                     "params", params_take);
}

bool jrpc_id_key(json_t *id, char *out, size_t outlen)
{
    int n;
    if (jrpc_str(id))
        n = snprintf(out, outlen, "s:%s", json_string_value(id));
    else if (json_is_integer(id))
        n = snprintf(out, outlen, "i:%" JSON_INTEGER_FORMAT, json_integer_value(id));
    else
        return false;
    return n > 0 && (size_t)n < outlen;
}

static const struct jrpc_err_info err_table[] = {
    {JRPC_PARSE_ERROR, "-32700", "Parse error", "the body is not JSON"},
    {JRPC_INVALID_REQUEST, "-32600", "Invalid Request",
     "not a JSON-RPC 2.0 request: an empty batch, a scalar, a NUL in a key, a batch where the "
     "revision forbids one, or HTTP the endpoint does not take (with id null)"},
    {JRPC_METHOD_NOT_FOUND, "-32601", "Method not found",
     "a method this server does not serve, or not in the client's protocol revision"},
    {JRPC_INVALID_PARAMS, "-32602", "Invalid params",
     "params break the method's rules: an unknown tool, a bad cursor, a task that is not "
     "found or not the caller's, _meta that is not an object"},
    {JRPC_INTERNAL_ERROR, "-32603", "Internal error",
     "the server or the agent failed in a way the client cannot fix"},
    {JRPC_SHUTTING_DOWN, "-32000", "Server shutting down",
     "the server is stopping (SIGTERM): a call still running when the drain ended"},
    {JRPC_REQUEST_TIMEOUT, "-32001", "Request timed out",
     "a call ran past MCP_CALL_TIMEOUT_S; also, with HTTP 404, \"Session not found\": the "
     "Mcp-Session-Id is unknown or expired (the client initializes again)"},
    {JRPC_RESOURCE_NOT_FOUND, "-32002", "Resource not found",
     "resources/read of a URI no upstream serves (before 2026-07-28)"},
    {JRPC_FORBIDDEN, "-32003", "Forbidden",
     "the credential lacks the scope the method, tool, upstream or task needs"},
    {JRPC_UNAVAILABLE, "-32004", "Temporarily unavailable",
     "what the request needs (STORE_URL: the store's database) cannot be reached now; data."
     "retryAfter gives the seconds to wait (a lone request: HTTP 503 with Retry-After)"},
    {JRPC_HEADER_MISMATCH, "-32020", "Header mismatch",
     "2026-07-28: an Mcp-Method or Mcp-Name header disagrees with the body"},
    {JRPC_MISSING_CAPABILITY, "-32021", "Missing capability",
     "2026-07-28: the request uses an extension (tasks) its client did not declare"},
    {JRPC_UNSUPPORTED_VERSION, "-32022", "Unsupported protocol version",
     "the protocol version named is not one this server serves; data lists those it does"},
};

const struct jrpc_err_info *jrpc_err_at(size_t i)
{
    return i < sizeof err_table / sizeof err_table[0] ? &err_table[i] : NULL;
}

const char *jrpc_err_text(int code)
{
    for (size_t i = 0; i < sizeof err_table / sizeof err_table[0]; i++)
        if (err_table[i].code == code)
            return err_table[i].text;
    return "error";
}
