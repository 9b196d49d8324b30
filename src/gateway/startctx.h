/* startctx.h — the gateway's own `startup_context` tool: a client that
 * starts a session asks for the operator's fixed context files (SOUL.md, MEMORY.md, ...) without
 * being able to name a path. The paths come from the gateway file only (startup_context.files,
 * ~ expanded to $HOME once at start); every call reads them again, each capped at max_bytes and
 * all of them together at GW_STARTUP_BYTES_CAP, invalid UTF-8 replaced, and one that cannot be
 * read is named as missing with a short reason of ours (never errno text). */
#ifndef HM_STARTCTX_H
#define HM_STARTCTX_H
#include <jansson.h>
#include <stddef.h>

#define STARTCTX_TOOL "startup_context"

struct startctx;
struct mcp_server;

/* The files (array of strings as written in the gateway file) with ~ expanded by home (NULL:
 * a ~ path is then always missing). Copies what it needs. */
struct startctx *startctx_new(const json_t *files, size_t max_bytes, const char *home);
void startctx_free(struct startctx *s); /* NULL-safe */
/* A reloaded gateway file's files and max_bytes (as startctx_new takes them) for the calls from
 * now on: each call reads them synchronously, so none is half way. */
void startctx_replace(struct startctx *s, const json_t *files, size_t max_bytes, const char *home);
/* Reads every file now: {files: [{path, text, bytes, truncated} | {path, missing: true,
 * reason}]} in the configured order; path is the configured text (with ~, not $HOME). New. */
json_t *startctx_read(const struct startctx *s);
/* Registers the tool (no arguments) on the engine; scope is what a principal needs. */
void startctx_register(struct startctx *s, struct mcp_server *mcp, const char *scope);

#endif
