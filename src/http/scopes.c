/* scopes.c — the scope table of scopes.h. */
#include "scopes.h"

#include <string.h>

static const struct scope_info table[] = {
    {.name = SCOPE_READ,
     .meaning = "hermes_status, hermes_result, hermes_files, hermes_check, list_agents: read "
                "tasks, their results and files, and the agents",
     .by_default = true},
    {.name = SCOPE_TASK,
     .meaning = "hermes_task, hermes_ask, hermes_cancel: start and stop tasks",
     .by_default = true},
    {.name = SCOPE_ADMIN,
     .meaning = "hermes_reset, /metrics, and every caller's tasks (the owner token holds every "
                "scope)"},
    {.name = SCOPE_GATEWAY_PREFIX "<upstream>",
     .prefix = SCOPE_GATEWAY_PREFIX,
     .meaning = "the tools the gateway exposes from that upstream (GATEWAY_FILE); without it a "
                "role sees none of them"},
};

const struct scope_info *scope_at(size_t i)
{
    return i < sizeof table / sizeof *table ? &table[i] : NULL;
}

bool scope_fixed(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].prefix == NULL && strcmp(table[i].name, name) == 0)
            return true;
    return false;
}

const struct scope_info *scope_family(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].prefix && strncmp(name, table[i].prefix, strlen(table[i].prefix)) == 0)
            return &table[i];
    return NULL;
}
