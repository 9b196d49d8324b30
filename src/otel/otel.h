/* otel.h — OpenTelemetry tracing: spans made on the loop thread and exported over OTLP/HTTP by
 * one worker thread (exporter.c), batched, through a bounded queue.
 *
 * Off (no endpoint) there is no tracer: every call takes NULL and does nothing, so a caller
 * pays a pointer test. A span is one allocation (its attributes and texts live inside it, cut
 * when they do not fit), reused once ended; otel_span_end encodes it for the exporter, or
 * drops it (counted) when the queue is full, so the loop never waits on a collector. Loop
 * thread only. */
#ifndef HM_OTEL_H
#define HM_OTEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otelcfg.h"
#include "tracectx.h"

struct buf;
struct otel;
struct otel_span;

enum otel_kind { OTEL_KIND_INTERNAL = 1, OTEL_KIND_SERVER = 2, OTEL_KIND_CLIENT = 3 };
enum otel_status { OTEL_STATUS_UNSET, OTEL_STATUS_OK, OTEL_STATUS_ERROR };

/* A tracer for c (copied), or NULL: with c->url NULL (tracing off, err empty), or when libcurl
 * cannot be loaded (err says why). Loads libcurl here, on the calling thread. */
struct otel *otel_new(const struct otel_config *c, const char *version, char *err, size_t errlen);
/* Exports what is queued within wait_ms, then frees t. NULL-safe. */
void otel_free(struct otel *t, unsigned wait_ms);
/* The exporter's counters in the Prometheus text format (zeros without a tracer). */
void otel_metrics(const struct otel *t, struct buf *out);

/* A span starting now: a child of parent (a local span), or a root. NULL when t is NULL. The
 * sampling decision is taken here (not sampled: the span still carries ids to pass on, and is
 * never exported). name is copied. */
struct otel_span *otel_span_start(struct otel *t, const char *name, enum otel_kind kind,
                                  const struct otel_span *parent);
/* A span starting now as a child of a local span known by its context (kept by a call that
 * may outlive its request's span), with that span's tracestate (NULL: none). NULL when t is
 * NULL. */
struct otel_span *otel_span_start_in(struct otel *t, const char *name, enum otel_kind kind,
                                     const struct otel_ctx *parent, const char *tracestate);
/* The tracer a span belongs to (NULL for NULL). */
struct otel *otel_span_tracer(const struct otel_span *s);
/* Makes a remote context (a traceparent received) the span's parent, with its tracestate
 * (NULL: none), and takes the sampling decision again. Before any child was started. */
void otel_span_set_remote_parent(struct otel_span *s, const struct otel_ctx *parent,
                                 const char *tracestate);
void otel_span_set_name(struct otel_span *s, const char *name);
/* The name "a b", or a when b is NULL (cut as otel_span_set_name cuts). */
void otel_span_set_name2(struct otel_span *s, const char *a, const char *b);
/* Attributes; key must be a string literal (kept as a pointer, and a key set again is found
 * by it). At most OTEL_SPAN_ATTRS; a value is cut when the span's text room runs out. */
void otel_span_str(struct otel_span *s, const char *key, const char *value);
/* A string literal of ours (short, valid UTF-8), kept as a pointer: not copied. */
void otel_span_lit(struct otel_span *s, const char *key, const char *literal);
/* True when the span has an attribute of that key (the same literal). */
bool otel_span_has(const struct otel_span *s, const char *key);
/* mcp.protocol.version, set from wherever it is known (the request's header, its _meta, the
 * answer to initialize), under the one key. */
void otel_span_mcp_version(struct otel_span *s, const char *version);
bool otel_span_has_mcp_version(const struct otel_span *s);
/* hermes.principal, as OTEL_SPAN_PRINCIPAL says: a digest of name ("sha256:" and 16 hex
 * digits, the default: a principal such as oidc:<sub> may be personal data), name as is, or
 * nothing. */
void otel_span_principal(struct otel_span *s, const char *name);
void otel_span_int(struct otel_span *s, const char *key, int64_t value);
void otel_span_bool(struct otel_span *s, const char *key, bool value);
void otel_span_status(struct otel_span *s, enum otel_status st, const char *message);
/* Ends and hands the span on (or frees it when not sampled or the queue is full). NULL-safe. */
void otel_span_end(struct otel_span *s);

/* Frees a span that is not to be exported (it was not what it seemed). NULL-safe. */
void otel_span_discard(struct otel_span *s);

/* The span's context for a child elsewhere: false for NULL. */
bool otel_span_ctx(const struct otel_span *s, struct otel_ctx *out);
/* Its traceparent value (room for OTEL_TRACEPARENT_LEN + 1); false for NULL. */
bool otel_span_traceparent(const struct otel_span *s, char *out);
/* Its tracestate, or NULL. */
const char *otel_span_tracestate(const struct otel_span *s);
bool otel_span_sampled(const struct otel_span *s);

#endif
