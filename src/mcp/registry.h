/* registry.h — the server's registries of tools, resources, templates and prompts. Engine-internal.
 */
#ifndef HM_MCP_REGISTRY_H
#define HM_MCP_REGISTRY_H
#include "mcp_internal.h"

/* Adds a named entry; takes listing. tpl: a resource template's URI template, else NULL. */
void mcp_registry_add(struct registry *reg, const char *name, json_t *listing, mcp_handler *h,
                      void *arg, const char *tpl);
void mcp_registry_cleanup(struct registry *reg);
/* The registry's tools or their listings changed: the kept texts go. */
void mcp_registry_changed(struct registry *reg);
struct named *mcp_registry_find(const struct registry *reg, const char *name);
/* {field: [listing...]} (new reference). */
json_t *mcp_registry_list(const struct registry *reg, const char *field);
/* The listings as one compact JSON array, kept until the registry changes; NULL when out of
 * memory. */
const char *mcp_registry_text(struct registry *reg, size_t *len);

#endif
