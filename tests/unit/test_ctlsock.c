/* Unit tests for ctlsock.c: the line protocol (bounded, garbage refused), the peer-credential
 * check, and the socket itself driven on a loop (mode 600, stale file replaced, unsafe directory
 * and live server refused, approve/deny/list answered, oversize line refused). */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "approvals.h"
#include "ctlsock.h"
#include "loop.h"

static bool parses(const char *line, struct ctl_request *r)
{
    const char *err = NULL;
    bool ok = ctlsock_parse_request(line, strlen(line), r, &err);
    if (!ok)
        assert_non_null(err);
    return ok;
}

static void the_protocol_takes_exactly_its_requests(void **state)
{
    (void)state;
    struct ctl_request r;
    assert_true(parses("{\"op\":\"list\"}", &r));
    assert_int_equal(r.op, CTL_LIST);
    assert_true(parses("{\"op\":\"approve\",\"id\":\"abc\"}", &r));
    assert_int_equal(r.op, CTL_APPROVE);
    assert_string_equal(r.id, "abc");
    assert_true(parses("{\"op\":\"deny\",\"id\":\"abc\",\"reason\":\"no\"}", &r));
    assert_int_equal(r.op, CTL_DENY);
    assert_string_equal(r.reason, "no");
    assert_true(parses("{\"op\":\"status\"}", &r));
    assert_int_equal(r.op, CTL_STATUS);

    const char *garbage[] = {
        "{\"op\":\"status\",\"id\":\"a\"}",
        "",
        "not json",
        "[]",
        "{}",
        "{\"op\":1}",
        "{\"op\":\"list\",\"x\":1}",
        "{\"op\":\"approve\"}",
        "{\"op\":\"approve\",\"id\":\"\"}",
        "{\"op\":\"approve\",\"id\":7}",
        "{\"op\":\"approve\",\"id\":\"a\",\"reason\":\"r\"}", /* a reason only with deny */
        "{\"op\":\"show\",\"id\":\"a\",\"reason\":\"r\"}",
        "{\"op\":\"show\"}",
        "{\"op\":\"approve\",\"id\":\"a\",\"confirmed\":true}",
        "{\"op\":\"deny\",\"id\":\"a\",\"reason\":\"a\\u0000b\"}",
        "{\"op\":\"approve\",\"id\":\"a\",\"id\":\"b\"}",
        "{\"op\":\"destroy\",\"id\":\"a\"}"};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
        assert_false(parses(garbage[i], &r));

    char id[200];
    memset(id, 'a', sizeof id);
    id[CTL_ID_MAX + 1] = '\0';
    char line[CTL_LINE_MAX + 64];
    snprintf(line, sizeof line, "{\"op\":\"approve\",\"id\":\"%s\"}", id);
    assert_false(parses(line, &r));
    char reason[CTL_REASON_MAX + 2];
    memset(reason, 'r', sizeof reason - 1);
    reason[sizeof reason - 1] = '\0';
    snprintf(line, sizeof line, "{\"op\":\"deny\",\"id\":\"a\",\"reason\":\"%s\"}", reason);
    assert_false(parses(line, &r));
    const char *err;
    assert_false(ctlsock_parse_request(line, CTL_LINE_MAX + 1, &r, &err));
    assert_string_equal(err, "line_too_long");
}

static void only_our_own_uid_is_heard(void **state)
{
    (void)state;
    assert_true(ctlsock_uid_allowed(true, 1000, 1000));
    assert_false(ctlsock_uid_allowed(true, 1001, 1000));
    assert_false(ctlsock_uid_allowed(true, 0, 1000));     /* not even root */
    assert_false(ctlsock_uid_allowed(false, 1000, 1000)); /* no credentials: closed */

    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    uid_t peer;
    assert_true(ctlsock_peer_allowed(sv[0], geteuid(), &peer));
    assert_int_equal(peer, geteuid());
    assert_false(ctlsock_peer_allowed(sv[0], geteuid() + 1, &peer));
    close(sv[0]);
    close(sv[1]);
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_false(ctlsock_peer_allowed(p[0], geteuid(), &peer)); /* not a socket: no credentials */
    close(p[0]);
    close(p[1]);
}

struct fixture {
    char dir[32], path[80];
    struct loop *l;
    struct approvals *q;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ctlsockXXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/.env%s", f->dir, CTL_SOCKET_SUFFIX);
    f->l = loop_new();
    f->q = approvals_new(f->l, 600);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    approvals_free(f->q);
    loop_free(f->l);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Sends text on a fresh connection and runs the loop until the server closes it. */
static char *ask(struct fixture *f, const char *text, size_t n)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    size_t sent = 0;
    static char got[65536];
    size_t have = 0;
    for (int i = 0; i < 200; i++) {
        if (sent < n) {
            ssize_t w = send(fd, text + sent, n - sent, MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
        }
        loop_once(f->l, 20);
        ssize_t r = read(fd, got + have, sizeof got - 1 - have);
        if (r > 0)
            have += (size_t)r;
        else if (r == 0)
            break;
    }
    close(fd);
    got[have] = '\0';
    return got;
}

static int outcome_seen = -1;
static void on_outcome(void *arg, enum approval_outcome o, const char *reason, const char *who)
{
    (void)arg;
    (void)reason;
    assert_non_null(strstr(who, "uid "));
    outcome_seen = (int)o;
}

static void the_socket_answers_the_queue(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    struct stat st;
    assert_int_equal(lstat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    const char *id = approvals_add(f->q, "alice", "fs.write", NULL, on_outcome, NULL);
    char idc[32];
    snprintf(idc, sizeof idc, "%s", id);
    char *got = ask(f, "{\"op\":\"list\"}\n", 14);
    assert_non_null(strstr(got, idc));
    assert_non_null(strstr(got, "\"ok\":true"));

    char showline[128];
    int sn = snprintf(showline, sizeof showline, "{\"op\":\"show\",\"id\":\"%s\"}\n", idc);
    got = ask(f, showline, (size_t)sn);
    assert_non_null(strstr(got, "\"arguments\":\"{}\""));
    assert_non_null(strstr(got, "\"tool\":\"fs.write\""));
    got = ask(f, "{\"op\":\"show\",\"id\":\"0000000000000000\"}\n", 38);
    assert_non_null(strstr(got, "unknown_id"));
    got = ask(f, "{\"op\":\"approve\",\"id\":\"0000000000000000\"}\n", 41);
    assert_non_null(strstr(got, "unknown_id"));
    assert_int_equal(outcome_seen, -1);

    char line[128];
    int n = snprintf(line, sizeof line, "{\"op\":\"deny\",\"id\":\"%s\",\"reason\":\"no\"}\n", idc);
    got = ask(f, line, (size_t)n);
    assert_non_null(strstr(got, "\"ok\":true"));
    assert_int_equal(outcome_seen, APPROVAL_DENIED);
    assert_int_equal(approvals_pending(f->q), 0);

    static char big[CTL_LINE_MAX * 3];
    memset(big, ' ', sizeof big);
    got = ask(f, big, sizeof big);
    assert_non_null(strstr(got, "line_too_long"));
    got = ask(f, "garbage\n", 8);
    assert_non_null(strstr(got, "bad_request"));

    /* A second server on the same path is refused while the first one lives. */
    err[0] = '\0';
    assert_null(ctlsock_new(f->l, f->path, f->q, err, sizeof err));
    assert_non_null(strstr(err, "another server"));
    ctlsock_free(s);
    assert_int_not_equal(lstat(f->path, &st), 0); /* removed */
}

static void a_stale_socket_is_replaced_but_nothing_else(void **state)
{
    struct fixture *f = *state;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd); /* bound, never listening: what a dead server leaves */
    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    ctlsock_free(s);

    FILE *file = fopen(f->path, "w");
    fclose(file);
    assert_null(ctlsock_new(f->l, f->path, f->q, err, sizeof err));
    assert_non_null(strstr(err, "not a socket"));
    unlink(f->path);

    chmod(f->dir, 0777);
    assert_null(ctlsock_new(f->l, f->path, f->q, err, sizeof err));
    assert_non_null(strstr(err, "not writable"));
    chmod(f->dir, 0700);
}

/* Connects to path, sends line, reads the answer (at most 2 s) into out; in a forked process. */
static void child_ask(const char *path, const char *line, int out)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        ssize_t w = write(out, "connect failed", 14);
        (void)w;
        _exit(1);
    }
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t w = send(fd, line, strlen(line), MSG_NOSIGNAL);
    (void)w;
    char buf[512];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        w = write(out, buf, (size_t)r);
    _exit(0);
}

enum asker { CHILD, ORPHAN, ORPHAN_OTHER_UID };

/* Asks the socket from another process while this one runs the server's loop: a child of ours,
 * or an orphan (double fork, reparented away from us) with our uid or uid 65534. */
static char *ask_from(struct fixture *f, enum asker who, const char *line)
{
    static char got[4096];
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(p[0]);
        if (who != CHILD) {
            pid_t me = getpid();
            if (fork() != 0)
                _exit(0);
            while (getppid() == me) /* until the orphan is no longer below the test */
                usleep(1000);
            if (who == ORPHAN_OTHER_UID && setresuid(65534, 65534, 65534) != 0)
                _exit(1);
        }
        child_ask(f->path, line, p[1]);
    }
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    size_t have = 0;
    for (int i = 0; i < 400; i++) {
        loop_once(f->l, 10);
        ssize_t r = read(p[0], got + have, sizeof got - 1 - have);
        if (r > 0)
            have += (size_t)r;
        else if (r == 0)
            break;
    }
    close(p[0]);
    waitpid(child, NULL, 0);
    got[have] = '\0';
    return got;
}

static void a_process_the_server_started_cannot_decide(void **state)
{
    struct fixture *f = *state;
    int hold[2];
    assert_int_equal(pipe(hold), 0);
    pid_t child = fork();
    if (child == 0) {
        close(hold[1]);
        if (fork() == 0) { /* grandchild: waits like the child until the pipe closes */
            char c;
            ssize_t r = read(hold[0], &c, 1);
            _exit((int)r);
        }
        char c;
        ssize_t r = read(hold[0], &c, 1);
        _exit((int)r);
    }
    close(hold[0]);
    /* The grandchild's pid: the child's only child, from /proc. */
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)child, (int)child);
    for (int i = 0; i < 200 && !buf[0]; i++) {
        FILE *fp = fopen(path, "r");
        if (fp) {
            if (!fgets(buf, sizeof buf, fp))
                buf[0] = '\0';
            fclose(fp);
        }
        if (!buf[0])
            usleep(5000);
    }
    pid_t grandchild = (pid_t)atoi(buf);
    assert_true(grandchild > 0);
    assert_true(ctlsock_pid_descends_from(child, getpid()));
    assert_true(ctlsock_pid_descends_from(grandchild, getpid()));
    assert_false(ctlsock_pid_descends_from(getpid(), getpid())); /* the CLI the operator runs */
    assert_false(ctlsock_pid_descends_from(getppid(), getpid()));
    assert_false(ctlsock_pid_descends_from(grandchild, child + 100000)); /* not an ancestor */
    assert_true(ctlsock_pid_descends_from(0, getpid()));                 /* unknown: closed */
    /* Under any process running a given program (another hermes-mcp on this machine): the
     * grandchild's parents include this test program, not /bin/true. */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    assert_true(ctlsock_pid_under_exe(grandchild, self));
    assert_true(ctlsock_pid_under_exe(child, self));
    assert_false(ctlsock_pid_under_exe(grandchild, "/bin/true"));
    assert_false(ctlsock_pid_under_exe(getpid(), "/bin/true"));
    assert_false(ctlsock_pid_under_exe(grandchild, "")); /* unknown program: not decided here */
    assert_true(ctlsock_pid_under_exe(0, self));
    close(hold[1]);
    waitpid(child, NULL, 0);

    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    char *got = ask_from(f, CHILD, "{\"op\":\"list\"}\n");
    assert_non_null(strstr(got, "refused_descendant"));
    got = ask_from(f, ORPHAN, "{\"op\":\"list\"}\n");
    assert_non_null(strstr(got, "\"ok\":true"));
    ctlsock_free(s);
}

static void another_uid_is_refused(void **state)
{
    struct fixture *f = *state;
    if (geteuid() != 0) {
        skip(); /* a second uid needs root */
        return;
    }
    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    /* Let uid 65534 reach the socket, as a misconfigured directory would. */
    assert_int_equal(chmod(f->dir, 0711), 0);
    assert_int_equal(chmod(f->path, 0666), 0);
    char *got = ask_from(f, ORPHAN_OTHER_UID, "{\"op\":\"list\"}\n");
    assert_non_null(strstr(got, "refused_uid"));
    got = ask_from(f, ORPHAN, "{\"op\":\"list\"}\n"); /* our uid, same path: heard */
    assert_non_null(strstr(got, "\"ok\":true"));
    ctlsock_free(s);
}

static void each_env_file_has_its_own_socket(void **state)
{
    (void)state;
    char *a = ctlsock_path("/srv/x/a.env"), *b = ctlsock_path("/srv/x/b.env");
    char *dot = ctlsock_path(".env"), *none = ctlsock_path(NULL);
    assert_string_equal(a, "/srv/x/.a.env" CTL_SOCKET_SUFFIX);
    assert_string_equal(b, "/srv/x/.b.env" CTL_SOCKET_SUFFIX);
    assert_string_equal(dot, "./.env" CTL_SOCKET_SUFFIX);
    assert_string_equal(none, "./.env" CTL_SOCKET_SUFFIX);
    free(a);
    free(b);
    free(dot);
    free(none);
    char longp[200];
    memset(longp, 'd', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    memcpy(longp + 90, "/x", 2);
    assert_null(ctlsock_path(longp)); /* would not fit a sockaddr_un */
}

static int connect_to(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void a_full_socket_says_busy_and_idle_peers_are_dropped(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    int idle[8];
    for (size_t i = 0; i < 8; i++)
        idle[i] = connect_to(f->path);
    for (int i = 0; i < 5; i++)
        loop_once(f->l, 10);
    char *got = ask(f, "{\"op\":\"list\"}\n", 14);
    assert_non_null(strstr(got, "\"error\":\"busy\""));

    uint64_t start = now_ms();
    size_t closed = 0;
    char buf[64];
    while (closed < 8 && now_ms() - start < 5000) {
        loop_once(f->l, 50);
        for (size_t i = 0; i < 8; i++)
            if (idle[i] >= 0 && read(idle[i], buf, sizeof buf) == 0) {
                close(idle[i]);
                idle[i] = -1;
                closed++;
            }
    }
    assert_int_equal(closed, 8);
    assert_true(now_ms() - start <= 2500);   /* idle timeout at most 2 s */
    got = ask(f, "{\"op\":\"list\"}\n", 14); /* the slots are free again */
    assert_non_null(strstr(got, "\"ok\":true"));
    ctlsock_free(s);
}

static void a_line_may_arrive_in_pieces(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    int fd = connect_to(f->path);
    assert_int_equal(send(fd, "{\"op\":", 6, 0), 6);
    for (int i = 0; i < 5; i++)
        loop_once(f->l, 10);
    assert_int_equal(send(fd, "\"list\"}\n", 8, 0), 8);
    char got[4096];
    size_t have = 0;
    for (int i = 0; i < 200; i++) {
        loop_once(f->l, 10);
        ssize_t r = read(fd, got + have, sizeof got - 1 - have);
        if (r > 0)
            have += (size_t)r;
        else if (r == 0)
            break;
    }
    got[have] = '\0';
    close(fd);
    assert_non_null(strstr(got, "\"ok\":true"));
    ctlsock_free(s);
}

static void only_the_socket_we_bound_is_removed(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    /* Another server replaced the path meanwhile (ours was removed by hand). */
    assert_int_equal(unlink(f->path), 0);
    int other = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    assert_int_equal(bind(other, (struct sockaddr *)&sa, sizeof sa), 0);
    ctlsock_free(s);
    struct stat st;
    assert_int_equal(lstat(f->path, &st), 0); /* the other server's socket is still there */
    close(other);
}

static void out_of_descriptors_the_socket_pauses_instead_of_spinning(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    struct ctlsock *s = ctlsock_new(f->l, f->path, f->q, err, sizeof err);
    assert_non_null(s);
    int client = connect_to(f->path); /* waits in the backlog */
    assert_int_equal(send(client, "{\"op\":\"list\"}\n", 14, 0), 14);
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fill[64], nfill = 0;
    while (nfill < 64 && (fill[nfill] = dup(0)) >= 0)
        nfill++;
    /* The pending connection keeps the listening socket readable; accept fails with EMFILE.
     * A loop that retried at once would never wait: each turn would return at once. */
    uint64_t start = now_ms();
    for (int i = 0; i < 5; i++)
        loop_once(f->l, 30);
    assert_true(now_ms() - start >= 60);
    while (nfill > 0)
        close(fill[--nfill]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    char got[4096];
    size_t have = 0;
    fcntl(client, F_SETFL, O_NONBLOCK);
    for (int i = 0; i < 200; i++) { /* accepted again once descriptors are back */
        loop_once(f->l, 10);
        ssize_t r = read(client, got + have, sizeof got - 1 - have);
        if (r > 0)
            have += (size_t)r;
        else if (r == 0)
            break;
    }
    got[have] = '\0';
    close(client);
    assert_non_null(strstr(got, "\"ok\":true"));
    ctlsock_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_protocol_takes_exactly_its_requests),
        cmocka_unit_test(only_our_own_uid_is_heard),
        cmocka_unit_test_setup_teardown(the_socket_answers_the_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(a_stale_socket_is_replaced_but_nothing_else, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_process_the_server_started_cannot_decide, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(another_uid_is_refused, setup, teardown),
        cmocka_unit_test(each_env_file_has_its_own_socket),
        cmocka_unit_test_setup_teardown(a_full_socket_says_busy_and_idle_peers_are_dropped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_line_may_arrive_in_pieces, setup, teardown),
        cmocka_unit_test_setup_teardown(only_the_socket_we_bound_is_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(out_of_descriptors_the_socket_pauses_instead_of_spinning,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
