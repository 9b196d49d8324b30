/* tasks.c — task directory I/O: a writer thread for durable writes, capped reads, safe file
 * access.
 *
 * The writer takes everything queued at once and works in phases: create each temp file and
 * write it, fsync each, rename each (removals happen here too, in queue order), then fsync each
 * touched directory once and the tasks root once if task directories were created. On ext4 the
 * first fsync of a phase commits the journal for the whole batch, so the later ones are cheap:
 * concurrent tasks share their disk flushes instead of queueing behind each other's. Where the
 * file system has no journal to share (ext4 without one, as on some VMs), each fsync is its own
 * write and device flush, and in a row they were the ceiling (0.2-0.3 ms each, ~3 per task):
 * so the fsyncs of a phase run side by side on a few flusher threads (started on the first batch
 * that needs them), which lets the block layer merge their flushes. Every file is still fsynced
 * before its rename and every directory after, so a crash leaves what it left before. The writer
 * is a work queue's worker (workq.h), which hands finished operations back to the loop. */
#include "tasks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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
#include "taskpath.h"
#include "taskspg.h"
#include "workq.h"

#define BATCH_MAX 256
#define FLUSHERS 7                /* beside the writer: 8 fsyncs at once (measured: 4-6x a row) */
#define FLUSHER_STACK (64 * 1024) /* they only call fsync */

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
    /* writer thread only */
    int fd;
    char *tmp; /* the temp file's path while it exists */
    bool made_dir;
};

#define OP_OF(node) list_entry(node, struct op, q.link)

/* One phase's fsyncs, shared by the writer and the flushers (guarded by tasks.fmu). */
struct syncset {
    const int *fds;
    int *errs; /* errno of each fsync, 0 when it succeeded */
    size_t n, next, left;
};

struct tasks {
    char *dir;  /* as configured */
    char *real; /* realpath of dir, for containment checks */
    struct loop *loop;
    struct strmap *pending; /* id -> number of queued operations (loop thread) */
    struct workq *wq;       /* the writer: batches of operations, each back to the loop */
    unsigned long seq;      /* writer thread only */
    pthread_t flushers[FLUSHERS];
    int nflushers; /* started so far (writer thread; read by tasks_free after the join) */
    pthread_mutex_t fmu;
    pthread_cond_t fwork, fdone;
    struct syncset *job; /* guarded by fmu */
    bool fstop;          /* guarded by fmu */
    struct taskspg *pg;  /* STORE_URL: the records are there (tasks_use_store) */
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

/* Phase 1: the task directory and a temp file holding the bytes. */
static void op_prepare(struct tasks *t, struct op *o)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", t->real, o->id);
    if (mkdir(dir, 0700) == 0)
        o->made_dir = true;
    else if (errno != EEXIST) {
        op_fail(o, "create the directory for", errno);
        return;
    }
    o->tmp = xasprintf("%s/.%s.tmp.%ld.%lu", dir, o->name, (long)getpid(), ++t->seq);
    o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (o->fd < 0) {
        op_fail(o, "create a temp file for", errno);
        return;
    }
    if (fchmod(o->fd, 0600) < 0 || !atomicfile_write_all(o->fd, o->data, o->len)) {
        op_fail(o, "write", errno);
        close(o->fd);
        o->fd = -1;
        unlink(o->tmp);
    }
}

/* ---------- fsyncs side by side ---------- */

/* Called with fmu held; drops it around the fsync. */
static void sync_next_locked(struct tasks *t, struct syncset *s)
{
    size_t i = s->next++;
    pthread_mutex_unlock(&t->fmu);
    int e = s->fds[i] >= 0 && fsync(s->fds[i]) < 0 ? errno : 0;
    pthread_mutex_lock(&t->fmu);
    s->errs[i] = e;
    if (--s->left == 0)
        pthread_cond_signal(&t->fdone);
}

static void *flusher(void *arg)
{
    struct tasks *t = arg;
    pthread_mutex_lock(&t->fmu);
    for (;;) {
        while (!t->fstop && (t->job == NULL || t->job->next == t->job->n))
            pthread_cond_wait(&t->fwork, &t->fmu);
        if (t->job == NULL || t->job->next == t->job->n)
            break; /* stopping, nothing left */
        sync_next_locked(t, t->job);
    }
    pthread_mutex_unlock(&t->fmu);
    return NULL;
}

/* Writer thread: starts the flushers once; fewer (or none) if threads cannot be had. */
static void start_flushers(struct tasks *t)
{
    pthread_attr_t attr;
    if (t->nflushers > 0 || pthread_attr_init(&attr) != 0)
        return;
    pthread_attr_setstacksize(&attr, FLUSHER_STACK);
    while (t->nflushers < FLUSHERS &&
           pthread_create(&t->flushers[t->nflushers], &attr, flusher, t) == 0)
        t->nflushers++;
    pthread_attr_destroy(&attr);
}

/* Writer thread: fsyncs every fd (-1 is skipped), side by side; errs[i] gets each errno. */
static void sync_all(struct tasks *t, const int *fds, int *errs, size_t n)
{
    if (n > 1)
        start_flushers(t);
    if (n <= 1 || t->nflushers == 0) {
        for (size_t i = 0; i < n; i++)
            errs[i] = fds[i] >= 0 && fsync(fds[i]) < 0 ? errno : 0;
        return;
    }
    struct syncset s = {.fds = fds, .errs = errs, .n = n, .left = n};
    pthread_mutex_lock(&t->fmu);
    t->job = &s;
    for (size_t i = 1; i < n && i <= (size_t)t->nflushers; i++)
        pthread_cond_signal(&t->fwork);
    while (s.next < s.n)
        sync_next_locked(t, &s);
    while (s.left > 0)
        pthread_cond_wait(&t->fdone, &t->fmu);
    t->job = NULL;
    pthread_mutex_unlock(&t->fmu);
}

/* Phase 2: the bytes are on disk. */
static void batch_flush(struct tasks *t, struct list *batch, size_t n)
{
    int *fds = xcalloc(n ? n : 1, sizeof *fds), *errs = xcalloc(n ? n : 1, sizeof *errs);
    size_t k = 0;
    LIST_FOREACH(node, batch)
    if (OP_OF(node)->fd >= 0)
        fds[k++] = OP_OF(node)->fd;
    sync_all(t, fds, errs, k);
    k = 0;
    LIST_FOREACH(node, batch)
    {
        struct op *o = OP_OF(node);
        if (o->fd < 0)
            continue;
        if (errs[k++]) {
            op_fail(o, "fsync", errs[k - 1]);
            unlink(o->tmp);
        }
        close(o->fd);
        o->fd = -1;
    }
    free(fds);
    free(errs);
}

/* Phase 3: the new file takes the name (or a removal happens), in queue order. */
static void op_commit(struct tasks *t, struct op *o)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s/%s", t->real, o->id, o->name);
    if (o->kind == OP_REMOVE) {
        unlink(path);
        snprintf(path, sizeof path, "%s/%s", t->real, o->id);
        rmdir(path); /* only if that left it empty: a task that never started leaves nothing */
        return;
    }
    if (o->rc != TASKS_OK)
        return;
    if (rename(o->tmp, path) < 0) {
        op_fail(o, "replace", errno);
        unlink(o->tmp);
    }
}

/* Phase 4: the names are on disk: each touched task directory once, the root once. */
static void batch_sync_dirs(struct tasks *t, struct list *batch, size_t n)
{
    /* Slot 0 is the root; the others are task directories in first-touched order. */
    int *fds = xcalloc(n + 1, sizeof *fds), *errs = xcalloc(n + 1, sizeof *errs);
    int *open_errs = xcalloc(n + 1, sizeof *open_errs);
    struct strmap *slot = strmap_new(); /* task id -> its slot */
    size_t k = 1;
    bool made = false;
    LIST_FOREACH(node, batch)
    made |= OP_OF(node)->made_dir && OP_OF(node)->rc == TASKS_OK;
    fds[0] = made ? open(t->real, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (made && fds[0] < 0)
        open_errs[0] = errno;
    LIST_FOREACH(node, batch)
    {
        const struct op *o = OP_OF(node);
        if (o->kind != OP_WRITE || o->rc != TASKS_OK || strmap_get(slot, o->id))
            continue;
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", t->real, o->id);
        fds[k] = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fds[k] < 0 && errno != ENOENT) /* ENOENT: the directory was removed since */
            open_errs[k] = errno;
        strmap_put(slot, o->id, (void *)(uintptr_t)k);
        k++;
    }
    sync_all(t, fds, errs, k);
    for (size_t i = 0; i < k; i++) {
        if (open_errs[i])
            errs[i] = open_errs[i];
        if (fds[i] >= 0)
            close(fds[i]);
    }
    LIST_FOREACH(node, batch)
    {
        struct op *o = OP_OF(node);
        if (o->kind != OP_WRITE || o->rc != TASKS_OK)
            continue;
        size_t i = (uintptr_t)strmap_get(slot, o->id);
        if (o->made_dir && errs[0])
            op_fail(o, "fsync the tasks directory for", errs[0]);
        else if (errs[i])
            op_fail(o, "fsync the directory of", errs[i]);
    }
    strmap_free(slot);
    free(fds);
    free(errs);
    free(open_errs);
}

static void run_batch(struct tasks *t, struct list *batch)
{
    size_t n = 0;
    LIST_FOREACH(node, batch)
    {
        n++;
        if (OP_OF(node)->kind == OP_WRITE)
            op_prepare(t, OP_OF(node));
    }
    batch_flush(t, batch, n);
    LIST_FOREACH(node, batch)
    op_commit(t, OP_OF(node));
    batch_sync_dirs(t, batch, n);
}

/* Writer thread: a bounded batch (each write holds a file descriptor until its fsync). */
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
    free(o->tmp);
    free(o);
}

static void enqueue(struct tasks *t, struct op *o)
{
    pending_add(t, o->id);
    o->fd = -1;
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
    pthread_mutex_init(&t->fmu, NULL);
    pthread_cond_init(&t->fwork, NULL);
    pthread_cond_init(&t->fdone, NULL);
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
    pthread_mutex_lock(&t->fmu);
    t->fstop = true;
    pthread_cond_broadcast(&t->fwork);
    pthread_mutex_unlock(&t->fmu);
    for (int i = 0; i < t->nflushers; i++)
        pthread_join(t->flushers[i], NULL);
    pthread_mutex_destroy(&t->fmu);
    pthread_cond_destroy(&t->fwork);
    pthread_cond_destroy(&t->fdone);
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
    return t->pg;
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
