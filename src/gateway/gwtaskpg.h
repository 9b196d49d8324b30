/* gwtaskpg.h — with STORE_URL, the gateway's MCP tasks (gwtask.c) are every replica's.
 *
 * The call a task stands for stays where it was made: the replica holding it (its approval in
 * the queue, its request at the upstream) keeps the task in memory as without a store, and
 * writes the task's row of hm_gwtask (status, status message, result, owner, holder) on every
 * change, on the loop. Any other replica answers tasks/get and tasks/update from the row, with
 * the owner checked as the holder checks it; tasks/cancel there sets the row's flag and
 * notifies (NOTIFY hm_gwtask_cancel): the holder hears it and cancels as a local tasks/cancel
 * does. The end of a task is notified too (NOTIFY hm_gwtask): a listen stream on any replica
 * that watches it hears it. A task whose holder's heartbeat is older than GWTASKPG_GONE_MS
 * ended with its holder (the upstream call it held died with it): any replica marks it failed
 * and says why. Ended rows go after the hour an ended task is kept. While the database is away
 * a request about a task held elsewhere is answered unavailable (503, Retry-After), and a new
 * task is refused the same way: a task is announced only once its row is written. Loop
 * thread. */
#ifndef HM_GWTASKPG_H
#define HM_GWTASKPG_H
#include <jansson.h>
#include <stdbool.h>
#include <time.h>

/* A holder silent this long is gone: three of the replicas' heartbeats (every 2 s, the app's
 * replica module) missed, as a run's follower counts as gone for the bridge's tasks. */
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

/* Writes the row of a task held here as v shows it (owner: the caller that owns it; upstream:
 * whose scope reaches it). done (may be NULL) runs once, later: ok when the row is written. */
typedef void gwtaskpg_done_cb(bool ok, void *arg);
void gwtaskpg_put(struct gwtaskpg *p, const char *owner, const char *upstream,
                  const struct gw_task_view *v, gwtaskpg_done_cb *done, void *arg);

/* The row of a task held here that the server's stop ends (v: as it stands): failed, and why. */
void gwtaskpg_put_stopped(struct gwtaskpg *p, const char *owner, const char *upstream,
                          const struct gw_task_view *v);

/* tasks/get, tasks/update and tasks/cancel of a task not held here, answered from its row. */
enum gwtaskpg_op { GWTASKPG_GET, GWTASKPG_UPDATE, GWTASKPG_CANCEL };
void gwtaskpg_ask(struct gwtaskpg *p, struct mcp_call *c, const char *id, enum gwtaskpg_op op);

/* gwtask.c's side, for this module: the task as tasks/get answers (new reference); whether
 * the task is held here; a cancel asked through another replica (as a local tasks/cancel); a
 * task held here that the store ended as its holder's (this replica counted as gone while cut
 * off): it ends here too; every task held here written again (after the database was away). */
json_t *gw_task_view_json(const struct gw_task_view *v);
bool gw_task_held(const struct gw_tasks *all, const char *id);
void gw_task_cancel_held(struct gw_tasks *all, const char *id);
void gw_task_lost(struct gw_tasks *all, const char *id);
void gw_task_share_all(struct gw_tasks *all);

#endif
