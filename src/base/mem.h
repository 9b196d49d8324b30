/* mem.h — allocation helpers that abort on out-of-memory.
 * Small allocations cannot sensibly fail in a daemon this size; every size a client controls is
 * checked against a cap before it reaches these. Any thread. */
#ifndef HM_MEM_H
#define HM_MEM_H
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new heap string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Frees a secret string (a key, a token) after overwriting it. NULL-safe. */
void wipe_free(char *s);

#endif
