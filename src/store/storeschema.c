/* storeschema.c — the PostgreSQL store's migrations (storeschema.h). Their SQL is fixed text;
 * nothing a client sends ever reaches it. */
#include "storeschema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Taken by every migration's transaction: a second `store init` waits, then sees the steps
 * done. The number is arbitrary and ours ("hermes" in ASCII). */
#define SCHEMA_LOCK "686572776573"

static const struct {
    const char *summary;
    const char *sql;
} migrations[STORESCHEMA_VERSION] = {
    {"the schema's own version, and the replicas (each server's id, host and heartbeat)",
     "CREATE TABLE hm_schema (version int PRIMARY KEY, summary text NOT NULL,"
     "  applied_at timestamptz NOT NULL DEFAULT now());"
     "CREATE TABLE hm_replica (id text PRIMARY KEY, host text NOT NULL,"
     "  version text NOT NULL, started_at timestamptz NOT NULL DEFAULT now(),"
     "  seen_at timestamptz NOT NULL DEFAULT now());"},
    {"the approval queue every replica shares: each request held by one replica, decided "
     "through any",
     "CREATE TABLE hm_approval (id text PRIMARY KEY, holder text NOT NULL,"
     "  principal text NOT NULL, tool text NOT NULL, summary text NOT NULL,"
     "  cut bigint NOT NULL DEFAULT 0, arguments text NOT NULL,"
     "  created_at timestamptz NOT NULL, expires_at timestamptz NOT NULL,"
     "  decision text CHECK (decision IN ('approve', 'deny')), reason text, decider text,"
     "  decided_at timestamptz);"
     "CREATE INDEX hm_approval_open ON hm_approval (created_at) WHERE decision IS NULL;"},

    /* Each document is kept as the exact JSON text the server wrote (what the file store
     * keeps), so a read answers the same bytes; the columns beside are what is looked up. */
    {"tasks: each task's request, run and result, the run index, and which replica follows "
     "its run",
     "CREATE TABLE hm_task (id text PRIMARY KEY, request text, run text, result text,"
     "  run_id text, follower text, created_by text,"
     "  created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz,"
     "  version bigint NOT NULL DEFAULT 2);"
     "CREATE INDEX hm_task_run ON hm_task (run_id) WHERE run_id IS NOT NULL;"
     "CREATE INDEX hm_task_open ON hm_task (follower) WHERE run IS NOT NULL AND result IS NULL;"
     "CREATE INDEX hm_task_done ON hm_task (finished_at) WHERE finished_at IS NOT NULL;"},

    {"OAuth: clients, authorization codes, consents shown, tokens and their families, and the "
     "counters of wrong passphrases and registrations",
     "CREATE TABLE hm_oauth_client (id text PRIMARY KEY, doc text NOT NULL,"
     "  created_at timestamptz NOT NULL DEFAULT now(), version bigint NOT NULL DEFAULT 2);"
     "CREATE TABLE hm_oauth_token (sha256 text PRIMARY KEY, doc text NOT NULL,"
     "  kind text NOT NULL CHECK (kind IN ('access', 'refresh')), client_id text NOT NULL,"
     "  family text, used boolean NOT NULL DEFAULT false, issued_at bigint NOT NULL,"
     "  expires_at timestamptz NOT NULL);"
     "CREATE INDEX hm_oauth_token_family ON hm_oauth_token (family);"
     "CREATE INDEX hm_oauth_token_client ON hm_oauth_token (client_id);"
     "CREATE INDEX hm_oauth_token_expiry ON hm_oauth_token (expires_at);"
     "CREATE TABLE hm_oauth_code (sha256 text PRIMARY KEY, doc text NOT NULL, family text,"
     "  used boolean NOT NULL DEFAULT false, expires_at timestamptz NOT NULL);"
     "CREATE TABLE hm_oauth_consent (csrf_sha256 text PRIMARY KEY, doc text NOT NULL,"
     "  addr text NOT NULL, expires_at timestamptz NOT NULL);"
     "CREATE INDEX hm_oauth_consent_addr ON hm_oauth_consent (addr, expires_at);"
     "CREATE TABLE hm_oauth_counter (key text PRIMARY KEY, window_start bigint NOT NULL,"
     "  n bigint NOT NULL);"},

    {"secrets every replica shares (the consent passphrase, the keys sealing requestState), "
     "pinned tool definitions, and the input rounds' nonces already answered",
     "CREATE TABLE hm_secret (name text PRIMARY KEY, value text NOT NULL,"
     "  created_at timestamptz NOT NULL DEFAULT now(), version bigint NOT NULL DEFAULT 2);"
     "CREATE TABLE hm_pin (exposed text PRIMARY KEY, doc text NOT NULL,"
     "  version bigint NOT NULL DEFAULT 2);"
     "CREATE TABLE hm_nonce (nonce text PRIMARY KEY, expires_at timestamptz NOT NULL);"
     "CREATE INDEX hm_nonce_expiry ON hm_nonce (expires_at);"},

    /* The text of each file hermes_files can serve, the others listed with the reason. */
    {"the files an agent left in a task's directory, copied when its result is written",
     "CREATE TABLE hm_task_file (task_id text NOT NULL REFERENCES hm_task (id)"
     "  ON DELETE CASCADE, path text NOT NULL, is_dir boolean NOT NULL,"
     "  size bigint NOT NULL, mtime bigint NOT NULL, content text, refusal text,"
     "  PRIMARY KEY (task_id, path));"},

    /* A gateway task as tasks/get shows it, written by the replica that holds the call (which
     * touches seen_at while alive); the other replicas answer from it and ask that replica to
     * cancel through the flag. */
    {"the gateway's MCP tasks: each task's status and result, its owner, the replica holding "
     "it and when it was last heard of, and a cancel asked through another replica",
     "CREATE TABLE hm_gwtask (id text PRIMARY KEY, owner text NOT NULL, holder text NOT NULL,"
     "  upstream text NOT NULL,"
     "  status text NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),"
     "  message text, result text, ttl_ms bigint NOT NULL,"
     "  created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, ended_at timestamptz,"
     "  cancel_requested boolean NOT NULL DEFAULT false,"
     "  seen_at timestamptz NOT NULL DEFAULT now());"
     "CREATE INDEX hm_gwtask_open ON hm_gwtask (holder) WHERE status = 'working';"
     "CREATE INDEX hm_gwtask_ended ON hm_gwtask (ended_at) WHERE ended_at IS NOT NULL;"},
};

/* The message of r, or of the connection when r has none (NULL: the link dropped). */
static const char *result_error(PGconn *pg, const PGresult *r)
{
    const char *m = r ? PQresultErrorMessage(r) : NULL;
    return m && *m ? m : PQerrorMessage(pg);
}

/* The server's message, one line, without a password (libpq never puts one in). */
static void pg_error(const char *what, const char *msg, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, msg && *msg ? msg : "unknown error");
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    for (size_t n = strlen(err); n > 0 && err[n - 1] == ' ';)
        err[--n] = '\0';
}

PGconn *storeschema_connect(const char *url, const char *password, char *err, size_t errlen)
{
    /* Our defaults first: the URL's own settings (expanded from dbname) win. */
    const char *keys[] = {"connect_timeout", "application_name", "dbname", "password", NULL};
    const char *vals[] = {"10", "hermes-mcp", url, password, NULL};
    if (password == NULL) /* libpq's own sources: keep the key out */
        keys[3] = NULL;
    if (!pgrt_load(err, errlen))
        return NULL;
    PGconn *pg = PQconnectdbParams(keys, vals, 1);
    if (pg == NULL || PQstatus(pg) != CONNECTION_OK) {
        pg_error("cannot connect to STORE_URL", pg ? PQerrorMessage(pg) : "out of memory", err,
                 errlen);
        PQfinish(pg);
        return NULL;
    }
    /* Notices (a table that exists, say) are for a person at a psql prompt, not for us. */
    PQsetNoticeProcessor(pg, NULL, NULL);
    return pg;
}

int storeschema_version(PGconn *pg, char *err, size_t errlen)
{
    PGresult *r = PQexec(pg, "SELECT to_regclass('hm_schema') IS NOT NULL");
    int v = -1;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_error("reading the schema version", result_error(pg, r), err, errlen);
    } else if (strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
        v = 0;
    } else {
        PQclear(r);
        r = PQexec(pg, "SELECT coalesce(max(version), 0) FROM hm_schema");
        if (PQresultStatus(r) == PGRES_TUPLES_OK)
            v = atoi(PQgetvalue(r, 0, 0));
        else
            pg_error("reading the schema version", result_error(pg, r), err, errlen);
    }
    PQclear(r);
    return v;
}

/* One statement whose result we only need to be a success. */
static bool run(PGconn *pg, const char *sql, const char *what, char *err, size_t errlen)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType st = PQresultStatus(r);
    bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        pg_error(what, result_error(pg, r), err, errlen);
    PQclear(r);
    return ok;
}

/* Step v (from v - 1), in one transaction (begun after the lock was taken, so that it sees
 * what another init committed before): the version read again, the SQL, the row that records
 * it. */
static bool step(PGconn *pg, int v, bool *done, char *err, size_t errlen)
{
    char what[64], version[16];
    snprintf(what, sizeof what, "schema step %d", v);
    snprintf(version, sizeof version, "%d", v);
    *done = false;
    if (!run(pg, "BEGIN", what, err, errlen))
        return false;
    int now = storeschema_version(pg, err, errlen);
    if (now < 0)
        goto rollback;
    if (now >= v) /* done by another init meanwhile */
        return run(pg, "COMMIT", what, err, errlen);
    if (!run(pg, migrations[v - 1].sql, what, err, errlen))
        goto rollback;
    const char *params[2] = {version, migrations[v - 1].summary};
    PGresult *r = PQexecParams(pg, "INSERT INTO hm_schema (version, summary) VALUES ($1, $2)", 2,
                               NULL, params, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        pg_error(what, result_error(pg, r), err, errlen);
    PQclear(r);
    if (!ok || !run(pg, "COMMIT", what, err, errlen))
        goto rollback;
    *done = true;
    return true;
rollback:
    PQclear(PQexec(pg, "ROLLBACK"));
    return false;
}

static bool migrate_locked(PGconn *pg, int *from, int *to, char *err, size_t errlen);

bool storeschema_migrate(PGconn *pg, int *from, int *to, char *err, size_t errlen)
{
    *from = *to = -1;
    /* A session lock for the whole run: a second init waits here, then reads the version the
     * first one left (a transaction-scoped lock would come after that transaction's catalog
     * view was taken). */
    PGresult *r = PQexec(pg, "SELECT pg_try_advisory_lock(" SCHEMA_LOCK ")");
    bool got = PQresultStatus(r) == PGRES_TUPLES_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (!got) {
        fprintf(stderr, "hermes-mcp: another store init is under way; waiting for it\n");
        if (!run(pg, "SELECT pg_advisory_lock(" SCHEMA_LOCK ")", "taking the schema lock", err,
                 errlen))
            return false;
    }
    bool ok = migrate_locked(pg, from, to, err, errlen);
    PQclear(PQexec(pg, "SELECT pg_advisory_unlock(" SCHEMA_LOCK ")"));
    return ok;
}

static bool migrate_locked(PGconn *pg, int *from, int *to, char *err, size_t errlen)
{
    int v = storeschema_version(pg, err, errlen);
    *from = *to = v;
    if (v < 0)
        return false;
    if (v > STORESCHEMA_VERSION) {
        snprintf(err, errlen,
                 "the database's schema is at version %d, newer than this hermes-mcp's (%d): "
                 "upgrade hermes-mcp",
                 v, STORESCHEMA_VERSION);
        return false;
    }
    for (int next = v + 1; next <= STORESCHEMA_VERSION; next++) {
        bool done;
        if (!step(pg, next, &done, err, errlen))
            return false;
        *to = next;
    }
    return true;
}

const char *storeschema_summary(int v)
{
    return v >= 1 && v <= STORESCHEMA_VERSION ? migrations[v - 1].summary : NULL;
}
