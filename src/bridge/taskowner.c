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
 * carry a digest of the owner (taskowner_tag), so another principal's "work" session or re-used
 * task id names another conversation and another run at the agent. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "crypto.h"
#include "hex.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"

void taskowner_tag(const char *owner, char out[OWNER_TAG_SIZE])
{
    /* The owner token's names (and an unauthenticated server's, where every caller is one) stay
     * as they were before owners were recorded, so its conversations at the agent go on. */
    if (owner == NULL || strcmp(owner, "p:owner") == 0 || strcmp(owner, "anonymous") == 0) {
        out[0] = '\0';
        return;
    }
    unsigned char d[32];
    crypto_sha256(owner, strlen(owner), d);
    hex_encode(d, 8, out); /* 16 hex digits, then the separator */
    out[16] = '-';
    out[17] = '\0';
}

enum task_reach taskowner_access(struct bridge *b, const struct mcp_call *c, const char *id,
                                 json_t **req_out)
{
    json_t *req = NULL;
    struct job *j = strmap_get(b->jobs, id);
    struct pending_owner *p = strmap_get(b->owners, id);

    if (req_out)
        *req_out = NULL;
    enum tasks_rc rc = tasks_read(b->tasks, id, "request.json", TASKS_REQUEST_MAX, &req);
    /* Nothing at all under this id (a directory without request.json is an unowned task). */
    if (rc == TASKS_NOT_FOUND && !j && !p && !tasks_pending(b->tasks, id) &&
        !tasks_exists(b->tasks, id))
        return TASK_ABSENT;
    /* In flight, whose it is is known before request.json is durable; else the file says.
     * Unreadable, damaged, or without an owner: nobody's but the administrators'. */
    const char *owner = json_string_value(json_object_get(req, "owner"));
    if (p)
        owner = p->owner;
    else if (j && j->owner)
        owner = j->owner;
    const char *agent = json_string_value(json_object_get(req, "agent"));
    if (agent == NULL && j)
        agent = j->agent;
    bool yours = (owner && strcmp(owner, mcp_call_caller(c)) == 0) || mcp_call_sees_all(c);
    /* A task of an agent outside the caller's agents: list is one it cannot see either (one
     * whose request.json names none, only a caller of every agent; one whose request.json
     * cannot be read is left to the owner rule above). */
    bool agent_ok =
        mcp_call_may_use_agent(c, NULL) || (agent ? agent_allowed_for(c, agent) : req == NULL);
    enum task_reach r = yours && agent_ok ? TASK_YOURS : TASK_NOT_YOURS;
    if (req_out && r == TASK_YOURS)
        *req_out = req;
    else
        json_decref(req);
    return r;
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

enum tasks_rc taskowner_write_request(struct bridge *b, const char *id, json_t *req,
                                      const char *owner)
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

bool taskowner_visible(struct bridge *b, const struct mcp_call *c, const char *id)
{
    return taskowner_access(b, c, id, NULL) != TASK_NOT_YOURS;
}

void taskowner_task_not_found(struct mcp_call *c, const char *id)
{
    bridge_tool_error(c, TE_NOT_FOUND, 0, "no task with id '%s'", id);
}

void taskowner_run_not_found(struct mcp_call *c, const char *run_id)
{
    bridge_tool_error(c, TE_NOT_FOUND, 0, "no task of this bridge has run '%.100s'", run_id);
}
