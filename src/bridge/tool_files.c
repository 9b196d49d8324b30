/* tool_files.c — hermes_files: list a task's files or read one UTF-8 text file, read-only,
 * by a path that cannot leave the task's directory (taskpath checks it, tasks opens it without
 * following links). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "mcp.h"
#include "taskpath.h"
#include "tasks.h"
#include "toolargs.h"

enum { FA_ID, FA_PATH };
static const struct toolarg files_args[] = {
    ARG_ID(true),
    {.name = "path", .type = TOOLARG_STRING, .max_len = 4096,
     .description = "A path relative to the task; omit it for a listing"},
    TOOLARG_END,
};

static void hermes_files(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    char norm[1100], why[200];
    const char *reason;
    json_t *v[ARGS_MAX], *out = NULL;

    if (!toolspec_check_args(c, files_args, args, v))
        return;
    const char *id = toolargs_str(v, FA_ID), *path = toolargs_str(v, FA_PATH);
    json_t *pv = json_object_get(args, "path");
    size_t plen = path ? json_string_length(pv) : 0;
    if (!taskpath_rel_ok(path ? path : "", plen, norm, sizeof norm, &reason)) {
        bridge_tool_error(c, TE_INVALID_ARGUMENTS, 0, "'path': %s", reason);
        return;
    }
    /* Another caller's task, or one of an agent this principal may not use: the same answer
     * as a task that does not exist. */
    if (!taskowner_visible(b, c, id) || !tasks_exists(b->tasks, id)) {
        taskowner_task_not_found(c, id);
        return;
    }
    enum tasks_rc rc = tasks_files(b->tasks, id, norm, &out, why, sizeof why);
    if (rc == TASKS_OK) {
        mcp_call_tool_result_take(c, out);
        return;
    }
    bridge_tool_error(c, rc == TASKS_NOT_FOUND ? TE_NOT_FOUND : TE_INVALID_ARGUMENTS, 0, "%s", why);
}

void tool_files_register(struct bridge *b)
{
    bridge_add_tool(
        b,
        &(struct mcp_tool_def){
            .name = "hermes_files",
            .title = "Files of a task",
            .description = "List a task's files, or read one UTF-8 text file (at most 200 KiB) by "
                           "its path relative to the task. Read-only; no '..', absolute paths, "
                           "backslashes or symbolic links.",
            .input_schema = toolargs_schema(files_args),
            .output_schema = toolerr_output_schema(toolspec_schema_obj(
                "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"path\":{"
                "\"type\":"
                "\"string\"},\"entries\":{\"type\":\"array\"},\"count\":{\"type\":\"integer\"},"
                "\"truncated\":{\"type\":\"boolean\"},\"size\":{\"type\":\"integer\"},\"mtime\":{"
                "\"type\":\"integer\"},\"encoding\":{\"type\":\"string\"},\"content\":{\"type\":"
                "\"string\"}},\"required\":[\"id\",\"path\"]}")),
            .annotations = toolspec_annotations(true, false, true, false),
            .handler = hermes_files,
            .arg = b,
            .scope = SCOPE_READ});
}
