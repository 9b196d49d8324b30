/* fixtures.h — the official conformance suite's fixtures (tools, resources, prompts,
 * completion), as the reference everything-server exposes them. Built only into
 * build/conformance-server, never into build/hermes-mcp. */
#ifndef HM_FIXTURES_H
#define HM_FIXTURES_H

struct loop;
struct mcp_server;

#include <stdbool.h>

bool fixtures_register(struct mcp_server *mcp, struct loop *l, void *arg);
/* The 2026-07-28 ones (fixtures_modern.c): input-required tools and prompt, diagnostics. */
void fixtures_modern_register(struct mcp_server *mcp);
/* The tasks extension's (fixtures_tasks.c), and their teardown (the tasks left). */
void fixtures_tasks_register(struct mcp_server *mcp, struct loop *l);
void fixtures_tasks_free(void);
/* The fixtures provider's teardown (provider.h). */
void fixtures_teardown(void *arg);

#endif
