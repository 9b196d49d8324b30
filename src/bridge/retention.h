/* retention.h — which finished tasks TASKS_RETENTION_DAYS and TASKS_MAX remove, and
 * the server's pruner that removes them without stalling the loop.
 *
 * The rule — terminal tasks only, never one in flight, oldest first — is one small pure
 * function (retention_select) that unit tests pin down; the directory walk (retention_scan) and
 * the removal (retention_remove_task) serve both the server and `hermes-mcp tasks`. A task is
 * terminal when its result.json exists: the server writes it last, when the task has finished.
 * A task's age is the time its result.json was written (its mtime): that is when the task
 * finished, and it does not change when an operator merely reads or lists the directory. */
#ifndef HM_RETENTION_H
#define HM_RETENTION_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct retention_task {
    const char *id;
    time_t finished; /* mtime of result.json (of the directory while there is none) */
    bool terminal;   /* result.json exists */
    bool in_flight;  /* a job in memory, a followed run or a queued write for it */
};

/* Sorts tasks oldest first (ties by id) and returns how many to prune: those are moved to the
 * front, oldest first, so tasks[0..return) go. A task goes when it is terminal, not in flight,
 * and either finished more than days ago (days > 0) or is beyond the newest max such tasks
 * (max > 0). Everything else stays, whatever its age. */
size_t retention_select(struct retention_task *tasks, size_t n, time_t now, unsigned days,
                        unsigned max);

/* Removes TASKS_DIR/<id> and everything under it, given an open descriptor of TASKS_DIR.
 * Never follows a link: every entry is examined with lstat semantics and removed relative to
 * its parent's descriptor (unlinkat), so a symlink inside the task, or a task id that is itself
 * a symlink, is unlinked as a link and its target is left alone; ids that are not task ids
 * (taskpath_id_ok) are refused. Blocking file-system work: call it off the loop thread.
 * Returns 0, or -1 with errno set (the removal may then be partial). */
int retention_remove_task(int tasks_dirfd, const char *id);

/* Pruning is two steps. retention_move_out renames TASKS_DIR/<id> into TASKS_DIR/.pruned/ (a
 * name no task id can have), one cheap atomic step: from then on the id is free, and a new task
 * of that id never meets the old files. retention_empty_trash then deletes what is in the trash
 * (also what a crash left there), the slow part, which may run at low priority; stop (may be
 * NULL) is checked between entries. Neither follows a link; take_out refuses ids that are not
 * task ids. take_out: 0, or -1 with errno. empty_trash: entries deleted, or -1 with errno. */
#define RETENTION_TRASH ".pruned"
#define RETENTION_NAME_MAX 200
int retention_move_out(int tasks_dirfd, const char *id);
long retention_empty_trash(int tasks_dirfd, const atomic_bool *stop);

/* Every task directory of TASKS_DIR (entries whose name is a task id and which are directories,
 * not links), unsorted. Blocking: off the loop thread, or in a command. */
struct retention_list {
    struct retention_task *tasks;
    char **ids; /* owns tasks[i].id */
    size_t n, cap;
};
bool retention_scan(const char *dir, struct retention_list *out, char *err, size_t errlen);
void retention_list_free(struct retention_list *l); /* NULL-safe; leaves it empty */

/* ---------- the server's pruner (loop thread) ---------- */

struct tasks;
struct loop;
struct retention;

/* True when the task is in flight (a job, a followed run, a queued write): never pruned. */
typedef bool retention_busy_fn(const char *id, void *arg);
/* A task was removed from disk; run_id is what its run.json named ("" if none). */
typedef void retention_pruned_fn(const char *id, const char *run_id, void *arg);

/* The walk, the take-outs and the deletion run on one thread of the pruner's own, at the lowest
 * CPU priority, in slices; the loop only hands work over and takes reports back. Each slice is
 * checked against busy on the loop just before it is handed over, and its tasks are held
 * (tasks_hold) until they are out, so no write for them can start meanwhile. days and max are
 * TASKS_RETENTION_DAYS and TASKS_MAX (0: that limit off). */
struct retention *retention_new(struct tasks *t, struct loop *l, unsigned days, unsigned max,
                                retention_busy_fn *busy, retention_pruned_fn *pruned, void *arg);
/* New limits (a reload), used from the next prune on. NULL-safe. */
void retention_set_limits(struct retention *r, unsigned days, unsigned max);
/* Prunes now (start, reload) and again every hour from now; a prune asked for while one runs
 * runs once more after it. */
void retention_prune(struct retention *r);
/* Before tasks_free: stops the timer and any further slice; no callback runs afterwards. */
void retention_stop(struct retention *r);
void retention_free(struct retention *r); /* NULL-safe; after tasks_free */

#endif
