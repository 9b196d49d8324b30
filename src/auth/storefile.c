/* storefile.c — the lock and the change check behind storefile.h. flock(2) on a separate lock
 * file, because the store itself is replaced by rename on every write and a lock on the old
 * inode would guard nothing. */
#include "storefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"

/* Without the lock the change goes ahead unguarded (a concurrent `oauth` command may then lose
 * its write), so the reason is logged rather than the request refused. */
int storefile_lock(const char *path)
{
    char *lock = xasprintf("%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        log_warn("oauth: cannot open the lock file %s: %s", lock, strerror(errno));
    free(lock);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            log_warn("oauth: cannot lock %s.lock: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    return fd;
}

void storefile_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the flock */
}

void storefile_id_of(const struct stat *st, struct storefile_id *id)
{
    memset(id, 0, sizeof *id);
    if (st == NULL)
        return;
    id->exists = true;
    id->dev = st->st_dev;
    id->ino = st->st_ino;
    id->size = st->st_size;
    id->mtime = st->st_mtim;
}

void storefile_note(const char *path, struct storefile_id *id)
{
    struct stat st;
    storefile_id_of(stat(path, &st) == 0 ? &st : NULL, id);
}

bool storefile_changed(const char *path, const struct storefile_id *id)
{
    struct storefile_id now;
    storefile_note(path, &now);
    return now.exists != id->exists ||
           (now.exists &&
            (now.dev != id->dev || now.ino != id->ino || now.size != id->size ||
             now.mtime.tv_sec != id->mtime.tv_sec || now.mtime.tv_nsec != id->mtime.tv_nsec));
}
