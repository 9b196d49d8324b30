/* listen_exec.c — start a program the way systemd socket activation does, for the tests.
 *
 *   listen-exec [--host ADDR] [--port N] [--dgram] [--no-listen] [--other-pid] -- PROG [ARG]...
 *
 * Opens a socket on ADDR:N (default 127.0.0.1:0, a free port), listening unless --no-listen,
 * a UDP one with --dgram; puts it on fd 3 without FD_CLOEXEC; sets LISTEN_FDS=1,
 * LISTEN_FDNAMES=hermes-mcp.socket and LISTEN_PID to its own pid (exec keeps it; --other-pid
 * names another process instead); prints "listen-exec: ADDR PORT" on stderr; then execs PROG.
 * Exit 1 when the socket or exec fails, 2 for usage errors. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "usage: listen-exec [--host ADDR] [--port N] [--dgram] [--no-listen] "
                    "[--other-pid] -- PROG [ARG]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *port = "0";
    int dgram = 0, no_listen = 0, other_pid = 0, i;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host") && i + 1 < argc)
            host = argv[++i];
        else if (!strcmp(argv[i], "--port") && i + 1 < argc)
            port = argv[++i];
        else if (!strcmp(argv[i], "--dgram"))
            dgram = 1;
        else if (!strcmp(argv[i], "--no-listen"))
            no_listen = 1;
        else if (!strcmp(argv[i], "--other-pid"))
            other_pid = 1;
        else if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else
            return usage();
    }
    if (i >= argc)
        return usage();

    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = dgram ? SOCK_DGRAM : SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "listen-exec: %s: %s\n", host, gai_strerror(rc));
        return 1;
    }
    int fd = socket(res->ai_family, res->ai_socktype, 0), one = 1;
    if (fd < 0) {
        fprintf(stderr, "listen-exec: socket: %s\n", strerror(errno));
        return 1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
        (!dgram && !no_listen && listen(fd, 128) < 0)) {
        fprintf(stderr, "listen-exec: bind/listen %s:%s: %s\n", host, port, strerror(errno));
        return 1;
    }
    freeaddrinfo(res);

    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char addr[INET6_ADDRSTRLEN] = "?";
    unsigned p = 0;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
        p = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof addr);
        p = ntohs(a->sin6_port);
    }
    if (fd != 3) {
        if (dup2(fd, 3) < 0) {
            fprintf(stderr, "listen-exec: dup2: %s\n", strerror(errno));
            return 1;
        }
        close(fd);
    }
    fcntl(3, F_SETFD, 0); /* systemd passes its sockets without close-on-exec */

    char pid[32];
    snprintf(pid, sizeof pid, "%ld", other_pid ? (long)getppid() : (long)getpid());
    setenv("LISTEN_PID", pid, 1);
    setenv("LISTEN_FDS", "1", 1);
    setenv("LISTEN_FDNAMES", "hermes-mcp.socket", 1);
    fprintf(stderr, "listen-exec: %s %u\n", addr, p);
    execvp(argv[i], argv + i);
    fprintf(stderr, "listen-exec: cannot run %s: %s\n", argv[i], strerror(errno));
    return 1;
}
