/* toolspec.c — what the bridge tools share in their declarations: the syntax checks behind
 * the argument tables' patterns, the check that answers invalid_arguments, the output schemas
 * made from the output tables, the annotations, and the lookup of a registered tool. */
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

json_t *toolspec_annotations(bool read_only, bool destructive, bool idempotent, bool open_world)
{
    return json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", read_only, "destructiveHint",
                     destructive, "idempotentHint", idempotent, "openWorldHint", open_world);
}

static json_t *output_type(const struct toolout *o)
{
    switch (o->type) {
    case TOOLOUT_STRING:
        return json_pack("{s:s}", "type", "string");
    case TOOLOUT_BOOL:
        return json_pack("{s:s}", "type", "boolean");
    case TOOLOUT_INT:
        return json_pack("{s:s}", "type", "integer");
    case TOOLOUT_OBJECT:
        return json_pack("{s:s}", "type", "object");
    case TOOLOUT_ARRAY:
        return json_pack("{s:s}", "type", "array");
    case TOOLOUT_STRINGS:
        return json_pack("{s:s, s:{s:s}}", "type", "array", "items", "type", "string");
    case TOOLOUT_STRING_OR_NULL:
        return json_pack("{s:[s, s]}", "type", "string", "null");
    }
    log_error("BUG: output field %s has no type", o->name);
    abort();
}

json_t *toolspec_output_schema(const struct toolout *out)
{
    json_t *props = json_object(), *required = json_array();
    for (const struct toolout *o = out; o->name; o++) {
        json_t *p = output_type(o);
        if (o->one_of) {
            json_t *values = json_array();
            for (const char *const *v = o->one_of; *v; v++)
                json_array_append_new(values, json_string(*v));
            json_object_set_new(p, "enum", values);
        }
        json_object_set_new(props, o->name, p);
        if (o->required)
            json_array_append_new(required, json_string(o->name));
    }
    return json_pack("{s:s, s:o, s:o}", "type", "object", "properties", props, "required",
                     required);
}

const struct toolout toolspec_result_output[] = {
    {.name = "id", .type = TOOLOUT_STRING, .required = true},
    {.name = "status", .type = TOOLOUT_STRING, .required = true},
    {.name = "summary", .type = TOOLOUT_STRING},
    {.name = "artifacts", .type = TOOLOUT_STRINGS},
    {.name = "next_steps", .type = TOOLOUT_STRINGS},
    {.name = "run_id", .type = TOOLOUT_STRING},
    {.name = "details", .type = TOOLOUT_OBJECT},
    TOOLOUT_END,
};

const struct bridge_tool_spec *toolspec_registered(const struct bridge *b, const char *name)
{
    for (size_t i = 0; i < b->ntools; i++)
        if (strcmp(b->tools[i]->name, name) == 0)
            return b->tools[i];
    return NULL;
}
