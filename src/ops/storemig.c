/* storemig.c — `hermes-mcp store migrate --from-files` (storemig.h). The task ids are read
 * first and sorted, so that a second run walks the same order; values are always bound
 * parameters. */
#include "storemig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exitcode.h"
#include "mem.h"
#include "taskjournal.h"
#include "taskpath.h"
#include "tasks.h"

#define BATCH 500 /* tasks in one transaction */

const char *const storemig_names[3] = {"request.json", "run.json", "result.json"};
const size_t storemig_caps[3] = {TASKS_REQUEST_MAX, TASKS_REQUEST_MAX, TASKS_FILE_MAX};

static const char insert_sql[] =
    "INSERT INTO hm_task (id, request, run, result, run_id, created_at, finished_at)"
    " VALUES ($1, $2, $3, $4, $5, coalesce(to_timestamp($6::double precision), now()),"
    " to_timestamp($7::double precision))"
    /* Already there: left alone, but for what it lacked and the files now have (a run that
     * ended since the last migrate): a run's result is never lost by running it again. */
    " ON CONFLICT (id) DO UPDATE SET"
    " run = coalesce(hm_task.run, EXCLUDED.run), run_id = coalesce(hm_task.run_id, "
    "EXCLUDED.run_id),"
    " result = EXCLUDED.result, finished_at = EXCLUDED.finished_at, follower = NULL,"
    " version = hm_task.version + 1"
    " WHERE hm_task.result IS NULL AND EXCLUDED.result IS NOT NULL RETURNING id";

/* Opened once, never through a link, without waiting (a FIFO's open would wait for a writer),
 * then judged and read through that same descriptor: nothing can be swapped in between. owner:
 * the user the file must belong to, (uid_t)-1 for any. */
static int read_at(int dfd, const char *name, uid_t owner, size_t max, char **text, size_t *len,
                   struct timespec *mtime, const char **why)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT)
            return -1;
        *why = errno == ELOOP ? "a symbolic link" : "unreadable";
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        *why = "not a regular file";
        return 1;
    }
    if (owner != (uid_t)-1 && st.st_uid != owner) {
        close(fd);
        *why = "another user's file";
        return 1;
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        *why = "too big";
        return 1;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0; /* one byte more tells that it grew */
    char *p = xmalloc(cap + 1);
    while (n < cap) {
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(p);
            close(fd);
            *why = "unreadable";
            return 1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max) {
        free(p);
        *why = "too big";
        return 1;
    }
    p[n] = '\0';
    *text = p;
    *len = n;
    *mtime = st.st_mtim;
    return 0;
}

int storemig_read(const char *path, size_t max, char **text, size_t *len, struct timespec *mtime,
                  const char **why)
{
    return read_at(AT_FDCWD, path, (uid_t)-1, max, text, len, mtime, why);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the task directory dfd that are task directories (a task id, a directory, not a
 * link), sorted: listed through that same descriptor, the directory the records are read from. */
static char **task_ids(int dfd, size_t *n, size_t *others)
{
    int lfd = dup(dfd);
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    if (d == NULL) {
        if (lfd >= 0)
            close(lfd);
        return NULL;
    }
    size_t cap = 256;
    char **ids = xmalloc(cap * sizeof *ids);
    *n = 0;
    *others = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !strcmp(e->d_name, TASKJOURNAL_DIR)) /* the task files' journal, replayed */
            continue;
        struct stat st;
        if (!taskpath_id_ok(e->d_name, strlen(e->d_name)) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
            (*others)++;
            continue;
        }
        if (*n == cap) {
            cap *= 2;
            ids = xrealloc(ids, cap * sizeof *ids);
        }
        ids[(*n)++] = xstrdup(e->d_name);
    }
    closedir(d);
    qsort(ids, *n, sizeof *ids, cmp_str);
    return ids;
}

struct task {
    char *doc[3];
    char *run_id; /* run.json's "run_id", the run index */
    char created[40], finished[40];
};

static void task_clear(struct task *t)
{
    for (int i = 0; i < 3; i++)
        free(t->doc[i]);
    free(t->run_id);
    *t = (struct task){0};
}

/* Reads task id's records (dfd: the task directory's descriptor): 0 when read, -1 when it has
 * none (the agent's files only), 1 with the file and the reason in why. Each file is opened
 * relative to the task's own directory, itself opened without following a link, and it and
 * that directory must be owner's (the task directory's owner: the server's user, whoever runs
 * the migrate): what was checked is what is read. */
static int task_read(int dfd, uid_t owner, const char *id, struct task *t, char *why, size_t whylen)
{
    *t = (struct task){0};
    double oldest = 0;
    int found = 0;
    int tfd = openat(dfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tfd < 0) {
        snprintf(why, whylen, "its directory: %s",
                 errno == ELOOP || errno == ENOTDIR ? "not a directory (a link?)"
                                                    : strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(tfd, &st) < 0 || st.st_uid != owner) {
        snprintf(why, whylen, "its directory: another user's");
        close(tfd);
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        size_t len;
        struct timespec mt;
        const char *r = NULL;
        int rc =
            read_at(tfd, storemig_names[i], owner, storemig_caps[i], &t->doc[i], &len, &mt, &r);
        if (rc < 0)
            continue;
        json_t *j = rc == 0 ? tasks_parse(t->doc[i], len) : NULL;
        if (rc == 0 && !json_is_object(j))
            r = "not JSON (an object, each key once)";
        else if (rc == 0 && memchr(t->doc[i], '\0', len) != NULL)
            r = "not text";
        if (r != NULL) {
            json_decref(j);
            snprintf(why, whylen, "%s: %s", storemig_names[i], r);
            task_clear(t);
            close(tfd);
            return 1;
        }
        if (i == 1) {
            const char *run = json_string_value(json_object_get(j, "run_id"));
            if (run)
                t->run_id = xstrdup(run);
        }
        json_decref(j);
        double when = (double)mt.tv_sec + (double)mt.tv_nsec / 1e9;
        if (found++ == 0 || when < oldest)
            oldest = when;
        if (i == 2)
            snprintf(t->finished, sizeof t->finished, "%.6f", when);
    }
    close(tfd);
    if (found == 0)
        return -1;
    snprintf(t->created, sizeof t->created, "%.6f", oldest);
    return 0;
}

static void sql_error(const char *what, PGconn *pg, PGresult *r)
{
    const char *m = r ? PQresultErrorMessage(r) : NULL;
    char line[600];
    snprintf(line, sizeof line, "%s", m && *m ? m : PQerrorMessage(pg));
    for (char *c = line; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    fprintf(stderr, "hermes-mcp store migrate: %s: %s\n", what, line);
}

static bool exec_ok(PGconn *pg, const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        sql_error(sql, pg, r);
    PQclear(r);
    return ok;
}

struct counts {
    size_t copied, there, refused, empty;
};

/* One transaction: tasks ids[from..to). */
static bool batch(PGconn *pg, int dfd, uid_t owner, char **ids, size_t from, size_t to,
                  struct counts *c)
{
    struct counts now = *c;
    if (!exec_ok(pg, "BEGIN"))
        return false;
    for (size_t i = from; i < to; i++) {
        struct task t;
        char why[200];
        int rc = task_read(dfd, owner, ids[i], &t, why, sizeof why);
        if (rc < 0) {
            now.empty++;
            continue;
        }
        if (rc > 0) {
            fprintf(stderr, "hermes-mcp store migrate: task %s refused: %s\n", ids[i], why);
            now.refused++;
            continue;
        }
        const char *params[7] = {ids[i],
                                 t.doc[0],
                                 t.doc[1],
                                 t.doc[2],
                                 t.run_id,
                                 t.created,
                                 t.finished[0] ? t.finished : NULL};
        PGresult *r = PQexecParams(pg, insert_sql, 7, NULL, params, NULL, NULL, 0);
        task_clear(&t);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            sql_error(ids[i], pg, r);
            PQclear(r);
            PGresult *rb = PQexec(pg, "ROLLBACK");
            PQclear(rb);
            return false;
        }
        if (PQntuples(r) == 1)
            now.copied++;
        else
            now.there++;
        PQclear(r);
    }
    if (!exec_ok(pg, "COMMIT"))
        return false;
    *c = now; /* counted once durable */
    return true;
}

int storemig_run(PGconn *pg, const char *dir)
{
    size_t n, others;
    struct stat dst;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char **ids = dfd < 0 || fstat(dfd, &dst) < 0 ? NULL : task_ids(dfd, &n, &others);
    if (ids == NULL) {
        fprintf(stderr, "hermes-mcp store migrate: cannot read the task directory %s: %s\n", dir,
                strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return EXIT_FAIL;
    }
    uid_t owner = dst.st_uid; /* the server's user, whoever runs the migrate (root, sudo) */
    printf("store migrate: %zu task director%s in %s\n", n, n == 1 ? "y" : "ies", dir);
    fflush(stdout);
    struct counts c = {0};
    bool ok = true;
    for (size_t i = 0; i < n && ok; i += BATCH) {
        size_t to = i + BATCH < n ? i + BATCH : n;
        ok = batch(pg, dfd, owner, ids, i, to, &c);
        if (ok) {
            printf("store migrate: %zu/%zu: %zu copied, %zu already there, %zu refused\n", to, n,
                   c.copied, c.there, c.refused);
            fflush(stdout);
        }
    }
    close(dfd);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    if (!ok) {
        fprintf(stderr, "hermes-mcp store migrate: stopped; what was copied stays: run it again "
                        "to finish\n");
        return EXIT_FAIL;
    }
    printf("store migrate: done: %zu copied, %zu already there, %zu refused", c.copied, c.there,
           c.refused);
    if (c.empty)
        printf(", %zu with the agent's files only", c.empty);
    if (others)
        printf(", %zu other entr%s left alone", others, others == 1 ? "y" : "ies");
    printf("\n");
    if (c.refused)
        printf("store migrate: the refused tasks stay in %s only (see above why)\n", dir);
    return c.refused ? EXIT_FAIL : EXIT_OK;
}
