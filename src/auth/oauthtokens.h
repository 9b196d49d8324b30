/* oauthtokens.h — the durable store of OAuth tokens the server issues (access and refresh), so
 * they survive a restart (clients do not have to authorize again after one).
 *
 * Tokens are opaque: 256 random bits as 64 hex characters, handed to the client once. The store
 * keeps only their SHA-256 with the grant (kind, client, scopes, resource, expiry, family), in
 * one JSON file written atomically (temp file, fsync, rename) with mode 600 after every change,
 * so a crash leaves the old file or the new one. A file readable by others, or one that is not
 * what this module writes, is refused rather than guessed at. Loop thread only.
 * The `hermes-mcp oauth` commands change the same file while the server runs (storefile.h):
 * every change here is made under the file's lock on what the file holds then, and a lookup
 * first reads the file again if another process replaced it, so a revocation from the command
 * line holds from the next request on. */
#ifndef HM_OAUTHTOKENS_H
#define HM_OAUTHTOKENS_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Tokens kept; issuing more prunes the expired first. With fields at their longest an entry is
 * under 2.5 KiB of JSON, so a full store stays under the reader's 64 MiB (oauthtokens.c). */
#define TOKENSTORE_MAX 25000
#define TOKENSTORE_FIELD_MAX 512 /* client id, scope and resource, each */
/* Per family (one authorization), what a rotation keeps besides the new pair: the newest
 * access tokens (a client may still use one it got just before refreshing) and the newest
 * rotated refresh tokens (a reuse of one of those revokes the family; an older one is only
 * unknown). So a client that refreshes in a loop cannot grow the store. */
#define TOKENSTORE_FAMILY_ACCESS 4
#define TOKENSTORE_FAMILY_USED 16

struct tokenstore;

enum token_kind { TOKEN_ACCESS, TOKEN_REFRESH };

struct token_grant {
    enum token_kind kind;
    const char *client_id; /* who it was issued to */
    const char *scope;     /* space-separated scopes granted */
    const char *resource;  /* the audience (RFC 8707), our MCP URL */
    const char *family;    /* refresh rotation: tokens of one authorization share it; may be NULL */
    time_t expires;        /* Unix seconds */
    time_t issued;         /* Unix seconds; tokenstore_issue sets it when 0 (0 in older files) */
    bool used;             /* a refresh token already rotated: presenting it again is reuse */
};

/* The SHA-256 of a secret (a token, a client secret) as the store keeps it: 64 lowercase hex
 * characters and a NUL. */
void tokenstore_hash(const char *secret, char out[65]);

/* Opens the store at path, reading what is there; a missing file is an empty store (created
 * on the first write). path NULL: a store in memory only, the cache of what the database
 * holds (oauthpg.h): nothing is written, the caller writes the database. NULL with a reason in err
 * (never a token or hash) when the file cannot be used: not a regular file, readable by others, too
 * big, or not a store. */
struct tokenstore *tokenstore_open(const char *path, char *err, size_t errlen);
void tokenstore_free(struct tokenstore *ts); /* NULL-safe */

/* Issues a new token for g: writes 64 hex characters and a NUL to token, stores its hash and
 * persists the store before returning true. False with a reason in err (the random generator,
 * the disk, a field too long, the store full of live tokens); nothing is stored then. */
bool tokenstore_issue(struct tokenstore *ts, const struct token_grant *g, char token[65], char *err,
                      size_t errlen);
/* The grant of a live token (known and not expired at now), or NULL. The pointers in it stay
 * valid until the next call into the store (which may read the file again). */
const struct token_grant *tokenstore_find(struct tokenstore *ts, const char *token, time_t now);
/* Forgets a token (RFC 7009: unknown tokens are no error); with family_too, every token of its
 * family as well (refresh reuse). Persists when something was removed. */
bool tokenstore_revoke(struct tokenstore *ts, const char *token, bool family_too, char *err,
                       size_t errlen);
/* Forgets every token of family (a replayed authorization code). Persists when some went. */
bool tokenstore_revoke_family(struct tokenstore *ts, const char *family, char *err, size_t errlen);
/* Marks a refresh token as rotated (kept, so that a second use is seen as reuse and revokes
 * its family); persists. False with a reason when the disk write failed, or when the token is
 * no longer stored (another process revoked it since the caller found it). */
bool tokenstore_mark_used(struct tokenstore *ts, const char *token, char *err, size_t errlen);
/* Drops the tokens expired at now; persists when some were. Returns how many went. */
size_t tokenstore_prune(struct tokenstore *ts, time_t now);
size_t tokenstore_count(const struct tokenstore *ts);
/* Calls fn for every stored token, expired ones too (the grant is valid during the call only). */
void tokenstore_each(struct tokenstore *ts, void (*fn)(const struct token_grant *g, void *arg),
                     void *arg);
/* Forgets every token of client_id (if not NULL) and of family (if not NULL); *gone gets how
 * many went. Persists when some did; false with a reason when that write failed. */
bool tokenstore_revoke_matching(struct tokenstore *ts, const char *client_id, const char *family,
                                size_t *gone, char *err, size_t errlen);

/* ---- the cache of the database's tokens ---- */
/* The document the database keeps for g (hash: the token's), as the file keeps an entry,
 * without "used" (a column of its own). Malloc'd. */
char *tokenstore_doc(const struct token_grant *g, const char *hash);
/* Puts a document read from the database in the cache (replacing one of the same hash); false
 * when it is not one tokenstore_doc writes. */
bool tokenstore_cache_put(struct tokenstore *ts, const char *doc, bool used);
void tokenstore_cache_drop(struct tokenstore *ts, const char *hash);
void tokenstore_cache_clear(struct tokenstore *ts);

#endif
