/* Unit tests for the task journal: records journaled by a process that then dies without a
 * checkpoint (a child that _exits) are replayed into an empty directory as the exact files; a
 * torn last record (cut short, or one byte flipped) is ignored and everything before it
 * applied; a segment reused after a checkpoint does not replay its old records; a journal of a
 * newer format is refused; an offline recover beside a live opener replays nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "crc32c.h"
#include "readfile.h"
#include "scratch.h"
#include "taskjournal.h"

static char root[] = "/tmp/hm-taskjournal-XXXXXX";
SCRATCH_FIXTURES(root)

/* No checkpoint but the one a full segment asks for: what a crash leaves is all journaled. */
static const struct taskjournal_opts small = {.seg_size = 4096, .nsegs = 2, .checkpoint_ms = 60000};
static const struct taskjournal_opts wide = {.checkpoint_ms = 60000};

static char *fresh(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", root, name);
    mkdir(p, 0700);
    return p;
}

static char *in(const char *dir, const char *rel)
{
    static char p[4][600];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%.300s/%.250s", dir, rel);
    return p[i];
}

static struct taskjournal_rec rec(const char *id, const char *name, const char *data)
{
    return (struct taskjournal_rec){.kind = data ? TASKJOURNAL_WRITE : TASKJOURNAL_REMOVE,
                                    .id = id,
                                    .name = name,
                                    .data = data,
                                    .len = data ? strlen(data) : 0};
}

/* What a server does with the journal, then dies: no checkpoint, no close. */
static void journal_then_die_at(const char *dir, const struct taskjournal_opts *o,
                                const struct taskjournal_rec *r, size_t n, size_t per_append,
                                size_t checkpoint_after)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512];
        bool busy;
        struct taskjournal *j = taskjournal_open(dir, o, &busy, err, sizeof err);
        if (j == NULL)
            _exit(2);
        for (size_t i = 0; i < n;) {
            size_t k = n - i < per_append ? n - i : per_append;
            size_t m = taskjournal_append(j, r + i, k);
            if (m == 0)
                _exit(3);
            taskjournal_applied(j); /* (the files are not written here: replay must) */
            i += m;
            while (i >= checkpoint_after && taskjournal_checkpoints(j) == 0)
                usleep(1000);
        }
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void journal_then_die(const char *dir, const struct taskjournal_opts *o,
                             const struct taskjournal_rec *r, size_t n, size_t per_append)
{
    journal_then_die_at(dir, o, r, n, per_append, SIZE_MAX);
}

static void assert_file(const char *path, const char *want)
{
    size_t len = 0;
    char err[256];
    struct stat st;
    char *data = readfile_capped(path, path, 1 << 20, &st, &len, err, sizeof err);
    if (data == NULL)
        fail_msg("%s", err);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(data, want, len);
    free(data);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int recover(const char *dir, char *err, size_t errlen)
{
    return taskjournal_recover(dir, err, errlen);
}

static void test_replay_exact_files(void **state)
{
    (void)state;
    char *dir = fresh("exact");
    static const char big[] = "{\n  \"result\": \"\\u00e9t\\u00e9\",\n  \"n\": 1\n}\n";
    struct taskjournal_rec r[] = {
        rec("t1", "request.json", "{\"task\": \"one\"}\n"),
        rec("t2", "request.json", "{\"task\": \"two\"}\n"),
        rec("t1", "result.json", big),
        rec("t2", "run.json", "{}\n"),
        rec("t2", "run.json", NULL), /* removed again */
        rec("t3", "request.json", ""),
    };
    journal_then_die(dir, &wide, r, 6, 6);
    char err[512];
    assert_int_equal(recover(dir, err, sizeof err), 1);
    assert_file(in(dir, "t1/request.json"), "{\"task\": \"one\"}\n");
    assert_file(in(dir, "t1/result.json"), big);
    assert_file(in(dir, "t2/request.json"), "{\"task\": \"two\"}\n");
    assert_false(exists(in(dir, "t2/run.json")));
    assert_file(in(dir, "t3/request.json"), "");
    struct stat st;
    assert_int_equal(stat(in(dir, "t1/result.json"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* The journal is empty now: files changed since are left as they are. */
    FILE *f = fopen(in(dir, "t1/request.json"), "w");
    fputs("changed\n", f);
    fclose(f);
    assert_int_equal(recover(dir, err, sizeof err), 1);
    assert_file(in(dir, "t1/request.json"), "changed\n");
}

/* The first segment's byte offset of record i (each: header, "id/name", data). */
static size_t rec_off(const struct taskjournal_rec *r, size_t i)
{
    size_t off = 0;
    for (size_t k = 0; k < i; k++)
        off += TASKJOURNAL_HDR + strlen(r[k].id) + 1 + strlen(r[k].name) + r[k].len;
    return off;
}

static void patch(const char *path, size_t off, const void *p, size_t n)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)off, SEEK_SET), 0);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void torn(const char *name, bool flip)
{
    char *dir = fresh(name);
    struct taskjournal_rec r[] = {
        rec("a", "request.json", "{\"a\": 1}\n"),
        rec("b", "request.json", "{\"b\": 2}\n"),
        rec("c", "result.json", "{\"c\": 3, \"text\": \"the last one\"}\n"),
    };
    journal_then_die(dir, &wide, r, 3, 1);
    char *seg = in(dir, ".journal/seg.0");
    if (flip) {
        unsigned char b = 'X';
        patch(seg, rec_off(r, 2) + TASKJOURNAL_HDR + 5, &b, 1);
    } else { /* cut short: its second half never reached the disk */
        size_t at = rec_off(r, 2) + TASKJOURNAL_HDR + 10;
        char zero[64] = {0};
        patch(seg, at, zero, sizeof zero);
    }
    char err[512];
    assert_int_equal(recover(dir, err, sizeof err), 1);
    assert_file(in(dir, "a/request.json"), "{\"a\": 1}\n");
    assert_file(in(dir, "b/request.json"), "{\"b\": 2}\n");
    assert_false(exists(in(dir, "c/result.json")));
}

static void test_torn_truncated(void **state)
{
    (void)state;
    torn("cut", false);
}

static void test_torn_flipped(void **state)
{
    (void)state;
    torn("flip", true);
}

/* Two segments of 4 KiB: 60 records of ~300 bytes go round them several times, each reuse after
 * a checkpoint. Only the records after the last checkpoint replay, and the latest bytes of
 * each file win. */
static void test_reused_segment(void **state)
{
    (void)state;
    char *dir = fresh("reuse");
    enum { N = 60 };
    static char data[N][320];
    static char ids[N][16];
    struct taskjournal_rec r[N];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "task%d", i % 29);
        snprintf(data[i], sizeof data[i], "{\"version\": %d, \"pad\": \"%0250d\"}\n", i, 0);
        r[i] = rec(ids[i], "result.json", data[i]);
    }
    journal_then_die(dir, &small, r, N, 3);
    char err[512];
    assert_int_equal(recover(dir, err, sizeof err), 1);
    int replayed = 0;
    for (int t = 0; t < 29; t++) {
        char path[64];
        snprintf(path, sizeof path, "task%d/result.json", t);
        if (!exists(in(dir, path)))
            continue;
        int last = -1;
        for (int i = 0; i < N; i++)
            if (i % 29 == t)
                last = i;
        assert_file(in(dir, path), data[last]);
        replayed++;
    }
    assert_true(replayed > 0 && replayed < 29); /* 12 records a segment: not all 60 */
}

/* The records of a segment left behind, checkpointed, are still whole on disk: their sequence
 * numbers, not the bytes, keep them from replaying. */
static void test_checkpointed_not_replayed(void **state)
{
    (void)state;
    char *dir = fresh("ckpt");
    enum { N = 16 };
    static char data[N][320];
    static char ids[N][16];
    struct taskjournal_rec r[N];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "c%d", i);
        snprintf(data[i], sizeof data[i], "{\"n\": %d, \"pad\": \"%0250d\"}\n", i, 0);
        r[i] = rec(ids[i], "result.json", data[i]);
    }
    /* 12 fill seg.0; the 13th opens seg.1 and asks for a checkpoint, waited for; then more */
    journal_then_die_at(dir, &small, r, N, 1, 14);
    char err[512];
    assert_int_equal(recover(dir, err, sizeof err), 1);
    for (int i = 0; i < 12; i++)
        assert_false(exists(in(dir, ids[i])));
    assert_file(in(dir, "c14/result.json"), data[14]);
    assert_file(in(dir, "c15/result.json"), data[15]);
}

/* taskjournal_checkpoint (before a file is written the durable way): every record appended
 * before it is covered, so none replays over what is written after. */
static void test_checkpoint_call(void **state)
{
    (void)state;
    char *dir = fresh("ckcall");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512];
        bool busy;
        struct taskjournal *j = taskjournal_open(dir, &wide, &busy, err, sizeof err);
        struct taskjournal_rec r[] = {rec("old", "result.json", "{\"v\": 1}\n")};
        if (j == NULL || taskjournal_append(j, r, 1) != 1)
            _exit(2);
        taskjournal_checkpoint(j);
        _exit(taskjournal_checkpoints(j) == 1 ? 0 : 3);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    char err[512];
    assert_int_equal(recover(dir, err, sizeof err), 1);
    assert_false(exists(in(dir, "old")));
}

/* Rewrites the control file's slot 0 as a valid slot of format 2. */
static void test_newer_format_refused(void **state)
{
    (void)state;
    char *dir = fresh("newer");
    struct taskjournal_rec r[] = {rec("n", "request.json", "{}\n")};
    journal_then_die(dir, &wide, r, 1, 1);
    unsigned char s[32] = {0}, z[512] = {0};
    uint32_t magic = 0x434a4d48u, fmt = 2, crc;
    uint64_t gen = 99, ckpt = 0;
    memcpy(s, &magic, 4);
    memcpy(s + 4, &fmt, 4);
    memcpy(s + 8, &gen, 8);
    memcpy(s + 16, &ckpt, 8);
    crc = crc32c(0, s, sizeof s);
    memcpy(s + 24, &crc, 4);
    patch(in(dir, ".journal/control"), 512, z, sizeof z);
    patch(in(dir, ".journal/control"), 0, s, sizeof s);
    char err[512];
    assert_int_equal(recover(dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "format 2"));
    bool busy;
    assert_null(taskjournal_open(dir, NULL, &busy, err, sizeof err));
    assert_false(busy);
    assert_false(exists(in(dir, "n/request.json")));
    /* a record of a newer format, its CRC whole, is refused too */
    char *dir2 = fresh("newer-rec");
    journal_then_die(dir2, &wide, r, 1, 1);
    unsigned char h[TASKJOURNAL_HDR + 64];
    FILE *f = fopen(in(dir2, ".journal/seg.0"), "rb");
    size_t len = TASKJOURNAL_HDR + strlen("n/request.json") + 3;
    assert_int_equal(fread(h, 1, len, f), len);
    fclose(f);
    uint32_t fk = 2u | 1u << 16, zero = 0;
    memcpy(h + 4, &fk, 4);
    memcpy(h + 24, &zero, 4);
    crc = crc32c(0, h, len);
    memcpy(h + 24, &crc, 4);
    patch(in(dir2, ".journal/seg.0"), 0, h, len);
    assert_int_equal(recover(dir2, err, sizeof err), -1);
    assert_non_null(strstr(err, "format 2"));
    /* an unreadable control file is an error too, never a silent start */
    char *dir3 = fresh("garbled");
    journal_then_die(dir3, &wide, r, 1, 1);
    memset(z, 0xa5, sizeof z);
    patch(in(dir3, ".journal/control"), 0, z, 64);
    patch(in(dir3, ".journal/control"), 512, z, 64);
    assert_int_equal(recover(dir3, err, sizeof err), -1);
    assert_non_null(strstr(err, "unreadable"));
}

/* An opener holds the journal: an offline recover replays nothing (0); after close it has
 * nothing left to replay, and the files the opener wrote itself are what count. */
static void test_recover_beside_opener(void **state)
{
    (void)state;
    char *dir = fresh("live");
    char err[512];
    bool busy;
    struct taskjournal *j = taskjournal_open(dir, &small, &busy, err, sizeof err);
    assert_non_null(j);
    struct taskjournal_rec r = rec("live", "request.json", "{\"v\": 1}\n");
    assert_int_equal(taskjournal_append(j, &r, 1), 1);
    taskjournal_applied(j);
    pid_t pid = fork();
    if (pid == 0)
        _exit(recover(dir, err, sizeof err) == 0 ? 0 : 1);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_false(exists(in(dir, "live/request.json")));
    taskjournal_close(j); /* its last checkpoint empties it */
    assert_int_equal(recover(dir, err, sizeof err), 1);
    assert_false(exists(in(dir, "live/request.json")));
    /* no task directory at all: nothing to do */
    assert_int_equal(recover(in(root, "nowhere"), err, sizeof err), 1);
}

/* Five records, each its own write or all one write; then the third is zeroed, as a disk
 * that lost it would leave it. */
static char *holed(const char *name, size_t per_append, char *err, size_t errlen, int *rc)
{
    char *dir = fresh(name);
    struct taskjournal_rec r[] = {
        rec("h1", "request.json", "{\"n\": 1}\n"), rec("h2", "request.json", "{\"n\": 2}\n"),
        rec("h3", "request.json", "{\"n\": 3}\n"), rec("h4", "request.json", "{\"n\": 4}\n"),
        rec("h5", "result.json", "{\"n\": 5}\n"),
    };
    journal_then_die(dir, &wide, r, 5, per_append);
    char zero[256] = {0};
    patch(in(dir, ".journal/seg.0"), rec_off(r, 2), zero, rec_off(r, 3) - rec_off(r, 2));
    *rc = recover(dir, err, errlen);
    return dir;
}

/* A zeroed region mid-segment followed by whole records written after it: an error with the
 * counts, nothing replayed; the same hole inside one torn write replays what came before it. */
static void test_hole_mid_segment(void **state)
{
    (void)state;
    char err[512] = "";
    int rc;
    char *dir = holed("hole", 1, err, sizeof err, &rc);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "record 3 is missing but 2 later record(s), up to 5"));
    assert_false(exists(in(dir, "h1/request.json")));
    assert_false(exists(in(dir, "h5/result.json")));
    bool busy;
    assert_null(taskjournal_open(dir, NULL, &busy, err, sizeof err));
    assert_non_null(strstr(err, "missing"));
    dir = holed("torn-write", 5, err, sizeof err, &rc);
    assert_int_equal(rc, 1);
    assert_file(in(dir, "h2/request.json"), "{\"n\": 2}\n");
    assert_false(exists(in(dir, "h4/request.json")));
    assert_int_equal(recover(dir, err, sizeof err), 1); /* and it is settled */
}

/* A crafted journal whose task directory is a link to elsewhere, or a name that is not a task
 * file's: refused, nothing written outside TASKS_DIR. */
static void test_link_and_name_refused(void **state)
{
    (void)state;
    char *dir = fresh("linked"), err[512] = "";
    char out[600];
    snprintf(out, sizeof out, "%s", in(root, "outside"));
    mkdir(out, 0700);
    struct taskjournal_rec r[] = {rec("evil", "result.json", "{\"x\": 1}\n"),
                                  rec("evil", "run.json", NULL)};
    journal_then_die(dir, &wide, r, 2, 2);
    assert_int_equal(symlink(out, in(dir, "evil")), 0);
    assert_int_equal(recover(dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "symbolic link"));
    assert_false(exists(in(out, "result.json")));
    assert_false(exists(in(out, ".result.json.replay")));
    char *dir2 = fresh("badname");
    struct taskjournal_rec r2[] = {rec("t", "notes.txt", "hi\n")};
    journal_then_die(dir2, &wide, r2, 1, 1);
    assert_int_equal(recover(dir2, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a task file"));
    assert_false(exists(in(dir2, "t/notes.txt")));
}

/* A journal another user could have written is not replayed (as root, one another user owns
 * neither); with nothing to replay, a reader that may not write the control file still reads. */
static void test_foreign_journal(void **state)
{
    (void)state;
    char *dir = fresh("foreign"), err[512] = "";
    struct taskjournal_rec r[] = {rec("f", "request.json", "{}\n")};
    journal_then_die(dir, &wide, r, 1, 1);
    assert_int_equal(chmod(in(dir, ".journal/seg.0"), 0620), 0);
    assert_int_equal(recover(dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "writable by group or others"));
    assert_false(exists(in(dir, "f/request.json")));
    assert_int_equal(chmod(in(dir, ".journal/seg.0"), 0600), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(in(dir, ".journal/seg.0"), 65534, 65534), 0);
        assert_int_equal(recover(dir, err, sizeof err), -1);
        assert_non_null(strstr(err, "owned by another user"));
        assert_int_equal(chown(in(dir, ".journal/seg.0"), 0, 0), 0);
    }
    assert_int_equal(recover(dir, err, sizeof err), 1);
    assert_file(in(dir, "f/request.json"), "{}\n");
    /* nothing to replay now: a read-only control file is enough */
    assert_int_equal(chmod(in(dir, ".journal/control"), 0400), 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0) { /* root writes anything: read as the owner, another uid */
            const char *own[] = {".journal/control", ".journal/seg.0", ".journal", "", "f",
                                 "f/request.json"};
            for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
                if (chown(in(dir, own[i]), 65534, 65534) < 0)
                    _exit(4);
            if (chmod(root, 0711) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                _exit(5);
        }
        char e[512];
        int rc = recover(dir, e, sizeof e);
        if (rc != 1)
            fprintf(stderr, "recover: %d %s\n", rc, e);
        _exit(rc == 1 ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    chmod(root, 0700);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Segments too big to be ours, or too many bytes in all: refused before anything is read. */
static void test_replay_capped(void **state)
{
    (void)state;
    char *dir = fresh("capped"), err[512] = "";
    struct taskjournal_rec r[] = {rec("c", "request.json", "{}\n")};
    journal_then_die(dir, &wide, r, 1, 1);
    assert_int_equal(truncate(in(dir, ".journal/seg.0"), (off_t)65 << 20), 0);
    assert_int_equal(recover(dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "at most 64 MiB"));
    assert_int_equal(truncate(in(dir, ".journal/seg.0"), (off_t)64 << 20), 0);
    for (int i = 1; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, ".journal/seg.%d", i);
        FILE *f = fopen(in(dir, name), "w");
        fclose(f);
        assert_int_equal(truncate(in(dir, name), (off_t)64 << 20), 0);
    }
    assert_int_equal(recover(dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "256 MiB in all"));
}

/* Two checkpoints: the control file's slots are 4 KiB apart (no two in one sector); and an idle
 * journal checkpoints on its own once checkpoint_ms passed after the last write. */
static void test_ctl_slots_and_idle_checkpoint(void **state)
{
    (void)state;
    char *dir = fresh("slots"), err[512];
    bool busy;
    const struct taskjournal_opts quick = {.checkpoint_ms = 100};
    struct taskjournal *j = taskjournal_open(dir, &quick, &busy, err, sizeof err);
    assert_non_null(j);
    for (int i = 0; i < 2; i++) {
        struct taskjournal_rec r = rec("s", "request.json", i ? "{\"v\": 2}\n" : "{\"v\": 1}\n");
        assert_int_equal(taskjournal_append(j, &r, 1), 1);
        taskjournal_applied(j);
        for (int w = 0; w < 200 && taskjournal_checkpoints(j) < (unsigned long)i + 1; w++)
            usleep(10 * 1000);
        assert_int_equal(taskjournal_checkpoints(j), i + 1); /* idle: no more writes came */
    }
    taskjournal_close(j);
    unsigned char b[8192];
    FILE *f = fopen(in(dir, ".journal/control"), "rb");
    assert_int_equal(fread(b, 1, sizeof b, f), sizeof b);
    fclose(f);
    uint32_t m0, m1, m512;
    memcpy(&m0, b, 4);
    memcpy(&m512, b + 512, 4);
    memcpy(&m1, b + 4096, 4);
    assert_int_equal(m0, 0x434a4d48u);
    assert_int_equal(m1, 0x434a4d48u);
    assert_int_equal(m512, 0);
}

static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_replay_exact_files),
        cmocka_unit_test(test_torn_truncated),
        cmocka_unit_test(test_torn_flipped),
        cmocka_unit_test(test_reused_segment),
        cmocka_unit_test(test_checkpointed_not_replayed),
        cmocka_unit_test(test_checkpoint_call),
        cmocka_unit_test(test_newer_format_refused),
        cmocka_unit_test(test_recover_beside_opener),
        cmocka_unit_test(test_hole_mid_segment),
        cmocka_unit_test(test_link_and_name_refused),
        cmocka_unit_test(test_foreign_journal),
        cmocka_unit_test(test_replay_capped),
        cmocka_unit_test(test_ctl_slots_and_idle_checkpoint),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
