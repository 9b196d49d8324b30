/* upstream.h — the upstream lifecycle and its JSON-RPC client: one upstream MCP server behind
 * the gateway (struct upstream), started over its transport (a stdio child, child.h; Streamable
 * HTTP, httpup.h), initialized, listed, restarted with backoff behind a circuit breaker, its
 * smoke calls run, its per-root instances kept (gwinstance.h). upstream.c (start, handshake,
 * going down, restarts), rpcclient.c (ids, the pending map, sending, what the upstream sends),
 * uplist.c (discovery), circuit.c, gwsmoke.c, gwinstance.c. It calls nothing of the call
 * pipeline or the surface by name: what they must hear goes through struct up_events. */
#ifndef HM_UPSTREAM_H
#define HM_UPSTREAM_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gwfile.h"
#include "httpup.h"
#include "list.h"

struct child;
struct gateway;
struct gw_call;
struct gw_hold;
struct gwi_inst;
struct gwi_pool;
struct loop;
struct loop_timer;
struct strmap;

#define GW_LIST_PAGES 100       /* tools/list pages followed at most */
#define GW_TOOLS_MAX 1024       /* tools of one upstream at most */
#define GW_BACKOFF_MIN_MS 500   /* the first restart after a failure */
#define GW_BACKOFF_MAX_MS 30000 /* doubling up to this */
#define GW_STABLE_MS 30000      /* ready this long: the next failure starts the backoff anew */

enum up_state { UP_STARTING, UP_LISTING, UP_READY, UP_DOWN };
/* The smoke call's outcome: none configured, sent and not answered, passed, failed. */
enum gw_smoke { GW_SMOKE_NONE, GW_SMOKE_PENDING, GW_SMOKE_PASSED, GW_SMOKE_FAILED };
#define GW_CIRCUIT_FAILURES 5 /* failures in a row that open the circuit */

struct upstream;
/* What an upstream tells the layers above it (the call pipeline, the surface), set by gateway.c:
 * the lifecycle, its JSON-RPC client and its transports call nothing above them by name. */
struct up_events {
    /* notifications/progress for the proxied call gc of a pending request */
    void (*progress)(struct gw_call *gc, json_t *params);
    /* a request of the upstream's (msg, its method; related_id: the request whose HTTP stream
     * carried it, else 0): true when handled (relayed or refused), false to refuse it here */
    bool (*request)(struct upstream *u, json_t *msg, const char *method, uint64_t related_id);
    /* the upstream went away, or the server drains: its waiting calls are answered */
    void (*fail_waiting)(struct upstream *u);
    /* a slot may be free (an instance became ready): the next waiting call goes */
    void (*slot_free)(struct upstream *u);
    /* listed again after a (re)start: its tools are checked against their pins */
    void (*relisted)(struct upstream *u);
    /* shutdown: the calls held for its clients are freed */
    void (*cleanup)(struct upstream *u);
};

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
    struct httpup *http; /* a url upstream's Streamable HTTP transport, or NULL */
    enum up_state state;
    char *error; /* why it is down, for the log */
    uint64_t next_id;
    struct strmap *pending;  /* id (decimal) -> struct up_req */
    json_t *tools;           /* what tools/list returned, in order */
    json_t *listed_at_start; /* tools as listed when the surface was built (discovery is
                                frozen), or NULL when it was not ready: a reload checks its
                                file against these, never the listing of a restart under way */
    unsigned pages;          /* tools/list pages followed */
    struct loop_timer *connect_timer;
    struct loop_timer *reap_timer; /* frees an exited child outside its callback */
    struct child *dead_child;
    size_t in_flight;       /* proxied calls sent and not answered */
    struct list wait_queue; /* calls over max_in_flight, oldest first (gwcall.c) */
    size_t waiting;
    struct loop_timer *restart_timer; /* the next start after a failure (backoff) */
    unsigned failures;                /* in a row, for the backoff */
    unsigned restarts;                /* since our start */
    uint64_t ready_since;             /* loop ms when it last became ready */
    unsigned seed;                    /* for the jitter */
    json_t *resources, *prompts;      /* what resources/list and prompts/list returned, when the
                                         file asks for them (gwresources.c) */
    json_t *templates;                /* what resources/templates/list returned (with resources) */
    unsigned extra_pages;             /* their pages followed */
    bool modern;                      /* speaking 2026-07-28 (HTTP only): no initialize, no session,
                                         each request names the version in _meta and headers */
    uint64_t discover_id;             /* the server/discover probe's id while it is pending */
    uint64_t related_id;              /* while up_receive runs: the id of the POST whose stream
                                         carried the message (HTTP), else 0 */
    uint64_t retry_at;   /* loop ms of the next start while one is scheduled (circuit.c) */
    bool circuit_opened; /* it was open-circuit: its close is logged (circuit.c) */
    char protocol[24];   /* the protocol version agreed at the last start, "" before */
    enum gw_smoke smoke; /* the smoke call after the last initialize (gwsmoke.c) */
    char *smoke_error;   /* why it failed: our own text, never the upstream's */
    uint64_t smoke_id;   /* on the wire while pending */
    size_t smoke_at;     /* which of the smoke calls is on the wire (or was made last) */
    struct loop_timer *smoke_timer;
    struct strmap *held;   /* handle -> struct gw_hold: calls held for a 2026-07-28
                              client's answer (relay.c) */
    struct strmap *rounds; /* nonce -> struct gw_round: a 2026-07-28 upstream's input
                              rounds handed to 2026-07-28 clients, each resumable once */
    /* per-root instances (gwinstance.c): the discovery upstream owns the pool; each instance
     * is an upstream of its own pointing back at its entry */
    struct gwi_pool *pool;
    struct gwi_inst *inst;
    bool off_surface; /* not ready when the surface was built (discovery is frozen):
                         none of its tools is served until the server restarts */
    bool refused;     /* its tools differ from expect_tools or from the discovery
                         instance's: down for good (no restarts), error says why */
};

/* upstream.c: start (the transport, then the handshake), going down, coming back. */
bool up_start(struct upstream *u, char *err, size_t errlen);
/* The upstream stops serving (its calls answered upstream_unavailable, a restart scheduled). */
void up_down(struct upstream *u, const char *why);
/* After a failure: the next start, with backoff (none while the server stops). */
void up_schedule_restart(struct upstream *u);
/* The wait before the next start after failures in a row (0: the first): 0.5 s doubling to
 * 30 s, each 75-125 % (jitter from *seed). Pure; unit-tested. */
unsigned up_backoff_ms(unsigned failures, unsigned *seed);
void up_cleanup(struct upstream *u);

/* uplist.c: discovery after the handshake (tools/list, then resources, templates and prompts
 * where the file asks for them); then the upstream is ready. */
void up_list(struct upstream *u);

/* rpcclient.c: the JSON-RPC client. */
/* Sends a request; cb gets the answer. False (cb never called) when the upstream is down or
 * has no transport, or the message cannot be sent (the child's queue is full, an HTTP POST
 * cannot start). *id_out gets the id on the wire. call (opaque here) is a proxied tool call:
 * its progress goes to it (up_events.progress), and a params._meta.progressToken it carries
 * (any value) becomes our id. */
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
/* One JSON-RPC message from the upstream (a stdio line). */
void up_receive(struct upstream *u, const char *text, size_t len);
/* The same, parsed already (json_loadb with JSON_REJECT_DUPLICATES; msg is taken, NULL or not an
 * object when the text was not a message): a transport that looks into a message itself
 * (httpup.c) parses it once. */
void up_receive_parsed(struct upstream *u, json_t *msg, size_t len);
/* A request that cannot be answered (why: a tool error's text after "upstream NAME ", NULL:
 * upstream_unavailable). */
void up_request_failed(struct upstream *u, uint64_t id, const char *why);
/* The child's callbacks (child.h): a line, an oversized message. */
void up_on_line(char *line, size_t len, void *arg);
void up_on_oversized(const char *head, size_t head_len, const char *tail, size_t tail_len,
                     void *arg);
/* Every pending request answered "gone" (the upstream went down); the pending map freed. */
void up_fail_pending(struct upstream *u);
void up_pending_free(struct upstream *u);

/* circuit.c: after GW_CIRCUIT_FAILURES failures in a row the upstream is open-circuit until its
 * next start (the backoff period), half-open while that trial start runs, closed once ready. */
/* What /readyz and /metrics call u's state: the circuit's, else starting, listing, ready,
 * restarting or down. */
const char *gw_circuit_state_name(const struct upstream *u);
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
bool gw_smoke_result_failed(json_t *result, char *why, size_t whylen);

#endif
