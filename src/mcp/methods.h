/* methods.h — the MCP method handlers and their dispatch. Engine-internal. */
#ifndef HM_MCP_METHODS_H
#define HM_MCP_METHODS_H
#include "mcp_internal.h"

/* Serves request m: answers it now or starts a call. */
void mcp_dispatch_request(struct rpc_ctx *x, struct jrpc_msg *m);
void mcp_dispatch_notification(struct rpc_ctx *x, struct jrpc_msg *m);
/* The name of a request method served in the 2026-07-28 era (a string of the method table),
 * and the params field its Mcp-Name header mirrors (NULL: none); NULL when not served there:
 * unknown, removed in 2026-07-28, or its capability is not offered. */
const char *mcp_modern_method(struct mcp_server *srv, const char *name, const char **name_field);
/* Answer without a handler: goes where call answers go. */
void mcp_answer(struct rpc_ctx *x, json_t *msg_take);
/* Method names go to the audit log only when they are ours: a client cannot write there. */
const char *mcp_audit_method(const char *m);

#endif
