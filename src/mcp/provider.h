/* provider.h — what the app drives: a provider puts tools (and resources, prompts) on the
 * engine and answers the server's lifecycle. The bridge and the gateway each export one
 * (bridge_provider.c, gw_provider.c); app_run() drives an array of them in order, so a later
 * provider sees the tool names of the earlier ones. Every hook but setup may be NULL. */
#ifndef HM_PROVIDER_H
#define HM_PROVIDER_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct approvals;
struct buf;
struct loop;
struct mcp_server;
struct provider;

/* A line of the audit log that is not an HTTP request: something a provider did (a call the
 * gateway proxied, a tool it withheld, an approval). Never arguments or results. */
struct provider_event {
    const char *event;     /* "gateway_call", "gateway_withheld", ... */
    const char *principal; /* who asked, or NULL (the server itself, an operator's file) */
    const char *upstream, *tool, *upstream_tool, *status; /* each may be NULL */
    const char *decided_by; /* approvals: "uid N (user)", "timeout", "withdrawn", "shutdown" */
    double duration_ms;     /* < 0: not a timed event */
};

/* What the app hands each provider at setup; valid until teardown. The settings a provider
 * reads it is given when it is built (serve.c). */
struct provider_host {
    struct mcp_server *mcp;
    struct loop *loop;
    struct approvals *approvals; /* the operator's queue (answered through the control socket) */
    const char *replica_id;      /* with STORE_URL: this server in the store's replicas */
    /* Writes one audit line (nothing when the audit log is off). */
    void (*audit)(void *audit_arg, const struct provider_event *e);
    void *audit_arg;
    /* The providers set up before this one (their tools are on the engine already). */
    const struct provider *before;
    size_t nbefore;
};

struct provider_ops {
    const char *name;
    /* Registers tools, resources, prompts; false (the reason logged) stops the server. */
    bool (*setup)(void *self, const struct provider_host *h);
    /* Its tool names: the ones it registered, or with all every tool it could offer, kept or
     * not (a filter judges those again at reload). Borrowed, until the next reload. */
    const char *const *(*tools)(void *self, bool all, size_t *n);
    /* The name a filter of tool names judges name by (an alias comes as its tool). */
    const char *(*judged_as)(void *self, const char *name);
    void (*reload)(void *self); /* after a successful SIGHUP reload of the settings */
    void (*drain)(void *self);  /* SIGTERM: the drain begins */
    /* Work outside the engine's calls the drain waits for like a call (the gateway's tasks
     * running upstream): how much is left. */
    size_t (*draining_work)(void *self);
    /* Extra /health fields: appended to the JSON object (a string starting with ","). */
    void (*health)(void *self, char *out, size_t outlen);
    /* Extra /metrics families (Prometheus text appended to out). */
    void (*metrics)(void *self, struct buf *out);
    /* GET /readyz and /healthz: appends a JSON object naming each dependency's state and
     * returns whether the provider is ready. */
    bool (*ready)(void *self, struct buf *out);
    /* The control socket's {"op":"status"}: facts for the operator's commands (what waits
     * for a restart), merged into the answer. */
    json_t *(*status)(void *self);
    /* A tool's own limits, counted over every caller of it: calls a minute and calls in flight
     * (0: none of that kind); false when it sets none. Asked before each tools/call. */
    bool (*tool_limits)(void *self, const char *tool, unsigned *calls_per_min,
                        unsigned *calls_in_flight);
    /* Whether name is one of its upstreams, which an OAuth client may ask for as the scope
     * gateway:<name>. */
    bool (*knows_upstream)(void *self, const char *name);
    /* After every request was answered and the engine is gone; frees self. */
    void (*teardown)(void *self);
};

struct provider {
    const struct provider_ops *ops;
    void *self;
};

#endif
