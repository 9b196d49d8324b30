/* strmap.c — chained string hash map (FNV-1a). */
#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

struct entry {
    struct entry *next;
    void *value;
    char key[];
};

struct strmap {
    struct entry **slots;
    size_t nslots, count;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

struct strmap *strmap_new(void)
{
    struct strmap *m = xcalloc(1, sizeof *m);
    m->nslots = 16;
    m->slots = xcalloc(m->nslots, sizeof *m->slots);
    return m;
}

void strmap_free(struct strmap *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nslots; i++)
        for (struct entry *e = m->slots[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    free(m->slots);
    free(m);
}

static void grow(struct strmap *m)
{
    size_t n = m->nslots * 2;
    struct entry **slots = xcalloc(n, sizeof *slots);
    for (size_t i = 0; i < m->nslots; i++)
        for (struct entry *e = m->slots[i], *next; e; e = next) {
            next = e->next;
            size_t j = hash(e->key) & (n - 1);
            e->next = slots[j];
            slots[j] = e;
        }
    free(m->slots);
    m->slots = slots;
    m->nslots = n;
}

void *strmap_put(struct strmap *m, const char *key, void *value)
{
    size_t i = hash(key) & (m->nslots - 1);
    for (struct entry *e = m->slots[i]; e; e = e->next)
        if (strcmp(e->key, key) == 0) {
            void *old = e->value;
            e->value = value;
            return old;
        }
    size_t klen = strlen(key);
    struct entry *e = xmalloc(sizeof *e + klen + 1);
    memcpy(e->key, key, klen + 1);
    e->value = value;
    e->next = m->slots[i];
    m->slots[i] = e;
    if (++m->count > m->nslots)
        grow(m);
    return NULL;
}

void *strmap_get(const struct strmap *m, const char *key)
{
    for (struct entry *e = m->slots[hash(key) & (m->nslots - 1)]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e->value;
    return NULL;
}

void *strmap_del(struct strmap *m, const char *key)
{
    struct entry **pp = &m->slots[hash(key) & (m->nslots - 1)];
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->key, key) == 0) {
            struct entry *e = *pp;
            void *v = e->value;
            *pp = e->next;
            free(e);
            m->count--;
            return v;
        }
    return NULL;
}

size_t strmap_count(const struct strmap *m)
{
    return m->count;
}

void strmap_each(const struct strmap *m, void (*fn)(const char *key, void *value, void *arg),
                 void *arg)
{
    for (size_t i = 0; i < m->nslots; i++)
        for (struct entry *e = m->slots[i]; e; e = e->next)
            fn(e->key, e->value, arg);
}

void **strmap_values(const struct strmap *m, size_t *n)
{
    void **v = xcalloc(m->count + 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < m->nslots; i++)
        for (struct entry *e = m->slots[i]; e; e = e->next)
            v[k++] = e->value;
    *n = k;
    return v;
}
