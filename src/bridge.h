/* bridge.h — the Hermes bridge: the tools that delegate work to a local Hermes Agent.
 * This first slice registers list_agents over the synthetic default agent (no registry yet). */
#ifndef HM_BRIDGE_H
#define HM_BRIDGE_H

struct config;
struct loop;
struct mcp_server;

/* Registers the bridge's tools on mcp. cfg must outlive the server. */
void bridge_register(struct mcp_server *mcp, struct loop *l, struct config *cfg);

#endif
