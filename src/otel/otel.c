/* otel.c — the tracer and its spans (loop thread); exporter.c sends them. */
#include "otel_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "crypto.h"
#include "hex.h"
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
    list_init(&t->spare);
    struct otel_resource res = {
        .service = t->cfg.service, .version = t->version, .attrs = t->cfg.resource};
    otel_otlp_prepare(&t->head, &res);
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
    while (!list_empty(&t->spare)) {
        struct list *node = t->spare.next;
        list_unlink(node);
        free(list_entry(node, struct otel_span, link));
    }
    otel_otlp_head_cleanup(&t->head);
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

/* True when none of p[0..n) has its high bit set (8 bytes at a time). */
static bool ascii(const char *p, size_t n)
{
    uint64_t high = 0, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        high |= w;
    }
    for (; i < n; i++)
        high |= (unsigned char)p[i];
    return (high & 0x8080808080808080ull) == 0;
}

/* Copies v into the span's text, at most cap bytes of it cut at a character boundary, as
 * valid UTF-8 (proto3 strings must be: a collector refuses the whole export otherwise, and
 * values come from clients); OTEL_NO_TEXT when there is no room. */
static uint16_t put_text_len(struct otel_span *s, const char *v, size_t cap, size_t *len)
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
    char *dst = s->text + off;
    memcpy(dst, v, n);
    dst[n] = '\0';
    if (!ascii(dst, n) && !utf8_valid(dst, n)) { /* ASCII, nearly always: nothing to check */
        utf8_clean(dst);
        n = strlen(dst);
    }
    s->used = (uint16_t)(s->used + n + 1);
    *len = n;
    return off;
}

static uint16_t put_text_max(struct otel_span *s, const char *v, size_t cap)
{
    size_t len;
    return put_text_len(s, v, cap, &len);
}

static uint16_t put_text(struct otel_span *s, const char *v)
{
    return put_text_max(s, v, OTEL_VALUE_MAX);
}

/* A tracestate as W3C trace-context passes it on: cut to OTEL_TRACESTATE_MAX bytes at a member
 * boundary (otel_tracestate_trim), whole or not at all (a member cut short is another value). */
static uint16_t put_tracestate(struct otel_span *s, const char *v)
{
    char ts[OTEL_TRACESTATE_MAX + 1];
    size_t n = otel_tracestate_trim(v, ts, sizeof ts);
    if (n == 0 || (size_t)(OTEL_SPAN_TEXT - s->used) < n + 1)
        return OTEL_NO_TEXT;
    return put_text_max(s, ts, n);
}

/* n bytes from the kernel's CSPRNG, through the tracer's pool; false when the kernel has none
 * to give (logged once: the span is then not recorded). */
static bool random_bytes(struct otel *t, uint8_t *out, size_t n)
{
    if (t->pool_used + n > OTEL_ID_POOL) {
        if (!crypto_random_bytes(t->pool, OTEL_ID_POOL)) {
            if (!t->random_failed)
                log_error("tracing: the kernel gave no random bytes for span ids; spans are not "
                          "recorded until it does");
            t->random_failed = true;
            return false;
        }
        t->pool_used = 0;
    }
    memcpy(out, t->pool + t->pool_used, n);
    explicit_bzero(t->pool + t->pool_used, n); /* never handed out twice */
    t->pool_used += n;
    return true;
}

static bool new_ids(struct otel *t, struct otel_span *s, bool trace)
{
    do
        if (trace && !random_bytes(t, s->ctx.trace_id, 16))
            return false;
    while (trace && otel_id_zero(s->ctx.trace_id, 16));
    do
        if (!random_bytes(t, s->ctx.span_id, 8))
            return false;
    while (otel_id_zero(s->ctx.span_id, 8));
    return true;
}

void otel_span_recycle(struct otel *t, struct otel_span *s)
{
    s->tracer = NULL;   /* ended: a second end or a late use finds it so */
#if OTEL_SPARE_MAX == 0 /* under ASan: each span its own allocation */
    (void)t;
    free(s);
#else
    if (t->nspare >= OTEL_SPARE_MAX) {
        free(s);
        return;
    }
    list_push_front(&t->spare, &s->link);
    t->nspare++;
#endif
}

/* A spare span (the last one ended: its memory is still in this core's cache), else a new
 * one. */
static struct otel_span *span_take(struct otel *t)
{
    if (t->nspare == 0)
        return xmalloc(sizeof(struct otel_span));
    struct list *node = t->spare.next;
    list_unlink(node);
    t->nspare--;
    return list_entry(node, struct otel_span, link);
}

static struct otel_span *span_new(struct otel *t, const char *name, enum otel_kind kind)
{
    struct otel_span *s = span_take(t);
    memset(s, 0, offsetof(struct otel_span, attrs)); /* attrs past nattrs are never read */
    s->tracer = t;
    s->kind = kind;
    /* The wall clock as an offset from the monotonic one, read again once a second: one clock
     * read a span, not two. */
    s->mono_ns = otel_now_ns(CLOCK_MONOTONIC);
    if (s->mono_ns >= t->wall_due_ns) {
        t->wall_offset_ns = otel_now_ns(CLOCK_REALTIME) - s->mono_ns;
        t->wall_due_ns = s->mono_ns + 1000000000u;
    }
    s->start_ns = s->mono_ns + t->wall_offset_ns;
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
        s->tracestate = put_tracestate(s, tracestate);
    if (!new_ids(t, s, false)) {
        otel_span_recycle(t, s);
        return NULL;
    }
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
    if (!new_ids(t, s, true)) {
        otel_span_recycle(t, s);
        return NULL;
    }
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
    s->tracestate = tracestate ? put_tracestate(s, tracestate) : OTEL_NO_TEXT;
}

void otel_span_set_name2(struct otel_span *s, const char *a, const char *b)
{
    if (s == NULL)
        return;
    size_t room = OTEL_SPAN_TEXT - s->used, na = strlen(a), nb = b ? strlen(b) : 0;
    if (b == NULL || na + 1 + nb > OTEL_VALUE_MAX || na + nb + 2 > room || !ascii(a, na) ||
        !ascii(b, nb)) {
        char name[OTEL_VALUE_MAX + 1];
        size_t n = na < OTEL_VALUE_MAX ? na : OTEL_VALUE_MAX;
        memcpy(name, a, n);
        if (b && n < OTEL_VALUE_MAX) {
            name[n++] = ' ';
            size_t m = nb < OTEL_VALUE_MAX - n ? nb : OTEL_VALUE_MAX - n;
            memcpy(name + n, b, m);
            n += m;
        }
        name[n] = '\0';
        otel_span_set_name(s, name);
        return;
    }
    char *dst = s->text + s->used; /* short ASCII parts, the usual case: copied once */
    memcpy(dst, a, na);
    dst[na] = ' ';
    memcpy(dst + na + 1, b, nb);
    dst[na + 1 + nb] = '\0';
    s->name = s->used;
    s->used = (uint16_t)(s->used + na + nb + 2);
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
    uint64_t bit = otel_key_bit(key);
    if (s->keys & bit)
        for (size_t i = 0; i < s->nattrs; i++)
            if (s->attrs[i].key == key)
                return &s->attrs[i];
    if (s->nattrs == OTEL_SPAN_ATTRS)
        return NULL;
    s->keys |= bit;
    struct otel_attr *a = &s->attrs[s->nattrs++];
    size_t klen = strlen(key);
    a->key = key;
    a->klen = (uint8_t)(klen < 256 ? klen : 0);
    return a;
}

void otel_span_str(struct otel_span *s, const char *key, const char *value)
{
    size_t before = s ? s->nattrs : 0;
    struct otel_attr *a = value ? attr(s, key) : NULL;
    if (a == NULL)
        return;
    size_t len;
    uint16_t off = put_text_len(s, value, OTEL_VALUE_MAX, &len);
    if (off == OTEL_NO_TEXT) { /* no room: a new slot goes back, an old one keeps its value */
        s->nattrs = (uint16_t)before;
        return;
    }
    a->type = OTEL_ATTR_STR;
    a->len = (uint16_t)len;
    a->v.off = off;
}

void otel_span_lit(struct otel_span *s, const char *key, const char *literal)
{
    struct otel_attr *a = attr(s, key);
    if (a) {
        size_t len = strlen(literal);
        a->type = OTEL_ATTR_LIT;
        a->len = (uint16_t)(len < 65536 ? len : 0);
        a->v.lit = literal;
    }
}

static const char key_mcp_version[] = "mcp.protocol.version";

void otel_span_mcp_version(struct otel_span *s, const char *version)
{
    otel_span_str(s, key_mcp_version, version);
}

bool otel_span_has_mcp_version(const struct otel_span *s)
{
    return otel_span_has(s, key_mcp_version);
}

bool otel_span_has(const struct otel_span *s, const char *key)
{
    if (s == NULL || !(s->keys & otel_key_bit(key)))
        return false;
    for (size_t i = 0; i < s->nattrs; i++)
        if (s->attrs[i].key == key)
            return true;
    return false;
}

/* "sha256:" and 16 hex digits of name's SHA-256, from the tracer's few last ones when there:
 * a server's requests come from a handful of principals. */
static const char *principal_digest(struct otel *t, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < OTEL_WHO_CACHE; i++) /* an unused slot's digest is empty */
        if (t->who[i].digest[0] && t->who[i].len == n && n < sizeof t->who[i].name &&
            memcmp(t->who[i].name, name, n) == 0)
            return t->who[i].digest;
    struct otel_who *w = &t->who[t->who_next++ % OTEL_WHO_CACHE];
    unsigned char d[32];
    crypto_sha256(name, n, d);
    memcpy(w->digest, "sha256:", 7);
    hex_encode(d, 8, w->digest + 7);
    w->len = n < sizeof w->name ? n : SIZE_MAX; /* a longer name is never found again */
    if (n < sizeof w->name)
        memcpy(w->name, name, n);
    return w->digest;
}

void otel_span_principal(struct otel_span *s, const char *name)
{
    if (s == NULL || name == NULL)
        return;
    switch (s->tracer->cfg.principal) {
    case OTEL_PRINCIPAL_OFF:
        return;
    case OTEL_PRINCIPAL_PLAIN:
        otel_span_str(s, "hermes.principal", name);
        return;
    default:
        otel_span_str(s, "hermes.principal", principal_digest(s->tracer, name));
        return;
    }
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

/* A span ended twice, or used after its end (a pointer kept too long), would corrupt the spare
 * list or another request's span: refused loudly instead. */
static bool span_live(const struct otel_span *s)
{
    if (s->tracer != NULL)
        return true;
    log_error("BUG: an OpenTelemetry span ended twice or used after its end");
    return false;
}

void otel_span_end(struct otel_span *s)
{
    if (s == NULL || !span_live(s))
        return;
    if (!s->sampled) {
        otel_span_recycle(s->tracer, s);
        return;
    }
    s->end_ns = s->start_ns + (otel_now_ns(CLOCK_MONOTONIC) - s->mono_ns);
    otel_exporter_put(s->tracer, s);
    otel_span_recycle(s->tracer, s);
}

void otel_span_discard(struct otel_span *s)
{
    if (s && span_live(s))
        otel_span_recycle(s->tracer, s);
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
