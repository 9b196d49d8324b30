/* oauthpg.c — the OAuth state in PostgreSQL: the statements, the connection, the token cache's
 * upkeep (oauthpg.h). */
#include "oauthpg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpd.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "oauthtokens.h"
#include "strmap.h"

#define ABSENT_MAX 4096 /* tokens remembered as absent; beyond, the list starts again */
#define PURGE_MS 60000
#define STOP_WAIT_MS 1000

/* Deletions of tokens announce each hash; the statements that delete end with this. */
#define NOTIFY_TOKENS " SELECT sha256, pg_notify('" OAUTHPG_CHANNEL "', 't:' || sha256) FROM d"

/* Every statement of the OAuth state; as_*.c name them. Documents are the exact JSON text the
 * file store keeps for one entry. */
static const struct pgconn_stmt stmts[] = {
    /* First in a transaction whose statement counts rows before it inserts (client_put,
     * consent_put): such transactions run one at a time across replicas, and each statement
     * after the lock sees what the one before committed, so no cap is overshot. */
    {"caps_lock", "SELECT pg_advisory_xact_lock(1751998817, $1::int)"},
    {"tok_get", "SELECT doc, used FROM hm_oauth_token WHERE sha256 = $1 AND expires_at > now()"},
    /* A code's exchange, once: the code marked used with the new family, and the pair inserted
     * only if this statement is the one that marked it (no row: lost, or unknown) and its
     * client ($3) is still registered (or is the static one, $11): the client's row is locked
     * shared, so a removal running meanwhile waits for this and then takes the new pair. */
    {"tok_exchange",
     "WITH c AS (UPDATE hm_oauth_code SET used = true, family = $2 WHERE sha256 = $1"
     " AND NOT used AND expires_at > now() AND ($3 = $11 OR EXISTS"
     " (SELECT 1 FROM hm_oauth_client WHERE id = $3 FOR SHARE)) RETURNING family)"
     " INSERT INTO hm_oauth_token (sha256, doc, kind, client_id, family, issued_at, expires_at)"
     " SELECT v.h, v.d, v.k, $3, c.family, $4::bigint, to_timestamp(v.e) FROM c,"
     " (VALUES ($5::text, $6::text, 'access', $7::bigint),"
     " ($8::text, $9::text, 'refresh', $10::bigint)) AS v(h, d, k, e) RETURNING sha256"},
    /* A refresh token's rotation, once, the same way (the static client's id: $10). */
    {"tok_rotate",
     "WITH r AS (UPDATE hm_oauth_token SET used = true WHERE sha256 = $1 AND kind = 'refresh'"
     " AND client_id = $2 AND NOT used AND expires_at > now() AND ($2 = $10 OR EXISTS"
     " (SELECT 1 FROM hm_oauth_client WHERE id = $2 FOR SHARE)) RETURNING family)"
     " INSERT INTO hm_oauth_token (sha256, doc, kind, client_id, family, issued_at, expires_at)"
     " SELECT v.h, v.d, v.k, $2, r.family, $3::bigint, to_timestamp(v.e) FROM r,"
     " (VALUES ($4::text, $5::text, 'access', $6::bigint),"
     " ($7::text, $8::text, 'refresh', $9::bigint)) AS v(h, d, k, e) RETURNING sha256"},
    /* After a rotation: the family keeps its newest 4 access and 16 rotated refresh tokens
     * (TOKENSTORE_FAMILY_ACCESS, TOKENSTORE_FAMILY_USED). */
    {"tok_trim",
     "WITH x AS (SELECT sha256, kind, used, row_number() OVER (PARTITION BY kind, used"
     " ORDER BY issued_at DESC, sha256) AS n FROM hm_oauth_token WHERE family = $1),"
     " d AS (DELETE FROM hm_oauth_token t USING x WHERE t.sha256 = x.sha256 AND"
     " ((x.kind = 'access' AND x.n > 4) OR (x.kind = 'refresh' AND x.used AND x.n > 16))"
     " RETURNING t.sha256)" NOTIFY_TOKENS},
    /* /revoke: a client's own live token; a refresh token takes its family. */
    {"tok_revoke",
     "WITH t AS (SELECT sha256, kind, family FROM hm_oauth_token WHERE sha256 = $1"
     " AND client_id = $2 AND expires_at > now()),"
     " d AS (DELETE FROM hm_oauth_token x USING t WHERE x.sha256 = t.sha256"
     " OR (t.kind = 'refresh' AND x.family = t.family) RETURNING x.sha256)" NOTIFY_TOKENS},
    /* A rotated refresh token used again: it and its family. */
    {"tok_reuse", "WITH t AS (SELECT family FROM hm_oauth_token WHERE sha256 = $1),"
                  " d AS (DELETE FROM hm_oauth_token x WHERE x.sha256 = $1"
                  " OR x.family = (SELECT family FROM t) RETURNING x.sha256)" NOTIFY_TOKENS},
    /* A code replayed: what its exchange gave. */
    {"code_replay", "WITH d AS (DELETE FROM hm_oauth_token WHERE family ="
                    " (SELECT family FROM hm_oauth_code WHERE sha256 = $1 AND used) RETURNING "
                    "sha256)" NOTIFY_TOKENS},
    {"code_get", "SELECT doc, used FROM hm_oauth_code WHERE sha256 = $1 AND expires_at > now()"},
    {"code_drop", "DELETE FROM hm_oauth_code WHERE sha256 = $1"},
    {"code_put", "INSERT INTO hm_oauth_code (sha256, doc, expires_at)"
                 " VALUES ($1, $2, to_timestamp($3::bigint))"},
    /* A consent shown: only while its address holds fewer than $5 and all fewer than $6 open
     * ones, and a passphrase is set. */
    {"consent_put",
     "INSERT INTO hm_oauth_consent (csrf_sha256, doc, addr, expires_at)"
     " SELECT $1, $2, $3, to_timestamp($4::bigint)"
     " WHERE EXISTS (SELECT 1 FROM hm_secret WHERE name = 'passphrase')"
     " AND (SELECT count(*) FROM hm_oauth_consent WHERE addr = $3 AND expires_at > now()) < $5"
     " AND (SELECT count(*) FROM hm_oauth_consent WHERE expires_at > now()) < $6"
     " RETURNING csrf_sha256"},
    {"consent_why", "SELECT EXISTS (SELECT 1 FROM hm_secret WHERE name = 'passphrase'),"
                    " (SELECT count(*) FROM hm_oauth_consent WHERE expires_at > now()) >= $1"},
    /* The consent POST's token spent, once, and a fresh one set. The attempt ($7: 1, or 0 for
     * a refusal) is counted first for the address ($3) and everyone ('consent:*') in this
     * minute ($4): the counters' rows are locked by the upsert, so parallel POSTs through any
     * replica each see a distinct count, and none is spent past $5 (address) or $6 (all). An
     * address already over its limit adds nothing to everyone's count: it cannot lock the
     * owner out by itself. */
    {"consent_spend",
     "WITH m AS (INSERT INTO hm_oauth_counter (key, window_start, n)"
     " VALUES ($3, $4::bigint, $7::bigint) ON CONFLICT (key) DO UPDATE SET n = CASE"
     " WHEN hm_oauth_counter.window_start = $4::bigint THEN hm_oauth_counter.n + $7::bigint"
     " ELSE $7::bigint END, window_start = $4::bigint RETURNING n),"
     " g AS (INSERT INTO hm_oauth_counter (key, window_start, n)"
     " SELECT 'consent:*', $4::bigint, CASE WHEN m.n <= $5 THEN $7::bigint ELSE 0 END FROM m"
     " ON CONFLICT (key) DO UPDATE SET n = CASE WHEN hm_oauth_counter.window_start = $4::bigint"
     " THEN hm_oauth_counter.n + excluded.n ELSE excluded.n END, window_start = $4::bigint"
     " RETURNING n),"
     " s AS (UPDATE hm_oauth_consent SET csrf_sha256 = $2 WHERE csrf_sha256 = $1"
     " AND expires_at > now() AND (SELECT n FROM m) <= $5 AND (SELECT n FROM g) <= $6"
     " RETURNING doc) SELECT (SELECT n FROM m), (SELECT n FROM g), (SELECT doc FROM s)"},
    /* An attempt that checked nothing, or the right passphrase: given back. */
    {"count_refund", "UPDATE hm_oauth_counter SET n = n - 1 WHERE key IN ($1, 'consent:*')"
                     " AND window_start = $2::bigint AND n > 0"},
    {"consent_drop", "DELETE FROM hm_oauth_consent WHERE csrf_sha256 = $1"},
    {"secret_get", "SELECT value FROM hm_secret WHERE name = $1"},
    /* A fixed window per key: the count after adding one. */
    {"count_add", "INSERT INTO hm_oauth_counter (key, window_start, n) VALUES ($1, $2::bigint, 1)"
                  " ON CONFLICT (key) DO UPDATE SET n = CASE WHEN hm_oauth_counter.window_start ="
                  " $2::bigint THEN hm_oauth_counter.n + 1 ELSE 1 END, window_start = $2::bigint"
                  " RETURNING n"},
    /* A registration, while the address's count ($3) of this window allows it ($4). With the
     * table full ($5), the oldest client with no token and no live code goes in its place (and
     * leaves every replica's cache); with none such, nothing is inserted. */
    {"client_put",
     "WITH v AS (SELECT id FROM hm_oauth_client o"
     " WHERE (SELECT count(*) FROM hm_oauth_client) >= $5"
     " AND (SELECT n FROM hm_oauth_counter WHERE key = $3) <= $4"
     " AND NOT EXISTS (SELECT 1 FROM hm_oauth_token t WHERE t.client_id = o.id)"
     " AND NOT EXISTS (SELECT 1 FROM hm_oauth_code k WHERE k.doc::json->>'client_id' = o.id"
     " AND k.expires_at > now()) ORDER BY created_at, id LIMIT 1),"
     " d AS (DELETE FROM hm_oauth_client x USING v WHERE x.id = v.id"
     " RETURNING x.id, pg_notify('" OAUTHPG_CHANNEL "', 'c:' || x.id))"
     " INSERT INTO hm_oauth_client (id, doc) SELECT $1, $2"
     " WHERE (SELECT n FROM hm_oauth_counter WHERE key = $3) <= $4"
     " AND (SELECT count(*) FROM hm_oauth_client) - (SELECT count(*) FROM d) < $5 RETURNING id"},
    {"client_get", "SELECT doc FROM hm_oauth_client WHERE id = $1"},
    {"purge", "WITH a AS (DELETE FROM hm_oauth_code WHERE expires_at < now()),"
              " b AS (DELETE FROM hm_oauth_consent WHERE expires_at < now()),"
              " c AS (DELETE FROM hm_oauth_counter WHERE window_start < $1::bigint)"
              " DELETE FROM hm_oauth_token WHERE expires_at < now() - interval '1 hour'"},
};

struct oauthpg_wait {
    struct oauthpg_wait *next;
    struct oauthpg *p;
    char hash[65];
    void (*ready)(void *);
    void *arg; /* NULL ready: cancelled, only the record is left */
};

struct oauthpg {
    struct loop *loop;
    struct pgconn *conn;
    struct tokenstore *cache;
    struct strmap *absent; /* hash -> expiry (loop ms), as a pointer-sized integer */
    struct loop_timer *purge;
    void (*clients_fn)(void *arg, const char *id);
    void *clients_arg;
};

/* A call tied to an HTTP request. */
struct call {
    struct hreq *r;
    oauthpg_cb *cb;
    void *arg;
};

static void logged(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                   void *arg)
{
    (void)res, (void)n, (void)arg;
    if (st == PGCONN_FAILED)
        log_warn("store: oauth: %s", error ? error : "a statement failed");
}

void oauthpg_send(struct oauthpg *p, const struct pgconn_query *q, size_t n, pgconn_done_cb *cb,
                  void *arg)
{
    pgconn_send(p->conn, q, n, cb ? cb : logged, arg);
}

static void call_gone(struct hreq *r, void *arg)
{
    struct call *c = arg;
    (void)r;
    c->r = NULL;
}

static void call_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                      void *arg)
{
    struct call *c = arg;
    if (st == PGCONN_FAILED)
        log_warn("store: oauth: %s", error ? error : "a statement failed");
    if (c->r)
        hreq_on_abort(c->r, NULL, NULL);
    c->cb(c->r, st, res, n, c->arg);
    free(c);
}

void oauthpg_call(struct oauthpg *p, struct hreq *r, const struct pgconn_query *q, size_t n,
                  oauthpg_cb *cb, void *arg)
{
    struct call *c = xcalloc(1, sizeof *c);
    c->r = r;
    c->cb = cb;
    c->arg = arg;
    hreq_on_abort(r, call_gone, c);
    pgconn_send(p->conn, q, n, call_done, c);
}

unsigned oauthpg_retry_s(const struct oauthpg *p)
{
    unsigned ms = pgconn_retry_in_ms(p->conn);
    return ms / 1000 + 1;
}

void oauthpg_drop_rows(struct oauthpg *p, const PGresult *res)
{
    if (res && PQresultStatus(res) == PGRES_TUPLES_OK && PQnfields(res) >= 1)
        for (int i = 0; i < PQntuples(res); i++)
            tokenstore_cache_drop(p->cache, PQgetvalue(res, i, 0));
}

struct tokenstore *oauthpg_cache(struct oauthpg *p)
{
    return p->cache;
}

void oauthpg_on_clients(struct oauthpg *p, void (*fn)(void *arg, const char *id), void *arg)
{
    p->clients_fn = fn;
    p->clients_arg = arg;
}

/* ---- the token cache ---- */

static void forget_all(struct oauthpg *p)
{
    tokenstore_cache_clear(p->cache);
    strmap_free(p->absent);
    p->absent = strmap_new();
    if (p->clients_fn)
        p->clients_fn(p->clients_arg, NULL);
}

static void on_notify(const char *channel, const char *payload, void *arg)
{
    struct oauthpg *p = arg;
    if (strcmp(channel, OAUTHPG_CHANNEL) != 0 || payload == NULL)
        return;
    if (strncmp(payload, "t:", 2) == 0)
        tokenstore_cache_drop(p->cache, payload + 2);
    else if (strncmp(payload, "c:", 2) == 0 && p->clients_fn)
        p->clients_fn(p->clients_arg, payload + 2);
}

static void on_state(bool up, const char *why, void *arg)
{
    (void)why;
    if (up) /* what was announced while away is unknown: nothing cached is trusted */
        forget_all(arg);
}

/* What the store said of hash lately: a token it lacks, or a lookup that failed (so that the
 * request asked again after it is answered 503 rather than sent round again). Entries are the
 * expiry (loop ms) shifted left, the low bit set for a failure. */
static enum oauthpg_find remembered(struct oauthpg *p, const char *hash)
{
    uintptr_t v = (uintptr_t)strmap_get(p->absent, hash);
    if (v == 0)
        return OAUTHPG_WAIT;
    if ((v >> 1) > loop_now(p->loop))
        return v & 1 ? OAUTHPG_DOWN : OAUTHPG_ABSENT;
    strmap_del(p->absent, hash);
    return OAUTHPG_WAIT;
}

static void remember(struct oauthpg *p, const char *hash, bool failed)
{
    if (strmap_count(p->absent) >= ABSENT_MAX) {
        strmap_free(p->absent);
        p->absent = strmap_new();
    }
    uint64_t ms = failed ? 1000 : OAUTHPG_ABSENT_MS;
    strmap_put(p->absent, hash, (void *)(uintptr_t)(((loop_now(p->loop) + ms) << 1) | failed));
}

static void fetched(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                    void *arg)
{
    struct oauthpg_wait *w = arg;
    struct oauthpg *p = w->p;
    (void)n, (void)error;
    if (st == PGCONN_OK && PQntuples(res[0]) == 1) {
        bool used = strcmp(PQgetvalue(res[0], 0, 1), "t") == 0;
        if (!tokenstore_cache_put(p->cache, PQgetvalue(res[0], 0, 0), used)) {
            log_warn("store: oauth: a stored token's document is not one this server writes");
            remember(p, w->hash, false); /* refused, and not asked for again at once */
        }
    } else {
        remember(p, w->hash, st != PGCONN_OK);
    }
    if (w->ready)
        w->ready(w->arg);
    free(w);
}

enum oauthpg_find oauthpg_token_fetch(struct oauthpg *p, const char *token, void (*ready)(void *),
                                      void *arg, struct oauthpg_wait **out)
{
    char hash[65];
    *out = NULL;
    tokenstore_hash(token, hash);
    enum oauthpg_find known = remembered(p, hash);
    if (known != OAUTHPG_WAIT)
        return known;
    if (!pgconn_up(p->conn))
        return OAUTHPG_DOWN;
    struct oauthpg_wait *w = xcalloc(1, sizeof *w);
    w->p = p;
    snprintf(w->hash, sizeof w->hash, "%s", hash);
    w->ready = ready;
    w->arg = arg;
    const char *params[1] = {w->hash};
    pgconn_send_one(p->conn, "tok_get", 1, params, fetched, w);
    *out = w;
    return OAUTHPG_WAIT;
}

void oauthpg_wait_cancel(struct oauthpg_wait *w)
{
    if (w) /* the answer still comes: it frees the record */
        w->ready = NULL, w->arg = NULL;
}

/* ---- upkeep ---- */

static void purge(struct loop *l, void *arg)
{
    struct oauthpg *p = arg;
    char before[24];
    p->purge = loop_timer_add(l, PURGE_MS, purge, p);
    snprintf(before, sizeof before, "%lld", (long long)(time(NULL) / 60 - 2));
    const char *params[1] = {before};
    if (pgconn_up(p->conn))
        pgconn_send_one(p->conn, "purge", 1, params, logged, NULL);
}

struct oauthpg *oauthpg_new(struct loop *l, const char *url, const char *password,
                            struct tokenstore *cache)
{
    struct oauthpg *p = xcalloc(1, sizeof *p);
    p->loop = l;
    p->cache = cache;
    p->absent = strmap_new();
    struct pgconn_opts o = {.loop = l,
                            .conninfo = url,
                            .password = password,
                            .stmts = stmts,
                            .nstmts = sizeof stmts / sizeof *stmts,
                            .on_notify = on_notify,
                            .on_state = on_state,
                            .arg = p};
    p->conn = pgconn_new(&o);
    if (p->conn == NULL) {
        strmap_free(p->absent);
        free(p);
        return NULL;
    }
    pgconn_listen(p->conn, OAUTHPG_CHANNEL);
    p->purge = loop_timer_add(l, PURGE_MS, purge, p);
    return p;
}

void oauthpg_free(struct oauthpg *p)
{
    if (p == NULL)
        return;
    loop_timer_cancel(p->purge);
    pgconn_settle(p->conn, STOP_WAIT_MS);
    pgconn_free(p->conn); /* every request in flight is called back */
    strmap_free(p->absent);
    free(p);
}
