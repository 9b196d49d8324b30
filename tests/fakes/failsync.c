/* An LD_PRELOAD shim for tests: a disk whose flush fails once. When the file named by
 * FAILSYNC_FLAG exists, the next call of the function FAILSYNC names (syncfs, fdatasync or
 * fsync) fails with EIO, without flushing, and the flag file is removed (once). Every other
 * call is the real one. While the file FAILSYNC_HOLD names exists, syncfs waits (a checkpoint
 * held back, so that what a test wrote stays journaled). Lets a test check that the server stops on
 * a failed flush instead of carrying on over data the kernel may have dropped. Built by `make
 * fakes` (build/failsync.so, no sanitizer: tests set ASAN_OPTIONS=verify_asan_link_order=0 for the
 * ASan build). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail_now(const char *fn)
{
    const char *which = getenv("FAILSYNC"), *flag = getenv("FAILSYNC_FLAG");
    if (which == NULL || flag == NULL || strcmp(which, fn) != 0 || unlink(flag) != 0)
        return 0;
    errno = EIO;
    return 1;
}

int syncfs(int fd)
{
    const char *hold = getenv("FAILSYNC_HOLD"); /* a checkpoint that waits while it exists */
    while (hold && access(hold, F_OK) == 0)
        usleep(10 * 1000);
    if (fail_now("syncfs"))
        return -1;
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "syncfs");
    return real(fd);
}

int fdatasync(int fd)
{
    if (fail_now("fdatasync"))
        return -1;
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return real(fd);
}

int fsync(int fd)
{
    if (fail_now("fsync"))
        return -1;
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real(fd);
}
