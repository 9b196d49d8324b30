/* gwevent.c — the leaf every part of the gateway reports through: its events (as data, struct
 * gw_event) to the audit hook, and an upstream's JSON-RPC error object read as what we pass on.
 * It calls nothing of the gateway's, so no part needs another to report. */
#include "gwevent.h"

#include <stdio.h>

#include "gwcore.h"
#include "jrpc.h"
#include "utf8.h"

void gw_event(struct gateway *g, const struct gw_event *e)
{
    if (g->on_event)
        g->on_event(e, g->event_arg);
}

int gw_event_rpc_error(json_t *error, const char *fallback, char *msg, size_t size)
{
    json_t *code = json_object_get(error, "code");
    const char *text = json_string_value(json_object_get(error, "message"));
    snprintf(msg, size, "%s", text ? text : fallback);
    utf8_clean(msg);
    return json_is_integer(code) ? (int)json_integer_value(code) : JRPC_INTERNAL_ERROR;
}
