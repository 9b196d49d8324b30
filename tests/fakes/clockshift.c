/* An LD_PRELOAD shim for tests: time() runs ahead of the real clock by the whole seconds written
 * in the file named by CLOCKSHIFT_FILE (read at every call; no file, or no variable: no shift).
 * A test moves a server's wall clock past a long expiry (the OAuth code's 60 s) at once instead
 * of waiting for it. Only time() is shifted: the event loop's monotonic timers are not.
 * Built by the test that uses it (cc -shared -fPIC). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long shift_seconds(void)
{
    const char *path = getenv("CLOCKSHIFT_FILE");
    char text[32];
    if (path == NULL)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    return strtol(text, NULL, 10);
}

time_t time(time_t *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t t = ts.tv_sec + (time_t)shift_seconds();
    if (out)
        *out = t;
    return t;
}
