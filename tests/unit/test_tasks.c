/* Unit tests for tasks.c's writer thread: a write is reported only once the file is in place,
 * operations keep their order, failures are reported, and closing finishes what was queued. */
#include <dirent.h>
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

#include "loop.h"
#include "scratch.h"
#include "tasks.h"

static char root[] = "/tmp/hm-tasks-XXXXXX";

struct seen {
    int calls;
    enum tasks_rc rc[8];
    char file_then[8][256]; /* what the file held when the callback ran ("" if absent) */
    const char *path;       /* file to look at from the callback */
    int order[8];
};

static void slurp(const char *path, char *out, size_t n)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t k = fread(out, 1, n - 1, f);
    out[k] = '\0';
    fclose(f);
}

static void done(enum tasks_rc rc, void *arg)
{
    struct seen *s = arg;
    s->rc[s->calls] = rc;
    if (s->path)
        slurp(s->path, s->file_then[s->calls], sizeof s->file_then[0]);
    s->calls++;
}

struct tagged {
    struct seen *s;
    int tag;
};

static void done_tagged(enum tasks_rc rc, void *arg)
{
    struct tagged *t = arg;
    t->s->order[t->s->calls] = t->tag;
    done(rc, t->s);
}

static void run_until(struct loop *l, const int *calls, int want)
{
    for (int i = 0; i < 500 && *calls < want; i++)
        loop_once(l, 10);
    assert_int_equal(*calls, want);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void write_is_reported_once_the_file_is_in_place(void **state)
{
    char err[256], path[512], dir[512];
    (void)state;
    struct loop *l = loop_new();
    struct tasks *t = tasks_open(root, l, err, sizeof err);
    assert_non_null(t);
    snprintf(path, sizeof path, "%s/t-1/result.json", tasks_dir(t));
    snprintf(dir, sizeof dir, "%s/t-1", tasks_dir(t));
    struct seen s = {.path = path};
    json_t *j = json_pack("{s:s, s:i}", "status", "completed", "n", 42);
    assert_int_equal(tasks_write(t, "t-1", "result.json", j, done, &s), TASKS_OK);
    json_decref(j);
    assert_int_equal(s.calls, 0); /* never before tasks_write returned */
    assert_true(tasks_pending(t, "t-1"));
    run_until(l, &s.calls, 1);
    assert_int_equal(s.rc[0], TASKS_OK);
    json_t *back = json_loads(s.file_then[0], 0, NULL);
    assert_non_null(back); /* complete when reported, not torn */
    assert_int_equal(json_integer_value(json_object_get(back, "n")), 42);
    json_decref(back);
    assert_false(tasks_pending(t, "t-1"));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(count_entries(dir), 1); /* no temp file left */
    json_t *r = NULL;
    assert_int_equal(tasks_read(t, "t-1", "result.json", 4096, &r), TASKS_OK);
    json_decref(r);
    /* An id that is not a task id is refused at once, without a callback. */
    j = json_object();
    assert_int_equal(tasks_write(t, "../x", "result.json", j, done, &s), TASKS_INVALID);
    assert_int_equal(tasks_remove(t, "t-1", "../result.json", done, &s), TASKS_INVALID);
    json_decref(j);
    assert_int_equal(s.calls, 1);
    tasks_free(t);
    loop_free(l);
}

static void operations_keep_their_order(void **state)
{
    char err[256], dir[512];
    (void)state;
    struct loop *l = loop_new();
    struct tasks *t = tasks_open(root, l, err, sizeof err);
    struct seen s = {0};
    struct tagged tags[4] = {{&s, 1}, {&s, 2}, {&s, 3}, {&s, 4}};
    json_t *j = json_pack("{s:s}", "k", "v");
    /* Queued back to back, so the writer most likely takes them as one batch. */
    tasks_write(t, "o-1", "request.json", j, done_tagged, &tags[0]);
    tasks_remove(t, "o-1", "request.json", done_tagged, &tags[1]);
    tasks_write(t, "o-2", "request.json", j, done_tagged, &tags[2]);
    tasks_write(t, "o-2", "result.json", j, done_tagged, &tags[3]);
    json_decref(j);
    run_until(l, &s.calls, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s.order[i], i + 1);
        assert_int_equal(s.rc[i], TASKS_OK);
    }
    struct stat st;
    snprintf(dir, sizeof dir, "%s/o-1", tasks_dir(t));
    assert_int_not_equal(stat(dir, &st), 0); /* written, then removed with its directory */
    snprintf(dir, sizeof dir, "%s/o-2", tasks_dir(t));
    assert_int_equal(count_entries(dir), 2);
    tasks_free(t);
    loop_free(l);
}

static void failures_are_reported(void **state)
{
    char err[256], path[512];
    (void)state;
    struct loop *l = loop_new();
    struct tasks *t = tasks_open(root, l, err, sizeof err);
    struct seen s = {0};
    /* result.json is a directory: the rename cannot replace it. */
    snprintf(path, sizeof path, "%s/f-1", tasks_dir(t));
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/f-1/result.json", tasks_dir(t));
    assert_int_equal(mkdir(path, 0700), 0);
    /* The task "directory" is a file: nothing can be created in it. */
    snprintf(path, sizeof path, "%s/f-2", tasks_dir(t));
    FILE *f = fopen(path, "w");
    fclose(f);
    json_t *none = NULL;
    assert_int_equal(tasks_read(t, "f-2", "request.json", 4096, &none), TASKS_IO);
    json_t *j = json_object();
    tasks_write(t, "f-1", "result.json", j, done, &s);
    tasks_write(t, "f-2", "result.json", j, done, &s);
    tasks_write(t, "f-3", "result.json", j, done, &s); /* unaffected by the others */
    json_decref(j);
    run_until(l, &s.calls, 3);
    assert_int_equal(s.rc[0], TASKS_IO);
    assert_int_equal(s.rc[1], TASKS_IO);
    assert_int_equal(s.rc[2], TASKS_OK);
    snprintf(path, sizeof path, "%s/f-1", tasks_dir(t));
    assert_int_equal(count_entries(path), 1); /* the failed temp file was cleaned up */
    tasks_free(t);
    loop_free(l);
}

static void closing_finishes_the_queue(void **state)
{
    char err[256], path[512];
    (void)state;
    struct loop *l = loop_new();
    struct tasks *t = tasks_open(root, l, err, sizeof err);
    struct seen s = {0};
    json_t *j = json_object();
    for (int i = 0; i < 8; i++) {
        char id[16];
        snprintf(id, sizeof id, "c-%d", i);
        tasks_write(t, id, "result.json", j, done, &s);
    }
    json_decref(j);
    snprintf(path, sizeof path, "%s/c-7/result.json", tasks_dir(t));
    tasks_free(t); /* without running the loop */
    assert_int_equal(s.calls, 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(s.rc[i], TASKS_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    loop_free(l);
}

/* A hold (retention taking a task out) makes the task busy like a queued write, and stays
 * counted with the writes: the task is free again only when both are over. */
static void a_hold_counts_as_pending(void **state)
{
    char err[256];
    struct seen s = {0};
    (void)state;
    struct loop *l = loop_new();
    struct tasks *t = tasks_open(root, l, err, sizeof err);
    assert_non_null(t);
    assert_false(tasks_pending(t, "held"));
    tasks_hold(t, "held");
    assert_true(tasks_pending(t, "held"));
    json_t *j = json_object();
    assert_int_equal(tasks_write(t, "held", "request.json", j, done, &s), TASKS_OK);
    json_decref(j);
    run_until(l, &s.calls, 1);
    assert_true(tasks_pending(t, "held")); /* the write is over, the hold is not */
    tasks_hold(t, "held");
    tasks_release(t, "held");
    assert_true(tasks_pending(t, "held"));
    tasks_release(t, "held");
    assert_false(tasks_pending(t, "held"));
    tasks_free(t);
    loop_free(l);
}

SCRATCH_FIXTURES(root)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_is_reported_once_the_file_is_in_place),
        cmocka_unit_test(operations_keep_their_order),
        cmocka_unit_test(failures_are_reported),
        cmocka_unit_test(closing_finishes_the_queue),
        cmocka_unit_test(a_hold_counts_as_pending),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
