/* Unit tests for log.c: the named events' line (prose, then "[event=NAME k=v ...]"), the
 * quoting of values, the prose that cannot forge an event, and the event table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"

static char out[4096];

/* begin() points stderr at a file; logged() points it back (cmocka reports there) and
 * returns what was written in between. */
static FILE *sink;
static int saved = -1;
static int setup(void **state)
{
    (void)state;
    unsetenv("JOURNAL_STREAM");
    sink = tmpfile();
    saved = dup(STDERR_FILENO);
    log_set_level(LOG_INFO);
    return sink && saved >= 0 ? 0 : -1;
}

static void begin(void)
{
    fflush(stderr);
    assert_true(dup2(fileno(sink), STDERR_FILENO) >= 0);
}

static const char *logged(void)
{
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    int fd = fileno(sink);
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    return out;
}

static void event_line_has_prose_then_fields(void **state)
{
    (void)state;
    begin();
    log_event(EV_UPSTREAM_READY, LOG_FIELDS(LF_S("upstream", "files"), LF_N("tools", 14)),
              "upstream %s: ready, %d tools", "files", 14);
    assert_string_equal(logged(), "hermes-mcp: info: upstream files: ready, 14 tools "
                                  "[event=upstream_ready upstream=files tools=14]\n");
    begin();
    log_event(EV_RELOAD_IGNORED, NULL, "SIGHUP while draining: ignored");
    assert_string_equal(
        logged(), "hermes-mcp: info: SIGHUP while draining: ignored [event=reload_ignored]\n");
}

static void values_that_would_not_read_back_are_quoted(void **state)
{
    (void)state;
    begin();
    log_event(EV_RATE_LIMITED,
              LOG_FIELDS(LF_S("who", "client 127.0.0.1"), LF_S("limit", "a=b"), LF_S("x", ""),
                         LF_S("y", NULL), LF_S("z", "say \"hi\" \\ [x]")),
              "rate limit");
    assert_string_equal(logged(), "hermes-mcp: warn: rate limit [event=rate_limited "
                                  "who=\"client 127.0.0.1\" limit=\"a=b\" x=\"\" y=\"\" "
                                  "z=\"say \\\"hi\\\" \\\\ [x]\"]\n");
    begin();
    log_event(EV_UPSTREAM_DOWN, LOG_FIELDS(LF_S("upstream", "two\nlines")), "down");
    assert_string_equal(logged(),
                        "hermes-mcp: error: down [event=upstream_down upstream=two lines]\n");
}

/* An upstream's stderr or an error text in the prose cannot pass for an event. */
static void prose_cannot_forge_an_event(void **state)
{
    (void)state;
    begin();
    log_info("upstream x stderr: %s", "ok [event=upstream_ready upstream=y]");
    assert_string_equal(logged(), "hermes-mcp: info: upstream x stderr: ok (event=upstream_ready "
                                  "upstream=y]\n");
    begin();
    log_event(EV_UPSTREAM_DOWN, LOG_FIELDS(LF_S("upstream", "x")), "upstream x is down: %s",
              "said [event=circuit_closed]");
    assert_string_equal(logged(),
                        "hermes-mcp: error: upstream x is down: said (event=circuit_closed] "
                        "[event=upstream_down upstream=x]\n");
}

static void long_prose_gives_way_to_the_fields(void **state)
{
    (void)state;
    char prose[3000];
    memset(prose, 'p', sizeof prose - 1);
    prose[sizeof prose - 1] = '\0';
    begin();
    log_event(EV_CIRCUIT_OPEN, LOG_FIELDS(LF_S("upstream", "flaky"), LF_N("failures", 5)), "%s",
              prose);
    const char *l = logged();
    const char *tail = " [event=circuit_open upstream=flaky failures=5]\n";
    assert_true(strlen(l) < 1100);
    assert_string_equal(l + strlen(l) - strlen(tail), tail);
}

/* A value too long for the line is cut, and still reads back as one quoted value. */
static void a_long_value_is_cut_inside_its_quotes(void **state)
{
    (void)state;
    char value[600];
    for (size_t i = 0; i < sizeof value - 1; i++)
        value[i] = i % 7 == 6 ? ' ' : i % 11 == 10 ? '"' : 'v';
    value[sizeof value - 1] = '\0';
    begin();
    log_event(EV_RELOAD_RESTART_NEEDED, LOG_FIELDS(LF_S("config", "gateway"), LF_S("keys", value)),
              "reload");
    const char *l = logged();
    assert_non_null(
        strstr(l, " [event=reload_restart_needed config=gateway keys=\"vvvvvv vvv\\\""));
    assert_true(strlen(l) < 1100);
    assert_string_equal(l + strlen(l) - 3, "\"]\n");
    assert_string_not_equal(l + strlen(l) - 4, "\\\"]\n"); /* not an escaped quote */
}

static void level_filters_events(void **state)
{
    (void)state;
    begin();
    log_set_level(LOG_WARN);
    log_event(EV_UPSTREAM_READY, NULL, "ready");
    log_event(EV_CIRCUIT_OPEN, NULL, "open");
    log_set_level(LOG_INFO);
    assert_string_equal(logged(), "hermes-mcp: warn: open [event=circuit_open]\n");
}

static void journald_lines_keep_the_event(void **state)
{
    (void)state;
    begin();
    setenv("JOURNAL_STREAM", "8:1", 1);
    log_event(EV_DRAIN_STARTED, LOG_FIELDS(LF_N("calls", 2), LF_N("grace_s", 30)), "drain");
    unsetenv("JOURNAL_STREAM");
    assert_string_equal(logged(), "<6>info: drain [event=drain_started calls=2 grace_s=30]\n");
}

static void every_event_is_named_once_and_explained(void **state)
{
    (void)state;
    for (int e = 0; e < EV_COUNT; e++) {
        const struct log_ev_info *i = log_ev_at((enum log_ev)e);
        assert_non_null(i);
        assert_non_null(i->name);
        assert_true(strlen(i->name) > 0);
        assert_int_equal(strspn(i->name, "abcdefghijklmnopqrstuvwxyz_"), strlen(i->name));
        assert_non_null(i->fields);
        assert_non_null(i->when);
        assert_true(strlen(i->when) > 10);
        for (int j = 0; j < e; j++)
            assert_string_not_equal(i->name, log_ev_at((enum log_ev)j)->name);
    }
    assert_null(log_ev_at(EV_COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(event_line_has_prose_then_fields),
        cmocka_unit_test(values_that_would_not_read_back_are_quoted),
        cmocka_unit_test(prose_cannot_forge_an_event),
        cmocka_unit_test(long_prose_gives_way_to_the_fields),
        cmocka_unit_test(a_long_value_is_cut_inside_its_quotes),
        cmocka_unit_test(level_filters_events),
        cmocka_unit_test(journald_lines_keep_the_event),
        cmocka_unit_test(every_event_is_named_once_and_explained),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
