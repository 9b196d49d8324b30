/* sdnotify.c — sd_notify(3) by hand: one AF_UNIX datagram per message, a fresh socket each time
 * (messages are rare: start, reload, stop, and the watchdog every few seconds). */
#include "sdnotify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define MESSAGE_MAX 1024

bool sdnotify_address(const char *name, struct sockaddr_un *sa, socklen_t *len)
{
    size_t n;

    if (name == NULL || (name[0] != '/' && name[0] != '@'))
        return false; /* also "vsock:...", which only VMs use */
    n = strlen(name);
    if (n < 2 || n > sizeof sa->sun_path - (name[0] == '/'))
        return false;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, name, n);
    if (name[0] == '@') {
        /* Abstract namespace: a leading NUL, and the length says where the name ends. */
        sa->sun_path[0] = '\0';
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return true;
}

bool sdnotify(const char *state)
{
    static bool warned;
    struct sockaddr_un sa;
    socklen_t len;
    const char *name = getenv("NOTIFY_SOCKET");

    if (name == NULL || *name == '\0')
        return false;
    if (!sdnotify_address(name, &sa, &len)) {
        if (!warned)
            log_warn("NOTIFY_SOCKET is not an absolute path or @name; not notifying systemd");
        warned = true;
        return false;
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
    int saved = errno;
    close(fd);
    errno = saved;
    if (n == (ssize_t)strlen(state))
        return true;
fail:
    if (!warned)
        log_warn("cannot notify systemd at %s: %s", name, strerror(errno));
    warned = true;
    return false;
}

bool sdnotifyf(const char *fmt, ...)
{
    char msg[MESSAGE_MAX];
    va_list ap;

    if (getenv("NOTIFY_SOCKET") == NULL)
        return false;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sdnotify(msg);
}

bool sdnotify_reloading(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return sdnotifyf("RELOADING=1\nMONOTONIC_USEC=%llu",
                     (unsigned long long)ts.tv_sec * 1000000ull +
                         (unsigned long long)ts.tv_nsec / 1000ull);
}

static bool parse_u64(const char *s, unsigned long long *out)
{
    char *end;

    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}

unsigned sdnotify_watchdog_interval(const char *usec, const char *pid, pid_t self)
{
    unsigned long long us, p;

    if (!parse_u64(usec, &us) || us == 0)
        return 0;
    if (pid != NULL && *pid != '\0' && (!parse_u64(pid, &p) || p != (unsigned long long)self))
        return 0;                         /* meant for another process (our parent, say) */
    unsigned long long ms = us / 2000ull; /* half the timeout, as sd_watchdog_enabled(3) says */
    if (ms == 0)
        ms = 1;
    return ms > 3600000ull ? 3600000u : (unsigned)ms;
}

unsigned sdnotify_watchdog_ms(void)
{
    if (getenv("NOTIFY_SOCKET") == NULL)
        return 0;
    return sdnotify_watchdog_interval(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid());
}
