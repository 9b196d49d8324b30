/* strmap.h — string-keyed hash map of borrowed pointers (chained, grows by doubling).
 * Keys are copied; values are not owned. Not thread-safe: loop thread only. */
#ifndef HM_STRMAP_H
#define HM_STRMAP_H
#include <stddef.h>
#include <stdint.h>

struct strmap;

struct strmap *strmap_new(void);
void strmap_free(struct strmap *m); /* NULL-safe; values are left alone */
/* Sets key to value, replacing any previous value (returned, or NULL). */
void *strmap_put(struct strmap *m, const char *key, void *value);
void *strmap_get(const struct strmap *m, const char *key);
/* Removes key; returns its value or NULL. */
void *strmap_del(struct strmap *m, const char *key);
size_t strmap_count(const struct strmap *m);
/* A snapshot of the values (the caller frees the array); safe to change the map afterwards. */
void **strmap_values(const struct strmap *m, size_t *n);
/* Calls fn for each entry; fn must not change the map. */
void strmap_each(const struct strmap *m, void (*fn)(const char *key, void *value, void *arg),
                 void *arg);
/* The keyed hash of a key (SipHash-2-4 with this process's random seed, drawn when the first
 * map is made). strmap_set_seed replaces the seed: for tests only, before any map exists. */
uint64_t strmap_hash(const char *key);
void strmap_set_seed(const uint8_t seed[16]);

#endif
