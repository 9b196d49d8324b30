/* methods.h — the MCP method handlers and their dispatch. Engine-internal. */
#ifndef HM_MCP_METHODS_H
#define HM_MCP_METHODS_H
#include "mcp_internal.h"

/* Serves request m: answers it now or starts a call. */
void dispatch_request(struct rpc_ctx *x, struct jrpc_msg *m);
void dispatch_notification(struct rpc_ctx *x, struct jrpc_msg *m);
/* Answer without a handler: goes where call answers go. */
void answer(struct rpc_ctx *x, json_t *msg_take);
/* Method names go to the audit log only when they are ours: a client cannot write there. */
const char *audit_method(const char *m);

#endif
