/* exchange.h — one POST's requests and where their answers go. Engine-internal. */
#ifndef HM_MCP_EXCHANGE_H
#define HM_MCP_EXCHANGE_H
#include "mcp_internal.h"

/* A new exchange for POST r (still dispatching: the caller clears that, then calls
 * exchange_maybe_finish), answering in protocol version. */
struct mcp_exchange *exchange_open(struct mcp_server *srv, struct hreq *r, struct mcp_session *sess,
                                   bool batch, const char *version);
/* Gives the exchange its SSE stream if it may have one (the client accepts SSE, not a batch);
 * false when nothing can be streamed to the client. */
bool exchange_ensure_stream(struct mcp_exchange *ex);
/* Takes c out of the exchange's calls. */
void exchange_unlink(struct mcp_exchange *ex, struct mcp_call *c);
/* Once no call is pending: sends the answers (or ends the stream) and frees the exchange. */
void exchange_maybe_finish(struct mcp_exchange *ex);
/* Records the error an answer carries (JSON-RPC code, or a tool's error code). */
void exchange_note_answer(struct mcp_server *srv, struct hreq *r, json_t *answer);

#endif
