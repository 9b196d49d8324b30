/* ratelimit.c — token buckets keyed by client, LRU-bounded. */
#include "ratelimit.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "list.h"
#include "mem.h"
#include "strmap.h"

struct bucket {
    struct list lru; /* in the LRU list, most recent first */
    double tokens;
    uint64_t last_ms;
    uint64_t refused_ms; /* the first refusal of the current minute; 0: none yet */
    char key[RATELIMIT_KEY_MAX];
};

struct ratelimit {
    double capacity;
    double per_ms;
    size_t max;
    struct strmap *map;
    struct list lru; /* struct bucket, by lru */
};

struct ratelimit *ratelimit_new(unsigned per_min, size_t max_clients)
{
    struct ratelimit *rl = xcalloc(1, sizeof *rl);
    list_init(&rl->lru);
    rl->capacity = per_min;
    rl->per_ms = per_min / 60000.0;
    rl->max = max_clients ? max_clients : 1;
    rl->map = strmap_new();
    return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
    if (rl == NULL)
        return;
    LIST_FOREACH_SAFE(node, &rl->lru)
    free(list_entry(node, struct bucket, lru));
    strmap_free(rl->map);
    free(rl);
}

void ratelimit_key(const char *ip, char *out, size_t outlen)
{
    struct in6_addr a6;

    if (strncmp(ip, "::ffff:", 7) == 0 && strchr(ip + 7, '.')) {
        snprintf(out, outlen, "%s", ip + 7);
        return;
    }
    if (inet_pton(AF_INET6, ip, &a6) == 1) {
        memset(a6.s6_addr + 8, 0, 8); /* one bucket per /64: a host owns the whole prefix */
        char txt[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &a6, txt, sizeof txt);
        snprintf(out, outlen, "%s/64", txt);
        return;
    }
    snprintf(out, outlen, "%s", ip);
}

unsigned ratelimit_consume(struct ratelimit *rl, const char *ip, uint64_t now_ms, bool *first)
{
    char key[RATELIMIT_KEY_MAX];

    ratelimit_key(ip, key, sizeof key);
    return ratelimit_consume_key(rl, key, now_ms, first);
}

static unsigned consume(struct ratelimit *rl, const char *key_in, double capacity, double per_ms,
                        uint64_t now_ms, bool *first);

unsigned ratelimit_consume_key(struct ratelimit *rl, const char *key_in, uint64_t now_ms,
                               bool *first)
{
    return consume(rl, key_in, rl->capacity, rl->per_ms, now_ms, first);
}

unsigned ratelimit_consume_rate(struct ratelimit *rl, const char *key, unsigned per_min,
                                uint64_t now_ms, bool *first)
{
    per_min = per_min ? per_min : 1;
    return consume(rl, key, per_min, per_min / 60000.0, now_ms, first);
}

void ratelimit_refund(struct ratelimit *rl, const char *key_in, unsigned capacity)
{
    char key[RATELIMIT_KEY_MAX];
    snprintf(key, sizeof key, "%s", key_in);
    struct bucket *b = strmap_get(rl->map, key);
    if (b && b->tokens + 1.0 <= (double)capacity)
        b->tokens += 1.0;
}

static unsigned consume(struct ratelimit *rl, const char *key_in, double capacity, double per_ms,
                        uint64_t now_ms, bool *first)
{
    char key[RATELIMIT_KEY_MAX]; /* cut as the bucket stores it, so lookups find it */
    snprintf(key, sizeof key, "%s", key_in);
    struct bucket *b = strmap_get(rl->map, key);

    if (first)
        *first = false;
    if (b == NULL) {
        if (strmap_count(rl->map) >= rl->max) {
            struct bucket *old = list_entry(list_last(&rl->lru), struct bucket, lru);
            list_unlink(&old->lru);
            strmap_del(rl->map, old->key);
            free(old);
        }
        b = xcalloc(1, sizeof *b);
        snprintf(b->key, sizeof b->key, "%s", key);
        b->tokens = capacity;
        b->last_ms = now_ms;
        strmap_put(rl->map, b->key, b);
    } else {
        list_unlink(&b->lru);
        if (now_ms > b->last_ms) {
            b->tokens += (double)(now_ms - b->last_ms) * per_ms;
            b->last_ms = now_ms;
        }
        if (b->tokens > capacity)
            b->tokens = capacity;
    }
    list_push_front(&rl->lru, &b->lru);
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return 0;
    }
    if (b->refused_ms == 0 || now_ms - b->refused_ms >= 60000) {
        b->refused_ms = now_ms ? now_ms : 1;
        if (first)
            *first = true;
    }
    double wait_ms = (1.0 - b->tokens) / per_ms;
    unsigned s = (unsigned)ceil(wait_ms / 1000.0);
    return s ? s : 1;
}

unsigned ratelimit_share(unsigned limit, unsigned replicas)
{
    if (limit == 0 || replicas <= 1)
        return limit;
    return limit / replicas ? limit / replicas : 1;
}

size_t ratelimit_clients(const struct ratelimit *rl)
{
    return strmap_count(rl->map);
}
