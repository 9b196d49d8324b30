/* tasks.h — the durable task directory: TASKS_DIR/<id>/{request,run,result}.json plus the
 * agent's artifacts. Every write is atomic (temp file, fsync, rename, fsync of the directory):
 * a crash leaves the old file or the new one, never a torn one. Reads are capped.
 *
 * Writes and removals never block the loop: they are queued to one writer thread that does
 * them in submission order, in batches (every file of a batch is written, then all are fsynced
 * side by side, renamed, and each directory fsynced once), and reports each back on the loop
 * thread once it is durable. Reads run on the loop thread (small files, page cache). Everything
 * here is called on the loop thread. */
#ifndef HM_TASKS_H
#define HM_TASKS_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TASKS_FILE_MAX (200 * 1024)   /* result.json and file reads */
#define TASKS_LIST_MAX 500            /* entries in one listing */
#define TASKS_REQUEST_MAX (64 * 1024) /* request.json and run.json reads */

struct loop;
struct tasks;
struct taskspg;

enum tasks_rc {
    TASKS_OK = 0,
    TASKS_NOT_FOUND,
    TASKS_TOO_BIG,
    TASKS_INVALID,
    TASKS_IO,
    TASKS_UNAVAILABLE, /* the store's database is away: nothing was done; try again later */
};

/* A queued write or removal is done: rc is TASKS_OK once it is durable. Loop thread. */
typedef void tasks_done_cb(enum tasks_rc rc, void *arg);

/* Creates dir (mode 700) if needed and starts the writer. NULL with a reason in err on failure. */
struct tasks *tasks_open(const char *dir, struct loop *l, char *err, size_t errlen);
/* The task files' journal, for a server that keeps its tasks in files: taken now, so that a
 * second server on the same directory is refused at start (false, the reason in err). Any
 * other journal error is logged and the files are written with an fsync each. Loop thread,
 * before the first write. */
bool tasks_journal_start(struct tasks *t, char *err, size_t errlen);
/* Any thread: every task file written so far is durable and no journal record can bring it
 * back (a checkpoint), before task directories are removed outside the writer. */
void tasks_sync(struct tasks *t);
/* Finishes every queued write (they are durable afterwards), runs their callbacks, frees.
 * NULL-safe. */
void tasks_free(struct tasks *t);
const char *tasks_dir(const struct tasks *t);

/* With STORE_URL: request.json, run.json and result.json live in PostgreSQL from now on
 * (taskspg.h); the directory keeps only the agent's files (hermes_files). A read answers from
 * what tasks_load loaded (or this server wrote) since: a caller loads a task before reading it.
 * on_takeover runs for each run of a gone replica this one must follow now. */
typedef void tasks_takeover_cb(const char *id, const char *run, void *arg);
bool tasks_use_store(struct tasks *t, const char *url, const char *password, const char *replica_id,
                     tasks_takeover_cb *on_takeover, void *arg);
/* Whether reads need a tasks_load first (the records are in a database). */
bool tasks_remote(const struct tasks *t);
/* Loads task id (or the task of run run_id when id is NULL): cb runs on the loop later with
 * TASKS_OK and the task's id, TASKS_NOT_FOUND or TASKS_UNAVAILABLE. Without a store it answers
 * TASKS_OK (id) or TASKS_NOT_FOUND at once, before returning. */
typedef void tasks_loaded_cb(enum tasks_rc rc, const char *task_id, void *arg);
void tasks_load(struct tasks *t, const char *id, const char *run_id, tasks_loaded_cb *cb,
                void *arg);
/* With a store: removes the finished tasks older than days (0: no age limit) and those beyond
 * the newest max finished ones (0: no count limit), in the background, oldest first. Any
 * replica may run it: a removal is the same whoever makes it. */
void tasks_prune(struct tasks *t, unsigned days, unsigned max);
/* With a store: whether the task (as loaded) was created by another replica still alive, and
 * before the bridge goes, no more takeovers (loads still in flight answer unavailable). */
bool tasks_started_elsewhere(struct tasks *t, const char *id);
void tasks_quiesce(struct tasks *t);
/* Seconds to wait before trying again while the store's database is away; 0 when it is up. */
unsigned tasks_retry_after_s(const struct tasks *t);
/* The database store (taskspg.h) of tasks_use_store, or NULL with files. */
struct taskspg *tasks_pg(struct tasks *t);

/* Queues json as TASKS_DIR/<id>/<name>, written atomically (mode 600) into the task directory,
 * which is created if needed. done (may be NULL) runs once it is durable or failed; it never runs
 * before this returns. TASKS_INVALID (done not called) for an id that is not a task id. */
enum tasks_rc tasks_write(struct tasks *t, const char *id, const char *name, json_t *json,
                          tasks_done_cb *done, void *arg);
/* True while a write or removal of this task is queued or under way. */
bool tasks_pending(struct tasks *t, const char *id);
/* Reads TASKS_DIR/<id>/<name> (at most max bytes) into *out (new reference). */
enum tasks_rc tasks_read(struct tasks *t, const char *id, const char *name, size_t max,
                         json_t **out);
bool tasks_exists(struct tasks *t, const char *id);
/* A task file's text as every reader parses it (a duplicated key is refused: two readers could
 * take either value). New reference, or NULL. */
json_t *tasks_parse(const char *text, size_t len);
/* Queues deleting TASKS_DIR/<id>/<name> if present, and the task directory if that emptied it;
 * done (may be NULL) runs once that happened, as for tasks_write. */
enum tasks_rc tasks_remove(struct tasks *t, const char *id, const char *name, tasks_done_cb *done,
                           void *arg);

/* A regular file (never a link) of at most max bytes, NUL-terminated, into *data (malloc'd). */
struct stat;
enum tasks_rc tasks_read_capped(const char *path, size_t max, char **data, size_t *len,
                                struct stat *st);

/* Whether n bytes at p are text hermes_files serves: UTF-8 without NUL. */
bool tasks_text_ok(const char *p, size_t n);
/* hermes_files (taskfiles.c): a listing of the task directory (or a sub-directory), or one UTF-8
 * text file. rel is already validated by taskpath_rel_ok. On failure returns a code and a
 * client-safe message in why. */
enum tasks_rc tasks_files(struct tasks *t, const char *id, const char *rel, json_t **out, char *why,
                          size_t whylen);

/* Marks a task as busy (tasks_pending is true) until tasks_release, as a queued write does:
 * retention holds the tasks it is taking out, so that no new write for them starts meanwhile. */
void tasks_hold(struct tasks *t, const char *id);
void tasks_release(struct tasks *t, const char *id);

/* Calls fn for every task directory name (ids only). */
void tasks_each(struct tasks *t, void (*fn)(const char *id, void *arg), void *arg);
/* The same walk in steps, so a long one does not hold the loop: each step calls fn for at most
 * max ids and returns false once the directory is done. NULL if it cannot be opened. */
struct tasks_scan;
struct tasks_scan *tasks_scan_open(struct tasks *t);
bool tasks_scan_step(struct tasks_scan *s, size_t max, void (*fn)(const char *id, void *arg),
                     void *arg);
void tasks_scan_close(struct tasks_scan *s); /* NULL-safe */

#endif
