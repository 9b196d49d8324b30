/* stream.h — SSE response streams and their replay ring (resume with Last-Event-ID).
 * Engine-internal. */
#ifndef HM_MCP_STREAM_H
#define HM_MCP_STREAM_H
#include "mcp_internal.h"

/* A new stream; with a live session it is resumable (kept in the session's table). */
struct mcp_stream *stream_new(struct mcp_server *srv, struct mcp_session *sess);
void stream_unref(struct mcp_stream *st);
/* Makes r (not yet answered) carry the stream: headers, 200 text/event-stream. */
void stream_attach(struct mcp_stream *st, struct hreq *r);
/* Ends the attached response, if any; the stream stays resumable. */
void stream_detach(struct mcp_stream *st);
/* A priming event: an id the client can resume from, and how soon to come back. */
void stream_prime(struct mcp_stream *st);
/* Sends msg (borrowed) as one event, kept for a resume in session mode. */
void stream_send(struct mcp_stream *st, json_t *msg);
/* Drops the session table's hold: the stream can no longer be resumed. */
void stream_forget(struct mcp_stream *st);
/* The stream will carry nothing more. If the client is attached it gets everything now and
 * nothing is left to resume; otherwise the events wait for a GET with Last-Event-ID. */
void stream_close(struct mcp_stream *st);
/* Whether streams of protocol version v start with a priming event (2025-11-25 on). */
bool mcp_version_primes(const char *v);

#endif
