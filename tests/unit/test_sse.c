/* Unit tests for sse.c: framing, multi-line data, split input, comments, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sse.h"

struct seen {
    int n;
    char event[8][64];
    char data[8][256];
    char id[8][64];
};

static void collect(const char *event, const char *data, size_t len, const char *id, void *arg)
{
    struct seen *s = arg;
    if (s->n >= 8)
        return;
    snprintf(s->event[s->n], 64, "%s", event);
    snprintf(s->data[s->n], 256, "%.*s", (int)len, data);
    snprintf(s->id[s->n], 64, "%s", id);
    s->n++;
}

static void decodes_events_fed_byte_by_byte(void **state)
{
    const char *text = ": keepalive\n\nevent: hermes.tool.progress\r\ndata: {\"a\":1}\r\n\r\n"
                       "data: line1\ndata:line2\nid: 7\n\ndata: [DONE]\n\n";
    struct sse_decoder d;
    struct seen s = {0};
    (void)state;
    sse_init(&d, 1024);
    for (size_t i = 0; i < strlen(text); i++)
        assert_true(sse_feed(&d, text + i, 1, collect, &s));
    sse_cleanup(&d);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.event[0], "hermes.tool.progress");
    assert_string_equal(s.data[0], "{\"a\":1}");
    assert_string_equal(s.event[1], "");
    assert_string_equal(s.data[1], "line1\nline2");
    assert_string_equal(s.id[1], "7");
    assert_string_equal(s.data[2], "[DONE]");
}

/* Lines are taken in runs now: every split of the stream into two pieces (a CR at the end of one
 * piece and its LF at the start of the next included) must decode the same. */
static void decodes_the_same_whatever_the_split(void **state)
{
    const char *text = "data: a\r\n\r\nevent: e\rdata: {\"b\":2}\r\rdata: x\ndata: y\r\n\n"
                       ": c\r\nid: 9\ndata: [DONE]\n\n";
    (void)state;
    for (size_t cut = 0; cut <= strlen(text); cut++) {
        struct sse_decoder d;
        struct seen s = {0};
        sse_init(&d, 1024);
        assert_true(sse_feed(&d, text, cut, collect, &s));
        assert_true(sse_feed(&d, text + cut, strlen(text) - cut, collect, &s));
        sse_cleanup(&d);
        assert_int_equal(s.n, 4);
        assert_string_equal(s.data[0], "a");
        assert_string_equal(s.event[1], "e");
        assert_string_equal(s.data[1], "{\"b\":2}");
        assert_string_equal(s.data[2], "x\ny");
        assert_string_equal(s.data[3], "[DONE]");
        assert_string_equal(s.id[3], "9");
    }
}

static void event_without_data_is_not_dispatched(void **state)
{
    struct sse_decoder d;
    struct seen s = {0};
    (void)state;
    sse_init(&d, 1024);
    assert_true(sse_feed(&d, "event: x\n\nid: 3\n\n", 17, collect, &s));
    assert_int_equal(s.n, 0);
    assert_true(sse_feed(&d, "data: \n\n", 8, collect, &s)); /* empty data is an event */
    assert_int_equal(s.n, 1);
    assert_string_equal(s.data[0], "");
    assert_string_equal(s.event[0], ""); /* the earlier event name did not leak */
    sse_cleanup(&d);
}

static void oversized_event_fails_and_stays_failed(void **state)
{
    struct sse_decoder d;
    struct seen s = {0};
    char big[300];
    (void)state;
    memset(big, 'x', sizeof big);
    sse_init(&d, 100);
    assert_true(sse_feed(&d, "data: ", 6, collect, &s));
    assert_false(sse_feed(&d, big, sizeof big, collect, &s));
    assert_false(sse_feed(&d, "\n\ndata: ok\n\n", 12, collect, &s));
    assert_int_equal(s.n, 0);
    sse_cleanup(&d);
}

/* retry: sets the stream's reconnection time only when it is all digits; huge values are capped. */
static void retry_field_takes_digits_only(void **state)
{
    struct sse_decoder d;
    struct seen s = {0};
    (void)state;
    sse_init(&d, 1024);
    assert_int_equal(d.retry_ms, -1);
    assert_true(sse_feed(&d, "id: a\nretry: 1500\ndata: \n\n", 26, collect, &s));
    assert_int_equal(d.retry_ms, 1500);
    assert_string_equal(s.id[0], "a");
    assert_true(sse_feed(&d, "retry: 12x\nretry: -5\nretry:\n\n", 29, collect, &s));
    assert_int_equal(d.retry_ms, 1500); /* none of those counts */
    assert_true(sse_feed(&d, "retry: 99999999999999999999999\n\n", 32, collect, &s));
    assert_int_equal(d.retry_ms, SSE_RETRY_MAX_MS);
    assert_true(sse_feed(&d, "retry: 0\n\n", 10, collect, &s));
    assert_int_equal(d.retry_ms, 0);
    sse_cleanup(&d);
}

/* The last event id (where a resume starts) is set by an event without data too, reset by an
 * empty id: field, and an id too long to keep whole is not kept cut short: it counts as none. */
static void last_event_id_follows_whatwg(void **state)
{
    struct sse_decoder d;
    struct seen s = {0};
    char line[300];
    (void)state;
    sse_init(&d, 4096);
    assert_true(sse_feed(&d, "id: only1\n\n", 11, collect, &s));
    assert_int_equal(s.n, 0);
    assert_string_equal(d.last_id, "only1");
    assert_true(sse_feed(&d, "id: half", 8, collect, &s)); /* not dispatched yet */
    assert_string_equal(d.last_id, "only1");
    assert_true(sse_feed(&d, "\n\nid:\n\n", 7, collect, &s));
    assert_string_equal(d.last_id, "");
    int n = snprintf(line, sizeof line, "id: %0*d\ndata: x\n\n", SSE_ID_MAX + 50, 7);
    assert_true(sse_feed(&d, "id: ok\n\n", 8, collect, &s));
    assert_true(sse_feed(&d, line, (size_t)n, collect, &s));
    assert_int_equal(s.n, 1);
    assert_string_equal(s.id[0], "");   /* the event has no usable id */
    assert_string_equal(d.last_id, ""); /* and the older one is not kept either */
    n = snprintf(line, sizeof line, "id: %0*d\n\n", SSE_ID_MAX - 1, 7); /* the longest kept */
    assert_true(sse_feed(&d, line, (size_t)n, collect, &s));
    assert_int_equal(strlen(d.last_id), SSE_ID_MAX - 1);
    sse_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decodes_events_fed_byte_by_byte),
        cmocka_unit_test(decodes_the_same_whatever_the_split),
        cmocka_unit_test(event_without_data_is_not_dispatched),
        cmocka_unit_test(oversized_event_fails_and_stays_failed),
        cmocka_unit_test(last_event_id_follows_whatwg),
        cmocka_unit_test(retry_field_takes_digits_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
