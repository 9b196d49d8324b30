/* toolspec.c — what the bridge tools share in their declarations: the syntax checks behind
 * the argument tables' patterns, the check that answers invalid_arguments, the built-in output
 * schemas and the annotations. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_internal.h"
#include "log.h"
#include "mcp.h"
#include "taskpath.h"
#include "toolargs.h"

bool toolspec_id_syntax(const char *s, size_t n)
{
    return taskpath_id_ok(s, n);
}

bool toolspec_session_syntax(const char *s, size_t n)
{
    return taskpath_session_ok(s, n);
}

bool toolspec_run_id_syntax(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

/* Checks args against spec; on failure answers invalid_arguments and returns false. */
bool toolspec_check_args(struct mcp_call *c, const struct toolarg *spec, json_t *args, json_t **out)
{
    char err[200];
    if (toolargs_check(spec, args, out, ARGS_MAX, err, sizeof err))
        return true;
    bridge_tool_error(c, TE_INVALID_ARGUMENTS, 0, "%s", err);
    return false;
}

json_t *toolspec_schema_obj(const char *json)
{
    json_t *s = json_loads(json, 0, NULL);
    if (s == NULL) {
        log_error("BUG: a built-in schema does not parse");
        abort();
    }
    return s;
}

json_t *toolspec_annotations(bool read_only, bool destructive, bool idempotent, bool open_world)
{
    return json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", read_only, "destructiveHint",
                     destructive, "idempotentHint", idempotent, "openWorldHint", open_world);
}
