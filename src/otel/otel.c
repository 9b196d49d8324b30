/* otel.c — the tracer and its spans (loop thread); exporter.c sends them. */
#include "otel_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "crypto.h"
#include "log.h"
#include "mem.h"
#include "metrics.h"
#include "span.h"
#include "utf8.h"

uint64_t otel_now_ns(int clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct otel *otel_new(const struct otel_config *c, const char *version, char *err, size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    if (c->url == NULL)
        return NULL;
    struct otel *t = xcalloc(1, sizeof *t);
    t->cfg = *c;
    t->cfg.url = xstrdup(c->url);
    t->cfg.headers = c->headers ? xstrdup(c->headers) : NULL;
    t->cfg.service = xstrdup(c->service ? c->service : "hermes-mcp");
    t->cfg.resource = c->resource ? xstrdup(c->resource) : NULL;
    t->version = version ? xstrdup(version) : NULL;
    t->pool_used = OTEL_ID_POOL; /* drawn on first use */
    if (!otel_exporter_start(t, err, errlen)) {
        otel_free(t, 0);
        return NULL;
    }
    return t;
}

void otel_free(struct otel *t, unsigned wait_ms)
{
    if (t == NULL)
        return;
    if (!otel_exporter_stop(t, wait_ms))
        return; /* its worker still runs: t stays with it */
    otel_config_cleanup(&t->cfg);
    free(t->version);
    free(t);
}

void otel_metrics(const struct otel *t, struct buf *out)
{
    metric_render_value(out, "hermes_mcp_otel_spans_exported_total",
                        "Spans the trace collector accepted", METRIC_COUNTER,
                        t ? (double)atomic_load(&t->exported) : 0);
    metric_render_value(out, "hermes_mcp_otel_spans_dropped_total",
                        "Spans given up: the export queue was full, or their export failed",
                        METRIC_COUNTER, t ? (double)atomic_load(&t->dropped) : 0);
    metric_render_value(out, "hermes_mcp_otel_export_failures_total",
                        "Exports to the trace collector that failed (refused, timed out, "
                        "answered with an error)",
                        METRIC_COUNTER, t ? (double)atomic_load(&t->failures) : 0);
}

/* Copies v into the span's text, at most OTEL_VALUE_MAX bytes of it cut at a character
 * boundary, as valid UTF-8 (proto3 strings must be: a collector refuses the whole export
 * otherwise, and values come from clients); OTEL_NO_TEXT when there is no room. */
static uint16_t put_text_max(struct otel_span *s, const char *v, size_t cap)
{
    size_t room = OTEL_SPAN_TEXT - s->used;
    if (room < 2)
        return OTEL_NO_TEXT;
    size_t max = room - 1 < cap ? room - 1 : cap;
    size_t n = strnlen(v, max);
    if (v[n] != '\0')
        while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
            n--; /* not into the middle of a character */
    uint16_t off = s->used;
    memcpy(s->text + off, v, n);
    s->text[off + n] = '\0';
    unsigned char high = 0; /* ASCII, nearly always: no character to check */
    for (size_t i = 0; i < n; i++)
        high |= (unsigned char)s->text[off + i];
    if ((high & 0x80) && !utf8_valid(s->text + off, n))
        utf8_clean(s->text + off);
    s->used = (uint16_t)(s->used + strlen(s->text + off) + 1);
    return off;
}

static uint16_t put_text(struct otel_span *s, const char *v)
{
    return put_text_max(s, v, OTEL_VALUE_MAX);
}

/* n bytes from the kernel's CSPRNG, through the tracer's pool. */
static void random_bytes(struct otel *t, uint8_t *out, size_t n)
{
    if (t->pool_used + n > OTEL_ID_POOL) {
        if (!crypto_random_bytes(t->pool, OTEL_ID_POOL))
            log_error("BUG: getrandom failed"); /* cannot happen after start */
        t->pool_used = 0;
    }
    memcpy(out, t->pool + t->pool_used, n);
    explicit_bzero(t->pool + t->pool_used, n); /* never handed out twice */
    t->pool_used += n;
}

static void new_ids(struct otel *t, struct otel_span *s, bool trace)
{
    do {
        if (trace)
            random_bytes(t, s->ctx.trace_id, 16);
    } while (trace && otel_id_zero(s->ctx.trace_id, 16));
    do
        random_bytes(t, s->ctx.span_id, 8);
    while (otel_id_zero(s->ctx.span_id, 8));
}

static struct otel_span *span_new(struct otel *t, const char *name, enum otel_kind kind)
{
    struct otel_span *s = xmalloc(sizeof *s);
    memset(s, 0, offsetof(struct otel_span, text));
    s->tracer = t;
    s->kind = kind;
    s->start_ns = otel_now_ns(CLOCK_REALTIME);
    s->mono_ns = otel_now_ns(CLOCK_MONOTONIC);
    s->name = put_text(s, name);
    s->tracestate = s->status_msg = OTEL_NO_TEXT;
    return s;
}

struct otel_span *otel_span_start_in(struct otel *t, const char *name, enum otel_kind kind,
                                     const struct otel_ctx *parent, const char *tracestate)
{
    if (t == NULL)
        return NULL;
    struct otel_span *s = span_new(t, name, kind);
    memcpy(s->ctx.trace_id, parent->trace_id, 16);
    memcpy(s->parent_id, parent->span_id, 8);
    s->has_parent = true;
    s->ctx.flags = parent->flags;
    s->sampled = (parent->flags & OTEL_FLAG_SAMPLED) != 0;
    if (tracestate)
        s->tracestate = put_text_max(s, tracestate, OTEL_TRACESTATE_MAX);
    new_ids(t, s, false);
    return s;
}

struct otel_span *otel_span_start(struct otel *t, const char *name, enum otel_kind kind,
                                  const struct otel_span *parent)
{
    if (t == NULL)
        return NULL;
    if (parent)
        return otel_span_start_in(t, name, kind, &parent->ctx,
                                  otel_span_text(parent, parent->tracestate));
    struct otel_span *s = span_new(t, name, kind);
    new_ids(t, s, true);
    s->sampled = otel_sample(&t->cfg, s->ctx.trace_id, NULL);
    s->ctx.flags = s->sampled ? OTEL_FLAG_SAMPLED : 0;
    return s;
}

struct otel *otel_span_tracer(const struct otel_span *s)
{
    return s ? s->tracer : NULL;
}

void otel_span_set_remote_parent(struct otel_span *s, const struct otel_ctx *parent,
                                 const char *tracestate)
{
    if (s == NULL)
        return;
    memcpy(s->ctx.trace_id, parent->trace_id, 16);
    memcpy(s->parent_id, parent->span_id, 8);
    s->has_parent = s->remote_parent = true;
    s->sampled = otel_sample(&s->tracer->cfg, s->ctx.trace_id, &parent->flags);
    /* Other flags bits pass on as received; sampled is ours to say. */
    s->ctx.flags =
        (uint8_t)((parent->flags & ~OTEL_FLAG_SAMPLED) | (s->sampled ? OTEL_FLAG_SAMPLED : 0));
    /* The tracestate goes with its traceparent: one set earlier is another context's. */
    s->tracestate = tracestate && otel_tracestate_ok(tracestate)
                        ? put_text_max(s, tracestate, OTEL_TRACESTATE_MAX)
                        : OTEL_NO_TEXT;
}

void otel_span_set_name(struct otel_span *s, const char *name)
{
    uint16_t off = s ? put_text(s, name) : OTEL_NO_TEXT;
    if (off != OTEL_NO_TEXT) /* no room: the name it has is better than none */
        s->name = off;
}

/* Recorded whether sampled or not: a parent in params._meta may sample the span after the
 * request's first attributes were set. */
static struct otel_attr *attr(struct otel_span *s, const char *key)
{
    if (s == NULL)
        return NULL;
    /* Keys are literals: the same key set again is the same pointer (no string compares on a
     * request's path). */
    for (size_t i = 0; i < s->nattrs; i++)
        if (s->attrs[i].key == key)
            return &s->attrs[i];
    if (s->nattrs == OTEL_SPAN_ATTRS)
        return NULL;
    struct otel_attr *a = &s->attrs[s->nattrs++];
    a->key = key;
    return a;
}

void otel_span_str(struct otel_span *s, const char *key, const char *value)
{
    size_t before = s ? s->nattrs : 0;
    struct otel_attr *a = value ? attr(s, key) : NULL;
    if (a == NULL)
        return;
    uint16_t off = put_text(s, value);
    if (off == OTEL_NO_TEXT) { /* no room: a new slot goes back, an old one keeps its value */
        s->nattrs = (uint16_t)before;
        return;
    }
    a->type = OTEL_ATTR_STR;
    a->v.off = off;
}

void otel_span_int(struct otel_span *s, const char *key, int64_t value)
{
    struct otel_attr *a = attr(s, key);
    if (a) {
        a->type = OTEL_ATTR_INT;
        a->v.i = value;
    }
}

void otel_span_bool(struct otel_span *s, const char *key, bool value)
{
    struct otel_attr *a = attr(s, key);
    if (a) {
        a->type = OTEL_ATTR_BOOL;
        a->v.b = value;
    }
}

void otel_span_status(struct otel_span *s, enum otel_status st, const char *message)
{
    if (s == NULL)
        return;
    s->status = st;
    s->status_msg = message && s->sampled ? put_text(s, message) : OTEL_NO_TEXT;
}

void otel_span_end(struct otel_span *s)
{
    if (s == NULL)
        return;
    if (!s->sampled) {
        free(s);
        return;
    }
    s->end_ns = s->start_ns + (otel_now_ns(CLOCK_MONOTONIC) - s->mono_ns);
    otel_exporter_put(s->tracer, s);
}

void otel_span_discard(struct otel_span *s)
{
    free(s);
}

bool otel_span_ctx(const struct otel_span *s, struct otel_ctx *out)
{
    if (s == NULL)
        return false;
    *out = s->ctx;
    return true;
}

bool otel_span_traceparent(const struct otel_span *s, char *out)
{
    if (s == NULL)
        return false;
    otel_traceparent_format(&s->ctx, out);
    return true;
}

const char *otel_span_tracestate(const struct otel_span *s)
{
    return s ? otel_span_text(s, s->tracestate) : NULL;
}

bool otel_span_sampled(const struct otel_span *s)
{
    return s && s->sampled;
}
