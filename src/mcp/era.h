/* era.h — MCP 2026-07-28 requests (stateless) beside the session era. Engine-internal. */
#ifndef HM_MCP_ERA_H
#define HM_MCP_ERA_H
#include "mcp_internal.h"

enum era { ERA_LEGACY, ERA_MODERN, ERA_UNSUPPORTED };

/* Which rules a parsed POST body is served by: 2026-07-28 ones when it is an object whose
 * _meta names a protocol version, or when the MCP-Protocol-Version header names 2026-07-28
 * (then a batch is refused by that revision's rules); the session era's when the header is
 * absent or one of 2024-11-05 ... 2025-11-25; else the header names a version we do not
 * serve. */
enum era era_of(struct hreq *r, json_t *root);
/* The -32021 error for a request that needs the tasks extension its client did not declare
 * (new reference). */
json_t *era_missing_tasks(json_t *id, const char *message);
/* 400 -32022 naming the versions we serve (for ERA_UNSUPPORTED). */
void era_refuse_version(struct hreq *r, json_t *root);
/* Serves one 2026-07-28 POST body (borrowed). */
void era_serve(struct mcp_server *srv, struct hreq *r, json_t *root);
/* A tools/call's Mcp-Param-* headers against its arguments (param_headers: a tool's
 * {property: header name}); false with msg filled on a mismatch, a header missing for a value,
 * or one that cannot be read. */
bool era_param_headers_match(struct hreq *r, json_t *param_headers, json_t *args, char *msg,
                             size_t msgsz);
/* The versions we serve, newest first (new reference). */
json_t *era_versions(void);
/* Whether v is one of them (2026-07-28 included). */
bool era_version_served(const char *v);
/* Adds what every 2026-07-28 result carries to the response msg's result (resultType,
 * serverInfo, and for cacheable methods ttlMs and cacheScope, unless retry: the answer to an
 * input-required round). */
void era_decorate(struct mcp_server *srv, const char *method, json_t *msg, bool retry);
/* Sends the response msg_take to a lone 2026-07-28 request, decorated as era_decorate does
 * (byte for byte), with its status (era_status). A result without any of the decoration's
 * fields (the usual case) gets it as text made once per server, not encoded each time. */
void era_reply(struct mcp_server *srv, struct hreq *r, const char *method, json_t *msg_take,
               bool retry);
/* Who sent r, as tasks and sealed state are bound to it: "p:<principal>" (mcp_set_caller),
 * else a labelled digest of its bearer token (base64url), or "anonymous". */
void era_caller(struct mcp_server *srv, struct hreq *r, char out[45]);
/* "public" or "private" (mcp_opts.cache_public). */
const char *era_cache_scope(const struct mcp_server *srv);
/* The opening of a list result with the decoration, up to and including the comma before the
 * list's field: the fast path splices the cached listing after it. */
const char *era_list_head(struct mcp_server *srv); /* NULL: no text form (a name not UTF-8) */
/* The HTTP status of a 2026-07-28 answer: 400 for the transport's errors, 404 for an unknown
 * method, else 200. */
unsigned era_status(json_t *answer);
#endif
