/* storemigoauth.c — the OAuth clients and tokens of the file store copied by `store migrate`
 * (storemigoauth.h). Each entry goes in as the server keeps it in hm_oauth_client and
 * hm_oauth_token: the entry's JSON, compact with sorted keys, a token's "used" in its own column.
 */
#include "storemigoauth.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exitcode.h"
#include "mem.h"
#include "storemig.h"

#define OAUTH_FILE_MAX (64u * 1024u * 1024u) /* the server's own cap on these files */
#define FIELD_MAX 512

static const char client_sql[] =
    "INSERT INTO hm_oauth_client (id, doc, created_at)"
    " VALUES ($1, $2, coalesce(to_timestamp($3::double precision), now()))"
    " ON CONFLICT (id) DO NOTHING RETURNING id";
static const char token_sql[] =
    "INSERT INTO hm_oauth_token (sha256, doc, kind, client_id, family, used, issued_at, "
    "expires_at) VALUES ($1, $2, $3, $4, $5, $6::boolean, $7::bigint, "
    "to_timestamp($8::double precision)) ON CONFLICT (sha256) DO NOTHING RETURNING sha256";

static bool field_ok(json_t *v)
{
    const char *s = json_string_value(v);
    return s && *s && strlen(s) <= FIELD_MAX;
}

static bool hex64(const char *s)
{
    if (s == NULL || strlen(s) != 64)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

/* The file's list under key, its version checked; NULL with why when the file exists and is not
 * one the server writes; *absent when it does not exist. */
static json_t *load_list(const char *path, const char *key, json_int_t vmax, bool *absent,
                         const char **why)
{
    char *text;
    size_t len;
    struct timespec mt;
    *absent = false;
    int rc = storemig_read(path, OAUTH_FILE_MAX, &text, &len, &mt, why);
    if (rc < 0)
        *absent = true;
    if (rc != 0)
        return NULL;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    free(text);
    json_int_t v = json_integer_value(json_object_get(doc, "version"));
    json_t *list = json_object_get(doc, key);
    if (!json_is_array(list) || v < 1 || v > vmax) {
        json_decref(doc);
        *why = "not one this server writes (JSON, its version, the list)";
        return NULL;
    }
    json_incref(list);
    json_decref(doc);
    return list;
}

static bool client_ok(json_t *o)
{
    json_t *created = json_object_get(o, "created");
    return json_is_object(o) && field_ok(json_object_get(o, "client_id")) &&
           json_is_string(json_object_get(o, "client_name")) &&
           json_is_array(json_object_get(o, "redirect_uris")) &&
           (created == NULL || json_is_integer(created));
}

static bool token_ok(json_t *o)
{
    const char *kind = json_string_value(json_object_get(o, "kind"));
    json_t *family = json_object_get(o, "family"), *issued = json_object_get(o, "issued");
    return json_is_object(o) && hex64(json_string_value(json_object_get(o, "sha256"))) && kind &&
           (!strcmp(kind, "access") || !strcmp(kind, "refresh")) &&
           field_ok(json_object_get(o, "client_id")) && field_ok(json_object_get(o, "scope")) &&
           field_ok(json_object_get(o, "resource")) &&
           json_is_integer(json_object_get(o, "expires")) && (!family || field_ok(family)) &&
           (!issued || json_is_integer(issued));
}

/* One insert; -1 on an error (reported), 1 when inserted, 0 when there already. */
static int insert(PGconn *pg, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) == 1 : -1;
    if (rc < 0) {
        char line[600];
        snprintf(line, sizeof line, "%s", PQresultErrorMessage(r));
        for (char *c = line; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        fprintf(stderr, "hermes-mcp store migrate: OAuth: %s\n", line);
    }
    PQclear(r);
    return rc;
}

static int put_client(PGconn *pg, json_t *o)
{
    char *doc = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    char created[32];
    json_t *c = json_object_get(o, "created");
    snprintf(created, sizeof created, "%lld", (long long)json_integer_value(c));
    const char *p[3] = {json_string_value(json_object_get(o, "client_id")), doc,
                        c ? created : NULL};
    int rc = doc ? insert(pg, client_sql, 3, p) : -1;
    free(doc);
    return rc;
}

static int put_token(PGconn *pg, json_t *o)
{
    json_t *d = json_deep_copy(o);
    json_object_del(d, "used"); /* a column of its own */
    char *doc = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(d);
    char issued[32], expires[32];
    /* The column orders a family in milliseconds; the file keeps seconds. */
    snprintf(issued, sizeof issued, "%lld",
             (long long)json_integer_value(json_object_get(o, "issued")) * 1000);
    snprintf(expires, sizeof expires, "%lld",
             (long long)json_integer_value(json_object_get(o, "expires")));
    const char *p[8] = {json_string_value(json_object_get(o, "sha256")),
                        doc,
                        json_string_value(json_object_get(o, "kind")),
                        json_string_value(json_object_get(o, "client_id")),
                        json_string_value(json_object_get(o, "family")),
                        json_is_true(json_object_get(o, "used")) ? "true" : "false",
                        issued,
                        expires};
    int rc = doc ? insert(pg, token_sql, 8, p) : -1;
    free(doc);
    return rc;
}

int storemigoauth_run(PGconn *pg, const char *clients_path, const char *tokens_path)
{
    const char *why = NULL;
    bool cabsent, tabsent;
    json_t *clients = load_list(clients_path, "clients", 2, &cabsent, &why);
    const char *bad = clients || cabsent ? NULL : clients_path;
    json_t *tokens = bad ? NULL : load_list(tokens_path, "tokens", 1, &tabsent, &why);
    if (!bad && !tokens && !tabsent)
        bad = tokens_path;
    size_t i;
    json_t *o;
    json_array_foreach(clients, i, o) if (!bad && !client_ok(o))
    {
        bad = clients_path;
        why = "an entry is not a client this server writes";
    }
    json_array_foreach(tokens, i, o) if (!bad && !token_ok(o))
    {
        bad = tokens_path;
        why = "an entry is not a token this server writes";
    }
    if (bad) {
        fprintf(stderr, "hermes-mcp store migrate: OAuth clients and tokens not copied: %s: %s\n",
                bad, why);
        json_decref(clients);
        json_decref(tokens);
        return EXIT_FAIL;
    }
    size_t nc = 0, nt = 0, there = 0, expired = 0;
    time_t now = time(NULL);
    PGresult *b = PQexec(pg, "BEGIN");
    bool ok = PQresultStatus(b) == PGRES_COMMAND_OK;
    PQclear(b);
    json_array_foreach(clients, i, o) if (ok)
    {
        int rc = put_client(pg, o);
        ok = rc >= 0;
        nc += rc == 1;
        there += rc == 0;
    }
    json_array_foreach(tokens, i, o) if (ok)
    {
        if (json_integer_value(json_object_get(o, "expires")) <= now) {
            expired++;
            continue;
        }
        int rc = put_token(pg, o);
        ok = rc >= 0;
        nt += rc == 1;
        there += rc == 0;
    }
    PGresult *e = PQexec(pg, ok ? "COMMIT" : "ROLLBACK");
    ok = ok && PQresultStatus(e) == PGRES_COMMAND_OK;
    PQclear(e);
    json_decref(clients);
    json_decref(tokens);
    if (!ok) {
        fprintf(stderr, "hermes-mcp store migrate: OAuth clients and tokens not copied: %s\n",
                PQerrorMessage(pg));
        return EXIT_FAIL;
    }
    printf("store migrate: OAuth: %zu clients, %zu tokens copied (%zu already there, %zu "
           "expired left out)\n",
           nc, nt, there, expired);
    return EXIT_OK;
}
