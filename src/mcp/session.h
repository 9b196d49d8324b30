/* session.h — MCP sessions (MCP_SESSIONS=1): their lifetime, their idle expiry. Engine-internal. */
#ifndef HM_MCP_SESSION_H
#define HM_MCP_SESSION_H
#include <stdbool.h>
#include <stddef.h>

#include "mcp_internal.h"

struct loop;

struct mcp_session *session_ref(struct mcp_session *s);
void session_unref(struct mcp_session *s);
/* Ends a session: cancels its calls, closes its streams, forgets it. */
void session_end(struct mcp_server *srv, struct mcp_session *s);
/* (Re)arms the idle sweep for the table as it is now; call when a session is added. The sweep
 * ends sessions unused for SESSION_IDLE_MS. It is armed only while sessions exist, for the
 * earliest moment one could expire (at most once every SWEEP_MS), so a server without
 * sessions, or whose sessions are far from expiry, makes no wake-ups. */
void session_sweep_arm(struct mcp_server *srv);
/* A new session id into out (outlen >= MCP_SESSION_ID_MAX): the replica's prefix, then 32
 * random bytes in hex. False when no randomness could be had. */
bool session_make_id(const struct mcp_server *srv, char *out, size_t outlen);

#endif
