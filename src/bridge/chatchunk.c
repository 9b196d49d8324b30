/* chatchunk.c — a strict recursive-descent JSON scanner that keeps only the fields the bridge
 * needs (see chatchunk.h). Every "no" sends the chunk to jansson, so this only has to be right
 * about what it accepts: a JSON text jansson (flags 0) would load, with the same values. */
#include "chatchunk.h"
#include "hex.h"

#include <string.h>

#define DEPTH_MAX 32
#define NUMBER_MAX 15 /* characters: no integer or real overflow is possible below this */

enum role { R_NONE, R_ROOT, R_CHOICES, R_CHOICE0, R_DELTA };

struct scan {
    const char *p, *end;
    int depth;
    struct buf *scratch;
    struct chatchunk *out;
    bool seen_choices, seen_delta, seen_content, seen_finish;
};

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool hex4(struct scan *s, unsigned *v)
{
    if (s->end - s->p < 4)
        return false;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_digit(s->p[i]);
        if (h < 0)
            return false;
        *v = *v << 4 | (unsigned)h;
    }
    s->p += 4;
    return true;
}

/* Length of the valid UTF-8 sequence at p (1-4; no overlongs, surrogates or past U+10FFFF),
 * or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    size_t n = (p[0] & 0xe0) == 0xc0   ? 2
               : (p[0] & 0xf0) == 0xe0 ? 3
               : (p[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0 || (size_t)(end - p) < n || (n == 2 && p[0] < 0xc2) || (n == 4 && p[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 3 && p[0] == 0xed && p[1] >= 0xa0) ||
        (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    return n;
}

/* What a decoded string goes to: nowhere, the scratch buffer, or a small key buffer. */
struct sink {
    struct buf *buf;
    char *small;
    size_t cap, len;
    bool overflow;
};

static bool put(struct sink *k, const char *p, size_t n)
{
    if (k->buf)
        return buf_append(k->buf, p, n);
    if (k->small) {
        if (k->len + n >= k->cap)
            k->overflow = true;
        else
            memcpy(k->small + k->len, p, n);
        k->len += n;
    }
    return true;
}

static bool put_code(struct sink *k, unsigned c)
{
    char u[4];
    size_t n;
    if (c < 0x80) {
        u[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        u[0] = (char)(0xc0 | c >> 6);
        u[1] = (char)(0x80 | (c & 0x3f));
        n = 2;
    } else if (c < 0x10000) {
        u[0] = (char)(0xe0 | c >> 12);
        u[1] = (char)(0x80 | (c >> 6 & 0x3f));
        u[2] = (char)(0x80 | (c & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | c >> 18);
        u[1] = (char)(0x80 | (c >> 12 & 0x3f));
        u[2] = (char)(0x80 | (c >> 6 & 0x3f));
        u[3] = (char)(0x80 | (c & 0x3f));
        n = 4;
    }
    return put(k, u, n);
}

/* A string at s->p (the opening quote), decoded into k. */
static bool string(struct scan *s, struct sink *k)
{
    if (s->p >= s->end || *s->p != '"')
        return false;
    s->p++;
    const char *run = s->p;
    for (;;) {
        if (s->p >= s->end)
            return false;
        unsigned char c = (unsigned char)*s->p;
        if (c == '"' || c == '\\') {
            if (!put(k, run, (size_t)(s->p - run)))
                return false;
            s->p++;
            if (c == '"')
                return true;
            if (s->p >= s->end)
                return false;
            char e = *s->p++;
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *f = e ? strchr(from, e) : NULL;
            if (f) {
                if (!put(k, &to[f - from], 1))
                    return false;
            } else if (e == 'u') {
                unsigned v, lo;
                if (!hex4(s, &v) || v == 0 || (v >= 0xdc00 && v <= 0xdfff))
                    return false; /* \u0000 and a lone low surrogate: jansson says no */
                if (v >= 0xd800 && v <= 0xdbff) {
                    if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u')
                        return false;
                    s->p += 2;
                    if (!hex4(s, &lo) || lo < 0xdc00 || lo > 0xdfff)
                        return false;
                    v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (!put_code(k, v))
                    return false;
            } else {
                return false;
            }
            run = s->p;
        } else if (c < 0x20) {
            return false; /* control characters must be escaped */
        } else if (c < 0x80) {
            s->p++;
        } else {
            size_t n = utf8_len((const unsigned char *)s->p, (const unsigned char *)s->end);
            if (n == 0)
                return false;
            s->p += n;
        }
    }
}

static bool number(struct scan *s)
{
    const char *start = s->p;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p >= s->end)
        return false;
    if (*s->p == '0')
        s->p++;
    else if (*s->p >= '1' && *s->p <= '9')
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    else
        return false;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9')
            return false;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E'))
        return false; /* exponents can overflow: left to jansson */
    return s->p - start <= NUMBER_MAX;
}

static bool literal(struct scan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return false;
    s->p += n;
    return true;
}

static bool value(struct scan *s, enum role role);

static bool key_is(const struct sink *k, const char *name)
{
    return !k->overflow && k->len == strlen(name) && memcmp(k->small, name, k->len) == 0;
}

static bool object(struct scan *s, enum role role)
{
    s->p++; /* { */
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        char name[16];
        struct sink k = {.small = name, .cap = sizeof name};
        skip_ws(s);
        if (!string(s, &k))
            return false;
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return false;
        s->p++;
        skip_ws(s);
        enum role next = R_NONE;
        if (role == R_ROOT && key_is(&k, "error")) {
            return false; /* the agent reports an error: the full parser reads it */
        } else if (role == R_ROOT && key_is(&k, "choices")) {
            if (s->seen_choices)
                return false;
            s->seen_choices = true;
            next = R_CHOICES;
        } else if (role == R_CHOICE0 && key_is(&k, "delta")) {
            if (s->seen_delta)
                return false;
            s->seen_delta = true;
            next = R_DELTA;
        } else if (role == R_CHOICE0 && key_is(&k, "finish_reason")) {
            if (s->seen_finish)
                return false;
            s->seen_finish = true;
            if (s->p < s->end && *s->p == '"') {
                char fin[8];
                struct sink f = {.small = fin, .cap = sizeof fin};
                if (!string(s, &f))
                    return false;
                s->out->finish_error = key_is(&f, "error");
                goto member_done;
            }
        } else if (role == R_DELTA && key_is(&k, "content")) {
            if (s->seen_content)
                return false;
            s->seen_content = true;
            if (s->p < s->end && *s->p == '"') {
                struct sink c = {.buf = s->scratch};
                if (!string(s, &c))
                    return false;
                s->out->has_content = true;
                goto member_done;
            }
        }
        if (!value(s, next))
            return false;
    member_done:
        skip_ws(s);
        if (s->p >= s->end)
            return false;
        if (*s->p == '}') {
            s->p++;
            return true;
        }
        if (*s->p != ',')
            return false;
        s->p++;
    }
}

static bool array(struct scan *s, enum role role)
{
    s->p++; /* [ */
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return true;
    }
    for (size_t i = 0;; i++) {
        skip_ws(s);
        if (!value(s, role == R_CHOICES && i == 0 ? R_CHOICE0 : R_NONE))
            return false;
        skip_ws(s);
        if (s->p >= s->end)
            return false;
        if (*s->p == ']') {
            s->p++;
            return true;
        }
        if (*s->p != ',')
            return false;
        s->p++;
    }
}

static bool value(struct scan *s, enum role role)
{
    if (s->p >= s->end)
        return false;
    struct sink none = {0};
    bool ok;
    switch (*s->p) {
    case '{':
        if (++s->depth > DEPTH_MAX)
            return false;
        /* Only an object at choices[0] or .delta is one of ours. */
        ok = object(s, role == R_ROOT || role == R_CHOICE0 || role == R_DELTA ? role : R_NONE);
        s->depth--;
        return ok;
    case '[':
        if (++s->depth > DEPTH_MAX)
            return false;
        ok = array(s, role == R_CHOICES ? R_CHOICES : R_NONE);
        s->depth--;
        return ok;
    case '"':
        return string(s, &none);
    case 't':
        return literal(s, "true");
    case 'f':
        return literal(s, "false");
    case 'n':
        return literal(s, "null");
    default:
        return number(s);
    }
}

bool chatchunk_scan(const char *p, size_t n, struct buf *scratch, struct chatchunk *out)
{
    struct scan s = {.p = p, .end = p + n, .scratch = scratch, .out = out};
    *out = (struct chatchunk){0};
    scratch->len = 0;
    if (scratch->data)
        scratch->data[0] = '\0';
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{') /* jansson takes arrays too; nothing of ours is in one */
        return false;
    if (!value(&s, R_ROOT))
        return false;
    skip_ws(&s);
    if (s.p != s.end)
        return false;
    if (out->has_content && scratch->data == NULL)
        buf_append(scratch, "", 0);
    return true;
}
