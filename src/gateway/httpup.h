/* httpup.h — the Streamable HTTP transport of a url upstream (httpup.c): one POST per message,
 * answers as JSON or an SSE stream, the session and its renewal, resumed streams. It knows the
 * upstream only through struct httpup_owner, so it sits below the JSON-RPC client. */
#ifndef HM_HTTPUP_H
#define HM_HTTPUP_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gwfile.h"

#define GW_PROTOCOL "2025-11-25" /* the session era's version we offer upstream */
#define GW_MODERN "2026-07-28"   /* spoken to an HTTP upstream whose server/discover offers it */

struct httpup;
struct loop;

/* What the transport tells its owner (the upstream's JSON-RPC client). */
struct httpup_owner {
    /* One message read: parsed with JSON_REJECT_DUPLICATES (taken; NULL or not an object when
     * the text was no message), len bytes; related: the id of the POST whose stream carried
     * it. */
    void (*message)(void *owner, json_t *msg, size_t len, uint64_t related);
    /* The request id cannot be answered (why: a tool error's text, NULL: unavailable). */
    void (*request_failed)(void *owner, uint64_t id, const char *why);
    /* The upstream stops serving (no connection, a 5xx, a session that cannot be renewed). */
    void (*down)(void *owner, const char *why);
    /* Whether it still serves (a failure after it went down is not news). */
    bool (*alive)(void *owner);
    /* A fresh id on the wire, from the owner's id space (a session renewal's initialize). */
    uint64_t (*next_id)(void *owner);
};

struct httpup *httpup_new(const struct gw_upstream *cfg, struct loop *l,
                          const struct httpup_owner *ops, void *owner);
/* Before an initialize: the session (if any) is forgotten. */
void httpup_start(struct httpup *h);
/* POSTs one JSON-RPC message; false when it cannot be sent. */
bool httpup_send(struct httpup *h, json_t *msg);
/* The protocol version on every later POST (MCP-Protocol-Version; GW_MODERN adds Mcp-Method
 * and Mcp-Name); "" for none. */
void httpup_set_version(struct httpup *h, const char *version);
/* A request given up (timeout, cancel): its transfer ends. */
void httpup_forget(struct httpup *h, uint64_t id);
/* Every transfer ends (no callbacks) and the session is forgotten. */
void httpup_reset(struct httpup *h);
/* Frees; the session's DELETE is sent with every other url upstream's when the last one is
 * freed (at shutdown), all waited for together, briefly. NULL-safe. */
void httpup_free(struct httpup *h);
/* The wait before resuming an answer's stream: its retry: field (-1: none) bounded, else a
 * backoff growing with the resumes in a row that brought nothing (pure; unit-tested). */
unsigned httpup_resume_delay_ms(long retry_ms, unsigned misses);

#endif
