/* gwevent.h — the gateway's reporting leaf (gwevent.c): events to the audit hook, upstream
 * errors as passed on. */
#ifndef HM_GWEVENT_H
#define HM_GWEVENT_H
#include <jansson.h>
#include <stddef.h>

#include "gateway.h"

/* Tells the audit hook (if any) of e. */
void gw_event(struct gateway *g, const struct gw_event *e);
/* A JSON-RPC error object (an upstream's, or a client's answer to a relayed request) as what we
 * pass on: its code (JRPC_INTERNAL_ERROR when that is not an integer) and its message in msg,
 * capped to size and made valid UTF-8 (fallback when it has none). */
int gw_event_rpc_error(json_t *error, const char *fallback, char *msg, size_t size);

#endif
