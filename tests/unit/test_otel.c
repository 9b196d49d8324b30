/* Unit tests for src/otel: traceparent and tracestate, the OTEL_* settings and the samplers,
 * the protobuf writer against known bytes, both OTLP encoders (the protobuf one read back by a
 * small decoder here), and the export queue's bound (a collector that never answers: spans are
 * dropped and counted, the caller never waits). */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "buf.h"
#include "otel.h"
#include "otlp.h"
#include "pbwriter.h"
#include "span.h"
#include "utf8.h"

static void traceparent_round_trip(void **state)
{
    (void)state;
    static const char tp[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    struct otel_ctx c;
    char out[OTEL_TRACEPARENT_LEN + 1];
    assert_true(otel_traceparent_parse(tp, &c));
    assert_int_equal(c.trace_id[0], 0x4b);
    assert_int_equal(c.span_id[7], 0xb7);
    assert_int_equal(c.flags, 1);
    otel_traceparent_format(&c, out);
    assert_string_equal(out, tp);
    /* A later version may carry more fields. */
    assert_true(otel_traceparent_parse(
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-comes", &c));
    assert_int_equal(c.flags, 0);
    /* Flags other than sampled are not ours to pass on (W3C: set to zero). */
    assert_true(
        otel_traceparent_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", &c));
    assert_int_equal(c.flags, 0x01);
}

static void traceparent_refusals(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    /* short */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00 with more */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero span id */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* upper case */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
    };
    struct otel_ctx c;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(otel_traceparent_parse(bad[i], &c));
    assert_false(otel_traceparent_parse(NULL, &c));
}

static void tracestate_caps(void **state)
{
    (void)state;
    char big[600];
    assert_true(otel_tracestate_ok("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
    assert_false(otel_tracestate_ok("a=1\nb=2"));
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_false(otel_tracestate_ok(big));
    struct buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 33; i++)
        buf_printf(&b, "%sk%d=v", i ? "," : "", i);
    assert_false(otel_tracestate_ok(b.data)); /* 33 members */
    buf_cleanup(&b);
}

struct envpair {
    const char *k[8], *v[8];
};
static const char *getenv_pairs(const char *key, void *arg)
{
    struct envpair *e = arg;
    for (int i = 0; i < 8 && e->k[i]; i++)
        if (strcmp(e->k[i], key) == 0)
            return e->v[i];
    return NULL;
}

static void config_keys(void **state)
{
    (void)state;
    struct otel_config c;
    char err[300];
    struct envpair none = {{NULL}, {NULL}};
    assert_true(otel_config_parse(&c, getenv_pairs, &none, err, sizeof err));
    assert_null(c.url); /* off */
    assert_int_equal(c.sampler, OTEL_SAMPLE_PARENT_ON);
    assert_string_equal(c.service, "hermes-mcp");
    otel_config_cleanup(&c);

    struct envpair e = {{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
                         "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"},
                        {"http://c:4318/", "api-key=a%20b%3D, x=y", "traceidratio", "0.25"}};
    assert_true(otel_config_parse(&c, getenv_pairs, &e, err, sizeof err));
    assert_string_equal(c.url, "http://c:4318/v1/traces");
    assert_string_equal(c.headers, "api-key: a b=\nx: y");
    assert_int_equal(c.sampler, OTEL_SAMPLE_RATIO);
    assert_true(c.ratio == 0.25);
    otel_config_cleanup(&c);

    struct envpair t = {{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
                        {"http://c:4318", "https://x/otlp"}};
    assert_true(otel_config_parse(&c, getenv_pairs, &t, err, sizeof err));
    assert_string_equal(c.url, "https://x/otlp"); /* as is */
    otel_config_cleanup(&c);

    struct envpair g = {{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"},
                        {"http://c:4318", "grpc"}};
    assert_false(otel_config_parse(&c, getenv_pairs, &g, err, sizeof err));
    assert_non_null(strstr(err, "grpc is not supported"));
    struct envpair h = {{"OTEL_EXPORTER_OTLP_HEADERS"}, {"secret-key=abc%0Ainjected"}};
    assert_false(otel_config_parse(&c, getenv_pairs, &h, err, sizeof err));
    assert_null(strstr(err, "abc")); /* the value is never quoted */
    struct envpair s = {{"OTEL_TRACES_SAMPLER"}, {"sometimes"}};
    assert_false(otel_config_parse(&c, getenv_pairs, &s, err, sizeof err));
}

static void samplers(void **state)
{
    (void)state;
    struct otel_config c = {.sampler = OTEL_SAMPLE_PARENT_ON, .ratio = 1};
    unsigned char low[16] = {0}, high[16];
    unsigned char on = 1, off = 0;
    memset(high, 0xff, sizeof high);
    low[15] = 1;
    assert_true(otel_sample(&c, low, NULL));
    assert_true(otel_sample(&c, low, &on));
    assert_false(otel_sample(&c, low, &off));
    c.sampler = OTEL_SAMPLE_PARENT_OFF;
    assert_false(otel_sample(&c, low, NULL));
    assert_true(otel_sample(&c, low, &on));
    c.sampler = OTEL_SAMPLE_ALWAYS_OFF;
    assert_false(otel_sample(&c, low, &on));
    c.sampler = OTEL_SAMPLE_ALWAYS_ON;
    assert_true(otel_sample(&c, low, &off));
    c.sampler = OTEL_SAMPLE_RATIO;
    c.ratio = 0.5;
    assert_true(otel_sample(&c, low, &off)); /* the parent does not count */
    assert_false(otel_sample(&c, high, &on));
    c.ratio = 0;
    assert_false(otel_sample(&c, low, NULL));
    c.sampler = OTEL_SAMPLE_PARENT_RATIO;
    assert_true(otel_sample(&c, high, &on));
}

static void protobuf_writer_bytes(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 0);
    otel_pb_varint(&b, 1, 150); /* the encoding guide's example: 08 96 01 */
    otel_pb_string(&b, 2, "testing");
    size_t at = otel_pb_begin(&b);
    otel_pb_fixed32(&b, 16, 0x101);
    otel_pb_end(&b, 3, at);
    static const unsigned char want[] = {0x08, 0x96, 0x01, 0x12, 0x07, 't',  'e',
                                         's',  't',  'i',  'n',  'g',  0x1a, 0x06,
                                         0x85, 0x01, 0x01, 0x01, 0x00, 0x00};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    buf_cleanup(&b);
}

/* ---------- a small protobuf reader, for what the encoder wrote ---------- */

struct pb {
    const unsigned char *p, *end;
};
static uint64_t rd_varint(struct pb *r)
{
    uint64_t v = 0;
    for (int s = 0; r->p < r->end; s += 7) {
        unsigned char c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80))
            break;
    }
    return v;
}
/* The first field number f of r (any wire type); its payload in *sub (length-delimited) or
 * its value in *v. */
static bool find(struct pb r, unsigned f, struct pb *sub, uint64_t *v)
{
    while (r.p < r.end) {
        uint64_t tag = rd_varint(&r);
        unsigned wire = tag & 7;
        uint64_t val = 0;
        struct pb s = {0};
        if (wire == 0)
            val = rd_varint(&r);
        else if (wire == 1 || wire == 5) {
            int n = wire == 1 ? 8 : 4;
            for (int i = 0; i < n; i++)
                val |= (uint64_t)r.p[i] << (8 * i);
            r.p += n;
        } else if (wire == 2) {
            uint64_t n = rd_varint(&r);
            s.p = r.p;
            s.end = r.p + n;
            r.p += n;
        }
        if ((tag >> 3) == f) {
            if (sub)
                *sub = s;
            if (v)
                *v = val;
            return true;
        }
    }
    return false;
}

static struct otel_span *test_span(struct otel *t)
{
    (void)t;
    struct otel_span *s = calloc(1, sizeof *s);
    for (int i = 0; i < 16; i++)
        s->ctx.trace_id[i] = (uint8_t)(i + 1);
    for (int i = 0; i < 8; i++)
        s->ctx.span_id[i] = (uint8_t)(0xa0 + i), s->parent_id[i] = (uint8_t)(0xb0 + i);
    s->ctx.flags = 1;
    s->has_parent = s->remote_parent = s->sampled = true;
    s->kind = OTEL_KIND_SERVER;
    s->status = OTEL_STATUS_ERROR;
    s->start_ns = 1700000000000000001ull;
    s->end_ns = 1700000000000000999ull;
    s->tracestate = s->status_msg = OTEL_NO_TEXT;
    strcpy(s->text, "tools/call echo");
    s->name = 0;
    strcpy(s->text + 16, "echo");
    s->used = 21;
    s->attrs[0] = (struct otel_attr){.key = "gen_ai.tool.name", .type = OTEL_ATTR_STR, .v.off = 16};
    s->attrs[1] =
        (struct otel_attr){.key = "http.response.status_code", .type = OTEL_ATTR_INT, .v.i = -2};
    s->attrs[2] = (struct otel_attr){.key = "flag", .type = OTEL_ATTR_BOOL, .v.b = true};
    s->nattrs = 3;
    return s;
}

static void protobuf_request(void **state)
{
    (void)state;
    struct otel_span *s = test_span(NULL);
    struct otel_resource res = {
        .service = "svc", .version = "1.2", .attrs = "a=b%20c,service.name=x"};
    struct buf b;
    buf_init(&b, 0);
    otel_otlp_protobuf(&b, &res, &s, 1);
    struct pb r = {(const unsigned char *)b.data, (const unsigned char *)b.data + b.len}, rs, rsrc,
              kv, val, ss, scope, sp, f;
    uint64_t v;
    assert_true(find(r, 1, &rs, NULL));    /* resource_spans */
    assert_true(find(rs, 1, &rsrc, NULL)); /* resource */
    assert_true(find(rsrc, 1, &kv, NULL)); /* its first attribute */
    assert_true(find(kv, 1, &f, NULL));
    assert_memory_equal(f.p, "service.name", 12);
    assert_true(find(kv, 2, &val, NULL) && find(val, 1, &f, NULL));
    assert_memory_equal(f.p, "svc", 3);
    assert_true(find(rs, 2, &ss, NULL));
    assert_true(find(ss, 1, &scope, NULL) && find(scope, 1, &f, NULL));
    assert_memory_equal(f.p, "hermes-mcp", 10);
    assert_true(find(ss, 2, &sp, NULL));
    assert_true(find(sp, 1, &f, NULL));
    assert_int_equal(f.end - f.p, 16);
    assert_int_equal(f.p[15], 16);
    assert_true(find(sp, 2, &f, NULL) && f.end - f.p == 8 && f.p[0] == 0xa0);
    assert_true(find(sp, 4, &f, NULL) && f.end - f.p == 8 && f.p[0] == 0xb0);
    assert_true(find(sp, 5, &f, NULL));
    assert_int_equal(f.end - f.p, 15);
    assert_true(find(sp, 6, NULL, &v) && v == 2);
    assert_true(find(sp, 7, NULL, &v) && v == 1700000000000000001ull);
    assert_true(find(sp, 8, NULL, &v) && v == 1700000000000000999ull);
    assert_true(find(sp, 16, NULL, &v) && v == 0x301);
    assert_true(find(sp, 15, &f, NULL) && find(f, 3, NULL, &v) && v == 2);
    /* the second attribute: an int64, negative as ten bytes of two's complement */
    struct pb rest = sp;
    assert_true(find(rest, 9, &kv, NULL));
    rest.p = kv.end;
    assert_true(find(rest, 9, &kv, NULL) && find(kv, 2, &val, NULL));
    assert_true(find(val, 3, NULL, &v) && (int64_t)v == -2);
    rest.p = kv.end; /* the third: a bool */
    assert_true(find(rest, 9, &kv, NULL) && find(kv, 1, &f, NULL));
    assert_memory_equal(f.p, "flag", 4);
    assert_true(find(kv, 2, &val, NULL) && find(val, 2, NULL, &v) && v == 1);
    buf_cleanup(&b);
    free(s);
}

static void json_request(void **state)
{
    (void)state;
    struct otel_span *s = test_span(NULL);
    struct otel_resource res = {.service = "s\"vc", .version = NULL, .attrs = NULL};
    struct buf b;
    buf_init(&b, 0);
    otel_otlp_json(&b, &res, &s, 1);
    assert_non_null(strstr(b.data, "\"traceId\":\"0102030405060708090a0b0c0d0e0f10\""));
    assert_non_null(strstr(b.data, "\"spanId\":\"a0a1a2a3a4a5a6a7\""));
    assert_non_null(strstr(b.data, "\"parentSpanId\":\"b0b1b2b3b4b5b6b7\""));
    assert_non_null(strstr(b.data, "\"kind\":2"));
    assert_non_null(strstr(b.data, "\"startTimeUnixNano\":\"1700000000000000001\""));
    assert_non_null(
        strstr(b.data, "{\"key\":\"http.response.status_code\",\"value\":{\"intValue\":\"-2\"}}"));
    assert_non_null(strstr(b.data, "\"stringValue\":\"s\\\"vc\""));
    assert_non_null(strstr(b.data, "\"status\":{\"code\":2}"));
    assert_non_null(strstr(b.data, "{\"key\":\"flag\",\"value\":{\"boolValue\":true}}"));
    buf_cleanup(&b);
    free(s);
}

static void span_api(void **state)
{
    (void)state;
    /* Off: NULL everywhere, nothing happens. */
    assert_null(otel_span_start(NULL, "x", OTEL_KIND_SERVER, NULL));
    otel_span_str(NULL, "k", "v");
    otel_span_end(NULL);
    char tp[OTEL_TRACEPARENT_LEN + 1];
    assert_false(otel_span_traceparent(NULL, tp));
}

/* Spans of a live tracer (its collector never asked: nothing is sampled out to it here). */
static void span_context_and_caps(void **state)
{
    (void)state;
    char url[] = "http://127.0.0.1:9/v1/traces", svc[] = "t";
    struct otel_config c = {.url = url,
                            .service = svc,
                            .sampler = OTEL_SAMPLE_PARENT_ON,
                            .ratio = 1,
                            .timeout_ms = 100,
                            .queue_max = 8,
                            .delay_ms = 0,
                            .batch_max = 8};
    char err[200], tp[OTEL_TRACEPARENT_LEN + 1];
    struct otel *t = otel_new(&c, "1", err, sizeof err);
    assert_non_null(t);

    /* A remote parent: its trace, its sampled flag (parent-based), its tracestate. */
    struct otel_ctx parent;
    assert_true(
        otel_traceparent_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", &parent));
    struct otel_span *s = otel_span_start(t, "root", OTEL_KIND_SERVER, NULL);
    assert_true(otel_span_sampled(s));
    otel_span_set_remote_parent(s, &parent, "a=1");
    assert_false(otel_span_sampled(s));
    assert_true(otel_span_traceparent(s, tp));
    assert_memory_equal(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-", 36);
    assert_string_equal(tp + 52, "-00");
    assert_string_equal(otel_span_tracestate(s), "a=1");
    otel_span_set_remote_parent(s, &parent, "bad\nstate"); /* refused: none kept */
    assert_null(otel_span_tracestate(s));

    /* A child by context: same trace, a new span id, the parent's flags. */
    struct otel_ctx ctx;
    assert_true(otel_span_ctx(s, &ctx));
    struct otel_span *child = otel_span_start_in(t, "child", OTEL_KIND_CLIENT, &ctx, NULL);
    struct otel_ctx cc;
    assert_true(otel_span_ctx(child, &cc));
    assert_memory_equal(cc.trace_id, ctx.trace_id, 16);
    assert_memory_not_equal(cc.span_id, ctx.span_id, 8);
    assert_false(otel_span_sampled(child));
    otel_span_discard(child);
    otel_span_end(s); /* not sampled: freed, never queued */

    /* Attributes: at most OTEL_SPAN_ATTRS, a value cut when the text room runs out, a key set
     * twice keeps one slot. */
    s = otel_span_start(t, "caps", OTEL_KIND_INTERNAL, NULL);
    static const char *const keys[] = {"k0",  "k1",  "k2",  "k3",  "k4",  "k5",  "k6",
                                       "k7",  "k8",  "k9",  "k10", "k11", "k12", "k13",
                                       "k14", "k15", "k16", "k17", "k18", "k19", "k20"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        otel_span_int(s, keys[i], (int64_t)i);
    assert_int_equal(s->nattrs, OTEL_SPAN_ATTRS);
    otel_span_int(s, keys[3], 33);
    assert_int_equal(s->nattrs, OTEL_SPAN_ATTRS);
    assert_int_equal(s->attrs[3].v.i, 33);
    otel_span_discard(s);
    s = otel_span_start(t, "text", OTEL_KIND_INTERNAL, NULL);
    char big[OTEL_SPAN_TEXT * 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    otel_span_str(s, "big", big);
    assert_int_equal(s->nattrs, 1);
    /* One value is capped, so a client's long id cannot crowd out the others. */
    assert_int_equal(strlen(s->text + s->attrs[0].v.off), OTEL_VALUE_MAX);
    for (size_t i = 0; i < 5; i++)
        otel_span_str(s, keys[i], big); /* the fifth is cut to what is left */
    assert_int_equal(s->nattrs, 6);
    otel_span_str(s, "more", "y"); /* no room left: not kept */
    assert_int_equal(s->nattrs, 6);
    otel_span_set_name(s, "renamed"); /* no room: the name it has stays */
    assert_string_equal(otel_span_text(s, s->name), "text");
    otel_span_discard(s);
    /* Values are valid UTF-8 whatever a client sent, and never cut inside a character. */
    s = otel_span_start(t, "utf8", OTEL_KIND_INTERNAL, NULL);
    otel_span_str(s, "bad", "ab\xff\xfe");
    const char *bad = s->text + s->attrs[0].v.off;
    assert_true(utf8_valid(bad, strlen(bad)));
    char wide[OTEL_VALUE_MAX + 8];
    memset(wide, 'x', OTEL_VALUE_MAX - 1);
    strcpy(wide + OTEL_VALUE_MAX - 1, "\xc3\xa9z"); /* an é across the cap */
    otel_span_str(s, "wide", wide);
    assert_int_equal(strlen(s->text + s->attrs[1].v.off), OTEL_VALUE_MAX - 1);
    otel_span_discard(s);
    otel_free(t, 500);
}

static double counter(const struct otel *t, const char *name)
{
    struct buf b;
    buf_init(&b, 0);
    otel_metrics(t, &b);
    char line[100];
    snprintf(line, sizeof line, "\n%s ", name);
    const char *at = strstr(b.data, line);
    double v = at ? strtod(at + strlen(line), NULL) : -1;
    buf_cleanup(&b);
    return v;
}

/* A collector that takes the connection and never answers: the queue holds queue_max spans,
 * the rest are dropped at once. */
static void full_queue_drops(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/traces", ntohs(a.sin_port));
    char svc[] = "t";
    struct otel_config c = {.url = url,
                            .service = svc,
                            .sampler = OTEL_SAMPLE_ALWAYS_ON,
                            .ratio = 1,
                            .timeout_ms = 300,
                            .queue_max = 4,
                            .delay_ms = 0,
                            .batch_max = 4};
    char err[200];
    struct otel *t = otel_new(&c, "1", err, sizeof err);
    assert_non_null(t);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 50; i++) {
        struct otel_span *s = otel_span_start(t, "x", OTEL_KIND_SERVER, NULL);
        otel_span_str(s, "k", "v");
        otel_span_end(s);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(ms < 500); /* the caller never waits on the collector */
    assert_true(counter(t, "hermes_mcp_otel_spans_dropped_total") >= 46);
    assert_true(counter(t, "hermes_mcp_otel_spans_exported_total") == 0);
    otel_free(t, 2000); /* the export under way times out, the worker ends */
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traceparent_round_trip),
        cmocka_unit_test(traceparent_refusals),
        cmocka_unit_test(tracestate_caps),
        cmocka_unit_test(config_keys),
        cmocka_unit_test(samplers),
        cmocka_unit_test(protobuf_writer_bytes),
        cmocka_unit_test(protobuf_request),
        cmocka_unit_test(json_request),
        cmocka_unit_test(span_api),
        cmocka_unit_test(span_context_and_caps),
        cmocka_unit_test(full_queue_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
