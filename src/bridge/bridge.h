/* bridge.h — the Hermes bridge: the tools that delegate work to Hermes agents
 * (hermes_task, hermes_status, hermes_result, hermes_files, list_agents, hermes_cancel,
 * hermes_reset), over the agent HTTP client and the durable task directory. Loop thread. */
#ifndef HM_BRIDGE_H
#define HM_BRIDGE_H
#include <stdbool.h>
#include <stddef.h>

struct loop;
struct mcp_server;
struct bridge;

/* The settings the bridge reads (docs/reference/env.md names the keys); the server's settings
 * fill them. bridge_new copies them: the caller's strings may go once it returns. */
struct bridge_opts {
    const char *env_file;          /* the server's env file (agent keys may be read from it), or
                                      NULL */
    const char *hermes_env_path;   /* HERMES_ENV_PATH: the agent's env file, or NULL */
    const char *agents_file;       /* AGENTS_FILE, or NULL: its default */
    const char *tasks_dir;         /* TASKS_DIR, or NULL: "tasks" */
    const char *contract_path;     /* HERMES_CONTRACT_PATH, or NULL: the built-in contract */
    unsigned poll_ms;              /* HERMES_POLL_MS: how often a followed run is polled */
    unsigned agent_timeout_ms;     /* HERMES_TIMEOUT_S: a sync task's deadline; 0: none */
    unsigned tasks_retention_days; /* TASKS_RETENTION_DAYS; 0: no age limit */
    unsigned tasks_max;            /* TASKS_MAX; 0: no count limit */
    bool tool_aliases;             /* MCP_TOOL_ALIASES: hermes_ask, hermes_check listed */
    const char *store_url;         /* STORE_URL: task records in PostgreSQL; NULL: files */
    const char *store_password;    /* STORE_PASSWORD, or NULL */
    const char *replica_id;        /* this server in the store's replicas (with store_url) */
};

/* Registers the tools on mcp and follows runs left in flight by a previous process.
 * NULL (logged) if TASKS_DIR cannot be used. */
struct bridge *bridge_new(struct mcp_server *mcp, struct loop *l, const struct bridge_opts *o);
/* The same, registering only the tools keep(name) accepts (the gateway file's bridge_tools). */
typedef bool bridge_keep_fn(const char *tool, void *arg);
struct bridge *bridge_new_kept(struct mcp_server *mcp, struct loop *l, const struct bridge_opts *o,
                               bridge_keep_fn *keep, void *keep_arg);
/* The names of the tools it registered (for the gateway's collision check); borrowed. */
const char *const *bridge_tool_names(const struct bridge *b, size_t *n);
/* The names of every tool it has, registered or left out by keep (a reload of the gateway
 * file's bridge_tools judges them all again); borrowed. NULL-safe (none). */
const char *const *bridge_offered_names(const struct bridge *b, size_t *n);
/* The tool bridge_tools judges name by: for an alias (hermes_ask) the tool it stands for
 * (hermes_task), so an alias never outlives its tool; else name itself. Static strings. */
const char *bridge_tool_judged_as(const char *name);
/* SIGHUP, after the server's settings were reloaded: takes the retention limits of o (the
 * only settings of o a reload changes; the rest wait for a restart), re-reads the agent
 * settings and prunes. */
void bridge_reload(struct bridge *b, const struct bridge_opts *o);
/* Extra /health fields (",\"agents\":{...}..."). */
void bridge_health(struct bridge *b, char *out, size_t outlen);
/* Appends the bridge's Prometheus metrics (agents, jobs, agent requests). */
struct buf;
void bridge_metrics(struct bridge *b, struct buf *out);
/* The operator's approval queue (the app's, NULL: none): a followed run that waits for approval
 * at the agent is queued there, and the operator's decision is sent to the agent. */
struct approvals;
void bridge_set_approvals(struct bridge *b, struct approvals *q);
/* Stops following runs and frees; call after every MCP call was answered. NULL-safe. */
void bridge_free(struct bridge *b);

#endif
