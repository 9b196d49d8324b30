/* scopes.h — the OAuth scopes this server grants, in one table: each scope's name, what it
 * lets a credential do, and whether a client that asks for none is granted it. The tools
 * declare theirs by these names (mcp_tool_def.scope), auth checks, grants and advertises them
 * (scopes_supported), and docs/reference/scopes.md is made from the table (gendocs). Here, below
 * both the engine and auth, because both and the providers name them. */
#ifndef HM_SCOPES_H
#define HM_SCOPES_H
#include <stdbool.h>
#include <stddef.h>

#define SCOPE_READ "hermes:read"
#define SCOPE_TASK "hermes:task"
#define SCOPE_ADMIN "hermes:admin"
/* gateway:<upstream>: the tools the gateway exposes from that upstream. */
#define SCOPE_GATEWAY_PREFIX "gateway:"
/* Every fixed scope's namespace: an unknown hermes:... scope is an error, not a foreign one. */
#define SCOPE_HERMES_PREFIX "hermes:"
/* What a client that asks for no scope is granted, and the scopes a 401 tells it to ask for:
 * reading and delegating (hermes:admin is asked for by step-up, 403, when it is needed). The
 * table's by_default column says the same; tests/unit/test_scopes.c checks they agree. */
#define SCOPES_DEFAULT SCOPE_READ " " SCOPE_TASK

struct scope_info {
    const char *name;    /* the scope, or for a family its prefix followed by <...> */
    const char *prefix;  /* a family (gateway:<upstream>): the prefix its members start with */
    const char *meaning; /* what it lets a credential do */
    bool by_default;     /* granted to a client that asks for none (SCOPES_DEFAULT) */
};

/* The i-th row (the fixed scopes, then the families), NULL past the table. */
const struct scope_info *scope_at(size_t i);
/* Whether name is a fixed scope (hermes:read, hermes:task, hermes:admin). */
bool scope_fixed(const char *name);
/* The family name belongs to (name starts with its prefix), or NULL. */
const struct scope_info *scope_family(const char *name);

#endif
