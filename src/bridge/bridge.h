/* bridge.h — the Hermes bridge: the tools that delegate work to Hermes agents
 * (hermes_task, hermes_status, hermes_result, hermes_files, list_agents, hermes_cancel,
 * hermes_reset), over the agent HTTP client and the durable task directory. Loop thread. */
#ifndef HM_BRIDGE_H
#define HM_BRIDGE_H
#include <stdbool.h>
#include <stddef.h>

struct config;
struct loop;
struct mcp_server;
struct bridge;

/* Registers the tools on mcp and follows runs left in flight by a previous process.
 * cfg must outlive the bridge. NULL (logged) if TASKS_DIR cannot be used. */
struct bridge *bridge_new(struct mcp_server *mcp, struct loop *l, struct config *cfg);
/* The same, registering only the tools keep(name) accepts (the gateway file's bridge_tools). */
typedef bool bridge_keep_fn(const char *tool, void *arg);
struct bridge *bridge_new_kept(struct mcp_server *mcp, struct loop *l, struct config *cfg,
                               bridge_keep_fn *keep, void *keep_arg);
/* The names of the tools it registered (for the gateway's collision check); borrowed. */
const char *const *bridge_tool_names(const struct bridge *b, size_t *n);
/* The names of every tool it has, registered or left out by keep (a reload of the gateway
 * file's bridge_tools judges them all again); borrowed. NULL-safe (none). */
const char *const *bridge_offered_names(const struct bridge *b, size_t *n);
/* The tool bridge_tools judges name by: for an alias (hermes_ask) the tool it stands for
 * (hermes_task), so an alias never outlives its tool; else name itself. Static strings. */
const char *bridge_tool_judged_as(const char *name);
/* Re-reads the agent settings (SIGHUP). */
void bridge_reload(struct bridge *b);
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
