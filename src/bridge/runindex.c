/* runindex.c — the run index (b->runs: run id -> task id), by which hermes_status and
 * hermes_cancel reach a task from its run id. Filled at start-up from each task's run.json and
 * by every submission the agent accepts; retention takes pruned tasks out (bridge.c). */
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
