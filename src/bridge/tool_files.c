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
    {.name = "path",
     .type = TOOLARG_STRING,
     .max_len = 4096,
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

static const struct toolout files_output[] = {
    {.name = "id", .type = TOOLOUT_STRING, .required = true},
    {.name = "path", .type = TOOLOUT_STRING, .required = true},
    {.name = "entries", .type = TOOLOUT_ARRAY},
    {.name = "count", .type = TOOLOUT_INT},
    {.name = "truncated", .type = TOOLOUT_BOOL},
    {.name = "size", .type = TOOLOUT_INT},
    {.name = "mtime", .type = TOOLOUT_INT},
    {.name = "encoding", .type = TOOLOUT_STRING},
    {.name = "content", .type = TOOLOUT_STRING},
    TOOLOUT_END,
};

const struct bridge_tool_spec tool_files_spec = {
    .name = "hermes_files",
    .title = "Files of a task",
    .description = "List a task's files, or read one UTF-8 text file (at most 200 KiB) by "
                   "its path relative to the task. Read-only; no '..', absolute paths, "
                   "backslashes or symbolic links.",
    .args = files_args,
    .output = files_output,
    .hints = {.read_only = true, .idempotent = true},
    .scope = SCOPE_READ,
    .handler = hermes_files,
};
