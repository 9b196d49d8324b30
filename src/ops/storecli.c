/* storecli.c — `hermes-mcp store init` (creates or upgrades the PostgreSQL store's schema),
 * `hermes-mcp store status` (the schema's version and the replicas using it), and the moves
 * between the two stores: `store migrate --from-files` (storemig.c) and `store export`
 * (storeexp.c). All read STORE_URL and STORE_PASSWORD from the env file serve reads; the
 * password never reaches argv, the output or an error. */
#include "storecli.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "authserver.h"
#include "config.h"
#include "exitcode.h"
#include "mem.h"
#include "passphrase.h"
#include "storeexp.h"
#include "storemig.h"
#include "storemigoauth.h"
#include "storeschema.h"
#include "taskjournal.h"

#define REPLICAS_SHOWN 100

const char storecli_usage[] =
    "usage: hermes-mcp store init [--env-file FILE]\n"
    "       hermes-mcp store status [--env-file FILE] [--json]\n"
    "       hermes-mcp store migrate --from-files [--env-file FILE]\n"
    "       hermes-mcp store export --to DIR [--env-file FILE]\n"
    "\n"
    "The PostgreSQL database of STORE_URL (with STORE_PASSWORD, or libpq's password file).\n"
    "  init      creates the schema, or upgrades it to this hermes-mcp's version: forward only,\n"
    "            one transaction a step; safe to run again, and from two places at once\n"
    "  status    the schema's version against this hermes-mcp's, and the replicas registered\n"
    "            (id, host, version, seconds since their last heartbeat); --json: one object\n"
    "  migrate   --from-files: copies the task records of TASKS_DIR (request.json, run.json,\n"
    "            result.json of each task, their text unchanged) into the database, 500 tasks a\n"
    "            transaction, with a progress line each; a task already there is left alone, so\n"
    "            it is safe to run again and an interrupted copy is finished by running it\n"
    "            again. A task with a file unreadable, too big, not JSON, not a regular file\n"
    "            (a link, a FIFO) or not owned by TASKS_DIR's owner (migrate may run as root)\n"
    "            is refused (said on stderr, exit 1) and the rest copied. The agent's files stay\n"
    "            in TASKS_DIR, where\n"
    "            a server with STORE_URL serves them. Stop the servers using the files first;\n"
    "            a run without a result is followed by a replica once one starts. The OAuth\n"
    "            consent passphrase is copied too, unless the store has one, and the OAuth\n"
    "            clients and unexpired tokens (oauth-clients.json, oauth-tokens.json), those the\n"
    "            store lacks, in one transaction; either file unusable: none of them copied\n"
    "  export    --to DIR: writes every task of the database back as files in DIR, the\n"
    "            layout of TASKS_DIR, each atomically; DIR may be new, empty, or hold this\n"
    "            database's tasks (a record file that is not the database's text is replaced,\n"
    "            the agent's files stay: DIR may be TASKS_DIR itself, and a second export\n"
    "            writes nothing); any other entry, or another task's records, in it is refused\n"
    "            and nothing written; a task with a record bigger than the server reads is\n"
    "            skipped (said on stderr, exit 1)\n"
    "\n"
    "  --env-file FILE   the env file serve would read (default ./.env)\n"
    "\n"
    "A server started on a database whose schema is not its own refuses to start and says so;\n"
    "migrate and export refuse it too (run store init).\n"
    "Exit codes: 0 ok, 1 the database could not be reached, its schema is not this\n"
    "hermes-mcp's (status, migrate, export), a task was refused or could not be written,\n"
    "2 usage or configuration error.\n";

enum cmd { CMD_INIT, CMD_STATUS, CMD_MIGRATE, CMD_EXPORT };

struct opts {
    enum cmd cmd;
    bool json, from_files;
    const char *env_file, *to;
};

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "hermes-mcp store: %s%s%s\n%s", what, arg ? arg : "", arg ? "'" : "",
            storecli_usage);
    return EXIT_USAGE;
}

/* Returns -1 when parsed, else the exit code (help printed, or a usage error). */
static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.env_file = ".env"};
    if (argc < 1)
        return usage_error("say init, status, migrate or export", NULL);
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        fputs(storecli_usage, stdout);
        return 0;
    }
    static const char *const words[] = {"init", "status", "migrate", "export"};
    size_t w = 0;
    while (w < 4 && strcmp(argv[0], words[w]) != 0)
        w++;
    if (w == 4)
        return usage_error("unknown command (init, status, migrate or export): '", argv[0]);
    o->cmd = (enum cmd)w;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(storecli_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--env-file") && i + 1 < argc)
            o->env_file = argv[++i];
        else if (!strncmp(a, "--env-file=", 11) && a[11])
            o->env_file = a + 11;
        else if (o->cmd == CMD_STATUS && !strcmp(a, "--json"))
            o->json = true;
        else if (o->cmd == CMD_MIGRATE && !strcmp(a, "--from-files"))
            o->from_files = true;
        else if (o->cmd == CMD_EXPORT && !strcmp(a, "--to") && i + 1 < argc && argv[i + 1][0])
            o->to = argv[++i];
        else if (o->cmd == CMD_EXPORT && !strncmp(a, "--to=", 5) && a[5])
            o->to = a + 5;
        else
            return usage_error("unknown argument '", a);
    }
    if (o->cmd == CMD_MIGRATE && !o->from_files)
        return usage_error("say where from: store migrate --from-files", NULL);
    if (o->cmd == CMD_EXPORT && o->to == NULL)
        return usage_error("say where to: store export --to DIR", NULL);
    return -1;
}

static int init(PGconn *pg, const char *env_file)
{
    char err[600];
    int from, to;
    if (!storeschema_migrate(pg, &from, &to, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp store init: %s\n", err);
        return EXIT_FAIL;
    }
    if (from == to) {
        printf("store: the schema is at version %d already (%s)\n", to, env_file);
        return EXIT_OK;
    }
    for (int v = from + 1; v <= to; v++)
        printf("store: schema version %d: %s\n", v, storeschema_summary(v));
    printf("store: the schema is at version %d (was %d)\n", to, from);
    return EXIT_OK;
}

/* The replicas, newest heartbeat first: an array of {id, host, version, seen_s, started}. */
static json_t *replicas(PGconn *pg, char *err, size_t errlen)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", REPLICAS_SHOWN);
    const char *params[1] = {limit};
    PGresult *r =
        PQexecParams(pg,
                     "SELECT id, host, version, floor(extract(epoch FROM now() - seen_at))::bigint,"
                     " to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                     " FROM hm_replica ORDER BY seen_at DESC, id LIMIT $1",
                     1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *m = PQresultErrorMessage(r);
        snprintf(err, errlen, "reading the replicas: %s", m && *m ? m : PQerrorMessage(pg));
        for (char *c = err; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        PQclear(r);
        return NULL;
    }
    json_t *list = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(list, json_pack("{ss ss ss sI ss}", "id", PQgetvalue(r, i, 0), "host",
                                              PQgetvalue(r, i, 1), "version", PQgetvalue(r, i, 2),
                                              "seen_s", (json_int_t)atoll(PQgetvalue(r, i, 3)),
                                              "started", PQgetvalue(r, i, 4)));
    PQclear(r);
    return list;
}

static int status(PGconn *pg, const struct opts *o)
{
    char err[600];
    int v = storeschema_version(pg, err, sizeof err);
    if (v < 0) {
        fprintf(stderr, "hermes-mcp store status: %s\n", err);
        return EXIT_FAIL;
    }
    json_t *list = v > 0 ? replicas(pg, err, sizeof err) : json_array();
    if (list == NULL) {
        fprintf(stderr, "hermes-mcp store status: %s\n", err);
        return EXIT_FAIL;
    }
    bool current = v == STORESCHEMA_VERSION;
    if (o->json) {
        json_t *out = json_pack("{si si sb so}", "schema", v, "binary_schema", STORESCHEMA_VERSION,
                                "current", current, "replicas", list);
        char *text = json_dumps(out, JSON_INDENT(2));
        printf("%s\n", text);
        free(text);
        json_decref(out);
    } else {
        if (v == 0)
            printf("store: not initialised: run hermes-mcp store init --env-file %s\n",
                   o->env_file);
        else if (v < STORESCHEMA_VERSION)
            printf("store: schema version %d, older than this hermes-mcp's (%d): run hermes-mcp "
                   "store init --env-file %s\n",
                   v, STORESCHEMA_VERSION, o->env_file);
        else if (v > STORESCHEMA_VERSION)
            printf("store: schema version %d, newer than this hermes-mcp's (%d): upgrade "
                   "hermes-mcp\n",
                   v, STORESCHEMA_VERSION);
        else
            printf("store: schema version %d (this hermes-mcp's)\n", v);
        printf("store: %zu replica%s\n", json_array_size(list),
               json_array_size(list) == 1 ? "" : "s");
        size_t i;
        json_t *x;
        json_array_foreach(list, i, x)
        {
            printf("  %s  %s  %s  seen %llds ago  since %s\n",
                   json_string_value(json_object_get(x, "id")),
                   json_string_value(json_object_get(x, "host")),
                   json_string_value(json_object_get(x, "version")),
                   (long long)json_integer_value(json_object_get(x, "seen_s")),
                   json_string_value(json_object_get(x, "started")));
        }
        json_decref(list);
    }
    return current ? EXIT_OK : EXIT_FAIL;
}

/* The owner's consent passphrase (its scrypt line, never shown) from beside the env file, where
 * `oauth passwd` writes it and serve reads it, into hm_secret, unless the store has one already:
 * the owner need not set it again. */
static int migrate_passphrase(PGconn *pg, const char *path)
{
    char line[PASSPHRASE_LINE_MAX], err[600];
    struct stat st;
    if (lstat(path, &st) != 0) {
        printf("store migrate: no OAuth consent passphrase in %s\n", path);
        return EXIT_OK;
    }
    if (!passphrase_load(path, line, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp store migrate: the consent passphrase not copied: %s\n", err);
        return EXIT_FAIL;
    }
    const char *params[1] = {line};
    PGresult *r = PQexecParams(pg,
                               "INSERT INTO hm_secret (name, value) VALUES ('passphrase', $1)"
                               " ON CONFLICT (name) DO NOTHING RETURNING name",
                               1, NULL, params, NULL, NULL, 0);
    explicit_bzero(line, sizeof line);
    int rc = EXIT_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "hermes-mcp store migrate: the consent passphrase not copied: %.*s\n",
                (int)strcspn(PQerrorMessage(pg), "\n"), PQerrorMessage(pg));
        rc = EXIT_FAIL;
    } else if (PQntuples(r) == 1) {
        printf("store migrate: the OAuth consent passphrase copied from %s\n", path);
    } else {
        printf("store migrate: the store has an OAuth consent passphrase already: kept\n");
    }
    PQclear(r);
    return rc;
}

/* migrate and export work on this hermes-mcp's tables only. */
static bool schema_current(PGconn *pg, const struct opts *o)
{
    char err[600];
    int v = storeschema_version(pg, err, sizeof err);
    const char *word = o->cmd == CMD_MIGRATE ? "migrate" : "export";
    if (v < 0)
        fprintf(stderr, "hermes-mcp store %s: %s\n", word, err);
    else if (v > STORESCHEMA_VERSION)
        fprintf(stderr,
                "hermes-mcp store %s: the schema is at version %d, newer than this "
                "hermes-mcp's (%d): upgrade hermes-mcp\n",
                word, v, STORESCHEMA_VERSION);
    else if (v < STORESCHEMA_VERSION)
        fprintf(stderr,
                "hermes-mcp store %s: the schema is at version %d, not this hermes-mcp's (%d): "
                "run hermes-mcp store init --env-file %s\n",
                word, v, STORESCHEMA_VERSION, o->env_file);
    return v == STORESCHEMA_VERSION;
}

int storecli_main(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct config cfg;
    char err[600];
    if (!config_load(&cfg, o.env_file, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp store: %s\n", err);
        return EXIT_USAGE;
    }
    if (cfg.store_url == NULL) {
        fprintf(stderr,
                "hermes-mcp store: no STORE_URL in %s: the server keeps its state in files, "
                "which need no init\n",
                o.env_file);
        config_cleanup(&cfg);
        return EXIT_USAGE;
    }
    PGconn *pg = storeschema_connect(cfg.store_url, cfg.store_password, err, sizeof err);
    char *tasks_dir = xstrdup(cfg.tasks_dir), *pass_file = passphrase_path_beside(o.env_file);
    /* The OAuth files lie beside the env file (config.c), whether or not OAuth is on now. */
    char *clients_file = authserver_clients_path_beside(o.env_file);
    char *tokens_file =
        xasprintf("%.*soauth-tokens.json",
                  (int)(strlen(clients_file) - strlen("oauth-clients.json")), clients_file);
    config_cleanup(&cfg);
    if (pg == NULL) {
        fprintf(stderr, "hermes-mcp store: %s\n", err);
        free(tasks_dir);
        free(pass_file);
        free(clients_file);
        free(tokens_file);
        return EXIT_FAIL;
    }
    if (o.cmd == CMD_INIT)
        rc = init(pg, o.env_file);
    else if (o.cmd == CMD_STATUS)
        rc = status(pg, &o);
    else if (!schema_current(pg, &o))
        rc = EXIT_FAIL;
    else if (o.cmd == CMD_EXPORT && taskjournal_recover(o.to, err, sizeof err) < 0) {
        fprintf(stderr, "hermes-mcp store: %s\n", err); /* DIR may be a TASKS_DIR */
        rc = EXIT_FAIL;
    } else if (o.cmd == CMD_EXPORT)
        rc = storeexp_run(pg, o.to);
    else if (taskjournal_recover(tasks_dir, err, sizeof err) < 0) { /* a crash's last files */
        fprintf(stderr, "hermes-mcp store: %s\n", err);
        rc = EXIT_FAIL;
    } else {
        rc = storemig_run(pg, tasks_dir);
        int prc = migrate_passphrase(pg, pass_file);
        rc = rc != EXIT_OK ? rc : prc;
        prc = storemigoauth_run(pg, clients_file, tokens_file);
        rc = rc != EXIT_OK ? rc : prc;
    }
    free(clients_file);
    free(tokens_file);
    free(tasks_dir);
    free(pass_file);
    PQfinish(pg);
    return rc;
}
