/* session.h — MCP sessions (MCP_SESSIONS=1): their lifetime, their idle expiry. Engine-internal. */
#ifndef HM_MCP_SESSION_H
#define HM_MCP_SESSION_H
#include "mcp_internal.h"

struct loop;

struct mcp_session *sess_ref(struct mcp_session *s);
void sess_unref(struct mcp_session *s);
/* Ends a session: cancels its calls, closes its streams, forgets it. */
void sess_end(struct mcp_server *srv, struct mcp_session *s);
/* The idle sweep, every SWEEP_MS: ends sessions unused for SESSION_IDLE_MS. */
void sweep_sessions(struct loop *l, void *arg);

#endif
