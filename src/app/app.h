/* app.h — the server both binaries share: loop, HTTP routing (/mcp, /health, /metrics...),
 * bearer authentication, the "listening on" line, reload and drain, driving the providers the
 * caller built (serve.c: the bridge and the gateway). */
#ifndef HM_APP_H
#define HM_APP_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct config;
struct provider;

struct app_opts {
    struct config *cfg;  /* settings; reloaded in place on SIGHUP when cfg->env_file is set */
    const char *service; /* serverInfo.name and /health "service" */
    /* What puts tools on the engine (provider.h), set up in this order, torn down in reverse;
     * the audit log and the approval queue are handed to each at setup. */
    const struct provider *providers;
    size_t nproviders;
    unsigned approvals_timeout_s; /* 0: APPROVALS_DEFAULT_TIMEOUT_S */
    /* The server is a child subreaper (reaper.h): true for a child some module reaps itself
     * (the gateway's upstreams); every other exited child is reaped by the app. May be NULL. */
    bool (*owned_child)(pid_t pid);
};

/* Runs the server until SIGTERM/SIGINT, then drains. Returns a process exit code. */
int app_run(const struct app_opts *o);

#endif
