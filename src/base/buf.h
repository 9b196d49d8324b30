/* buf.h — growable byte buffer with an optional hard cap.
 * Value type, caller-owned storage: buf_init/buf_cleanup. Always NUL-terminated when non-empty. */
#ifndef HM_BUF_H
#define HM_BUF_H
#include <stdbool.h>
#include <stddef.h>

struct buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max; /* 0: unlimited */
};

void buf_init(struct buf *b, size_t max);
void buf_cleanup(struct buf *b);
/* Appends n bytes; returns false (buffer unchanged) when the result would exceed b->max. */
bool buf_append(struct buf *b, const void *p, size_t n);
bool buf_appends(struct buf *b, const char *s);
bool buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Hands the data to the caller (who frees it) and leaves b empty. (Names: _detach hands
 * ownership out; _take is kept for a parameter the callee consumes.) */
char *buf_detach(struct buf *b, size_t *len);

#endif
