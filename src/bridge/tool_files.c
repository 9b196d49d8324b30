/* tool_files.c — hermes_files: list a task's files or read one UTF-8 text file, read-only,
 * by a path that cannot leave the task's directory (taskpath checks it, tasks opens it without
 * following links). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bridge_internal.h"
#include "mcp.h"
#include "mem.h"
#include "taskfilespg.h"
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

static void answer(struct mcp_call *c, enum tasks_rc rc, json_t *out, const char *why)
{
    if (rc == TASKS_OK) {
        mcp_call_tool_result_take(c, out);
        return;
    }
    enum toolerr te = rc == TASKS_NOT_FOUND ? TE_NOT_FOUND
                      : rc == TASKS_IO      ? TE_UPSTREAM_ERROR
                                            : TE_INVALID_ARGUMENTS;
    bridge_tool_error(c, te, 0, "%s", why);
}

/* With STORE_URL: whether this replica holds the task's directory (its files are then read
 * here, as they are now; else from the copy its result's writer kept in the store). */
static bool local_dir(struct bridge *b, const char *id)
{
    char dir[PATH_MAX];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/%s", tasks_dir(b->tasks), id);
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A read from the store under way for call c. */
struct store_read {
    struct mcp_call *c;
    struct bridge *b;
    struct taskfilespg_read *rd;
};

static void read_cancelled(struct mcp_call *c, void *arg)
{
    struct store_read *sr = arg;
    (void)c;
    taskfilespg_read_cancel(sr->rd);
    free(sr);
}

static void from_store(enum tasks_rc rc, json_t *out, const char *why, void *arg)
{
    struct store_read *sr = arg;
    struct mcp_call *c = sr->c;
    unsigned wait = sr->b->files_pg ? taskfilespg_retry_after_s(sr->b->files_pg) : 0;
    free(sr);
    mcp_call_on_cancel(c, NULL, NULL);
    if (rc == TASKS_UNAVAILABLE) {
        mcp_call_unavailable(c, wait ? wait : 1,
                             "Temporarily unavailable: the task store's database cannot be "
                             "reached; try again later");
        return;
    }
    answer(c, rc, out, why);
}

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
    if (b->files_pg && !local_dir(b, id)) { /* the agent ran on another replica's machine */
        struct store_read *sr = xcalloc(1, sizeof *sr);
        sr->c = c;
        sr->b = b;
        sr->rd = taskfilespg_read(b->files_pg, id, norm, from_store, sr);
        mcp_call_on_cancel(c, read_cancelled, sr);
        return;
    }
    enum tasks_rc rc = tasks_files(b->tasks, id, norm, &out, why, sizeof why);
    answer(c, rc, out, why);
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
