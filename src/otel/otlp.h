/* otlp.h — an ExportTraceServiceRequest of a batch of spans, in the OTLP protobuf encoding or
 * its JSON mapping (hex ids, enums as integers, 64-bit integers as strings), as
 * opentelemetry-proto's collector/trace/v1 defines it. Pure; any thread. */
#ifndef HM_OTLP_H
#define HM_OTLP_H
#include <stddef.h>

struct buf;
struct otel_span;

/* Who the spans come from: service.name, service.version and OTEL_RESOURCE_ATTRIBUTES
 * (k=v,... percent-encoded; NULL: none). */
struct otel_resource {
    const char *service, *version, *attrs;
};

void otel_otlp_protobuf(struct buf *out, const struct otel_resource *r,
                        struct otel_span *const *spans, size_t n);
void otel_otlp_json(struct buf *out, const struct otel_resource *r, struct otel_span *const *spans,
                    size_t n);

#endif
