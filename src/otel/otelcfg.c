/* otelcfg.c — the OTEL_* keys as the OpenTelemetry SDK environment specification reads them
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/). */
#include "otelcfg.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hex.h"
#include "mem.h"

#define HEADERS_MAX 8192 /* OTEL_EXPORTER_OTLP_HEADERS decoded, at most */

static bool parse_uint(const char *v, unsigned long min, unsigned long max, unsigned *out)
{
    char *end;
    if (v == NULL || *v == '\0')
        return true;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || end == v || *end || *v == '-' || n < min || n > max)
        return false;
    *out = (unsigned)n;
    return true;
}

/* Percent-decodes s[0..n) (trimmed of spaces) onto b. False for a bad escape or a control
 * character, which would split a header. */
static bool decode_part(struct buf *b, const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '%') {
            int hi = i + 1 < n ? hex_digit(s[i + 1]) : -1;
            int lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return false;
            ch = (unsigned char)(hi << 4 | lo);
            i += 2;
        }
        if (ch < 0x20 || ch == 0x7f)
            return false;
        if (!buf_append(b, &ch, 1))
            return false;
    }
    return true;
}

/* k1=v1,k2=v2 (W3C baggage without properties), each part percent-decoded, into
 * "k1: v1\nk2: v2". */
static bool parse_headers(const char *v, char **out)
{
    struct buf b;
    buf_init(&b, HEADERS_MAX);
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        size_t klen = eq ? (size_t)(eq - p) : 0;
        size_t before = b.len;
        if (n == 0 || strspn(p, " \t") == n) { /* an empty member */
            p += n + (p[n] == ',');
            continue;
        }
        if (eq == NULL || (b.len && !buf_append(&b, "\n", 1)) || !decode_part(&b, p, klen) ||
            b.len == before + (before != 0) || !buf_append(&b, ": ", 2) ||
            !decode_part(&b, eq + 1, n - klen - 1)) {
            buf_cleanup(&b);
            return false;
        }
        for (size_t i = before; i < b.len && b.data[i] != ':'; i++)
            if (b.data[i] == ' ' || b.data[i] == '\t') {
                buf_cleanup(&b);
                return false;
            }
        p += n + (p[n] == ',');
    }
    *out = b.len ? buf_detach(&b, NULL) : NULL;
    buf_cleanup(&b);
    return true;
}

static bool parse_sampler(struct otel_config *c, const char *v, const char *arg)
{
    static const struct {
        const char *name;
        enum otel_sampler_kind kind;
    } names[] = {{"always_on", OTEL_SAMPLE_ALWAYS_ON},
                 {"always_off", OTEL_SAMPLE_ALWAYS_OFF},
                 {"traceidratio", OTEL_SAMPLE_RATIO},
                 {"parentbased_always_on", OTEL_SAMPLE_PARENT_ON},
                 {"parentbased_always_off", OTEL_SAMPLE_PARENT_OFF},
                 {"parentbased_traceidratio", OTEL_SAMPLE_PARENT_RATIO}};
    c->sampler = OTEL_SAMPLE_PARENT_ON;
    c->ratio = 1.0;
    if (v && *v) {
        size_t i = 0;
        while (i < sizeof names / sizeof *names && strcmp(names[i].name, v) != 0)
            i++;
        if (i == sizeof names / sizeof *names)
            return false;
        c->sampler = names[i].kind;
    }
    if (arg && *arg &&
        (c->sampler == OTEL_SAMPLE_RATIO || c->sampler == OTEL_SAMPLE_PARENT_RATIO)) {
        char *end;
        errno = 0;
        double r = strtod(arg, &end);
        if (errno || end == arg || *end || !(r >= 0.0 && r <= 1.0))
            return false;
        c->ratio = r;
    }
    return true;
}

/* service.name's value in OTEL_RESOURCE_ATTRIBUTES (k=v,..., percent-encoded), decoded, or
 * NULL (none, empty, or not valid). The last one wins, as for any key there. */
static char *resource_service(const char *v)
{
    char *found = NULL;
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        if (eq) {
            struct buf k, val;
            buf_init(&k, 256);
            buf_init(&val, 1024);
            if (decode_part(&k, p, (size_t)(eq - p)) && buf_append(&k, "", 1) &&
                strcmp(k.data, "service.name") == 0 &&
                decode_part(&val, eq + 1, n - (size_t)(eq - p) - 1) && val.len > 0 &&
                buf_append(&val, "", 1)) {
                free(found);
                found = buf_detach(&val, NULL);
            }
            buf_cleanup(&k);
            buf_cleanup(&val);
        }
        p += n + (p[n] == ',');
    }
    return found;
}

/* http(s)://host..., no white space or control characters. */
static bool url_ok(const char *u)
{
    if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return false;
    return strlen(u) < 2048;
}

bool otel_config_parse(struct otel_config *c, otel_getenv_fn *get, void *arg, char *err,
                       size_t errlen)
{
    const char *traces = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", arg);
    const char *base = get("OTEL_EXPORTER_OTLP_ENDPOINT", arg);
    const char *proto = get("OTEL_EXPORTER_OTLP_PROTOCOL", arg);
    const char *service = get("OTEL_SERVICE_NAME", arg);
    const char *resource = get("OTEL_RESOURCE_ATTRIBUTES", arg);
    const char *headers = get("OTEL_EXPORTER_OTLP_HEADERS", arg);

    memset(c, 0, sizeof *c);
    c->timeout_ms = 10000;
    c->queue_max = 2048;
    c->delay_ms = 5000;
    c->batch_max = 512;
    if (traces && *traces) {
        if (!url_ok(traces)) {
            snprintf(err, errlen,
                     "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:// or "
                     "https:// URL");
            goto fail;
        }
        c->url = xstrdup(traces);
    } else if (base && *base) {
        if (!url_ok(base)) {
            snprintf(err, errlen, "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL");
            goto fail;
        }
        size_t n = strlen(base);
        c->url = xasprintf("%.*s/v1/traces", (int)(base[n - 1] == '/' ? n - 1 : n), base);
    }
    if (proto && *proto && strcmp(proto, "http/protobuf") != 0) {
        if (strcmp(proto, "http/json") == 0)
            c->protocol = OTEL_PROTO_JSON;
        else {
            snprintf(err, errlen,
                     "OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (%s is not "
                     "supported)",
                     strcmp(proto, "grpc") == 0 ? "grpc" : "that");
            goto fail;
        }
    }
    if (!parse_uint(get("OTEL_EXPORTER_OTLP_TIMEOUT", arg), 1, 600000, &c->timeout_ms)) {
        snprintf(err, errlen, "OTEL_EXPORTER_OTLP_TIMEOUT must be 1-600000 milliseconds");
        goto fail;
    }
    /* A queued span holds about 2 KiB (its text area and attribute slots): 65536 of them are
     * 128 MiB, as far as a queue of spans should ever go. */
    if (!parse_uint(get("OTEL_BSP_MAX_QUEUE_SIZE", arg), 1, 65536, &c->queue_max) ||
        !parse_uint(get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", arg), 1, 65536, &c->batch_max) ||
        !parse_uint(get("OTEL_BSP_SCHEDULE_DELAY", arg), 0, 600000, &c->delay_ms)) {
        snprintf(err, errlen,
                 "OTEL_BSP_MAX_QUEUE_SIZE and OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be "
                 "1-65536 spans (about 2 KiB each while queued), OTEL_BSP_SCHEDULE_DELAY 0-600000 "
                 "milliseconds");
        goto fail;
    }
    if (c->batch_max > c->queue_max)
        c->batch_max = c->queue_max;
    if (!parse_sampler(c, get("OTEL_TRACES_SAMPLER", arg), get("OTEL_TRACES_SAMPLER_ARG", arg))) {
        snprintf(err, errlen,
                 "OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio, "
                 "parentbased_always_on, parentbased_always_off or parentbased_traceidratio, and "
                 "OTEL_TRACES_SAMPLER_ARG a ratio from 0 to 1");
        goto fail;
    }
    if (headers && *headers && !parse_headers(headers, &c->headers)) {
        snprintf(err, errlen,
                 "OTEL_EXPORTER_OTLP_HEADERS must be a list of name=value pairs "
                 "(percent-encoded), separated by commas");
        goto fail;
    }
    const char *who = get("OTEL_SPAN_PRINCIPAL", arg);
    if (who && *who) {
        if (strcmp(who, "plain") == 0)
            c->principal = OTEL_PRINCIPAL_PLAIN;
        else if (strcmp(who, "off") == 0)
            c->principal = OTEL_PRINCIPAL_OFF;
        else if (strcmp(who, "digest") != 0) {
            snprintf(err, errlen, "OTEL_SPAN_PRINCIPAL must be digest, plain or off");
            goto fail;
        }
    }
    /* The OpenTelemetry rule: OTEL_SERVICE_NAME, else a service.name among the resource
     * attributes, else ours. */
    if (service && *service)
        c->service = xstrdup(service);
    else if (resource && *resource)
        c->service = resource_service(resource);
    if (c->service == NULL)
        c->service = xstrdup("hermes-mcp");
    if (resource && *resource)
        c->resource = xstrdup(resource);
    return true;
fail:
    otel_config_cleanup(c);
    return false;
}

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

bool otel_config_same(const struct otel_config *a, const struct otel_config *b)
{
    return same_text(a->url, b->url) && same_text(a->headers, b->headers) &&
           same_text(a->service, b->service) && same_text(a->resource, b->resource) &&
           a->protocol == b->protocol && a->sampler == b->sampler && a->ratio == b->ratio &&
           a->timeout_ms == b->timeout_ms && a->queue_max == b->queue_max &&
           a->delay_ms == b->delay_ms && a->batch_max == b->batch_max &&
           a->principal == b->principal;
}

void otel_config_cleanup(struct otel_config *c)
{
    free(c->url);
    wipe_free(c->headers);
    free(c->service);
    free(c->resource);
    memset(c, 0, sizeof *c);
}

bool otel_sample(const struct otel_config *c, const unsigned char trace_id[16],
                 const unsigned char *parent_flags)
{
    enum otel_sampler_kind k = c->sampler;
    if (parent_flags && (k == OTEL_SAMPLE_PARENT_ON || k == OTEL_SAMPLE_PARENT_OFF ||
                         k == OTEL_SAMPLE_PARENT_RATIO))
        return (*parent_flags & 0x01) != 0;
    switch (k) {
    case OTEL_SAMPLE_ALWAYS_OFF:
        return false;
    case OTEL_SAMPLE_RATIO:
    case OTEL_SAMPLE_PARENT_RATIO: {
        /* The trace id's low 8 bytes as an unsigned number against ratio * 2^64: the same
         * decision wherever the trace is seen. */
        uint64_t v = 0;
        for (int i = 8; i < 16; i++)
            v = v << 8 | trace_id[i];
        if (c->ratio >= 1.0)
            return true;
        return (double)v < ldexp(c->ratio, 64);
    }
    case OTEL_SAMPLE_PARENT_OFF:
        return false; /* a root span, with no parent to follow */
    default:
        return true;
    }
}
