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

/* Only the owner may add, rename or replace entries of the folder that holds the file: another
 * user who could would swap in an env file of their own (their token, their agent command). */
static bool holds_the_file_safely(int fd, const char *shown, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot check the folder %s: %s", shown, strerror(errno));
        return false;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "the folder %s belongs to uid %ld, not to this user (uid %ld): another user could "
                 "replace the file in it; run this as its owner or use a folder of your own",
                 shown, (long)st.st_uid, (long)geteuid());
        return false;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen,
                 "the folder %s is writable by its group or others (mode %04o): another user could "
                 "replace the file in it; run chmod go-w %s or use a folder of your own",
                 shown, (unsigned)(st.st_mode & 07777), shown);
        return false;
    }
    return true;
}

/* A folder that will hold a level we create: its owner can rename our level away and put theirs
 * in its place, unless it is ours or root's; others with write access only if it is sticky
 * (/tmp). */
static bool may_hold_a_new_level(int fd, const char *shown, const char *level, char *err,
                                 size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot check the folder %s: %s", shown, strerror(errno));
        return false;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        snprintf(err, errlen,
                 "cannot create the folder %s: %s belongs to uid %ld, who could replace it; use a "
                 "folder of your own",
                 level, shown, (long)st.st_uid);
        return false;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        snprintf(err, errlen,
                 "cannot create the folder %s: %s is writable by its group or others without the "
                 "sticky bit, so they could replace it; use a folder of your own",
                 level, shown);
        return false;
    }
    return true;
}

/* Opens the level name of the folder at (path shows both, for messages), creating it when
 * missing. An existing level may be a symbolic link (~/.config in a dotfiles checkout): the
 * final folder's check sees where it leads. A level we create is opened without following one,
 * so a link put there (before or while we make it) is refused. */
static int open_level(int at, const char *at_shown, const char *path, const char *name, mode_t mode,
                      char *err, size_t errlen)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    if (errno == ENOTDIR) {
        snprintf(err, errlen, "%s is not a folder", path);
        return -1;
    }
    if (errno != ENOENT) {
        snprintf(err, errlen, "cannot open the folder %s: %s", path, strerror(errno));
        return -1;
    }
    if (!may_hold_a_new_level(at, at_shown, path, err, errlen))
        return -1;
    if (mkdirat(at, name, mode) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create the folder %s: %s", path, strerror(errno));
        return -1;
    }
    fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int open_errno = errno;
    struct stat st;
    bool is_link = fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    errno = open_errno;
    if (is_link)
        snprintf(err, errlen,
                 "%s is a symbolic link to a folder that does not exist: refused (a new level is "
                 "never made through a link); remove the link or create its target first",
                 path);
    else if (errno == ENOTDIR)
        snprintf(err, errlen, "%s is not a folder", path);
    else
        snprintf(err, errlen, "cannot open the folder %s: %s", path, strerror(errno));
    return -1;
}

bool atomicfile_mkdirs(const char *dir, mode_t mode, char *err, size_t errlen)
{
    if (*dir == '\0')
        return true;
    char *path = xstrdup(dir);
    const char *start = *path == '/' ? "/" : ".";
    char *shown = xstrdup(start);
    int fd = open(start, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool ok = fd >= 0;
    if (!ok)
        snprintf(err, errlen, "cannot open the folder %s: %s", start, strerror(errno));
    for (char *p = path; ok;) {
        while (*p == '/')
            p++;
        if (*p == '\0')
            break;
        char *end = p + strcspn(p, "/");
        char c = *end;
        *end = '\0';
        int next = open_level(fd, shown, path, p, mode, err, errlen);
        free(shown);
        shown = xstrdup(path);
        *end = c;
        close(fd);
        fd = next;
        ok = fd >= 0;
        p = end;
    }
    if (ok)
        ok = holds_the_file_safely(fd, dir, err, errlen);
    if (fd >= 0)
        close(fd);
    free(shown);
    free(path);
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
    if (atomicfile_sync_dir(dir) < 0) { /* the new name may not outlive a crash */
        snprintf(err, errlen, "cannot fsync the folder of %s: %s", path, strerror(errno));
        goto out;
    }
    ok = true;
out:
    free(tmp);
    free(dir);
    free(copy);
    return ok;
}
