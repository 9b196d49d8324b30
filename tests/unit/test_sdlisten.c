/* Unit tests for sdlisten.c: a socket on fd 3 with LISTEN_PID/LISTEN_FDS is taken (address,
 * close-on-exec, non-blocking, environment cleared); anything else is refused or ignored. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "sdlisten.h"

static int saved_fd3 = -1;

/* Whatever the runner left on fd 3 is kept aside and put back afterwards. */
static int setup(void **state)
{
    (void)state;
    if (fcntl(3, F_GETFD) >= 0)
        saved_fd3 = fcntl(3, F_DUPFD_CLOEXEC, 10);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(3);
    if (saved_fd3 >= 0) {
        dup2(saved_fd3, 3);
        close(saved_fd3);
    }
    return 0;
}

/* Puts a socket (listening or not) on fd 3 and returns its port. */
static unsigned socket_on_3(int type, bool listening, const char *ip)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, type, 0);
    assert_true(fd >= 0);
    inet_pton(AF_INET, ip, &sa.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    if (listening)
        assert_int_equal(listen(fd, 8), 0);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    if (fd != 3) { /* socket() itself may have returned 3 */
        assert_int_equal(dup2(fd, 3), 3);
        close(fd);
    }
    return ntohs(sa.sin_port);
}

static void set_env(long pid, const char *fds)
{
    char p[32];
    snprintf(p, sizeof p, "%ld", pid);
    setenv("LISTEN_PID", p, 1);
    setenv("LISTEN_FDS", fds, 1);
    setenv("LISTEN_FDNAMES", "hermes-mcp.socket", 1);
}

static void takes_a_listening_socket(void **state)
{
    char host[64], err[256];
    unsigned port = 0;
    int fd;
    (void)state;
    unsigned want = socket_on_3(SOCK_STREAM, true, "127.0.0.1");
    set_env((long)getpid(), "1");
    assert_true(sdlisten_claim(&fd, host, sizeof host, &port, err, sizeof err));
    assert_int_equal(fd, 3);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, want);
    assert_true(fcntl(3, F_GETFD) & FD_CLOEXEC);
    assert_true(fcntl(3, F_GETFL) & O_NONBLOCK);
    assert_null(getenv("LISTEN_PID"));
    assert_null(getenv("LISTEN_FDS"));
    assert_null(getenv("LISTEN_FDNAMES"));
    close(3);
}

static void ignores_what_is_not_ours(void **state)
{
    char host[64], err[256];
    unsigned port = 0;
    int fd = 0;
    (void)state;
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    assert_true(sdlisten_claim(&fd, host, sizeof host, &port, err, sizeof err));
    assert_int_equal(fd, -1);
    socket_on_3(SOCK_STREAM, true, "127.0.0.1");
    set_env((long)getpid() + 1, "1"); /* for another process: left alone */
    assert_true(sdlisten_claim(&fd, host, sizeof host, &port, err, sizeof err));
    assert_int_equal(fd, -1);
    assert_non_null(getenv("LISTEN_FDS"));
    set_env((long)getpid(), "0");
    assert_true(sdlisten_claim(&fd, host, sizeof host, &port, err, sizeof err));
    assert_int_equal(fd, -1);
    assert_null(getenv("LISTEN_FDS"));
    close(3);
}

static void refuses_wrong_sockets(void **state)
{
    char host[64], err[256];
    unsigned port = 0;
    int fd = 0;
    (void)state;
    socket_on_3(SOCK_DGRAM, false, "127.0.0.1");
    set_env((long)getpid(), "1");
    assert_false(sdlisten_claim(&fd, host, sizeof host, &port, err, sizeof err));
    assert_non_null(strstr(err, "not a listening stream socket"));
    assert_null(getenv("LISTEN_FDS"));
    socket_on_3(SOCK_STREAM, false, "127.0.0.1");
    set_env((long)getpid(), "1");
    assert_false(sdlisten_claim(&fd, host, sizeof host, &port, err, sizeof err));
    close(3);
    int p[2];
    assert_int_equal(pipe(p), 0);
    if (p[0] != 3) {
        dup2(p[0], 3);
        close(p[0]);
    }
    close(p[1]);
    set_env((long)getpid(), "1");
    assert_false(sdlisten_claim(&fd, host, sizeof host, &port, err, sizeof err));
    assert_non_null(strstr(err, "not a socket"));
    close(3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(takes_a_listening_socket),
        cmocka_unit_test(ignores_what_is_not_ours),
        cmocka_unit_test(refuses_wrong_sockets),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
