/* taskfilespg.c — a task's files in PostgreSQL (taskfilespg.h). Every value travels as a bound
 * parameter of a prepared statement; the SQL below is fixed text. */
#include "taskfilespg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "list.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "pgconn.h"
#include "taskpath.h"
#include "workq.h"

#define DEPTH_MAX 8       /* directory levels walked, as tasks_files lists */
#define HELD_MAX 16       /* copies waiting for the database; beyond, the oldest is dropped */
#define FREE_WAIT_MS 3000 /* at a stop: the copies walked reach the database */
#define RETRY_MIN_MS 200

/* Why a listed file cannot be read from the store (NULL: it can); the messages tasks_files
 * gives for the same files. */
#define WHY_BIG "big"
#define WHY_BINARY "binary"
#define WHY_SPECIAL "special"
#define WHY_CAP "cap"
#define MARK_TRUNCATED "truncated" /* the row of path '': the walk stopped at the listing cap */

static const struct pgconn_stmt stmts[] = {
    {"clear", "DELETE FROM hm_task_file WHERE task_id = $1"},
    {"put", "INSERT INTO hm_task_file (task_id, path, is_dir, size, mtime, content, refusal)"
            " VALUES ($1, $2, $3::boolean, $4::bigint, $5::bigint, $6, $7)"},
    {"one", "SELECT is_dir, size, mtime, content, refusal FROM hm_task_file"
            " WHERE task_id = $1 AND path = $2"},
    /* The entries under a directory (all of them for ''), one more than a listing shows so
     * that a longer one says truncated. */
    {"under", "SELECT path, is_dir, size, mtime FROM hm_task_file WHERE task_id = $1"
              " AND path <> '' AND ($2 = '' OR starts_with(path, $2 || '/'))"
              " ORDER BY path LIMIT 501"},
};

struct entry {
    char *path;
    bool dir;
    long long size, mtime;
    char *data; /* the text, or NULL (refusal says why, or a directory) */
    size_t len;
    const char *refusal;
};

/* One copy of a task's directory: walked on the worker, written from the loop. */
struct capture {
    struct workq_job q;
    struct list link; /* p->held while it waits for (or retries) the database */
    struct taskfilespg *p;
    char id[129];
    struct entry *v;
    size_t n, cap;
    size_t text_bytes;
    bool truncated;
    bool absent; /* no directory here: nothing to copy */
    bool sent;
};

struct taskfilespg_read {
    struct taskfilespg *p;
    taskfilespg_read_cb *cb;
    void *arg;
    char id[129];
    char *rel;
    bool cancelled;
};

struct taskfilespg {
    struct loop *loop;
    struct pgconn *conn;
    struct workq *walker;
    char *tasks_dir;
    struct list held; /* captures walked, oldest first */
    size_t nheld;
    struct loop_timer *retry;
    bool closing;
};

/* ---------- the walk (worker thread) ---------- */

static bool record_name(const char *rel, const char *name)
{
    return *rel == '\0' && (strcmp(name, "request.json") == 0 || strcmp(name, "run.json") == 0 ||
                            strcmp(name, "result.json") == 0);
}

static struct entry *entry_add(struct capture *k, const char *path)
{
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 16;
        k->v = xrealloc(k->v, k->cap * sizeof *k->v);
    }
    struct entry *e = &k->v[k->n++];
    *e = (struct entry){.path = xstrdup(path)};
    return e;
}

/* Reads the regular file name in dirfd, never through a link, into e (or says why not). */
static void read_file(struct capture *k, int dirfd, const char *name, struct entry *e)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        e->refusal = WHY_SPECIAL;
    } else if (st.st_size > TASKS_FILE_MAX) {
        e->refusal = WHY_BIG;
    } else if (k->text_bytes + (size_t)st.st_size > TASKFILESPG_TASK_MAX) {
        e->refusal = WHY_CAP;
    } else {
        e->data = xmalloc((size_t)st.st_size + 1);
        ssize_t got = 0, r;
        while (got < st.st_size && (r = read(fd, e->data + got, (size_t)(st.st_size - got))) > 0)
            got += r;
        e->len = (size_t)got;
        e->data[e->len] = '\0';
        e->size = got;
        k->text_bytes += e->len;
    }
    if (fd >= 0)
        close(fd);
}

static void walk(struct capture *k, int dirfd, const char *rel, int depth)
{
    DIR *d = fdopendir(dirfd);
    if (d == NULL) {
        close(dirfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || record_name(rel, de->d_name))
            continue; /* dot files are temp files; the records are hm_task's */
        if (k->n >= TASKS_LIST_MAX) {
            k->truncated = true;
            break;
        }
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode))
            continue; /* links are never listed nor followed */
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >=
            (int)sizeof path)
            continue;
        struct entry *e = entry_add(k, path);
        e->dir = S_ISDIR(st.st_mode);
        e->size = e->dir ? 0 : st.st_size;
        e->mtime = st.st_mtime;
        if (!e->dir) {
            read_file(k, dirfd, de->d_name, e);
        } else if (depth < DEPTH_MAX) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                walk(k, sub, path, depth + 1);
        }
    }
    closedir(d);
}

static void walk_batch(struct list *batch, void *arg)
{
    struct taskfilespg *p = arg;
    LIST_FOREACH(node, batch)
    {
        struct capture *k = list_entry(node, struct capture, q.link);
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", p->tasks_dir, k->id);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        k->absent = fd < 0;
        if (fd >= 0)
            walk(k, fd, "", 0);
    }
}

/* ---------- writing a copy (loop) ---------- */

static void capture_free(struct capture *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i].path);
        free(k->v[i].data);
    }
    free(k->v);
    free(k);
}

static void held_drop(struct taskfilespg *p, struct capture *k)
{
    list_unlink(&k->link);
    p->nheld--;
    capture_free(k);
}

static void send_capture(struct taskfilespg *p, struct capture *k);

static void retry_held(struct loop *l, void *arg)
{
    struct taskfilespg *p = arg;
    (void)l;
    p->retry = NULL;
    LIST_FOREACH_SAFE(node, &p->held)
    {
        struct capture *k = list_entry(node, struct capture, link);
        if (!k->sent)
            send_capture(p, k);
    }
}

static void retry_later(struct taskfilespg *p)
{
    if (p->retry || p->closing)
        return;
    unsigned ms = pgconn_retry_in_ms(p->conn);
    p->retry = loop_timer_add(p->loop, ms > RETRY_MIN_MS ? ms : RETRY_MIN_MS, retry_held, p);
}

static void capture_sent(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                         void *arg)
{
    struct capture *k = arg;
    struct taskfilespg *p = k->p;
    (void)res, (void)n;
    k->sent = false;
    if (st == PGCONN_OK) {
        held_drop(p, k);
    } else if (st == PGCONN_FAILED || p->closing) {
        log_warn("the files of task %s were not copied to the store: %s", k->id,
                 error ? error : "the database is away");
        held_drop(p, k);
    } else {
        retry_later(p); /* down, busy or timed out: kept, sent again */
    }
}

static void send_capture(struct taskfilespg *p, struct capture *k)
{
    size_t nq = k->n + 2, iq = 0;
    struct pgconn_query *q = xcalloc(nq, sizeof *q);
    const char **params = xcalloc(nq * 7, sizeof *params);
    char(*num)[2][24] = xcalloc(k->n ? k->n : 1, sizeof *num);
    params[0] = k->id;
    q[iq++] = (struct pgconn_query){.stmt = "clear", .nparams = 1, .params = params};
    for (size_t i = 0; i <= k->n; i++) {
        const char **pv = params + 7 * (i + 1);
        pv[0] = k->id;
        if (i == k->n) { /* the marker row, when the walk stopped at the cap */
            if (!k->truncated)
                break;
            pv[1] = "", pv[2] = "t", pv[3] = "0", pv[4] = "0", pv[5] = NULL;
            pv[6] = MARK_TRUNCATED;
        } else {
            const struct entry *e = &k->v[i];
            snprintf(num[i][0], sizeof num[i][0], "%lld", e->size);
            snprintf(num[i][1], sizeof num[i][1], "%lld", e->mtime);
            pv[1] = e->path, pv[2] = e->dir ? "t" : "f", pv[3] = num[i][0], pv[4] = num[i][1];
            pv[5] = e->data, pv[6] = e->refusal;
        }
        q[iq++] = (struct pgconn_query){.stmt = "put", .nparams = 7, .params = pv};
    }
    k->sent = true;
    pgconn_send(p->conn, q, iq, capture_sent, k); /* the parameters are copied */
    free(num);
    free(params);
    free(q);
}

/* A file's text is kept only when hermes_files would serve it: UTF-8 without NUL. */
static void keep_text_only(struct capture *k)
{
    for (size_t i = 0; i < k->n; i++) {
        struct entry *e = &k->v[i];
        if (e->data == NULL || tasks_text_ok(e->data, e->len))
            continue;
        free(e->data);
        e->data = NULL;
        e->refusal = WHY_BINARY;
    }
}

static void walked(struct workq_job *job, enum workq_end end, void *arg)
{
    struct taskfilespg *p = arg;
    struct capture *k = list_entry(job, struct capture, q);
    if (end != WORKQ_DONE || k->absent) {
        capture_free(k);
        return;
    }
    keep_text_only(k);
    if (p->nheld >= HELD_MAX) { /* bounded memory while the database is away */
        LIST_FOREACH(node, &p->held)
        {
            struct capture *old = list_entry(node, struct capture, link);
            if (old->sent)
                continue;
            log_warn("the files of task %s were not copied to the store: too many copies "
                     "wait for the database",
                     old->id);
            held_drop(p, old);
            break;
        }
    }
    list_push_back(&p->held, &k->link);
    p->nheld++;
    send_capture(p, k);
}

void taskfilespg_capture(struct taskfilespg *p, const char *id)
{
    if (p == NULL || p->closing || !taskpath_id_ok(id, strlen(id)))
        return;
    struct capture *k = xcalloc(1, sizeof *k);
    k->p = p;
    snprintf(k->id, sizeof k->id, "%s", id);
    if (!workq_submit(p->walker, &k->q))
        capture_free(k);
}

/* ---------- reads ---------- */

static json_t *listing(const char *id, const char *rel, PGresult *r, bool truncated)
{
    json_t *entries = json_array();
    int rows = PQntuples(r);
    for (int i = 0; i < rows && i < TASKS_LIST_MAX; i++) {
        bool dir = PQgetvalue(r, i, 1)[0] == 't';
        json_array_append_new(entries,
                              json_pack("{s:s, s:s, s:I, s:I}", "path", PQgetvalue(r, i, 0), "type",
                                        dir ? "dir" : "file", "size",
                                        (json_int_t)strtoll(PQgetvalue(r, i, 2), NULL, 10), "mtime",
                                        (json_int_t)strtoll(PQgetvalue(r, i, 3), NULL, 10)));
    }
    return json_pack("{s:s, s:s, s:o, s:I, s:b}", "id", id, "path", rel, "entries", entries,
                     "count", (json_int_t)json_array_size(entries), "truncated",
                     truncated || rows > TASKS_LIST_MAX);
}

/* The answer for a file row (is_dir, size, mtime, content, refusal). */
static enum tasks_rc file_answer(const struct taskfilespg_read *rd, PGresult *r, json_t **out,
                                 const char **why)
{
    const char *refusal = PQgetisnull(r, 0, 4) ? NULL : PQgetvalue(r, 0, 4);
    if (refusal && strcmp(refusal, WHY_BIG) == 0) {
        *why = "file is larger than 200 KiB";
        return TASKS_TOO_BIG;
    }
    if (refusal && strcmp(refusal, WHY_BINARY) == 0) {
        *why = "only UTF-8 text files without NUL bytes can be read";
        return TASKS_INVALID;
    }
    if (refusal && strcmp(refusal, WHY_CAP) == 0) {
        *why = "this file was not kept: the task's files are over the store's 8 MiB";
        return TASKS_TOO_BIG;
    }
    if (refusal || PQgetisnull(r, 0, 3)) {
        *why = "only regular files can be read";
        return TASKS_INVALID;
    }
    const char *text = PQgetvalue(r, 0, 3);
    size_t len = strlen(text); /* text: no NUL (refused when copied) */
    *out = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s%}", "id", rd->id, "path", rd->rel, "size",
                     (json_int_t)len, "mtime", (json_int_t)strtoll(PQgetvalue(r, 0, 2), NULL, 10),
                     "encoding", "utf-8", "content", text, len);
    return *out ? TASKS_OK : TASKS_INVALID;
}

static void read_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                      void *arg)
{
    struct taskfilespg_read *rd = arg;
    json_t *out = NULL;
    const char *why = "no such file in this task";
    enum tasks_rc rc = TASKS_NOT_FOUND;
    (void)error;
    if (rd->cancelled) {
        free(rd->rel);
        free(rd);
        return;
    }
    if (st != PGCONN_OK || n != 2 || res[0] == NULL || res[1] == NULL) {
        rc = TASKS_UNAVAILABLE;
        why = "the task store's database cannot be reached";
    } else if (PQntuples(res[0]) == 1 && PQgetvalue(res[0], 0, 0)[0] == 'f') {
        rc = file_answer(rd, res[0], &out, &why);
    } else if (*rd->rel == '\0' || PQntuples(res[0]) == 1) { /* the root, or a directory */
        bool marked = *rd->rel == '\0' && PQntuples(res[0]) == 1;
        out = listing(rd->id, rd->rel, res[1], marked);
        rc = TASKS_OK;
    }
    rd->cb(rc, out, why, rd->arg);
    free(rd->rel);
    free(rd);
}

struct taskfilespg_read *taskfilespg_read(struct taskfilespg *p, const char *id, const char *rel,
                                          taskfilespg_read_cb *cb, void *arg)
{
    struct taskfilespg_read *rd = xcalloc(1, sizeof *rd);
    rd->p = p;
    rd->cb = cb;
    rd->arg = arg;
    snprintf(rd->id, sizeof rd->id, "%s", id);
    rd->rel = xstrdup(rel);
    const char *params[2] = {rd->id, rd->rel};
    struct pgconn_query q[2] = {{.stmt = "one", .nparams = 2, .params = params},
                                {.stmt = "under", .nparams = 2, .params = params}};
    pgconn_send(p->conn, q, 2, read_done, rd);
    return rd;
}

void taskfilespg_read_cancel(struct taskfilespg_read *r)
{
    r->cancelled = true;
}

unsigned taskfilespg_retry_after_s(const struct taskfilespg *p)
{
    return (pgconn_retry_in_ms(p->conn) + 999) / 1000 + 1;
}

/* ---------- open, free ---------- */

struct taskfilespg *taskfilespg_open(const struct taskfilespg_opts *o)
{
    struct taskfilespg *p = xcalloc(1, sizeof *p);
    p->loop = o->loop;
    p->tasks_dir = xstrdup(o->tasks_dir);
    list_init(&p->held);
    struct workq_opts wo = {.name = "task-files",
                            .loop = o->loop,
                            .work = walk_batch,
                            .done = walked,
                            .arg = p,
                            .batch_max = 8,
                            .idle = true};
    p->walker = workq_new(&wo);
    struct pgconn_opts po = {.loop = o->loop,
                             .conninfo = o->url,
                             .password = o->password,
                             .stmts = stmts,
                             .nstmts = sizeof stmts / sizeof *stmts};
    p->conn = p->walker ? pgconn_new(&po) : NULL;
    if (p->conn == NULL) {
        log_error("the task files' store cannot be used");
        taskfilespg_free(p);
        return NULL;
    }
    return p;
}

void taskfilespg_free(struct taskfilespg *p)
{
    if (p == NULL)
        return;
    /* Walked copies are sent. A worker stuck on the disk keeps using p: p is then left. */
    bool stopped = workq_free(p->walker, WORKQ_DRAIN, FREE_WAIT_MS);
    if (p->conn && !pgconn_idle(p->conn))
        pgconn_settle(p->conn, FREE_WAIT_MS);
    p->closing = true;
    loop_timer_cancel(p->retry);
    pgconn_free(p->conn); /* what is in flight fails: its callbacks run */
    while (!list_empty(&p->held))
        held_drop(p, list_entry(list_first(&p->held), struct capture, link));
    if (!stopped)
        return;
    free(p->tasks_dir);
    free(p);
}
