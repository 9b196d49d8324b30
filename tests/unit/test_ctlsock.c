/* Unit tests for ctlsock.c: the line protocol (bounded, garbage refused), the peer-credential
 * check, and the socket itself driven on a loop (mode 600, stale file replaced, unsafe directory
 * and live server refused, approve/deny/list answered, oversize line refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "approvals.h"
#include "ctlsock.h"
#include "loop.h"

static bool parses(const char *line, struct ctl_request *r)
{
    const char *err = NULL;
    bool ok = ctl_parse_request(line, strlen(line), r, &err);
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

    const char *garbage[] = {
        "", "not json", "[]", "{}", "{\"op\":1}", "{\"op\":\"list\",\"x\":1}",
        "{\"op\":\"approve\"}", "{\"op\":\"approve\",\"id\":\"\"}", "{\"op\":\"approve\",\"id\":7}",
        "{\"op\":\"approve\",\"id\":\"a\",\"reason\":\"r\"}", /* a reason only with deny */
        "{\"op\":\"approve\",\"id\":\"a\",\"confirmed\":true}",
        "{\"op\":\"deny\",\"id\":\"a\",\"reason\":\"a\\u0000b\"}",
        "{\"op\":\"approve\",\"id\":\"a\",\"id\":\"b\"}", "{\"op\":\"destroy\",\"id\":\"a\"}"};
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
    assert_false(ctl_parse_request(line, CTL_LINE_MAX + 1, &r, &err));
    assert_string_equal(err, "line_too_long");
}

static void only_our_own_uid_is_heard(void **state)
{
    (void)state;
    assert_true(ctl_uid_allowed(true, 1000, 1000));
    assert_false(ctl_uid_allowed(true, 1001, 1000));
    assert_false(ctl_uid_allowed(true, 0, 1000)); /* not even root */
    assert_false(ctl_uid_allowed(false, 1000, 1000)); /* no credentials: closed */

    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    uid_t peer;
    assert_true(ctl_peer_allowed(sv[0], geteuid(), &peer));
    assert_int_equal(peer, geteuid());
    assert_false(ctl_peer_allowed(sv[0], geteuid() + 1, &peer));
    close(sv[0]);
    close(sv[1]);
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_false(ctl_peer_allowed(p[0], geteuid(), &peer)); /* not a socket: no credentials */
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
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, CTL_SOCKET_NAME);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_protocol_takes_exactly_its_requests),
        cmocka_unit_test(only_our_own_uid_is_heard),
        cmocka_unit_test_setup_teardown(the_socket_answers_the_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(a_stale_socket_is_replaced_but_nothing_else, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
