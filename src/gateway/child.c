/* child.c — a stdio child on the loop. Why each step of the start:
 *   - its own process group (setpgid), so a kill reaches the grandchildren too (npx starts
 *     node, which may start more): none outlives us on SIGTERM;
 *   - PR_SET_PDEATHSIG, so even our SIGKILL or a crash takes the child with it; only the
 *     child: its own children (npx's node) survive our SIGKILL, which systemd's
 *     KillMode=control-group (the unit's default) covers;
 *   - the signal mask and SIGPIPE reset, since we block SIGTERM/SIGHUP/SIGINT for signalfd and
 *     ignore SIGPIPE, and exec would pass both on;
 *   - every other fd of ours marked close-on-exec, so the child holds no socket of a client;
 *   - a minimal environment (as the MCP SDK's stdio transport: HOME, LOGNAME, PATH, SHELL,
 *     TERM, USER, plus LANG, TMPDIR, and where caches go: XDG_CACHE_HOME, npm_config_cache,
 *     which the systemd unit points at its writable CacheDirectory for npx) and the upstream's
 *     env: no key of ours leaks to it;
 *   - a close-on-exec pipe reports a failed exec (errno), so "command not found" is an error
 *     at start, not a silent exit.
 * The exit is seen through a pidfd (or, where there is none, by polling waitpid once stdout
 * closed); stdout is drained before the exit is reported, so the last answers still arrive. */
#include "child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "utf8.h"

#define STDERR_LINE_MAX 1000  /* bytes of one stderr line that reach our log */
#define STDERR_LINES_PER_S 50 /* a flooding child cannot flood our log: the rest is counted */
#define STOP_GRACE_MS 2000    /* SIGTERM, then SIGKILL of the group when it is still there */
#define REAP_POLL_MS 20
#define READ_CHUNK 65536

static const char *const inherited_env[] = {
    "HOME", "LOGNAME", "PATH",   "SHELL",          "TERM",
    "USER", "LANG",    "TMPDIR", "XDG_CACHE_HOME", "npm_config_cache"};

struct child {
    struct child *next; /* every child not yet freed: child_owns */
    struct loop *loop;
    char *name;
    pid_t pid;
    int in_fd, out_fd, err_fd, pid_fd;
    struct loop_watch *in_w, *out_w, *err_w, *pid_w;
    struct loop_timer *poll_t; /* without a pidfd: waitpid polls after stdout closed */
    uint64_t poll_ms;
    struct buf inq;                          /* waiting for stdin */
    struct buf out;                          /* a partial stdout line */
    size_t out_scanned;                      /* bytes of out known to hold no newline */
    bool discarding;                         /* dropping the rest of an oversized line */
    char head[CHILD_EDGE], tail[CHILD_EDGE]; /* the ends of the line being dropped */
    size_t head_len, tail_len;
    struct buf errline;        /* a partial stderr line */
    uint64_t err_second;       /* the second (loop clock) err_lines counts in */
    unsigned err_lines;        /* stderr lines logged in that second */
    size_t err_dropped;        /* lines not logged since the last summary */
    struct loop_timer *drop_t; /* says how many were dropped once the second ends */
    bool gone;                 /* exited was reported */
    struct child_events ev;
    void *arg;
};

static struct child *children;        /* loop thread only */
static struct reaping *reapings;      /* children being stopped (below); loop thread only */
static struct rlimit nofile_at_start; /* rlim_max 0: not set, children keep ours */

void child_set_fd_limit(const struct rlimit *rl)
{
    nofile_at_start = *rl;
}

/* ---------- start ---------- */

/* argv and envp built before fork: the child only calls async-signal-safe functions. */
static char **build_argv(const struct child_spec *s)
{
    size_t n = json_array_size(s->args), i;
    json_t *v;
    char **argv = xcalloc(n + 2, sizeof *argv);
    argv[0] = xstrdup(s->command);
    json_array_foreach(s->args, i, v) argv[i + 1] = xstrdup(json_string_value(v));
    return argv;
}

static char **build_envp(const struct child_spec *s)
{
    size_t n = 0, cap = sizeof inherited_env / sizeof *inherited_env + json_object_size(s->env);
    char **envp = xcalloc(cap + 1, sizeof *envp);
    const char *k;
    json_t *v;
    for (size_t i = 0; i < sizeof inherited_env / sizeof *inherited_env; i++) {
        const char *val =
            json_object_get(s->env, inherited_env[i]) ? NULL : getenv(inherited_env[i]);
        if (val)
            envp[n++] = xasprintf("%s=%s", inherited_env[i], val);
    }
    json_object_foreach(s->env, k, v) envp[n++] = xasprintf("%s=%s", k, json_string_value(v));
    return envp;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++) {
        memset(v[i], 0, strlen(v[i])); /* env values may be keys */
        free(v[i]);
    }
    free(v);
}

/* Before fork: the highest fd open in this process, so the child's fallback below loops over
 * what is open, not over RLIMIT_NOFILE (the server raises it to the hard limit: up to ~1M
 * fcntl calls per start). -1 when /proc cannot tell. On kernels without close_range, an fd a
 * libcurl thread opens between this scan and the fork could reach the child; such fds are
 * opened close-on-exec by libcurl and glibc, so exec drops them anyway. */
static int highest_open_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int max = -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && atoi(e->d_name) > max)
            max = atoi(e->d_name);
    closedir(d);
    return max;
}

/* In the forked child: marks every fd from first up close-on-exec. close_range where the
 * kernel has it (5.11), else a loop up to highest (known before fork: the child must not
 * allocate, so it cannot list /proc itself), or up to the limit when that is unknown. */
static void cloexec_from(int first, int highest)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) == 0)
        return;
#endif
    long max = highest >= 0 ? highest + 1L : sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 1 << 20)
        max = 1 << 20;
    for (int fd = first; fd < max; fd++) {
        int fl = fcntl(fd, F_GETFD);
        if (fl >= 0 && !(fl & FD_CLOEXEC))
            fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
    }
}

/* In the forked child: never returns. */
static void exec_child(const struct child_spec *s, char **argv, char **envp, int fds[3],
                       int report_fd, pid_t parent, int highest_fd)
{
    sigset_t none;
    int e;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* we died between fork and prctl */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    /* Started with fds 0-2 closed, a pipe may sit on 0-2 itself: move every end above 2
     * first, so no dup2 below overwrites another end, and none is a dup2 onto itself (which
     * would keep its close-on-exec flag and leave the child without that stream). */
    for (int i = 0; i < 3; i++)
        if (fds[i] < 3 && (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
            goto fail;
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            goto fail;
    cloexec_from(3, highest_fd);
    /* The limit the server started with: a child using select() breaks on fds over 1024. */
    if (nofile_at_start.rlim_max)
        setrlimit(RLIMIT_NOFILE, &nofile_at_start);
    if (s->cwd && chdir(s->cwd) < 0)
        goto fail;
    execvpe(argv[0], argv, envp);
fail:
    e = errno;
    if (write(report_fd, &e, sizeof e) < 0)
        _exit(126);
    _exit(127);
}

static bool make_pipes(int p[4][2])
{
    for (int i = 0; i < 4; i++)
        p[i][0] = p[i][1] = -1;
    for (int i = 0; i < 4; i++)
        if (pipe2(p[i], O_CLOEXEC) < 0)
            return false;
    return true;
}

static void close_pipes(int p[4][2])
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            if (p[i][j] >= 0)
                close(p[i][j]);
}

static void on_out(struct loop *l, int fd, uint32_t events, void *arg);
static void on_err(struct loop *l, int fd, uint32_t events, void *arg);
static void on_in(struct loop *l, int fd, uint32_t events, void *arg);
static void on_pid(struct loop *l, int fd, uint32_t events, void *arg);
static void poll_exit(struct loop *l, void *arg);

/* After fork: waits for exec (the report pipe closes) or its failure (an errno arrives). */
static bool exec_succeeded(int report_fd, pid_t pid, const char *cmd, char *err, size_t errlen)
{
    int e = 0;
    ssize_t n;
    do
        n = read(report_fd, &e, sizeof e);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof e)
        return true;
    snprintf(err, errlen, "cannot run %s: %s", cmd, strerror(e));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return false;
}

struct child *child_start(struct loop *l, const struct child_spec *spec,
                          const struct child_events *ev, void *arg, char *err, size_t errlen)
{
    int p[4][2]; /* stdin, stdout, stderr, exec report */
    if (!make_pipes(p)) {
        snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
        close_pipes(p);
        return NULL;
    }
    char **argv = build_argv(spec), **envp = build_envp(spec);
    int highest = highest_open_fd();
    pid_t parent = getpid(), pid = fork();
    if (pid == 0)
        exec_child(spec, argv, envp, (int[3]){p[0][0], p[1][1], p[2][1]}, p[3][1], parent, highest);
    free_strv(argv);
    free_strv(envp);
    if (pid < 0) {
        snprintf(err, errlen, "cannot fork: %s", strerror(errno));
        close_pipes(p);
        return NULL;
    }
    setpgid(pid, pid); /* also here: no race with a kill of the group right after */
    close(p[3][1]);
    p[3][1] = -1;
    bool ok = exec_succeeded(p[3][0], pid, spec->command, err, errlen);
    int in = p[0][1], out = p[1][0], errfd = p[2][0];
    p[0][1] = p[1][0] = p[2][0] = -1;
    close_pipes(p);
    if (!ok) {
        close(in), close(out), close(errfd);
        return NULL;
    }
    struct child *c = xcalloc(1, sizeof *c);
    *c = (struct child){.next = children,
                        .loop = l,
                        .name = xstrdup(spec->name),
                        .pid = pid,
                        .in_fd = in,
                        .out_fd = out,
                        .err_fd = errfd,
                        .ev = *ev,
                        .arg = arg};
    children = c;
    buf_init(&c->inq, CHILD_QUEUE_MAX);
    buf_init(&c->out, 0);
    buf_init(&c->errline, 0);
    fcntl(in, F_SETFL, O_NONBLOCK);
    fcntl(out, F_SETFL, O_NONBLOCK);
    fcntl(errfd, F_SETFL, O_NONBLOCK);
    c->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
    c->out_w = loop_watch_add(l, out, EPOLLIN, on_out, c);
    c->err_w = loop_watch_add(l, errfd, EPOLLIN, on_err, c);
    if (c->pid_fd >= 0)
        c->pid_w = loop_watch_add(l, c->pid_fd, EPOLLIN, on_pid, c);
    /* No pidfd (kernel before 5.3, valgrind): the exit is found by polling once stdout closes. */
    if (!c->out_w || !c->err_w || (c->pid_fd >= 0 && !c->pid_w)) {
        snprintf(err, errlen, "cannot watch the child: %s", strerror(errno));
        child_free(c);
        return NULL;
    }
    log_info("%s: started (pid %d)", c->name, (int)pid);
    return c;
}

/* ---------- stdout: JSON-RPC lines ---------- */

/* Keeps the last CHILD_EDGE bytes seen of the line being dropped. */
static void keep_tail(struct child *c, const char *p, size_t n)
{
    if (n >= CHILD_EDGE) {
        memcpy(c->tail, p + n - CHILD_EDGE, CHILD_EDGE);
        c->tail_len = CHILD_EDGE;
        return;
    }
    size_t keep = c->tail_len + n > CHILD_EDGE ? CHILD_EDGE - n : c->tail_len;
    memmove(c->tail, c->tail + c->tail_len - keep, keep);
    memcpy(c->tail + keep, p, n);
    c->tail_len = keep + n;
}

static void start_dropping(struct child *c)
{
    c->head_len = c->out.len < CHILD_EDGE ? c->out.len : CHILD_EDGE;
    memcpy(c->head, c->out.data, c->head_len);
    c->tail_len = 0;
    keep_tail(c, c->out.data, c->out.len);
    c->out.len = c->out_scanned = 0;
    c->discarding = true;
}

static void end_dropping(struct child *c)
{
    c->discarding = false;
    log_warn("%s: dropped a message over %u MiB", c->name, CHILD_LINE_MAX >> 20);
    if (c->ev.oversized)
        c->ev.oversized(c->head, c->head_len, c->tail, c->tail_len, c->arg);
}

static void take_lines(struct child *c)
{
    size_t start = 0;
    for (size_t i = c->out_scanned; i < c->out.len; i++) {
        if (c->out.data[i] != '\n')
            continue;
        c->out.data[i] = '\0';
        size_t n = i - start;
        if (n && c->out.data[start + n - 1] == '\r')
            c->out.data[start + --n] = '\0';
        if (n > CHILD_LINE_MAX) { /* whole, but over the cap all the same */
            c->head_len = CHILD_EDGE;
            memcpy(c->head, c->out.data + start, CHILD_EDGE);
            c->tail_len = 0;
            keep_tail(c, c->out.data + start, n);
            end_dropping(c);
        } else if (n) {
            c->ev.line(c->out.data + start, n, c->arg);
        }
        start = i + 1;
    }
    buf_consume(&c->out, start);
    c->out_scanned = c->out.len;
    if (c->out.len > CHILD_LINE_MAX)
        start_dropping(c);
}

/* Reads what is there; returns false at end of file or error. */
static bool read_out(struct child *c)
{
    char chunk[READ_CHUNK];
    for (;;) {
        ssize_t n = read(c->out_fd, chunk, sizeof chunk);
        if (n > 0) {
            if (c->discarding) {
                const char *nl = memchr(chunk, '\n', (size_t)n);
                keep_tail(c, chunk, nl ? (size_t)(nl - chunk) : (size_t)n);
                if (nl == NULL)
                    continue;
                end_dropping(c);
                buf_append(&c->out, nl + 1, (size_t)(chunk + n - nl - 1));
            } else {
                buf_append(&c->out, chunk, (size_t)n);
            }
            take_lines(c);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && errno == EAGAIN;
    }
}

static void on_out(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct child *c = arg;
    (void)l, (void)fd, (void)events;
    if (!read_out(c)) {
        loop_watch_del(c->out_w); /* closed: the pidfd (or polling) tells when it is gone */
        c->out_w = NULL;
        if (c->pid_fd < 0 && c->poll_t == NULL) {
            c->poll_ms = 10;
            c->poll_t = loop_timer_add(c->loop, c->poll_ms, poll_exit, c);
        }
    }
}

/* ---------- stderr: into our log ---------- */

static void log_err_line(struct child *c, char *s, size_t n)
{
    if (n > STDERR_LINE_MAX)
        n = STDERR_LINE_MAX;
    s[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            s[i] = ' ';
    utf8_line(s); /* invalid bytes, or a character cut at the cap: the log stays UTF-8 */
    if (n)
        log_info("%s stderr: %s", c->name, s);
}

static void report_dropped(struct child *c)
{
    loop_timer_cancel(c->drop_t);
    c->drop_t = NULL;
    if (c->err_dropped)
        log_warn("%s stderr: %zu line%s dropped (over %u a second)", c->name, c->err_dropped,
                 c->err_dropped == 1 ? "" : "s", STDERR_LINES_PER_S);
    c->err_dropped = 0;
}

static void on_drop_timer(struct loop *l, void *arg)
{
    struct child *c = arg;
    (void)l;
    c->drop_t = NULL;
    report_dropped(c);
}

/* One complete stderr line (errline, NUL added here): logged unless this second's share is
 * used up; the first line of a later second first says how many were dropped. */
static void take_err_line(struct child *c)
{
    uint64_t second = loop_now(c->loop) / 1000;
    if (second != c->err_second) {
        c->err_second = second;
        c->err_lines = 0;
        report_dropped(c);
    }
    if (c->err_lines < STDERR_LINES_PER_S) {
        c->err_lines++;
        buf_append(&c->errline, "", 1);
        log_err_line(c, c->errline.data, c->errline.len - 1);
    } else if (c->err_dropped++ == 0) {
        /* Armed only while dropping (an idle server has no timer): the count is logged when
         * this second ends, not when the child next writes. */
        c->drop_t = loop_timer_add(c->loop, 1000 - loop_now(c->loop) % 1000 + 1, on_drop_timer, c);
    }
    c->errline.len = 0;
}

/* At the exit: what is left in the pipe, the count of lines dropped, and the last line even
 * without its newline and over the cap (it often says why the child ended). */
static void flush_err(struct child *c)
{
    if (c->err_w)
        on_err(c->loop, c->err_fd, EPOLLIN, c);
    report_dropped(c);
    if (c->errline.len) {
        buf_append(&c->errline, "", 1);
        log_err_line(c, c->errline.data, c->errline.len - 1);
        c->errline.len = 0;
    }
}

static void on_err(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct child *c = arg;
    char chunk[4096];
    (void)l, (void)events;
    /* A bounded share per wakeup: a child that never stops writing does not hold the loop. */
    for (int reads = 0; c->err_w && reads < 16; reads++) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n <= 0) {
            if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                loop_watch_del(c->err_w);
                c->err_w = NULL;
            }
            if (n < 0 && errno == EINTR)
                continue;
            return;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (chunk[i] == '\n')
                take_err_line(c);
            else if (c->errline.len < STDERR_LINE_MAX)
                buf_append(&c->errline, &chunk[i], 1);
        }
    }
}

/* ---------- stdin ---------- */

static void flush_in(struct child *c)
{
    while (c->inq.len) {
        ssize_t n = write(c->in_fd, c->inq.data, c->inq.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            if (errno != EAGAIN)
                c->inq.len = 0; /* the child closed stdin: its exit will follow */
            break;
        }
        buf_consume(&c->inq, (size_t)n);
    }
    if (c->inq.len && c->in_w == NULL)
        c->in_w = loop_watch_add(c->loop, c->in_fd, EPOLLOUT, on_in, c);
    else if (c->inq.len == 0 && c->in_w) {
        loop_watch_del(c->in_w);
        c->in_w = NULL;
    }
}

static void on_in(struct loop *l, int fd, uint32_t events, void *arg)
{
    (void)l, (void)fd, (void)events;
    flush_in(arg);
}

bool child_write(struct child *c, const char *data, size_t len)
{
    if (c->gone || !buf_append(&c->inq, data, len))
        return false;
    flush_in(c);
    return true;
}

/* ---------- exit ---------- */

/* Reaps the child if it is gone and reports it; false while it still runs. */
static bool check_exit(struct child *c)
{
    int status = 0;
    if (c->out_w && !read_out(c)) {
        loop_watch_del(c->out_w);
        c->out_w = NULL;
    }
    /* What it started goes with it; the group is killed while the leader is still a zombie,
     * so its id cannot have been reused yet. Without a pidfd it may still be running: then
     * the group is killed only once it is seen gone. */
    siginfo_t si = {0};
    if (c->pid_fd >= 0 ||
        (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == c->pid))
        kill(-c->pid, SIGKILL);
    if (waitpid(c->pid, &status, WNOHANG) != c->pid)
        return false;
    loop_watch_del(c->pid_w);
    c->pid_w = NULL;
    c->gone = true;
    flush_err(c);
    if (WIFEXITED(status))
        log_warn("%s: exited with status %d", c->name, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        log_warn("%s: killed by signal %d", c->name, WTERMSIG(status));
    c->ev.exited(status, c->arg);
    return true;
}

static void on_pid(struct loop *l, int fd, uint32_t events, void *arg)
{
    (void)l, (void)fd, (void)events;
    check_exit(arg);
}

static void poll_exit(struct loop *l, void *arg)
{
    struct child *c = arg;
    c->poll_t = NULL;
    if (check_exit(c))
        return;
    c->poll_ms = c->poll_ms < 1000 ? c->poll_ms * 2 : 1000;
    c->poll_t = loop_timer_add(l, c->poll_ms, poll_exit, c);
}

/* ---------- stopping without waiting on the loop ---------- */

/* A child being stopped: SIGTERM sent, SIGKILL of its group at kill_at. Polled on the loop
 * timer until reaped, so a child slow to die (ignoring SIGTERM, or stuck in the kernel) never
 * blocks the loop; child_reap_all bounds the wait at exit. Signalling by pid is safe here: only
 * this module reaps these pids (the subreaper asks child_owns), and a pid is not reused before
 * it is reaped, so no pidfd is needed to avoid signalling a stranger. */
struct reaping {
    struct reaping *next;
    struct loop *loop;
    struct loop_timer *timer;
    char *name;
    pid_t pid;
    uint64_t kill_at;
    bool killed;
};

/* Reaps pid when it has exited; what it started is killed first, while the leader is still a
 * zombie (its group id cannot have been reused). */
static bool try_reap(pid_t pid, int *status)
{
    siginfo_t si = {0};
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno == ECHILD; /* reaped elsewhere: nothing left to wait for */
    if (si.si_pid != pid)
        return false;
    kill(-pid, SIGKILL);
    return waitpid(pid, status, WNOHANG) == pid;
}

static void kill_group(struct reaping *r, bool hurried)
{
    if (hurried)
        log_event(EV_CHILD_KILLED, LOG_FIELDS(LF_S("child", r->name), LF_S("why", "hurried")),
                  "%s: still running after SIGTERM, asked to stop again: killed", r->name);
    else
        log_event(EV_CHILD_KILLED,
                  LOG_FIELDS(LF_S("child", r->name), LF_S("why", "grace"),
                             LF_N("after_ms", STOP_GRACE_MS)),
                  "%s: still running %u ms after SIGTERM: killed", r->name, STOP_GRACE_MS);
    kill(-r->pid, SIGKILL);
    kill(r->pid, SIGKILL);
    r->killed = true;
}

static void reaping_free(struct reaping *r)
{
    for (struct reaping **pp = &reapings; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    loop_timer_cancel(r->timer);
    free(r->name);
    free(r);
}

static void on_reap_timer(struct loop *l, void *arg)
{
    struct reaping *r = arg;
    int status = 0;
    r->timer = NULL;
    if (try_reap(r->pid, &status)) {
        log_info("%s: stopped (pid %d)", r->name, (int)r->pid);
        reaping_free(r);
        return;
    }
    if (!r->killed && loop_now(l) >= r->kill_at)
        kill_group(r, false);
    r->timer = loop_timer_add(l, REAP_POLL_MS, on_reap_timer, r);
}

static void start_reaping(struct child *c)
{
    struct reaping *r = xcalloc(1, sizeof *r);
    *r = (struct reaping){.next = reapings,
                          .loop = c->loop,
                          .name = xstrdup(c->name),
                          .pid = c->pid,
                          .kill_at = loop_now(c->loop) + STOP_GRACE_MS};
    reapings = r;
    r->timer = loop_timer_add(c->loop, REAP_POLL_MS, on_reap_timer, r);
}

/* A SIGTERM or SIGINT waiting (blocked for the loop's signalfd, which no longer runs): the
 * operator asked again, so the exit does not wait out the grace. */
static bool stop_asked_again(void)
{
    sigset_t pending;
    return sigpending(&pending) == 0 &&
           (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
}

void child_reap_all(unsigned wait_ms)
{
    struct timespec tick = {0, REAP_POLL_MS * 1000000L};
    bool hurried = false;
    for (unsigned spent = 0; reapings; spent += REAP_POLL_MS) {
        if (!hurried && spent < wait_ms && stop_asked_again()) {
            hurried = true;
            wait_ms = spent;
        }
        for (struct reaping *r = reapings, *next; r; r = next) {
            next = r->next;
            if (try_reap(r->pid, NULL))
                reaping_free(r);
            else if (!r->killed && spent >= wait_ms)
                kill_group(r, hurried);
        }
        if (reapings == NULL || spent >= wait_ms + 1000)
            break; /* killed and still there (stuck in the kernel): init reaps it after us */
        nanosleep(&tick, NULL);
    }
    while (reapings)
        reaping_free(reapings);
}

/* Stops the child the way the MCP stdio transport says: stdin closed and SIGTERM to its
 * group, SIGKILL after STOP_GRACE_MS. Never waits: a child still there is reaped later. */
void child_free(struct child *c)
{
    if (c == NULL)
        return;
    loop_watch_del(c->in_w);
    loop_watch_del(c->out_w);
    loop_watch_del(c->pid_w);
    loop_timer_cancel(c->poll_t);
    if (!c->gone)
        flush_err(c);
    loop_watch_del(c->err_w);
    loop_timer_cancel(c->drop_t);
    for (struct child **pp = &children; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    close(c->in_fd);
    if (!c->gone) {
        kill(-c->pid, SIGTERM);
        kill(c->pid, SIGTERM);
        if (!try_reap(c->pid, NULL))
            start_reaping(c);
    }
    close(c->out_fd);
    close(c->err_fd);
    if (c->pid_fd >= 0)
        close(c->pid_fd);
    buf_cleanup(&c->inq);
    buf_cleanup(&c->out);
    buf_cleanup(&c->errline);
    free(c->name);
    free(c);
}

bool child_owns(pid_t pid)
{
    for (const struct child *c = children; c; c = c->next)
        if (c->pid == pid && !c->gone)
            return true;
    for (const struct reaping *r = reapings; r; r = r->next)
        if (r->pid == pid)
            return true;
    return false;
}
