/* gw_internal.h — what the gateway's files share: an upstream (its child or HTTP transport, its
 * JSON-RPC client state, its requests in flight) and a proxied call. upstream.c speaks MCP to
 * the child, or through httpup.c (Streamable HTTP) to a url upstream; gwcall.c turns a
 * client's tools/call into an upstream request and back; gateway.c starts the upstreams and
 * builds the frozen surface. */
#ifndef HM_GW_INTERNAL_H
#define HM_GW_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "approvals.h"
#include "gateway.h"
#include "gwevent.h"
#include "gwfile.h"

struct child;
struct gateway;
struct httpup;
struct loop;
struct loop_timer;
struct mcp_call;
struct metric;
struct mcp_server;
struct strmap;
struct gwi_pool;
struct gwi_inst;

#define GW_PROTOCOL "2025-11-25"
#define GW_MODERN "2026-07-28" /* spoken to an HTTP upstream whose server/discover offers it */
#define GW_QUEUE_MAX 64     /* calls waiting beyond max_in_flight, then busy */
#define GW_LIST_PAGES 100   /* tools/list pages followed at most */
#define GW_TOOLS_MAX 1024   /* tools of one upstream at most */
#define GW_BACKOFF_MIN_MS 500     /* the first restart after a failure */
#define GW_BACKOFF_MAX_MS 30000   /* doubling up to this */
#define GW_STABLE_MS 30000        /* ready this long: the next failure starts the backoff anew */

enum up_state { UP_STARTING, UP_LISTING, UP_READY, UP_DOWN };
/* The smoke call's outcome: none configured, sent and not answered, passed, failed. */
enum gw_smoke { GW_SMOKE_NONE, GW_SMOKE_PENDING, GW_SMOKE_PASSED, GW_SMOKE_FAILED };
#define GW_CIRCUIT_FAILURES 5     /* failures in a row that open the circuit */

struct upstream;
/* An upstream's answer: result or error (borrowed), or both NULL when the upstream went away. */
typedef void up_answer_fn(struct upstream *u, json_t *result, json_t *error, void *arg);

/* A request sent to an upstream, waiting for its answer; keyed by its id on the wire. */
struct up_req {
    uint64_t id;
    up_answer_fn *cb;
    void *arg;
    struct gw_call *call; /* a proxied tools/call (progress goes to it), or NULL */
    bool for_client;      /* made for a client (a call, resources/read, prompts/get): the stdio
                           * relay counts these to know whose a request is (relay.c) */
};

struct upstream {
    struct gateway *gw;
    const struct gw_upstream *cfg;
    struct loop *loop;
    struct child *child;
    struct httpup *http;       /* a url upstream's Streamable HTTP transport, or NULL */
    enum up_state state;
    char *error;               /* why it is down, for the log */
    uint64_t next_id;
    struct strmap *pending;    /* id (decimal) -> struct up_req */
    json_t *tools;             /* what tools/list returned, in order */
    json_t *listed_at_start;   /* tools as listed when the surface was built (discovery is
                                  frozen), or NULL when it was not ready: a reload checks its
                                  file against these, never the listing of a restart under way */
    unsigned pages;            /* tools/list pages followed */
    struct loop_timer *connect_timer;
    struct loop_timer *reap_timer; /* frees an exited child outside its callback */
    struct child *dead_child;
    size_t in_flight;          /* proxied calls sent and not answered */
    struct gw_call *wait_head, *wait_tail; /* calls over max_in_flight, oldest first */
    size_t waiting;
    struct loop_timer *restart_timer; /* the next start after a failure (backoff) */
    unsigned failures;         /* in a row, for the backoff */
    unsigned restarts;         /* since our start */
    uint64_t ready_since;      /* loop ms when it last became ready */
    unsigned seed;             /* for the jitter */
    json_t *resources, *prompts; /* what resources/list and prompts/list returned, when the
                                    file asks for them (gwresources.c) */
    json_t *templates;         /* what resources/templates/list returned (with resources) */
    unsigned extra_pages;      /* their pages followed */
    bool modern;               /* speaking 2026-07-28 (HTTP only): no initialize, no session,
                                  each request names the version in _meta and headers */
    uint64_t discover_id;      /* the server/discover probe's id while it is pending */
    uint64_t related_id;       /* while up_receive runs: the id of the POST whose stream
                                  carried the message (HTTP), else 0 */
    uint64_t retry_at;         /* loop ms of the next start while one is scheduled (circuit.c) */
    bool circuit_opened;       /* it was open-circuit: its close is logged (circuit.c) */
    char protocol[24];         /* the protocol version agreed at the last start, "" before */
    enum gw_smoke smoke;       /* the smoke call after the last initialize (gwsmoke.c) */
    char *smoke_error;         /* why it failed: our own text, never the upstream's */
    uint64_t smoke_id;         /* on the wire while pending */
    size_t smoke_at;           /* which of the smoke calls is on the wire (or was made last) */
    struct loop_timer *smoke_timer;
    struct strmap *held;       /* handle -> struct gw_hold: calls held for a 2026-07-28
                                  client's answer (relay.c) */
    struct strmap *rounds;     /* nonce -> struct gw_round: a 2026-07-28 upstream's input
                                  rounds handed to 2026-07-28 clients, each resumable once */
    /* per-root instances (gwinstance.c): the discovery upstream owns the pool; each instance
     * is an upstream of its own pointing back at its entry */
    struct gwi_pool *pool;
    struct gwi_inst *inst;
    bool off_surface;          /* not ready when the surface was built (discovery is frozen):
                                  none of its tools is served until the server restarts */
    bool refused;              /* its tools differ from expect_tools or from the discovery
                                  instance's: down for good (no restarts), error says why */
};

/* A 2026-07-28 caller's input round taken for its retry (mrtr.c gw_mrtr_round_take), kept
 * until the retry is sent: given back (gw_mrtr_round_give_back) when it never was. nonce ""
 * for none. */
struct gw_round_taken {
    char nonce[33], caller[64];
    uint64_t expires_at;
};

/* A client's tools/call proxied to an upstream. */
struct gw_call {
    struct upstream *up;
    struct mcp_call *call;
    char *tool;                /* the upstream's own name */
    json_t *args;
    uint64_t id;               /* on the wire, 0 while waiting */
    unsigned restarts;         /* the upstream's start it was sent to (a retry needs the same) */
    bool has_progress;         /* the caller asked for progress */
    struct loop_timer *timer;
    struct gw_call *next, *prev; /* in the wait queue */
    bool queued;
    const char *exposed;       /* the name the client called (the gw_tool's) */
    uint64_t started_us;       /* monotonic, for the audit line and the latency */
    struct gw_hold *hold;      /* while held for the client's answer (relay.c); call is NULL */
    /* A 2026-07-28 upstream that answered input_required (mrtr.c): what the next send carries
     * back (its requestState, a string, may be NULL; the caller's inputResponses), how many
     * rounds it asked so far, and the answers being collected from a session-era caller. */
    json_t *input_state, *input_answers;
    unsigned rounds;
    struct gw_collect *collect;
    /* The 2026-07-28 caller's round this call continues (mrtr.c gw_relay_continue), "" for
     * none: given back when the upstream never got to answer (gw_relay_give_back). */
    struct gw_round_taken round;
    /* The upstream's requests relayed to a session-era caller and not answered yet (relay.c):
     * the call owns them, since the engine drops a call's pending requests without calling
     * back when the call ends. */
    struct relay *relays;
};

struct gateway {
    bool stopping;             /* no restarts: the server is going down */
    bool draining;             /* SIGTERM: waiting calls are answered, none is sent any more */
    struct mcp_server *mcp;
    struct loop *loop;
    const struct gwfile *file;
    struct upstream *ups;
    size_t nup;
    struct gw_tool *tools;     /* the exposed surface */
    size_t ntools;
    struct gw_extra *extras;   /* exposed resources and prompts (gwresources.c) */
    struct startctx *startctx; /* the startup_context tool (startctx.c), NULL when not configured */
    char *pins_path, *status_path; /* beside GATEWAY_FILE (gwpin.h) */
    json_t *pins;              /* the pins file's document */
    json_t *status_written;    /* the status file's document as last written (or NULL) */
    gw_event_fn *on_event;     /* the audit log's hook, may be NULL */
    void *event_arg;
    struct approvals *approvals; /* the operator's queue (gateway_set_approvals), may be NULL */
    unsigned approvals_timeout_s; /* in force: the file's at start, then a reload's */
    json_t *restart_needed;    /* what the last SIGHUP's gateway file asked for and could not
                                  apply (gwreload.c): ["upstream x is new", ...], or NULL */
    json_t *bridge_out;        /* {name: true} for each bridge tool a reload took away, or NULL */
    struct gw_wait *waits;     /* held calls waiting for the operator (gwapprove.c) */
    struct gw_tasks *tasks;    /* approve-guarded calls run as MCP tasks (gwtask.c), or NULL
                                  when no tool is guarded approve */
    /* /metrics, by upstream (gateway_metrics); state, restarts and withheld are read live */
    struct metric *m_calls, *m_errors, *m_seconds, *m_mismatches, *m_accepted;
};

/* An exposed tool: which upstream, which of its tools. */
struct gw_extra;

struct gw_tool {
    struct upstream *up;
    char *name;     /* the upstream's own name */
    char *exposed;  /* prefix + name */
    char seen[65];  /* hash of the definition last listed (gwpin.h) */
    json_t *seen_def;
    /* What clients are shown and call: registered once at start, never replaced by a
     * re-discovery. A pin must match this as well as the latest listing. */
    char served[65];
    json_t *served_def;
    bool missing;   /* the latest listing (after a restart) no longer has it */
    bool withheld;  /* its pin differs from served or seen, or it is missing: hidden, calls
                     * get definition_changed */
    enum gw_guard guard; /* tools.guard (gwfile.h) */
    json_t *policy;      /* tools.args of this tool (a reference of ours), or NULL */
    json_t *schema;      /* the upstream's inputSchema as listed at start, before the policy */
    bool dropped;        /* a reload's narrower include left it out: hidden, new calls refused */
};

/* gwguard.c: the pins applied to the surface */
/* After the surface is built: reads the pins, pins what is new, withholds what changed. False
 * (logged) when the pins file cannot be read or written. */
bool gw_pins_start(struct gateway *g);
/* An upstream listed again after a restart: its tools are checked against their pins. */
void gw_pins_rediscovered(struct upstream *u);

/* gateway.c: the warning of a tool whose policy leaves its schema unmatchable
 * (gw_policy_schema's uncallable), at start and on reload. */
void gw_warn_uncallable(const struct gw_tool *t);

/* upstream.c */
bool up_start(struct upstream *u, char *err, size_t errlen);
/* Sends a request; cb gets the answer. False (cb never called) when the upstream is down or
 * has no transport, or the message cannot be sent (the child's queue is full, an HTTP POST
 * cannot start). *id_out gets the id on the wire. */
bool up_request(struct upstream *u, const char *method, json_t *params_take, up_answer_fn *cb,
                void *arg, struct gw_call *call, uint64_t *id_out);
void up_notify(struct upstream *u, const char *method, json_t *params_take);
/* Marks the pending request id as made for a client though it is no tool call (a forwarded
 * resources/read or prompts/get), so the stdio relay counts it. */
void up_request_for_client(struct upstream *u, uint64_t id);
/* Sends one message as it is (an answer to the upstream's request); false when it cannot. */
bool up_send_message(struct upstream *u, json_t *msg);
/* Forgets a request (its answer, if any, is then dropped). */
void up_forget(struct upstream *u, uint64_t id);
void up_cleanup(struct upstream *u);
/* The wait before the next start after failures in a row (0: the first): 0.5 s doubling to
 * 30 s, each 75-125 % (jitter from *seed). Pure; unit-tested. */
unsigned gw_backoff_ms(unsigned failures, unsigned *seed);
/* After a failure: the next start, with backoff (none while the server stops). */
void up_schedule_restart(struct upstream *u);
/* For the transports: one JSON-RPC message from the upstream; a request that cannot be
 * answered (why: a tool error's text after "upstream NAME ", NULL: upstream_unavailable); the
 * upstream stops serving (its calls answered upstream_unavailable, a restart scheduled). */
void up_receive(struct upstream *u, const char *text, size_t len);
/* The same, parsed already (json_loadb with JSON_REJECT_DUPLICATES; msg is taken, NULL or not an
 * object when the text was not a message): a transport that looks into a message itself
 * (httpup.c) parses it once. */
void up_receive_parsed(struct upstream *u, json_t *msg, size_t len);
void up_request_failed(struct upstream *u, uint64_t id, const char *why);
void up_down(struct upstream *u, const char *why);

/* httpup.c: the Streamable HTTP transport of a url upstream */
struct httpup *httpup_new(struct upstream *u);
/* Before an initialize: the session (if any) is forgotten. */
void httpup_start(struct httpup *h);
/* POSTs one JSON-RPC message; false when it cannot be sent. */
bool httpup_send(struct httpup *h, json_t *msg);
/* The protocol version on every later POST (MCP-Protocol-Version; GW_MODERN adds Mcp-Method
 * and Mcp-Name); "" for none. */
void httpup_set_version(struct httpup *h, const char *version);
/* A request given up (timeout, cancel): its transfer ends. */
void httpup_forget(struct httpup *h, uint64_t id);
/* Every transfer ends (no callbacks) and the session is forgotten. */
void httpup_reset(struct httpup *h);
/* Frees; the session's DELETE is sent with every other url upstream's when the last one is
 * freed (at shutdown), all waited for together, briefly. NULL-safe. */
void httpup_free(struct httpup *h);
/* The wait before resuming an answer's stream: its retry: field (-1: none) bounded, else a
 * backoff growing with the resumes in a row that brought nothing (pure; unit-tested). */
unsigned gw_resume_delay_ms(long retry_ms, unsigned misses);

/* upstream.c: tools (and what gw_list_extras lists) are in: the upstream is ready. */
void up_listed(struct upstream *u);

/* gwresources.c: after tools/list, resources/list and prompts/list where the file asks for
 * them, then up_listed. */
void gw_list_extras(struct upstream *u);
struct gw_plan;
struct gw_plan_upstream;
/* Registers the ready upstreams' resources and prompts as planned (gwsurface.h); false (logged,
 * naming both) on a collision or a bad name. */
bool gw_expose_extras(struct gateway *g, const struct gw_plan *p);
void gw_extras_free(struct gateway *g);
/* gateway.c: what g's listed upstreams offer, for gw_plan_surface (in: g->nup entries). */
void gw_plan_input(const struct gateway *g, struct gw_plan_upstream *in);
/* gwprobe.c: gateway_probe's rows of g's upstreams once started; how many problems serve would
 * refuse (or an upstream that did not start, a failed smoke call). */
size_t gw_probe_rows(const struct gateway *g, gw_probe_fn *fn, void *arg);

/* The largest upstream request params relayed in an input-required result (as JSON), and the
 * largest input round kept for a session-era caller (relay.c, mrtr.c). */
#define RELAY_PARAMS_MAX (1024 * 1024)

/* relay.c: an upstream's request during a call (msg, its method); related_id is the request
 * whose HTTP stream carried it, 0 over stdio. True when handled (relayed to the calling client
 * or refused with an error), false for methods it does not relay. */
bool gw_relay_request(struct upstream *u, json_t *msg, const char *method, uint64_t related_id);
/* A 2026-07-28 retry (call) of the exposed tool whose upstream name is tool: false when its
 * state names no held call (a call of its own). Else true, and *held is the held call it takes
 * over (the client's answer already sent upstream; the caller attaches call to it), or NULL
 * when the call was answered with a tool error (no such held call for this caller). */
bool gw_relay_resume(struct upstream *u, struct mcp_call *call, const char *tool,
                     struct gw_call **held);
/* Whether call is such a retry: its sealed state names a held call (gw_relay_resume then
 * takes it over, or answers that it is gone). */
bool gw_relay_resumes(const struct mcp_call *call);
/* The call is no longer held (resumed, or ended): its handle is forgotten. NULL-safe. */
void gw_relay_release(struct gw_call *gc);
/* Who made a held call (its mcp_call is gone). */
const char *gw_relay_caller(const struct gw_call *gc);
/* Shutdown: the held calls of u are freed (nothing is sent). */
void gw_relay_cleanup(struct upstream *u);
/* The client capability the request (method, params) needs, as mcp_call_client_supports
 * names it ("sampling.tools", "elicitation.url"...), with the refusal when it is missing. */
const char *gw_relay_needed_capability(const char *method, json_t *params,
                                       const char **refusal);

/* mrtr.c: a 2026-07-28 upstream's input_required results (its input rounds) */
/* gc ends: the answers it was collecting from a session-era caller are dropped. */
void gw_mrtr_release(struct gw_call *gc);
/* A session-era caller's answers to an input round: answers (key -> its result, borrowed) once
 * all are in, or NULL with refused (why) at the first it refused. */
typedef void gw_collect_fn(void *owner, json_t *answers, const char *refused);
/* The round's requests (as gw_mrtr_requests gave them, borrowed) go to call's client on its
 * stream, one each; done(owner, ...) is called once, and never when the call ends first.
 * *co_out is set before anything is sent and is the owner's: it ends the call, then frees the
 * collect (gw_collect_free, from done too). False when the client cannot take a request now
 * (the owner ends the call). */
bool gw_collect_start(struct gw_collect **co_out, struct mcp_call *call, json_t *requests,
                      gw_collect_fn *done, void *owner);
void gw_collect_free(struct gw_collect *co); /* NULL-safe */
/* Shutdown: u's rounds are forgotten. */
void gw_mrtr_cleanup(struct upstream *u);
/* For any request that may be answered input_required (tools/call, resources/read, prompts/get):
 * the upstream's inputRequests in result as relayed to call, in its round number rounds; NULL
 * with why when not (too many rounds, a bad requestState, a request the caller cannot answer). */
json_t *gw_mrtr_requests(struct mcp_call *call, json_t *result, unsigned rounds, char *why,
                         size_t whylen);
/* A 2026-07-28 caller's round of u (bound_to: what its retry must ask again, rounds so far,
 * state: the upstream's requestState or NULL) opened, resumable once: the state to seal into
 * our input_required result, or NULL with why (*busy: the caller's rounds are at their cap). */
json_t *gw_mrtr_round_open(struct upstream *u, struct mcp_call *call, const char *bound_to,
                           unsigned rounds, json_t *state, bool *busy, char *why, size_t whylen);
/* A 2026-07-28 caller's retry (its sealed state names a round of u bound to bound_to: the
 * tool's upstream name, or gwresources.c's method and URI or prompt), the one check of it for
 * every kind of request: true with the round taken (once) into *taken, *rounds and *state
 * (borrowed from the call, NULL for none) set; false when no such round is open (already
 * answered, expired, another upstream's, tool's or caller's). */
bool gw_mrtr_round_take(struct upstream *u, struct mcp_call *call, const char *bound_to,
                        unsigned *rounds, json_t **state, struct gw_round_taken *taken);
/* The retry that took the round was never sent (the upstream got nothing): the round is open
 * again, within its lifetime, so the caller's answers stay good for another try. Only then: a
 * retry lost after sending may have acted upstream, and its round stays used. */
void gw_mrtr_round_give_back(struct upstream *u, struct gw_round_taken *taken);
/* A 2026-07-28 upstream's result for gc's tools/call (gc->call set, its slot still counted):
 * false when it is no input_required result. Else true, and mrtr.c took the call over: it
 * asks the caller (an input_required result of ours to a 2026-07-28 caller; requests on the
 * call's stream to a session-era one, then gw_call_retry with the answers) or ends it with
 * an error (gw_call_record, gw_call_release). */
bool gw_relay_input(struct gw_call *gc, json_t *result);
/* A 2026-07-28 call (gc, not yet sent) whose sealed state continues an upstream's input round:
 * gc gets what to send back, and NULL is returned (for a first round too). Else the tool error
 * to answer with (a round already resumed, expired, or of another tool or upstream). */
json_t *gw_relay_continue(struct gw_call *gc);
/* The call ends without an answer from its upstream (unavailable: down, or the send failed at
 * the wire): the round it continued is given back, so the caller's answers stay good for
 * another try within the state's lifetime. */
void gw_relay_give_back(struct gw_call *gc);
/* The capabilities the calling client declared, as a 2026-07-28 upstream reads them
 * (elicitation form/url, sampling tools, roots). */
json_t *gw_relay_caps(struct mcp_call *call);

/* circuit.c: after GW_CIRCUIT_FAILURES failures in a row the upstream is open-circuit until its
 * next start (the backoff period), half-open while that trial start runs, closed once ready. */
/* What /readyz and /metrics call u's state: the circuit's, else starting, listing, ready,
 * restarting or down. */
const char *gw_state_name(const struct upstream *u);
/* "open", "half_open", or NULL when closed. */
const char *gw_circuit_state(const struct upstream *u);
/* up_schedule_restart: a failure was counted and the next start is delay_ms away. */
void gw_circuit_failed(struct upstream *u, uint64_t delay_ms);
/* The upstream became ready: a half-open circuit closes. */
void gw_circuit_ready(struct upstream *u);
/* Seconds (rounded up, at least 1) until the next start; 0 when none is scheduled. */
unsigned gw_circuit_retry_in_s(const struct upstream *u);

/* gwsmoke.c: the smoke calls ([{tool, arguments}] of the gateway file), one after the other,
 * after each initialize; /readyz counts a required upstream ready only once all passed. */
void gw_smoke_start(struct upstream *u);
bool gw_smoke_passed(const struct upstream *u); /* true too when none is configured */
/* Adds smoke (passed, failed, pending) and smoke_error to an upstream's /readyz object. */
void gw_smoke_describe(const struct upstream *u, json_t *o);
void gw_smoke_cleanup(struct upstream *u);
/* Whether a successful tools/call result says it failed: isError true, or a nested provider
 * error (an error member, success/ok false, status error/failed) in structuredContent or in a
 * text item holding JSON. why gets where it was found (never the value). */
bool gw_result_failed(json_t *result, char *why, size_t whylen);

/* gwcall.c */
void gw_tool_handler(struct mcp_call *call, json_t *args, void *arg);
/* A slot freed (an answer, a cancel): the oldest waiting call goes. */
void gw_call_next(struct upstream *u);
/* The upstream went away: the waiting calls are answered upstream_unavailable. */
void gw_calls_fail_waiting(struct upstream *u);
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
void gw_tool_record(struct gw_tool *t, struct mcp_call *call, uint64_t started_us,
                    const char *status);
/* The same for a call whose mcp_call is gone (a task): by caller, at upstream u (t's or an
 * instance). */
void gw_tool_record_as(struct gw_tool *t, struct upstream *u, const char *caller,
                       uint64_t started_us, const char *status);

/* gwapprove.c: an approve-guarded call waits in the operator's queue, then is forwarded
 * (gw_call_forward) or answered approval_denied. */
void gw_approval_wait(struct gw_tool *t, struct mcp_call *call, json_t *args, uint64_t started_us);
/* A reload left tools out (gw_tool.dropped): the requests of theirs waiting for the operator,
 * held calls and tasks, are denied (GW_BY_RELOAD) rather than sent once approved. */
#define GW_BY_RELOAD "reload"
#define GW_DROPPED_REASON "the tool is no longer exposed (gateway file reloaded)"
void gw_approvals_deny_dropped(struct gateway *g);
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
void gw_tasks_start(struct gateway *g);
/* A slot of u may be free (gw_call_next): the approved tasks waiting for one there go first,
 * oldest first. */
void gw_tasks_slot_free(struct upstream *u);
/* gw_approvals_deny_dropped for tasks. */
void gw_tasks_deny_dropped(struct gateway *g);
/* Teardown: pending approvals withdrawn, calls forgotten, every task freed. */
void gw_tasks_free(struct gateway *g);

#endif
