/* Unit tests for startctx.c: the configured files are read as UTF-8 (invalid bytes replaced,
 * a cut never splits a character), each capped; ~ is $HOME; a missing file, a symbolic link
 * (also one swapped in after start), a FIFO (never blocking) and a directory are named as
 * missing with our own reason, never errno text or the expanded path. */
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

#include "startctx.h"

static char dir[64];

static void put(const char *name, const void *data, size_t n)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static json_t *read_files(const char *const *names, size_t n, size_t max_bytes)
{
    json_t *files = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(files, json_string(names[i]));
    struct startctx *s = startctx_new(files, max_bytes, dir);
    json_decref(files);
    json_t *out = startctx_read(s);
    startctx_free(s);
    return out;
}

static json_t *entry(json_t *out, size_t i)
{
    return json_array_get(json_object_get(out, "files"), i);
}

static const char *field(json_t *out, size_t i, const char *k)
{
    return json_string_value(json_object_get(entry(out, i), k));
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/startctx-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void reads_files_and_names_missing(void **state)
{
    (void)state;
    put("a.md", "hello\n", 6);
    const char *names[] = {"~/a.md", "~/nope.md"};
    json_t *out = read_files(names, 2, 1000);
    assert_string_equal(field(out, 0, "path"), "~/a.md"); /* as configured, not $HOME */
    assert_string_equal(field(out, 0, "text"), "hello\n");
    assert_true(json_is_false(json_object_get(entry(out, 0), "truncated")));
    assert_string_equal(field(out, 1, "path"), "~/nope.md");
    assert_true(json_is_true(json_object_get(entry(out, 1), "missing")));
    assert_string_equal(field(out, 1, "reason"), "not found");
    assert_null(json_object_get(entry(out, 1), "text"));
    json_decref(out);
}

static void caps_and_cuts_at_a_character(void **state)
{
    (void)state;
    put("big.md", "ab\xc3\xa9xyz", 7); /* a b e-acute x y z */
    const char *names[] = {"~/big.md"};
    json_t *out = read_files(names, 1, 3); /* the cap falls inside the e-acute */
    assert_string_equal(field(out, 0, "text"), "ab");
    assert_true(json_is_true(json_object_get(entry(out, 0), "truncated")));
    json_decref(out);
    out = read_files(names, 1, 4);
    assert_string_equal(field(out, 0, "text"), "ab\xc3\xa9");
    json_decref(out);
}

static void replaces_invalid_utf8(void **state)
{
    (void)state;
    put("bad.md",
        "a\xff"
        "b\xc0\xaf"
        "c\0d\xed\xa0\x80",
        11);
    const char *names[] = {"~/bad.md"};
    json_t *out = read_files(names, 1, 1000);
    const char *t = field(out, 0, "text");
    assert_non_null(t);
    assert_string_equal(t, "a\xef\xbf\xbd"
                           "b\xef\xbf\xbd\xef\xbf\xbd"
                           "c\xef\xbf\xbd"
                           "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(out);
}

static void refuses_links_fifos_and_directories(void **state)
{
    (void)state;
    char p[128], secret[128];
    put("secret.md", "SECRET", 6);
    put("ctx.md", "fine", 4);
    const char *names[] = {"~/ctx.md", "~/fifo", "~/sub", "~/link.md"};
    json_t *files = json_array();
    for (size_t i = 0; i < 4; i++)
        json_array_append_new(files, json_string(names[i]));
    struct startctx *s = startctx_new(files, 1000, dir);
    json_decref(files);
    snprintf(p, sizeof p, "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0600), 0); /* nobody writes: a blocking open would hang */
    snprintf(p, sizeof p, "%s/sub", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(secret, sizeof secret, "%s/secret.md", dir);
    snprintf(p, sizeof p, "%s/link.md", dir);
    assert_int_equal(symlink(secret, p), 0);
    /* swapped after start: the configured file becomes a link to one not configured */
    snprintf(p, sizeof p, "%s/ctx.md", dir);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(symlink(secret, p), 0);
    json_t *out = startctx_read(s);
    startctx_free(s);
    char *text = json_dumps(out, 0);
    assert_null(strstr(text, "SECRET"));
    assert_null(strstr(text, dir)); /* never the expanded path */
    free(text);
    assert_string_equal(field(out, 0, "reason"), "a symbolic link, not followed");
    assert_string_equal(field(out, 1, "reason"), "not a regular file");
    assert_string_equal(field(out, 2, "reason"), "not a regular file");
    assert_string_equal(field(out, 3, "reason"), "a symbolic link, not followed");
    json_decref(out);
}

static void no_home_means_missing(void **state)
{
    (void)state;
    json_t *files = json_pack("[s]", "~/a.md");
    struct startctx *s = startctx_new(files, 1000, NULL);
    json_decref(files);
    json_t *out = startctx_read(s);
    startctx_free(s);
    assert_true(json_is_true(json_object_get(entry(out, 0), "missing")));
    json_decref(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reads_files_and_names_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(caps_and_cuts_at_a_character, setup, teardown),
        cmocka_unit_test_setup_teardown(replaces_invalid_utf8, setup, teardown),
        cmocka_unit_test_setup_teardown(refuses_links_fifos_and_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(no_home_means_missing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
