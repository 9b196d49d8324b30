/* sse.h — incremental decoder for Server-Sent Events (the agent's streams, the answers of a
 * gateway's Streamable HTTP upstream). Pure; fuzzed.
 * Bytes go in as they arrive, in pieces of any size; each complete event comes out through the
 * callback with its event name ("" when none was given), its data (lines joined with "\n") and
 * its id. Comment lines (": keepalive") are skipped; a `retry:` field of digits sets retry_ms
 * (the stream's reconnection time, capped at SSE_RETRY_MAX_MS). An event larger than max_event
 * bytes is an error: the decoder stops and sse_feed returns false from then on. last_id is the
 * WHATWG "last event ID": the id as of the last dispatched event, one without data too (an empty
 * id: field resets it). An id that does not fit (SSE_ID_MAX bytes and more) counts as an empty one:
 * cut short it would name another event, so it is not kept at all. The callback runs inside
 * sse_feed and must not free or reset the decoder (defer that until sse_feed has returned). */
#ifndef HM_SSE_H
#define HM_SSE_H
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define SSE_ID_MAX 128

typedef void sse_event_cb(const char *event, const char *data, size_t len, const char *id,
                          void *arg);

struct sse_decoder {
    struct buf line; /* the line being read */
    struct buf data; /* data of the event being read */
    char event[64];
    char id[SSE_ID_MAX];      /* the id field as read so far */
    char last_id[SSE_ID_MAX]; /* the id as of the last dispatched event */
    bool has_data;
    bool failed;
    bool skip_lf;  /* the last line ended in CR: a following LF belongs to it */
    long retry_ms; /* the last valid retry: field, -1 when none came */
    size_t max_event;
};

#define SSE_RETRY_MAX_MS 3600000L /* parsing stops here: no overflow, and a caller bounds it */

void sse_init(struct sse_decoder *d, size_t max_event);
void sse_cleanup(struct sse_decoder *d);
/* Returns false once an event exceeded max_event (nothing more is decoded). */
bool sse_feed(struct sse_decoder *d, const char *p, size_t n, sse_event_cb *cb, void *arg);

#endif
