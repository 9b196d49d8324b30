/* Unit tests for log.c: the named events' line (prose, then "[event=NAME k=v ...]"), the
 * quoting of values, the prose that cannot forge an event, and the event table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
}

/* A control byte in a value is escaped inside quotes: the line stays one line, the value one
 * token, and no terminal escape reaches the log raw. */
static void control_bytes_are_escaped(void **state)
{
    (void)state;
    begin();
    log_event(EV_UPSTREAM_DOWN, LOG_FIELDS(LF_S("upstream", "two\nlines"), LF_S("why", "x")),
              "down");
    assert_string_equal(logged(), "hermes-mcp: error: down [event=upstream_down "
                                  "upstream=\"two\\nlines\" why=x]\n");
    begin();
    log_event(EV_UPSTREAM_NOTIFICATION_IGNORED,
              LOG_FIELDS(LF_S("method", "a\x1b[2Jb\r\t\x7f\x01"), LF_S("upstream", "\x1b")), "x");
    assert_string_equal(logged(), "hermes-mcp: info: x [event=upstream_notification_ignored "
                                  "method=\"a\\x1b[2Jb\\r\\t\\x7f\\x01\" upstream=\"\\x1b\"]\n");
    begin();
    log_event(EV_UPSTREAM_READY, LOG_FIELDS(LF_S("upstream", "caf\xc3\xa9")), "ready");
    assert_string_equal(logged(),
                        "hermes-mcp: info: ready [event=upstream_ready upstream=caf\xc3\xa9]\n");
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
    /* At the start of the prose the "LEVEL: " prefix would give it the space before it. */
    begin();
    log_error("%s", "[event=upstream_ready upstream=y]");
    assert_string_equal(logged(), "hermes-mcp: error: (event=upstream_ready upstream=y]\n");
    begin();
    log_event(EV_UPSTREAM_DOWN, NULL, "%s", "[event=circuit_closed]");
    assert_string_equal(logged(),
                        "hermes-mcp: error: (event=circuit_closed] [event=upstream_down]\n");
}

/* Reads an event line's fields as events.mjs does (escapes kept as the byte after the
 * backslash); returns their count, or -1 when the line does not end in one well-formed
 * bracket. */
static int fields_of(const char *l, char keys[][32], char vals[][800], int max)
{
    const char *az = "abcdefghijklmnopqrstuvwxyz_";
    const char *p = strstr(l, " [event=");
    int k = 0;
    if (p == NULL)
        return -1;
    p += strlen(" [event=");
    p += strspn(p, az);
    for (; *p == ' ' && k < max; k++) {
        size_t kl = strspn(++p, az), v = 0;
        if (kl == 0 || kl >= 32 || p[kl] != '=')
            return -1;
        memcpy(keys[k], p, kl);
        keys[k][kl] = '\0';
        p += kl + 1;
        if (*p == '"') {
            for (p++; *p != '"'; p++) {
                if (*p == '\\')
                    p++;
                if (*p == '\0' || *p == '\n' || v + 1 >= 800)
                    return -1;
                vals[k][v++] = *p;
            }
            p++;
        } else {
            while (*p && strchr(" ]\"\n", *p) == NULL && v + 1 < 800)
                vals[k][v++] = *p++;
        }
        vals[k][v] = '\0';
    }
    return strcmp(p, "]\n") == 0 ? k : -1;
}

/* Fields that outgrow the line: keys are never cut, quotes stay balanced, a number is whole or
 * left out, and "truncated=KEY" ends a list that lost something. The sweep moves the quoted
 * value `b` across the end of the room, so it starts in the last bytes of it at some point. */
static void fields_cut_at_the_end_stay_well_formed(void **state)
{
    (void)state;
    static char pad[1000], keys[8][32], vals[8][800];
    bool whole = false, cut = false, dropped = false, a_cut = false;
    for (size_t len = 600; len < 800; len++) {
        memset(pad, 'a', len);
        pad[len] = '\0';
        begin();
        log_event(EV_RATE_LIMITED,
                  LOG_FIELDS(LF_S("a", pad), LF_S("b", "why \"not\""), LF_N("c", 1234567)),
                  "prose");
        const char *l = logged();
        int k = fields_of(l, keys, vals, 8);
        assert_true(k >= 1);
        assert_true(strlen(l) < 1100);
        assert_non_null(strstr(l, "hermes-mcp: warn: prose"));
        if (strcmp(keys[k - 1], "truncated") != 0) { /* all fit */
            assert_int_equal(k, 3);
            assert_string_equal(vals[0], pad);
            assert_string_equal(vals[1], "why \"not\"");
            assert_string_equal(vals[2], "1234567");
            whole = true;
            continue;
        }
        assert_string_equal(keys[k - 1], "truncated");
        const char *lost = vals[k - 1];
        if (k >= 2)
            assert_string_equal(keys[0], "a");
        if (strcmp(lost, "a") == 0) {
            assert_int_equal(k, 2); /* a cut, what follows left out */
            assert_true(strlen(vals[0]) < len && strncmp(vals[0], pad, strlen(vals[0])) == 0);
            a_cut = true;
        } else if (strcmp(lost, "b") == 0) {
            assert_string_equal(vals[0], pad);
            if (k == 3) {
                assert_string_equal(keys[1], "b");
                assert_true(strlen(vals[1]) > 0 && strlen(vals[1]) < strlen("why \"not\""));
                assert_memory_equal(vals[1], "why \"not\"", strlen(vals[1]));
                cut = true;
            } else {
                assert_int_equal(k, 2);
                dropped = true;
            }
        } else {
            assert_string_equal(lost, "c"); /* a number is never cut */
            assert_int_equal(k, 3);
            assert_string_equal(vals[1], "why \"not\"");
        }
    }
    assert_true(whole && cut && dropped && a_cut);
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

/* A value too long for the line is cut, still reads back as one quoted value, and the line says
 * it was cut. */
static void a_long_value_is_cut_inside_its_quotes(void **state)
{
    (void)state;
    static char value[900], keys[8][32], vals[8][800];
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
    assert_int_equal(fields_of(l, keys, vals, 8), 3);
    assert_string_equal(keys[1], "keys");
    assert_true(strlen(vals[1]) > 600);
    assert_memory_equal(vals[1], value, strlen(vals[1]));
    assert_string_equal(keys[2], "truncated");
    assert_string_equal(vals[2], "keys");
    assert_string_equal(l + strlen(l) - strlen(" truncated=keys]\n"), " truncated=keys]\n");
}

/* The largest events fit whole: three 128-byte ids, a prose that gives way. */
static void three_long_ids_fit(void **state)
{
    (void)state;
    static char id[129], keys[8][32], vals[8][800];
    memset(id, 'r', 128);
    id[128] = '\0';
    begin();
    log_event(EV_RUN_CLAIMED_TWICE,
              LOG_FIELDS(LF_S("run", id), LF_S("task", id), LF_S("other", id)),
              "run %s is reported for task %s and for task %s", id, id, id);
    const char *l = logged();
    assert_int_equal(fields_of(l, keys, vals, 8), 3);
    assert_string_equal(vals[2], id);
    assert_null(strstr(l, "truncated="));
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
        cmocka_unit_test(control_bytes_are_escaped),
        cmocka_unit_test(prose_cannot_forge_an_event),
        cmocka_unit_test(fields_cut_at_the_end_stay_well_formed),
        cmocka_unit_test(long_prose_gives_way_to_the_fields),
        cmocka_unit_test(a_long_value_is_cut_inside_its_quotes),
        cmocka_unit_test(three_long_ids_fit),
        cmocka_unit_test(level_filters_events),
        cmocka_unit_test(journald_lines_keep_the_event),
        cmocka_unit_test(every_event_is_named_once_and_explained),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
