/* pbwriter.h — the few protobuf wire-format writes OTLP needs (varints, fixed64/32, length-
 * delimited fields and nested messages), onto a struct buf. Pure; any thread. */
#ifndef HM_PBWRITER_H
#define HM_PBWRITER_H
#include <stddef.h>
#include <stdint.h>

struct buf;

void otel_pb_varint(struct buf *b, unsigned field, uint64_t v);             /* wire type 0 */
void otel_pb_fixed64(struct buf *b, unsigned field, uint64_t v);            /* wire type 1 */
void otel_pb_fixed32(struct buf *b, unsigned field, uint32_t v);            /* wire type 5 */
void otel_pb_double(struct buf *b, unsigned field, double v);               /* wire type 1 */
void otel_pb_bytes(struct buf *b, unsigned field, const void *p, size_t n); /* wire type 2 */
void otel_pb_string(struct buf *b, unsigned field, const char *s);
/* A nested message: begin returns where its body starts; end writes the field's tag and
 * length in front of what was appended since. */
size_t otel_pb_begin(struct buf *b);
/* For a message whose size is known first (no move at its end): a varint written into out
 * (room for 10 bytes), its length returned; and the bytes a varint takes. */
size_t otel_pb_put_varint(uint8_t *out, uint64_t v);
size_t otel_pb_varint_len(uint64_t v);
void otel_pb_end(struct buf *b, unsigned field, size_t begun);

#endif
