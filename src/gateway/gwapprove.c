/* gwapprove.c — a call to a tool guarded `approve` (tools.guard) waits for a person: it is queued
 * in the operator's approval queue (approvals.h: principal, exposed tool, masked argument
 * summary) and answered by `hermes-mcp approve|deny` over the control socket. Kept apart from
 * gwcall.c because the wait has its own life: the client's connection is held, and a caller that
 * asked for progress hears every GW_APPROVAL_NUDGE_MS that it waits (naming the request's id,
 * so the operator can match it). Approved, the call goes on exactly as an unguarded one
 * (gw_call_forward); denied, timed out or stopped with the server, it is answered
 * approval_denied; a client that cancels or hangs up withdraws the request. Nothing the client
 * sends decides it. Each decision is one audit event (GW_EVENT_APPROVAL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approvals.h"
#include "gwcore.h"
#include "gwevent.h"
#include "gwexpose.h"
#include "list.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "relay.h"
#include "toolerr.h"
#include "upstream.h"
#include "utf8.h"

#define GW_APPROVAL_NUDGE_MS 15000u

struct gw_wait {
    struct gw_tool *t; /* lives as long as the gateway (registered once) */
    struct mcp_call *call;
    json_t *args; /* what is sent once approved (admitted by gw_policy_args) */
    uint64_t started_us;
    unsigned timeout_s; /* the queue's when it was added: a reload changes later ones only */
    char id[APPROVALS_ID_HEX + 1];
    struct loop_timer *nudge;
    unsigned nudges;
    struct list link;       /* in the gateway's waits */
    struct otel_span *span; /* tracing: the wait, an INTERNAL span (outcome: hermes.approval) */
};

/* Tests only (README, "Testing"): HERMES_TEST_APPROVAL_NUDGE_MS shortens the progress interval
 * so a test need not wait 15 s; 0 (unset): the default. */
static uint64_t nudge_ms(void)
{
    const char *v = getenv("HERMES_TEST_APPROVAL_NUDGE_MS");
    unsigned long ms = v ? strtoul(v, NULL, 10) : 0;
    return ms == 0 || ms > GW_APPROVAL_NUDGE_MS ? GW_APPROVAL_NUDGE_MS : ms;
}

/* The wait's span ends with the decision, before what follows it (the call sent, a refusal). */
static void wait_decided(struct gw_wait *w, const char *outcome)
{
    otel_span_str(w->span, "hermes.approval", outcome);
    otel_span_end(w->span);
    w->span = NULL;
}

static void wait_free(struct gw_wait *w)
{
    otel_span_discard(w->span);
    list_unlink(&w->link);
    loop_timer_cancel(w->nudge);
    json_decref(w->args);
    free(w);
}

/* The principal the engine bound the call to ("p:NAME"), else "-". */
static const char *asker(struct mcp_call *call)
{
    const char *c = mcp_call_caller(call);
    return c && strncmp(c, "p:", 2) == 0 ? c + 2 : "-";
}

void gw_approval_audit(struct gw_tool *t, const char *caller, const char *outcome,
                       const char *decided_by)
{
    gw_event(t->up->gw, &(struct gw_event){.kind = GW_EVENT_APPROVAL,
                                           .upstream = t->up->cfg->name,
                                           .tool = t->exposed,
                                           .upstream_tool = t->name,
                                           .status = outcome,
                                           .caller = caller,
                                           .decided_by = decided_by});
}

bool gw_approval_decided(struct gw_tool *t, const char *caller, enum approval_outcome outcome,
                         const char *reason, const char *decider, unsigned timeout_s, char *why,
                         size_t whylen)
{
    if (outcome == APPROVAL_APPROVED) {
        gw_approval_audit(t, caller, "approved", decider ? decider : "-");
        return true;
    }
    if (outcome == APPROVAL_TIMED_OUT) {
        gw_approval_audit(t, caller, "timed_out", "timeout");
        snprintf(why, whylen, "%s was not approved: no operator answered within %u s (timed out)",
                 t->exposed, timeout_s);
    } else if (decider && strcmp(decider, GW_BY_RELOAD) == 0) {
        gw_approval_audit(t, caller, "denied", GW_BY_RELOAD);
        snprintf(why, whylen, "%s was not approved: %s", t->exposed, GW_DROPPED_REASON);
    } else if (decider && strcmp(decider, APPROVALS_BY_SHUTDOWN) == 0) {
        gw_approval_audit(t, caller, "denied", APPROVALS_BY_SHUTDOWN);
        snprintf(why, whylen, "%s was not approved: the server is stopping; call it again later",
                 t->exposed);
    } else {
        gw_approval_audit(t, caller, "denied", decider ? decider : "-");
        snprintf(why, whylen, "the operator denied %s%s%.200s", t->exposed,
                 reason && reason[0] ? ": " : "", reason ? reason : "");
        utf8_clean(why);
    }
    return false;
}

static void answer_denied(struct gw_tool *t, struct mcp_call *call, uint64_t started_us,
                          const char *why)
{
    gw_call_record_tool(t, call, started_us, toolerr_name(TE_APPROVAL_DENIED));
    mcp_call_result_take(call, tool_error_json(TE_APPROVAL_DENIED, 0, "%s", why));
}

static void nudge(struct loop *l, void *arg)
{
    struct gw_wait *w = arg;
    char msg[200];
    w->nudge = loop_timer_add(l, nudge_ms(), nudge, w);
    snprintf(msg, sizeof msg,
             "waiting for the operator's approval: request %s (hermes-mcp approvals; "
             "approve %s or deny %s)",
             w->id, w->id, w->id);
    mcp_call_progress(w->call, ++w->nudges, 0, msg);
}

/* The client cancelled or hung up: the request leaves the queue (a late approve finds none). */
static void on_withdrawn(struct mcp_call *call, void *arg)
{
    struct gw_wait *w = arg;
    (void)call; /* gone after this callback */
    approvals_withdraw(w->t->up->gw->approvals, w->id);
    gw_approval_audit(w->t, mcp_call_caller(w->call), "withdrawn", "withdrawn");
    wait_decided(w, "withdrawn");
    gw_call_record_tool(w->t, w->call, w->started_us, "cancelled");
    wait_free(w);
}

static void on_decision(void *arg, enum approval_outcome outcome, const char *reason,
                        const char *decider)
{
    struct gw_wait *w = arg;
    struct gw_tool *t = w->t;
    char why[400];
    mcp_call_on_cancel(w->call, NULL, NULL);
    if (gw_approval_decided(t, mcp_call_caller(w->call), outcome, reason, decider, w->timeout_s,
                            why, sizeof why)) {
        wait_decided(w, "approved");
        gw_call_forward(t, w->call, w->args, w->started_us, true);
        wait_free(w);
        return;
    }
    wait_decided(w, "denied");
    answer_denied(t, w->call, w->started_us, why);
    wait_free(w);
}

const char *gw_approval_refusal(const struct approvals *q, const char *principal)
{
    return !q ? "this tool needs the operator's approval and there is no approval channel: denied"
           : approvals_count_for(q, principal) >= APPROVALS_PER_PRINCIPAL
               ? "too many of your calls wait for the operator already (16); call it again once "
                 "they are decided"
               : "the approval queue is full; call it again later";
}

void gw_approval_wait(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us)
{
    if (t->up->gw->tasks && gw_task_wanted(call)) { /* the client need not hold on (gwtask.c) */
        gw_task_start(t, call, args, started_us);
        return;
    }
    struct approvals *q = t->up->gw->approvals;
    struct gw_wait *w = xcalloc(1, sizeof *w);
    const char *who = asker(call);
    const char *id = q ? approvals_add(q, who, t->exposed, args, on_decision, w) : NULL;
    if (id == NULL) {
        free(w);
        answer_denied(t, call, started_us, gw_approval_refusal(q, who));
        return;
    }
    w->t = t;
    w->call = call;
    w->args = json_incref(args);
    w->started_us = started_us;
    w->timeout_s = t->up->gw->approvals_timeout_s;
    snprintf(w->id, sizeof w->id, "%s", id);
    char name[120];
    snprintf(name, sizeof name, "approval %s", t->exposed);
    w->span = mcp_call_span(call, name, OTEL_KIND_INTERNAL);
    otel_span_str(w->span, "gen_ai.tool.name", t->exposed);
    list_push_front(&t->up->gw->waits, &w->link);
    mcp_call_on_cancel(call, on_withdrawn, w);
    if (mcp_call_progress_token(call) != NULL)
        nudge(t->up->gw->loop, w);
}

void gw_approval_deny_dropped(struct gateway *g)
{
    LIST_FOREACH_SAFE(n, &g->waits)
    { /* the decision frees w */
        struct gw_wait *w = list_entry(n, struct gw_wait, link);
        if (w->t->dropped)
            approvals_decide(g->approvals, w->id, false, GW_DROPPED_REASON, GW_BY_RELOAD);
    }
    gw_task_deny_dropped(g);
}
