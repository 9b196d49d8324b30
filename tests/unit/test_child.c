/* Unit tests for child.c where the integration tests cannot reach: a process whose fds 0-2
 * are closed gets its pipes on 0-2, and the child must still get each of its three streams
 * (the server holds 0-2 with /dev/null at start, but child.c must not rely on it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "child.h"
#include "loop.h"

struct seen {
    char line[64];
    bool exited;
};

static void on_line(char *line, size_t len, void *arg)
{
    struct seen *s = arg;
    if (s->line[0] == '\0' && len < sizeof s->line)
        memcpy(s->line, line, len + 1);
}

static void on_exited(int status, void *arg)
{
    (void)status;
    ((struct seen *)arg)->exited = true;
}

/* In a forked process (so closing 0-2 leaves the test runner's output alone): the child reads
 * a line on stdin and echoes it on stdout. Exits 0 when the echo arrived. */
static int echo_with_std_fds_closed(void)
{
    struct loop *l = loop_new();
    close(0), close(1), close(2);
    json_t *args = json_pack("[ss]", "-c", "read x; echo \"got $x\"");
    struct child_spec spec = {.name = "echo", .command = "sh", .args = args, .env = NULL};
    struct child_events ev = {.line = on_line, .exited = on_exited};
    struct seen s = {0};
    char err[256];
    struct child *c = child_start(l, &spec, &ev, &s, err, sizeof err);
    if (c == NULL || !child_write(c, "hi\n", 3))
        return 2;
    for (int i = 0; i < 500 && s.line[0] == '\0'; i++)
        loop_once(l, 10);
    int rc = strcmp(s.line, "got hi") == 0 ? 0 : 1;
    child_free(c);
    child_reap_all(2000);
    json_decref(args);
    loop_free(l);
    return rc;
}

static void pipes_on_fds_0_to_2_still_reach_the_child(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(echo_with_std_fds_closed());
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The server raises its soft RLIMIT_NOFILE to the hard limit; a child gets back the limit the
 * server started with (a select()-based upstream breaks above 1024). */
static void a_child_gets_the_fd_limit_the_server_started_with(void **state)
{
    (void)state;
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 1000)
        skip();
    struct rlimit started = {.rlim_cur = 1000 - 7, .rlim_max = rl.rlim_max};
    child_set_fd_limit(&started);
    struct loop *l = loop_new();
    json_t *args = json_pack("[ss]", "-c", "echo \"limit $(ulimit -n)\"");
    struct child_spec spec = {.name = "limit", .command = "sh", .args = args, .env = NULL};
    struct child_events ev = {.line = on_line, .exited = on_exited};
    struct seen s = {0};
    char err[256];
    struct child *c = child_start(l, &spec, &ev, &s, err, sizeof err);
    assert_non_null(c);
    for (int i = 0; i < 500 && s.line[0] == '\0'; i++)
        loop_once(l, 10);
    assert_string_equal(s.line, "limit 993");
    child_free(c);
    child_reap_all(2000);
    json_decref(args);
    loop_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipes_on_fds_0_to_2_still_reach_the_child),
        cmocka_unit_test(a_child_gets_the_fd_limit_the_server_started_with),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
