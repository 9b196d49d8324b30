/* metrics.c — Prometheus text exposition (format 0.0.4) for counters, gauges and histograms. */
#include "metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "mem.h"
#include "strmap.h"

#define OVERFLOW_LABELS "overflow=\"true\""

struct series {
    char *labels;
    double value;      /* counter, gauge */
    double sum;        /* histogram */
    uint64_t count;    /* histogram */
    uint64_t *buckets; /* histogram: per bound, not cumulative */
};

struct metric {
    const char *name, *help;
    enum metric_type type;
    double *bounds;
    size_t nbounds;
    struct series **series; /* in creation order, for a stable rendering */
    size_t n;
    struct strmap *index; /* labels → series */
};

struct metric *metric_new(const char *name, const char *help, enum metric_type type,
                          const double *bounds, size_t nbounds)
{
    struct metric *m = xcalloc(1, sizeof *m);
    m->name = name;
    m->help = help;
    m->type = type;
    if (type == METRIC_HISTOGRAM && nbounds) {
        m->bounds = xmalloc(nbounds * sizeof *bounds);
        memcpy(m->bounds, bounds, nbounds * sizeof *bounds);
        m->nbounds = nbounds;
    }
    m->index = strmap_new();
    return m;
}

void metric_free(struct metric *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->series[i]->labels);
        free(m->series[i]->buckets);
        free(m->series[i]);
    }
    free(m->series);
    free(m->bounds);
    strmap_free(m->index);
    free(m);
}

static struct series *series_get(struct metric *m, const char *labels)
{
    struct series *s = strmap_get(m->index, labels);
    if (s)
        return s;
    if (m->n >= METRIC_SERIES_MAX - 1) {
        /* The cap: everything past it lands in one series (created in the reserved slot). */
        s = strmap_get(m->index, OVERFLOW_LABELS);
        if (s)
            return s;
        labels = OVERFLOW_LABELS;
    }
    s = xcalloc(1, sizeof *s);
    s->labels = xstrdup(labels);
    if (m->type == METRIC_HISTOGRAM)
        s->buckets = xcalloc(m->nbounds ? m->nbounds : 1, sizeof *s->buckets);
    m->series = xrealloc(m->series, (m->n + 1) * sizeof *m->series);
    m->series[m->n++] = s;
    strmap_put(m->index, s->labels, s);
    return s;
}

void metric_add(struct metric *m, const char *labels, double v)
{
    series_get(m, labels)->value += v;
}

void metric_set(struct metric *m, const char *labels, double v)
{
    series_get(m, labels)->value = v;
}

void metric_observe(struct metric *m, const char *labels, double v)
{
    struct series *s = series_get(m, labels);
    s->sum += v;
    s->count++;
    for (size_t i = 0; i < m->nbounds; i++)
        if (v <= m->bounds[i]) {
            s->buckets[i]++;
            break;
        }
}

double metric_value(const struct metric *m, const char *labels)
{
    const struct series *s = strmap_get(m->index, labels);
    return s ? s->value : 0;
}

/* Prometheus floats: integers without a fraction, everything else shortest round-trip. */
static void put_number(struct buf *out, double v)
{
    if (isinf(v))
        buf_appends(out, v > 0 ? "+Inf" : "-Inf");
    else if (isnan(v))
        buf_appends(out, "NaN");
    else if (v == floor(v) && fabs(v) < 1e15)
        buf_printf(out, "%.0f", v);
    else
        buf_printf(out, "%.10g", v);
}

static void put_sample(struct buf *out, const char *name, const char *suffix, const char *labels,
                       const char *extra, double v)
{
    bool any = labels[0] || extra;
    buf_printf(out, "%s%s%s%s%s%s%s ", name, suffix, any ? "{" : "", labels,
               labels[0] && extra ? "," : "", extra ? extra : "", any ? "}" : "");
    put_number(out, v);
    buf_appends(out, "\n");
}

static const char *type_name(enum metric_type t)
{
    return t == METRIC_COUNTER ? "counter" : t == METRIC_GAUGE ? "gauge" : "histogram";
}

void metric_render(const struct metric *m, struct buf *out)
{
    char le[48];

    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, type_name(m->type));
    for (size_t i = 0; i < m->n; i++) {
        const struct series *s = m->series[i];
        if (m->type != METRIC_HISTOGRAM) {
            put_sample(out, m->name, "", s->labels, NULL, s->value);
            continue;
        }
        uint64_t cumulative = 0;
        for (size_t b = 0; b < m->nbounds; b++) {
            cumulative += s->buckets[b];
            snprintf(le, sizeof le, "le=\"%g\"", m->bounds[b]);
            put_sample(out, m->name, "_bucket", s->labels, le, (double)cumulative);
        }
        put_sample(out, m->name, "_bucket", s->labels, "le=\"+Inf\"", (double)s->count);
        put_sample(out, m->name, "_sum", s->labels, NULL, s->sum);
        put_sample(out, m->name, "_count", s->labels, NULL, (double)s->count);
    }
}

void metric_render_value(struct buf *out, const char *name, const char *help, enum metric_type type,
                         double v)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type_name(type));
    put_sample(out, name, "", "", NULL, v);
}

bool metric_labels(char *out, size_t outlen, ...)
{
    va_list ap;
    size_t n = 0;
    bool ok = true;

    if (outlen == 0)
        return false;
    out[0] = '\0';
    va_start(ap, outlen);
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        if (v == NULL)
            continue;
        /* By hand, not snprintf: this runs for every request (app.c on_done). */
        size_t klen = strlen(k);
        if (n + (n ? 1 : 0) + klen + 2 >= outlen) {
            ok = false;
            break;
        }
        if (n)
            out[n++] = ',';
        memcpy(out + n, k, klen);
        n += klen;
        out[n++] = '=';
        out[n++] = '"';
        for (; *v && ok; v++) {
            const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
            size_t need = esc ? 2 : 1;
            if (n + need >= outlen) {
                ok = false;
                break;
            }
            if (esc)
                memcpy(out + n, esc, 2);
            else
                out[n] = *v;
            n += need;
        }
        if (!ok || n + 1 >= outlen) {
            ok = false;
            break;
        }
        out[n++] = '"';
        out[n] = '\0';
    }
    va_end(ap);
    if (!ok)
        out[0] = '\0';
    return ok;
}
