/* Unit tests for readfile.c: regular files are read whole; FIFOs, directories and files over
 * the cap are refused at once with one line naming the file. */
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

#include "readfile.h"
#include "scratch.h"

static char dir[] = "/tmp/hm-readfile-XXXXXX";

static void path_in(char *out, size_t outlen, const char *name)
{
    snprintf(out, outlen, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void reads_a_regular_file_whole(void **state)
{
    (void)state;
    char p[128], err[200];
    struct stat st;
    size_t len;
    path_in(p, sizeof p, "a.txt");
    write_file(p, "KEY=value\n", 0600);
    char *t = readfile_capped(p, "the file", 1024, &st, &len, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(len, 10);
    assert_string_equal(t, "KEY=value\n");
    assert_int_equal(st.st_mode & 0777, 0600);
    free(t);
    path_in(p, sizeof p, "empty");
    write_file(p, "", 0644);
    t = readfile_capped(p, "the file", 1024, &st, &len, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(len, 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    free(t);
}

static void refuses_what_is_not_a_small_regular_file(void **state)
{
    (void)state;
    char p[128], err[200];
    struct stat st;
    size_t len;
    path_in(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    /* Returns at once (a plain open would wait for a writer forever: the test would hang). */
    assert_null(readfile_capped(p, "the contract", 1024, &st, &len, err, sizeof err));
    assert_string_equal(err, "the contract is not a regular file");
    assert_null(readfile_capped(dir, "the dir", 1024, &st, &len, err, sizeof err));
    assert_string_equal(err, "the dir is not a regular file");
    path_in(p, sizeof p, "big");
    write_file(p, "0123456789", 0600);
    assert_null(readfile_capped(p, "big", 9, &st, &len, err, sizeof err));
    assert_string_equal(err, "big is larger than 9 bytes");
    char *t = readfile_capped(p, "big", 10, &st, &len, err, sizeof err);
    assert_non_null(t); /* exactly at the cap is fine */
    free(t);
    path_in(p, sizeof p, "missing");
    assert_null(readfile_capped(p, "missing", 10, &st, &len, err, sizeof err));
    assert_string_equal(err, "cannot open missing: No such file or directory");
}

/* A file with more bytes than fstat reported, read with a cap equal to that size, is refused
 * rather than returned cut (procfs files report size 0 and have content: "it grew"). */
static void refuses_a_file_that_grew_at_the_cap(void **state)
{
    (void)state;
    char err[200];
    struct stat st;
    size_t len;
    assert_null(readfile_capped("/proc/self/status", "status", 0, &st, &len, err, sizeof err));
    assert_string_equal(err, "status changed while it was being read; try again");
}

SCRATCH_FIXTURES(dir)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_a_regular_file_whole),
        cmocka_unit_test(refuses_what_is_not_a_small_regular_file),
        cmocka_unit_test(refuses_a_file_that_grew_at_the_cap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
