/* pgconn_drive.c — drives src/store/pgconn.c against a real PostgreSQL for
 * tests/integration/store/pgconn.test.mjs: commands on stdin, one JSON line per event on stdout.
 *   pgconn-drive URL [QUEUE_MAX [TIMEOUT_MS]]   (the table kv(k text primary key, v text) must
 * exist) Commands (one per line, words separated by spaces; each request gets the next id from 1):
 *   put K V | insert K V | get K | sleep SECONDS | notify CHANNEL PAYLOAD   one statement
 *   batch N PREFIX      N puts PREFIX0..N-1 as one transaction (one answer)
 *   batchfail K V       put K V, then insert K again (a duplicate): the whole transaction fails
 *   failfirst K         insert K twice in a row, then two puts: the first insert of a second
 *                       request fails (the key exists), the rest of it is aborted
 *   flood N             N gets of "x" at once (N answers)
 *   listen CHANNEL      LISTEN it (now and after each reconnect)
 *   quit                frees the connection (requests in flight answer "down") and exits
 * Events: {"state":"up"|"down","why":..}, {"id":N,"status":"ok"|"failed"|"down"|"busy"|
 * "timeout","rows":[[...]...],"results":["command"|"tuples"|"error"|"aborted"|"none"...],
 * "error":..}, {"notify":CHANNEL,"payload":..}. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loop.h"
#include "pgconn.h"

static const struct pgconn_stmt stmts[] = {
    {"put", "INSERT INTO kv VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"},
    {"insert", "INSERT INTO kv VALUES ($1, $2)"},
    {"get", "SELECT v FROM kv WHERE k = $1"},
    {"sleep", "SELECT pg_sleep($1::float8)"},
    {"notify", "SELECT pg_notify($1, $2)"},
};

static struct loop *loop;
static struct pgconn *conn;
static long next_id;
static char line[65536];
static size_t used;

static void emit(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(j);
}

static const char *status_name(enum pgconn_status st)
{
    static const char *const names[] = {"ok", "failed", "down", "busy", "timeout"};
    return names[st];
}

static void done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                 void *arg)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++)
        for (int r = 0;
             res[i] && PQresultStatus(res[i]) == PGRES_TUPLES_OK && r < PQntuples(res[i]); r++) {
            json_t *row = json_array();
            for (int f = 0; f < PQnfields(res[i]); f++)
                json_array_append_new(row, PQgetisnull(res[i], r, f)
                                               ? json_null()
                                               : json_string(PQgetvalue(res[i], r, f)));
            json_array_append_new(rows, row);
        }
    json_t *results = json_array();
    for (size_t i = 0; i < n; i++) {
        ExecStatusType s = res[i] ? PQresultStatus(res[i]) : PGRES_EMPTY_QUERY;
        json_array_append_new(results, json_string(!res[i]                       ? "none"
                                                   : s == PGRES_COMMAND_OK       ? "command"
                                                   : s == PGRES_TUPLES_OK        ? "tuples"
                                                   : s == PGRES_PIPELINE_ABORTED ? "aborted"
                                                                                 : "error"));
    }
    emit(json_pack("{sI ss so so ss?}", "id", (json_int_t)(long)arg, "status", status_name(st),
                   "rows", rows, "results", results, "error", error));
}

static void on_state(bool up, const char *why, void *arg)
{
    (void)arg;
    emit(json_pack("{ss ss?}", "state", up ? "up" : "down", "why", why));
}

static void on_notify(const char *channel, const char *payload, void *arg)
{
    (void)arg;
    emit(json_pack("{ss ss}", "notify", channel, "payload", payload));
}

static void send1(const char *stmt, int nparams, const char *const *params)
{
    pgconn_send_one(conn, stmt, nparams, params, done, (void *)++next_id);
}

static void command(char *cmd)
{
    char *w[4] = {0};
    int n = 0;
    for (char *save = NULL, *t = strtok_r(cmd, " ", &save); t && n < 4;
         t = strtok_r(NULL, " ", &save))
        w[n++] = t;
    if (n == 0)
        return;
    if (strcmp(w[0], "quit") == 0) {
        pgconn_free(conn);
        conn = NULL;
        loop_stop(loop);
    } else if (strcmp(w[0], "put") == 0 || strcmp(w[0], "insert") == 0 ||
               strcmp(w[0], "notify") == 0) {
        const char *p[2] = {w[1], w[2]};
        send1(w[0], 2, p);
    } else if (strcmp(w[0], "get") == 0 || strcmp(w[0], "sleep") == 0) {
        const char *p[1] = {w[1]};
        send1(w[0], 1, p);
    } else if (strcmp(w[0], "batch") == 0 && w[2]) {
        int k = atoi(w[1]);
        struct pgconn_query *q = calloc((size_t)k, sizeof *q);
        char(*keys)[64] = calloc((size_t)k, sizeof *keys);
        const char **params = calloc((size_t)k * 2, sizeof *params);
        for (int i = 0; i < k; i++) {
            snprintf(keys[i], sizeof keys[i], "%s%d", w[2], i);
            params[2 * i] = keys[i];
            params[2 * i + 1] = "batched";
            q[i] = (struct pgconn_query){"put", 2, params + 2 * i};
        }
        pgconn_send(conn, q, (size_t)k, done, (void *)++next_id);
        free(q);
        free(keys);
        free(params);
    } else if (strcmp(w[0], "batchfail") == 0) {
        const char *p[2] = {w[1], w[2]};
        struct pgconn_query q[2] = {{"put", 2, p}, {"insert", 2, p}};
        pgconn_send(conn, q, 2, done, (void *)++next_id);
    } else if (strcmp(w[0], "failfirst") == 0 && w[1]) {
        const char *p[2] = {w[1], "first"}, *p2[2] = {"after-a", "x"}, *p3[2] = {"after-b", "x"};
        struct pgconn_query one = {"insert", 2, p};
        struct pgconn_query q[3] = {{"insert", 2, p}, {"put", 2, p2}, {"put", 2, p3}};
        pgconn_send(conn, &one, 1, done, (void *)++next_id);
        pgconn_send(conn, q, 3, done, (void *)++next_id);
        const char *gp[1] = {w[1]};
        send1("get", 1, gp);
    } else if (strcmp(w[0], "flood") == 0) {
        const char *p[1] = {"x"};
        for (int i = atoi(w[1]); i > 0; i--)
            send1("get", 1, p);
    } else if (strcmp(w[0], "listen") == 0) {
        pgconn_listen(conn, w[1]);
    }
}

static void on_stdin(struct loop *l, int fd, uint32_t events, void *arg)
{
    (void)l;
    (void)events;
    (void)arg;
    ssize_t r = read(fd, line + used, sizeof line - 1 - used);
    if (r <= 0) {
        command((char[]){"quit"});
        return;
    }
    used += (size_t)r;
    char *nl;
    while (conn && (nl = memchr(line, '\n', used)) != NULL) {
        *nl = '\0';
        size_t len = (size_t)(nl - line) + 1;
        command(line);
        memmove(line, line + len, used - len);
        used -= len;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pgconn-drive URL [QUEUE_MAX [TIMEOUT_MS]]\n");
        return 2;
    }
    loop = loop_new();
    struct pgconn_opts o = {.loop = loop,
                            .conninfo = argv[1],
                            .stmts = stmts,
                            .nstmts = sizeof stmts / sizeof *stmts,
                            .queue_max = argc > 2 ? (unsigned)atoi(argv[2]) : 0,
                            .timeout_ms = argc > 3 ? (unsigned)atoi(argv[3]) : 0,
                            .on_notify = on_notify,
                            .on_state = on_state};
    conn = pgconn_new(&o);
    if (conn == NULL)
        return 1;
    struct loop_watch *w = loop_watch_add(loop, 0, EPOLLIN, on_stdin, NULL);
    loop_run(loop);
    loop_watch_del(w);
    pgconn_free(conn);
    loop_free(loop);
    return 0;
}
