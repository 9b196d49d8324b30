/* Unit tests for audit.c: line format, rotation with kept generations, mode 600. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "audit.h"

static char dir[] = "/tmp/hm-audit-XXXXXX";

static void lines_are_json_with_the_fields(void **state)
{
    char path[256], line[1024];
    (void)state;
    snprintf(path, sizeof path, "%s/a.jsonl", dir);
    struct audit *a = audit_new(path, 0, 3);
    struct audit_entry e = {.ip = "127.0.0.1",
                            .method = "POST",
                            .path = "/mcp",
                            .status = 200,
                            .duration_ms = 7,
                            .rpc_method = "tools/call",
                            .tool = "list_agents",
                            .error = NULL};
    audit_log(a, &e);
    audit_free(a, 2000);
    FILE *f = fopen(path, "r");
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    json_t *o = json_loads(line, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "tool")), "list_agents");
    assert_int_equal(json_integer_value(json_object_get(o, "status")), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "duration_ms")), 7);
    assert_null(json_object_get(o, "error")); /* absent fields are left out */
    json_decref(o);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    unlink(path);
}

static void event_lines_carry_their_fields_and_drop_hostile_text(void **state)
{
    char path[256], line[1024];
    (void)state;
    snprintf(path, sizeof path, "%s/e.jsonl", dir);
    struct audit *a = audit_new(path, 0, 3);
    audit_log_event(a, &(struct audit_event){.event = "gateway_call",
                                             .principal = "owner",
                                             .upstream = "fake",
                                             .tool = "fake__echo",
                                             .upstream_tool = "echo",
                                             .status = "ok",
                                             .duration_ms = 1.25});
    audit_log_event(a, &(struct audit_event){.event = "gateway_withheld",
                                             .upstream = "fake",
                                             .tool = "fake__\"x\n",
                                             .duration_ms = -1});
    audit_log_event(a, &(struct audit_event){.event = "gateway_call",
                                             .tool = "\xff\xfe",
                                             .duration_ms = -1}); /* not UTF-8: dropped */
    audit_free(a, 2000);
    FILE *f = fopen(path, "r");
    assert_non_null(fgets(line, sizeof line, f));
    json_t *o = json_loads(line, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "event")), "gateway_call");
    assert_string_equal(json_string_value(json_object_get(o, "principal")), "owner");
    assert_string_equal(json_string_value(json_object_get(o, "upstream_tool")), "echo");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "ok");
    assert_true(json_real_value(json_object_get(o, "duration_ms")) == 1.25);
    json_decref(o);
    assert_non_null(fgets(line, sizeof line, f));
    o = json_loads(line, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "tool")), "fake__\"x\n");
    assert_null(json_object_get(o, "principal"));   /* absent fields are left out */
    assert_null(json_object_get(o, "duration_ms")); /* not a timed event */
    json_decref(o);
    assert_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(path);
}

static void rotates_and_keeps_three_generations(void **state)
{
    char path[256], gen[300];
    struct stat st;
    (void)state;
    snprintf(path, sizeof path, "%s/r.jsonl", dir);
    struct audit *a = audit_new(path, 1000, 3); /* rotate every ~1000 bytes */
    struct audit_entry e = {.ip = "127.0.0.1", .method = "POST", .path = "/mcp", .status = 200};
    for (int i = 0; i < 200; i++) {
        audit_log(a, &e);
        /* Every tenth line, wait until the writer has written all so far: each batch then ends
         * in its own write, after which the writer rotates once the file is over 1000 bytes. */
        for (int spin = 0; i % 10 == 0 && audit_written(a) < (uint64_t)i + 1; spin++) {
            assert_true(spin < 5000); /* 5 s */
            usleep(1000);
        }
    }
    audit_free(a, 5000);
    assert_int_equal(audit_dropped(NULL), 0);
    for (int i = 1; i <= 3; i++) {
        snprintf(gen, sizeof gen, "%s.%d", path, i);
        assert_int_equal(stat(gen, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        unlink(gen);
    }
    snprintf(gen, sizeof gen, "%s.4", path);
    assert_int_not_equal(stat(gen, &st), 0); /* no fourth generation */
    unlink(path);
}

/* Lines are formatted by hand: quotes, backslashes and control characters must be escaped so
 * each line stays one valid JSON object, and text that is not UTF-8 must not get in at all. */
static void hostile_text_is_escaped_or_dropped(void **state)
{
    char path[256], line[4096];
    (void)state;
    snprintf(path, sizeof path, "%s/e.jsonl", dir);
    struct audit *a = audit_new(path, 0, 3);
    const char *ip = "1.2.3.4\"\\\n\x01\x1f\u00e9x";
    struct audit_entry e = {.ip = ip,
                            .method = "POST",
                            .path = "/mcp",
                            .status = 401,
                            .duration_ms = 12345678901ULL,
                            .rpc_method = "",
                            .tool = NULL,
                            .error = "-32601"};
    audit_log(a, &e);
    struct audit_entry bad = {.ip = "10.0.0.\xff", .method = "POST", .path = "/mcp", .status = 200};
    audit_log(a, &bad);
    assert_int_equal(audit_dropped(a), 1);
    audit_free(a, 2000);
    FILE *f = fopen(path, "r");
    assert_non_null(fgets(line, sizeof line, f));
    assert_null(fgets(line + strlen(line), (int)(sizeof line - strlen(line)), f)); /* one line */
    fclose(f);
    json_error_t je;
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &je);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "ip")), ip);
    assert_int_equal(json_integer_value(json_object_get(o, "duration_ms")), 12345678901LL);
    assert_int_equal(json_integer_value(json_object_get(o, "status")), 401);
    assert_string_equal(json_string_value(json_object_get(o, "error")), "-32601");
    assert_null(json_object_get(o, "rpc_method")); /* empty means absent */
    assert_null(json_object_get(o, "tool"));
    json_decref(o);
    unlink(path);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lines_are_json_with_the_fields),
        cmocka_unit_test(event_lines_carry_their_fields_and_drop_hostile_text),
        cmocka_unit_test(rotates_and_keeps_three_generations),
        cmocka_unit_test(hostile_text_is_escaped_or_dropped),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
