/* buf.c — growable byte buffer with a hard cap. */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

void buf_init(struct buf *b, size_t max)
{
    *b = (struct buf){.max = max};
}

void buf_cleanup(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static bool reserve(struct buf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->len)
        return false;
    size_t need = b->len + extra + 1;
    if (b->max && b->len + extra > b->max)
        return false;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
    return true;
}

bool buf_append(struct buf *b, const void *p, size_t n)
{
    if (!reserve(b, n))
        return false;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

bool buf_appends(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

bool buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    char small[256];

    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    if ((size_t)n < sizeof small)
        return buf_append(b, small, (size_t)n);
    if (!reserve(b, (size_t)n))
        return false;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        if (b->data)
            b->data[0] = '\0';
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *buf_detach(struct buf *b, size_t *len)
{
    char *p = b->data;
    if (len)
        *len = b->len;
    if (p == NULL)
        p = xstrdup("");
    *b = (struct buf){.max = b->max};
    return p;
}
