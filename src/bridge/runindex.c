/* runindex.c — the run index (b->runs: run id -> task id), by which hermes_status and
 * hermes_cancel reach a task from its run id. With task files it is the whole index: filled at
 * start-up from each task's run.json and by every submission the agent accepts; retention takes
 * pruned tasks out (bridge.c). With a database the index is the database's (hm_task.run_id):
 * b->runs then holds the runs followed here, and an entry a lookup learnt only for the call
 * that asked (taskload.c), so it stays as small as the jobs whatever the lookups. */
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "log.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"

void bridge_run_index(struct bridge *b, const char *run_id, const char *task_id)
{
    const char *was = strmap_get(b->runs, run_id);
    if (was && strcmp(was, task_id) != 0 && tasks_exists(b->tasks, was)) {
        log_event(EV_RUN_CLAIMED_TWICE,
                  LOG_FIELDS(LF_S("run", run_id), LF_S("task", was), LF_S("other", task_id)),
                  "run %s is reported for task %s and for task %s (two agents with the same run "
                  "ids, or one run replayed for both): hermes_status and hermes_cancel by run_id "
                  "reach task %s only; task %s is reached by its id",
                  run_id, was, task_id, was, task_id);
        return;
    }
    free(strmap_put(b->runs, run_id, xstrdup(task_id)));
}

void bridge_run_forget(struct bridge *b, const char *run_id, const char *task_id)
{
    if (!tasks_remote(b->tasks) || strmap_get(b->jobs, task_id))
        return;
    const char *was = strmap_get(b->runs, run_id);
    if (was && strcmp(was, task_id) == 0)
        free(strmap_del(b->runs, run_id));
}
