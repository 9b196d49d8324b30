/* storeexp.c — `hermes-mcp store export --to DIR` (storeexp.h). Two passes: the first checks
 * what DIR already holds against the database and writes nothing, the second writes each
 * record file that is missing or not the database's text, a page of tasks at a time (keyset
 * order by id). A record's file text is the column's
 * text with the newline the file store ends each file with (a record copied from a file holds
 * that newline already). */
#include "storeexp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "exitcode.h"
#include "mem.h"
#include "storemig.h"
#include "taskjournal.h"
#include "taskpath.h"
#include "tasks.h"

/* A page's rows are held at once: each up to 64 + 64 + 200 KiB, so a page stays near 10 MiB. */
#define PAGE "32"
#define PROGRESS 500  /* tasks between progress lines */
#define SHOWN_MAX 200 /* bytes of a stray name shown */
#define STR_(x) #x
#define STR(x) STR_(x)

/* A record's file text (with the newline the file store ends it with) within the size the
 * server reads for that record (storemig_caps); measured in SQL, so that a row beyond it is
 * never fetched: its column comes back NULL and its column "over" names the first file. */
#define FITS(col, cap)                                                                             \
    "(octet_length(" col ") + CASE WHEN right(" col ", 1) = E'\\n' THEN 0 ELSE 1 END <= " cap ")"
#define CAPPED(col, cap) "CASE WHEN " FITS(col, cap) " THEN " col " END"
#define REQUEST_CAP STR(TASKS_REQUEST_MAX)
#define RESULT_CAP STR(TASKS_FILE_MAX)
#define SELECT_RECORDS                                                                             \
    "SELECT id, " CAPPED("request", REQUEST_CAP) ", " CAPPED("run", REQUEST_CAP) ", " CAPPED(      \
        "result", RESULT_CAP)
#define SELECT_OVER                                                                                \
    ", CASE WHEN NOT " FITS("request", REQUEST_CAP) " THEN 0 WHEN NOT " FITS(                      \
        "run", REQUEST_CAP) " THEN 1 WHEN NOT " FITS("result", RESULT_CAP) " THEN 2 END"
static const char select_sql[] =
    SELECT_RECORDS SELECT_OVER " FROM hm_task WHERE id > $1 ORDER BY id LIMIT " PAGE;

static void sql_error(PGconn *pg, PGresult *r)
{
    const char *m = r ? PQresultErrorMessage(r) : NULL;
    char line[600];
    snprintf(line, sizeof line, "%s", m && *m ? m : PQerrorMessage(pg));
    for (char *c = line; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    fprintf(stderr, "hermes-mcp store export: reading the tasks: %s\n", line);
}

/* The file text of a record (NULL for none): free(). */
static char *file_text(PGresult *r, int row, int col, size_t *len)
{
    if (PQgetisnull(r, row, col))
        return NULL;
    const char *v = PQgetvalue(r, row, col);
    size_t n = strlen(v);
    bool nl = n > 0 && v[n - 1] == '\n';
    char *t = xmalloc(n + 2);
    memcpy(t, v, n);
    if (!nl)
        t[n++] = '\n';
    t[n] = '\0';
    *len = n;
    return t;
}

/* 1 when path holds exactly text, 0 when it does not exist, -1 when it differs. */
static int same_file(const char *path, const char *text, size_t len)
{
    char *have;
    size_t n;
    struct timespec mt;
    const char *why;
    int rc = storemig_read(path, len, &have, &n, &mt, &why);
    if (rc < 0)
        return 0;
    if (rc > 0)
        return -1;
    int same = n == len && memcmp(have, text, len) == 0 ? 1 : -1;
    free(have);
    return same;
}

/* A task directory in DIR that the database does not hold: true when it has no record file
 * (the agent's files only). */
static bool no_records(const char *dir, const char *id, char *why, size_t whylen)
{
    for (int i = 0; i < 3; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/%s", dir, id, storemig_names[i]);
        if (lstat(path, &st) == 0) {
            snprintf(why, whylen, "%s/%s is a task the database does not hold", id,
                     storemig_names[i]);
            return false;
        }
    }
    return true;
}

/* The first pass: DIR holds task directories only, each one of the database's tasks or the
 * agent's files of a task only. */
static bool check_dir(PGconn *pg, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "hermes-mcp store export: cannot read %s: %s\n", dir, strerror(errno));
        return false;
    }
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !strcmp(e->d_name, TASKJOURNAL_DIR)) /* the task files' journal, replayed */
            continue;
        struct stat st;
        char why[400];
        if (!taskpath_id_ok(e->d_name, strlen(e->d_name)) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr,
                    "hermes-mcp store export: %s holds '%.*s', which is not a task directory: "
                    "export to an empty folder\n",
                    dir, SHOWN_MAX, e->d_name);
            ok = false;
            break;
        }
        const char *params[1] = {e->d_name};
        PGresult *r = PQexecParams(pg, "SELECT id FROM hm_task WHERE id = $1", 1, NULL, params,
                                   NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            sql_error(pg, r);
            ok = false;
        } else if (PQntuples(r) == 0 && !no_records(dir, e->d_name, why, sizeof why)) {
            fprintf(stderr,
                    "hermes-mcp store export: %s: %s: export to an empty folder, or one "
                    "holding this database's tasks\n",
                    dir, why);
            ok = false;
        }
        PQclear(r);
    }
    closedir(d);
    return ok;
}

/* Writes row i's missing record files; false with a message on a failure. A task id the files
 * cannot hold is skipped, and said: the export then ends with exit 1. */
static bool write_task(const char *dir, PGresult *r, int i, bool *wrote, size_t *skipped)
{
    const char *id = PQgetvalue(r, i, 0);
    if (!taskpath_id_ok(id, strlen(id))) {
        fprintf(stderr, "hermes-mcp store export: a task id the files cannot hold: skipped\n");
        (*skipped)++;
        return true;
    }
    if (!PQgetisnull(r, i, 4)) {
        int c = atoi(PQgetvalue(r, i, 4));
        c = c >= 0 && c < 3 ? c : 2;
        fprintf(stderr,
                "hermes-mcp store export: task %s skipped: its %s is bigger than the server "
                "reads (%zu bytes)\n",
                id, storemig_names[c], storemig_caps[c]);
        (*skipped)++;
        return true;
    }
    char path[4096], err[600];
    snprintf(path, sizeof path, "%s/%s", dir, id);
    if (mkdir(path, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "hermes-mcp store export: cannot create %s: %s\n", path, strerror(errno));
        return false;
    }
    /* Written into by path below: a link in its place (planted since the first pass looked)
     * would take the files out of DIR. */
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        fprintf(stderr,
                "hermes-mcp store export: %s is not a directory of ours (a link, or another "
                "user's): nothing written there\n",
                path);
        return false;
    }
    *wrote = false;
    for (int c = 0; c < 3; c++) {
        size_t len;
        char *text = file_text(r, i, c + 1, &len);
        if (text == NULL)
            continue;
        snprintf(path, sizeof path, "%s/%s/%s", dir, id, storemig_names[c]);
        bool ok = same_file(path, text, len) == 1 ||
                  (*wrote = true, atomicfile_write(path, text, len, 0600, err, sizeof err));
        free(text);
        if (!ok) {
            fprintf(stderr, "hermes-mcp store export: %s\n", err);
            return false;
        }
    }
    return true;
}

int storeexp_run(PGconn *pg, const char *dir)
{
    char err[600];
    if (!atomicfile_mkdirs(dir, 0700, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp store export: %s\n", err);
        return EXIT_FAIL;
    }
    if (!check_dir(pg, dir))
        return EXIT_FAIL;
    char *last = xstrdup("");
    size_t written = 0, kept = 0, skipped = 0, shown = 0;
    bool ok = true;
    for (;;) {
        const char *params[1] = {last};
        PGresult *r = PQexecParams(pg, select_sql, 1, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            sql_error(pg, r);
            PQclear(r);
            ok = false;
            break;
        }
        int n = PQntuples(r);
        for (int i = 0; i < n && ok; i++) {
            bool wrote = false;
            size_t was = skipped;
            ok = write_task(dir, r, i, &wrote, &skipped);
            if (wrote)
                written++;
            else if (skipped == was)
                kept++;
        }
        if (n > 0) {
            free(last);
            last = xstrdup(PQgetvalue(r, n - 1, 0));
        }
        PQclear(r);
        if (!ok || n == 0)
            break;
        if (written + kept + skipped >= shown + PROGRESS) {
            shown = written + kept + skipped;
            printf("store export: %zu tasks: %zu written, %zu already there\n", written + kept,
                   written, kept);
            fflush(stdout);
        }
    }
    free(last);
    if (!ok)
        return EXIT_FAIL;
    if (atomicfile_sync_dir(dir) < 0) {
        fprintf(stderr, "hermes-mcp store export: cannot sync %s: %s\n", dir, strerror(errno));
        return EXIT_FAIL;
    }
    printf("store export: done: %zu written, %zu already there, in %s\n", written, kept, dir);
    if (skipped) {
        fprintf(stderr,
                "hermes-mcp store export: %zu task(s) skipped (see above why): they stay in "
                "the database only\n",
                skipped);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}
