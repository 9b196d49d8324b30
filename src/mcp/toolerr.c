/* toolerr.c — the table of tool error codes, the schema of an error result, and the result
 * itself: every provider (the bridge, the gateway) answers failures in this one shape. */
#include "toolerr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "utf8.h"

static const struct {
    const char *name, *meaning;
} table[TE_COUNT] = {
    [TE_INVALID_ARGUMENTS] = {"invalid_arguments",
                              "the arguments break the tool's input schema or one of its rules"},
    [TE_NOT_FOUND] = {"not_found", "no such task, run or file, or no result yet"},
    [TE_BUSY] = {"busy", "the task is still running, or a queue is full: retry after "
                         "retry_after seconds"},
    [TE_DUPLICATE_ID] = {"duplicate_id", "the task id is taken by another request or agent"},
    [TE_UNKNOWN_AGENT] = {"unknown_agent", "no agent of that name in the agents registry"},
    [TE_AGENT_UNAVAILABLE] = {"agent_unavailable",
                              "the agent has no key, does not answer, or was removed"},
    [TE_CONFIRMATION_REQUIRED] = {"confirmation_required",
                                  "a global action (hermes_reset of every session) needs "
                                  "confirmed: true"},
    [TE_CANCELLED] = {"cancelled", "the task was stopped by hermes_cancel"},
    [TE_UPSTREAM_ERROR] = {"upstream_error", "the agent, the task directory or an upstream "
                                             "failed"},
    [TE_UPSTREAM_TIMEOUT] = {"upstream_timeout", "the agent or upstream did not answer in time"},
    [TE_UPSTREAM_AUTH] = {"upstream_auth", "the agent refused our key"},
    [TE_UPSTREAM_UNAVAILABLE] = {"upstream_unavailable",
                                 "a gateway upstream is not running (exited, not started, or "
                                 "its circuit is open)"},
    [TE_DEFINITION_CHANGED] = {"definition_changed",
                               "a gateway tool's definition differs from its pin: withheld "
                               "until the operator pins it again"},
    [TE_APPROVAL_DENIED] = {"approval_denied",
                            "an approve-guarded gateway tool: the operator denied it or did not "
                            "answer in time"},
};

const char *toolerr_name(enum toolerr e)
{
    return (unsigned)e < TE_COUNT ? table[e].name : "upstream_error";
}

const char *toolerr_meaning(enum toolerr e)
{
    return (unsigned)e < TE_COUNT ? table[e].meaning : NULL;
}

json_t *toolerr_schema(void)
{
    json_t *codes = json_array();
    for (int i = 0; i < TE_COUNT; i++)
        json_array_append_new(codes, json_string(table[i].name));
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
