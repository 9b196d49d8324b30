/* otelcfg.h — the tracing settings (the standard OTEL_* keys, read from the env file):
 * where spans go, how, which are kept. Pure; the loop thread. */
#ifndef HM_OTELCFG_H
#define HM_OTELCFG_H
#include <stdbool.h>
#include <stddef.h>

enum otel_protocol { OTEL_PROTO_PROTOBUF, OTEL_PROTO_JSON };

enum otel_sampler_kind {
    OTEL_SAMPLE_ALWAYS_ON,
    OTEL_SAMPLE_ALWAYS_OFF,
    OTEL_SAMPLE_RATIO,
    OTEL_SAMPLE_PARENT_ON, /* the default */
    OTEL_SAMPLE_PARENT_OFF,
    OTEL_SAMPLE_PARENT_RATIO,
};

/* What a span says of its principal (OTEL_SPAN_PRINCIPAL). */
enum otel_principal { OTEL_PRINCIPAL_DIGEST, OTEL_PRINCIPAL_PLAIN, OTEL_PRINCIPAL_OFF };

struct otel_config {
    char *url;      /* the traces endpoint (POST); NULL: tracing is off */
    char *headers;  /* extra request headers, "Name: value" lines joined by '\n' (decoded;
                       may hold an API key: never logged); NULL: none */
    char *service;  /* service.name: OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES' own,
                       else hermes-mcp */
    char *resource; /* OTEL_RESOURCE_ATTRIBUTES as written (k=v,...), or NULL */
    enum otel_protocol protocol;
    enum otel_sampler_kind sampler;
    double ratio;                  /* traceidratio's argument, 0..1 (default 1) */
    unsigned timeout_ms;           /* one export's bound (default 10 s) */
    unsigned queue_max;            /* spans waiting at most (default 2048); more are dropped */
    unsigned delay_ms;             /* how long a batch may gather (default 5 s) */
    unsigned batch_max;            /* spans per export at most (default 512) */
    enum otel_principal principal; /* default: a digest */
};

/* Reads the keys through get (NULL when unset) into c (zeroed first). False with a one-line
 * reason in err that never quotes OTEL_EXPORTER_OTLP_HEADERS. */
typedef const char *otel_getenv_fn(const char *key, void *arg);
bool otel_config_parse(struct otel_config *c, otel_getenv_fn *get, void *arg, char *err,
                       size_t errlen);
bool otel_config_same(const struct otel_config *a, const struct otel_config *b);
void otel_config_cleanup(struct otel_config *c);

/* The sampling decision for a new span: parent is NULL for a root span, else the parent's
 * flags (sampled or not). trace_id's last 8 bytes decide traceidratio. */
bool otel_sample(const struct otel_config *c, const unsigned char trace_id[16],
                 const unsigned char *parent_flags);

#endif
