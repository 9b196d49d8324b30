/* metrics.h — Prometheus text-format metric families: counters, gauges and histograms keyed by
 * a label set, rendered for GET /metrics.
 *
 * A family holds at most METRIC_SERIES_MAX label sets; later ones are folded into one series
 * labelled overflow="true", so label values that come from outside can never grow memory
 * without bound. Label sets are passed pre-rendered (see metric_labels()). Loop thread only. */
#ifndef HM_METRICS_H
#define HM_METRICS_H
#include <stdbool.h>
#include <stddef.h>

struct buf;
struct metric;

#define METRIC_SERIES_MAX 256 /* per family, the overflow series included */

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

/* name and help must outlive the family (string literals). bounds: a histogram's ascending
 * upper bounds (+Inf is implied); ignored for the other types. */
struct metric *metric_new(const char *name, const char *help, enum metric_type type,
                          const double *bounds, size_t nbounds);
void metric_free(struct metric *m); /* NULL-safe */

/* labels: "" or a rendered set such as method="ping",outcome="ok". */
void metric_add(struct metric *m, const char *labels, double v);     /* counter, gauge */
void metric_set(struct metric *m, const char *labels, double v);     /* gauge */
void metric_observe(struct metric *m, const char *labels, double v); /* histogram */
/* The value of a counter or gauge series (0 when it does not exist); for tests and /health. */
double metric_value(const struct metric *m, const char *labels);

/* Appends "# HELP", "# TYPE" and every series. */
void metric_render(const struct metric *m, struct buf *out);
/* Renders a one-off family with a single unlabelled sample (for values read at scrape time). */
void metric_render_value(struct buf *out, const char *name, const char *help, enum metric_type type,
                         double v);

/* Renders name/value pairs, NULL-terminated, as k1="v1",k2="v2" with Prometheus escaping
 * (backslash, quote, newline). A NULL value is skipped. Returns false when it did not fit. */
bool metric_labels(char *out, size_t outlen, ...) __attribute__((sentinel));

#endif
