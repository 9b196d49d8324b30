/* fake_sb.h — the fakes' growing string (aborts on OOM: these are test fakes). Header-only, so
 * each fake program links it without a library. */
#ifndef FAKE_SB_H
#define FAKE_SB_H
#include <stdlib.h>
#include <string.h>

struct sb {
    char *p;
    size_t len, cap;
};

static inline void sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (q == NULL)
            abort();
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void sb_adds(struct sb *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* The string, now the caller's (an empty one if nothing was added); b is empty again. */
static inline char *sb_take(struct sb *b)
{
    if (b->p == NULL)
        sb_add(b, "", 0);
    char *p = b->p;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

static inline void sb_free(struct sb *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

#endif
