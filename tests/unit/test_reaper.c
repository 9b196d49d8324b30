/* Unit tests for reaper.c: as a subreaper the process keeps a command that detached (setsid and
 * a double fork) among its descendants, so the control socket still refuses it; the adopted
 * orphan is reaped when it exits (also one leading its own process group in our session, as
 * `timeout` or a shell's job control makes it), a child its owner claims (the gateway's) is
 * left to that owner.
 * A file of its own: the subreaper setting stays with the process. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctlsock.h"
#include "loop.h"
#include "reaper.h"

static char state_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *end = strrchr(buf, ')');
    return end ? end[2] : '?';
}

static void wait_zombie(pid_t pid)
{
    for (int i = 0; i < 500 && state_of(pid) != 'Z'; i++)
        usleep(2000);
    assert_int_equal(state_of(pid), 'Z');
}

static pid_t claimed; /* the child "the gateway" reaps itself */

static bool owns(pid_t pid)
{
    return pid == claimed;
}

/* A grandchild whose parent exits at once, so we adopt it: in a new session (`setsid -f`) or
 * leading its own process group in ours (`timeout`, `set -m`); it exits when hold closes. */
static pid_t orphan(int hold[2], bool new_session)
{
    int report[2];
    assert_int_equal(pipe(report), 0);
    pid_t child = fork();
    if (child == 0) {
        pid_t gc = fork();
        if (gc == 0) {
            if (new_session)
                setsid();
            else
                setpgid(0, 0);
            close(hold[1]);
            char c;
            ssize_t got = read(hold[0], &c, 1);
            _exit((int)got);
        }
        ssize_t w = write(report[1], &gc, sizeof gc);
        _exit(w == sizeof gc ? 0 : 1);
    }
    pid_t gc = 0;
    assert_int_equal(read(report[0], &gc, sizeof gc), sizeof gc);
    waitpid(child, NULL, 0);
    close(report[0]);
    close(report[1]);
    assert_true(gc > 0);
    return gc;
}

static void a_detached_command_stays_below_and_is_reaped(void **state)
{
    (void)state;
    struct loop *l = loop_new();
    struct reaper *r = reaper_start(l, owns);
    assert_non_null(r);

    int hold[2];
    assert_int_equal(pipe(hold), 0);
    pid_t detached = orphan(hold, true), grouped = orphan(hold, false);
    assert_true(ctlsock_pid_descends_from(detached, getpid())); /* adopted by us, not init */
    assert_true(ctlsock_pid_descends_from(grouped, getpid()));

    /* A child of ours that its owner reaps, as the gateway reaps its upstreams. */
    pid_t owned = fork();
    if (owned == 0) {
        close(hold[1]);
        char c;
        ssize_t got = read(hold[0], &c, 1);
        _exit((int)got);
    }
    setpgid(owned, owned); /* as child.c starts them */
    claimed = owned;

    close(hold[0]);
    close(hold[1]); /* all exit */
    wait_zombie(detached);
    wait_zombie(grouped);
    wait_zombie(owned);
    assert_int_equal(reaper_collect(owns), 2);
    assert_int_equal(state_of(detached), '?'); /* reaped: gone */
    assert_int_equal(state_of(grouped), '?');
    assert_int_equal(state_of(owned), 'Z'); /* left to its owner */
    assert_int_equal(waitpid(owned, NULL, WNOHANG), owned);
    reaper_free(r);
    loop_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_detached_command_stays_below_and_is_reaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
