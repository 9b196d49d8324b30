/* otlp.h — an ExportTraceServiceRequest of a batch of spans, in the OTLP protobuf encoding or
 * its JSON mapping (hex ids, enums as integers, 64-bit integers as strings), as
 * opentelemetry-proto's collector/trace/v1 defines it. Pure; any thread. */
#ifndef HM_OTLP_H
#define HM_OTLP_H
#include <stdbool.h>
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
/* A request built a span at a time into out (its bytes replaced): begin, add each span, end;
 * the request starts at the pointer end returns and is *len bytes long. json: the JSON
 * mapping, else protobuf. */
void otel_otlp_begin(struct buf *out, const struct otel_otlp_head *h, bool json);
void otel_otlp_add(struct buf *out, const struct otel_otlp_head *h, const struct otel_span *s,
                   bool json);
const char *otel_otlp_end(struct buf *out, const struct otel_otlp_head *h, bool json, size_t *len);

/* One request with its resource encoded for it (the two above in one call). */
void otel_otlp_protobuf(struct buf *out, const struct otel_resource *r,
                        struct otel_span *const *spans, size_t n);
void otel_otlp_json(struct buf *out, const struct otel_resource *r, struct otel_span *const *spans,
                    size_t n);

#endif
