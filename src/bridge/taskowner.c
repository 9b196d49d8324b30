/* taskowner.c — whose a task is: one rule for the hermes_* tools and for MCP tasks (mcptask.c).
 *
 * Every task and its run belong to the principal that created it: hermes_task records the caller
 * (mcp_call_caller: a principal's name, never a credential) as "owner" in request.json, which is
 * written atomically before any other file of the task and so survives a restart with it. Only
 * that caller, the owner token and a principal holding hermes:admin reach the task; anyone else
 * gets the answer a task that does not exist gets. A task with no recorded owner (written before
 * owners were enforced, or whose request.json is missing) is reached only by the owner token and
 * hermes:admin.
 *
 * What the agent is told is its owner's too: the session header and the run's Idempotency-Key
 * carry a digest of the owner (owner_tag), so another principal's "work" session or re-used task
 * id names another conversation and another run at the agent. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "crypto.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"

void owner_tag(const char *owner, char out[OWNER_TAG_SIZE])
{
    /* The owner token's names (and an unauthenticated server's, where every caller is one) stay
     * as they were before owners were recorded, so its conversations at the agent go on. */
    if (owner == NULL || strcmp(owner, "p:owner") == 0 || strcmp(owner, "anonymous") == 0) {
        out[0] = '\0';
        return;
    }
    unsigned char d[32];
    crypto_sha256(owner, strlen(owner), d);
    crypto_hex(d, 8, out); /* 16 hex digits, then the separator */
    out[16] = '-';
    out[17] = '\0';
}

enum task_access task_access(struct bridge *b, const struct mcp_call *c, const char *id)
{
    json_t *req = NULL;
    struct job *j = strmap_get(b->jobs, id);
    enum task_access acc;

    struct pending_owner *p = strmap_get(b->owners, id);
    const char *known = p ? p->owner : j ? j->owner : NULL;
    if (known) { /* in flight: whose it is is known before request.json is durable */
        acc = strcmp(known, mcp_call_caller(c)) == 0 ? TASK_YOURS : TASK_NOT_YOURS;
    } else {
        enum tasks_rc rc = tasks_read(b->tasks, id, "request.json", 64 * 1024, &req);
        const char *owner = json_string_value(json_object_get(req, "owner"));
        /* Unreadable, damaged, or without an owner: nobody's but the administrators'. */
        acc = owner && strcmp(owner, mcp_call_caller(c)) == 0 ? TASK_YOURS : TASK_NOT_YOURS;
        json_decref(req);
        /* Nothing at all under this id (a directory without request.json is an unowned task). */
        if (rc == TASKS_NOT_FOUND && !j && !tasks_pending(b->tasks, id) &&
            !tasks_exists(b->tasks, id))
            return TASK_ABSENT;
    }
    if (acc == TASK_NOT_YOURS && mcp_call_sees_all(c))
        acc = TASK_YOURS;
    return acc;
}

/* request.json is durable (or could not be written): from now on it tells whose the task is. */
static void request_written(enum tasks_rc rc, void *arg)
{
    struct pending_owner *p = arg;
    (void)rc;
    if (strmap_get(p->b->owners, p->id) == p) /* not replaced by a later write of the task */
        strmap_del(p->b->owners, p->id);
    free(p->owner);
    free(p);
}

enum tasks_rc task_write_request(struct bridge *b, const char *id, json_t *req, const char *owner)
{
    struct pending_owner *p = xcalloc(1, sizeof *p);
    p->b = b;
    p->owner = xstrdup(owner);
    snprintf(p->id, sizeof p->id, "%s", id);
    enum tasks_rc rc = tasks_write(b->tasks, id, "request.json", req, request_written, p);
    if (rc != TASKS_OK) { /* done is not called */
        free(p->owner);
        free(p);
        return rc;
    }
    /* The one before, if any, frees itself when its own write is done. */
    strmap_put(b->owners, p->id, p);
    return rc;
}

bool task_visible(struct bridge *b, const struct mcp_call *c, const char *id)
{
    return task_access(b, c, id) != TASK_NOT_YOURS && task_allowed_for(b, c, id);
}

void task_not_found(struct mcp_call *c, const char *id)
{
    tool_error(c, TE_NOT_FOUND, 0, "no task with id '%s'", id);
}

void run_not_found(struct mcp_call *c, const char *run_id)
{
    tool_error(c, TE_NOT_FOUND, 0, "no task of this bridge has run '%.100s'", run_id);
}
