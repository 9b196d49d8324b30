/* strmap.c — chained string hash map. Keys include ids that clients choose (task ids, JSON-RPC
 * ids, session ids), so the hash is keyed with a per-process random seed (SipHash): a client
 * cannot compute keys that all land in one chain and turn every lookup into a list walk. */
#include "strmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "mem.h"
#include "siphash.h"

struct entry {
    struct entry *next;
    void *value;
    char key[];
};

struct strmap {
    struct entry **slots;
    size_t nslots, count;
};

static uint8_t seed[16];
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static void seed_init(void)
{
    /* getrandom() blocks only before the kernel's pool is first initialised, early at boot. */
    size_t got = 0;
    while (got < sizeof seed) {
        ssize_t n = getrandom(seed + got, sizeof seed - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (n < 0 && errno != EINTR)
            break; /* no entropy source at all: an unseeded map still works */
    }
}

void strmap_set_seed(const uint8_t s[16])
{
    pthread_once(&seed_once, seed_init);
    memcpy(seed, s, sizeof seed);
}

/* Maps call this; the seed was drawn when the first map was made. */
static uint64_t hash(const char *key)
{
    return siphash24(key, strlen(key), seed);
}

uint64_t strmap_hash(const char *key)
{
    pthread_once(&seed_once, seed_init);
    return hash(key);
}

struct strmap *strmap_new(void)
{
    pthread_once(&seed_once, seed_init);
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
