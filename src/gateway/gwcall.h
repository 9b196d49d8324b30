/* gwcall.h — the call pipeline: a client's tools/call routed to its upstream (or instance),
 * admitted by the tool's policy and guard, queued for a slot (max_in_flight), sent with its
 * deadline, answered; an approve-guarded call held for the operator (gwapprove.c) or run as an
 * MCP task (gwtask.c); input asked during a call relayed to its caller (relay.h). gwcall.c,
 * gwapprove.c, gwtask.c, relay.c, mrtr.c. */
#ifndef HM_GWCALL_H
#define HM_GWCALL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "approvals.h"
#include "list.h"

struct approvals;
struct gateway;
struct gw_collect;
struct gw_hold;
struct gw_store_claim;
struct gw_tool;
struct loop_timer;
struct mcp_call;
struct otel_span;
struct relay;
struct upstream;

#define GW_QUEUE_MAX 64 /* calls waiting beyond max_in_flight, then busy */

/* A 2026-07-28 caller's input round claimed for its retry (mrtr.c gw_mrtr_round_claim), kept
 * until the retry is sent: given back (gw_mrtr_round_give_back) when it never was. nonce ""
 * for none. */
struct gw_round_claimed {
    char nonce[33], caller[64];
    uint64_t expires_at;
};

/* A client's tools/call proxied to an upstream. */
struct gw_call {
    struct upstream *up;
    struct mcp_call *call;
    char *tool; /* the upstream's own name */
    json_t *args;
    uint64_t id;       /* on the wire, 0 while waiting */
    unsigned restarts; /* the upstream's start it was sent to (a retry needs the same) */
    bool has_progress; /* the caller asked for progress */
    struct loop_timer *timer;
    struct list link; /* in the upstream's wait queue */
    bool queued;
    const char *exposed;  /* the name the client called (the gw_tool's) */
    uint64_t started_us;  /* monotonic, for the audit line and the latency */
    struct gw_hold *hold; /* while held for the client's answer (relay.c); call is NULL */
    /* A 2026-07-28 upstream that answered input_required (mrtr.c): what the next send carries
     * back (its requestState, a string, may be NULL; the caller's inputResponses), how many
     * rounds it asked so far, and the answers being collected from a session-era caller. */
    json_t *input_state, *input_answers;
    unsigned rounds;
    struct gw_collect *collect;
    /* The 2026-07-28 caller's round this call continues (mrtr.c gw_mrtr_continue), "" for
     * none: given back when the upstream never got to answer (gw_mrtr_give_back). */
    struct gw_round_claimed round;
    struct gw_store_claim *claim; /* with STORE_URL: that round's claim, waiting for the store */
    /* The upstream's requests relayed to a session-era caller and not answered yet (relay.c):
     * the call owns them, since the engine drops a call's pending requests without calling
     * back when the call ends. */
    struct relay *relays;
    struct otel_span *span; /* tracing: the CLIENT span of the call at the upstream, or NULL */
};

/* gwcall.c */
void gw_call_handler(struct mcp_call *call, json_t *args, void *arg);
/* A slot freed (an answer, a cancel): the oldest waiting call goes. */
void gw_call_next(struct upstream *u);
/* The upstream went away: the waiting calls are answered upstream_unavailable. */
void gw_call_fail_waiting(struct upstream *u);
/* notifications/progress for a proxied call. */
void gw_call_progress(struct gw_call *gc, json_t *params);
/* A held call its client never resumed: cancelled upstream (reason), recorded and freed. */
void gw_call_abandon(struct gw_call *gc, const char *reason);
/* Frees a call without a word to anyone (shutdown). */
void gw_call_drop(struct gw_call *gc);
/* A call taken over by mrtr.c, its slot still counted: sent again (gc->input_state and
 * input_answers with it), or answered upstream_unavailable when it cannot be. */
void gw_call_retry(struct gw_call *gc);
/* Ends such a call: gw_call_record (before its client is answered), then, once answered,
 * gw_call_release (its slot freed, the next waiting call sent, gc freed). */
void gw_call_record(struct gw_call *gc, const char *status);
void gw_call_release(struct gw_call *gc);

/* gwcall.c, for gwapprove.c: an admitted call (args: what is sent) goes to its upstream;
 * approved: the operator said yes, so an approve guard no longer holds it back. */
void gw_call_forward(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us,
                     bool approved);
/* The metrics and the audit line of a call that ends before reaching its upstream. */
void gw_call_record_tool(struct gw_tool *t, struct mcp_call *call, uint64_t started_us,
                         const char *status);
/* The same for a call whose mcp_call is gone (a task): by caller, at upstream u (t's or an
 * instance). */
/* The span's trace context into params._meta (traceparent, tracestate: the semantic
 * conventions' keys; over HTTP they also become headers). Nothing for a NULL span. */
void gw_call_trace_meta(json_t *params, const struct otel_span *span);
/* A CLIENT span for a request to upstream u, child of the call's context (NULL without
 * tracing). */
struct otel_span *gw_call_trace_start(const struct mcp_call *c, const struct upstream *u,
                                      const char *method, const char *target);
void gw_call_record_tool_as(struct gw_tool *t, struct upstream *u, const char *caller,
                            uint64_t started_us, const char *status);

/* gwapprove.c: an approve-guarded call waits in the operator's queue, then is forwarded
 * (gw_call_forward) or answered approval_denied. */
void gw_approval_wait(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us);
/* A reload left tools out (gw_tool.dropped): the requests of theirs waiting for the operator,
 * held calls and tasks, are denied (GW_BY_RELOAD) rather than sent once approved. */
#define GW_BY_RELOAD "reload"
#define GW_DROPPED_REASON "the tool is no longer exposed (gateway file reloaded)"
void gw_approval_deny_dropped(struct gateway *g);
/* Why an approval request could not be queued for principal (no queue, the principal's cap, a
 * full queue): the approval_denied text. */
const char *gw_approval_refusal(const struct approvals *q, const char *principal);
/* The audit event of an approval request of t made by caller: outcome (approved, timed_out,
 * denied, withdrawn) and who decided it. */
void gw_approval_audit(struct gw_tool *t, const char *caller, const char *outcome,
                       const char *decided_by);
/* The operator's decision on caller's request for t, the same for a held call and a task:
 * audited; true when approved, else false with the approval_denied text in why (timeout_s:
 * the wait the request was queued with, which a reload does not change). */
bool gw_approval_decided(struct gw_tool *t, const char *caller, enum approval_outcome outcome,
                         const char *reason, const char *decider, unsigned timeout_s, char *why,
                         size_t whylen);

/* gwtask.c: an approve-guarded call from a 2026-07-28 client of the tasks extension runs as an
 * MCP task (answered at once with a CreateTaskResult; approved, it goes upstream on its own). */
bool gw_task_wanted(struct mcp_call *call);
void gw_task_start(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us);
/* After the surface is built: the task methods for ids "gw:..." when a tool is guarded approve. */
void gw_task_methods_start(struct gateway *g);
/* A slot of u may be free (gw_call_next): the approved tasks waiting for one there go first,
 * oldest first. */
void gw_task_slot_free(struct upstream *u);
/* gw_approval_deny_dropped for tasks. */
void gw_task_deny_dropped(struct gateway *g);
/* Teardown: pending approvals withdrawn, calls forgotten, every task freed. */
void gw_task_free_all(struct gateway *g);

#endif
