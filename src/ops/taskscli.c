/* taskscli.c — `hermes-mcp tasks list` and `hermes-mcp tasks prune [--dry-run]`.
 *
 * It reads the env file serve reads (TASKS_DIR, TASKS_RETENTION_DAYS, TASKS_MAX) and uses the
 * server's own walk and rule (retention.c), so what `prune --dry-run` lists is what the server's
 * next prune removes. It is safe while the server runs: it only ever removes a task whose
 * result.json exists, which the server writes last, when the task has finished; a task still
 * queued or running has none and is never touched. */
#include "taskscli.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "exitcode.h"
#include "mcp.h"
#include "mem.h"
#include "readfile.h"
#include "retention.h"
#include "taskjournal.h"
#include "tasks.h"
#include "tasksdb.h"

#define RESULT_MAX (200 * 1024)

const char tasks_usage[] =
    "usage: hermes-mcp tasks list [--env-file FILE] [--json]\n"
    "       hermes-mcp tasks prune [--env-file FILE] [--dry-run]\n"
    "\n"
    "The task directories in TASKS_DIR, read with the settings of the env file serve reads.\n"
    "  list      one line per task, oldest first: id, state, age, size in bytes, owner\n"
    "            (--json: one JSON array of {id, state, finished, age_s, size, owner})\n"
    "  prune     removes the finished tasks past TASKS_RETENTION_DAYS or TASKS_MAX, oldest\n"
    "            first, one line per task removed (--dry-run: lists them, removes nothing)\n"
    "\n"
    "  --env-file FILE   the env file serve would read (default ./.env)\n"
    "\n"
    "With STORE_URL in the env file, the tasks are those of the store's database (every\n"
    "replica's); prune removes them there by the same rule.\n"
    "Safe while the server runs: only a task with a result.json (the server writes it last, when\n"
    "the task has finished) is ever removed; a task still queued or running is left alone.\n"
    "Exit codes: 0 ok, 1 a task could not be removed or TASKS_DIR could not be read, 2 usage or\n"
    "configuration error.\n";

struct opts {
    bool list, json, dry_run;
    const char *env_file;
};

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "hermes-mcp tasks: %s%s%s\n%s", what, arg ? arg : "", arg ? "'" : "",
            tasks_usage);
    return EXIT_USAGE;
}

/* Returns -1 when parsed, else the exit code (help printed, or a usage error). */
static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.env_file = ".env"};
    if (argc < 1)
        return usage_error("say list or prune", NULL);
    if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        fputs(tasks_usage, stdout);
        return 0;
    }
    if (!strcmp(argv[0], "list"))
        o->list = true;
    else if (strcmp(argv[0], "prune") != 0)
        return usage_error("unknown command (list or prune): '", argv[0]);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(tasks_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--env-file") && i + 1 < argc)
            o->env_file = argv[++i];
        else if (!strncmp(a, "--env-file=", 11) && a[11])
            o->env_file = a + 11;
        else if (o->list && !strcmp(a, "--json"))
            o->json = true;
        else if (!o->list && !strcmp(a, "--dry-run"))
            o->dry_run = true;
        else
            return usage_error("unknown argument '", a);
    }
    return -1;
}

/* The status result.json records, "running" while there is none and a run.json exists (an
 * async run), else "queued". */
static const char *task_state(const char *dir, const struct retention_task *t, char *buf,
                              size_t buflen)
{
    char path[4200], err[300];
    struct stat st;
    size_t len;
    if (!t->terminal) {
        snprintf(path, sizeof path, "%s/%s/run.json", dir, t->id);
        return lstat(path, &st) == 0 ? "running" : "queued";
    }
    snprintf(path, sizeof path, "%s/%s/result.json", dir, t->id);
    char *text = readfile_capped(path, path, RESULT_MAX, &st, &len, err, sizeof err);
    json_t *r = text ? json_loadb(text, len, 0, NULL) : NULL;
    const char *s = json_string_value(json_object_get(r, "status"));
    snprintf(buf, buflen, "%s", s && strlen(s) < 32 && !strpbrk(s, " \t\r\n") ? s : "finished");
    json_decref(r);
    free(text);
    return buf;
}

/* Whose the task is (request.json "owner", read as the server reads it), shown as everywhere
 * else (mcp_caller_label): a principal's name, "#" and the start of a caller recorded as a
 * digest, "-" when none is recorded (then only the owner token and hermes:admin reach it). */
static void task_owner(const char *dir, const char *id, char *buf, size_t buflen)
{
    char path[4200], err[300];
    struct stat st;
    size_t len;
    snprintf(path, sizeof path, "%s/%s/request.json", dir, id);
    char *text = readfile_capped(path, path, TASKS_REQUEST_MAX, &st, &len, err, sizeof err);
    json_t *r = text ? tasks_parse(text, len) : NULL;
    mcp_caller_label(json_string_value(json_object_get(r, "owner")), buf, buflen);
    json_decref(r);
    free(text);
}

static long long du_total;

static int du_add(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)path, (void)ftw;
    if (type == FTW_F)
        du_total += (long long)st->st_size;
    return 0;
}

/* Bytes in the task's regular files; links are not followed. */
static long long task_size(const char *dir, const char *id)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, id);
    du_total = 0;
    nftw(path, du_add, 16, FTW_PHYS);
    return du_total;
}

void taskscli_age_text(long long s, char *out, size_t outlen)
{
    if (s < 0)
        s = 0;
    if (s >= 86400)
        snprintf(out, outlen, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
    else if (s >= 3600)
        snprintf(out, outlen, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else if (s >= 60)
        snprintf(out, outlen, "%lldm%02llds", s / 60, s % 60);
    else
        snprintf(out, outlen, "%llds", s);
}

static int by_age(const void *a, const void *b)
{
    const struct retention_task *x = a, *y = b;
    if (x->finished != y->finished)
        return x->finished < y->finished ? -1 : 1;
    return strcmp(x->id, y->id);
}

static int cmd_list(const struct config *c, struct retention_list *l, bool as_json)
{
    time_t now = time(NULL);
    json_t *arr = as_json ? json_array() : NULL;
    qsort(l->tasks, l->n, sizeof *l->tasks, by_age);
    for (size_t i = 0; i < l->n; i++) {
        const struct retention_task *t = &l->tasks[i];
        char buf[40], age[40], owner[80];
        const char *state = task_state(c->tasks_dir, t, buf, sizeof buf);
        long long size = task_size(c->tasks_dir, t->id);
        task_owner(c->tasks_dir, t->id, owner, sizeof owner);
        if (arr) {
            json_array_append_new(arr,
                                  json_pack("{s:s, s:s, s:I, s:I, s:I, s:s}", "id", t->id, "state",
                                            state, "finished", (json_int_t)t->finished, "age_s",
                                            (json_int_t)(now - t->finished), "size",
                                            (json_int_t)size, "owner", owner));
            continue;
        }
        taskscli_age_text((long long)(now - t->finished), age, sizeof age);
        printf("%s %s %s %lld %s\n", t->id, state, age, size, owner);
    }
    if (arr) {
        char *text = json_dumps(arr, JSON_COMPACT);
        puts(text);
        free(text);
        json_decref(arr);
    }
    return 0;
}

static int cmd_prune(const struct config *c, struct retention_list *l, bool dry_run)
{
    size_t total = l->n,
           go = retention_select(l->tasks, l->n, time(NULL), c->tasks_retention_days, c->tasks_max);
    size_t failed = 0;
    int dfd = -1;
    if (!dry_run && go > 0 && (dfd = open(c->tasks_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "hermes-mcp tasks: TASKS_DIR %s: %s\n", c->tasks_dir, strerror(errno));
        return EXIT_FAIL;
    }
    /* A running server's journal may still name these tasks: its checkpoint first, so that
     * none comes back after a crash. */
    char err[512];
    if (dfd >= 0 && taskjournal_settle(c->tasks_dir, 5000, err, sizeof err) < 1) {
        fprintf(stderr, "hermes-mcp tasks: %s\n", err);
        close(dfd);
        return EXIT_FAIL;
    }
    for (size_t i = 0; i < go; i++) {
        const char *id = l->tasks[i].id;
        if (dry_run) {
            printf("would remove %s\n", id);
        } else if (retention_move_out(dfd, id) == 0) {
            printf("removed %s\n", id);
        } else {
            fprintf(stderr, "hermes-mcp tasks: cannot remove %s: %s\n", id, strerror(errno));
            failed++;
        }
    }
    /* The files go last, from the trash (a running server's reaper may be at it too). */
    if (dfd >= 0 && retention_empty_trash(dfd, NULL) < 0) {
        fprintf(stderr, "hermes-mcp tasks: cannot empty %s/%s: %s\n", c->tasks_dir, RETENTION_TRASH,
                strerror(errno));
        failed++;
    }
    if (dfd >= 0)
        close(dfd);
    printf("%s %zu of %zu task%s (TASKS_RETENTION_DAYS=%u, TASKS_MAX=%u)\n",
           dry_run ? "would prune" : "pruned", go - failed, total, total == 1 ? "" : "s",
           c->tasks_retention_days, c->tasks_max);
    return failed ? EXIT_FAIL : 0;
}

int taskscli_main(int argc, char **argv)
{
    struct opts o;
    struct config c;
    struct retention_list l;
    char err[512];

    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (access(o.env_file, F_OK) != 0) {
        fprintf(stderr,
                "hermes-mcp tasks: env file %s not found; pass the one serve reads with "
                "--env-file FILE\n",
                o.env_file);
        return EXIT_USAGE;
    }
    if (!config_load(&c, o.env_file, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp tasks: %s\n", err);
        return EXIT_USAGE;
    }
    if (c.store_url) { /* the records are in the database the replicas share */
        rc = o.list ? tasksdb_list(&c, o.json) : tasksdb_prune(&c, o.dry_run);
        config_cleanup(&c);
        return rc;
    }
    /* What a crashed server journaled first (a running one holds the journal: its files are
     * current). */
    if (taskjournal_recover(c.tasks_dir, err, sizeof err) < 0 ||
        !retention_scan(c.tasks_dir, &l, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp tasks: %s\n", err);
        config_cleanup(&c);
        return EXIT_FAIL;
    }
    rc = o.list ? cmd_list(&c, &l, o.json) : cmd_prune(&c, &l, o.dry_run);
    retention_list_free(&l);
    config_cleanup(&c);
    return rc;
}
