/* oauthpgcli.c — the `oauth` commands' statements on the store (oauthpgcli.h). Values are
 * bound parameters, never SQL text. */
#include "oauthpgcli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authserver.h"
#include "oauthpg.h"
#include "oauthtokens.h"
#include "storeschema.h"

/* What the listing shows at most (the newest by expiry): the cache holds no more. */
#define TOKENS_SHOWN "25000"
_Static_assert(TOKENSTORE_MAX == 25000, "TOKENS_SHOWN is TOKENSTORE_MAX");

#define NOTIFY " SELECT pg_notify('" OAUTHPG_CHANNEL "', "

static void one_line(const char *what, PGconn *pg, PGresult *r, char *err, size_t errlen)
{
    const char *m = r ? PQresultErrorMessage(r) : NULL;
    snprintf(err, errlen, "%s: %s", what, m && *m ? m : PQerrorMessage(pg));
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* Runs sql with n parameters; the result (to PQclear), or NULL with err. */
static PGresult *exec(PGconn *pg, const char *what, const char *sql, int n,
                      const char *const *params, char *err, size_t errlen)
{
    PGresult *r = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return r;
    one_line(what, pg, r, err, errlen);
    PQclear(r);
    return NULL;
}

bool oauthpgcli_load(PGconn *pg, struct tokenstore *ts, struct authserver *as, char *err,
                     size_t errlen)
{
    PGresult *r = exec(pg, "reading the OAuth tokens",
                       "SELECT doc, used FROM hm_oauth_token ORDER BY expires_at DESC"
                       " LIMIT " TOKENS_SHOWN,
                       0, NULL, err, errlen);
    if (r == NULL)
        return false;
    for (int i = 0; i < PQntuples(r); i++)
        tokenstore_cache_put(ts, PQgetvalue(r, i, 0), strcmp(PQgetvalue(r, i, 1), "t") == 0);
    PQclear(r);
    r = exec(pg, "reading the OAuth clients",
             "SELECT doc FROM hm_oauth_client ORDER BY created_at, id", 0, NULL, err, errlen);
    if (r == NULL)
        return false;
    for (int i = 0; i < PQntuples(r); i++)
        authserver_client_add_doc(as, PQgetvalue(r, i, 0));
    PQclear(r);
    return true;
}

bool oauthpgcli_revoke_tokens(PGconn *pg, const char *client, const char *family, size_t *gone,
                              char *err, size_t errlen)
{
    const char *params[2] = {client, family};
    PGresult *r =
        exec(pg, "revoking OAuth tokens",
             "WITH d AS (DELETE FROM hm_oauth_token WHERE ($1::text IS NULL OR"
             " client_id = $1) AND ($2::text IS NULL OR family = $2) RETURNING sha256)" NOTIFY
             "'t:' || sha256) FROM d",
             2, params, err, errlen);
    *gone = r ? (size_t)PQntuples(r) : 0;
    PQclear(r);
    return r != NULL;
}

/* Runs a statement that returns nothing, false with err. */
static bool run(PGconn *pg, const char *what, const char *sql, char *err, size_t errlen)
{
    PGresult *r = exec(pg, what, sql, 0, NULL, err, errlen);
    PQclear(r);
    return r != NULL;
}

bool oauthpgcli_remove_client(PGconn *pg, const char *id, bool keep_row, size_t *gone, bool *found,
                              char *err, size_t errlen)
{
    const char *params[2] = {id, keep_row ? "true" : "false"};
    *gone = 0;
    *found = false;
    if (!run(pg, "removing the OAuth client", "BEGIN", err, errlen))
        return false;
    /* The client's row first: an exchange or rotation holding it shared (tok_exchange) ends
     * before this goes on, so the next statement sees the pair it inserted. */
    PGresult *c = exec(pg, "removing the OAuth client",
                       "WITH d AS (DELETE FROM hm_oauth_client WHERE id = $1 AND NOT $2::bool"
                       " RETURNING id)" NOTIFY "'c:' || id) FROM d",
                       2, params, err, errlen);
    PGresult *t =
        c ? exec(pg, "removing the OAuth client's tokens, codes and consents",
                 "WITH k AS (DELETE FROM hm_oauth_code WHERE doc::json->>'client_id' = $1),"
                 " s AS (DELETE FROM hm_oauth_consent WHERE doc::json->>'client_id' = $1),"
                 " d AS (DELETE FROM hm_oauth_token WHERE client_id = $1 RETURNING sha256)" NOTIFY
                 "'t:' || sha256) FROM d",
                 1, params, err, errlen)
          : NULL;
    bool ok = t && run(pg, "removing the OAuth client", "COMMIT", err, errlen);
    if (ok) {
        *found = PQntuples(c) > 0;
        *gone = (size_t)PQntuples(t);
    } else {
        PQclear(PQexec(pg, "ROLLBACK"));
    }
    PQclear(c);
    PQclear(t);
    return ok;
}

bool oauthpgcli_passwd(const char *url, const char *password, const char *line, char *err,
                       size_t errlen)
{
    PGconn *pg = storeschema_connect(url, password, err, errlen);
    if (pg == NULL)
        return false;
    const char *params[1] = {line};
    PGresult *r = exec(pg, "storing the consent passphrase",
                       "INSERT INTO hm_secret (name, value) VALUES ('passphrase', $1)"
                       " ON CONFLICT (name) DO UPDATE SET value = $1,"
                       " version = hm_secret.version + 1",
                       1, params, err, errlen);
    PQclear(r);
    PQfinish(pg);
    return r != NULL;
}

bool oauthpgcli_summary(const char *url, const char *password, size_t *tokens, size_t *clients,
                        bool *passphrase, char *err, size_t errlen)
{
    PGconn *pg = storeschema_connect(url, password, err, errlen);
    if (pg == NULL)
        return false;
    PGresult *r = exec(pg, "reading the OAuth state",
                       "SELECT (SELECT count(*) FROM hm_oauth_token),"
                       " (SELECT count(*) FROM hm_oauth_client),"
                       " EXISTS (SELECT 1 FROM hm_secret WHERE name = 'passphrase')",
                       0, NULL, err, errlen);
    if (r) {
        *tokens = (size_t)strtoull(PQgetvalue(r, 0, 0), NULL, 10);
        *clients = (size_t)strtoull(PQgetvalue(r, 0, 1), NULL, 10);
        *passphrase = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
    }
    PQclear(r);
    PQfinish(pg);
    return r != NULL;
}
