/* notify_sink.c — a fake systemd notify socket for the integration tests.
 *
 *   notify-sink [--times] PATH|@NAME
 *
 * Binds an AF_UNIX datagram socket at PATH (or in the abstract namespace for @NAME), prints
 * "notify-sink ready" once bound, then one line per datagram received: the message with each
 * newline written as "\n" (two characters) and other control bytes as "\xHH". --times puts the
 * time the kernel took the datagram from its sender first ("SECONDS.MICROS message"), so a test
 * can measure the sender's intervals however late it reads them. Stops on SIGTERM or SIGINT
 * (exit 0) and removes PATH. Exit 1 when it cannot bind, 2 for usage errors. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char msg[4096];
    socklen_t len;

    int times = argc == 3 && strcmp(argv[1], "--times") == 0;
    if (times) {
        argc--;
        argv++;
    }
    if (argc != 2 || argv[1][0] == '\0' || strcmp(argv[1], "--help") == 0) {
        fprintf(argc == 2 && argv[1][0] ? stdout : stderr,
                "usage: notify-sink [--times] PATH|@NAME\n");
        return argc == 2 && argv[1][0] ? 0 : 2;
    }
    const char *name = argv[1];
    size_t n = strlen(name);
    if (n >= sizeof sa.sun_path) {
        fprintf(stderr, "notify-sink: socket name too long\n");
        return 2;
    }
    memcpy(sa.sun_path, name, n);
    if (name[0] == '@') {
        sa.sun_path[0] = '\0';
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0) {
        fprintf(stderr, "notify-sink: cannot bind %s: %s\n", name, strerror(errno));
        return 1;
    }
    int on = 1;
    if (times && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on) < 0) {
        fprintf(stderr, "notify-sink: SO_TIMESTAMP: %s\n", strerror(errno));
        return 1;
    }
    struct sigaction act = {.sa_handler = on_signal}; /* no SA_RESTART: recv returns EINTR */
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    printf("notify-sink ready\n");
    fflush(stdout);
    while (!stop) {
        union {
            struct cmsghdr h;
            char space[CMSG_SPACE(sizeof(struct timeval))];
        } ctl;
        struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof ctl};
        ssize_t got = recvmsg(fd, &mh, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "notify-sink: recv: %s\n", strerror(errno));
            break;
        }
        if (times) {
            struct timeval tv = {0, 0};
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMP)
                    memcpy(&tv, CMSG_DATA(c), sizeof tv);
            if (tv.tv_sec == 0)
                gettimeofday(&tv, NULL);
            printf("%lld.%06ld ", (long long)tv.tv_sec, (long)tv.tv_usec);
        }
        for (ssize_t i = 0; i < got; i++) {
            unsigned char c = (unsigned char)msg[i];
            if (c == '\n')
                fputs("\\n", stdout);
            else if (c < 0x20 || c == 0x7f || c == '\\')
                printf("\\x%02x", c);
            else
                putchar(c);
        }
        putchar('\n');
        fflush(stdout);
    }
    close(fd);
    if (name[0] != '@')
        unlink(name);
    return 0;
}
