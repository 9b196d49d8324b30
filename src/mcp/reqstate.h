/* reqstate.h — sealed requestState for input-required results. Engine-internal. */
#ifndef HM_MCP_REQSTATE_H
#define HM_MCP_REQSTATE_H
#include "mcp_internal.h"

/* The longest requestState we write or read, in characters. */
#define REQSTATE_MAX 8192

/* The requestState text carrying state (borrowed; may be NULL) for a later round of the same
 * request (method and params) by the same caller; NULL if it would be longer than
 * REQSTATE_MAX. Free with free(). */
char *reqstate_seal(struct mcp_server *srv, const char *caller, const char *method,
                    json_t *params, json_t *state);
/* The state sealed in text[0..len) (new reference; JSON null when none was given) when text
 * is ours, unaltered, unexpired, and for this caller, method and params; else NULL. */
json_t *reqstate_open(struct mcp_server *srv, const char *caller, const char *method,
                      json_t *params, const char *text, size_t len);
#endif
