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
#include "mem.h"
#include "pbwriter.h"
#include "span.h"
#include "utf8.h"

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

static void json_head(struct buf *out, const struct otel_resource *r, const struct kv *kvs,
                      size_t nkv);
static void json_span(struct buf *b, const struct otel_span *s, bool comma);

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

/* Room for n more bytes at b->len. */
static void reserve(struct buf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

/* A span is written straight into the request's buffer through a pointer, its room reserved
 * first (a bound from its texts and keys): no call per field, no bytes moved for a length. */
static inline uint8_t *w_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline size_t pb_vlen(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *w_bytes(uint8_t *p, uint8_t tag, const void *d, size_t n)
{
    *p++ = tag;
    p = w_varint(p, n);
    memcpy(p, d, n);
    return p + n;
}

static inline uint8_t *w_fixed(uint8_t *p, uint8_t tag, uint64_t v, int n)
{
    *p++ = tag;
    for (int i = 0; i < n; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

/* One KeyValue (field 9 of a Span). */
static uint8_t *w_attr(uint8_t *p, const struct otel_span *s, const struct otel_attr *a)
{
    size_t klen = a->klen ? a->klen : strlen(a->key), vlen = 0, any;
    const char *v = NULL;
    switch (a->type) {
    case OTEL_ATTR_STR:
    case OTEL_ATTR_LIT:
        v = a->type == OTEL_ATTR_LIT ? a->v.lit : s->text + a->v.off;
        vlen = a->len ? a->len : strlen(v);
        any = 1 + pb_vlen(vlen) + vlen;
        break;
    case OTEL_ATTR_BOOL:
        any = 2;
        break;
    default:
        any = 1 + pb_vlen((uint64_t)a->v.i);
        break;
    }
    size_t kv = 1 + pb_vlen(klen) + klen + 1 + pb_vlen(any) + any;
    *p++ = 9 << 3 | 2;
    p = w_varint(p, kv);
    p = w_bytes(p, 1 << 3 | 2, a->key, klen);
    *p++ = 2 << 3 | 2; /* value: AnyValue */
    p = w_varint(p, any);
    switch (a->type) {
    case OTEL_ATTR_STR:
    case OTEL_ATTR_LIT:
        p = w_bytes(p, 1 << 3 | 2, v, vlen); /* string_value */
        break;
    case OTEL_ATTR_BOOL:
        *p++ = 2 << 3; /* bool_value */
        *p++ = a->v.b ? 1 : 0;
        break;
    default:
        *p++ = 3 << 3; /* int_value: int64, two's complement */
        p = w_varint(p, (uint64_t)a->v.i);
        break;
    }
    return p;
}

/* At most the bytes pb_span writes for s: its texts are at most s->used bytes (each with its
 * own tag and length), a key at most its length plus the tags and lengths around it. */
static size_t span_bound(const struct otel_span *s)
{
    size_t n = 128 + (size_t)s->used * 2;
    for (size_t i = 0; i < s->nattrs; i++) {
        const struct otel_attr *a = &s->attrs[i];
        n += (a->klen ? a->klen : strlen(a->key)) + 32;
        if (a->type == OTEL_ATTR_LIT)
            n += a->len ? a->len : strlen(a->v.lit);
    }
    return n;
}

/* The Span (field 2 of ScopeSpans) at the end of b. */
static void pb_span(struct buf *b, const struct otel_span *s)
{
    size_t bound = span_bound(s);
    reserve(b, bound + 4);
    /* The body goes after room for its tag and a 2-byte length (a span is under 16 KiB: its
     * text area and keys bound it); a body under 128 bytes moves down by the byte unused. */
    uint8_t *head = (uint8_t *)b->data + b->len, *body = head + 3, *p = body;
    p = w_bytes(p, 1 << 3 | 2, s->ctx.trace_id, 16);
    p = w_bytes(p, 2 << 3 | 2, s->ctx.span_id, 8);
    const char *ts = otel_span_text(s, s->tracestate);
    if (ts && *ts)
        p = w_bytes(p, 3 << 3 | 2, ts, strlen(ts));
    if (s->has_parent)
        p = w_bytes(p, 4 << 3 | 2, s->parent_id, 8);
    const char *name = otel_span_text(s, s->name);
    p = w_bytes(p, 5 << 3 | 2, name ? name : "", name ? strlen(name) : 0);
    *p++ = 6 << 3;
    p = w_varint(p, (uint64_t)s->kind);
    p = w_fixed(p, 7 << 3 | 1, s->start_ns, 8);
    p = w_fixed(p, 8 << 3 | 1, s->end_ns, 8);
    for (size_t i = 0; i < s->nattrs; i++)
        p = w_attr(p, s, &s->attrs[i]);
    if (s->status != OTEL_STATUS_UNSET) {
        const char *msg = otel_span_text(s, s->status_msg);
        size_t mlen = msg ? strlen(msg) : 0;
        size_t st = (mlen ? 1 + pb_vlen(mlen) + mlen : 0) + 2;
        *p++ = 15 << 3 | 2;
        p = w_varint(p, st);
        if (mlen)
            p = w_bytes(p, 2 << 3 | 2, msg, mlen);
        *p++ = 3 << 3;
        *p++ = (uint8_t)s->status;
    }
    *p++ = (uint8_t)(16 << 3 | 5 | 0x80); /* field 16's tag takes two bytes */
    p = w_fixed(p, 1, span_flags(s), 4);
    size_t len = (size_t)(p - body);
    head[0] = 2 << 3 | 2;
    if (len < 128) {
        head[1] = (uint8_t)len;
        memmove(head + 2, body, len);
        b->len += 2 + len;
    } else {
        head[1] = (uint8_t)(len | 0x80);
        head[2] = (uint8_t)(len >> 7);
        b->len += 3 + len;
    }
}

static size_t pb_head_len(unsigned field, size_t len)
{
    return pb_vlen((uint64_t)field << 3 | 2) + pb_vlen(len);
}

/* A length-delimited field's tag and length, for a body written separately. */
static size_t pb_head(uint8_t *out, unsigned field, size_t len)
{
    size_t n = otel_pb_put_varint(out, (uint64_t)field << 3 | 2);
    return n + otel_pb_put_varint(out + n, len);
}

void otel_otlp_prepare(struct otel_otlp_head *h, const struct otel_resource *r)
{
    struct kv kvs[RESOURCE_ATTRS_MAX];
    size_t nkv = resource_attrs(r->attrs, kvs, RESOURCE_ATTRS_MAX);
    /* Protobuf strings must be UTF-8 (a collector refuses the whole export otherwise): a value
     * cut mid-character or percent-decoded to other bytes is cleaned. */
    for (size_t i = 0; i < nkv; i++) {
        utf8_clean(kvs[i].key);
        utf8_clean(kvs[i].value);
    }
    char service[256];
    snprintf(service, sizeof service, "%s", r->service ? r->service : "hermes-mcp");
    utf8_clean(service);
    struct otel_resource clean = *r;
    clean.service = service;
    r = &clean;
    buf_init(&h->res, 0);
    buf_init(&h->scope, 0);
    buf_init(&h->json, 0);
    pb_kv_str(&h->res, 1, "service.name", r->service);
    if (r->version)
        pb_kv_str(&h->res, 1, "service.version", r->version);
    for (size_t i = 0; i < nkv; i++)
        pb_kv_str(&h->res, 1, kvs[i].key, kvs[i].value);
    otel_pb_string(&h->scope, 1, SCOPE_NAME);
    if (r->version)
        otel_pb_string(&h->scope, 2, r->version);
    json_head(&h->json, r, kvs, nkv);
}

void otel_otlp_head_cleanup(struct otel_otlp_head *h)
{
    buf_cleanup(&h->res);
    buf_cleanup(&h->scope);
    buf_cleanup(&h->json);
}

/* The spans are written after room for the heads of the two messages around them
 * (ResourceSpans, ScopeSpans), which get their lengths from them and are written last, just
 * before the spans: a batch's bytes are written once and never moved. */
static size_t pb_room(const struct otel_otlp_head *h)
{
    return 48 + h->res.len + h->scope.len; /* the heads and the resource, scope */
}

void otel_otlp_begin(struct buf *out, const struct otel_otlp_head *h, bool json)
{
    out->len = 0;
    if (json) {
        buf_append(out, h->json.data, h->json.len);
        return;
    }
    reserve(out, pb_room(h));
    out->len = pb_room(h);
}

void otel_otlp_add(struct buf *out, const struct otel_otlp_head *h, const struct otel_span *s,
                   bool json)
{
    if (json)
        json_span(out, s, out->len > h->json.len);
    else
        pb_span(out, s);
}

const char *otel_otlp_end(struct buf *out, const struct otel_otlp_head *h, bool json, size_t *len)
{
    if (json) {
        buf_appends(out, "]}]}]}");
        *len = out->len;
        return out->data;
    }
    size_t room = pb_room(h), body = out->len - room;
    size_t ss = pb_head_len(1, h->scope.len) + h->scope.len + body; /* ScopeSpans */
    size_t rs =
        pb_head_len(1, h->res.len) + h->res.len + pb_head_len(2, ss) + ss; /* ResourceSpans */
    uint8_t pre[32];
    size_t k = pb_head(pre, 1, rs);
    k += pb_head(pre + k, 1, h->res.len);
    size_t start =
        room - (k + h->res.len + pb_head_len(2, ss) + pb_head_len(1, h->scope.len) + h->scope.len);
    uint8_t *p = (uint8_t *)out->data + start;
    memcpy(p, pre, k);
    p += k;
    memcpy(p, h->res.data, h->res.len);
    p += h->res.len;
    p += pb_head(p, 2, ss);
    p += pb_head(p, 1, h->scope.len);
    memcpy(p, h->scope.data, h->scope.len);
    *len = out->len - start;
    return out->data + start;
}

void otel_otlp_protobuf(struct buf *out, const struct otel_resource *r,
                        struct otel_span *const *spans, size_t n)
{
    struct otel_otlp_head h;
    struct buf tmp;
    size_t len;
    otel_otlp_prepare(&h, r);
    buf_init(&tmp, 0);
    otel_otlp_begin(&tmp, &h, false);
    for (size_t i = 0; i < n; i++)
        otel_otlp_add(&tmp, &h, spans[i], false);
    const char *p = otel_otlp_end(&tmp, &h, false, &len);
    buf_append(out, p, len);
    buf_cleanup(&tmp);
    otel_otlp_head_cleanup(&h);
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
        case OTEL_ATTR_LIT:
            buf_appends(b, ",\"value\":{\"stringValue\":");
            json_str(b, a->type == OTEL_ATTR_LIT ? a->v.lit : s->text + a->v.off);
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

/* Everything before the spans: the resource and the scope. */
static void json_head(struct buf *out, const struct otel_resource *r, const struct kv *kvs,
                      size_t nkv)
{
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
}

void otel_otlp_json(struct buf *out, const struct otel_resource *r, struct otel_span *const *spans,
                    size_t n)
{
    struct otel_otlp_head h;
    struct buf tmp;
    size_t len;
    otel_otlp_prepare(&h, r);
    buf_init(&tmp, 0);
    otel_otlp_begin(&tmp, &h, true);
    for (size_t i = 0; i < n; i++)
        otel_otlp_add(&tmp, &h, spans[i], true);
    const char *p = otel_otlp_end(&tmp, &h, true, &len);
    buf_append(out, p, len);
    buf_cleanup(&tmp);
    otel_otlp_head_cleanup(&h);
}
