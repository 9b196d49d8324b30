/* gwtaskpg.h — with STORE_URL, the gateway's MCP tasks (gwtask.c) are every replica's.
 *
 * The call a task stands for stays where it was made: the replica holding it (its approval in
 * the queue, its request at the upstream) keeps the task in memory as without a store, and
 * writes the task's row of hm_gwtask (status, status message, result, owner, holder) on every
 * change, on the loop. Any other replica answers tasks/get and tasks/update from the row, with
 * the owner checked as the holder checks it; tasks/cancel there sets the row's flag and
 * notifies (NOTIFY hm_gwtask_cancel): the holder hears it and cancels as a local tasks/cancel
 * does. The end of a task is notified too (NOTIFY hm_gwtask): a listen stream on any replica
 * that watches it hears it.
 *
 * The holder says it is alive on the very connection that writes its tasks: every
 * GWTASKPG_BEAT_MS it touches the seen_at of its working rows. A working row not touched for
 * GWTASKPG_GONE_MS ended with its holder (the upstream call it held died with it): any replica
 * marks it failed and says why. The holder sends an approved call upstream only once its write
 * of the approval found the row still working and its own (a compare-and-set); a row ended
 * elsewhere meanwhile (the holder cut off from the database that long) is adopted: the task
 * ends here as the row says, the call is never sent, and the holder hears of such an end at
 * once (the NOTIFY), or when its connection is back. A write that failed is written again by
 * the next beat. Ended rows go after the hour an ended task is kept. While the database is
 * away a request about a task held elsewhere is answered unavailable (503, Retry-After), and a
 * new task is refused the same way: a task is announced only once its row is written. Loop
 * thread. */
#ifndef HM_GWTASKPG_H
#define HM_GWTASKPG_H
#include <jansson.h>
#include <stdbool.h>
#include <time.h>

/* The holder touches its working rows this often; one silent for three beats is gone. */
#define GWTASKPG_BEAT_MS 2000
#define GWTASKPG_GONE_S 6
#define GWTASKPG_GONE_MS (GWTASKPG_GONE_S * 1000)
#define GWTASKPG_STR_(x) #x
#define GWTASKPG_STR(x) GWTASKPG_STR_(x)
/* The status message (and error message) of a task that ended with its holder. */
#define GWTASKPG_GONE_MESSAGE                                                                      \
    "the replica holding this task is gone (no heartbeat for " GWTASKPG_STR(                       \
        GWTASKPG_GONE_S) " s): the call it held ended with it; call the tool again"

struct gateway;
struct gw_tasks;
struct gwtaskpg;
struct mcp_call;

/* A task as tasks/get shows it: what its row holds (borrowed strings). */
struct gw_task_view {
    const char *id;
    const char *status;  /* working, completed, failed, cancelled */
    const char *message; /* statusMessage, or NULL */
    json_t *outcome;     /* completed: the CallToolResult; failed: the error object; else NULL */
    time_t created, updated;
    long long ttl_ms;
};

/* NULL without a store (or without a replica id). Connects in the background. */
struct gwtaskpg *gwtaskpg_start(struct gateway *g, struct gw_tasks *all);
/* The last writes are waited for (a second at most, running the loop), then freed; after
 * this nothing reaches the engine. NULL-safe. */
void gwtaskpg_stop(struct gwtaskpg *p);
bool gwtaskpg_up(const struct gwtaskpg *p);
/* Seconds until the database may be back (Retry-After), at least 1. */
unsigned gwtaskpg_retry_after_s(const struct gwtaskpg *p);
/* Answers c 503 with Retry-After: the database that shares the tasks is away. */
void gwtaskpg_unavailable(const struct gwtaskpg *p, struct mcp_call *c);

/* What became of a write: the row says what was written (or said it already); the row was
 * ended by another replica (its holder counted as gone); the write was lost (the database away,
 * busy, or the statement failed); the server is stopping (free what waits, touch nothing). */
enum gwtaskpg_put_result { GWTASKPG_WRITTEN, GWTASKPG_ENDED, GWTASKPG_LOST, GWTASKPG_CLOSED };

/* Writes the row of a task held here as v shows it (owner: the caller that owns it; upstream:
 * whose scope reaches it; seq: the task's count of writes). done (may be NULL) runs once,
 * later, then gw_task_written (not when closing). */
typedef void gwtaskpg_done_cb(enum gwtaskpg_put_result r, void *arg);
void gwtaskpg_put(struct gwtaskpg *p, const char *owner, const char *upstream,
                  const struct gw_task_view *v, unsigned seq, gwtaskpg_done_cb *done, void *arg);

/* The row of a task held here that the server's stop ends (v: as it stands): failed, and why. */
void gwtaskpg_put_stopped(struct gwtaskpg *p, const char *owner, const char *upstream,
                          const struct gw_task_view *v);

/* tasks/get, tasks/update and tasks/cancel of a task not held here, answered from its row. */
enum gwtaskpg_op { GWTASKPG_GET, GWTASKPG_UPDATE, GWTASKPG_CANCEL };
void gwtaskpg_ask(struct gwtaskpg *p, struct mcp_call *c, const char *id, enum gwtaskpg_op op);

/* The task as tasks/get answers (new reference). */
json_t *gwtaskpg_view_json(const struct gw_task_view *v);

/* gwtask.c's side, for this module: whether the task is held here, and not ended; a cancel
 * asked through another replica (as a local tasks/cancel); a task held here that the store
 * ended as its holder's (this replica counted as gone while cut off): it ends here too, as the
 * row says, even one ended here meanwhile; what became of write seq of a task; every task held
 * here whose last write was lost written again. */
bool gw_task_held(const struct gw_tasks *all, const char *id);
bool gw_task_open(const struct gw_tasks *all, const char *id);
void gw_task_cancel_held(struct gw_tasks *all, const char *id);
void gw_task_lost(struct gw_tasks *all, const char *id);
void gw_task_written(struct gw_tasks *all, const char *id, unsigned seq,
                     enum gwtaskpg_put_result r);
void gw_task_share_dirty(struct gw_tasks *all);

#endif
