/* gwtaskrec.h — the record of a gateway MCP task and the set of them: gwtask.c's own, apart so
 * that the module's logic stays one readable file. Nothing outside gwtask.c includes it. */
#ifndef HM_GWTASKREC_H
#define HM_GWTASKREC_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "approvals.h"
#include "list.h"

struct gateway;
struct gw_tool;
struct gwtaskpg;
struct loop_timer;
struct mcp_call;
struct otel_span;
struct upstream;

#define GW_TASK_PREFIX "gw:"             /* no bridge task id has a colon: the two never collide */
#define GW_TASK_ID_BYTES 16              /* random, so ids cannot be guessed or enumerated */
#define GW_TASKS_PER_CALLER 64           /* one caller cannot fill the server's memory with tasks */
#define GW_TASKS_MAX 1024                /* all callers' tasks together */
#define GW_TASK_KEEP_MS 3600000u         /* a finished task answers tasks/get for an hour */
#define GW_TASK_RETRY_MS 200u            /* a starting instance: asked again this often */
#define GW_TASK_RESULT_MAX (256u * 1024) /* bytes of a result kept for an hour, as JSON */
#define GW_TASK_UNAVAILABLE "-32004"     /* the audit's status of a call refused for the store */
#define GW_TASK_LOST "-32603"            /* ... and of a task the store counted as gone */

enum gwt_phase { GWT_WAITING, GWT_RUNNING, GWT_DONE };

struct gw_task {
    struct gw_tasks *all;
    struct gw_tool *t; /* lives as long as the gateway */
    char id[sizeof GW_TASK_PREFIX + 2 * GW_TASK_ID_BYTES];
    char *caller; /* mcp_call_caller of the creating call */
    json_t *args; /* what is sent once approved (admitted by the policies) */
    enum gwt_phase phase;
    const char *status; /* working, completed, failed, cancelled */
    const char *why;    /* failed not by the upstream: the status message (static), else NULL */
    json_t *outcome;    /* completed: the CallToolResult; failed: the error object */
    char approval[APPROVALS_ID_HEX + 1]; /* while waiting */
    unsigned approval_timeout_s; /* the queue's when created: a reload changes later ones only */
    struct upstream *at;         /* while running: the upstream or instance whose slot it holds */
    struct upstream *waiting_on; /* approved, waiting for a slot there (gw_task_slot_free) */
    bool sent;                   /* the call is at the upstream (wire_id) */
    bool confirming; /* with a store: approved, sent once its row is written still working */
    bool dirty;      /* with a store: its last write was lost (written again at the beat) */
    unsigned wseq;   /* its writes so far: the last one says whether it is dirty */
    uint64_t wire_id;
    struct loop_timer *timer; /* running: the deadline, or the next try of a starting instance */
    uint64_t deadline_ms;     /* loop ms: the upstream's timeout, counted from the approval */
    uint64_t started_us;      /* monotonic, for the audit line */
    uint64_t done_ms;         /* loop ms when it ended */
    struct otel_span *span;   /* tracing: the call's CLIENT span, from creation to its end */
    time_t created, updated;
    struct creating *creating; /* with a store: the creating call, until the row is written */
    struct list link;          /* in all->tasks */
};

/* With a store, the call that creates a task is answered once the task's row is written: no
 * other replica is asked about a task it cannot read yet. */
struct creating {
    struct gw_tasks *all;
    struct gw_task *k;     /* NULL once the task is forgotten */
    struct mcp_call *call; /* NULL once the call went away */
};

struct gw_tasks {
    struct gateway *g;
    struct list tasks; /* oldest first */
    size_t n;
    size_t nwaiting;     /* tasks with waiting_on set: gw_task_slot_free walks only if any */
    struct gwtaskpg *pg; /* with STORE_URL: the tasks are every replica's (gwtaskpg.h) */
};

#endif
