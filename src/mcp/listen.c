/* listen.c — subscriptions/listen (MCP 2026-07-28): a long-lived POST whose SSE response
 * carries the notifications a client opted into, each tagged with the listen request's id.
 *
 * What this server can announce: task status (notifications/tasks, for the task ids the
 * filter names, with the tasks extension). Its tool, prompt and resource lists do not change
 * while it runs (discover advertises no listChanged and no subscribe), so those filter fields
 * are acknowledged as not honoured, as the revision asks: the acknowledgement, always the
 * first frame, carries only what will be sent. A stream ends when the client closes it; a
 * comment line every LISTEN_KEEPALIVE_MS keeps proxies (and the client) from taking a quiet
 * stream for a dead one. A subscription is the caller's: a notification about a task goes
 * only to streams opened by the caller that owns the task. */
#include "listen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "era.h"
#include "exchange.h"
#include "httpd.h"
#include "loop.h"
#include "mem.h"
#include "methods.h"
#include "stream.h"

#define LISTEN_KEEPALIVE_MS 20000
#define LISTEN_MAX_TASK_IDS 256
#define SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

struct listen {
    struct list link; /* in the server's listens */
    struct mcp_server *srv;
    struct mcp_call *call;
    json_t *task_ids; /* object: id -> true; NULL: no task notifications */
    struct loop_timer *keepalive;
};

static void listen_free(struct listen *l)
{
    list_unlink(&l->link);
    loop_timer_cancel(l->keepalive);
    json_decref(l->task_ids);
    free(l);
}

/* The client closed the stream (or the server is shutting down). */
static void listen_cancelled(struct mcp_call *c, void *arg)
{
    (void)c;
    listen_free(arg);
}

static void keepalive(struct loop *lp, void *arg)
{
    struct listen *l = arg;
    (void)lp;
    l->keepalive = NULL;
    struct mcp_exchange *ex = l->call->ex;
    if (ex && ex->stream && ex->stream->req)
        hreq_stream_write(ex->stream->req, ": keepalive\n\n", 13);
    l->keepalive = loop_timer_add(l->srv->loop, LISTEN_KEEPALIVE_MS, keepalive, l);
}

/* The notification msg_take with the subscription's id in params._meta, on l's stream. */
static void listen_send(struct listen *l, json_t *msg_take)
{
    json_t *params = json_object_get(msg_take, "params");
    json_t *meta = json_object_get(params, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    json_object_set(meta, SUBSCRIPTION_ID, l->call->id);
    mcp_call_send_notification(l->call, msg_take);
}

/* Checks the filter's taskIds; false (answered) when it is malformed. */
static bool read_task_ids(struct rpc_ctx *x, struct jrpc_msg *m, json_t *ids, json_t **out)
{
    *out = NULL;
    if (ids == NULL)
        return true;
    bool ok = json_is_array(ids) && json_array_size(ids) <= LISTEN_MAX_TASK_IDS;
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) ok =
        ok && jrpc_str(v) && json_string_length(v) > 0 && json_string_length(v) <= 128;
    if (!ok) {
        mcp_answer(x,
                   jrpc_error(m->id, JRPC_INVALID_PARAMS,
                              "Invalid params: notifications.taskIds must be an array of at most "
                              "256 task ids"));
        return false;
    }
    *out = json_object();
    json_array_foreach(ids, i, v) json_object_set_new(*out, json_string_value(v), json_true());
    return true;
}

void listen_start(struct rpc_ctx *x, struct jrpc_msg *m)
{
    json_t *filter = json_object_get(m->params, "notifications");
    if (filter && !json_is_object(filter)) {
        mcp_answer(x, jrpc_error(m->id, JRPC_INVALID_PARAMS,
                                 "Invalid params: notifications must be an object"));
        return;
    }
    json_t *task_ids;
    if (!read_task_ids(x, m, json_object_get(filter, "taskIds"), &task_ids))
        return;
    bool has_ext =
        json_object_get(json_object_get(x->ex->caps, "extensions"), MCP_TASKS_EXTENSION) != NULL;
    if (task_ids && !has_ext) {
        json_decref(task_ids);
        mcp_answer(x, era_missing_tasks(m->id, "Missing required client capability: task "
                                               "notifications need the tasks extension "
                                               "(" MCP_TASKS_EXTENSION ")"));
        return;
    }
    if (!x->ex->accepts_sse) {
        json_decref(task_ids);
        mcp_answer(x,
                   jrpc_error(m->id, JRPC_INVALID_REQUEST,
                              "Invalid Request: subscriptions/listen answers with an SSE stream; "
                              "send Accept: text/event-stream"));
        return;
    }
    if (!mcp_has_tasks(x->srv)) { /* nothing could ever be sent about tasks */
        json_decref(task_ids);
        task_ids = NULL;
    }
    struct mcp_call *c = mcp_call_new(x, m);
    /* A subscription lasts as long as the client wants it: no deadline, and a drain does not
     * wait for it (mcp_end_subscriptions closes it gracefully). */
    mcp_call_make_lasting(c);
    struct listen *l = xcalloc(1, sizeof *l);
    l->srv = x->srv;
    l->call = c;
    l->task_ids = task_ids;
    list_push_front(&x->srv->listens, &l->link);
    mcp_call_on_cancel(c, listen_cancelled, l);
    /* The ids are acknowledged as given: whether one is the caller's task is not said here
     * (that would tell an id of another principal's task from a made-up one); notifications
     * go only to the task's owner (mcp_task_notify). */
    json_t *honoured = json_object();
    if (task_ids) {
        json_t *ids = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(task_ids, k, v)
        {
            (void)v;
            json_array_append_new(ids, json_string(k));
        }
        json_object_set_new(honoured, "taskIds", ids);
    }
    listen_send(l, jrpc_notification("notifications/subscriptions/acknowledged",
                                     json_pack("{s:o}", "notifications", honoured)));
    l->keepalive = loop_timer_add(x->srv->loop, LISTEN_KEEPALIVE_MS, keepalive, l);
}

bool mcp_task_watched(const struct mcp_server *s, const char *task_id)
{
    LIST_FOREACH(node, &s->listens)
    {
        const struct listen *l = list_entry(node, struct listen, link);
        if (l->task_ids && json_object_get(l->task_ids, task_id))
            return true;
    }
    return false;
}

json_t *mcp_task_watched_ids(const struct mcp_server *s)
{
    json_t *ids = json_object();
    LIST_FOREACH(node, &s->listens)
    {
        const struct listen *l = list_entry(node, struct listen, link);
        if (l->task_ids)
            json_object_update(ids, l->task_ids);
    }
    return ids;
}

void mcp_task_notify(struct mcp_server *s, const char *caller, json_t *task)
{
    const char *id = json_string_value(json_object_get(task, "taskId"));
    if (id == NULL)
        return;
    LIST_FOREACH(node, &s->listens)
    {
        struct listen *l = list_entry(node, struct listen, link);
        if (l->task_ids && json_object_get(l->task_ids, id) && strcmp(l->call->caller, caller) == 0)
            listen_send(l, jrpc_notification("notifications/tasks", json_deep_copy(task)));
    }
}

void mcp_end_subscriptions(struct mcp_server *s)
{
    /* Each finish frees its listen (the cancel callback is cleared first): take the head. */
    while (!list_empty(&s->listens)) {
        struct listen *l = list_entry(list_first(&s->listens), struct listen, link);
        struct mcp_call *c = l->call;
        json_t *result =
            json_pack("{s:s, s:{s:O}}", "resultType", "complete", "_meta", SUBSCRIPTION_ID, c->id);
        mcp_call_on_cancel(c, NULL, NULL);
        listen_free(l);
        mcp_call_result_take(c, result);
    }
}
