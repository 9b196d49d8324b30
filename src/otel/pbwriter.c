/* pbwriter.c — protobuf wire format (https://protobuf.dev/programming-guides/encoding/). */
#include "pbwriter.h"

#include <string.h>

#include "buf.h"

size_t otel_pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t otel_pb_put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static void raw_varint(struct buf *b, uint64_t v)
{
    uint8_t tmp[10];
    buf_append(b, tmp, otel_pb_put_varint(tmp, v));
}

static void tag(struct buf *b, unsigned field, unsigned wire)
{
    raw_varint(b, (uint64_t)field << 3 | wire);
}

void otel_pb_varint(struct buf *b, unsigned field, uint64_t v)
{
    tag(b, field, 0);
    raw_varint(b, v);
}

void otel_pb_fixed64(struct buf *b, unsigned field, uint64_t v)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    tag(b, field, 1);
    buf_append(b, le, 8);
}

void otel_pb_fixed32(struct buf *b, unsigned field, uint32_t v)
{
    uint8_t le[4];
    for (int i = 0; i < 4; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    tag(b, field, 5);
    buf_append(b, le, 4);
}

void otel_pb_double(struct buf *b, unsigned field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    otel_pb_fixed64(b, field, bits);
}

void otel_pb_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
    uint8_t head[20]; /* the tag and the length in one append: most of a span is strings */
    size_t h = otel_pb_put_varint(head, (uint64_t)field << 3 | 2);
    h += otel_pb_put_varint(head + h, n);
    buf_append(b, head, h);
    buf_append(b, p, n);
}

void otel_pb_string(struct buf *b, unsigned field, const char *s)
{
    otel_pb_bytes(b, field, s, strlen(s));
}

size_t otel_pb_begin(struct buf *b)
{
    return b->len;
}

void otel_pb_end(struct buf *b, unsigned field, size_t begun)
{
    uint8_t head[20];
    size_t len = b->len - begun;
    size_t n = otel_pb_put_varint(head, (uint64_t)field << 3 | 2);
    n += otel_pb_put_varint(head + n, len);
    if (!buf_append(b, head, n)) /* room first; then the body moves up */
        return;
    memmove(b->data + begun + n, b->data + begun, len);
    memcpy(b->data + begun, head, n);
}
