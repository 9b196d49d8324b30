/* call.h — the call lifecycle: one request served by a handler. Engine-internal. */
#ifndef HM_MCP_CALL_H
#define HM_MCP_CALL_H
#include "mcp_internal.h"

/* A call for request m in x's exchange: counted, findable by id in session mode, with its
 * deadline armed. The caller hands it to a handler. */
struct mcp_call *mcp_call_new(struct rpc_ctx *x, struct jrpc_msg *m);
/* Ends a call before its handler finished, without an answer (cancel, hang-up, session end). */
void mcp_call_cancel(struct mcp_call *c);
/* Sends a notification on the call's stream (opening it if the client takes SSE). */
void mcp_call_send_notification(struct mcp_call *c, json_t *msg_take);
/* A call meant to last as long as the client wants (a subscription): no deadline, not
 * counted among the calls in flight (a drain does not wait for it). */
void mcp_call_make_lasting(struct mcp_call *c);
/* A client's answer to one of our requests. */
void mcp_route_response(struct mcp_server *srv, struct mcp_session *sess, struct jrpc_msg *m);

#endif
