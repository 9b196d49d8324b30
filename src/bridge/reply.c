/* reply.c — how a bridge tool answers: tool error results (codes from toolerr), answers
 * held back until the task directory has made durable what they report, and the mapping of an
 * agent's failed answer to a tool error that never echoes the agent's body. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentclient.h"
#include "bridge_internal.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "tasks.h"
#include "timefmt.h"
#include "utf8.h"

json_t *bridge_iso_now(void)
{
    char s[TIMEFMT_SIZE];
    return json_string(timefmt_iso(time(NULL), s));
}

void bridge_tool_error(struct mcp_call *c, enum toolerr code, unsigned retry_after, const char *fmt,
                       ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_call_result_take(c, tool_error_vjson(code, retry_after, fmt, ap));
    va_end(ap);
}

/* ---------- answers that wait for the task directory ---------- */

/* A call's answer held back until the task directory operation queued before it is durable:
 * a client that got an answer can rely on what is on disk. */
struct held {
    struct mcp_call *call; /* NULL once the call went away, or when there was none */
    json_t *result;        /* the tools/call result to send */
    /* Then, once durable (may be NULL): what else waits for the file. */
    void (*after)(struct bridge *b, const char *id);
    struct bridge *b;
    char id[129];
};

static void held_cancelled(struct mcp_call *c, void *arg)
{
    struct held *h = arg;
    (void)c;
    h->call = NULL;
}

static void held_stored(enum tasks_rc rc, void *arg)
{
    struct held *h = arg;
    json_t *res = h->result;
    if (h->call) {
        mcp_call_on_cancel(h->call, NULL, NULL);
        if (rc != TASKS_OK && !json_is_true(json_object_get(res, "isError"))) {
            json_decref(res); /* the outcome is not durable: do not report it as one */
            res = tool_error_json(TE_UPSTREAM_ERROR, 0,
                                  "the result could not be stored in the task directory");
        }
        mcp_call_result_take(h->call, res);
    } else {
        json_decref(res);
    }
    if (rc == TASKS_OK && h->after)
        h->after(h->b, h->id);
    free(h);
}

/* Takes result; NULL when there is no call to answer and nothing else waits. */
static struct held *hold(struct mcp_call *c, json_t *result, struct bridge *b, const char *id,
                         void (*after)(struct bridge *b, const char *id))
{
    if (c == NULL && after == NULL) {
        json_decref(result);
        return NULL;
    }
    struct held *h = xcalloc(1, sizeof *h);
    h->call = c;
    h->result = result;
    h->after = after;
    h->b = b;
    snprintf(h->id, sizeof h->id, "%s", id);
    if (c)
        mcp_call_on_cancel(c, held_cancelled, h);
    return h;
}

/* Queues json as the task's file name; c (if any) gets result once that is durable, and
 * then after (if any) runs. */
void bridge_store_then(struct bridge *b, const char *id, const char *name, json_t *json,
                       struct mcp_call *c, json_t *result,
                       void (*after)(struct bridge *b, const char *id))
{
    struct held *h = hold(c, result, b, id, after);
    if (tasks_write(b->tasks, id, name, json, h ? held_stored : NULL, h) != TASKS_OK && h)
        held_stored(TASKS_INVALID, h);
}

void bridge_store_then_answer(struct bridge *b, const char *id, const char *name, json_t *json,
                              struct mcp_call *c, json_t *result)
{
    bridge_store_then(b, id, name, json, c, result, NULL);
}

/* Queues removing the task's file name; c (if any) gets result once it is gone. */
void bridge_remove_then_answer(struct bridge *b, const char *id, const char *name,
                               struct mcp_call *c, json_t *result)
{
    struct held *h = hold(c, result, b, id, NULL);
    if (tasks_remove(b->tasks, id, name, h ? held_stored : NULL, h) != TASKS_OK && h)
        held_stored(TASKS_INVALID, h);
}

/* Maps an agent answer that is not a success to a tool error (never echoing its body). */
json_t *bridge_upstream_error(const char *agent, const struct agent_result *res, const char *what)
{
    if (res->timed_out)
        return tool_error_json(TE_UPSTREAM_TIMEOUT, 0, "the agent did not answer in time (%s)",
                               what);
    if (res->too_big)
        return tool_error_json(TE_UPSTREAM_ERROR, 0,
                               "the agent's answer was larger than the cap (%s)", what);
    if (res->failed || res->status == 0) {
        log_warn("agent %s unreachable (%s): %s", agent, what, res->error ? res->error : "?");
        return tool_error_json(TE_UPSTREAM_ERROR, 0, "the agent '%s' could not be reached", agent);
    }
    log_debug("agent %s answered %ld to %s: %.300s", agent, res->status, what, res->body);
    if (res->status == 401) {
        log_event(EV_AGENT_KEY_REJECTED, LOG_FIELDS(LF_S("agent", agent)),
                  "agent %s rejected our API key (401); check its key (API_SERVER_KEY in "
                  "HERMES_ENV_PATH, or key_env/key_file in the registry)",
                  agent);
        return tool_error_json(TE_UPSTREAM_AUTH, 0,
                               "the agent '%s' rejected the bridge's credentials", agent);
    }
    if (res->status == 429 || res->status == 503)
        return tool_error_json(TE_BUSY, res->retry_after ? res->retry_after : 1,
                               "the agent '%s' is busy; retry later", agent);
    if (res->status == 404 && strstr(res->body, "run_not_found"))
        return tool_error_json(TE_NOT_FOUND, 0, "the agent does not know this run");
    return tool_error_json(TE_UPSTREAM_ERROR, 0, "the agent '%s' answered with HTTP %ld", agent,
                           res->status);
}

void bridge_upstream_fail(struct mcp_call *c, const char *agent, const struct agent_result *res,
                          const char *what)
{
    mcp_call_result_take(c, bridge_upstream_error(agent, res, what));
}
