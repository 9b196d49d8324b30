/* taskfilespg.h — the files an agent left in a task's directory, kept in PostgreSQL
 * (STORE_URL) so that hermes_files answers on every replica.
 *
 * When a replica writes a task's result, it copies what the agent left in its own
 * TASKS_DIR/<id>/ into hm_task_file: the listing (path, kind, size, mtime; 1000 entries at most)
 * and the text of each file hermes_files would serve (regular, UTF-8 without NUL, at most
 * TASKS_FILE_MAX), within a cap per task; a file over a cap, and a link, are kept with the reason
 * they cannot be read. Dot files and names that are not UTF-8 are left out, as tasks_files leaves
 * them out. The directory is walked on a worker thread (no link followed), then written in one
 * transaction that replaces what the store held for the task; one copy is sent at a time, and the
 * copies waiting for the database are bounded in number and bytes (the oldest dropped, logged). A
 * replica without that directory (another machine's agent ran the task) copies nothing and
 * keeps what the store has. The rows go with their task (retention, prune). Loop thread only. */
#ifndef HM_TASKFILESPG_H
#define HM_TASKFILESPG_H
#include <jansson.h>

#include "tasks.h"

struct loop;
struct taskfilespg;
struct taskfilespg_read;

#define TASKFILESPG_TASK_MAX (8u << 20) /* bytes of text kept for one task */

struct taskfilespg_opts {
    struct loop *loop;
    const char *url, *password; /* STORE_URL, STORE_PASSWORD (or NULL) */
    const char *tasks_dir;      /* where this replica's agent leaves a task's files */
};

/* NULL (logged) when libpq cannot be loaded or the worker cannot start. */
struct taskfilespg *taskfilespg_open(const struct taskfilespg_opts *o);
/* Sends the copies already walked (waiting a few seconds at most), then frees; NULL-safe. */
void taskfilespg_free(struct taskfilespg *p);

/* Copies task id's directory into the store, later, if this replica has one: true when a copy
 * started, and done(arg) (if not NULL) then runs once on the loop when it was stored or
 * dropped; false (done never runs) when there is nothing to copy. NULL-safe. */
bool taskfilespg_capture(struct taskfilespg *p, const char *id, void (*done)(void *arg), void *arg);

/* hermes_files' answer from the store: rel "" or a directory lists (at most TASKS_LIST_MAX
 * entries), a file gives its text. rc TASKS_OK with out (new reference), or TASKS_NOT_FOUND,
 * TASKS_TOO_BIG, TASKS_INVALID, TASKS_IO (a statement failed) with why, or TASKS_UNAVAILABLE
 * (the database is away or slow: try again); runs on the loop, never inside taskfilespg_read. */
typedef void taskfilespg_read_cb(enum tasks_rc rc, json_t *out, const char *why, void *arg);
struct taskfilespg_read *taskfilespg_read(struct taskfilespg *p, const char *id, const char *rel,
                                          taskfilespg_read_cb *cb, void *arg);
/* The caller went away: cb will not run. */
void taskfilespg_read_cancel(struct taskfilespg_read *r);
/* Seconds a client should wait while the database is away (0: it is up). */
unsigned taskfilespg_retry_after_s(const struct taskfilespg *p);

#endif
