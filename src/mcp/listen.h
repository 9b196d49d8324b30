/* listen.h — subscriptions/listen streams (MCP 2026-07-28). Engine-internal. */
#ifndef HM_MCP_LISTEN_H
#define HM_MCP_LISTEN_H
#include "mcp_internal.h"

/* Serves a subscriptions/listen request: the acknowledgement, then the stream stays open. */
void listen_start(struct rpc_ctx *x, struct jrpc_msg *m);
#endif
