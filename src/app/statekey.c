/* statekey.c — the requestState key shared through the store (statekey.h). */
#include "statekey.h"

#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "hex.h"
#include "log.h"
#include "mcp.h"
#include "storeschema.h"

/* Numbered so that a later rotation can add the next one beside it. */
#define KEY_NAME "reqstate:1"

/* Inserted only when absent, then read back: every replica ends with the first one's key. */
#define KEY_SQL                                                                                    \
    "WITH made AS (INSERT INTO hm_secret (name, value) VALUES ($1, $2)"                            \
    " ON CONFLICT (name) DO NOTHING RETURNING value)"                                              \
    " SELECT value FROM made UNION ALL SELECT value FROM hm_secret WHERE name = $1"

bool statekey_load(const char *url, const char *password, unsigned char key[STATEKEY_LEN],
                   char *err, size_t errlen)
{
    unsigned char fresh[STATEKEY_LEN];
    char hex[2 * STATEKEY_LEN + 1];
    if (!crypto_random_bytes(fresh, sizeof fresh)) {
        snprintf(err, errlen, "no random bytes for the request-state key");
        return false;
    }
    hex_encode(fresh, sizeof fresh, hex);
    explicit_bzero(fresh, sizeof fresh);
    PGconn *pg = storeschema_connect(url, password, err, errlen);
    if (pg == NULL) {
        explicit_bzero(hex, sizeof hex);
        return false;
    }
    const char *params[2] = {KEY_NAME, hex};
    PGresult *r = PQexecParams(pg, KEY_SQL, 2, NULL, params, NULL, NULL, 0);
    /* Another replica inserting at the same moment: our insert waited for its commit and did
     * nothing, and our statement's snapshot predates that commit, so it read no row. A new
     * statement sees the row. */
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 0) {
        PQclear(r);
        r = PQexecParams(pg, "SELECT value FROM hm_secret WHERE name = $1", 1, NULL, params, NULL,
                         NULL, 0);
    }
    explicit_bzero(hex, sizeof hex);
    const char *v =
        PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : NULL;
    bool ok = v && strlen(v) == 2 * STATEKEY_LEN && hex_decode(v, key, STATEKEY_LEN);
    if (!ok && v)
        snprintf(err, errlen, "the store's secret %s is not %d bytes in hex", KEY_NAME,
                 STATEKEY_LEN);
    else if (!ok) {
        const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(pg);
        snprintf(err, errlen, "reading the request-state key from the store: %.*s",
                 (int)strcspn(m && *m ? m : "no answer", "\n"), m && *m ? m : "no answer");
    }
    PQclear(r);
    PQfinish(pg);
    return ok;
}

bool statekey_share(struct mcp_server *mcp, const char *url, const char *password)
{
    unsigned char key[STATEKEY_LEN];
    char err[600];
    if (!statekey_load(url, password, key, err, sizeof err)) {
        log_error("store: %s", err);
        return false;
    }
    mcp_set_state_key(mcp, key);
    explicit_bzero(key, sizeof key);
    log_info("store: requestState is sealed with the key every replica shares");
    return true;
}
