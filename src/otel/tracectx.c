/* tracectx.c — traceparent and tracestate (https://www.w3.org/TR/trace-context/). */
#include "tracectx.h"

#include <string.h>

#include "hex.h"

bool otel_id_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* n lowercase hex digits of s into out[n/2]. */
static bool lower_hex(const char *s, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    for (size_t i = 0; i < n / 2; i++)
        out[i] = (uint8_t)(hex_digit(s[2 * i]) << 4 | hex_digit(s[2 * i + 1]));
    return true;
}

bool otel_traceparent_parse(const char *s, struct otel_ctx *out)
{
    uint8_t version[1];
    if (s == NULL || strlen(s) < OTEL_TRACEPARENT_LEN)
        return false;
    if (!lower_hex(s, 2, version) || version[0] == 0xff || s[2] != '-' || s[35] != '-' ||
        s[52] != '-')
        return false;
    /* Version 00 is exactly this long; a later one may add fields after a '-'. */
    if (version[0] == 0 ? s[55] != '\0' : (s[55] != '\0' && s[55] != '-'))
        return false;
    struct otel_ctx c;
    uint8_t flags[1];
    if (!lower_hex(s + 3, 32, c.trace_id) || !lower_hex(s + 36, 16, c.span_id) ||
        !lower_hex(s + 53, 2, flags))
        return false;
    if (otel_id_zero(c.trace_id, 16) || otel_id_zero(c.span_id, 8))
        return false;
    /* W3C Trace Context: only the sampled bit is ours to read and pass on; the others are
     * zero in what we send, whatever the caller set. */
    c.flags = flags[0] & 0x01;
    *out = c;
    return true;
}

void otel_traceparent_format(const struct otel_ctx *c, char *out)
{
    memcpy(out, "00-", 3);
    hex_encode(c->trace_id, 16, out + 3);
    out[35] = '-';
    hex_encode(c->span_id, 8, out + 36);
    out[52] = '-';
    hex_encode(&c->flags, 1, out + 53);
}

bool otel_tracestate_ok(const char *s)
{
    size_t members = 1, n = 0;
    if (s == NULL)
        return false;
    for (; s[n]; n++) {
        unsigned char ch = (unsigned char)s[n];
        if (n >= OTEL_TRACESTATE_MAX || ch < 0x20 || ch > 0x7e)
            return false;
        if (ch == ',' && ++members > OTEL_TRACESTATE_MEMBERS)
            return false;
    }
    return true;
}

size_t otel_tracestate_trim(const char *s, char *out, size_t outsz)
{
    struct {
        const char *p;
        size_t n;
    } m[OTEL_TRACESTATE_MEMBERS];
    size_t nm = 0, sum = 0, kept = 0;
    if (s == NULL || outsz == 0)
        return 0;
    size_t max = outsz - 1 < OTEL_TRACESTATE_MAX ? outsz - 1 : OTEL_TRACESTATE_MAX;
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, ",");
        const char *a = p, *b = p + n;
        for (const char *q = a; q < b; q++)
            if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e)
                return 0; /* not a header's text: nothing passed on */
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a && nm < OTEL_TRACESTATE_MEMBERS) { /* empty members are allowed, and dropped */
            m[nm].p = a;
            m[nm].n = (size_t)(b - a);
            sum += m[nm].n;
            kept = ++nm;
        }
        p += n + (p[n] == ',');
    }
    /* Over the cap: members over 128 bytes go first, then members from the end. */
#define TOO_LONG (kept && sum + kept - 1 > max)
    for (size_t i = nm; TOO_LONG && i-- > 0;)
        if (m[i].n > 128) {
            sum -= m[i].n;
            kept--;
            m[i].n = 0;
        }
    for (size_t i = nm; TOO_LONG && i-- > 0;)
        if (m[i].n) {
            sum -= m[i].n;
            kept--;
            m[i].n = 0;
        }
#undef TOO_LONG
    size_t o = 0;
    for (size_t i = 0; i < nm; i++) {
        if (m[i].n == 0)
            continue;
        if (o)
            out[o++] = ',';
        memcpy(out + o, m[i].p, m[i].n);
        o += m[i].n;
    }
    out[o] = '\0';
    return o;
}
