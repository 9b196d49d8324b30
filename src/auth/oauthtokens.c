/* oauthtokens.c — OAuth tokens by the SHA-256 of their text, in memory (a map) and on disk (one
 * JSON file rewritten atomically after each change). The token itself never reaches the file,
 * the log or an error text: a stolen file or backup gives no usable credential. Lookup hashes the
 * presented token and finds the hash in the map, so its time depends on the hash, never on how
 * much of a real token a guess shares.
 * The file is shared with the `hermes-mcp oauth` commands (storefile.h): changes are made under
 * its lock, on the file's content as it is then, and a lookup reads the file again when another
 * process replaced it. */
#include "oauthtokens.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomicfile.h"
#include "crypto.h"
#include "hex.h"
#include "log.h"
#include "mem.h"
#include "readfile.h"
#include "storefile.h"
#include "strmap.h"

#define STORE_FILE_MAX (64u * 1024u * 1024u)
_Static_assert((unsigned long long)TOKENSTORE_MAX * 2560u < STORE_FILE_MAX,
               "a full store must be readable again");

struct entry {
    char hash[65];
    struct token_grant g; /* its strings are the copies below */
    char *client_id, *scope, *resource, *family;
    unsigned long long seq; /* issue order in this process (0: read from the file) */
};

struct tokenstore {
    char *path;
    struct strmap *byhash;          /* hex SHA-256 → struct entry */
    unsigned long long issued_here; /* the last entry's seq */
    struct storefile_id seen;       /* the file as last read or written here */
};

void tokenstore_hash(const char *token, char out[65])
{
    unsigned char d[32];
    crypto_sha256(token, strlen(token), d);
    hex_encode(d, sizeof d, out);
}

static void entry_free(struct entry *e)
{
    free(e->client_id);
    free(e->scope);
    free(e->resource);
    free(e->family);
    free(e);
}

static struct entry *entry_new(const char *hash, const struct token_grant *g)
{
    struct entry *e = xcalloc(1, sizeof *e);
    snprintf(e->hash, sizeof e->hash, "%s", hash);
    e->client_id = xstrdup(g->client_id);
    e->scope = xstrdup(g->scope);
    e->resource = xstrdup(g->resource);
    e->family = g->family ? xstrdup(g->family) : NULL;
    e->g = (struct token_grant){.kind = g->kind,
                                .client_id = e->client_id,
                                .scope = e->scope,
                                .resource = e->resource,
                                .family = e->family,
                                .expires = g->expires,
                                .issued = g->issued,
                                .used = g->used};
    return e;
}

static bool field_ok(const char *s)
{
    return s && strlen(s) <= TOKENSTORE_FIELD_MAX;
}

static bool hash_ok(const char *s)
{
    if (s == NULL || strlen(s) != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static json_t *entry_json(const struct entry *e);

static bool persist(struct tokenstore *ts, char *err, size_t errlen)
{
    if (ts->path == NULL) /* a cache of the database's: its writes are the caller's */
        return true;
    size_t n = 0;
    void **all = strmap_values(ts->byhash, &n);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, entry_json(all[i]));
    free(all);
    json_t *doc = json_pack("{s:i, s:o}", "version", 1, "tokens", list);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(doc);
    char why[300];
    bool ok = text && atomicfile_write(ts->path, text, strlen(text), 0600, why, sizeof why);
    if (!ok)
        snprintf(err, errlen, "cannot write the OAuth token store %s: %s", ts->path,
                 text ? why : "out of memory");
    else
        storefile_note(ts->path, &ts->seen);
    free(text);
    return ok;
}

/* One entry as the file keeps it. */
static json_t *entry_json(const struct entry *e)
{
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "sha256", e->hash, "kind",
                  e->g.kind == TOKEN_ACCESS ? "access" : "refresh", "client_id", e->client_id,
                  "scope", e->scope, "resource", e->resource, "expires", (json_int_t)e->g.expires);
    if (e->family)
        json_object_set_new(o, "family", json_string(e->family));
    if (e->g.used)
        json_object_set_new(o, "used", json_true());
    if (e->g.issued)
        json_object_set_new(o, "issued", json_integer((json_int_t)e->g.issued));
    return o;
}

/* One entry of the file; false when it is not one this module writes. */
static bool load_entry(struct tokenstore *ts, json_t *o)
{
    const char *hash = json_string_value(json_object_get(o, "sha256"));
    const char *kind = json_string_value(json_object_get(o, "kind"));
    json_t *family = json_object_get(o, "family");
    json_t *expires = json_object_get(o, "expires");
    json_t *issued = json_object_get(o, "issued");
    struct token_grant g = {
        .client_id = json_string_value(json_object_get(o, "client_id")),
        .scope = json_string_value(json_object_get(o, "scope")),
        .resource = json_string_value(json_object_get(o, "resource")),
        .family = json_string_value(family),
    };
    if (!hash_ok(hash) || kind == NULL || !json_is_integer(expires) || !field_ok(g.client_id) ||
        !field_ok(g.scope) || !field_ok(g.resource) || (family && !field_ok(g.family)) ||
        (issued && !json_is_integer(issued)) || strmap_get(ts->byhash, hash))
        return false;
    if (strcmp(kind, "access") == 0)
        g.kind = TOKEN_ACCESS;
    else if (strcmp(kind, "refresh") == 0)
        g.kind = TOKEN_REFRESH;
    else
        return false;
    g.expires = (time_t)json_integer_value(expires);
    g.issued = (time_t)json_integer_value(issued);
    g.used = json_is_true(json_object_get(o, "used"));
    strmap_put(ts->byhash, hash, entry_new(hash, &g));
    return true;
}

static bool load(struct tokenstore *ts, char *err, size_t errlen)
{
    struct stat st;
    size_t len = 0;
    char why[300];
    if (ts->path == NULL)
        return true;

    if (lstat(ts->path, &st) != 0 && errno == ENOENT) {
        storefile_id_of(NULL, &ts->seen);
        return true; /* nothing issued yet */
    }
    char *text = readfile_capped(ts->path, ts->path, STORE_FILE_MAX, &st, &len, why, sizeof why);
    if (text == NULL) {
        snprintf(err, errlen, "OAuth token store: %s", why);
        return false;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen,
                 "OAuth token store %s is readable or writable by others (mode %03o); run: "
                 "chmod 600 %s",
                 ts->path, (unsigned)(st.st_mode & 0777), ts->path);
        free(text);
        return false;
    }
    storefile_id_of(&st, &ts->seen);
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    free(text);
    json_t *list = json_object_get(doc, "tokens");
    bool ok = json_is_array(list) && json_integer_value(json_object_get(doc, "version")) == 1 &&
              json_array_size(list) <= TOKENSTORE_MAX;
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o) if (ok && !load_entry(ts, o))
    {
        snprintf(err, errlen, "OAuth token store %s: entry #%zu is not a stored token", ts->path,
                 i + 1);
        json_decref(doc);
        return false;
    }
    json_decref(doc);
    if (!ok)
        snprintf(err, errlen, "OAuth token store %s is not a token store (version 1)", ts->path);
    return ok;
}

static void drop_entry(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    entry_free(value);
}

void tokenstore_free(struct tokenstore *ts)
{
    if (ts == NULL)
        return;
    strmap_each(ts->byhash, drop_entry, NULL);
    strmap_free(ts->byhash);
    free(ts->path);
    free(ts);
}

/* Reads the file again when another process replaced it since this one last read or wrote it.
 * A file that cannot be used now is logged and the tokens known so far kept (failing closed
 * would lock every client out over one bad edit; the last good state is what was last seen). */
static void sync_from_file(struct tokenstore *ts)
{
    char err[400];
    if (ts->path == NULL || !storefile_changed(ts->path, &ts->seen))
        return;
    struct tokenstore fresh = {.path = ts->path, .byhash = strmap_new()};
    if (load(&fresh, err, sizeof err)) {
        strmap_each(ts->byhash, drop_entry, NULL);
        strmap_free(ts->byhash);
        ts->byhash = fresh.byhash;
        ts->seen = fresh.seen;
        return;
    }
    log_warn("oauth: %s; keeping the tokens read before", err);
    strmap_each(fresh.byhash, drop_entry, NULL);
    strmap_free(fresh.byhash);
    storefile_note(ts->path, &ts->seen); /* said once, not at every request */
}

/* A change starts here: the file's lock, then its current content. storefile_unlock ends it. */
static int begin_change(struct tokenstore *ts)
{
    int fd = ts->path ? storefile_lock(ts->path) : -1;
    sync_from_file(ts);
    return fd;
}

struct tokenstore *tokenstore_open(const char *path, char *err, size_t errlen)
{
    struct tokenstore *ts = xcalloc(1, sizeof *ts);
    ts->path = path ? xstrdup(path) : NULL;
    ts->byhash = strmap_new();
    if (!load(ts, err, errlen)) {
        tokenstore_free(ts);
        return NULL;
    }
    return ts;
}

size_t tokenstore_count(const struct tokenstore *ts)
{
    return strmap_count(ts->byhash);
}

/* Removes from the map the entries expired at now, or, with family or client_id set, those of
 * that family and client; returns how many. */
static size_t remove_where(struct tokenstore *ts, time_t now, const char *family,
                           const char *client_id)
{
    size_t n = 0, gone = 0;
    void **all = strmap_values(ts->byhash, &n);
    for (size_t i = 0; i < n; i++) {
        struct entry *e = all[i];
        bool drop = family || client_id
                        ? (!family || (e->family && strcmp(e->family, family) == 0)) &&
                              (!client_id || strcmp(e->client_id, client_id) == 0)
                        : e->g.expires <= now;
        if (drop) {
            strmap_del(ts->byhash, e->hash);
            entry_free(e);
            gone++;
        }
    }
    free(all);
    return gone;
}

size_t tokenstore_prune(struct tokenstore *ts, time_t now)
{
    char err[400];
    int lock = begin_change(ts);
    size_t gone = remove_where(ts, now, NULL, NULL);
    if (gone)
        persist(ts, err, sizeof err); /* an expired token is refused whether or not this lands */
    storefile_unlock(lock);
    return gone;
}

/* Newest first: by issue time, then (the same second) by issue order here, then by hash. */
static int newest_first(const void *a, const void *b)
{
    const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
    if (x->g.issued != y->g.issued)
        return x->g.issued > y->g.issued ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq > y->seq ? -1 : 1;
    return strcmp(x->hash, y->hash);
}

/* Before a new token of family joins it: keeps the newest TOKENSTORE_FAMILY_ACCESS - 1 access
 * tokens and TOKENSTORE_FAMILY_USED rotated refresh tokens of the family, drops the rest. */
static void trim_family(struct tokenstore *ts, const char *family)
{
    size_t n = 0, k = 0;
    void **all = strmap_values(ts->byhash, &n);
    struct entry **mine = xmalloc((n ? n : 1) * sizeof *mine);
    for (size_t i = 0; i < n; i++) {
        struct entry *e = all[i];
        if (e->family && strcmp(e->family, family) == 0)
            mine[k++] = e;
    }
    free(all);
    qsort(mine, k, sizeof *mine, newest_first);
    size_t access = 0, used = 0;
    for (size_t i = 0; i < k; i++) {
        struct entry *e = mine[i];
        bool drop = e->g.kind == TOKEN_ACCESS ? ++access >= TOKENSTORE_FAMILY_ACCESS
                    : e->g.used               ? ++used > TOKENSTORE_FAMILY_USED
                                              : false;
        if (drop) {
            strmap_del(ts->byhash, e->hash);
            entry_free(e);
        }
    }
    free(mine);
}

static bool issue_locked(struct tokenstore *ts, const struct token_grant *g, char token[65],
                         char *err, size_t errlen)
{
    char hash[65];
    /* Only an access token is trimmed for: a refresh token of the family comes with it at
     * each rotation, and the old one was marked used just before (trimmed at the next). */
    if (g->family && g->kind == TOKEN_ACCESS)
        trim_family(ts, g->family);
    if (strmap_count(ts->byhash) >= TOKENSTORE_MAX)
        remove_where(ts, time(NULL), NULL, NULL);
    if (strmap_count(ts->byhash) >= TOKENSTORE_MAX) {
        snprintf(err, errlen, "the OAuth token store holds %d live tokens; revoke some",
                 TOKENSTORE_MAX);
        return false;
    }
    if (!crypto_random_hex(token, 32)) {
        snprintf(err, errlen, "the random generator failed");
        return false;
    }
    tokenstore_hash(token, hash);
    struct entry *e = entry_new(hash, g);
    if (e->g.issued == 0)
        e->g.issued = time(NULL);
    e->seq = ++ts->issued_here;
    strmap_put(ts->byhash, hash, e);
    if (!persist(ts, err, errlen)) {
        /* Not durable, so not issued: a token that a restart would forget is what this store
         * exists to prevent. */
        strmap_del(ts->byhash, hash);
        entry_free(e);
        memset(token, 0, 65);
        return false;
    }
    return true;
}

bool tokenstore_issue(struct tokenstore *ts, const struct token_grant *g, char token[65], char *err,
                      size_t errlen)
{

    if (!field_ok(g->client_id) || !field_ok(g->scope) || !field_ok(g->resource) ||
        (g->family && !field_ok(g->family))) {
        snprintf(err, errlen,
                 "a client id, scope, resource or family is missing or longer than "
                 "%d bytes",
                 TOKENSTORE_FIELD_MAX);
        return false;
    }
    int lock = begin_change(ts);
    bool ok = issue_locked(ts, g, token, err, errlen);
    storefile_unlock(lock);
    return ok;
}

const struct token_grant *tokenstore_find(struct tokenstore *ts, const char *token, time_t now)
{
    char hash[65];
    if (token == NULL)
        return NULL;
    sync_from_file(ts); /* no lock: the file is replaced whole, by rename */
    tokenstore_hash(token, hash);
    const struct entry *e = strmap_get(ts->byhash, hash);
    return e && e->g.expires > now ? &e->g : NULL;
}

bool tokenstore_revoke(struct tokenstore *ts, const char *token, bool family_too, char *err,
                       size_t errlen)
{
    char hash[65];
    tokenstore_hash(token, hash);
    int lock = begin_change(ts);
    struct entry *e = strmap_get(ts->byhash, hash);
    size_t gone = 0;
    if (e && family_too && e->family) {
        char *family = xstrdup(e->family);
        gone = remove_where(ts, 0, family, NULL);
        free(family);
    } else if (e) {
        strmap_del(ts->byhash, hash);
        entry_free(e);
        gone = 1;
    }
    bool ok = gone == 0 || persist(ts, err, errlen);
    storefile_unlock(lock);
    return ok;
}

bool tokenstore_mark_used(struct tokenstore *ts, const char *token, char *err, size_t errlen)
{
    char hash[65];
    tokenstore_hash(token, hash);
    int lock = begin_change(ts);
    struct entry *e = strmap_get(ts->byhash, hash);
    bool ok = e != NULL;
    if (e == NULL) {
        /* Revoked from the command line since the caller found it: no rotation, no new pair. */
        snprintf(err, errlen, "a refresh token was revoked while it was being rotated");
    } else if (!e->g.used) {
        e->g.used = true;
        ok = persist(ts, err, errlen);
        if (!ok)
            e->g.used = false;
    }
    storefile_unlock(lock);
    return ok;
}

bool tokenstore_revoke_family(struct tokenstore *ts, const char *family, char *err, size_t errlen)
{
    size_t gone;
    return tokenstore_revoke_matching(ts, NULL, family, &gone, err, errlen);
}

bool tokenstore_revoke_matching(struct tokenstore *ts, const char *client_id, const char *family,
                                size_t *gone, char *err, size_t errlen)
{
    *gone = 0;
    if (client_id == NULL && family == NULL)
        return true; /* remove_where would read it as "the expired ones" */
    int lock = begin_change(ts);
    *gone = remove_where(ts, 0, family, client_id);
    bool ok = *gone == 0 || persist(ts, err, errlen);
    storefile_unlock(lock);
    return ok;
}

struct each_ctx {
    void (*fn)(const struct token_grant *g, void *arg);
    void *arg;
};

static void each_entry(const char *key, void *value, void *arg)
{
    const struct entry *e = value;
    struct each_ctx *c = arg;
    (void)key;
    c->fn(&e->g, c->arg);
}

void tokenstore_each(struct tokenstore *ts, void (*fn)(const struct token_grant *g, void *arg),
                     void *arg)
{
    struct each_ctx c = {fn, arg};
    sync_from_file(ts);
    strmap_each(ts->byhash, each_entry, &c);
}

/* ---- a cache of the database's tokens (tokenstore_open(NULL)) ---- */

char *tokenstore_doc(const struct token_grant *g, const char *hash)
{
    struct entry *e = entry_new(hash, g);
    json_t *o = entry_json(e);
    json_object_del(o, "used"); /* the database keeps it in a column of its own */
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    entry_free(e);
    return text;
}

bool tokenstore_cache_put(struct tokenstore *ts, const char *doc, bool used)
{
    json_t *o = json_loads(doc, JSON_REJECT_DUPLICATES, NULL);
    const char *hash = json_string_value(json_object_get(o, "sha256"));
    bool ok = false;
    if (hash) {
        tokenstore_cache_drop(ts, hash);
        if (strmap_count(ts->byhash) >= TOKENSTORE_MAX)
            remove_where(ts, time(NULL), NULL, NULL);
        if (strmap_count(ts->byhash) >= TOKENSTORE_MAX)
            tokenstore_cache_clear(ts); /* a cache: the database has them all */
        if (used)
            json_object_set_new(o, "used", json_true());
        ok = load_entry(ts, o);
    }
    json_decref(o);
    return ok;
}

void tokenstore_cache_drop(struct tokenstore *ts, const char *hash)
{
    struct entry *e = strmap_get(ts->byhash, hash);
    if (e) {
        strmap_del(ts->byhash, hash);
        entry_free(e);
    }
}

void tokenstore_cache_clear(struct tokenstore *ts)
{
    strmap_each(ts->byhash, drop_entry, NULL);
    strmap_free(ts->byhash);
    ts->byhash = strmap_new();
}
