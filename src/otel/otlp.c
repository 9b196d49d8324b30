/* otlp.c — OTLP trace requests. Field numbers from opentelemetry-proto:
 * collector/trace/v1 ExportTraceServiceRequest{resource_spans=1}; trace/v1 ResourceSpans
 * {resource=1, scope_spans=2}, ScopeSpans{scope=1, spans=2}, Span{trace_id=1, span_id=2,
 * trace_state=3, parent_span_id=4, name=5, kind=6, start_time_unix_nano=7 (fixed64),
 * end_time_unix_nano=8 (fixed64), attributes=9, status=15, flags=16 (fixed32)}, Status
 * {message=2, code=3}; common/v1 KeyValue{key=1, value=2}, AnyValue{string_value=1,
 * bool_value=2, int_value=3}, InstrumentationScope{name=1, version=2}; resource/v1 Resource
 * {attributes=1}. */
#include "otlp.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "hex.h"
#include "pbwriter.h"
#include "span.h"

#define SCOPE_NAME "hermes-mcp"
/* Span.flags: the W3C trace flags in bits 0-7, then "whether the parent is remote is known"
 * (bit 8) and "the parent is remote" (bit 9). */
#define FLAG_HAS_IS_REMOTE 0x100u
#define FLAG_IS_REMOTE 0x200u
#define RESOURCE_ATTRS_MAX 32

/* One k=v of OTEL_RESOURCE_ATTRIBUTES, percent-decoded into key and value. */
struct kv {
    char key[128], value[256];
};

static size_t decode(const char *s, size_t n, char *out, size_t outsz)
{
    size_t o = 0;
    while (n && *s == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    for (size_t i = 0; i < n && o + 1 < outsz; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hex_digit(s[i + 1])) >= 0 &&
            (lo = hex_digit(s[i + 2])) >= 0) {
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return o;
}

static size_t resource_attrs(const char *attrs, struct kv *out, size_t max)
{
    size_t n = 0;
    for (const char *p = attrs; p && *p && n < max;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (eq && decode(p, (size_t)(eq - p), out[n].key, sizeof out[n].key) > 0) {
            decode(eq + 1, len - (size_t)(eq - p) - 1, out[n].value, sizeof out[n].value);
            /* service.name comes from OTEL_SERVICE_NAME */
            if (strcmp(out[n].key, "service.name") != 0)
                n++;
        }
        p += len + (p[len] == ',');
    }
    return n;
}

static uint32_t span_flags(const struct otel_span *s)
{
    uint32_t f = s->ctx.flags | FLAG_HAS_IS_REMOTE;
    return s->has_parent && s->remote_parent ? f | FLAG_IS_REMOTE : f;
}

/* ---------- protobuf ---------- */

static void pb_kv_str(struct buf *b, unsigned field, const char *key, const char *value)
{
    size_t kv = otel_pb_begin(b);
    otel_pb_string(b, 1, key);
    size_t any = otel_pb_begin(b);
    otel_pb_string(b, 1, value);
    otel_pb_end(b, 2, any);
    otel_pb_end(b, field, kv);
}

/* One KeyValue (field 9 of a Span) written whole, its sizes counted first: a span's dozen
 * attributes would otherwise each move their bytes twice (pb_end). */
static void pb_attr(struct buf *b, const struct otel_span *s, const struct otel_attr *a)
{
    uint8_t out[600], *p = out;
    size_t klen = strlen(a->key), vlen = 0, any;
    const char *v = NULL;
    switch (a->type) {
    case OTEL_ATTR_STR:
        v = s->text + a->v.off;
        vlen = strlen(v);
        any = 1 + otel_pb_varint_len(vlen) + vlen;
        break;
    case OTEL_ATTR_BOOL:
        any = 2;
        break;
    default:
        any = 1 + otel_pb_varint_len((uint64_t)a->v.i);
        break;
    }
    size_t kv = 1 + otel_pb_varint_len(klen) + klen + 1 + otel_pb_varint_len(any) + any;
    if (kv + 12 > sizeof out) { /* a long value: the general way */
        size_t at = otel_pb_begin(b);
        otel_pb_string(b, 1, a->key);
        size_t anyat = otel_pb_begin(b);
        otel_pb_string(b, 1, v ? v : "");
        otel_pb_end(b, 2, anyat);
        otel_pb_end(b, 9, at);
        return;
    }
    p += otel_pb_put_varint(p, 9 << 3 | 2);
    p += otel_pb_put_varint(p, kv);
    *p++ = 1 << 3 | 2; /* key */
    p += otel_pb_put_varint(p, klen);
    memcpy(p, a->key, klen);
    p += klen;
    *p++ = 2 << 3 | 2; /* value: AnyValue */
    p += otel_pb_put_varint(p, any);
    switch (a->type) {
    case OTEL_ATTR_STR:
        *p++ = 1 << 3 | 2; /* string_value */
        p += otel_pb_put_varint(p, vlen);
        memcpy(p, v, vlen);
        p += vlen;
        break;
    case OTEL_ATTR_BOOL:
        *p++ = 2 << 3; /* bool_value */
        *p++ = a->v.b ? 1 : 0;
        break;
    default:
        *p++ = 3 << 3; /* int_value: int64, two's complement */
        p += otel_pb_put_varint(p, (uint64_t)a->v.i);
        break;
    }
    buf_append(b, out, (size_t)(p - out));
}

static void pb_span(struct buf *b, const struct otel_span *s)
{
    size_t at = otel_pb_begin(b);
    otel_pb_bytes(b, 1, s->ctx.trace_id, 16);
    otel_pb_bytes(b, 2, s->ctx.span_id, 8);
    const char *ts = otel_span_text(s, s->tracestate);
    if (ts && *ts)
        otel_pb_string(b, 3, ts);
    if (s->has_parent)
        otel_pb_bytes(b, 4, s->parent_id, 8);
    otel_pb_string(b, 5, otel_span_text(s, s->name) ? otel_span_text(s, s->name) : "");
    otel_pb_varint(b, 6, (uint64_t)s->kind);
    otel_pb_fixed64(b, 7, s->start_ns);
    otel_pb_fixed64(b, 8, s->end_ns);
    for (size_t i = 0; i < s->nattrs; i++)
        pb_attr(b, s, &s->attrs[i]);
    if (s->status != OTEL_STATUS_UNSET) {
        size_t st = otel_pb_begin(b);
        const char *msg = otel_span_text(s, s->status_msg);
        if (msg && *msg)
            otel_pb_string(b, 2, msg);
        otel_pb_varint(b, 3, (uint64_t)s->status);
        otel_pb_end(b, 15, st);
    }
    otel_pb_fixed32(b, 16, span_flags(s));
    otel_pb_end(b, 2, at);
}

/* A length-delimited field's tag and length, for a body written separately. */
static void pb_head(struct buf *b, unsigned field, size_t len)
{
    uint8_t head[20];
    size_t n = otel_pb_put_varint(head, (uint64_t)field << 3 | 2);
    n += otel_pb_put_varint(head + n, len);
    buf_append(b, head, n);
}

static size_t pb_head_len(unsigned field, size_t len)
{
    return otel_pb_varint_len((uint64_t)field << 3 | 2) + otel_pb_varint_len(len);
}

/* The spans are encoded apart and the two messages around them (ResourceSpans, ScopeSpans)
 * get their lengths from them, so a batch's bytes are copied once, not moved twice. */
void otel_otlp_protobuf(struct buf *out, const struct otel_resource *r,
                        struct otel_span *const *spans, size_t n)
{
    struct kv kvs[RESOURCE_ATTRS_MAX];
    struct buf res, scope, body;
    size_t nkv = resource_attrs(r->attrs, kvs, RESOURCE_ATTRS_MAX);
    buf_init(&res, 0);
    buf_init(&scope, 0);
    buf_init(&body, 0);
    pb_kv_str(&res, 1, "service.name", r->service);
    if (r->version)
        pb_kv_str(&res, 1, "service.version", r->version);
    for (size_t i = 0; i < nkv; i++)
        pb_kv_str(&res, 1, kvs[i].key, kvs[i].value);
    otel_pb_string(&scope, 1, SCOPE_NAME);
    if (r->version)
        otel_pb_string(&scope, 2, r->version);
    for (size_t i = 0; i < n; i++)
        pb_span(&body, spans[i]);
    size_t ss = pb_head_len(1, scope.len) + scope.len + body.len;            /* ScopeSpans */
    size_t rs = pb_head_len(1, res.len) + res.len + pb_head_len(2, ss) + ss; /* ResourceSpans */
    pb_head(out, 1, rs);
    pb_head(out, 1, res.len);
    buf_append(out, res.data, res.len);
    pb_head(out, 2, ss);
    pb_head(out, 1, scope.len);
    buf_append(out, scope.data, scope.len);
    buf_append(out, body.data, body.len);
    buf_cleanup(&res);
    buf_cleanup(&scope);
    buf_cleanup(&body);
}

/* ---------- JSON ---------- */

static void json_str(struct buf *b, const char *s)
{
    buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            buf_printf(b, "\\%c", *p);
        else if (*p < 0x20)
            buf_printf(b, "\\u%04x", *p);
        else
            buf_append(b, p, 1);
    }
    buf_append(b, "\"", 1);
}

static void json_kv_str(struct buf *b, bool comma, const char *key, const char *value)
{
    buf_appends(b, comma ? ",{\"key\":" : "{\"key\":");
    json_str(b, key);
    buf_appends(b, ",\"value\":{\"stringValue\":");
    json_str(b, value);
    buf_appends(b, "}}");
}

static void json_hex(struct buf *b, const char *name, const uint8_t *p, size_t n)
{
    char hex[33];
    hex_encode(p, n, hex);
    buf_printf(b, ",\"%s\":\"%s\"", name, hex);
}

static void json_span(struct buf *b, const struct otel_span *s, bool comma)
{
    const char *name = otel_span_text(s, s->name);
    buf_appends(b, comma ? ",{" : "{");
    buf_appends(b, "\"name\":");
    json_str(b, name ? name : "");
    json_hex(b, "traceId", s->ctx.trace_id, 16);
    json_hex(b, "spanId", s->ctx.span_id, 8);
    if (s->has_parent)
        json_hex(b, "parentSpanId", s->parent_id, 8);
    const char *ts = otel_span_text(s, s->tracestate);
    if (ts && *ts) {
        buf_appends(b, ",\"traceState\":");
        json_str(b, ts);
    }
    buf_printf(b,
               ",\"flags\":%" PRIu32 ",\"kind\":%d,\"startTimeUnixNano\":\"%" PRIu64
               "\",\"endTimeUnixNano\":\"%" PRIu64 "\",\"attributes\":[",
               span_flags(s), (int)s->kind, s->start_ns, s->end_ns);
    for (size_t i = 0; i < s->nattrs; i++) {
        const struct otel_attr *a = &s->attrs[i];
        buf_appends(b, i ? ",{\"key\":" : "{\"key\":");
        json_str(b, a->key);
        switch (a->type) {
        case OTEL_ATTR_STR:
            buf_appends(b, ",\"value\":{\"stringValue\":");
            json_str(b, s->text + a->v.off);
            buf_appends(b, "}}");
            break;
        case OTEL_ATTR_BOOL:
            buf_printf(b, ",\"value\":{\"boolValue\":%s}}", a->v.b ? "true" : "false");
            break;
        case OTEL_ATTR_INT:
            buf_printf(b, ",\"value\":{\"intValue\":\"%" PRId64 "\"}}", a->v.i);
            break;
        }
    }
    buf_appends(b, "]");
    if (s->status != OTEL_STATUS_UNSET) {
        const char *msg = otel_span_text(s, s->status_msg);
        buf_printf(b, ",\"status\":{\"code\":%d", (int)s->status);
        if (msg && *msg) {
            buf_appends(b, ",\"message\":");
            json_str(b, msg);
        }
        buf_appends(b, "}");
    }
    buf_appends(b, "}");
}

void otel_otlp_json(struct buf *out, const struct otel_resource *r, struct otel_span *const *spans,
                    size_t n)
{
    struct kv kvs[RESOURCE_ATTRS_MAX];
    size_t nkv = resource_attrs(r->attrs, kvs, RESOURCE_ATTRS_MAX);
    buf_appends(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    json_kv_str(out, false, "service.name", r->service);
    if (r->version)
        json_kv_str(out, true, "service.version", r->version);
    for (size_t i = 0; i < nkv; i++)
        json_kv_str(out, true, kvs[i].key, kvs[i].value);
    buf_appends(out, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"" SCOPE_NAME "\"");
    if (r->version) {
        buf_appends(out, ",\"version\":");
        json_str(out, r->version);
    }
    buf_appends(out, "},\"spans\":[");
    for (size_t i = 0; i < n; i++)
        json_span(out, spans[i], i > 0);
    buf_appends(out, "]}]}]}");
}
