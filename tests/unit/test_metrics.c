/* Unit tests for metrics.c: exposition format, label escaping, histogram buckets, series cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "buf.h"
#include "metrics.h"

static void counter_renders_help_type_and_series(void **state)
{
    (void)state;
    struct metric *m = metric_new("x_total", "Things.", METRIC_COUNTER, NULL, 0);
    struct buf out;
    buf_init(&out, 0);
    metric_add(m, "a=\"1\"", 1);
    metric_add(m, "a=\"1\"", 2);
    metric_add(m, "", 0.5);
    metric_render(m, &out);
    assert_string_equal(out.data, "# HELP x_total Things.\n# TYPE x_total counter\n"
                                  "x_total{a=\"1\"} 3\nx_total 0.5\n");
    assert_true(metric_value(m, "a=\"1\"") == 3);
    assert_true(metric_value(m, "a=\"2\"") == 0);
    buf_cleanup(&out);
    metric_free(m);
}

static void histogram_buckets_are_cumulative(void **state)
{
    (void)state;
    static const double bounds[] = {0.1, 1};
    struct metric *m = metric_new("d_seconds", "Time.", METRIC_HISTOGRAM, bounds, 2);
    struct buf out;
    buf_init(&out, 0);
    metric_observe(m, "k=\"v\"", 0.05);
    metric_observe(m, "k=\"v\"", 0.5);
    metric_observe(m, "k=\"v\"", 7);
    metric_render(m, &out);
    assert_string_equal(out.data, "# HELP d_seconds Time.\n# TYPE d_seconds histogram\n"
                                  "d_seconds_bucket{k=\"v\",le=\"0.1\"} 1\n"
                                  "d_seconds_bucket{k=\"v\",le=\"1\"} 2\n"
                                  "d_seconds_bucket{k=\"v\",le=\"+Inf\"} 3\n"
                                  "d_seconds_sum{k=\"v\"} 7.55\n"
                                  "d_seconds_count{k=\"v\"} 3\n");
    buf_cleanup(&out);
    metric_free(m);
}

static void labels_are_escaped_and_null_values_skipped(void **state)
{
    (void)state;
    char l[64];
    assert_true(metric_labels(l, sizeof l, "a", "x\"y\\z\nw", "b", NULL, "c", "ok", NULL));
    assert_string_equal(l, "a=\"x\\\"y\\\\z\\nw\",c=\"ok\"");
    assert_true(metric_labels(l, sizeof l, NULL));
    assert_string_equal(l, "");
    char small[8];
    assert_false(metric_labels(small, sizeof small, "name", "toolong", NULL));
    assert_string_equal(small, "");
}

static void series_past_the_cap_fold_into_overflow(void **state)
{
    (void)state;
    struct metric *m = metric_new("c_total", "C.", METRIC_COUNTER, NULL, 0);
    char l[32];
    for (int i = 0; i < METRIC_SERIES_MAX + 50; i++) {
        snprintf(l, sizeof l, "i=\"%d\"", i);
        metric_add(m, l, 1);
    }
    assert_true(metric_value(m, "i=\"0\"") == 1);
    assert_true(metric_value(m, "overflow=\"true\"") == 51);
    struct buf out;
    buf_init(&out, 0);
    metric_render(m, &out);
    size_t lines = 0;
    for (const char *p = out.data; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    assert_int_equal(lines, 2 + METRIC_SERIES_MAX); /* HELP, TYPE, the capped series */
    buf_cleanup(&out);
    metric_free(m);
}

static void single_value_family(void **state)
{
    (void)state;
    struct buf out;
    buf_init(&out, 0);
    metric_render_value(&out, "g", "A gauge.", METRIC_GAUGE, 42);
    assert_string_equal(out.data, "# HELP g A gauge.\n# TYPE g gauge\ng 42\n");
    buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counter_renders_help_type_and_series),
        cmocka_unit_test(histogram_buckets_are_cumulative),
        cmocka_unit_test(labels_are_escaped_and_null_values_skipped),
        cmocka_unit_test(series_past_the_cap_fold_into_overflow),
        cmocka_unit_test(single_value_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
