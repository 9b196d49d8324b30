/* Unit tests for sdnotify.c: socket addresses, watchdog intervals, and real datagrams to a
 * socket bound here (path and abstract), nothing without NOTIFY_SOCKET. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "sdnotify.h"

static int bind_dgram(const char *name)
{
    struct sockaddr_un sa;
    socklen_t len;
    assert_true(sdnotify_address(name, &sa, &len));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
    return fd;
}

static void expect_message(int fd, const char *want)
{
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void expect_nothing(int fd)
{
    char buf[64];
    assert_true(recv(fd, buf, sizeof buf, 0) < 0);
}

static void addresses(void **state)
{
    struct sockaddr_un sa;
    socklen_t len;
    char longname[200];
    (void)state;
    assert_true(sdnotify_address("/run/user/1000/systemd/notify", &sa, &len));
    assert_string_equal(sa.sun_path, "/run/user/1000/systemd/notify");
    assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 30);
    assert_true(sdnotify_address("@abstract", &sa, &len));
    assert_int_equal(sa.sun_path[0], '\0');
    assert_memory_equal(sa.sun_path + 1, "abstract", 8);
    assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 9);
    assert_false(sdnotify_address("relative/path", &sa, &len));
    assert_false(sdnotify_address("vsock:2:1234", &sa, &len));
    assert_false(sdnotify_address("", &sa, &len));
    assert_false(sdnotify_address("@", &sa, &len));
    assert_false(sdnotify_address(NULL, &sa, &len));
    memset(longname, 'a', sizeof longname - 1);
    longname[0] = '/';
    longname[sizeof longname - 1] = '\0';
    assert_false(sdnotify_address(longname, &sa, &len));
}

static void watchdog_intervals(void **state)
{
    (void)state;
    assert_int_equal(sdnotify_watchdog_interval("30000000", NULL, 42), 15000);
    assert_int_equal(sdnotify_watchdog_interval("200000", "", 42), 100);
    assert_int_equal(sdnotify_watchdog_interval("200000", "42", 42), 100);
    assert_int_equal(sdnotify_watchdog_interval("200000", "43", 42), 0);
    assert_int_equal(sdnotify_watchdog_interval("1", NULL, 42), 1);
    assert_int_equal(sdnotify_watchdog_interval("0", NULL, 42), 0);
    assert_int_equal(sdnotify_watchdog_interval(NULL, NULL, 42), 0);
    assert_int_equal(sdnotify_watchdog_interval("-5", NULL, 42), 0);
    assert_int_equal(sdnotify_watchdog_interval("12x", NULL, 42), 0);
    assert_int_equal(sdnotify_watchdog_interval("200000", "x", 42), 0);
}

static void sends_datagrams(void **state)
{
    char path[64], env[32];
    (void)state;
    snprintf(path, sizeof path, "/tmp/hm-notify-%ld", (long)getpid());
    unlink(path);
    int fd = bind_dgram(path);

    unsetenv("NOTIFY_SOCKET");
    setenv("WATCHDOG_USEC", "400000", 1);
    assert_false(sdnotify("READY=1"));
    assert_int_equal(sdnotify_watchdog_ms(), 0); /* no socket, no watchdog */
    expect_nothing(fd);

    setenv("NOTIFY_SOCKET", path, 1);
    assert_true(sdnotify("READY=1\nSTATUS=up"));
    expect_message(fd, "READY=1\nSTATUS=up");
    assert_true(sdnotifyf("STATUS=%d calls", 3));
    expect_message(fd, "STATUS=3 calls");
    assert_true(sdnotify_reloading());
    char buf[128];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "RELOADING=1\nMONOTONIC_USEC="));
    assert_int_equal(sdnotify_watchdog_ms(), 200);
    snprintf(env, sizeof env, "%ld", (long)getpid() + 1);
    setenv("WATCHDOG_PID", env, 1);
    assert_int_equal(sdnotify_watchdog_ms(), 0);
    assert_string_equal(getenv("NOTIFY_SOCKET"), path); /* left for children */

    close(fd);
    unlink(path);
    assert_false(sdnotify("WATCHDOG=1")); /* nobody there: fails, does not crash */
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

static void abstract_socket(void **state)
{
    char name[64];
    (void)state;
    snprintf(name, sizeof name, "@hm-notify-test-%ld", (long)getpid());
    int fd = bind_dgram(name);
    setenv("NOTIFY_SOCKET", name, 1);
    assert_true(sdnotify("STOPPING=1"));
    expect_message(fd, "STOPPING=1");
    setenv("NOTIFY_SOCKET", "not/absolute", 1);
    assert_false(sdnotify("STOPPING=1"));
    expect_nothing(fd);
    unsetenv("NOTIFY_SOCKET");
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(addresses),
        cmocka_unit_test(watchdog_intervals),
        cmocka_unit_test(sends_datagrams),
        cmocka_unit_test(abstract_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
