/* tasks.c — task directory I/O: a writer thread for durable writes, capped reads, safe file
 * access.
 *
 * The writer takes everything queued at once (a batch) and journals it first: every record
 * (the task file's path and bytes, or its removal) goes to the task journal (taskjournal.h)
 * with one write and one fdatasync for the whole batch. Then it writes the files themselves,
 * in queue order, as a temp file renamed over the name but without their fsyncs, and hands the
 * batch back to the loop: a caller is told its write is done once its record is durable, and a
 * reader in another process sees the file at once (the page cache holds it). The journal's
 * checkpoint thread makes the files durable later, thousands at once (syncfs), and a crash is
 * repaired by replaying the journal before anything reads the directory (tasks_open, and the
 * offline readers through taskjournal_recover). A record too big for a journal segment, or a
 * directory whose journal another process holds, is written the durable way instead: temp
 * file, fsync, rename, fsync of its directory (and of the root for a new task directory). The
 * writer is a work queue's worker (workq.h), which hands finished operations back to the loop. */
#include "tasks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "strmap.h"
#include "taskjournal.h"
#include "taskpath.h"
#include "taskspg.h"
#include "workq.h"

#define BATCH_MAX 256

enum op_kind { OP_WRITE, OP_REMOVE };

struct op {
    struct workq_job q; /* in the writer's queue, in order */
    enum op_kind kind;
    char id[129];
    char name[64];
    char *data; /* OP_WRITE: the file's bytes */
    size_t len;
    tasks_done_cb *done;
    void *arg;
    enum tasks_rc rc;
};

#define OP_OF(node) list_entry(node, struct op, q.link)

struct tasks {
    char *dir;  /* as configured */
    char *real; /* realpath of dir, for containment checks */
    struct loop *loop;
    struct strmap *pending;      /* id -> number of queued operations (loop thread) */
    struct workq *wq;            /* the writer: batches of operations, each back to the loop */
    unsigned long seq;           /* writer thread only */
    struct taskjournal *journal; /* NULL: every write the durable way */
    bool journal_tried;          /* writer thread: opened on the first batch */
    struct taskspg *pg;          /* STORE_URL: the records are there (tasks_use_store) */
};

/* What tasks_pending counts: operations queued or under way, and holds. */
static void pending_add(struct tasks *t, const char *id)
{
    uintptr_t n = (uintptr_t)strmap_get(t->pending, id);
    strmap_put(t->pending, id, (void *)(n + 1));
}

static void pending_sub(struct tasks *t, const char *id)
{
    uintptr_t n = (uintptr_t)strmap_get(t->pending, id);
    if (n > 1)
        strmap_put(t->pending, id, (void *)(n - 1));
    else
        strmap_del(t->pending, id);
}

static int mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, mode) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* ---------- the writer thread ---------- */

static void op_fail(struct op *o, const char *what, int err)
{
    o->rc = TASKS_IO;
    log_error("task %s: cannot %s %s: %s", o->id, what, o->name, strerror(err));
}

/* The task directory; made_dir tells whether it is new. */
static bool op_mkdir(struct tasks *t, struct op *o, char *dir, size_t dirlen, bool *made_dir)
{
    snprintf(dir, dirlen, "%s/%s", t->real, o->id);
    *made_dir = mkdir(dir, 0700) == 0;
    if (!*made_dir && errno != EEXIST) {
        op_fail(o, "create the directory for", errno);
        return false;
    }
    return true;
}

static void op_unlink(struct tasks *t, struct op *o)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s/%s", t->real, o->id, o->name);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s", t->real, o->id);
    rmdir(path); /* only if that left it empty: a task that never started leaves nothing */
}

/* A journaled operation: the file takes its new bytes (temp file, rename; no fsync: the
 * journal holds them until a checkpoint), or goes. */
static void op_apply(struct tasks *t, struct op *o)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    bool made;
    if (o->kind == OP_REMOVE) {
        op_unlink(t, o);
        return;
    }
    if (!op_mkdir(t, o, dir, sizeof dir, &made))
        return;
    char *tmp = xasprintf("%s/.%s.tmp.%ld.%lu", dir, o->name, (long)getpid(), ++t->seq);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    snprintf(path, sizeof path, "%s/%s", dir, o->name);
    if (fd < 0)
        op_fail(o, "create a temp file for", errno);
    else if (fchmod(fd, 0600) < 0 || !atomicfile_write_all(fd, o->data, o->len)) {
        op_fail(o, "write", errno);
        unlink(tmp);
    } else if (rename(tmp, path) < 0) {
        op_fail(o, "replace", errno);
        unlink(tmp);
    }
    if (fd >= 0)
        close(fd);
    free(tmp);
}

/* Without the journal: the file is durable (and its directory entry, and a new directory's)
 * before the operation is done. */
static void op_durable(struct tasks *t, struct op *o)
{
    char dir[PATH_MAX], path[PATH_MAX + 64], why[256];
    bool made;
    if (o->kind == OP_REMOVE) {
        op_unlink(t, o);
        return;
    }
    if (!op_mkdir(t, o, dir, sizeof dir, &made))
        return;
    snprintf(path, sizeof path, "%s/%s", dir, o->name);
    if (!atomicfile_write(path, o->data, o->len, 0600, why, sizeof why)) {
        o->rc = TASKS_IO;
        log_error("task %s: cannot write %s: %s", o->id, o->name, why);
    } else if (made && atomicfile_sync_dir(t->real) < 0)
        op_fail(o, "fsync the tasks directory for", errno);
}

bool tasks_journal_start(struct tasks *t, char *err, size_t errlen)
{
    bool busy;
    t->journal_tried = true;
    t->journal = taskjournal_open(t->real, NULL, &busy, err, errlen);
    if (busy) {
        snprintf(err, errlen,
                 "TASKS_DIR %s is used by another hermes-mcp server (it holds %s/.journal): give "
                 "each server its own TASKS_DIR, or stop the other one first",
                 t->real, t->real);
        return false;
    }
    if (t->journal == NULL) /* the disk fails, or a journal this build cannot read */
        log_warn("%s: the task files are written with an fsync each", err);
    return true;
}

void tasks_sync(struct tasks *t)
{
    if (t->journal_tried && t->journal)
        taskjournal_sync(t->journal);
}

/* Journals and applies the batch in queue order: runs of records that fit a segment, each one
 * write and one fdatasync; an operation the journal cannot take is written the durable way. */
static void run_batch(struct tasks *t, struct list *batch)
{
    if (!t->journal_tried) {
        char err[512];
        bool busy;
        t->journal_tried = true;
        t->journal = taskjournal_open(t->real, NULL, &busy, err, sizeof err);
        if (t->journal == NULL) /* another server writes here, or the disk fails */
            log_warn("%s: the task files are written with an fsync each", err);
    }
    size_t n = 0;
    LIST_FOREACH(node, batch)
    n++;
    struct op **ops = xcalloc(n ? n : 1, sizeof *ops);
    struct taskjournal_rec *recs = xcalloc(n ? n : 1, sizeof *recs);
    n = 0;
    LIST_FOREACH(node, batch)
    {
        struct op *o = ops[n] = OP_OF(node);
        recs[n++] = (struct taskjournal_rec){.kind = o->kind == OP_WRITE ? TASKJOURNAL_WRITE
                                                                         : TASKJOURNAL_REMOVE,
                                             .id = o->id,
                                             .name = o->name,
                                             .data = o->data,
                                             .len = o->len};
    }
    for (size_t i = 0; i < n;) {
        size_t k = i, m = 0;
        while (t->journal && k < n && taskjournal_fits(t->journal, &recs[k]))
            k++;
        if (k > i)
            m = taskjournal_append(t->journal, recs + i, k - i);
        /* Not journaled: this one the durable way, after a checkpoint (an older record of its
         * file must not replay over it; a checkpoint that fails stops the server first). */
        if (m == 0) {
            if (t->journal)
                taskjournal_checkpoint(t->journal);
            op_durable(t, ops[i++]);
            continue;
        }
        for (size_t x = i; x < i + m; x++)
            op_apply(t, ops[x]);
        taskjournal_applied(t->journal);
        i += m;
    }
    if (t->journal)
        taskjournal_applied(t->journal);
    free(ops);
    free(recs);
}

/* Writer thread: a bounded batch (BATCH_MAX operations, one journal write or a few). */
static void write_batch(struct list *batch, void *arg)
{
    run_batch(arg, batch); /* may wait on the disk: only this thread waits */
}

/* Loop thread: hands a finished operation to its callback. */
static void op_done(struct workq_job *qj, enum workq_end end, void *arg)
{
    struct tasks *t = arg;
    struct op *o = list_entry(qj, struct op, q);
    /* tasks_free drains, but a write submitted from a done callback meanwhile comes back
     * cancelled, never written: it must not be reported as done. */
    if (end == WORKQ_CANCELLED)
        o->rc = TASKS_IO;
    pending_sub(t, o->id);
    if (o->done)
        o->done(o->rc, o->arg);
    free(o->data);
    free(o);
}

static void enqueue(struct tasks *t, struct op *o)
{
    pending_add(t, o->id);
    workq_submit(t->wq, &o->q); /* cannot fail: tasks_open started the writer */
}

/* ---------- open, close ---------- */

struct tasks *tasks_open(const char *dir, struct loop *l, char *err, size_t errlen)
{
    char real[PATH_MAX];
    if (mkdir_p(dir, 0700) < 0 || realpath(dir, real) == NULL) {
        snprintf(err, errlen, "TASKS_DIR %s: %s", dir, strerror(errno));
        return NULL;
    }
    struct tasks *t = xcalloc(1, sizeof *t);
    t->dir = xstrdup(dir);
    t->real = xstrdup(real);
    t->loop = l;
    t->pending = strmap_new();
    /* What a crash left, before anything reads the directory (if another server holds the
     * journal, its files are current). The journal itself is opened by the first write, so a
     * server whose records are in a database never takes it. */
    if (taskjournal_recover(real, err, errlen) < 0) {
        tasks_free(t);
        return NULL;
    }
    struct workq_opts o = {.name = "task-writer",
                           .loop = l,
                           .work = write_batch,
                           .done = op_done,
                           .arg = t,
                           .batch_max = BATCH_MAX};
    t->wq = workq_new(&o);
    if (t->wq == NULL) {
        snprintf(err, errlen, "cannot set up the task writer: %s", strerror(errno));
        tasks_free(t);
        return NULL;
    }
    if (!workq_start(t->wq)) {
        snprintf(err, errlen, "cannot start the task writer thread");
        tasks_free(t);
        return NULL;
    }
    return t;
}

void tasks_free(struct tasks *t)
{
    if (t == NULL)
        return;
    taskspg_free(t->pg); /* its last writes reach the database; their callbacks run */
    /* The writer finishes what was queued first, and each operation's callback runs. */
    workq_free(t->wq, WORKQ_DRAIN, 0);
    taskjournal_close(t->journal); /* a last checkpoint: the next start replays nothing */
    strmap_free(t->pending);
    free(t->dir);
    free(t->real);
    free(t);
}

const char *tasks_dir(const struct tasks *t)
{
    return t->real;
}

static bool id_ok(const char *id)
{
    return taskpath_id_ok(id, strlen(id));
}

static bool name_ok(const char *name)
{
    return strlen(name) < sizeof((struct op *)0)->name && strchr(name, '/') == NULL &&
           name[0] != '.' && name[0] != '\0';
}

/* ---------- the records in a database (STORE_URL) ---------- */

struct store_op {
    struct tasks *t;
    char id[129];
    tasks_done_cb *done;
    void *arg;
};

static void store_done(enum tasks_rc rc, void *arg)
{
    struct store_op *so = arg;
    pending_sub(so->t, so->id);
    if (so->done)
        so->done(rc, so->arg);
    free(so);
}

static struct store_op *store_op_new(struct tasks *t, const char *id, tasks_done_cb *done,
                                     void *arg)
{
    struct store_op *so = xcalloc(1, sizeof *so);
    so->t = t;
    snprintf(so->id, sizeof so->id, "%s", id);
    so->done = done;
    so->arg = arg;
    pending_add(t, id);
    return so;
}

static enum tasks_rc store_write(struct tasks *t, const char *id, const char *name, json_t *json,
                                 tasks_done_cb *done, void *arg)
{
    int doc = taskspg_doc(name);
    if (doc < 0)
        return TASKS_INVALID;
    /* The text a file would hold, so that every reader parses the same bytes. */
    char *text = json_dumps(json, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text == NULL)
        return TASKS_INVALID;
    const char *run_id = doc == 1 ? json_string_value(json_object_get(json, "run_id")) : NULL;
    taskspg_write(t->pg, id, doc, text, run_id, store_done, store_op_new(t, id, done, arg));
    free(text);
    return TASKS_OK;
}

static enum tasks_rc store_remove(struct tasks *t, const char *id, const char *name,
                                  tasks_done_cb *done, void *arg)
{
    int doc = taskspg_doc(name);
    if (doc < 0)
        return TASKS_INVALID;
    taskspg_remove(t->pg, id, doc, store_done, store_op_new(t, id, done, arg));
    return TASKS_OK;
}

static enum tasks_rc store_read(struct tasks *t, const char *id, const char *name, size_t max,
                                json_t **out)
{
    int doc = taskspg_doc(name);
    const char *text;
    if (doc < 0 || taskspg_read(t->pg, id, doc, &text) != TASKS_OK)
        return TASKS_NOT_FOUND;
    size_t len = strlen(text);
    if (len > max)
        return TASKS_TOO_BIG;
    *out = tasks_parse(text, len);
    return *out ? TASKS_OK : TASKS_INVALID;
}

bool tasks_use_store(struct tasks *t, const char *url, const char *password, const char *replica_id,
                     tasks_takeover_cb *on_takeover, void *arg)
{
    struct taskspg_opts o = {.loop = t->loop,
                             .url = url,
                             .password = password,
                             .replica_id = replica_id,
                             .on_takeover = on_takeover,
                             .arg = arg};
    t->pg = taskspg_open(&o);
    return t->pg != NULL;
}

bool tasks_remote(const struct tasks *t)
{
    return t->pg != NULL;
}

void tasks_load(struct tasks *t, const char *id, const char *run_id, tasks_loaded_cb *cb, void *arg)
{
    if (t->pg) {
        taskspg_load(t->pg, id, run_id, cb, arg);
        return;
    }
    cb(id ? TASKS_OK : TASKS_NOT_FOUND, id, arg);
}

void tasks_prune(struct tasks *t, unsigned days, unsigned max)
{
    if (t->pg)
        taskspg_prune(t->pg, days, max);
}

bool tasks_started_elsewhere(struct tasks *t, const char *id)
{
    return t->pg && taskspg_elsewhere(t->pg, id);
}

void tasks_quiesce(struct tasks *t)
{
    if (t && t->pg)
        taskspg_quiesce(t->pg);
}

unsigned tasks_retry_after_s(const struct tasks *t)
{
    return t->pg ? taskspg_retry_after_s(t->pg) : 0;
}

struct taskspg *tasks_pg(struct tasks *t)
{
    return t ? t->pg : NULL; /* a bridge that failed to open its tasks is freed too */
}

enum tasks_rc tasks_write(struct tasks *t, const char *id, const char *name, json_t *json,
                          tasks_done_cb *done, void *arg)
{
    if (!id_ok(id) || !name_ok(name))
        return TASKS_INVALID;
    if (t->pg)
        return store_write(t, id, name, json, done, arg);
    struct op *o = xcalloc(1, sizeof *o);
    o->kind = OP_WRITE;
    snprintf(o->id, sizeof o->id, "%s", id);
    snprintf(o->name, sizeof o->name, "%s", name);
    char *text = json_dumps(json, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    o->data = xasprintf("%s\n", text);
    o->len = strlen(o->data);
    free(text);
    o->done = done;
    o->arg = arg;
    enqueue(t, o);
    return TASKS_OK;
}

bool tasks_pending(struct tasks *t, const char *id)
{
    return strmap_get(t->pending, id) != NULL;
}

void tasks_hold(struct tasks *t, const char *id)
{
    pending_add(t, id);
}

void tasks_release(struct tasks *t, const char *id)
{
    pending_sub(t, id);
}

/* Reads a regular file (no symlink) of at most max bytes. */
enum tasks_rc tasks_read_capped(const char *path, size_t max, char **data, size_t *len,
                                struct stat *st)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? TASKS_NOT_FOUND : errno == ELOOP ? TASKS_INVALID : TASKS_IO;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return TASKS_INVALID;
    }
    if ((size_t)st->st_size > max) {
        close(fd);
        return TASKS_TOO_BIG;
    }
    size_t cap = (size_t)st->st_size + 1; /* one more byte tells us the file grew */
    char *p = xmalloc(cap + 1);
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (n > (size_t)st->st_size) {
        free(p);
        close(fd);
        return TASKS_TOO_BIG;
    }
    close(fd);
    p[n] = '\0';
    *data = p;
    *len = n;
    return TASKS_OK;
}

enum tasks_rc tasks_read(struct tasks *t, const char *id, const char *name, size_t max,
                         json_t **out)
{
    char path[PATH_MAX + 64];
    char *data;
    size_t len;
    struct stat st;

    if (!id_ok(id))
        return TASKS_INVALID;
    if (t->pg)
        return store_read(t, id, name, max, out);
    snprintf(path, sizeof path, "%s/%s/%s", t->real, id, name);
    enum tasks_rc rc = tasks_read_capped(path, max, &data, &len, &st);
    if (rc != TASKS_OK)
        return rc;
    *out = tasks_parse(data, len);
    free(data);
    return *out ? TASKS_OK : TASKS_INVALID;
}

json_t *tasks_parse(const char *text, size_t len)
{
    return json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
}

bool tasks_exists(struct tasks *t, const char *id)
{
    char path[PATH_MAX + 8];
    struct stat st;
    if (!id_ok(id))
        return false;
    if (t->pg)
        return taskspg_exists(t->pg, id);
    snprintf(path, sizeof path, "%s/%s", t->real, id);
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

enum tasks_rc tasks_remove(struct tasks *t, const char *id, const char *name, tasks_done_cb *done,
                           void *arg)
{
    if (!id_ok(id) || !name_ok(name))
        return TASKS_INVALID;
    if (t->pg)
        return store_remove(t, id, name, done, arg);
    struct op *o = xcalloc(1, sizeof *o);
    o->kind = OP_REMOVE;
    snprintf(o->id, sizeof o->id, "%s", id);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->done = done;
    o->arg = arg;
    enqueue(t, o);
    return TASKS_OK;
}

void tasks_each(struct tasks *t, void (*fn)(const char *id, void *arg), void *arg)
{
    if (t->pg) /* the database answers by key; nothing walks it */
        return;
    DIR *d = opendir(t->real);
    struct dirent *e;
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL)
        if (taskpath_id_ok(e->d_name, strlen(e->d_name)))
            fn(e->d_name, arg);
    closedir(d);
}

struct tasks_scan {
    DIR *d;
};

struct tasks_scan *tasks_scan_open(struct tasks *t)
{
    if (t->pg)
        return NULL;
    DIR *d = opendir(t->real);
    if (d == NULL)
        return NULL;
    struct tasks_scan *s = xcalloc(1, sizeof *s);
    s->d = d;
    return s;
}

bool tasks_scan_step(struct tasks_scan *s, size_t max, void (*fn)(const char *id, void *arg),
                     void *arg)
{
    struct dirent *e;
    for (size_t n = 0; n < max; n++) {
        if ((e = readdir(s->d)) == NULL)
            return false;
        if (taskpath_id_ok(e->d_name, strlen(e->d_name)))
            fn(e->d_name, arg);
    }
    return true;
}

void tasks_scan_close(struct tasks_scan *s)
{
    if (s == NULL)
        return;
    closedir(s->d);
    free(s);
}
