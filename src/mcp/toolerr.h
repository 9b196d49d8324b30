/* toolerr.h — the codes a tool (the bridge's, the gateway's) can fail with, in one table: the
 * name a client sees in structuredContent.error, and the JSON Schema of an error result, which
 * every tool's outputSchema accepts beside its success shape (clients validate error results
 * too). Part of the engine: a tool result is MCP vocabulary. */
#ifndef HM_TOOLERR_H
#define HM_TOOLERR_H
#include <jansson.h>
#include <stdarg.h>

enum toolerr {
    TE_INVALID_ARGUMENTS,     /* the arguments break the input schema or a rule */
    TE_NOT_FOUND,             /* no such task, run or file (or no result yet) */
    TE_BUSY,                  /* in progress, or a queue is full: retry after retry_after */
    TE_DUPLICATE_ID,          /* the task id is taken by another request or agent */
    TE_UNKNOWN_AGENT,         /* no agent of that name */
    TE_AGENT_UNAVAILABLE,     /* the agent has no key, does not answer, or was removed */
    TE_CONFIRMATION_REQUIRED, /* a global action needs confirmed: true */
    TE_CANCELLED,             /* stopped by hermes_cancel */
    TE_UPSTREAM_ERROR,        /* the agent or the task directory failed */
    TE_UPSTREAM_TIMEOUT,      /* the agent did not answer in time */
    TE_UPSTREAM_AUTH,         /* the agent refused our key */
    TE_UPSTREAM_UNAVAILABLE,  /* a gateway upstream is not running (exited, not started) */
    TE_DEFINITION_CHANGED,    /* a gateway tool's definition differs from its pin: withheld */
    TE_APPROVAL_DENIED,       /* an approve-guarded gateway tool: the operator did not approve */
    TE_COUNT
};

const char *toolerr_name(enum toolerr e);
/* When this server answers with e (for the reference pages); NULL past the table. */
const char *toolerr_meaning(enum toolerr e);
/* {type: object, properties: {error: {enum: [every name]}, message, retry_after}, ...}: new. */
json_t *toolerr_schema(void);
/* {type: object, anyOf: [success, the error shape]}: takes success (a new reference). */
json_t *toolerr_output_schema(json_t *success);
/* A tool error result {error, message[, retry_after]} with isError true (new reference); the
 * message is made valid UTF-8. */
json_t *tool_error_json(enum toolerr code, unsigned retry_after, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
json_t *tool_error_vjson(enum toolerr code, unsigned retry_after, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
