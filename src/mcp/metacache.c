/* metacache.c — see metacache.h. A handful of entries compared byte for byte: a server has
 * few distinct clients at once. A miss costs the scan, a compare per slot and a body copy more
 * than jrpc_parse; a body that turns out invalid is then parsed once more, in full, for the
 * error. */
#include "metacache.h"

#include "mem.h"

#include <string.h>

enum {
    META_CACHE_SLOTS = 16,
    /* Larger _meta are parsed in place, not kept. Also what keeps reading a _meta on its own
     * as deep as jansson allows a whole body (JSON_PARSER_MAX_DEPTH, 2048): 1 KiB of JSON
     * nests at most 512 deep. */
    META_CACHE_MAX_BYTES = 1024,
};
_Static_assert(META_CACHE_MAX_BYTES <= 2048,
               "a kept _meta must nest less deep than jansson allows");

struct meta_entry {
    char *bytes;
    size_t len;
    json_t *meta;
    unsigned long long used; /* the cache's clock when last hit: the oldest is replaced */
};

struct meta_cache {
    struct meta_entry e[META_CACHE_SLOTS];
    unsigned long long clock;
    int hit; /* the slot known_meta matched in this parse, or -1 */
};

struct meta_cache *metacache_new(void)
{
    return xcalloc(1, sizeof(struct meta_cache));
}

void metacache_free(struct meta_cache *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < META_CACHE_SLOTS; i++) {
        free(c->e[i].bytes);
        json_decref(c->e[i].meta);
    }
    free(c);
}

/* jrpc_known_fn: the length of a kept _meta that s begins with (its slot noted in c->hit).
 * Kept texts are whole JSON objects, and a whole object is never the start of a longer value,
 * so a match ends where the kept one did (and if the body is invalid past it, jansson says so
 * when it reads the rest). */
static size_t known_meta(void *arg, const char *s, size_t n)
{
    struct meta_cache *c = arg;
    for (int i = 0; i < META_CACHE_SLOTS; i++) {
        const struct meta_entry *e = &c->e[i];
        if (e->meta && e->len <= n && memcmp(e->bytes, s, e->len) == 0) {
            c->hit = i;
            return e->len;
        }
    }
    return 0;
}

/* Keeps meta (a reference is taken) for these bytes in the least recently used slot. */
static void keep(struct meta_cache *c, const char *s, size_t len, json_t *meta)
{
    struct meta_entry *oldest = &c->e[0];
    for (int i = 1; i < META_CACHE_SLOTS; i++)
        if (c->e[i].used < oldest->used)
            oldest = &c->e[i];
    free(oldest->bytes);
    json_decref(oldest->meta);
    char *copy = xmalloc(len);
    memcpy(copy, s, len);
    *oldest =
        (struct meta_entry){.bytes = copy, .len = len, .meta = json_incref(meta), .used = c->clock};
}

/* The body without [cut_start, cut_end), or with [start, end) as one "0" when nothing is cut. */
static char *body_without(const char *p, size_t n, const struct jrpc_meta_at *at, size_t *len)
{
    size_t from = at->cut != JRPC_CUT_NONE ? at->cut_start : at->start;
    size_t to = at->cut != JRPC_CUT_NONE ? at->cut_end : at->end;
    char *rest = xmalloc(n + 1);
    memcpy(rest, p, from);
    size_t k = from;
    if (at->cut == JRPC_CUT_NONE)
        rest[k++] = '0';
    memcpy(rest + k, p + to, n - to);
    *len = k + n - to;
    return rest;
}

json_t *metacache_parse(struct meta_cache *c, const char *p, size_t n, struct jrpc_why *why)
{
    struct jrpc_meta_at at = {0};
    c->hit = -1;
    c->clock++;
    if (!jrpc_find_meta(p, n, &at, known_meta, c) || at.end - at.start > META_CACHE_MAX_BYTES)
        return jrpc_parse(p, n, why);
    const char *ms = p + at.start;
    size_t mlen = at.end - at.start;
    json_t *meta;
    if (c->hit >= 0) {
        c->e[c->hit].used = c->clock;
        meta = json_incref(c->e[c->hit].meta);
    } else if (memmem(ms, mlen, "progressToken", 13) != NULL) {
        /* A progress token is new on every request: such a _meta is never seen again. */
        return jrpc_parse(p, n, why);
    } else {
        meta = json_loadb(ms, mlen, JRPC_LOAD_FLAGS, NULL);
        if (!json_is_object(meta)) {
            json_decref(meta);
            return jrpc_parse(p, n, why);
        }
    }
    /* The params member (when it held only _meta) or the _meta member is cut out, or else the
     * _meta value is replaced by 0 and its key stays, so a second "_meta" is still a duplicate
     * to jansson; what was cut must not be there after (a second one the cut hid). */
    size_t rn;
    char *rest = body_without(p, n, &at, &rn);
    json_t *root = json_loadb(rest, rn, JRPC_LOAD_FLAGS, NULL);
    free(rest);
    json_t *params = json_object_get(root, "params");
    json_t *zero = json_object_get(params, "_meta");
    bool as_scanned = at.cut == JRPC_CUT_PARAMS ? json_is_object(root) && params == NULL
                      : at.cut == JRPC_CUT_META
                          ? json_is_object(params) && zero == NULL
                          : json_is_integer(zero) && json_integer_value(zero) == 0;
    if (!as_scanned) {
        /* Invalid (jrpc_parse gives the error with the right position), or a second member
         * the cut hid from jansson, or not read as the scan read it: parse the body as sent,
         * and keep nothing of it. */
        json_decref(root);
        json_decref(meta);
        return jrpc_parse(p, n, why);
    }
    if (c->hit < 0)
        keep(c, ms, mlen, meta);
    if (params == NULL)
        json_object_set_new(root, "params", params = json_object());
    json_object_set_new(params, "_meta", meta);
    why->id = NULL;
    return root;
}
