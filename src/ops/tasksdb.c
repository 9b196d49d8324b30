/* tasksdb.c — the task commands on the store's database (tasksdb.h). Fixed SQL; the limits
 * travel as bound parameters. */
#include "tasksdb.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "exitcode.h"
#include "mcp.h"
#include "storeschema.h"
#include "taskscli.h"

/* Oldest first, as the file store lists them: a finished task by when it finished, another by
 * when it was created. */
static const char list_sql[] =
    "SELECT id,"
    " CASE WHEN result IS NOT NULL THEN coalesce(result::json->>'status', 'finished')"
    "  WHEN run IS NOT NULL THEN 'running' ELSE 'queued' END,"
    " extract(epoch FROM coalesce(finished_at, created_at))::bigint,"
    " octet_length(coalesce(request, '')) + octet_length(coalesce(run, ''))"
    "  + octet_length(coalesce(result, '')),"
    " request::json->>'owner'"
    " FROM hm_task ORDER BY coalesce(finished_at, created_at), id";

/* What retention removes: finished more than $1 days ago ($1 > 0), or beyond the newest $2
 * finished ones ($2 > 0). RETURNING: the ids, oldest first once sorted. */
#define PRUNE_WHERE                                                                                \
    " result IS NOT NULL AND ((($1::int > 0) AND finished_at < now() - $1::int * interval '1 "     \
    "day')"                                                                                        \
    " OR (($2::int > 0) AND id IN (SELECT id FROM hm_task WHERE result IS NOT NULL"                \
    " ORDER BY finished_at DESC, id DESC OFFSET $2::int)))"
static const char prune_sql[] = "DELETE FROM hm_task WHERE" PRUNE_WHERE " RETURNING id";
static const char dry_sql[] =
    "SELECT id FROM hm_task WHERE" PRUNE_WHERE " ORDER BY finished_at, id";

/* A connection to a database at this binary's schema, or NULL (said on stderr). */
static PGconn *open_db(const struct config *c)
{
    char err[600];
    PGconn *pg = storeschema_connect(c->store_url, c->store_password, err, sizeof err);
    int v = pg ? storeschema_version(pg, err, sizeof err) : -1;
    if (v >= 0 && v != STORESCHEMA_VERSION)
        snprintf(err, sizeof err,
                 "the database's schema is at version %d, this hermes-mcp's is %d: run "
                 "hermes-mcp store init (or upgrade hermes-mcp)",
                 v, STORESCHEMA_VERSION);
    if (v == STORESCHEMA_VERSION)
        return pg;
    fprintf(stderr, "hermes-mcp tasks: %s\n", err);
    if (pg)
        PQfinish(pg);
    return NULL;
}

static PGresult *query(PGconn *pg, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *m = PQresultErrorMessage(r);
        fprintf(stderr, "hermes-mcp tasks: the database: %s", m && *m ? m : "no answer\n");
        PQclear(r);
        return NULL;
    }
    return r;
}

int tasksdb_list(const struct config *c, bool as_json)
{
    PGconn *pg = open_db(c);
    PGresult *r = pg ? query(pg, list_sql, 0, NULL) : NULL;
    if (r == NULL) {
        if (pg)
            PQfinish(pg);
        return EXIT_FAIL;
    }
    time_t now = time(NULL);
    json_t *arr = as_json ? json_array() : NULL;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *id = PQgetvalue(r, i, 0), *state = PQgetvalue(r, i, 1);
        long long at = atoll(PQgetvalue(r, i, 2)), size = atoll(PQgetvalue(r, i, 3));
        char owner[80], age[40];
        mcp_caller_label(PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4), owner, sizeof owner);
        if (strlen(state) >= 32 || strpbrk(state, " \t\r\n")) /* as the file store shows it */
            state = "finished";
        if (arr) {
            json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I, s:s}", "id", id,
                                                 "state", state, "finished", (json_int_t)at,
                                                 "age_s", (json_int_t)(now - at), "size",
                                                 (json_int_t)size, "owner", owner));
            continue;
        }
        taskscli_age_text((long long)now - at, age, sizeof age);
        printf("%s %s %s %lld %s\n", id, state, age, size, owner);
    }
    if (arr) {
        char *text = json_dumps(arr, JSON_COMPACT);
        puts(text);
        free(text);
        json_decref(arr);
    }
    PQclear(r);
    PQfinish(pg);
    return 0;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tasksdb_prune(const struct config *c, bool dry_run)
{
    char days[16], max[16];
    snprintf(days, sizeof days, "%u", c->tasks_retention_days);
    snprintf(max, sizeof max, "%u", c->tasks_max);
    const char *params[2] = {days, max};
    PGconn *pg = open_db(c);
    PGresult *r = pg ? query(pg, dry_run ? dry_sql : prune_sql, 2, params) : NULL;
    if (r == NULL) {
        if (pg)
            PQfinish(pg);
        return EXIT_FAIL;
    }
    int n = PQntuples(r);
    if (dry_run) {
        for (int i = 0; i < n; i++)
            printf("would remove %s\n", PQgetvalue(r, i, 0));
    } else { /* one statement removed them all: the ids in a stable order */
        char **ids = calloc((size_t)n + 1, sizeof *ids);
        for (int i = 0; ids && i < n; i++)
            ids[i] = PQgetvalue(r, i, 0);
        if (ids)
            qsort(ids, (size_t)n, sizeof *ids, by_text);
        for (int i = 0; ids && i < n; i++)
            printf("removed %s\n", ids[i]);
        free(ids);
    }
    printf("%s %d task%s from the store (TASKS_RETENTION_DAYS=%u, TASKS_MAX=%u)\n",
           dry_run ? "would prune" : "pruned", n, n == 1 ? "" : "s", c->tasks_retention_days,
           c->tasks_max);
    PQclear(r);
    PQfinish(pg);
    return 0;
}
