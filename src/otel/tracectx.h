/* tracectx.h — W3C Trace Context: the traceparent header (version 00) read and written, and
 * tracestate checked before it is passed on. Pure; any thread. */
#ifndef HM_TRACECTX_H
#define HM_TRACECTX_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OTEL_TRACESTATE_MAX 512 /* bytes kept of a tracestate; a longer one is dropped */
#define OTEL_TRACESTATE_MEMBERS 32
#define OTEL_TRACEPARENT_LEN 55 /* 00-<32 hex>-<16 hex>-<2 hex> */
#define OTEL_FLAG_SAMPLED 0x01u

struct otel_ctx {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t flags;
};

/* Parses a traceparent value. Version 00 must be exactly 55 characters; a later version may
 * carry more after a '-' (read as 00, per the spec); version ff, upper-case hex, and all-zero
 * trace or span ids are refused. */
bool otel_traceparent_parse(const char *s, struct otel_ctx *out);
/* Writes the 55 characters and a NUL into out (room for OTEL_TRACEPARENT_LEN + 1). */
void otel_traceparent_format(const struct otel_ctx *c, char *out);
/* True for a tracestate this side passes on: at most OTEL_TRACESTATE_MAX bytes and
 * OTEL_TRACESTATE_MEMBERS list members, printable ASCII only (no control characters). */
bool otel_tracestate_ok(const char *s);
/* s as passed on, into out (room for outsz bytes; OTEL_TRACESTATE_MAX + 1 is enough): s may
 * be several tracestate header lines joined by commas. Empty members are dropped, at most
 * OTEL_TRACESTATE_MEMBERS kept; over OTEL_TRACESTATE_MAX bytes, whole members are removed
 * (those over 128 bytes first, then from the end), never cut. Returns its length: 0 for none,
 * or for a control or non-ASCII character anywhere in s. */
size_t otel_tracestate_trim(const char *s, char *out, size_t outsz);
/* True when every byte of p[0..n) is zero. */
bool otel_id_zero(const uint8_t *p, size_t n);

#endif
