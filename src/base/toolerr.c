/* toolerr.c — the table of tool error codes, the schema of an error result, and the result
 * itself: every provider (the bridge, the gateway) answers failures in this one shape. */
#include "toolerr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "utf8.h"

static const char *const names[TE_COUNT] = {
    [TE_INVALID_ARGUMENTS] = "invalid_arguments",
    [TE_NOT_FOUND] = "not_found",
    [TE_BUSY] = "busy",
    [TE_DUPLICATE_ID] = "duplicate_id",
    [TE_UNKNOWN_AGENT] = "unknown_agent",
    [TE_AGENT_UNAVAILABLE] = "agent_unavailable",
    [TE_CONFIRMATION_REQUIRED] = "confirmation_required",
    [TE_CANCELLED] = "cancelled",
    [TE_UPSTREAM_ERROR] = "upstream_error",
    [TE_UPSTREAM_TIMEOUT] = "upstream_timeout",
    [TE_UPSTREAM_AUTH] = "upstream_auth",
    [TE_UPSTREAM_UNAVAILABLE] = "upstream_unavailable",
    [TE_DEFINITION_CHANGED] = "definition_changed",
    [TE_APPROVAL_DENIED] = "approval_denied",
};

const char *toolerr_name(enum toolerr e)
{
    return (unsigned)e < TE_COUNT ? names[e] : "upstream_error";
}

json_t *toolerr_schema(void)
{
    json_t *codes = json_array();
    for (int i = 0; i < TE_COUNT; i++)
        json_array_append_new(codes, json_string(names[i]));
    return json_pack("{s:s, s:{s:{s:s, s:o}, s:{s:s}, s:{s:s, s:i}}, s:[s, s], s:b}", "type",
                     "object", "properties", "error", "type", "string", "enum", codes, "message",
                     "type", "string", "retry_after", "type", "integer", "minimum", 0, "required",
                     "error", "message", "additionalProperties", 0);
}

json_t *toolerr_output_schema(json_t *success)
{
    /* MCP wants an object schema at the top; anyOf lets the same tool answer either shape. */
    return json_pack("{s:s, s:[o, o]}", "type", "object", "anyOf", success, toolerr_schema());
}

json_t *tool_error_vjson(enum toolerr code, unsigned retry_after, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    utf8_clean(msg);
    json_t *sc = json_pack("{s:s, s:s}", "error", toolerr_name(code), "message", msg);
    if (retry_after)
        json_object_set_new(sc, "retry_after", json_integer(retry_after));
    char *text = json_dumps(sc, JSON_COMPACT);
    json_t *r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                          "structuredContent", sc, "isError", 1);
    free(text);
    return r;
}

json_t *tool_error_json(enum toolerr code, unsigned retry_after, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *r = tool_error_vjson(code, retry_after, fmt, ap);
    va_end(ap);
    return r;
}
