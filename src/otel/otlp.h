/* otlp.h — an ExportTraceServiceRequest of a batch of spans, in the OTLP protobuf encoding or
 * its JSON mapping (hex ids, enums as integers, 64-bit integers as strings), as
 * opentelemetry-proto's collector/trace/v1 defines it. Pure; any thread. */
#ifndef HM_OTLP_H
#define HM_OTLP_H
#include <stddef.h>

#include "buf.h"

struct otel_span;

/* Who the spans come from: service.name, service.version and OTEL_RESOURCE_ATTRIBUTES
 * (k=v,... percent-encoded; NULL: none). */
struct otel_resource {
    const char *service, *version, *attrs;
};

/* The parts of every request that only the resource decides, encoded once. */
struct otel_otlp_head {
    struct buf res, scope; /* protobuf: the Resource's and the InstrumentationScope's fields */
    struct buf json;       /* JSON: everything before the first span */
};
void otel_otlp_prepare(struct otel_otlp_head *h, const struct otel_resource *r);
void otel_otlp_head_cleanup(struct otel_otlp_head *h);
/* The request of n spans in protobuf, written into out (reused: its bytes are replaced); the
 * request starts at the pointer returned and is *len bytes long. */
const char *otel_otlp_protobuf_batch(struct buf *out, const struct otel_otlp_head *h,
                                     struct otel_span *const *spans, size_t n, size_t *len);
/* The same in JSON, appended to out. */
void otel_otlp_json_batch(struct buf *out, const struct otel_otlp_head *h,
                          struct otel_span *const *spans, size_t n);

/* One request with its resource encoded for it (the two above in one call). */
void otel_otlp_protobuf(struct buf *out, const struct otel_resource *r,
                        struct otel_span *const *spans, size_t n);
void otel_otlp_json(struct buf *out, const struct otel_resource *r, struct otel_span *const *spans,
                    size_t n);

#endif
