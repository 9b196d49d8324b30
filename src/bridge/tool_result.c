/* tool_result.c — hermes_result: the stored result of a task, the durable source of truth
 * once it ended (the same projection hermes_task returns). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "mcp.h"
#include "strmap.h"
#include "tasks.h"
#include "toolargs.h"

static const struct toolarg result_args[] = {ARG_ID(true), TOOLARG_END};

enum task_state tool_result_task_state(struct bridge *b, const char *id, json_t **result, int *rc)
{
    json_t *res = NULL;
    enum tasks_rc r = tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &res);
    if (rc)
        *rc = (int)r;
    if (r == TASKS_OK) {
        if (result)
            *result = res;
        else
            json_decref(res);
        return TASK_ENDED;
    }
    if (r != TASKS_NOT_FOUND)
        return TASK_UNREADABLE;
    return strmap_get(b->jobs, id) || tasks_pending(b->tasks, id) || tasks_exists(b->tasks, id)
               ? TASK_RUNNING
               : TASK_UNKNOWN;
}

static void hermes_result(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX], *res = NULL;

    if (!toolspec_check_args(c, result_args, args, v))
        return;
    const char *id = toolargs_str(v, 0);
    /* Another caller's task, or one of an agent this principal may not use: as if it did not
     * exist. */
    if (!taskowner_visible(b, c, id)) {
        taskowner_task_not_found(c, id);
        return;
    }
    int rc;
    switch (tool_result_task_state(b, id, &res, &rc)) {
    case TASK_ENDED:
        mcp_call_tool_result_take(c, results_public(res));
        json_decref(res);
        return;
    case TASK_RUNNING:
        bridge_tool_error(c, TE_NOT_FOUND, 0, "task '%s' has no result yet; it is still running",
                          id);
        return;
    case TASK_UNKNOWN:
        taskowner_task_not_found(c, id);
        return;
    default:
        if (rc == TASKS_TOO_BIG)
            bridge_tool_error(c, TE_UPSTREAM_ERROR, 0, "result.json is larger than %d KiB",
                              TASKS_FILE_MAX / 1024);
        else
            bridge_tool_error(c, TE_UPSTREAM_ERROR, 0, "result.json of task '%s' is unreadable",
                              id);
        return;
    }
}

const struct bridge_tool_spec tool_result_spec = {
    .name = "hermes_result",
    .title = "Result of a task",
    .description = "The stored result of a task: {id, status, summary, artifacts, "
                   "next_steps, details?}. The durable source of truth once a task ended.",
    .args = result_args,
    .output = toolspec_result_output,
    .hints = {.read_only = true, .idempotent = true},
    .scope = SCOPE_READ,
    .handler = hermes_result,
};
