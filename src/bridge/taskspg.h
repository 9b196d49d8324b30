/* taskspg.h — the task records in PostgreSQL (STORE_URL), behind tasks.h: one row of hm_task
 * per task holding the exact text of its request.json, run.json and result.json, the run
 * index (run_id) and the replica that follows its run.
 *
 * Writes are queued and sent in batches, one transaction each (group commit: the writes
 * queued while a batch is under way share the next commit); each write's callback runs once
 * its batch committed. Reads never wait for the database: a tool call loads its task first
 * (taskspg_load, on the loop), and reads answer from what was loaded, kept in a bounded cache
 * that this replica's own writes keep current. Every few seconds a replica takes over the runs
 * whose follower's heartbeat is gone (hm_replica), at most one taker per run (the rows are
 * locked by the UPDATE that takes them). Loop thread only. */
#ifndef HM_TASKSPG_H
#define HM_TASKSPG_H
#include <stdbool.h>
#include <stddef.h>

#include "tasks.h"

struct loop;
struct taskspg;

/* A run of a replica that is gone, now this one's to follow: its task id and run.json text. */
typedef void taskspg_takeover_cb(const char *id, const char *run, void *arg);

struct taskspg_opts {
    struct loop *loop;
    const char *url, *password; /* STORE_URL, STORE_PASSWORD (or NULL) */
    const char *replica_id;     /* this server in hm_replica: the follower of its runs */
    taskspg_takeover_cb *on_takeover;
    void *arg;
};

/* NULL (logged) when libpq cannot be loaded. Connects in the background. */
struct taskspg *taskspg_open(const struct taskspg_opts *o);
/* Sends what is queued and waits (at most a few seconds, running the loop) for the answers,
 * then frees; NULL-safe. */
void taskspg_free(struct taskspg *p);

/* Which document of a task a file name is: 0 request.json, 1 run.json, 2 result.json, -1 none
 * the database keeps. */
int taskspg_doc(const char *name);

/* Queues writing text as document doc of task id (run_id: run.json's, else NULL); done runs on
 * the loop once it committed (TASKS_OK) or failed, never before this returns. */
void taskspg_write(struct taskspg *p, const char *id, int doc, const char *text, const char *run_id,
                   tasks_done_cb *done, void *arg);
/* Queues removing document doc of task id (the row goes with its last document). */
void taskspg_remove(struct taskspg *p, const char *id, int doc, tasks_done_cb *done, void *arg);

/* Loaded task id is this task (run_id NULL), or the task of run run_id (id NULL). */
typedef void taskspg_loaded_cb(enum tasks_rc rc, const char *task_id, void *arg);
/* Reads the task's row into the cache; cb runs on the loop later with TASKS_OK and the task's
 * id, TASKS_NOT_FOUND, or TASKS_UNAVAILABLE (the database is away: nothing was kept). */
void taskspg_load(struct taskspg *p, const char *id, const char *run_id, taskspg_loaded_cb *cb,
                  void *arg);

/* Document doc of task id as last loaded or written here: TASKS_OK with a borrowed text,
 * TASKS_NOT_FOUND (no such document, or the task is not loaded here). */
enum tasks_rc taskspg_read(struct taskspg *p, const char *id, int doc, const char **text);
/* Whether the task, as last loaded, was created by another replica that is alive (a retry of
 * it here must wait for that one rather than start it again). */
bool taskspg_elsewhere(struct taskspg *p, const char *id);
/* Before the bridge goes: no more takeovers; loads in flight answer TASKS_UNAVAILABLE. */
void taskspg_quiesce(struct taskspg *p);
/* Whether the task was there when last loaded or written here. */
bool taskspg_exists(struct taskspg *p, const char *id);
/* Removes finished tasks older than days (0: none by age) and beyond the newest max finished
 * ones (0: none by count), at most PRUNE_BATCH a statement, again until none is left; logs how
 * many went. */
void taskspg_prune(struct taskspg *p, unsigned days, unsigned max);
/* Seconds a client should wait before trying again while the database is away (0: it is up). */
unsigned taskspg_retry_after_s(const struct taskspg *p);
/* Milliseconds until the connection is tried again while the database is away (0: it is up). */
unsigned taskspg_retry_in_ms(const struct taskspg *p);

/* hermes_reset: drops every cached task keep(id, arg) does not keep (the next call about it
 * reads it again); returns how many went. */
size_t taskspg_forget(struct taskspg *p, bool (*keep)(const char *id, void *arg), void *arg);
/* Reads the runs this replica follows that have no result yet (at most 4096), loading each and
 * calling each(id, run.json text, arg), then done(rc, how many, arg); later, on the loop. */
typedef void taskspg_followed_done_cb(enum tasks_rc rc, size_t n, void *arg);
void taskspg_followed(struct taskspg *p, taskspg_takeover_cb *each, taskspg_followed_done_cb *done,
                      void *arg);

/* A task's end was stored, by this replica or another (a NOTIFY at the commit of its result):
 * cb(id, arg) on the loop; cb(NULL, arg) each time the connection comes up (the first time
 * too), when ends announced before may have been missed. */
typedef void taskspg_ended_cb(const char *id, void *arg);
void taskspg_on_ended(struct taskspg *p, taskspg_ended_cb *cb, void *arg);

/* Which of the n tasks ids (a chunk: at most a few hundred) have a result, in one statement:
 * each of those is loaded and cb(TASKS_OK, id, arg) called, then cb(TASKS_OK, NULL, arg); or
 * only cb(TASKS_UNAVAILABLE or TASKS_IO, NULL, arg) when it could not be read. Later, on the
 * loop. */
void taskspg_ended_among(struct taskspg *p, const char *const *ids, size_t n, taskspg_loaded_cb *cb,
                         void *arg);

/* Inside a write's done callback: how the write went beyond its rc. */
enum taskspg_how {
    TASKSPG_PLAIN,     /* as rc says */
    TASKSPG_LOST,      /* TASKS_OK, but another result of the task was stored before: it stays */
    TASKSPG_TIMED_OUT, /* TASKS_UNAVAILABLE after its request timed out: it may have run */
};
enum taskspg_how taskspg_how(const struct taskspg *p);

#endif
