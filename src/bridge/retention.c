/* retention.c — the pruning rule of retention.h. Pure: no file system, no clock, so that the
 * selection (terminal only, in flight never, oldest first) is tested on its own and the same
 * rule serves the server's hourly prune and `hermes-mcp tasks prune`. */
#include "retention.h"

#include "taskpath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A task directory holds the agent's files, a few levels at most; deeper is refused rather than
 * recursed into without bound. */
#define RETENTION_DEPTH_MAX 32

static bool removable(const struct retention_task *t)
{
    return t->terminal && !t->in_flight;
}

/* Removable tasks first, each group oldest first, ties by id for a stable, testable order. */
static int by_removable_then_age(const void *a, const void *b)
{
    const struct retention_task *x = a, *y = b;
    if (removable(x) != removable(y))
        return removable(x) ? -1 : 1;
    if (x->finished != y->finished)
        return x->finished < y->finished ? -1 : 1;
    return strcmp(x->id, y->id);
}

size_t retention_select(struct retention_task *tasks, size_t n, time_t now, unsigned days,
                        unsigned max)
{
    size_t candidates = 0, go = 0;

    if (n == 0)
        return 0;
    qsort(tasks, n, sizeof *tasks, by_removable_then_age);
    while (candidates < n && removable(&tasks[candidates]))
        candidates++;
    if (max > 0 && candidates > max)
        go = candidates - max; /* the oldest beyond the newest max */
    if (days > 0) {
        time_t cutoff = now - (time_t)days * 86400;
        while (go < candidates && tasks[go].finished < cutoff)
            go++;
    }
    return go;
}

/* Empties the directory open as fd (which this closes), entry by entry, relative to fd. */
static int empty_dir(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *e;
    int rc = 0;

    if (d == NULL) {
        close(fd);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = -1;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = depth < RETENTION_DEPTH_MAX
                          ? openat(dirfd(d), e->d_name,
                                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                          : -1;
            if (sub < 0 || empty_dir(sub, depth + 1) != 0 ||
                unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
                rc = -1;
        } else if (unlinkat(dirfd(d), e->d_name, 0) != 0) { /* a symlink goes as a link */
            rc = -1;
        }
    }
    int saved = errno;
    closedir(d);
    errno = saved;
    return rc;
}

int retention_remove_task(int tasks_dirfd, const char *id)
{
    struct stat st;

    if (!taskpath_id_ok(id, strlen(id))) {
        errno = EINVAL;
        return -1;
    }
    if (fstatat(tasks_dirfd, id, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) /* a planted link or file: removed itself, never followed */
        return unlinkat(tasks_dirfd, id, 0);
    int fd = openat(tasks_dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || empty_dir(fd, 0) != 0)
        return -1;
    return unlinkat(tasks_dirfd, id, AT_REMOVEDIR);
}
