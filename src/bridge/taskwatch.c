/* taskwatch.c — with the task records in a database, a task's end reaches the
 * subscriptions/listen streams of every replica: the replica that stores a result announces it
 * (a NOTIFY carrying the task id, sent at the commit: taskspg.c), and each replica with a
 * stream watching that id reads the task's row, then sends notifications/tasks as it would for
 * a task it ended itself (mcptask.c's task_ended). The replica that stored the result hears
 * its own announcement too, so every replica tells its streams the same way, once.
 *
 * A replica not connected to the database (at its start, or after a drop) may have missed
 * announcements: each time it connects it asks which of the tasks its streams watch have a
 * result, ENDED_CHUNK ids a statement, and tells of those not told here already (the last
 * HEARD_MAX ids told are remembered, and both paths check them: a task is told once). A read
 * the database refused (away, or its queue full) is made again later. Loop thread only. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"
#include "taskspg.h"

#define HEARD_MAX 1024
#define ENDED_CHUNK 500 /* watched ids checked in one statement */
#define AGAIN_MS 1000   /* a failed read is tried again after this at the least */

struct taskwatch {
    struct bridge *b;
    struct strmap *heard; /* ids announced (the value: their slot in ring) */
    char *ring[HEARD_MAX];
    size_t next;
    struct loop_timer *again; /* the catch-up tried again after a failed read */
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

static void catch_up(struct taskwatch *w);

static void catch_up_timer(struct loop *l, void *arg)
{
    struct taskwatch *w = arg;
    (void)l;
    w->again = NULL;
    catch_up(w);
}

/* A read that failed (the database away or busy): every watched id is checked again later,
 * after the next connection attempt. */
static void again_later(struct taskwatch *w)
{
    if (w->again || w->stopped)
        return;
    unsigned ms = taskspg_retry_in_ms(tasks_pg(w->b->tasks)) + 100;
    w->again = loop_timer_add(w->b->loop, ms < AGAIN_MS ? AGAIN_MS : ms, catch_up_timer, w);
}

/* Task id, loaded, is watched here and ended: its streams are told, once. */
static void tell(struct taskwatch *w, const char *task_id)
{
    struct bridge *b = w->b;
    const char *text;
    if (taskspg_read(tasks_pg(b->tasks), task_id, 2, &text) != TASKS_OK)
        return; /* no result (yet): nothing ended */
    /* The announcement and a catch-up may both read the end: the first tells. */
    if (strmap_get(w->heard, task_id))
        return;
    remember(w, task_id);
    b->task_ended(b, task_id);
}

/* A load of an announced task: what is in flight when the bridge stops finds w stopped. */
static void loaded(enum tasks_rc rc, const char *task_id, void *arg)
{
    struct taskwatch *w = arg;
    if (w->stopped || w->b->task_ended == NULL)
        return;
    if (rc == TASKS_UNAVAILABLE || rc == TASKS_IO)
        again_later(w);
    else if (rc == TASKS_OK)
        tell(w, task_id);
}

/* A chunk of the catch-up: each ended task is told, then the end of the chunk (NULL). */
static void chunk_read(enum tasks_rc rc, const char *task_id, void *arg)
{
    struct taskwatch *w = arg;
    if (w->stopped || w->b->task_ended == NULL)
        return;
    if (rc != TASKS_OK)
        again_later(w);
    else if (task_id)
        tell(w, task_id);
}

/* Which watched tasks ended, not told yet: ENDED_CHUNK ids a statement. */
static void catch_up(struct taskwatch *w)
{
    json_t *ids = mcp_task_watched_ids(w->b->mcp);
    const char *chunk[ENDED_CHUNK], *k;
    size_t n = 0;
    json_t *v;
    json_object_foreach(ids, k, v)
    {
        if (!toolspec_id_syntax(k, strlen(k)) || strmap_get(w->heard, k))
            continue;
        chunk[n++] = k;
        if (n == ENDED_CHUNK) {
            taskspg_ended_among(tasks_pg(w->b->tasks), chunk, n, chunk_read, w);
            n = 0;
        }
    }
    if (n)
        taskspg_ended_among(tasks_pg(w->b->tasks), chunk, n, chunk_read, w);
    json_decref(ids);
}

static void ended(const char *id, void *arg)
{
    struct taskwatch *w = arg;
    struct bridge *b = w->b;
    if (id) {
        if (mcp_task_watched(b->mcp, id) && !strmap_get(w->heard, id))
            tasks_load(b->tasks, id, NULL, loaded, w);
        return;
    }
    /* The connection is up: the results kept meanwhile are written now, and what ended
     * before was not heard. */
    unsaved_kick(b);
    loop_timer_cancel(w->again);
    w->again = NULL;
    catch_up(w);
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
    loop_timer_cancel(w->again);
    w->again = NULL;
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
