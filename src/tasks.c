/* tasks.c — task directory I/O: atomic writes, capped reads, safe file access. */
#include "tasks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "log.h"
#include "mem.h"
#include "taskpath.h"

struct tasks {
    char *dir;  /* as configured */
    char *real; /* realpath of dir, for containment checks */
};

static int mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, mode) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

struct tasks *tasks_open(const char *dir, char *err, size_t errlen)
{
    char real[PATH_MAX];
    if (mkdir_p(dir, 0700) < 0 || realpath(dir, real) == NULL) {
        snprintf(err, errlen, "TASKS_DIR %s: %s", dir, strerror(errno));
        return NULL;
    }
    struct tasks *t = xcalloc(1, sizeof *t);
    t->dir = xstrdup(dir);
    t->real = xstrdup(real);
    return t;
}

void tasks_free(struct tasks *t)
{
    if (t == NULL)
        return;
    free(t->dir);
    free(t->real);
    free(t);
}

const char *tasks_dir(const struct tasks *t)
{
    return t->real;
}

static bool id_ok(const char *id)
{
    return taskpath_id_ok(id, strlen(id));
}

enum tasks_rc tasks_write(struct tasks *t, const char *id, const char *name, json_t *json)
{
    char dir[PATH_MAX], final[PATH_MAX + 64], err[PATH_MAX + 128];

    if (!id_ok(id))
        return TASKS_INVALID;
    snprintf(dir, sizeof dir, "%s/%s", t->real, id);
    if (mkdir(dir, 0700) == 0)
        atomicfile_sync_dir(t->real); /* the new task directory itself must survive a crash */
    else if (errno != EEXIST) {
        log_error("cannot create task directory for %s: %s", id, strerror(errno));
        return TASKS_IO;
    }
    snprintf(final, sizeof final, "%s/%s", dir, name);
    char *text = json_dumps(json, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    size_t len = strlen(text);
    char *line = xasprintf("%s\n", text);
    bool ok = atomicfile_write(final, line, len + 1, 0600, err, sizeof err);
    if (!ok)
        log_error("task %s: %s", id, err);
    free(line);
    free(text);
    return ok ? TASKS_OK : TASKS_IO;
}

/* Reads a regular file (no symlink) of at most max bytes. */
static enum tasks_rc read_capped(const char *path, size_t max, char **data, size_t *len,
                                 struct stat *st)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? TASKS_NOT_FOUND : errno == ELOOP ? TASKS_INVALID : TASKS_IO;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return TASKS_INVALID;
    }
    if ((size_t)st->st_size > max) {
        close(fd);
        return TASKS_TOO_BIG;
    }
    size_t cap = (size_t)st->st_size + 1; /* one more byte tells us the file grew */
    char *p = xmalloc(cap + 1);
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (n > (size_t)st->st_size) {
        free(p);
        close(fd);
        return TASKS_TOO_BIG;
    }
    close(fd);
    p[n] = '\0';
    *data = p;
    *len = n;
    return TASKS_OK;
}

enum tasks_rc tasks_read(struct tasks *t, const char *id, const char *name, size_t max,
                         json_t **out)
{
    char path[PATH_MAX + 64];
    char *data;
    size_t len;
    struct stat st;

    if (!id_ok(id))
        return TASKS_INVALID;
    snprintf(path, sizeof path, "%s/%s/%s", t->real, id, name);
    enum tasks_rc rc = read_capped(path, max, &data, &len, &st);
    if (rc != TASKS_OK)
        return rc;
    *out = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
    free(data);
    return *out ? TASKS_OK : TASKS_INVALID;
}

bool tasks_exists(struct tasks *t, const char *id)
{
    char path[PATH_MAX + 8];
    struct stat st;
    if (!id_ok(id))
        return false;
    snprintf(path, sizeof path, "%s/%s", t->real, id);
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void tasks_remove(struct tasks *t, const char *id, const char *name)
{
    char path[PATH_MAX + 64];
    if (!id_ok(id))
        return;
    snprintf(path, sizeof path, "%s/%s/%s", t->real, id, name);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s", t->real, id);
    rmdir(path); /* only if that left it empty: a task that never started leaves nothing */
}

static bool utf8_text(const char *p, size_t n)
{
    if (memchr(p, '\0', n))
        return false;
    json_t *s = json_stringn(p, n); /* validates UTF-8 */
    bool ok = s != NULL;
    json_decref(s);
    return ok;
}

struct lister {
    json_t *entries;
    bool truncated;
    char root[PATH_MAX];
};

static void list_dir(struct lister *ls, const char *rel, int depth)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s%s%s", ls->root, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    struct dirent *e;
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || e->d_name[0] == '.')
            continue; /* dot files are our temp files */
        if (json_array_size(ls->entries) >= TASKS_LIST_MAX) {
            ls->truncated = true;
            break;
        }
        char child[PATH_MAX * 2], full[PATH_MAX * 3];
        struct stat st;
        snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", ls->root, child);
        if (lstat(full, &st) < 0 || S_ISLNK(st.st_mode))
            continue; /* symlinks are never shown or followed */
        json_t *name = json_string(child);
        if (name == NULL)
            continue; /* not UTF-8 */
        bool dir = S_ISDIR(st.st_mode);
        json_array_append_new(ls->entries,
                              json_pack("{s:o, s:s, s:I, s:I}", "path", name, "type",
                                        dir ? "dir" : "file", "size",
                                        (json_int_t)(dir ? 0 : st.st_size), "mtime",
                                        (json_int_t)st.st_mtime));
        if (dir && depth < 8)
            list_dir(ls, child, depth + 1);
    }
    closedir(d);
}

enum tasks_rc tasks_files(struct tasks *t, const char *id, const char *rel, json_t **out,
                          char *why, size_t whylen)
{
    char taskdir[PATH_MAX], path[PATH_MAX * 2], real[PATH_MAX];
    struct stat st;

    if (!id_ok(id)) {
        snprintf(why, whylen, "invalid task id");
        return TASKS_INVALID;
    }
    snprintf(taskdir, sizeof taskdir, "%s/%s", t->real, id);
    if (lstat(taskdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "no task with this id");
        return TASKS_NOT_FOUND;
    }
    snprintf(path, sizeof path, "%s%s%s", taskdir, *rel ? "/" : "", rel);
    if (lstat(path, &st) < 0) {
        snprintf(why, whylen, "no such file in this task");
        return TASKS_NOT_FOUND;
    }
    /* No symlink anywhere: the resolved path must be the literal one, inside the task. */
    if (realpath(path, real) == NULL || strcmp(real, path) != 0 ||
        strncmp(real, taskdir, strlen(taskdir)) != 0) {
        snprintf(why, whylen, "symbolic links are not followed");
        return TASKS_INVALID;
    }
    if (S_ISDIR(st.st_mode)) {
        struct lister ls = {.entries = json_array()};
        snprintf(ls.root, sizeof ls.root, "%s", taskdir);
        list_dir(&ls, rel, 0);
        *out = json_pack("{s:s, s:s, s:o, s:I, s:b}", "id", id, "path", rel, "entries",
                         ls.entries, "count", (json_int_t)json_array_size(ls.entries),
                         "truncated", ls.truncated);
        return TASKS_OK;
    }
    char *data;
    size_t len;
    enum tasks_rc rc = read_capped(path, TASKS_FILE_MAX, &data, &len, &st);
    if (rc == TASKS_TOO_BIG) {
        snprintf(why, whylen, "file is larger than %d KiB", TASKS_FILE_MAX / 1024);
        return rc;
    }
    if (rc != TASKS_OK) {
        snprintf(why, whylen, "only regular files can be read");
        return rc;
    }
    if (!utf8_text(data, len)) {
        free(data);
        snprintf(why, whylen, "only UTF-8 text files without NUL bytes can be read");
        return TASKS_INVALID;
    }
    *out = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s%}", "id", id, "path", rel, "size",
                     (json_int_t)len, "mtime", (json_int_t)st.st_mtime, "encoding", "utf-8",
                     "content", data, len);
    free(data);
    return TASKS_OK;
}

void tasks_each(struct tasks *t, void (*fn)(const char *id, void *arg), void *arg)
{
    DIR *d = opendir(t->real);
    struct dirent *e;
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL)
        if (taskpath_id_ok(e->d_name, strlen(e->d_name)))
            fn(e->d_name, arg);
    closedir(d);
}
