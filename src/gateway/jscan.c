/* jscan.c — the id and kind of a JSON-RPC message too large to parse, from its visible ends
 * (the reader keeps only a head and a tail of an oversized line). Pure: bytes in, no I/O. A
 * scan of untrusted bytes that never reads past n and never trusts a closing quote or brace it
 * did not see. */
#include "jscan.h"

#include <stdbool.h>
#include <string.h>

/* The end of the JSON string starting at s[i] == '"' (the index of its closing quote), or n. */
static size_t string_end(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i;
    }
    return n;
}

/* JSON's insignificant whitespace: "id": 7 (Python's json.dumps) as well as "id":7. */
static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && is_ws(s[i]))
        i++;
    return i;
}

/* An id value starting at s[i] (whitespace before it skipped): digits or a string of at most
 * 64 bytes, followed by ',' or '}'; NULL when cut off. */
static json_t *id_value(const char *s, size_t n, size_t i)
{
    i = skip_ws(s, n, i);
    size_t end = i;
    if (i < n && s[i] == '"')
        end = string_end(s, n, i) + 1;
    else
        while (end < n && s[end] >= '0' && s[end] <= '9')
            end++;
    size_t after = skip_ws(s, n, end);
    if (end > n || end == i || end - i > 66 || after >= n || (s[after] != ',' && s[after] != '}'))
        return NULL;
    json_t *id = json_loadb(s + i, end - i, JSON_DECODE_ANY, NULL);
    if (json_is_integer(id) || json_is_string(id))
        return id;
    json_decref(id);
    return NULL;
}

static enum jscan_kind kind_of_key(const char *key, size_t len)
{
#define IS(k) (len == sizeof k - 1 && memcmp(key, k, len) == 0)
    if (IS("method") || IS("params"))
        return JSCAN_REQUEST;
    if (IS("result") || IS("error"))
        return JSCAN_RESPONSE;
    return JSCAN_UNKNOWN;
#undef IS
}

/* The top-level members among a message's first bytes ({"jsonrpc":"2.0","id":7,...}): the
 * first that tells the kind, and the id. The member that made the message oversized is
 * nested, so the keys before it are all here. */
static json_t *scan_head(const char *s, size_t n, enum jscan_kind *kind)
{
    json_t *id = NULL;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '"') {
            size_t end = string_end(s, n, i), colon = skip_ws(s, n, end + 1);
            bool is_key = depth == 1 && colon < n && s[colon] == ':';
            if (is_key && *kind == JSCAN_UNKNOWN)
                *kind = kind_of_key(s + i + 1, end - i - 1);
            if (is_key && id == NULL && end - i - 1 == 2 && memcmp(s + i + 1, "id", 2) == 0)
                id = id_value(s, n, colon + 1);
            i = end;
        } else if (ch == '{' || ch == '[')
            depth++;
        else if (ch == '}' || ch == ']')
            depth--;
    }
    return id;
}

/* The id from a message's last bytes, where the MCP SDKs put it ({"result":...,"jsonrpc":"2.0",
 * "id":7}): the number or string right before the final brace, after ,"id": (whitespace
 * allowed between the tokens). NULL otherwise. */
static json_t *scan_tail(const char *s, size_t n)
{
    size_t len = n;
    while (n && is_ws(s[n - 1]))
        n--;
    if (n == 0 || s[--n] != '}')
        return NULL;
    while (n && is_ws(s[n - 1]))
        n--;
    size_t end = n, from = n; /* the value is s[from, end) */
    if (n && s[n - 1] == '"') {
        for (from = n - 1; from > 0 && (s[from - 1] != '"' || (from > 1 && s[from - 2] == '\\'));)
            from--;
        from = from ? from - 1 : 0;
    } else
        while (from && s[from - 1] >= '0' && s[from - 1] <= '9')
            from--;
    if (from == end || end - from > 66)
        return NULL;
    /* Backwards from the value: ws ':' ws '"id"' ws ',' */
    size_t k = from;
    while (k && is_ws(s[k - 1]))
        k--;
    if (k == 0 || s[--k] != ':')
        return NULL;
    while (k && is_ws(s[k - 1]))
        k--;
    if (k < 4 || memcmp(s + k - 4, "\"id\"", 4) != 0)
        return NULL;
    k -= 4;
    while (k && is_ws(s[k - 1]))
        k--;
    if (k == 0 || s[k - 1] != ',')
        return NULL;
    return id_value(s, len, from);
}

json_t *jscan_oversized_id(const char *head, size_t head_len, const char *tail, size_t tail_len,
                           enum jscan_kind *kind)
{
    *kind = JSCAN_UNKNOWN;
    json_t *id = scan_head(head, head_len, kind);
    if (id == NULL)
        id = scan_tail(tail, tail_len);
    return id;
}
