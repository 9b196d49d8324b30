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

#define DEPTH_MAX 8 /* directory levels walked, as tasks_files lists */
/* Entries copied: twice a listing, so that a folder's listing is as full as the directory's
 * (tasks_files counts from the folder listed). */
#define ENTRIES_MAX (2 * TASKS_LIST_MAX)
/* Copies walked and waiting for the database (one is sent at a time); beyond either bound the
 * oldest waiting is dropped, so a database that is away or slow costs bounded memory. */
#define HELD_MAX 16
#define HELD_BYTES_MAX (32u << 20)
#define TRIES_MAX 3       /* a copy whose sending timed out this often is dropped */
#define FREE_WAIT_MS 3000 /* at a stop: the copies walked reach the database */
#define RETRY_MIN_MS 200

/* Why a listed file cannot be read from the store (NULL: it can); the messages tasks_files
 * gives for the same files. */
#define WHY_BIG "big"
#define WHY_BINARY "binary"
#define WHY_SPECIAL "special"
#define WHY_CAP "cap"
#define WHY_LINK "link" /* listed nowhere; a path through it is refused as tasks_files does */
#define MARK_TRUNCATED "truncated" /* the row of path '': the walk stopped at the listing cap */

static const struct pgconn_stmt stmts[] = {
    {"clear", "DELETE FROM hm_task_file WHERE task_id = $1"},
    {"put", "INSERT INTO hm_task_file (task_id, path, is_dir, size, mtime, content, refusal)"
            " VALUES ($1, $2, $3::boolean, $4::bigint, $5::bigint, $6, $7)"},
    /* The entry at a path, or the link on the way to it. */
    {"one", "SELECT is_dir, size, mtime, content, refusal FROM hm_task_file"
            " WHERE task_id = $1 AND path <> '' AND (path = $2 OR (refusal = '" WHY_LINK "'"
            " AND starts_with($2, path || '/'))) ORDER BY path = $2 DESC LIMIT 1"},
    /* The entries under a directory (all of them for ''), one more than a listing shows so
     * that a longer one says truncated. */
    {"under", "SELECT path, is_dir, size, mtime FROM hm_task_file WHERE task_id = $1"
              " AND path <> '' AND refusal IS DISTINCT FROM '" WHY_LINK "'"
              " AND ($2 = '' OR starts_with(path, $2 || '/')) ORDER BY path LIMIT 501"},
    {"cut", "SELECT count(*) FROM hm_task_file WHERE task_id = $1 AND path = ''"},
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
    size_t text_bytes; /* the texts kept */
    size_t bytes;      /* all it holds */
    unsigned tries;    /* sendings that timed out */
    bool truncated;
    bool absent;             /* no directory here: nothing to copy */
    void (*done)(void *arg); /* once stored, dropped or found empty: exactly once */
    void *done_arg;
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
    struct list held; /* captures walked, oldest first; the first may be in flight */
    size_t nheld, held_bytes;
    bool sending; /* the first of held is in flight */
    struct loop_timer *retry;
    bool closing;
};

/* ---------- the walk (worker thread) ---------- */

static struct entry *entry_add(struct capture *k, const char *path)
{
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 16;
        k->v = xrealloc(k->v, k->cap * sizeof *k->v);
    }
    struct entry *e = &k->v[k->n++];
    *e = (struct entry){.path = xstrdup(path)};
    k->bytes += strlen(path) + sizeof *e;
    return e;
}

/* Reads the regular file name in dirfd, never through a link, into e (or says why not). Only
 * text hermes_files can serve is kept and counted against the task's cap. */
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
        char *data = xmalloc((size_t)st.st_size + 1);
        ssize_t got = 0, r;
        while (got < st.st_size && (r = read(fd, data + got, (size_t)(st.st_size - got))) > 0)
            got += r;
        data[got] = '\0';
        e->size = got;
        if (!tasks_text_ok(data, (size_t)got)) {
            e->refusal = WHY_BINARY;
            free(data);
        } else {
            e->data = data;
            e->len = (size_t)got;
            k->text_bytes += e->len;
            k->bytes += e->len;
        }
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
        if (de->d_name[0] == '.' || !tasks_text_ok(de->d_name, strlen(de->d_name)))
            continue; /* hidden, as tasks_files hides them; a name JSON cannot carry */
        if (k->n >= ENTRIES_MAX) {
            k->truncated = true;
            break;
        }
        struct stat st;
        char path[PATH_MAX];
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            snprintf(path, sizeof path, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >=
                (int)sizeof path)
            continue;
        struct entry *e = entry_add(k, path);
        if (S_ISLNK(st.st_mode)) { /* never listed nor followed; a path through it is refused */
            e->refusal = WHY_LINK;
            continue;
        }
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

/* The copy's end, whatever it was: its waiter goes on, then it goes. */
static void capture_end(struct capture *k)
{
    if (k->done)
        k->done(k->done_arg);
    capture_free(k);
}

static void held_drop(struct taskfilespg *p, struct capture *k)
{
    list_unlink(&k->link);
    p->nheld--;
    p->held_bytes -= k->bytes;
    capture_end(k);
}

static void pump(struct taskfilespg *p);

static void retry_held(struct loop *l, void *arg)
{
    struct taskfilespg *p = arg;
    (void)l;
    p->retry = NULL;
    pump(p);
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
    p->sending = false;
    if (st == PGCONN_TIMEOUT)
        k->tries++;
    if (st == PGCONN_OK) {
        held_drop(p, k);
    } else if (st == PGCONN_FAILED || k->tries >= TRIES_MAX || p->closing) {
        log_warn("the files of task %s were not copied to the store: %s", k->id,
                 st == PGCONN_FAILED && error ? error : "the database did not take them");
        held_drop(p, k);
    } else {
        retry_later(p); /* down, busy or timed out: kept, sent again */
        return;
    }
    pump(p);
}

/* Sends the oldest copy waiting, unless one is in flight: one transaction that replaces what
 * the store held for the task. */
static void pump(struct taskfilespg *p)
{
    if (p->sending || p->closing || list_empty(&p->held))
        return;
    struct capture *k = list_entry(list_first(&p->held), struct capture, link);
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
    p->sending = true;
    pgconn_send(p->conn, q, iq, capture_sent, k); /* the parameters are copied */
    free(num);
    free(params);
    free(q);
}

static void walked(struct workq_job *job, enum workq_end end, void *arg)
{
    struct taskfilespg *p = arg;
    struct capture *k = list_entry(job, struct capture, q);
    if (end != WORKQ_DONE || k->absent || p->closing) {
        capture_end(k);
        return;
    }
    list_push_back(&p->held, &k->link);
    p->nheld++;
    p->held_bytes += k->bytes;
    /* Bounded memory while the database is away or slow: the oldest waiting goes first (never
     * the one in flight, nor the one just walked). */
    while (p->nheld > HELD_MAX || p->held_bytes > HELD_BYTES_MAX) {
        struct list *first = list_first(&p->held);
        struct capture *old = list_entry(p->sending ? first->next : first, struct capture, link);
        if (old == k)
            break;
        log_warn("the files of task %s were not copied to the store: too many copies wait for "
                 "the database",
                 old->id);
        held_drop(p, old);
    }
    pump(p);
}

bool taskfilespg_capture(struct taskfilespg *p, const char *id, void (*done)(void *arg), void *arg)
{
    char dir[PATH_MAX];
    struct stat st;
    if (p == NULL || p->closing || !taskpath_id_ok(id, strlen(id)))
        return false;
    snprintf(dir, sizeof dir, "%s/%s", p->tasks_dir, id);
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return false; /* the usual case: the agent left nothing here */
    struct capture *k = xcalloc(1, sizeof *k);
    k->p = p;
    snprintf(k->id, sizeof k->id, "%s", id);
    k->done = done;
    k->done_arg = arg;
    if (!workq_submit(p->walker, &k->q)) {
        capture_free(k);
        return false;
    }
    return true;
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

/* The answer for the entry row of r (is_dir, size, mtime, content, refusal), with the messages
 * tasks_files gives for the same file. */
static enum tasks_rc file_answer(const struct taskfilespg_read *rd, PGresult *r, json_t **out,
                                 char *why, size_t whylen)
{
    const char *refusal = PQgetisnull(r, 0, 4) ? NULL : PQgetvalue(r, 0, 4);
    enum tasks_rc rc = TASKS_INVALID;
    if (refusal == NULL && !PQgetisnull(r, 0, 3)) {
        const char *text = PQgetvalue(r, 0, 3);
        size_t len = strlen(text); /* no NUL: refused when copied */
        *out =
            json_pack("{s:s, s:s, s:I, s:I, s:s, s:s%}", "id", rd->id, "path", rd->rel, "size",
                      (json_int_t)len, "mtime", (json_int_t)strtoll(PQgetvalue(r, 0, 2), NULL, 10),
                      "encoding", "utf-8", "content", text, len);
        return *out ? TASKS_OK : TASKS_INVALID;
    }
    if (refusal && strcmp(refusal, WHY_LINK) == 0) {
        snprintf(why, whylen, "symbolic links are not followed");
    } else if (refusal && strcmp(refusal, WHY_BIG) == 0) {
        snprintf(why, whylen, "file is larger than %d KiB", TASKS_FILE_MAX / 1024);
        rc = TASKS_TOO_BIG;
    } else if (refusal && strcmp(refusal, WHY_BINARY) == 0) {
        snprintf(why, whylen, "only UTF-8 text files without NUL bytes can be read");
    } else if (refusal && strcmp(refusal, WHY_CAP) == 0) {
        snprintf(why, whylen,
                 "this file was not kept: the task's files are over the store's %u MiB",
                 TASKFILESPG_TASK_MAX >> 20);
        rc = TASKS_TOO_BIG;
    } else {
        snprintf(why, whylen, "only regular files can be read");
    }
    return rc;
}

static void read_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                      void *arg)
{
    struct taskfilespg_read *rd = arg;
    json_t *out = NULL;
    char why[160] = "no such file in this task";
    enum tasks_rc rc = TASKS_NOT_FOUND;
    if (rd->cancelled) {
        free(rd->rel);
        free(rd);
        return;
    }
    if (st == PGCONN_FAILED) { /* a statement failed: trying again would not help */
        log_warn("hermes_files from the store: %s", error ? error : "failed");
        rc = TASKS_IO;
        snprintf(why, sizeof why, "the task's files could not be read from the store");
    } else if (st != PGCONN_OK || n != 3 || !res[0] || !res[1] || !res[2]) {
        rc = TASKS_UNAVAILABLE;
    } else {
        bool cut = strcmp(PQgetvalue(res[2], 0, 0), "0") != 0;
        bool row = PQntuples(res[0]) == 1;
        if (*rd->rel == '\0' || (row && PQgetvalue(res[0], 0, 0)[0] == 't' &&
                                 PQgetisnull(res[0], 0, 4))) { /* the root, or a directory */
            out = listing(rd->id, rd->rel, res[1], cut);
            rc = TASKS_OK;
        } else if (row) {
            rc = file_answer(rd, res[0], &out, why, sizeof why);
        }
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
    struct pgconn_query q[3] = {{.stmt = "one", .nparams = 2, .params = params},
                                {.stmt = "under", .nparams = 2, .params = params},
                                {.stmt = "cut", .nparams = 1, .params = params}};
    pgconn_send(p->conn, q, 3, read_done, rd);
    return rd;
}

void taskfilespg_read_cancel(struct taskfilespg_read *r)
{
    r->cancelled = true;
}

unsigned taskfilespg_retry_after_s(const struct taskfilespg *p)
{
    return pgconn_up(p->conn) ? 0 : (pgconn_retry_in_ms(p->conn) + 999) / 1000 + 1;
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
