/* unsaved.c — a followed run's result that the store could not take (its database away, or the
 * connection cut under the write): the outcome is kept here, the exact text of its result
 * record, and only the write is tried again, with a backoff that follows the store's own
 * reconnection (tasks_pg, pgconn_retry_in_ms) and at once when the store is connected again
 * (unsaved_kick), until the database holds it or holds another replica's result for the task
 * (the first result wins; either ends the retries). The agent is not asked again: it may have
 * forgotten the run by then, and the result would be lost.
 *
 * Bounded: at most UNSAVED_MAX results and UNSAVED_BYTES_MAX bytes of text. Beyond that a
 * result is not kept: its run is followed again once the database may be back (asked of the
 * agent again), so nothing grows without bound, at the cost of an "interrupted" result when the
 * agent forgot the run meanwhile; so too after TIMEOUTS_MAX attempts that timed out. A replica
 * that stops sends what it keeps if the database is reachable; else it leaves their runs without
 * a result: another replica takes them over (or this one at its next start) and asks the agent.
 * Loop thread only. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"
#include "taskspg.h"

#define UNSAVED_MAX 1024
#define UNSAVED_BYTES_MAX (32u << 20) /* results are capped at ANSWER_MAX each */
#define RETRY_FIRST_MS 200
#define RETRY_MAX_MS 5000
/* Attempts whose request timed out (a slow database, a lock wait): each costs the store its
 * connection and every request in flight on it, so after this many the run is followed again
 * instead (asked of the agent). */
#define TIMEOUTS_MAX 3

struct unsaved {
    struct bridge *b; /* NULL once the bridge stopped while the write was in flight */
    char id[129];
    char *text; /* the result record, as first made (its completed_at kept) */
    size_t len;
    unsigned tries;
    unsigned timeouts;
    uint64_t backoff_ms;
    struct loop_timer *timer;
    bool writing;
};

static void unsaved_free(struct unsaved *u)
{
    free(u->text);
    free(u);
}

/* Forgets u (the write landed, or cannot ever land). */
static void unsaved_drop(struct bridge *b, struct unsaved *u)
{
    strmap_del(b->unsaved, u->id);
    b->unsaved_bytes -= u->len;
    loop_timer_cancel(u->timer);
    unsaved_free(u);
}

static void try_write(struct loop *l, void *arg);

static void schedule(struct unsaved *u)
{
    struct bridge *b = u->b;
    struct taskspg *pg = tasks_pg(b->tasks);
    uint64_t ms = u->backoff_ms, reconnect = pg ? taskspg_retry_in_ms(pg) : 0;
    if (reconnect + 50 > ms) /* just after the next connection attempt, not before it */
        ms = reconnect + 50;
    u->backoff_ms = u->backoff_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : u->backoff_ms * 2;
    u->timer = loop_timer_add(b->loop, ms, try_write, u);
}

/* Gives up keeping u: its run is asked of the agent again, whose answer is written then. */
static void follow_again(struct bridge *b, struct unsaved *u)
{
    json_t *record = tasks_parse(u->text, u->len);
    const char *run_id = json_string_value(json_object_get(record, "run_id"));
    const char *agent = json_string_value(json_object_get(record, "agent"));
    if (run_id && strlen(run_id) < 128 && b->jobs)
        runjob_follow(b, u->id, agent ? agent : b->default_agent, run_id);
    json_decref(record);
}

static void written(enum tasks_rc rc, void *arg)
{
    struct unsaved *u = arg;
    struct bridge *b = u->b;
    struct taskspg *pg = b ? tasks_pg(b->tasks) : NULL;
    enum taskspg_how how = pg ? taskspg_how(pg) : TASKSPG_PLAIN;
    u->writing = false;
    if (b == NULL) { /* the bridge stopped meanwhile (unsaved_stop) */
        if (rc == TASKS_OK)
            log_info("task %s: its result is stored at the stop", u->id);
        unsaved_free(u);
        return;
    }
    if (rc == TASKS_OK && how == TASKSPG_LOST) {
        log_warn("task %s: another replica's result for it was stored first; it is kept, this "
                 "one dropped",
                 u->id);
        unsaved_drop(b, u);
    } else if (rc == TASKS_OK) {
        log_info("task %s: its result is stored now (%u attempt%s after the first)", u->id,
                 u->tries, u->tries == 1 ? "" : "s");
        unsaved_drop(b, u);
    } else if (rc == TASKS_UNAVAILABLE && how == TASKSPG_TIMED_OUT &&
               ++u->timeouts >= TIMEOUTS_MAX) {
        log_error("task %s: storing its result timed out %u times; it is dropped and its run "
                  "asked of the agent again",
                  u->id, u->timeouts);
        follow_again(b, u);
        unsaved_drop(b, u);
    } else if (rc == TASKS_UNAVAILABLE) {
        schedule(u);
    } else {
        log_error("task %s: its result could not be stored (the store refused it); its run is "
                  "followed again at the next start",
                  u->id);
        unsaved_drop(b, u);
    }
}

static void try_write(struct loop *l, void *arg)
{
    struct unsaved *u = arg;
    (void)l;
    u->timer = NULL;
    u->tries++;
    json_t *record = tasks_parse(u->text, u->len);
    u->writing = true;
    enum tasks_rc rc =
        record ? tasks_write(u->b->tasks, u->id, "result.json", record, written, u) : TASKS_INVALID;
    json_decref(record);
    if (rc != TASKS_OK) /* never queued */
        written(rc, u);
}

bool unsaved_keep(struct bridge *b, const char *id, json_t *record)
{
    if (strmap_get(b->unsaved, id))
        return true; /* one outcome a task: the first is being written */
    char *text = json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text == NULL)
        return false;
    size_t len = strlen(text);
    if (strmap_count(b->unsaved) >= UNSAVED_MAX || b->unsaved_bytes + len > UNSAVED_BYTES_MAX) {
        log_warn("task %s: %zu results (%zu bytes) already wait for the database; this one is "
                 "not kept, and its run is asked of the agent again once the database is back",
                 id, strmap_count(b->unsaved), b->unsaved_bytes);
        free(text);
        return false;
    }
    struct unsaved *u = xcalloc(1, sizeof *u);
    u->b = b;
    snprintf(u->id, sizeof u->id, "%s", id);
    u->text = text;
    u->len = len;
    u->backoff_ms = RETRY_FIRST_MS;
    strmap_put(b->unsaved, u->id, u);
    b->unsaved_bytes += len;
    schedule(u);
    return true;
}

bool unsaved_has(struct bridge *b, const char *id)
{
    return b->unsaved && strmap_get(b->unsaved, id) != NULL;
}

static void kick_one(const char *id, void *value, void *arg)
{
    struct unsaved *u = value;
    (void)id;
    (void)arg;
    if (u->writing || u->timer == NULL)
        return;
    loop_timer_cancel(u->timer);
    u->backoff_ms = RETRY_FIRST_MS;
    u->timer = loop_timer_add(u->b->loop, 0, try_write, u);
}

void unsaved_kick(struct bridge *b)
{
    if (b->unsaved)
        strmap_each(b->unsaved, kick_one, NULL);
}

/* At the stop: with the database reachable, each result not being written is sent now, and
 * lands while the store settles (tasks_free); the rest are dropped. */
static void stop_one(const char *id, void *value, void *arg)
{
    struct unsaved *u = value;
    bool up = *(bool *)arg;
    (void)id;
    loop_timer_cancel(u->timer);
    u->timer = NULL;
    if (!u->writing && up) {
        json_t *record = tasks_parse(u->text, u->len);
        u->writing = record &&
                     tasks_write(u->b->tasks, u->id, "result.json", record, written, u) == TASKS_OK;
        json_decref(record);
    }
    if (u->writing)
        u->b = NULL; /* its write's callback frees it */
    else
        unsaved_free(u);
}

void unsaved_stop(struct bridge *b)
{
    if (b->unsaved == NULL)
        return;
    struct taskspg *pg = tasks_pg(b->tasks);
    bool up = pg && taskspg_retry_in_ms(pg) == 0;
    size_t n = strmap_count(b->unsaved);
    if (n && up)
        log_info("%zu result(s) not stored yet; sent before the stop", n);
    else if (n)
        log_warn("%zu result(s) not stored yet (the database was away); their runs are followed "
                 "again by another replica, or here at the next start",
                 n);
    strmap_each(b->unsaved, stop_one, &up);
    strmap_free(b->unsaved);
    b->unsaved = NULL;
    b->unsaved_bytes = 0;
}
