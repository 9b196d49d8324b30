/* utf8.c — making text safe to put into JSON and log lines. */
#include "utf8.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = (s[0] & 0xe0) == 0xc0   ? 2
               : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0 || (n == 2 && s[0] < 0xc2) || (n == 4 && s[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && s[0] == 0xe0 && s[1] < 0xa0)
        return 0; /* overlong */
    if (n == 3 && s[0] == 0xed && s[1] >= 0xa0)
        return 0; /* surrogate */
    if (n == 4 && s[0] == 0xf0 && s[1] < 0x90)
        return 0; /* overlong */
    if (n == 4 && s[0] == 0xf4 && s[1] >= 0x90)
        return 0; /* past U+10FFFF */
    return n;
}

void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = utf8_seq(p);
        if (n == 0 || (n == 1 && *p < 0x20 && *p != '\t')) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

void utf8_line(char *s)
{
    utf8_clean(s);
    for (char *p = s; *p; p++)
        if (*p == '\t' || *p == 0x7f)
            *p = '?';
}

void utf8_shown(char *out, size_t outlen, const char *s)
{
    snprintf(out, outlen, "%s", s);
    utf8_line(out);
}

size_t utf8_next(const char *s, size_t n)
{
    /* utf8_seq may look up to 3 bytes ahead: give it a NUL-padded copy near the end. */
    unsigned char tail[5] = {0};
    const unsigned char *q = (const unsigned char *)s;
    if (n == 0)
        return 0;
    if (n < 4) {
        memcpy(tail, s, n);
        q = tail;
    }
    size_t k = utf8_seq(q);
    return k <= n ? k : 0;
}

bool utf8_valid(const char *s, size_t n)
{
    const char *end = s + n;
    while (s < end) {
        size_t k = *s ? utf8_next(s, (size_t)(end - s)) : 0;
        if (k == 0)
            return false;
        s += k;
    }
    return true;
}
