/* retention.h — which finished tasks TASKS_RETENTION_DAYS and TASKS_MAX remove (issue 12).
 * Kept apart from the directory walk and the removals so that the rule — terminal tasks only,
 * never one in flight, oldest first — is one small pure function that unit tests pin down.
 * A task's age is the time its result.json was written (its mtime): that is when the task
 * finished, and it does not change when an operator merely reads or lists the directory. */
#ifndef HM_RETENTION_H
#define HM_RETENTION_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct retention_task {
    const char *id;
    time_t finished; /* mtime of result.json */
    bool terminal;   /* result.json exists and its status is terminal */
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

#endif
