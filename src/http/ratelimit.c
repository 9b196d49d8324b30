/* ratelimit.c — token buckets keyed by client, LRU-bounded. */
#include "ratelimit.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "strmap.h"

struct bucket {
    struct bucket *prev, *next; /* LRU list, most recent first */
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
    struct bucket *head, *tail;
};

struct ratelimit *ratelimit_new(unsigned per_min, size_t max_clients)
{
    struct ratelimit *rl = xcalloc(1, sizeof *rl);
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
    for (struct bucket *b = rl->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
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

static void unlink_bucket(struct ratelimit *rl, struct bucket *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        rl->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    else
        rl->tail = b->prev;
    b->prev = b->next = NULL;
}

static void push_front(struct ratelimit *rl, struct bucket *b)
{
    b->next = rl->head;
    if (rl->head)
        rl->head->prev = b;
    rl->head = b;
    if (rl->tail == NULL)
        rl->tail = b;
}

unsigned ratelimit_take(struct ratelimit *rl, const char *ip, uint64_t now_ms, bool *first)
{
    char key[RATELIMIT_KEY_MAX];

    ratelimit_key(ip, key, sizeof key);
    return ratelimit_take_key(rl, key, now_ms, first);
}

unsigned ratelimit_take_key(struct ratelimit *rl, const char *key_in, uint64_t now_ms,
                            bool *first)
{
    char key[RATELIMIT_KEY_MAX]; /* cut as the bucket stores it, so lookups find it */
    snprintf(key, sizeof key, "%s", key_in);
    struct bucket *b = strmap_get(rl->map, key);

    if (first)
        *first = false;
    if (b == NULL) {
        if (strmap_count(rl->map) >= rl->max) {
            struct bucket *old = rl->tail;
            unlink_bucket(rl, old);
            strmap_del(rl->map, old->key);
            free(old);
        }
        b = xcalloc(1, sizeof *b);
        snprintf(b->key, sizeof b->key, "%s", key);
        b->tokens = rl->capacity;
        b->last_ms = now_ms;
        strmap_put(rl->map, b->key, b);
    } else {
        unlink_bucket(rl, b);
        if (now_ms > b->last_ms) {
            b->tokens += (double)(now_ms - b->last_ms) * rl->per_ms;
            if (b->tokens > rl->capacity)
                b->tokens = rl->capacity;
            b->last_ms = now_ms;
        }
    }
    push_front(rl, b);
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return 0;
    }
    if (b->refused_ms == 0 || now_ms - b->refused_ms >= 60000) {
        b->refused_ms = now_ms ? now_ms : 1;
        if (first)
            *first = true;
    }
    double wait_ms = (1.0 - b->tokens) / rl->per_ms;
    unsigned s = (unsigned)ceil(wait_ms / 1000.0);
    return s ? s : 1;
}

size_t ratelimit_clients(const struct ratelimit *rl)
{
    return strmap_count(rl->map);
}
