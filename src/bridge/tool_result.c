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

static void hermes_result(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX], *res = NULL;

    if (!check_args(c, result_args, args, v))
        return;
    const char *id = toolargs_str(v, 0);
    /* Another caller's task, or one of an agent this principal may not use: as if it did not
     * exist. */
    if (!task_visible(b, c, id)) {
        task_not_found(c, id);
        return;
    }
    switch (tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &res)) {
    case TASKS_OK:
        mcp_call_tool_result_take(c, result_public(res));
        json_decref(res);
        return;
    case TASKS_NOT_FOUND:
        if (strmap_get(b->jobs, id) || tasks_pending(b->tasks, id) || tasks_exists(b->tasks, id))
            tool_error(c, TE_NOT_FOUND, 0, "task '%s' has no result yet; it is still running", id);
        else
            task_not_found(c, id);
        return;
    case TASKS_TOO_BIG:
        tool_error(c, TE_UPSTREAM_ERROR, 0, "result.json is larger than %d KiB",
                   TASKS_FILE_MAX / 1024);
        return;
    default:
        tool_error(c, TE_UPSTREAM_ERROR, 0, "result.json of task '%s' is unreadable", id);
        return;
    }
}

void tool_result_register(struct bridge *b)
{
    bridge_add_tool(b, &(struct mcp_tool_def){
        .name = "hermes_result",
        .title = "Result of a task",
        .description = "The stored result of a task: {id, status, summary, artifacts, "
                       "next_steps, details?}. The durable source of truth once a task ended.",
        .input_schema = toolargs_schema(result_args),
        .output_schema = toolerr_output_schema(schema_obj(RESULT_SCHEMA)),
        .annotations = tool_annotations(true, false, true, false),
        .handler = hermes_result,
        .arg = b,
        .scope = "hermes:read"});
}
