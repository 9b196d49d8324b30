/* taskwatch.c — with the task records in a database, a task's end reaches the
 * subscriptions/listen streams of every replica: the replica that stores a result announces it
 * (a NOTIFY carrying the task id, sent at the commit: taskspg.c), and each replica with a
 * stream watching that id reads the task's row, then sends notifications/tasks as it would for
 * a task it ended itself (mcptask.c's task_ended). The replica that stored the result hears
 * its own announcement too, so every replica tells its streams the same way, once.
 *
 * A replica whose connection to the database dropped may have missed announcements: once it
 * is back it reads every task its streams watch, and tells them of those that ended and were
 * not announced here already (the last HEARD_MAX ids announced are remembered). Loop thread
 * only. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"
#include "taskspg.h"

#define HEARD_MAX 1024

struct taskwatch {
    struct bridge *b;
    struct strmap *heard; /* ids announced (the value: their slot in ring) */
    char *ring[HEARD_MAX];
    size_t next;
    bool stopped;
};

static void remember(struct taskwatch *w, const char *id)
{
    if (strmap_get(w->heard, id))
        return;
    char *old = w->ring[w->next];
    if (old) {
        strmap_del(w->heard, old);
        free(old);
    }
    w->ring[w->next] = xstrdup(id);
    strmap_put(w->heard, w->ring[w->next], w->ring[w->next]);
    w->next = (w->next + 1) % HEARD_MAX;
}

/* A load of a watched task: what is in flight when the bridge stops finds w stopped. */
struct watched_load {
    struct taskwatch *w;
    bool catch_up; /* after an outage: told only when it ended and was not announced */
};

static void loaded(enum tasks_rc rc, const char *task_id, void *arg)
{
    struct watched_load *wl = arg;
    struct taskwatch *w = wl->w;
    bool catch_up = wl->catch_up;
    free(wl);
    if (rc != TASKS_OK || w->stopped || w->b->task_ended == NULL)
        return;
    struct bridge *b = w->b;
    const char *text;
    if (taskspg_read(tasks_pg(b->tasks), task_id, 2, &text) != TASKS_OK)
        return; /* no result (yet): nothing ended */
    if (catch_up && strmap_get(w->heard, task_id))
        return;
    remember(w, task_id);
    b->task_ended(b, task_id);
}

static void load(struct taskwatch *w, const char *id, bool catch_up)
{
    struct watched_load *wl = xcalloc(1, sizeof *wl);
    wl->w = w;
    wl->catch_up = catch_up;
    tasks_load(w->b->tasks, id, NULL, loaded, wl);
}

static void ended(const char *id, void *arg)
{
    struct taskwatch *w = arg;
    struct bridge *b = w->b;
    if (id) {
        if (mcp_task_watched(b->mcp, id))
            load(w, id, false);
        return;
    }
    /* The connection is back: the results kept meanwhile are written now, and what ended
     * meanwhile was not heard. */
    unsaved_kick(b);
    json_t *ids = mcp_task_watched_ids(b->mcp);
    const char *k;
    json_t *v;
    json_object_foreach(ids, k, v)
    {
        if (toolspec_id_syntax(k, strlen(k)) && !strmap_get(w->heard, k))
            load(w, k, true);
    }
    json_decref(ids);
}

struct taskwatch *taskwatch_start(struct bridge *b)
{
    struct taskspg *pg = tasks_pg(b->tasks);
    if (pg == NULL)
        return NULL;
    struct taskwatch *w = xcalloc(1, sizeof *w);
    w->b = b;
    w->heard = strmap_new();
    taskspg_on_ended(pg, ended, w);
    return w;
}

void taskwatch_stop(struct taskwatch *w)
{
    if (w == NULL)
        return;
    taskspg_on_ended(tasks_pg(w->b->tasks), NULL, NULL);
    w->stopped = true;
}

/* After tasks_free: the loads in flight were called back (and found w stopped). */
void taskwatch_free(struct taskwatch *w)
{
    if (w == NULL)
        return;
    for (size_t i = 0; i < HEARD_MAX; i++)
        free(w->ring[i]);
    strmap_free(w->heard);
    free(w);
}
