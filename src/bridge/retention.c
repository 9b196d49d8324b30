/* retention.c — TASKS_RETENTION_DAYS and TASKS_MAX: the pruning rule, the directory walk, a
 * removal that never follows a link, and the server's pruner (retention.h says why it is split
 * so). The pruner's file-system work runs on the task writer thread in slices of PRUNE_SLICE
 * tasks: the loop only decides which ids are in flight and updates the run index, a few
 * microseconds a slice, so pruning 100,000 tasks does not stall it. */
#include "retention.h"

#include "config.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "taskpath.h"
#include "tasks.h"

#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A task directory holds the agent's files, a few levels at most; deeper is refused rather than
 * recursed into without bound. */
#define RETENTION_DEPTH_MAX 32
#define PRUNE_SLICE 256             /* tasks removed per turn of the writer */
#define PRUNE_EVERY_MS (3600 * 1000) /* hourly */
#define RUN_JSON_MAX (64 * 1024)

static bool removable(const struct retention_task *t)
{
    return t->terminal && !t->in_flight;
}

/* Removable tasks first, each group oldest first, ties by id for a stable, testable order. */
static int by_removable_then_age(const void *a, const void *b)
{
    const struct retention_task *x = a, *y = b;
    if (removable(x) != removable(y))
        return removable(x) ? -1 : 1;
    if (x->finished != y->finished)
        return x->finished < y->finished ? -1 : 1;
    return strcmp(x->id, y->id);
}

size_t retention_select(struct retention_task *tasks, size_t n, time_t now, unsigned days,
                        unsigned max)
{
    size_t candidates = 0, go = 0;

    if (n == 0)
        return 0;
    qsort(tasks, n, sizeof *tasks, by_removable_then_age);
    while (candidates < n && removable(&tasks[candidates]))
        candidates++;
    if (max > 0 && candidates > max)
        go = candidates - max; /* the oldest beyond the newest max */
    if (days > 0) {
        time_t cutoff = now - (time_t)days * 86400;
        while (go < candidates && tasks[go].finished < cutoff)
            go++;
    }
    return go;
}

/* Empties the directory open as fd (which this closes), entry by entry, relative to fd. */
static int empty_dir(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *e;
    int rc = 0;

    if (d == NULL) {
        close(fd);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = -1;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = depth < RETENTION_DEPTH_MAX
                          ? openat(dirfd(d), e->d_name,
                                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                          : -1;
            if (sub < 0 || empty_dir(sub, depth + 1) != 0 ||
                unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
                rc = -1;
        } else if (unlinkat(dirfd(d), e->d_name, 0) != 0) { /* a symlink goes as a link */
            rc = -1;
        }
    }
    int saved = errno;
    closedir(d);
    errno = saved;
    return rc;
}

int retention_remove_task(int tasks_dirfd, const char *id)
{
    struct stat st;

    if (!taskpath_id_ok(id, strlen(id))) {
        errno = EINVAL;
        return -1;
    }
    if (fstatat(tasks_dirfd, id, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) /* a planted link or file: removed itself, never followed */
        return unlinkat(tasks_dirfd, id, 0);
    int fd = openat(tasks_dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || empty_dir(fd, 0) != 0)
        return -1;
    return unlinkat(tasks_dirfd, id, AT_REMOVEDIR);
}

/* ---------- the directory walk ---------- */

static void list_add(struct retention_list *l, const char *id, time_t finished, bool terminal)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->tasks = xrealloc(l->tasks, l->cap * sizeof *l->tasks);
        l->ids = xrealloc(l->ids, l->cap * sizeof *l->ids);
    }
    l->ids[l->n] = xstrdup(id);
    l->tasks[l->n] = (struct retention_task){
        .id = l->ids[l->n], .finished = finished, .terminal = terminal};
    l->n++;
}

bool retention_scan(const char *dir, struct retention_list *out, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    *out = (struct retention_list){0};
    if (d == NULL) {
        snprintf(err, errlen, "TASKS_DIR %s: %s", dir, strerror(errno));
        return false;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st, rs;
        char result[300];
        if (!taskpath_id_ok(e->d_name, strlen(e->d_name)) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(result, sizeof result, "%s/result.json", e->d_name);
        bool terminal = fstatat(dirfd(d), result, &rs, AT_SYMLINK_NOFOLLOW) == 0 &&
                        S_ISREG(rs.st_mode);
        list_add(out, e->d_name, terminal ? rs.st_mtime : st.st_mtime, terminal);
    }
    closedir(d);
    return true;
}

void retention_list_free(struct retention_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->ids[i]);
    free(l->ids);
    free(l->tasks);
    *l = (struct retention_list){0};
}

/* ---------- the server's pruner ---------- */

struct prune_item {
    char id[129];
    char run_id[128]; /* from run.json, so the loop can drop the run from its index */
    bool removed;
};

struct prune_slice {
    struct retention *r;
    size_t n;
    struct prune_item item[PRUNE_SLICE];
};

struct retention {
    struct tasks *tasks;
    struct loop *loop;
    const struct config *cfg;
    retention_busy_fn *busy;
    retention_pruned_fn *pruned;
    void *arg;
    struct loop_timer *timer;
    bool running, again, stopping;
    /* One prune: the limits and clock it started with, then its plan. Written by the writer
     * thread during the scan only; the loop reads them after the scan's report. */
    time_t now;
    unsigned days, max;
    struct retention_list plan; /* plan.tasks[0..go) are to go, oldest first */
    size_t go, next;
    size_t removed, kept_in_flight, failed;
    struct timespec started;
};

static void prune_start(struct retention *r);

static uint64_t ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000u +
           (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Writer thread. */
static void scan_work(const char *dir, void *arg)
{
    struct retention *r = arg;
    char err[300];
    if (!retention_scan(dir, &r->plan, err, sizeof err)) {
        log_warn("retention: %s", err);
        return;
    }
    r->go = retention_select(r->plan.tasks, r->plan.n, r->now, r->days, r->max);
}

/* Writer thread: the run id a task's run.json names, if any (capped, no link followed). */
static void read_run_id(int taskfd, char *out, size_t outlen)
{
    char buf[RUN_JSON_MAX];
    ssize_t n = -1;
    int fd = openat(taskfd, "run.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    out[0] = '\0';
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = read(fd, buf, sizeof buf);
    close(fd);
    if (n <= 0)
        return;
    json_t *run = json_loadb(buf, (size_t)n, 0, NULL);
    const char *id = json_string_value(json_object_get(run, "run_id"));
    if (id && strlen(id) < outlen)
        snprintf(out, outlen, "%s", id);
    json_decref(run);
}

/* Writer thread. */
static void remove_work(const char *dir, void *arg)
{
    struct prune_slice *s = arg;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    for (size_t i = 0; i < s->n; i++) {
        struct prune_item *it = &s->item[i];
        int tfd = openat(dfd, it->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd >= 0) {
            read_run_id(tfd, it->run_id, sizeof it->run_id);
            close(tfd);
        }
        it->removed = retention_remove_task(dfd, it->id) == 0;
        if (!it->removed)
            log_warn("retention: cannot remove task %s: %s", it->id, strerror(errno));
    }
    close(dfd);
}

static void prune_finish(struct retention *r)
{
    if (r->removed || r->failed || r->kept_in_flight)
        log_info("retention: pruned %zu task%s in %llu ms (%zu in flight kept, %zu failed; "
                 "TASKS_RETENTION_DAYS=%u TASKS_MAX=%u)",
                 r->removed, r->removed == 1 ? "" : "s", (unsigned long long)ms_since(&r->started),
                 r->kept_in_flight, r->failed, r->days, r->max);
    retention_list_free(&r->plan);
    r->running = false;
    if (r->again && !r->stopping) {
        r->again = false;
        prune_start(r);
    }
}

static void remove_done(enum tasks_rc rc, void *arg);

/* Loop thread: hands the next slice to the writer, leaving out what is in flight now. */
static void next_slice(struct retention *r)
{
    struct prune_slice *s = NULL;
    while (r->next < r->go) {
        const char *id = r->plan.tasks[r->next++].id;
        if (r->busy(id, r->arg)) {
            r->kept_in_flight++;
            continue;
        }
        if (s == NULL) {
            s = xcalloc(1, sizeof *s);
            s->r = r;
        }
        snprintf(s->item[s->n].id, sizeof s->item[s->n].id, "%s", id);
        if (++s->n == PRUNE_SLICE)
            break;
    }
    if (s == NULL) {
        prune_finish(r);
        return;
    }
    tasks_run(r->tasks, remove_work, s, remove_done, s);
}

static void remove_done(enum tasks_rc rc, void *arg)
{
    struct prune_slice *s = arg;
    struct retention *r = s->r;
    (void)rc;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->item[i].removed) {
            r->failed++;
            continue;
        }
        r->removed++;
        if (!r->stopping)
            r->pruned(s->item[i].id, s->item[i].run_id, r->arg);
    }
    free(s);
    if (r->stopping)
        prune_finish(r);
    else
        next_slice(r);
}

static void scan_done(enum tasks_rc rc, void *arg)
{
    struct retention *r = arg;
    (void)rc;
    r->next = 0;
    if (r->stopping)
        prune_finish(r);
    else
        next_slice(r);
}

static void prune_start(struct retention *r)
{
    r->running = true;
    r->now = time(NULL);
    r->days = r->cfg->tasks_retention_days;
    r->max = r->cfg->tasks_max;
    r->go = r->next = 0;
    r->removed = r->kept_in_flight = r->failed = 0;
    clock_gettime(CLOCK_MONOTONIC, &r->started);
    tasks_run(r->tasks, scan_work, r, scan_done, r);
}

static void on_hour(struct loop *l, void *arg)
{
    struct retention *r = arg;
    (void)l;
    r->timer = NULL;
    retention_prune(r);
}

void retention_prune(struct retention *r)
{
    if (r == NULL || r->stopping)
        return;
    loop_timer_cancel(r->timer); /* the next hourly prune counts from now */
    r->timer = loop_timer_add(r->loop, PRUNE_EVERY_MS, on_hour, r);
    if (r->cfg->tasks_retention_days == 0 && r->cfg->tasks_max == 0)
        return; /* both limits off: nothing to walk */
    if (r->running) {
        r->again = true;
        return;
    }
    prune_start(r);
}

struct retention *retention_new(struct tasks *t, struct loop *l, const struct config *cfg,
                                retention_busy_fn *busy, retention_pruned_fn *pruned, void *arg)
{
    struct retention *r = xcalloc(1, sizeof *r);
    r->tasks = t;
    r->loop = l;
    r->cfg = cfg;
    r->busy = busy;
    r->pruned = pruned;
    r->arg = arg;
    return r;
}

void retention_stop(struct retention *r)
{
    if (r == NULL)
        return;
    r->stopping = true;
    loop_timer_cancel(r->timer);
    r->timer = NULL;
}

void retention_free(struct retention *r)
{
    if (r == NULL)
        return;
    retention_stop(r);
    retention_list_free(&r->plan);
    free(r);
}
