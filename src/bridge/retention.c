/* retention.c — TASKS_RETENTION_DAYS and TASKS_MAX: the pruning rule, the directory walk, a
 * removal that never follows a link, and the server's pruner (retention.h says why it is split
 * so). The pruner's file-system work runs on one thread of its own at the lowest CPU priority
 * (the reaper), in slices of PRUNE_SLICE tasks: the loop only decides which ids are in flight,
 * holds the others (tasks_hold) while they are taken out and updates the run index, a few
 * microseconds a slice, so pruning 100,000 tasks neither stalls the loop nor takes its CPU. */
#include "retention.h"

#include "log.h"
#include "loop.h"
#include "mem.h"
#include "taskpath.h"
#include "tasks.h"
#include "workq.h"

#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A task directory holds the agent's files, a few levels at most; deeper is refused rather than
 * recursed into without bound. */
#define RETENTION_DEPTH_MAX 32
#define PRUNE_SLICE 256              /* tasks taken out per hand-over to the reaper */
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
            if (errno != ENOENT) /* gone already: someone else emptied it */
                rc = -1;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub =
                depth < RETENTION_DEPTH_MAX
                    ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    : -1;
            if (sub < 0 || empty_dir(sub, depth + 1) != 0 ||
                (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT))
                rc = -1;
        } else if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
            rc = -1; /* a symlink goes as a link */
        }
    }
    int saved = errno;
    closedir(d);
    errno = saved;
    return rc;
}

/* Removes the entry name of the directory dirfd and everything under it, never following a
 * link. An entry already gone counts as removed (the server's reaper and `tasks prune` may
 * empty the trash at the same time). */
static int remove_entry(int dirfd, const char *name)
{
    struct stat st;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) /* a planted link or file: removed itself, never followed */
        return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || empty_dir(fd, 0) != 0)
        return fd < 0 && errno == ENOENT ? 0 : -1;
    return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

int retention_remove_task(int tasks_dirfd, const char *id)
{
    if (!taskpath_id_ok(id, strlen(id))) {
        errno = EINVAL;
        return -1;
    }
    struct stat st;
    if (fstatat(tasks_dirfd, id, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1; /* here, a task that is not there is an error */
    return remove_entry(tasks_dirfd, id);
}

int retention_move_out(int tasks_dirfd, const char *id)
{
    static atomic_ulong seq;
    char to[RETENTION_NAME_MAX];
    struct stat st;

    if (!taskpath_id_ok(id, strlen(id))) {
        errno = EINVAL;
        return -1;
    }
    if (fstatat(tasks_dirfd, id, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (mkdirat(tasks_dirfd, RETENTION_TRASH, 0700) != 0 && errno != EEXIST)
        return -1;
    /* Unique within the trash: the same id may be pruned again before its old files are gone. */
    snprintf(to, sizeof to, "%s/%s.%ld.%lu", RETENTION_TRASH, id, (long)getpid(),
             (unsigned long)atomic_fetch_add(&seq, 1));
    return renameat(tasks_dirfd, id, tasks_dirfd, to); /* renames a link as a link */
}

long retention_empty_trash(int tasks_dirfd, const atomic_bool *stop)
{
    long n = 0;
    int fd = openat(tasks_dirfd, RETENTION_TRASH, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    DIR *d = fdopendir(fd);
    struct dirent *e;
    if (d == NULL) {
        close(fd);
        return -1;
    }
    while ((e = readdir(d)) != NULL && !(stop && atomic_load(stop))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (remove_entry(dirfd(d), e->d_name) != 0) {
            n = -1;
            break;
        }
        n++;
    }
    int saved = errno;
    closedir(d);
    errno = saved;
    return n;
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
    l->tasks[l->n] =
        (struct retention_task){.id = l->ids[l->n], .finished = finished, .terminal = terminal};
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
        bool terminal =
            fstatat(dirfd(d), result, &rs, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(rs.st_mode);
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
    size_t n;
    struct prune_item item[PRUNE_SLICE];
};

/* What the loop has handed to the reaper; one at a time. */
enum reaper_job { JOB_NONE, JOB_SCAN, JOB_TAKE_OUT, JOB_EMPTY };

struct reaper_work {
    struct workq_job q;
    enum reaper_job kind;
};

struct retention {
    struct tasks *tasks;
    struct loop *loop;
    unsigned limit_days, limit_max; /* the limits the next prune takes (0: off) */
    retention_busy_fn *busy;
    retention_pruned_fn *pruned;
    void *arg;
    char *dir; /* TASKS_DIR's real path */
    struct loop_timer *timer;
    bool running, again, stopping;
    /* One prune: the limits and clock it started with, its plan (plan.tasks[0..go) are to go,
     * oldest first) and its counts. The reaper writes plan, go and trash_left during the scan;
     * the loop reads them once the scan is reported. */
    time_t now;
    unsigned days, max;
    struct retention_list plan;
    size_t go, next;
    bool trash_left;
    size_t removed, kept_in_flight, failed;
    struct timespec started;
    struct prune_slice *slice; /* held ids being taken out (JOB_TAKE_OUT) */
    /* The reaper: a work queue at idle priority, and the one job it may hold. */
    struct workq *wq;
    struct reaper_work job;
    atomic_bool stop; /* the walk of the trash gives up when it is set */
};

static void prune_start(struct retention *r);

static uint64_t ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000u +
           (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* ----- the reaper thread ----- */

static void scan_work(struct retention *r)
{
    char err[300], trash[PATH_MAX];
    struct stat st;
    snprintf(trash, sizeof trash, "%s/%s", r->dir, RETENTION_TRASH);
    r->trash_left = lstat(trash, &st) == 0; /* maybe a crash during an earlier prune */
    if (!retention_scan(r->dir, &r->plan, err, sizeof err)) {
        log_warn("retention: %s", err);
        return;
    }
    r->go = retention_select(r->plan.tasks, r->plan.n, r->now, r->days, r->max);
}

/* The run id a task's run.json names, if any (capped, no link followed). */
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

static void take_out_work(struct retention *r, int dfd)
{
    struct prune_slice *s = r->slice;
    tasks_sync(r->tasks); /* no journal record brings a pruned task back after a crash */
    for (size_t i = 0; i < s->n && !atomic_load(&r->stop); i++) {
        struct prune_item *it = &s->item[i];
        int tfd = openat(dfd, it->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd >= 0) {
            read_run_id(tfd, it->run_id, sizeof it->run_id);
            close(tfd);
        }
        it->removed = retention_move_out(dfd, it->id) == 0;
        if (!it->removed)
            log_warn("retention: cannot prune task %s: %s", it->id, strerror(errno));
    }
}

static void empty_work(struct retention *r, int dfd)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long n = retention_empty_trash(dfd, &r->stop);
    if (n < 0)
        log_warn("retention: cannot empty %s/%s: %s", r->dir, RETENTION_TRASH, strerror(errno));
    else if (n > 0)
        log_info("retention: deleted the files of %ld pruned task%s in %llu ms", n,
                 n == 1 ? "" : "s", (unsigned long long)ms_since(&t0));
}

static void reap(struct list *batch, void *arg)
{
    struct retention *r = arg;
    LIST_FOREACH(node, batch)
    {
        enum reaper_job job = list_entry(node, struct reaper_work, q.link)->kind;
        int dfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (job == JOB_SCAN)
            scan_work(r);
        else if (dfd >= 0 && job == JOB_TAKE_OUT)
            take_out_work(r, dfd);
        else if (dfd >= 0 && job == JOB_EMPTY)
            empty_work(r, dfd);
        if (dfd >= 0)
            close(dfd);
    }
}

/* ----- the loop side ----- */

static void hand_over(struct retention *r, enum reaper_job job)
{
    r->job.kind = job;
    if (!workq_submit(r->wq, &r->job.q)) {
        log_warn("retention: cannot start the pruning thread; nothing is pruned");
        r->job.kind = JOB_NONE;
        r->running = false;
    }
}

static void prune_finish(struct retention *r)
{
    retention_list_free(&r->plan);
    r->running = false;
    if (r->again) {
        r->again = false;
        prune_start(r);
    }
}

static void report(struct retention *r)
{
    if (!r->removed && !r->failed && !r->kept_in_flight)
        log_debug("retention: nothing to prune (%zu tasks looked at in %llu ms)", r->plan.n,
                  (unsigned long long)ms_since(&r->started));
    if (r->removed || r->failed || r->kept_in_flight)
        log_event(EV_RETENTION_PRUNED,
                  LOG_FIELDS(LF_N("pruned", r->removed), LF_N("ms", ms_since(&r->started)),
                             LF_N("kept", r->kept_in_flight), LF_N("failed", r->failed)),
                  "retention: pruned %zu task%s in %llu ms (%zu in flight kept, %zu failed; "
                  "TASKS_RETENTION_DAYS=%u TASKS_MAX=%u)",
                  r->removed, r->removed == 1 ? "" : "s", (unsigned long long)ms_since(&r->started),
                  r->kept_in_flight, r->failed, r->days, r->max);
}

/* Hands the next slice to the reaper, leaving out what is in flight now and holding the rest,
 * so that nothing starts writing to them until they are out; after the last, the trash. */
static void next_slice(struct retention *r)
{
    struct prune_slice *s = NULL;
    while (r->next < r->go) {
        const char *id = r->plan.tasks[r->next++].id;
        if (r->busy(id, r->arg)) {
            r->kept_in_flight++;
            continue;
        }
        if (s == NULL)
            s = xcalloc(1, sizeof *s);
        snprintf(s->item[s->n].id, sizeof s->item[s->n].id, "%s", id);
        tasks_hold(r->tasks, id);
        if (++s->n == PRUNE_SLICE)
            break;
    }
    if (s) {
        r->slice = s;
        hand_over(r, JOB_TAKE_OUT);
        return;
    }
    report(r);
    if (r->removed || r->trash_left)
        hand_over(r, JOB_EMPTY);
    else
        prune_finish(r);
}

static void take_out_done(struct retention *r)
{
    struct prune_slice *s = r->slice;
    r->slice = NULL;
    for (size_t i = 0; i < s->n; i++) {
        tasks_release(r->tasks, s->item[i].id);
        if (!s->item[i].removed) {
            r->failed++;
            continue;
        }
        r->removed++;
        r->pruned(s->item[i].id, s->item[i].run_id, r->arg);
    }
    free(s);
    next_slice(r);
}

static void on_reaped(struct workq_job *qj, enum workq_end end, void *arg)
{
    struct retention *r = arg;
    (void)qj;
    enum reaper_job job = r->job.kind;
    r->job.kind = JOB_NONE;
    if (end != WORKQ_DONE || r->stopping)
        return;
    if (job == JOB_SCAN) {
        r->next = 0;
        next_slice(r);
    } else if (job == JOB_TAKE_OUT) {
        take_out_done(r);
    } else if (job == JOB_EMPTY) {
        prune_finish(r);
    }
}

static void prune_start(struct retention *r)
{
    r->running = true;
    r->now = time(NULL);
    r->days = r->limit_days;
    r->max = r->limit_max;
    r->go = r->next = 0;
    r->trash_left = false;
    r->removed = r->kept_in_flight = r->failed = 0;
    clock_gettime(CLOCK_MONOTONIC, &r->started);
    hand_over(r, JOB_SCAN);
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
    if (r->limit_days == 0 && r->limit_max == 0)
        return;                   /* both limits off: nothing to walk */
    if (tasks_remote(r->tasks)) { /* the records are in a database: it prunes them itself */
        tasks_prune(r->tasks, r->limit_days, r->limit_max);
        return;
    }
    if (r->running) {
        r->again = true;
        return;
    }
    prune_start(r);
}

void retention_set_limits(struct retention *r, unsigned days, unsigned max)
{
    if (r) {
        r->limit_days = days;
        r->limit_max = max;
    }
}

struct retention *retention_new(struct tasks *t, struct loop *l, unsigned days, unsigned max,
                                retention_busy_fn *busy, retention_pruned_fn *pruned, void *arg)
{
    struct retention *r = xcalloc(1, sizeof *r);
    r->tasks = t;
    r->loop = l;
    r->limit_days = days;
    r->limit_max = max;
    r->busy = busy;
    r->pruned = pruned;
    r->arg = arg;
    r->dir = xstrdup(tasks_dir(t));
    struct workq_opts o = {.name = "retention",
                           .loop = l,
                           .work = reap,
                           .done = on_reaped,
                           .arg = r,
                           .batch_max = 1,
                           .idle = true};
    r->wq = workq_new(&o);
    if (r->wq == NULL) {
        log_warn("retention: cannot set up the pruning thread's channel: %s; nothing is pruned",
                 strerror(errno));
        r->stopping = true;
    }
    return r;
}

void retention_stop(struct retention *r)
{
    if (r == NULL)
        return;
    r->stopping = true;
    loop_timer_cancel(r->timer);
    r->timer = NULL;
    atomic_store(&r->stop, true); /* what is left in the trash goes at the next start */
}

void retention_free(struct retention *r)
{
    if (r == NULL)
        return;
    retention_stop(r);
    workq_free(r->wq, WORKQ_CANCEL, 0); /* waits for the job under way */
    free(r->slice);                     /* its holds went with the task directory's state */
    retention_list_free(&r->plan);
    free(r->dir);
    free(r);
}
