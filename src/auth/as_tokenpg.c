/* as_tokenpg.c — /token and /revoke with STORE_URL: the code, the refresh token and the pair
 * issued are rows of the store (oauthpg.h), so a code shown by one replica is exchanged on
 * another, exactly once (the exchange and the rotation are compare-and-set statements that
 * insert the new pair only when they won), and a token revoked anywhere is refused everywhere.
 * The answer waits for the commit. */
#include "as_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "hex.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "oauthpg.h"
#include "oauthtokens.h"

/* What one /token request carries from one step to the next. */
struct grant {
    struct authserver *as;
    char client_id[PARAM_MAX + 1];
    char code_hash[65];      /* authorization_code: the code's; refresh: the token's */
    char uri[PARAM_MAX + 1]; /* redirect_uri as sent */
    char verifier[200], resource[PARAM_MAX + 1];
    char scope[PARAM_MAX + 1], family[33];
    char access[65], refresh[65]; /* the pair, until it is answered */
    char access_doc_hash[65];
    char *access_doc;
};

static void grant_free(struct grant *g)
{
    free(g->access_doc);
    explicit_bzero(g, sizeof *g);
    free(g);
}

void as_store_unavailable(struct authserver *as, struct hreq *r)
{
    char retry[16];
    snprintf(retry, sizeof retry, "%u", oauthpg_retry_s(as->pg));
    hreq_add_header(r, "Retry-After", retry);
    as_oauth_error(r, 503, OAUTH_TEMPORARILY_UNAVAILABLE, "the token store is unavailable");
}

struct refusal {
    struct authserver *as;
    const char *why; /* static text */
};

static void answered(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                     void *arg)
{
    struct refusal *f = arg;
    if (st == PGCONN_OK && n > 0)
        oauthpg_drop_rows(f->as->pg, res[0]);
    if (r && st != PGCONN_OK)
        as_store_unavailable(f->as, r);
    else if (r)
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT, f->why);
    free(f);
}

/* Revokes what a replayed code or a reused refresh token gave (stmt), or drops a code
 * (code_drop), then answers invalid_grant. */
static void revoke_then_refuse(struct authserver *as, struct hreq *r, const char *stmt,
                               const char *hash, const char *why)
{
    const char *params[1] = {hash};
    struct pgconn_query q[2] = {{stmt, 1, params}, {"code_drop", 1, params}};
    struct refusal *f = xcalloc(1, sizeof *f);
    f->as = as;
    f->why = why;
    oauthpg_call(as->pg, r, q, strcmp(stmt, "code_replay") == 0 ? 2 : 1, answered, f);
}

/* The pair's two tokens and their documents; false when the random generator failed. */
static bool make_pair(struct grant *g, char adoc_hash[65], char **adoc, char rdoc_hash[65],
                      char **rdoc, time_t now, char aexp[24], char rexp[24])
{
    struct authserver *as = g->as;
    if (!crypto_random_hex(g->access, 32) || !crypto_random_hex(g->refresh, 32))
        return false;
    struct token_grant t = {.kind = TOKEN_ACCESS,
                            .client_id = g->client_id,
                            .scope = g->scope,
                            .resource = as->resource,
                            .family = g->family,
                            .issued = now,
                            .expires = now + (time_t)as->access_ttl_s};
    tokenstore_hash(g->access, adoc_hash);
    *adoc = tokenstore_doc(&t, adoc_hash);
    snprintf(aexp, 24, "%lld", (long long)t.expires);
    t.kind = TOKEN_REFRESH;
    t.expires = now + (time_t)as->refresh_ttl_s;
    tokenstore_hash(g->refresh, rdoc_hash);
    *rdoc = tokenstore_doc(&t, rdoc_hash);
    snprintf(rexp, 24, "%lld", (long long)t.expires);
    return *adoc && *rdoc;
}

static void pair_issued(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                        void *arg)
{
    struct grant *g = arg;
    struct authserver *as = g->as;
    bool code = g->verifier[0] != '\0';
    if (r == NULL) {
        grant_free(g);
        return;
    }
    (void)n;
    if (st != PGCONN_OK) {
        as_store_unavailable(as, r);
    } else if (PQntuples(res[0]) != 2) { /* another request won the code or the rotation */
        log_warn("oauth: a %s of client %s was used twice; its tokens are revoked",
                 code ? "code" : "rotated refresh token", g->client_id);
        revoke_then_refuse(as, r, code ? "code_replay" : "tok_reuse", g->code_hash,
                           code ? "the code was already used"
                                : "the refresh token was already used");
    } else {
        tokenstore_cache_put(oauthpg_cache(as->pg), g->access_doc, false);
        as_reply_json(r, 200,
                      json_pack("{s:s, s:s, s:i, s:s, s:s}", "access_token", g->access,
                                "token_type", "Bearer", "expires_in", (int)as->access_ttl_s,
                                "refresh_token", g->refresh, "scope", g->scope));
    }
    grant_free(g);
}

/* The exchange (code) or rotation (refresh), with the pair, in one transaction. */
static void issue(struct grant *g, struct hreq *r)
{
    char ahash[65], rhash[65], aexp[24], rexp[24], issued[24];
    char *rdoc = NULL;
    time_t now = time(NULL);
    bool code = g->verifier[0] != '\0';
    if (strlen(g->client_id) > TOKENSTORE_FIELD_MAX || strlen(g->scope) > TOKENSTORE_FIELD_MAX ||
        strlen(g->as->resource) > TOKENSTORE_FIELD_MAX) { /* what the token cache takes */
        log_error("oauth: a client id, scope or resource is longer than %d bytes",
                  TOKENSTORE_FIELD_MAX);
        grant_free(g);
        as_oauth_error(r, 503, OAUTH_TEMPORARILY_UNAVAILABLE,
                       "the token store cannot take a token");
        return;
    }
    if (!make_pair(g, ahash, &g->access_doc, rhash, &rdoc, now, aexp, rexp)) {
        free(rdoc);
        grant_free(g);
        as_oauth_error(r, 500, OAUTH_SERVER_ERROR, "the random generator failed");
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* the family's order: newest first when trimming */
    snprintf(issued, sizeof issued, "%lld",
             (long long)ts.tv_sec * 1000 + (long long)(ts.tv_nsec / 1000000));
    if (code) {
        const char *p[11] = {g->code_hash,           g->family, g->client_id, issued, ahash,
                             g->access_doc,          aexp,      rhash,        rdoc,   rexp,
                             g->as->static_client.id};
        struct pgconn_query q[1] = {{"tok_exchange", 11, p}};
        oauthpg_call(g->as->pg, r, q, 1, pair_issued, g);
    } else {
        const char *p[10] = {g->code_hash, g->client_id, issued, ahash, g->access_doc,
                             aexp,         rhash,        rdoc,   rexp,  g->as->static_client.id};
        const char *fam[1] = {g->family};
        struct pgconn_query q[2] = {{"tok_rotate", 10, p}, {"tok_trim", 1, fam}};
        oauthpg_call(g->as->pg, r, q, 2, pair_issued, g);
    }
    free(rdoc);
}

/* ---- authorization_code ---- */

static void code_dropped(struct authserver *as, struct hreq *r, struct grant *g, const char *why)
{
    revoke_then_refuse(as, r, "code_drop", g->code_hash, why);
    grant_free(g);
}

static void code_read(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                      void *arg)
{
    struct grant *g = arg;
    struct authserver *as = g->as;
    (void)n;
    if (r == NULL) {
        grant_free(g);
        return;
    }
    if (st != PGCONN_OK) {
        as_store_unavailable(as, r);
        grant_free(g);
        return;
    }
    if (PQntuples(res[0]) != 1) {
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT, "the code is unknown or expired");
        grant_free(g);
        return;
    }
    if (strcmp(PQgetvalue(res[0], 0, 1), "t") == 0) {
        log_warn("oauth: a code of client %s was used twice; its tokens are revoked", g->client_id);
        revoke_then_refuse(as, r, "code_replay", g->code_hash, "the code was already used");
        grant_free(g);
        return;
    }
    json_t *doc = json_loads(PQgetvalue(res[0], 0, 0), 0, NULL);
    const char *client = json_string_value(json_object_get(doc, "client_id"));
    const char *uri = json_string_value(json_object_get(doc, "redirect_uri"));
    const char *challenge = json_string_value(json_object_get(doc, "challenge"));
    const char *scope = json_string_value(json_object_get(doc, "scope"));
    bool sent = json_is_true(json_object_get(doc, "redirect_sent"));
    if (!client || !uri || !challenge || !scope) {
        json_decref(doc);
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT, "the code is unknown or expired");
        grant_free(g);
        return;
    }
    bool uri_ok = strcmp(g->uri, uri) == 0 || (g->uri[0] == '\0' && !sent);
    const char *refused = NULL;
    if (strcmp(client, g->client_id) != 0 || !uri_ok)
        refused = "the code was issued to another client or redirect_uri";
    else if (!as_verifier_matches(g->verifier, challenge))
        refused = "the code_verifier does not match the challenge";
    snprintf(g->scope, sizeof g->scope, "%s", scope);
    json_decref(doc);
    if (refused) {
        code_dropped(as, r, g, refused);
        return;
    }
    if (g->resource[0] && strcmp(g->resource, as->resource) != 0) {
        as_oauth_error(r, 400, OAUTH_INVALID_TARGET, "this server issues tokens for its /mcp only");
        grant_free(g);
        return;
    }
    if (!crypto_random_hex(g->family, 16)) {
        as_oauth_error(r, 500, OAUTH_SERVER_ERROR, "the random generator failed");
        grant_free(g);
        return;
    }
    issue(g, r);
}

void as_pg_grant_code(struct authserver *as, struct hreq *r, const char *code, const char *uri,
                      const char *verifier, const char *resource, const char *client_id)
{
    struct grant *g = xcalloc(1, sizeof *g);
    unsigned char h[32];
    g->as = as;
    snprintf(g->client_id, sizeof g->client_id, "%s", client_id);
    crypto_sha256(code, strlen(code), h);
    hex_encode(h, sizeof h, g->code_hash);
    snprintf(g->uri, sizeof g->uri, "%s", uri);
    snprintf(g->verifier, sizeof g->verifier, "%s", verifier);
    snprintf(g->resource, sizeof g->resource, "%s", resource);
    const char *params[1] = {g->code_hash};
    struct pgconn_query q[1] = {{"code_get", 1, params}};
    oauthpg_call(as->pg, r, q, 1, code_read, g);
}

/* ---- refresh_token ---- */

static void refresh_read(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                         void *arg)
{
    struct grant *g = arg;
    struct authserver *as = g->as;
    (void)n;
    if (r == NULL || st != PGCONN_OK) {
        if (r)
            as_store_unavailable(as, r);
        grant_free(g);
        return;
    }
    json_t *doc = PQntuples(res[0]) == 1 ? json_loads(PQgetvalue(res[0], 0, 0), 0, NULL) : NULL;
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *client = json_string_value(json_object_get(doc, "client_id"));
    const char *scope = json_string_value(json_object_get(doc, "scope"));
    const char *family = json_string_value(json_object_get(doc, "family"));
    if (!kind || strcmp(kind, "refresh") != 0 || !client || strcmp(client, g->client_id) != 0 ||
        !scope || !family || strlen(family) >= sizeof g->family) {
        json_decref(doc);
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT,
                       "the refresh token is unknown, expired or not this client's");
        grant_free(g);
        return;
    }
    snprintf(g->scope, sizeof g->scope, "%s", scope);
    snprintf(g->family, sizeof g->family, "%s", family);
    json_decref(doc);
    if (strcmp(PQgetvalue(res[0], 0, 1), "t") == 0) {
        log_warn("oauth: a rotated refresh token of client %s was used again; its family is "
                 "revoked",
                 g->client_id);
        revoke_then_refuse(as, r, "tok_reuse", g->code_hash, "the refresh token was already used");
        grant_free(g);
        return;
    }
    issue(g, r);
}

void as_pg_grant_refresh(struct authserver *as, struct hreq *r, const char *token,
                         const char *client_id)
{
    struct grant *g = xcalloc(1, sizeof *g);
    g->as = as;
    snprintf(g->client_id, sizeof g->client_id, "%s", client_id);
    tokenstore_hash(token, g->code_hash);
    const char *params[1] = {g->code_hash};
    struct pgconn_query q[1] = {{"tok_get", 1, params}};
    oauthpg_call(as->pg, r, q, 1, refresh_read, g);
}

/* ---- /revoke ---- */

static void revoked(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                    void *arg)
{
    struct authserver *as = arg;
    if (st == PGCONN_OK && n > 0) /* every replica hears it from the channel; this one now */
        oauthpg_drop_rows(as->pg, res[0]);
    if (r == NULL)
        return;
    if (st != PGCONN_OK) {
        as_store_unavailable(as, r);
        return;
    }
    hreq_add_header(r, "Cache-Control", "no-store");
    hreq_reply(r, 200, "application/json", "{}", 2);
}

void as_pg_revoke(struct authserver *as, struct hreq *r, const char *token, const char *client_id)
{
    char hash[65];
    tokenstore_hash(token, hash);
    tokenstore_cache_drop(oauthpg_cache(as->pg), hash);
    const char *params[2] = {hash, client_id};
    struct pgconn_query q[1] = {{"tok_revoke", 2, params}};
    oauthpg_call(as->pg, r, q, 1, revoked, as);
}
