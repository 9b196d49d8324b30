/* gateway.h — upstream MCP servers behind our endpoint: each stdio upstream is one
 * child shared by every client, initialized and listed once at start (frozen discovery), and
 * the tools its rules include are registered on the engine as prefix + name; a call is
 * forwarded with its id remapped, progress relayed, cancellation forwarded. Loop thread. */
#ifndef HM_GATEWAY_H
#define HM_GATEWAY_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gateway;
struct gwfile;
struct loop;
struct mcp_server;

/* What the gateway has to tell the audit log (the layer above wires it: gateway_new's on_event):
 * a proxied call ended, a tool was withheld because its definition differs from its pin, a pin
 * the operator accepted was applied (SIGHUP after `gateway accept`), or an approve-guarded call
 * was decided (status "approved", "denied", "timed_out", "withdrawn"). Never arguments or results.
 * The strings live for the callback only. */
enum gw_event_kind { GW_EVENT_CALL, GW_EVENT_WITHHELD, GW_EVENT_ACCEPTED, GW_EVENT_APPROVAL };
struct gw_event {
    enum gw_event_kind kind;
    const char *upstream;
    const char *tool;          /* the exposed name */
    const char *upstream_tool; /* the upstream's own name */
    const char *status;        /* calls: "ok", a tool error code, "cancelled", a JSON-RPC code */
    const char *caller;        /* calls: mcp_call_caller(), else NULL */
    const char *decided_by;    /* approvals: "uid N (user)", "timeout", "withdrawn", "shutdown" */
    uint64_t duration_us;      /* calls */
};
typedef void gw_event_fn(const struct gw_event *e, void *arg);

/* STORE_URL and its password (borrowed: they outlive the gateway). */
struct gateway_store {
    const char *url;
    const char *password;
    const char *replica_id; /* this server in the store's replicas: the holder of its tasks */
};

/* Starts every upstream of f and waits (running the loop) until each is listed or failed or
 * its connect_timeout passed, then registers the exposed tools. taken: names already on the
 * engine (the bridge's), for the collision check. Returns NULL (the reason logged) when the
 * surface cannot be built: an exposed name clients would refuse, or two that collide. f must
 * outlive the gateway. gateway_file (GATEWAY_FILE's path) places the pins beside it (gwpin.h);
 * a tool whose definition differs from its pin is withheld (gwguard.c). store: STORE_URL's,
 * when set (the pins and input-round nonces are then every replica's, gwstore.h), or NULL. */
struct gateway *gateway_new(struct mcp_server *mcp, struct loop *l, const struct gwfile *f,
                            const char *gateway_file, const struct gateway_store *store,
                            const char *const *taken, size_t ntaken, gw_event_fn *on_event,
                            void *event_arg);
/* SIGHUP: re-reads the pins file (after `gateway accept`) and shows again each tool that now
 * matches its pin; calls in flight are untouched. False (logged) when the file is bad. */
bool gateway_reload_pins(struct gateway *g);
/* SIGHUP: GATEWAY_FILE read again (f, from path: parsed and checked as serve checks it, taken
 * and freed). What only restricts or needs no new process (guards, argument policies, limits, an
 * include, exclude or bridge_tools that leaves tools out, approvals.timeout_s,
 * startup_context's files) applies to every call that starts from now on; calls in flight keep
 * what they started with. What needs a new process or a new listing (an upstream added or
 * removed, its command, args, env, url, headers, prefix..., a wider include or bridge_tools) is
 * not applied: one warn line each, and gateway_restart_needed lists them until a restart.
 * bridge: every tool the bridge offers (registered at start or left out by bridge_tools);
 * judged_as[i]: the name bridge_tools judges bridge[i] by (an alias: the tool it stands for),
 * NULL: each by its own. False (one warn line, nothing changed) when f cannot apply. */
bool gateway_reload_file(struct gateway *g, struct gwfile *f, const char *path,
                         const char *const *bridge, const char *const *judged_as, size_t nbridge);
/* What the last reload could not apply, one text each ("upstream x is new", "upstream y:
 * command changed"): a new array, empty when nothing waits for a restart. NULL-safe. */
json_t *gateway_restart_needed(const struct gateway *g);
/* The limits of an exposed tool (tools.limits, as the last reload left them), counted over every
 * caller of it: calls a minute and calls in flight, 0: none of that kind. False when it has
 * none (or is no tool of ours). */
bool gateway_tool_limits(const struct gateway *g, const char *tool, unsigned *calls_per_min,
                         unsigned *calls_in_flight);
/* /readyz and /healthz: appends {"NAME": {state, required, restarts[, error][, withheld]}, ...}
 * to out (withheld: the exposed names whose definition differs from its pin)
 * (states: starting, listing, ready, restarting, down, open and half_open (circuit.c) with
 * retry_in_s; smoke and smoke_error when it has a smoke call (gwsmoke.c); the errors are our own
 * text, never a secret); returns whether every required upstream is ready and passed its smoke. */
struct buf;
bool gateway_ready(const struct gateway *g, struct buf *out);
/* /metrics: per upstream its state, restarts, calls by outcome, errors, call latency, withheld
 * tools, pin mismatches and accepted pins (Prometheus text appended to out; labels are upstream
 * names, never a secret). */
void gateway_metrics(const struct gateway *g, struct buf *out);
/* `gateway check --probe`: what one upstream offers, one row per tool, resource and prompt;
 * one row per upstream that started (its protocol and smoke call); or one per upstream that did
 * not start (error says why, our own text, never a secret). */
enum gw_probe_kind {
    GW_PROBE_TOOL,     /* tool, exposed, verdict, rule, problem */
    GW_PROBE_FAILED,   /* error: why it did not start */
    GW_PROBE_UPSTREAM, /* protocol, smoke (error: why the smoke call failed) */
    GW_PROBE_RESOURCE, /* tool: its URI; exposed: the same URI, or NULL and problem says why */
    GW_PROBE_PROMPT,   /* tool: its name; exposed: prefix + name; problem: serve would refuse */
};
struct gw_probe_row {
    enum gw_probe_kind kind;
    const char *upstream;
    const char *tool;     /* the upstream's own name (untrusted text, made printable) */
    const char *exposed;  /* prefix + tool when its rules include it, else NULL */
    const char *verdict;  /* included, excluded, not included, default deny (gw_verdict_name) */
    const char *rule;     /* the deciding glob, or NULL */
    const char *problem;  /* an included name serve would refuse (bad, or taken): why */
    const char *error;    /* FAILED: why it did not start; UPSTREAM: why its smoke failed */
    const char *protocol; /* UPSTREAM: the version agreed (2025-11-25 or 2026-07-28...) */
    const char *smoke;    /* UPSTREAM: NULL (none configured), "passed" or "failed" */
    const char *smoke_tool;
    int resources, prompts; /* UPSTREAM: how many it offers, -1 when not enabled */
};
typedef void gw_probe_fn(const struct gw_probe_row *row, void *arg);
/* Starts every upstream of f on l, waits as serve does (each one's connect_timeout, then the
 * smoke calls within each one's timeout), tells fn of each upstream and every tool, resource
 * and prompt offered in the upstream's order, then stops them; nothing is registered, pinned or
 * restarted. Returns how many upstreams did not start or failed their smoke call plus how many
 * names serve would refuse: 0 when serve would build this surface and be ready. */
size_t gateway_probe(struct loop *l, const struct gwfile *f, gw_probe_fn *fn, void *arg);
/* Kills every child and frees; call after every MCP call was answered (mcp_free). NULL-safe. */
/* SIGTERM: the calls waiting for a slot are answered upstream_unavailable ("the server is
 * stopping") and none is sent any more; calls at an upstream go on until the drain ends (then
 * the engine cancels them, which reaches the upstream as notifications/cancelled). NULL-safe. */
void gateway_drain(struct gateway *g);
/* Approve-guarded calls running as MCP tasks (approved, at or on their way to an upstream):
 * the drain waits for them as for calls. NULL-safe. */
size_t gateway_tasks_running(const struct gateway *g);
void gateway_free(struct gateway *g);

struct approvals;
/* The operator's queue for tools guarded `approve`; without one their calls are denied. Call
 * before serving; q outlives g. */
void gateway_set_approvals(struct gateway *g, struct approvals *q);

#endif
