/* taskplace.c — the tasks root marked as a top directory.
 *
 * ext4 puts a new directory near its parent's inodes and a new file near its directory's. On ext4
 * without a journal each inode allocation also steps, one by one, over every inode freed in that
 * group in the last minutes (the kernel's recently_deleted(), which keeps a crash from mixing an
 * old file with a new one): after a prune, or beside other work deleting files there, each new
 * task directory and file cost a scan of thousands of inodes on the writer thread, and that scan
 * was most of a batch's time (measured in bench/RESULTS.md). Marked as the top of a hierarchy,
 * the root gets its task directories spread over the groups, each task's files follow its
 * directory, and the scan finds a free inode at once. It is a placement hint and nothing more:
 * what is written, and when it is durable, does not change. */
#include "taskplace.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "log.h"

bool taskplace_spread(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    int flags = 0; /* the kernel reads and writes an int, whatever the ioctl's declared type */
    bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok && !(flags & FS_TOPDIR_FL)) {
        flags |= FS_TOPDIR_FL;
        ok = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
        if (!ok)
            log_debug("TASKS_DIR %s: not marked as a top directory: %s", dir, strerror(errno));
    }
    close(fd);
    return ok;
}
