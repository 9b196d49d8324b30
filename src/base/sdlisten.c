/* sdlisten.c — take the listening socket systemd passed (LISTEN_PID / LISTEN_FDS). */
#include "sdlisten.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

static bool parse_count(const char *s, unsigned long *out)
{
    char *end;

    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    *out = strtoul(s, &end, 10);
    return errno == 0 && *end == '\0';
}

static void unset_listen_env(void)
{
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
}

static bool describe(int fd, char *host, size_t hostlen, unsigned *port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int type = 0, listening = 0;
    socklen_t optlen = sizeof type;

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &optlen) < 0) {
        snprintf(err, errlen, "LISTEN_FDS: fd %d is not a socket (%s); check the .socket unit", fd,
                 strerror(errno));
        return false;
    }
    optlen = sizeof listening;
    if (type != SOCK_STREAM || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) < 0 ||
        !listening) {
        snprintf(err, errlen,
                 "LISTEN_FDS: fd %d is not a listening stream socket; use ListenStream= in the "
                 ".socket unit",
                 fd);
        return false;
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
        snprintf(err, errlen,
                 "LISTEN_FDS: fd %d is not a TCP socket; use ListenStream=127.0.0.1:PORT in the "
                 ".socket unit",
                 fd);
        return false;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, host, (socklen_t)hostlen);
        *port = ntohs(a->sin_port);
    } else {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, (socklen_t)hostlen);
        *port = ntohs(a->sin6_port);
    }
    return true;
}

bool sdlisten_claim(int *fd, char *host, size_t hostlen, unsigned *port, char *err, size_t errlen)
{
    unsigned long pid, n;

    *fd = -1;
    if (!parse_count(getenv("LISTEN_PID"), &pid) || pid != (unsigned long)getpid())
        return true; /* not for us (absent, or meant for a parent that exec'd a wrapper) */
    bool counted = parse_count(getenv("LISTEN_FDS"), &n);
    unset_listen_env();
    if (!counted || n == 0)
        return true;
    if (n > 1)
        log_warn("systemd passed %lu sockets; serving on the first (fd %d) only", n, SDLISTEN_FD);
    /* The sockets come without FD_CLOEXEC; none of them is for a child. */
    for (unsigned long i = 0; i < n && i < 1024; i++)
        fcntl(SDLISTEN_FD + (int)i, F_SETFD, FD_CLOEXEC);
    if (!describe(SDLISTEN_FD, host, hostlen, port, err, errlen))
        return false;
    int fl = fcntl(SDLISTEN_FD, F_GETFL);
    if (fl < 0 || fcntl(SDLISTEN_FD, F_SETFL, fl | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "LISTEN_FDS: cannot make fd %d non-blocking: %s", SDLISTEN_FD,
                 strerror(errno));
        return false;
    }
    *fd = SDLISTEN_FD;
    return true;
}
