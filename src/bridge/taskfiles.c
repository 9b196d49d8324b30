/* taskfiles.c — hermes_files' reading of a task directory (tasks.h, tasks_files): a listing
 * bounded in entries and depth, or one UTF-8 text file; links are never followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "taskpath.h"
#include "tasks.h"
#include "utf8.h"

bool tasks_text_ok(const char *p, size_t n)
{
    return utf8_valid(p, n); /* pure: the store's walker calls it on its own thread */
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
        json_array_append_new(ls->entries, json_pack("{s:o, s:s, s:I, s:I}", "path", name, "type",
                                                     dir ? "dir" : "file", "size",
                                                     (json_int_t)(dir ? 0 : st.st_size), "mtime",
                                                     (json_int_t)st.st_mtime));
        if (dir && depth < 8)
            list_dir(ls, child, depth + 1);
    }
    closedir(d);
}

enum tasks_rc tasks_files(struct tasks *t, const char *id, const char *rel, json_t **out, char *why,
                          size_t whylen)
{
    char taskdir[PATH_MAX], path[PATH_MAX * 2], real[PATH_MAX];
    struct stat st;

    if (!taskpath_id_ok(id, strlen(id))) {
        snprintf(why, whylen, "invalid task id");
        return TASKS_INVALID;
    }
    snprintf(taskdir, sizeof taskdir, "%s/%s", tasks_dir(t), id);
    if (lstat(taskdir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "no task with this id");
        return TASKS_NOT_FOUND;
    }
    snprintf(path, sizeof path, "%s%s%s", taskdir, *rel ? "/" : "", rel);
    /* A dot file or folder is not listed (our temp files are dot files): nor is it read. */
    if (*rel == '.' || strstr(rel, "/.") || lstat(path, &st) < 0) {
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
        *out =
            json_pack("{s:s, s:s, s:o, s:I, s:b}", "id", id, "path", rel, "entries", ls.entries,
                      "count", (json_int_t)json_array_size(ls.entries), "truncated", ls.truncated);
        return TASKS_OK;
    }
    char *data;
    size_t len;
    enum tasks_rc rc = tasks_read_capped(path, TASKS_FILE_MAX, &data, &len, &st);
    if (rc == TASKS_TOO_BIG) {
        snprintf(why, whylen, "file is larger than %d KiB", TASKS_FILE_MAX / 1024);
        return rc;
    }
    if (rc != TASKS_OK) {
        snprintf(why, whylen, "only regular files can be read");
        return rc;
    }
    if (!tasks_text_ok(data, len)) {
        free(data);
        snprintf(why, whylen, "only UTF-8 text files without NUL bytes can be read");
        return TASKS_INVALID;
    }
    *out =
        json_pack("{s:s, s:s, s:I, s:I, s:s, s:s%}", "id", id, "path", rel, "size", (json_int_t)len,
                  "mtime", (json_int_t)st.st_mtime, "encoding", "utf-8", "content", data, len);
    free(data);
    return TASKS_OK;
}
