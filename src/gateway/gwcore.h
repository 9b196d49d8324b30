/* gwcore.h — the gateway's state (struct gateway), which its parts share: the upstreams (file
 * order), the exposed surface, the pins, the operator's queue, the hooks to the audit log and
 * the metrics. Built and torn down by gateway.c, the composition, which wires the parts:
 *
 *   policy      gwfile.h (the file: gwfile.c parses, gwrules.c says what its rules mean for a
 *               tool), gwpolicy.h (tools.args on a call), gwsecret.h, gwinterp.h
 *   transports  child.h (a stdio child), httpup.h (Streamable HTTP)
 *   upstreams   upstream.h: lifecycle (upstream.c, uplist.c, circuit.c, gwsmoke.c,
 *               gwinstance.c) and the JSON-RPC client (rpcclient.c, jscan.h); it calls
 *               nothing above it by name, and tells the rest through struct up_events
 *   calls       gwcall.h (gwcall.c, gwapprove.c, gwtask.c), relay.h (relay.c, mrtr.c)
 *   surface     gwsurface.h (the plan: every exposure rule, pure), gwexpose.h (registering
 *               it: gateway.c, gwresources.c; pins: gwguard.c, gwpin.h; probe rows:
 *               gwprobe.c), startctx.h, gwreload.c (SIGHUP)
 *   shared      gwstore.h (with STORE_URL: the pins and input-round nonces every replica
 *               shares, in PostgreSQL), gwtaskpg.h (the MCP tasks, every replica's)
 *   reporting   gwevent.h (audit events, upstream errors; calls nothing)
 *
 * Each part includes the headers of the parts below it: calls < upstreams < transports.
 * Exported names carry their file's prefix: up_ (upstream.c, rpcclient.c, uplist.c),
 * gw_circuit_, gw_smoke_, gwi_ (gwinstance.c), httpup_, child_, gw_call_, gw_approval_,
 * gw_task_, gw_relay_, gw_mrtr_, gw_plan_ (gwsurface.c), gw_pins_ (gwguard.c), gw_resources_,
 * gw_probe_, gw_event_, gw_store_ (gwstore.c), gwtaskpg_ and gateway_ (gateway.c); in policy
 * gw_pin_ and gw_pins_ (gwpin.c), gw_policy_, gw_secret_, gw_tool_ (gwrules.c) and gwfile_
 * (gwfile.c). scripts/check-symbols.sh holds each file to its own (the few older exact names it
 * allows are listed there). */
#ifndef HM_GWCORE_H
#define HM_GWCORE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gateway.h"
#include "list.h"

struct strmap;

struct approvals;
struct gw_extra;
struct gw_store;
struct gw_tasks;
struct gw_tool;
struct gw_wait;
struct gwfile;
struct loop;
struct mcp_server;
struct metric;
struct startctx;
struct up_events;
struct upstream;

struct gateway {
    bool stopping;     /* no restarts: the server is going down */
    bool draining;     /* SIGTERM: waiting calls are answered, none is sent any more */
    unsigned time_div; /* tests only: backoff and stable window divided by this (gateway_new) */
    struct mcp_server *mcp;
    struct loop *loop;
    const struct gwfile *file;
    struct upstream *ups;
    size_t nup;
    struct gw_tool *tools; /* the exposed surface */
    size_t ntools;
    struct strmap *tool_index; /* exposed name -> its gw_tool in tools */
    size_t nlimited; /* tools with a limit (tools.limits): none spares the call gate a lookup */
    struct gw_extra *extras;   /* exposed resources and prompts (gwresources.c) */
    struct startctx *startctx; /* the startup_context tool (startctx.c), NULL when not configured */
    char *pins_path, *status_path; /* beside GATEWAY_FILE (gwpin.h) */
    json_t *pins;                  /* the pins file's document, or the store's pins as one */
    const char *store_url;         /* STORE_URL (borrowed), or NULL: pins in the file */
    const char *store_password;
    const char *replica_id;         /* with store_url: this server in hm_replica (borrowed) */
    struct gw_store *store;         /* with store_url: the shared pins and nonces (gwstore.h) */
    json_t *status_written;         /* the status file's document as last written (or NULL) */
    const struct up_events *events; /* what upstreams tell the rest (set by gateway.c) */
    gw_event_fn *on_event;          /* the audit log's hook, may be NULL */
    void *event_arg;
    struct approvals *approvals;  /* the operator's queue (gateway_set_approvals), may be NULL */
    unsigned approvals_timeout_s; /* in force: the file's at start, then a reload's */
    json_t *restart_needed;       /* what the last SIGHUP's gateway file asked for and could not
                                     apply (gwreload.c): ["upstream x is new", ...], or NULL */
    json_t *bridge_out;     /* {name: true} for each bridge tool a reload took away, or NULL */
    struct list waits;      /* held calls waiting for the operator (gwapprove.c) */
    struct gw_tasks *tasks; /* approve-guarded calls run as MCP tasks (gwtask.c), or NULL
                               when no tool is guarded approve */
    /* /metrics, by upstream (gateway_metrics); state, restarts and withheld are read live */
    struct metric *m_calls, *m_errors, *m_seconds, *m_mismatches, *m_accepted;
};

#endif
