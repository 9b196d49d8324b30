/* span.h — one span as the exporter and the encoders see it: fixed size, one allocation, its
 * texts in an arena inside it. The layer's own; callers use otel.h. */
#ifndef HM_SPAN_H
#define HM_SPAN_H
#include <stdbool.h>
#include <stdint.h>

#include "list.h"
#include "otel.h"

#define OTEL_SPAN_ATTRS 20
#define OTEL_SPAN_TEXT 1536 /* bytes for the name, tracestate, status message and values */

/* OTEL_ATTR_LIT: a string literal of ours (short, valid UTF-8), kept as a pointer. */
enum otel_attr_type { OTEL_ATTR_STR, OTEL_ATTR_INT, OTEL_ATTR_BOOL, OTEL_ATTR_LIT };

struct otel_attr {
    const char *key; /* a literal */
    enum otel_attr_type type;
    uint16_t len; /* OTEL_ATTR_STR, OTEL_ATTR_LIT: the value's length; 0: not known */
    uint8_t klen; /* the key's length; 0: not known */
    union {
        uint16_t off; /* OTEL_ATTR_STR: the value's offset in the span's text */
        const char *lit;
        int64_t i;
        bool b;
    } v;
};

struct otel_span {
    struct list link; /* the exporter's queue, or a list of spare spans */
    struct otel *tracer;
    struct otel_ctx ctx;
    uint8_t parent_id[8];
    bool has_parent, remote_parent, sampled;
    enum otel_kind kind;
    enum otel_status status;
    uint64_t start_ns, end_ns;             /* wall clock, Unix epoch */
    uint64_t mono_ns;                      /* the monotonic clock at the start, for the duration */
    uint16_t name, tracestate, status_msg; /* offsets in text; 0xffff: none */
    uint16_t nattrs, used;
    uint64_t keys; /* a bit per key set (otel_key_bit): most keys are new, found so at once */
    struct otel_attr attrs[OTEL_SPAN_ATTRS];
    char text[OTEL_SPAN_TEXT];
};

#define OTEL_NO_TEXT 0xffffu
#define OTEL_VALUE_MAX                                                                             \
    256 /* bytes of one text value or name: a client's id or header cannot                         \
           crowd out the others */

static inline uint64_t otel_key_bit(const char *key)
{
    uintptr_t k = (uintptr_t)key;
    return 1ull << ((k ^ k >> 6 ^ k >> 12) & 63);
}

/* The text at off, or NULL for OTEL_NO_TEXT. */
static inline const char *otel_span_text(const struct otel_span *s, uint16_t off)
{
    return off == OTEL_NO_TEXT ? NULL : s->text + off;
}

#endif
