/* atomicfile.c — temp file, fsync, rename, fsync dir. */
#include "atomicfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"

bool atomicfile_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

int atomicfile_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

bool atomicfile_mkdirs(const char *dir, mode_t mode, char *err, size_t errlen)
{
    if (*dir == '\0')
        return true;
    char *tmp = xstrdup(dir);
    bool ok = true;
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        struct stat st;
        if (mkdir(tmp, mode) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create the folder %s: %s", tmp, strerror(errno));
            ok = false;
        } else if (stat(tmp, &st) < 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s is not a folder", tmp);
            ok = false;
        }
        *p = c;
        if (!ok || c == '\0')
            break;
    }
    free(tmp);
    return ok;
}

bool atomicfile_write(const char *path, const void *data, size_t len, mode_t mode, char *err,
                      size_t errlen)
{
    static unsigned long seq;
    char *copy = xstrdup(path);
    char *dir = xstrdup(dirname(copy));
    free(copy);
    copy = xstrdup(path);
    char *tmp = xasprintf("%s/.%s.tmp.%ld.%lu", dir, basename(copy), (long)getpid(), ++seq);
    bool ok = false;

    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temp file in %s: %s", dir, strerror(errno));
        goto out;
    }
    if (fchmod(fd, mode) < 0 || !atomicfile_write_all(fd, data, len) || fsync(fd) < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
        goto out;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot replace %s: %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    atomicfile_sync_dir(dir);
    ok = true;
out:
    free(tmp);
    free(dir);
    free(copy);
    return ok;
}
