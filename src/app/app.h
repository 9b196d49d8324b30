/* app.h — the composition root both binaries share: loop, signals, HTTP routing (/mcp,
 * /health, /metrics), bearer authentication, the "listening on" line, reload and drain. */
#ifndef HM_APP_H
#define HM_APP_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct audit;
struct approvals;
struct buf;
struct config;
struct loop;
struct mcp_server;

/* Returns false (the reason logged) when the server cannot run. */
typedef bool app_setup_fn(struct mcp_server *mcp, struct loop *l, void *arg);

struct app_opts {
    struct config *cfg;     /* settings; reloaded in place on SIGHUP when cfg->env_file is set */
    const char *service;    /* serverInfo.name and /health "service" */
    app_setup_fn *setup;    /* registers tools, resources, prompts */
    void *setup_arg;
    void (*reload)(void *setup_arg);   /* after a successful SIGHUP reload; may be NULL */
    void (*drain)(void *setup_arg);    /* SIGTERM: the drain begins; may be NULL */
    /* Work outside the engine's calls the drain waits for like a call (the gateway's tasks
     * running upstream): how much is left; may be NULL. */
    size_t (*draining_work)(void *setup_arg);
    void (*teardown)(void *setup_arg); /* after every request was answered; may be NULL */
    /* Extra /health fields: appended to the JSON object (a string starting with ","). */
    void (*health)(void *setup_arg, char *out, size_t outlen);
    /* Extra /metrics families (Prometheus text appended to out); may be NULL. */
    void (*metrics)(void *setup_arg, struct buf *out);
    /* GET /readyz and /healthz: appends a JSON object naming each dependency's state (the
     * gateway's upstreams) and returns whether the server is ready; NULL: always ready, "{}". */
    bool (*ready)(void *setup_arg, struct buf *out);
    /* The audit log (NULL when off), before setup, for providers that write event lines of
     * their own (audit_log_event: the gateway's calls and pins); valid until teardown. */
    void (*audit)(void *setup_arg, struct audit *audit);
    /* The operator's approval queue, before setup, for providers whose calls wait for a person
     * (answered through the control socket beside the env file); valid until teardown. */
    void (*approvals)(void *setup_arg, struct approvals *q);
    unsigned approvals_timeout_s; /* 0: APPROVALS_DEFAULT_TIMEOUT_S */
    /* The control socket's {"op":"status"}: an object of facts for the operator's commands
     * (the gateway's changes waiting for a restart), merged into the answer; may be NULL. */
    json_t *(*status)(void *setup_arg);
    /* The server is a child subreaper (reaper.h): true for a child a provider reaps itself
     * (the gateway's upstreams); every other exited child is reaped by the app. May be NULL. */
    bool (*owned_child)(pid_t pid);
    /* Whether name is one of the provider's upstreams, which an OAuth client may ask for as
     * the scope gateway:<name> (authserver_opts.upstream_known); NULL: any name. */
    bool (*upstream_known)(void *setup_arg, const char *name);
};

/* Runs the server until SIGTERM/SIGINT, then drains. Returns a process exit code. */
int app_run(const struct app_opts *o);

#endif
