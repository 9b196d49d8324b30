/* Unit tests for callgate.c: a principal's and a tool's limits on tools/call, the tickets of
 * calls in flight, the metrics and the log line at most once a minute with its count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "buf.h"
#include "callgate.h"
#include "log.h"
#include "metrics.h"

static char out[8192];
static size_t outlen;
static FILE *sink;
static int saved = -1;
static struct metric *by_principal, *all;
static struct callgate *gate;

static int setup(void **state)
{
    (void)state;
    unsetenv("JOURNAL_STREAM");
    sink = tmpfile();
    saved = dup(STDERR_FILENO);
    log_set_level(LOG_INFO);
    by_principal = metric_new("p_total", "by principal", METRIC_COUNTER, NULL, 0);
    all = metric_new("l_total", "by principal and tool", METRIC_COUNTER, NULL, 0);
    gate = callgate_new(by_principal, all);
    return sink && saved >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    callgate_free(gate);
    metric_free(by_principal);
    metric_free(all);
    return 0;
}

/* callgate_enter with stderr pointed at a file for the call: what it logs is kept in out. */
static unsigned enter(const char *principal, struct callgate_limits who, const char *tool,
                      struct callgate_limits per_tool, uint64_t now, void **ticket)
{
    fflush(stderr);
    assert_true(dup2(fileno(sink), STDERR_FILENO) >= 0);
    unsigned wait = callgate_enter(gate, principal, who, tool, per_tool, now, ticket);
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    int fd = fileno(sink);
    ssize_t n = pread(fd, out + outlen, sizeof out - 1 - outlen, 0);
    outlen += n > 0 ? (size_t)n : 0;
    out[outlen] = '\0';
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    return wait;
}

/* What was logged since the last call, in a copy. */
static const char *logged(void)
{
    static char copy[sizeof out];
    memcpy(copy, out, outlen + 1);
    outlen = 0;
    out[0] = '\0';
    return copy;
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* The rendered value of a sample line start (name{labels}), or -1. */
static double sample(struct metric *m, const char *start)
{
    struct buf b;
    buf_init(&b, 0);
    metric_render(m, &b);
    double v = -1;
    const char *p = b.data ? strstr(b.data, start) : NULL;
    if (p)
        v = strtod(p + strlen(start) + 1, NULL);
    buf_cleanup(&b);
    return v;
}

static const struct callgate_limits none = {0};

static void principal_per_min_and_in_flight(void **state)
{
    (void)state;
    void *t = NULL;
    struct callgate_limits two = {.calls_per_min = 2};
    uint64_t now = 1000;
    assert_int_equal(enter("a", two, "echo", none, now, &t), 0);
    assert_null(t); /* nothing counted in flight */
    assert_int_equal(enter("a", two, "echo", none, now, &t), 0);
    assert_int_equal(enter("a", two, "echo", none, now, &t), 30);
    assert_int_equal(enter("b", two, "echo", none, now, &t), 0); /* its own */
    assert_true(sample(by_principal, "p_total{principal=\"a\",limit=\"calls_per_min\"}") == 1);
    assert_true(sample(all, "l_total{principal=\"a\",tool=\"echo\",limit=\"calls_per_min\"}") == 1);
    const char *log = logged();
    assert_int_equal(count(log, "event=principal_limited"), 1);
    assert_non_null(strstr(log, "principal=a tool=echo limit=calls_per_min value=2 refused=1"));

    struct callgate_limits one = {.calls_in_flight = 1};
    void *t1 = NULL, *t2 = NULL;
    assert_int_equal(enter("c", one, "echo", none, now, &t1), 0);
    assert_non_null(t1);
    assert_int_equal(enter("c", one, "slow", none, now, &t2), 1);
    assert_int_equal(enter("d", one, "slow", none, now, &t2), 0);
    callgate_release(gate, t1);
    callgate_release(gate, t2);
    assert_int_equal(enter("c", one, "slow", none, now, &t1), 0);
    callgate_release(gate, t1);
    logged();
}

static void tool_limits_count_over_every_caller(void **state)
{
    (void)state;
    void *t = NULL, *t1 = NULL, *t2 = NULL;
    uint64_t now = 5000;
    struct callgate_limits per_min = {.calls_per_min = 2};
    assert_int_equal(enter("a", none, "up__x", per_min, now, &t), 0);
    assert_int_equal(enter("b", none, "up__x", per_min, now, &t), 0);
    assert_int_equal(enter("c", none, "up__x", per_min, now, &t), 30);
    assert_int_equal(enter("c", none, "up__y", per_min, now, &t), 0);
    assert_true(
        sample(all, "l_total{principal=\"c\",tool=\"up__x\",limit=\"tool_calls_per_min\"}") == 1);
    assert_true(sample(by_principal, "p_total{principal=\"c\",limit=\"tool_calls_per_min\"}") ==
                -1);
    const char *log = logged();
    assert_int_equal(count(log, "event=tool_limited"), 1);
    assert_non_null(strstr(log, "principal=c tool=up__x limit=tool_calls_per_min value=2"));

    struct callgate_limits two = {.calls_in_flight = 2}, one = {.calls_in_flight = 1};
    assert_int_equal(enter("a", none, "up__s", two, now, &t1), 0);
    assert_int_equal(enter("b", none, "up__s", two, now, &t2), 0);
    assert_int_equal(enter("c", none, "up__s", two, now, &t), 1);
    /* The limit lowered (a reload) while two run: the next waits until fewer than one run. */
    callgate_release(gate, t1);
    assert_int_equal(enter("c", none, "up__s", one, now, &t), 1);
    callgate_release(gate, t2);
    assert_int_equal(enter("c", none, "up__s", one, now, &t), 0);
    /* a principal's slot and the tool's in one ticket: both free when it ends */
    assert_int_equal(enter("c", one, "up__s", one, now, &t1), 1);
    callgate_release(gate, t);
    assert_int_equal(enter("c", one, "up__s", one, now, &t1), 0);
    assert_int_equal(enter("c", one, "other", none, now, &t2), 1);
    assert_int_equal(enter("d", none, "up__s", one, now, &t2), 1);
    callgate_release(gate, t1);
    assert_int_equal(enter("d", none, "up__s", one, now, &t2), 0);
    callgate_release(gate, t2);
    logged();
}

/* One line a minute per (principal, tool, limit), carrying the refusals since the last. */
static void logged_once_a_minute_with_a_count(void **state)
{
    (void)state;
    void *t = NULL, *held = NULL;
    uint64_t now = 200000;
    struct callgate_limits one = {.calls_in_flight = 1};
    assert_int_equal(enter("e", none, "up__z", one, now, &held), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(enter("f", none, "up__z", one, now + (uint64_t)i, &t), 1);
    assert_int_equal(enter("g", none, "up__z", one, now, &t), 1);
    const char *log = logged();
    assert_int_equal(count(log, "event=tool_limited"), 2); /* f's and g's */
    assert_int_equal(count(log, "refused=1"), 2);
    for (int i = 0; i < 3; i++)
        assert_int_equal(enter("f", none, "up__z", one, now + 59000, &t), 1);
    assert_string_equal(logged(), "");
    assert_int_equal(enter("f", none, "up__z", one, now + 60000, &t), 1);
    log = logged();
    assert_int_equal(count(log, "event=tool_limited"), 1);
    assert_non_null(strstr(log, "principal=f tool=up__z limit=tool_calls_in_flight value=1 "
                                "refused=8")); /* 4 + 3 since the first line, and this one */
    assert_true(
        sample(all, "l_total{principal=\"f\",tool=\"up__z\",limit=\"tool_calls_in_flight\"}") == 9);
    callgate_release(gate, held);
}

/* The log throttle's table is bounded: full, a new key is logged but not kept; a minute later
 * the entries whose minute has passed go and the new key is kept again. */
static void log_table_is_bounded(void **state)
{
    (void)state;
    void *t = NULL, *held = NULL;
    uint64_t now = 1000000;
    char name[32];
    struct callgate_limits one = {.calls_in_flight = 1};
    assert_int_equal(enter("h", none, "up__b", one, now, &held), 0);
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "p%d", i);
        assert_int_equal(enter(name, none, "up__b", one, now, &t), 1);
    }
    logged(); /* (out kept the first lines only) */
    /* full: each refusal of a new key is its own line */
    assert_int_equal(enter("late", none, "up__b", one, now, &t), 1);
    assert_int_equal(enter("late", none, "up__b", one, now + 1, &t), 1);
    assert_int_equal(count(logged(), "principal=late"), 2);
    /* a minute on: the old entries go, the new key is kept (one line for two refusals) */
    assert_int_equal(enter("later", none, "up__b", one, now + 60000, &t), 1);
    assert_int_equal(enter("later", none, "up__b", one, now + 60001, &t), 1);
    assert_int_equal(count(logged(), "principal=later"), 1);
    callgate_release(gate, held);
}

/* Without metrics (either may be NULL) a refusal is still answered and logged. */
static void metrics_are_optional(void **state)
{
    (void)state;
    struct callgate *bare = callgate_new(NULL, NULL), *kept = gate;
    struct callgate_limits one = {.calls_per_min = 1};
    void *t = NULL;
    gate = bare;
    assert_int_equal(enter("m", one, "up__m", none, 1000, &t), 0);
    assert_int_equal(enter("m", one, "up__m", none, 1000, &t), 60);
    assert_int_equal(enter("n", none, "up__m", one, 1000, &t), 0);
    assert_int_equal(enter("n", none, "up__m", one, 1000, &t), 60);
    gate = kept;
    callgate_free(bare);
    const char *log = logged();
    assert_int_equal(count(log, "event=principal_limited"), 1);
    assert_int_equal(count(log, "event=tool_limited"), 1);
}

/* A call the tool's own minute refuses leaves the caller's minute as it was. */
static void a_tool_refusal_spends_no_minute_of_the_caller(void **state)
{
    (void)state;
    void *t = NULL;
    struct callgate_limits two = {.calls_per_min = 2}, tool_one = {.calls_per_min = 1};
    uint64_t now = 5000000;
    assert_int_equal(enter("d", two, "scarce", tool_one, now, &t), 0);
    assert_int_not_equal(enter("d", two, "scarce", tool_one, now, &t), 0); /* the tool's */
    /* d has spent one call of its two: the next, elsewhere, passes. */
    assert_int_equal(enter("d", two, "plenty", none, now, &t), 0);
    assert_int_equal(enter("d", two, "plenty", none, now, &t), 30);
    logged();
}

/* calls_in_flight counts names longer than a rate bucket's key by the whole name. */
static void long_names_are_counted_whole(void **state)
{
    (void)state;
    char tool[160];
    memset(tool, 'x', sizeof tool - 1);
    tool[sizeof tool - 1] = '\0';
    struct callgate_limits one = {.calls_in_flight = 1};
    void *t1 = NULL, *t2 = NULL;
    assert_int_equal(enter("e", none, tool, one, 1000, &t1), 0);
    assert_int_equal(enter("e", none, tool, one, 1000, &t2), 1);
    callgate_release(gate, t1);
    assert_int_equal(enter("e", none, tool, one, 1000, &t2), 0);
    callgate_release(gate, t2);
    logged();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(principal_per_min_and_in_flight),
        cmocka_unit_test(tool_limits_count_over_every_caller),
        cmocka_unit_test(logged_once_a_minute_with_a_count),
        cmocka_unit_test(log_table_is_bounded),
        cmocka_unit_test(metrics_are_optional),
        cmocka_unit_test(a_tool_refusal_spends_no_minute_of_the_caller),
        cmocka_unit_test(long_names_are_counted_whole),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
