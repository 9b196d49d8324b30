/* Unit tests for retention.c: which finished tasks go: terminal only, never one in
 * flight, oldest first, by age and by count, 0 turning a limit off. */
#include <fcntl.h>
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

#include "retention.h"

#define DAY 86400
static const time_t now = 1800000000;

static void age_limit_takes_only_old_terminal_tasks_oldest_first(void **state)
{
    struct retention_task t[] = {
        {"new", now - 1 * DAY, true, false},
        {"old", now - 40 * DAY, true, false},
        {"older", now - 50 * DAY, true, false},
        {"old-running", now - 90 * DAY, false, false}, /* no result.json yet */
        {"old-followed", now - 90 * DAY, true, true},  /* result there but still in memory */
    };
    (void)state;
    size_t go = retention_select(t, 5, now, 30, 0);
    assert_int_equal(go, 2);
    assert_string_equal(t[0].id, "older");
    assert_string_equal(t[1].id, "old");
}

static void count_limit_keeps_the_newest(void **state)
{
    struct retention_task t[] = {
        {"c", now - 3, true, false}, {"a", now - 5, true, false},     {"d", now - 2, true, false},
        {"b", now - 4, true, false}, {"busy", now - 9, false, false},
    };
    (void)state;
    size_t go = retention_select(t, 5, now, 0, 2);
    assert_int_equal(go, 2);
    assert_string_equal(t[0].id, "a");
    assert_string_equal(t[1].id, "b");
    for (size_t i = go; i < 5; i++) /* the in-flight task is never among those that go */
        assert_true(strcmp(t[i].id, "a") && strcmp(t[i].id, "b"));
}

static void zero_turns_limits_off_and_in_flight_never_goes(void **state)
{
    struct retention_task t[] = {
        {"ancient", now - 999 * DAY, true, false},
        {"busy1", now - 999 * DAY, false, false},
        {"busy2", now - 999 * DAY, true, true},
    };
    (void)state;
    assert_int_equal(retention_select(t, 3, now, 0, 0), 0);
    assert_int_equal(retention_select(t, 3, now, 1, 1), 1);
    assert_string_equal(t[0].id, "ancient");
    /* Even a limit of one task with every task ancient never touches those in flight. */
    struct retention_task busy[] = {{"x", now - 999 * DAY, false, false},
                                    {"y", now - 999 * DAY, true, true}};
    assert_int_equal(retention_select(busy, 2, now, 1, 1), 0);
    assert_int_equal(retention_select(NULL, 0, now, 1, 1), 0);
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
}

/* Removal never follows a link: links inside a task and a task id that is itself a link are
 * unlinked as links; what they point at outside TASKS_DIR survives. */
static void removal_does_not_follow_links(void **state)
{
    char root[] = "/tmp/hm-retention-XXXXXX", p[512], outside_file[512], outside_dir[512];
    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(p, sizeof p, "%s/tasks", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(outside_dir, sizeof outside_dir, "%s/keep", root);
    assert_int_equal(mkdir(outside_dir, 0700), 0);
    snprintf(outside_file, sizeof outside_file, "%s/keep/precious", root);
    touch(outside_file);
    snprintf(p, sizeof p, "%s/tasks/t1", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/tasks/t1/result.json", root);
    touch(p);
    snprintf(p, sizeof p, "%s/tasks/t1/sub", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/tasks/t1/sub/a.txt", root);
    touch(p);
    snprintf(p, sizeof p, "%s/tasks/t1/link-file", root);
    assert_int_equal(symlink(outside_file, p), 0);
    snprintf(p, sizeof p, "%s/tasks/t1/link-dir", root);
    assert_int_equal(symlink(outside_dir, p), 0);
    snprintf(p, sizeof p, "%s/tasks/evil", root);
    assert_int_equal(symlink(outside_dir, p), 0);

    snprintf(p, sizeof p, "%s/tasks", root);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    assert_int_equal(retention_remove_task(fd, "t1"), 0);
    assert_int_equal(retention_remove_task(fd, "evil"), 0);
    assert_int_equal(retention_remove_task(fd, ".."), -1);
    assert_int_equal(retention_remove_task(fd, "gone"), -1);
    close(fd);

    struct stat st;
    snprintf(p, sizeof p, "%s/tasks/t1", root);
    assert_int_not_equal(lstat(p, &st), 0);
    snprintf(p, sizeof p, "%s/tasks/evil", root);
    assert_int_not_equal(lstat(p, &st), 0);
    assert_int_equal(stat(outside_file, &st), 0); /* the link targets are untouched */
    assert_int_equal(unlink(outside_file), 0);
    assert_int_equal(rmdir(outside_dir), 0);
    snprintf(p, sizeof p, "%s/tasks", root);
    assert_int_equal(rmdir(p), 0); /* and the tasks directory itself was left, empty */
    assert_int_equal(rmdir(root), 0);
}

/* The walk: task directories only (no links, no plain files, no names that are not ids),
 * terminal exactly when result.json is a regular file, aged by result.json's mtime. */
static void scan_sees_task_directories_and_their_result(void **state)
{
    char root[] = "/tmp/hm-retscan-XXXXXX", p[512], err[300];
    struct retention_list l;
    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(p, sizeof p, "%s/done", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/done/result.json", root);
    touch(p);
    struct timespec when[2] = {{.tv_sec = 1000000}, {.tv_sec = 1000000}};
    assert_int_equal(utimensat(AT_FDCWD, p, when, 0), 0);
    snprintf(p, sizeof p, "%s/running", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/linked", root);
    assert_int_equal(symlink("/tmp", p), 0);
    snprintf(p, sizeof p, "%s/file", root);
    touch(p);
    snprintf(p, sizeof p, "%s/.hidden", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/fake", root); /* result.json a directory: not terminal */
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/fake/result.json", root);
    assert_int_equal(mkdir(p, 0700), 0);

    assert_true(retention_scan(root, &l, err, sizeof err));
    assert_int_equal(l.n, 3);
    int seen = 0;
    for (size_t i = 0; i < l.n; i++) {
        const struct retention_task *t = &l.tasks[i];
        if (!strcmp(t->id, "done")) {
            assert_true(t->terminal);
            assert_int_equal(t->finished, 1000000);
            seen |= 1;
        } else if (!strcmp(t->id, "running")) {
            assert_false(t->terminal);
            seen |= 2;
        } else if (!strcmp(t->id, "fake")) {
            assert_false(t->terminal);
            seen |= 4;
        }
    }
    assert_int_equal(seen, 7);
    retention_list_free(&l);
    assert_int_equal(l.n, 0);
    snprintf(p, sizeof p, "%s/nope", root);
    assert_false(retention_scan(p, &l, err, sizeof err));
    assert_non_null(strstr(err, "TASKS_DIR"));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* Pruning in two steps: the task leaves TASKS_DIR in one rename (its id is free at once, even
 * while its old files wait in the trash), then the trash is emptied; links are moved and deleted
 * as links, their targets survive; the same id can be pruned twice before the trash is emptied. */
static void take_out_then_empty_trash(void **state)
{
    char root[] = "/tmp/hm-rettrash-XXXXXX", p[512], keep[512];
    struct stat st;
    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(keep, sizeof keep, "%s/keep", root);
    touch(keep);
    snprintf(p, sizeof p, "%s/tasks", root);
    assert_int_equal(mkdir(p, 0700), 0);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(mkdirat(fd, "t1", 0700), 0);
        assert_int_equal(mkdirat(fd, "t1/sub", 0700), 0);
        assert_int_equal(symlinkat(keep, fd, "t1/sub/link"), 0);
        assert_int_equal(retention_move_out(fd, "t1"), 0);
        assert_int_not_equal(fstatat(fd, "t1", &st, AT_SYMLINK_NOFOLLOW), 0);
    }
    assert_int_equal(symlinkat(root, fd, "evil"), 0);
    assert_int_equal(retention_move_out(fd, "evil"), 0);
    assert_int_equal(retention_move_out(fd, "gone"), -1);
    assert_int_equal(retention_move_out(fd, ".pruned"), -1);
    atomic_bool stop = true;
    assert_int_equal(retention_empty_trash(fd, &stop), 0); /* stopped: nothing deleted */
    assert_int_equal(retention_empty_trash(fd, NULL), 3);
    assert_int_equal(retention_empty_trash(fd, NULL), 0);
    assert_int_equal(stat(keep, &st), 0);                       /* link targets untouched */
    assert_int_equal(unlinkat(fd, ".pruned", AT_REMOVEDIR), 0); /* and the trash is empty */
    close(fd);
    snprintf(p, sizeof p, "rm -rf '%s'", root);
    assert_int_equal(system(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(age_limit_takes_only_old_terminal_tasks_oldest_first),
        cmocka_unit_test(count_limit_keeps_the_newest),
        cmocka_unit_test(zero_turns_limits_off_and_in_flight_never_goes),
        cmocka_unit_test(removal_does_not_follow_links),
        cmocka_unit_test(scan_sees_task_directories_and_their_result),
        cmocka_unit_test(take_out_then_empty_trash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
