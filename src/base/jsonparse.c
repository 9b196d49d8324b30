/* jsonparse.c — JSON text to jansson values, read in place (jsonparse.h). Each rule below is
 * the one jansson's loader applies, so that both answer alike; tests/fuzz/fuzz_jsonparse.c
 * compares them on every input it makes. */
#include "jsonparse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define SMALL_TEXT 256 /* a string or a number this long is decoded on the stack */

struct jp {
    const unsigned char *p, *end;
};

static void skip_space(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

static size_t put_utf8(unsigned char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A \u escape at p (p[0] == 'u', the text up to end): its character into out, *used the bytes
 * read after the backslash; 0 when invalid: not hex, \u0000, a lone or unpaired surrogate. */
static size_t unicode_escape(const unsigned char *p, const unsigned char *end, unsigned char *out,
                             size_t *used)
{
    int v = end - p >= 5 ? hex4(p + 1) : -1;
    if (v <= 0 || (v >= 0xdc00 && v <= 0xdfff))
        return 0;
    *used = 5;
    if (v < 0xd800 || v > 0xdbff)
        return put_utf8(out, (unsigned long)v);
    /* A high surrogate: a low one must follow as another \u escape. */
    int lo = end - p >= 11 && p[5] == '\\' && p[6] == 'u' ? hex4(p + 7) : -1;
    if (lo < 0xdc00 || lo > 0xdfff)
        return 0;
    *used = 11;
    return put_utf8(out,
                    0x10000ul + ((unsigned long)(v - 0xd800) << 10) + (unsigned long)(lo - 0xdc00));
}

/* The string whose opening quote was just read: its bytes decoded into *out (either pointing
 * into the text, or into buf / a new allocation in *owned), *len; false if invalid. */
static bool string_text(struct jp *j, unsigned char *buf, size_t bufsz, unsigned char **owned,
                        const char **out, size_t *len)
{
    const unsigned char *s = j->p, *q = s;
    *owned = NULL;
    while (q < j->end && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
        q++;
    if (q < j->end && *q == '"') { /* plain ASCII: the text as it stands */
        *out = (const char *)s;
        *len = (size_t)(q - s);
        j->p = q + 1;
        return true;
    }
    /* Escapes or other characters: decoded, never longer than the text they came from (up to
     * the closing quote, found first, an escaped character skipped). */
    const unsigned char *close = q;
    while (close < j->end && *close != '"')
        close += *close == '\\' && close + 1 < j->end ? 2 : 1;
    if (close >= j->end)
        return false;
    size_t room = (size_t)(close - s);
    unsigned char *d = buf;
    if (room > bufsz)
        d = *owned = malloc(room ? room : 1);
    if (d == NULL)
        return false;
    size_t o = (size_t)(q - s);
    memcpy(d, s, o);
    while (q <= close) { /* never past it: what is written stays within room */
        unsigned char c = *q;
        if (c == '"') {
            *out = (const char *)d;
            *len = o;
            j->p = q + 1;
            return true;
        }
        if (c < 0x20)
            break;
        if (c >= 0x80) {
            size_t k = utf8_next((const char *)q, (size_t)(j->end - q));
            if (k == 0)
                break;
            memcpy(d + o, q, k);
            o += k;
            q += k;
            continue;
        }
        if (c != '\\') {
            d[o++] = c;
            q++;
            continue;
        }
        if (++q == j->end)
            break;
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *e = *q ? strchr(from, *q) : NULL;
        if (e != NULL) {
            d[o++] = (unsigned char)to[e - from];
            q++;
            continue;
        }
        size_t used = 0, k = *q == 'u' ? unicode_escape(q, j->end, d + o, &used) : 0;
        if (k == 0)
            break;
        o += k;
        q += used;
    }
    free(*owned);
    *owned = NULL;
    return false;
}

__attribute__((noinline)) /* its buffer stays off value()'s recursive frame */
static json_t *
string_value(struct jp *j)
{
    unsigned char buf[SMALL_TEXT], *owned;
    const char *s;
    size_t n;
    json_t *v = string_text(j, buf, sizeof buf, &owned, &s, &n) ? json_stringn_nocheck(s, n) : NULL;
    free(owned);
    return v;
}

static bool digits(struct jp *j)
{
    const unsigned char *start = j->p;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?: an integer when neither part follows (and it
 * fits json_int_t), else a double (that does not overflow). */
__attribute__((noinline)) /* its buffer stays off value()'s recursive frame */
static json_t *
number_value(struct jp *j)
{
    const unsigned char *start = j->p;
    bool neg = j->p < j->end && *j->p == '-';
    j->p += neg;
    if (j->p < j->end && *j->p == '0') {
        j->p++;
        if (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            return NULL;
    } else if (!digits(j)) {
        return NULL;
    }
    bool real = false;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (!digits(j))
            return NULL;
        real = true;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (!digits(j))
            return NULL;
        real = true;
    }
    if (!real) {
        unsigned long long u = 0, max = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
        for (const unsigned char *p = start + neg; p < j->p; p++) {
            unsigned d = (unsigned)(*p - '0');
            if (u > (max - d) / 10)
                return NULL;
            u = u * 10 + d;
        }
        /* -(u - 1) - 1: -2^63 without converting 2^63 to a signed type */
        return json_integer(neg && u ? -(json_int_t)(u - 1) - 1 : (json_int_t)u);
    }
    size_t n = (size_t)(j->p - start);
    char small[SMALL_TEXT], *text = n < sizeof small ? small : malloc(n + 1);
    if (text == NULL)
        return NULL;
    memcpy(text, start, n);
    text[n] = '\0';
    errno = 0;
    double v = strtod(text, NULL);
    bool overflow = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
    if (text != small)
        free(text);
    return overflow ? NULL : json_real(v);
}

static bool literal(struct jp *j, const char *word, size_t n)
{
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return false;
    j->p += n;
    return true;
}

static json_t *value(struct jp *j, unsigned depth);

static json_t *object_value(struct jp *j, unsigned depth)
{
    json_t *o = json_object();
    skip_space(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return o;
    }
    for (;;) {
        /* No buffer on this frame, which the recursion below keeps: a key with escapes is
         * decoded on the heap (a plain one points into the text). */
        unsigned char *owned;
        const char *key;
        size_t klen;
        if (j->p == j->end || *j->p != '"')
            break;
        j->p++;
        if (!string_text(j, NULL, 0, &owned, &key, &klen))
            break;
        skip_space(j);
        json_t *v = NULL;
        if (json_object_getn(o, key, klen) == NULL && j->p < j->end && *j->p == ':') {
            j->p++;
            v = value(j, depth + 1);
        }
        bool set = v != NULL && json_object_setn_new_nocheck(o, key, klen, v) == 0;
        free(owned);
        if (!set)
            break;
        skip_space(j);
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return o;
        }
        if (j->p == j->end || *j->p != ',')
            break;
        j->p++;
        skip_space(j);
    }
    json_decref(o);
    return NULL;
}

static json_t *array_value(struct jp *j, unsigned depth)
{
    json_t *a = json_array();
    skip_space(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return a;
    }
    for (;;) {
        json_t *v = value(j, depth + 1);
        if (v == NULL || json_array_append_new(a, v) != 0)
            break;
        skip_space(j);
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return a;
        }
        if (j->p == j->end || *j->p != ',')
            break;
        j->p++;
    }
    json_decref(a);
    return NULL;
}

/* The value at the text's position, after white space; depth counts every value, scalars too,
 * as jansson's does. */
static json_t *value(struct jp *j, unsigned depth)
{
    skip_space(j);
    if (depth > JSON_PARSER_MAX_DEPTH || j->p == j->end)
        return NULL;
    switch (*j->p) {
    case '{':
        j->p++;
        return object_value(j, depth);
    case '[':
        j->p++;
        return array_value(j, depth);
    case '"':
        j->p++;
        return string_value(j);
    case 't':
        return literal(j, "true", 4) ? json_true() : NULL;
    case 'f':
        return literal(j, "false", 5) ? json_false() : NULL;
    case 'n':
        return literal(j, "null", 4) ? json_null() : NULL;
    default:
        return number_value(j);
    }
}

_Static_assert(sizeof(json_int_t) == sizeof(long long), "jansson's integers are long long");

json_t *jsonparse(const char *text, size_t len)
{
    if (text == NULL)
        return NULL;
    struct jp j = {(const unsigned char *)text, (const unsigned char *)text + len};
    skip_space(&j);
    if (j.p == j.end || (*j.p != '{' && *j.p != '['))
        return NULL;
    json_t *v = value(&j, 1);
    skip_space(&j);
    if (v != NULL && j.p != j.end) {
        json_decref(v);
        v = NULL;
    }
    return v;
}
