/* ctlsock.c — the operator's control socket (see ctlsock.h). Every connection is non-blocking on
 * the loop: it reads one line (capped), answers it from the approval queue, writes the answer as
 * the socket takes it and closes. A peer whose uid is not ours, or that the server started (the
 * model reaches a shell through an upstream's tools), is told so and closed before a byte is
 * read; so is a peer that finds every slot taken ("busy"); an idle connection is closed after
 * CTL_IDLE_MS so a stuck client cannot hold a slot. */
#include "ctlsock.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "approvals.h"
#include "log.h"
#include "loop.h"
#include "mem.h"

#define CTL_MAX_CONNS 8
#define CTL_IDLE_MS 2000u
/* A forwarded request waits for the store: longer than its connection's own timeout (10 s). */
#define CTL_WAIT_MS 12000u
#define CTL_ACCEPT_PAUSE_MS 100u /* out of descriptors: accept again after this */

bool ctlsock_parse_request(const char *line, size_t n, struct ctl_request *r, const char **err)
{
    *r = (struct ctl_request){0};
    if (n > CTL_LINE_MAX) {
        *err = "line_too_long";
        return false;
    }
    json_t *j = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
    const char *op = json_string_value(json_object_get(j, "op"));
    const char *id = json_string_value(json_object_get(j, "id"));
    json_t *reason = json_object_get(j, "reason");
    bool ok = false;
    *err = "bad_request";
    if (!json_is_object(j) || !op)
        goto out;
    if (!strcmp(op, "list") || !strcmp(op, "status")) {
        r->op = !strcmp(op, "list") ? CTL_LIST : CTL_STATUS;
        ok = json_object_size(j) == 1;
        goto out;
    }
    if (strcmp(op, "approve") && strcmp(op, "deny") && strcmp(op, "show"))
        goto out;
    r->op = !strcmp(op, "show") ? CTL_SHOW : strcmp(op, "approve") ? CTL_DENY : CTL_APPROVE;
    if (!id || !id[0] || strlen(id) > CTL_ID_MAX)
        goto out;
    snprintf(r->id, sizeof r->id, "%s", id);
    size_t fields = 2;
    if (reason) {
        if (r->op != CTL_DENY || !json_is_string(reason) ||
            json_string_length(reason) > CTL_REASON_MAX ||
            strlen(json_string_value(reason)) != json_string_length(reason))
            goto out;
        snprintf(r->reason, sizeof r->reason, "%s", json_string_value(reason));
        fields++;
    }
    ok = json_object_size(j) == fields;
out:
    json_decref(j);
    return ok;
}

bool ctlsock_uid_allowed(bool have_cred, uid_t peer, uid_t own)
{
    return have_cred && peer == own;
}

bool ctlsock_peer_allowed(int fd, uid_t own, uid_t *peer)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    bool have = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred;
    if (peer)
        *peer = have ? cred.uid : (uid_t)-1;
    return ctlsock_uid_allowed(have, have ? cred.uid : (uid_t)-1, own);
}

/* The parent of pid from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold ")"), or
 * -1 when it cannot be read. */
static pid_t parent_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *end = strrchr(buf, ')');
    int ppid;
    char state;
    if (!end || sscanf(end + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return (pid_t)ppid;
}

bool ctlsock_pid_descends_from(pid_t pid, pid_t ancestor)
{
    if (pid <= 0)
        return true;
    pid_t p = parent_of(pid);
    for (unsigned depth = 0; depth < CTL_ANCESTRY_MAX; depth++) {
        if (p < 0 || p == ancestor)
            return true;
        if (p <= 1) /* init (or the kernel): the top, and not us */
            return false;
        p = parent_of(p);
    }
    return true;
}

bool ctlsock_pid_under_exe(pid_t pid, const char *exe)
{
    if (exe == NULL || exe[0] == '\0')
        return false; /* our own path unknown: ctlsock_pid_descends_from alone decides */
    if (pid <= 0)
        return true;
    pid_t p = parent_of(pid);
    for (unsigned depth = 0; depth < CTL_ANCESTRY_MAX; depth++) {
        if (p < 0)
            return true;
        if (p <= 1)
            return false;
        char path[64], target[PATH_MAX];
        snprintf(path, sizeof path, "/proc/%d/exe", (int)p);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strcmp(target, exe) == 0)
                return true;
        } /* unreadable (another user's process, say): not one of ours */
        p = parent_of(p);
    }
    return true;
}

char *ctlsock_path(const char *env_file)
{
    if (!env_file || !env_file[0])
        env_file = ".env";
    const char *slash = strrchr(env_file, '/');
    const char *base = slash ? slash + 1 : env_file;
    if (base[0] == '.')
        base++; /* .env: .env.hermes-mcp.sock */
    char *p =
        slash ? xasprintf("%.*s/.%s%s", (int)(slash - env_file), env_file, base, CTL_SOCKET_SUFFIX)
              : xasprintf("./.%s%s", base, CTL_SOCKET_SUFFIX);
    if (strlen(p) >= sizeof((struct sockaddr_un *)0)->sun_path) {
        free(p);
        return NULL;
    }
    return p;
}

/* ---- the server ---- */

struct ctl_wait {
    struct conn *conn; /* NULL once the peer went away */
};

struct conn {
    struct ctlsock *s;
    int fd;
    pid_t pid;
    struct ctl_wait *wait; /* a forwarded request's answer to come */
    struct loop_watch *w;
    struct loop_timer *idle;
    char in[CTL_LINE_MAX + 1];
    size_t in_len;
    char *out;
    size_t out_len, out_off;
};

struct ctlsock {
    struct loop *loop;
    struct approvals *q;
    char *path;
    dev_t dev; /* the socket file we bound: only that one is removed at the end */
    ino_t ino;
    int fd;
    struct loop_watch *w;
    struct loop_timer *resume; /* accept paused after EMFILE/ENFILE */
    char decider[160];         /* "uid 1000 (alice)": the only uid heard, resolved once */
    struct conn *conns[CTL_MAX_CONNS];
    ctl_status_fn *status;
    void *status_arg;
    ctl_forward_fn *forward;
    void *forward_arg;
    char exe[PATH_MAX]; /* our own executable ("" when it cannot be read) */
};

static void conn_close(struct conn *c)
{
    if (c->wait)
        c->wait->conn = NULL; /* its answer, when it comes, goes nowhere */
    for (size_t i = 0; i < CTL_MAX_CONNS; i++)
        if (c->s->conns[i] == c)
            c->s->conns[i] = NULL;
    loop_watch_del(c->w);
    loop_timer_cancel(c->idle);
    close(c->fd);
    free(c->out);
    free(c);
}

static char *answer_error(const char *code)
{
    json_t *j = json_pack("{s:b, s:s}", "ok", 0, "error", code);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static void conn_idle(struct loop *l, void *arg);

/* NULL (and *deferred) when the forward hook answers later. */
static char *answer(struct conn *c, const char *line, size_t n, bool *deferred)
{
    struct ctl_request r;
    const char *err;
    *deferred = false;
    if (!ctlsock_parse_request(line, n, &r, &err))
        return answer_error(err);
    if (r.op != CTL_STATUS && c->s->forward) {
        char who[200];
        snprintf(who, sizeof who, "%s pid %d", c->s->decider, (int)c->pid);
        struct ctl_wait *w = xcalloc(1, sizeof *w);
        w->conn = c;
        c->wait = w;
        if (c->s->forward(c->s->forward_arg, &r, who, w)) {
            *deferred = true;
            if (c->wait) { /* the store's answer may take longer than an idle peer's grace */
                loop_timer_cancel(c->idle);
                c->idle = loop_timer_add(c->s->loop, CTL_WAIT_MS, conn_idle, c);
            }
            return NULL;
        }
        c->wait = NULL;
        free(w);
    }
    json_t *j;
    if (r.op == CTL_LIST) {
        j = json_pack("{s:b, s:o}", "ok", 1, "pending", approvals_list_json(c->s->q));
    } else if (r.op == CTL_STATUS) {
        j = c->s->status ? c->s->status(c->s->status_arg) : NULL;
        if (!json_is_object(j)) {
            json_decref(j);
            j = json_object();
        }
        json_object_set_new(j, "ok", json_true());
    } else if (r.op == CTL_SHOW) {
        json_t *shown = approvals_show_json(c->s->q, r.id);
        if (!shown)
            return answer_error("unknown_id");
        j = json_pack("{s:b, s:o}", "ok", 1, "request", shown);
    } else {
        char decider[200];
        snprintf(decider, sizeof decider, "%s pid %d", c->s->decider, (int)c->pid);
        if (approvals_decide(c->s->q, r.id, r.op == CTL_APPROVE, r.reason[0] ? r.reason : NULL,
                             decider) != 0)
            return answer_error("unknown_id");
        log_info("approval %s %s by %s", r.id, r.op == CTL_APPROVE ? "approved" : "denied",
                 decider);
        j = json_pack("{s:b, s:s}", "ok", 1, "id", r.id);
    }
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static void conn_io(struct loop *l, int fd, uint32_t events, void *arg);

static void start_answer(struct conn *c, char *text)
{
    c->out = xasprintf("%s\n", text ? text : "{\"ok\":false,\"error\":\"internal\"}");
    free(text);
    c->out_len = strlen(c->out);
    loop_watch_mod(c->w, EPOLLOUT);
}

static void conn_read(struct conn *c)
{
    for (;;) {
        if (c->in_len > CTL_LINE_MAX) {
            start_answer(c, answer_error("line_too_long"));
            return;
        }
        ssize_t got = read(c->fd, c->in + c->in_len, sizeof c->in - c->in_len);
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (got <= 0) {
            conn_close(c);
            return;
        }
        char *nl = memchr(c->in + c->in_len, '\n', (size_t)got);
        c->in_len += (size_t)got;
        if (nl) {
            bool deferred;
            char *text = answer(c, c->in, (size_t)(nl - c->in), &deferred);
            if (!deferred)
                start_answer(c, text);
            return;
        }
    }
}

static void conn_write(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t put = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (put < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (put <= 0)
            break;
        c->out_off += (size_t)put;
    }
    conn_close(c);
}

/* A peer waiting for a forwarded answer has nothing more to say. Its end of input (a client
 * that half-closes after its line) still waits for the answer; an error ends it. */
static void conn_waiting(struct conn *c)
{
    char scratch[256];
    ssize_t got = read(c->fd, scratch, sizeof scratch);
    if (got == 0)
        loop_watch_mod(c->w, 0); /* nothing more to read; the answer is written when it comes */
    else if (got < 0 && errno != EAGAIN && errno != EINTR)
        conn_close(c);
}

static void conn_io(struct loop *l, int fd, uint32_t events, void *arg)
{
    (void)l;
    (void)fd;
    struct conn *c = arg;
    if (c->wait && !c->out)
        conn_waiting(c);
    else if (c->out)
        conn_write(c);
    else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        conn_read(c);
}

static void conn_idle(struct loop *l, void *arg)
{
    (void)l;
    struct conn *c = arg;
    c->idle = NULL;
    conn_close(c);
}

/* Tells a refused peer why in one short line (a fresh socket's buffer takes it), then closes. */
static void refuse(int cfd, const char *code)
{
    char *line = answer_error(code);
    if (line) {
        char *nl = xasprintf("%s\n", line);
        ssize_t put = send(cfd, nl, strlen(nl), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)put;
        free(nl);
        free(line);
    }
    close(cfd);
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *arg);

static void resume_accept(struct loop *l, void *arg)
{
    (void)l;
    struct ctlsock *s = arg;
    s->resume = NULL;
    loop_watch_mod(s->w, EPOLLIN);
}

/* The peer pid of an accepted connection (SO_PEERCRED), or 0 when unknown. */
static pid_t peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
        return 0;
    return cred.pid;
}

static void on_accept(struct loop *l, int fd, uint32_t events, void *arg)
{
    (void)events;
    struct ctlsock *s = arg;
    for (;;) {
        int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if ((errno == EMFILE || errno == ENFILE) && !s->resume) {
                /* The pending connection stays queued and keeps the socket readable: without
                 * a pause the loop would spin on it. */
                loop_watch_mod(s->w, 0);
                s->resume = loop_timer_add(l, CTL_ACCEPT_PAUSE_MS, resume_accept, s);
            }
            return;
        }
        uid_t uid;
        if (!ctlsock_peer_allowed(cfd, geteuid(), &uid)) {
            log_warn("control socket: refused a peer with uid %d", (int)uid);
            refuse(cfd, "refused_uid");
            continue;
        }
        pid_t pid = peer_pid(cfd);
        /* Not ours, nor any other hermes-mcp's on this machine: with a store, this socket
         * decides the other replicas' requests too, which their tools' shells must not. */
        if (ctlsock_pid_descends_from(pid, getpid()) || ctlsock_pid_under_exe(pid, s->exe)) {
            log_warn("control socket: refused pid %d: a process started by the server cannot "
                     "decide approvals",
                     (int)pid);
            refuse(cfd, "refused_descendant");
            continue;
        }
        size_t slot = 0;
        while (slot < CTL_MAX_CONNS && s->conns[slot])
            slot++;
        if (slot == CTL_MAX_CONNS) {
            refuse(cfd, "busy");
            continue;
        }
        struct conn *c = xcalloc(1, sizeof *c);
        c->s = s;
        c->fd = cfd;
        c->pid = pid;
        c->w = loop_watch_add(l, cfd, EPOLLIN, conn_io, c);
        if (!c->w) {
            close(cfd);
            free(c);
            continue;
        }
        c->idle = loop_timer_add(l, CTL_IDLE_MS, conn_idle, c);
        s->conns[slot] = c;
    }
}

/* The directory must be ours and not writable by others: else someone could swap the socket. */
static bool dir_is_safe(const char *path, char *err, size_t errlen)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    struct stat st;
    bool ok = stat(slash ? (dir[0] ? dir : "/") : ".", &st) == 0 && S_ISDIR(st.st_mode) &&
              st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
    if (!ok)
        snprintf(err, errlen,
                 "control socket: %s must be a directory owned by this user and "
                 "not writable by group or others",
                 slash ? dir : ".");
    free(dir);
    return ok;
}

/* A socket file left by a server that died is replaced; a live server or a non-socket is not. */
static bool clear_stale(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "control socket: %s exists and is not a socket", path);
        return false;
    }
    /* Non-blocking: a live server with a full backlog answers EAGAIN instead of stalling us. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    bool live = probe >= 0 && (connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0 ||
                               errno == EAGAIN || errno == EINPROGRESS);
    if (probe >= 0)
        close(probe);
    if (live) {
        snprintf(err, errlen, "control socket: another server is listening on %s", path);
        return false;
    }
    return unlink(path) == 0 || errno == ENOENT;
}

struct ctlsock *ctlsock_new(struct loop *l, const char *path, struct approvals *q, char *err,
                            size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "control socket: path too long: %s", path);
        return NULL;
    }
    if (!dir_is_safe(path, err, errlen) || !clear_stale(path, err, errlen)) {
        if (!err[0])
            snprintf(err, errlen, "control socket: cannot replace %s", path);
        return NULL;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    mode_t old = umask(0177); /* born 600: no window in which others may connect */
    bool bound = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    umask(old);
    struct stat st;
    if (!bound || chmod(path, 0600) != 0 || lstat(path, &st) != 0 || listen(fd, 16) != 0) {
        snprintf(err, errlen, "control socket: %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    struct ctlsock *s = xcalloc(1, sizeof *s);
    ssize_t exe_len = readlink("/proc/self/exe", s->exe, sizeof s->exe - 1);
    s->exe[exe_len > 0 ? exe_len : 0] = '\0';
    s->loop = l;
    s->q = q;
    s->path = xstrdup(path);
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->fd = fd;
    uid_t uid = geteuid();
    struct passwd pw, *pwp = NULL;
    char pwbuf[1024];
    getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &pwp);
    snprintf(s->decider, sizeof s->decider, "uid %u%s%.64s%s", (unsigned)uid, pwp ? " (" : "",
             pwp ? pwp->pw_name : "", pwp ? ")" : "");
    s->w = loop_watch_add(l, fd, EPOLLIN, on_accept, s);
    return s;
}

void ctlsock_set_status(struct ctlsock *s, ctl_status_fn *fn, void *arg)
{
    s->status = fn;
    s->status_arg = arg;
}

void ctlsock_free(struct ctlsock *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < CTL_MAX_CONNS; i++)
        if (s->conns[i])
            conn_close(s->conns[i]);
    loop_watch_del(s->w);
    loop_timer_cancel(s->resume);
    /* Only the file we bound: a server started since may have replaced a path we lost. Before
     * close, so no newcomer can take it as stale in between. */
    struct stat st;
    if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
        unlink(s->path);
    close(s->fd);
    free(s->path);
    free(s);
}

void ctlsock_set_forward(struct ctlsock *s, ctl_forward_fn *fn, void *arg)
{
    if (s) {
        s->forward = fn;
        s->forward_arg = arg;
    }
}

void ctlsock_reply(struct ctl_wait *w, json_t *answer)
{
    struct conn *c = w->conn;
    if (c) {
        c->wait = NULL;
        start_answer(c, json_dumps(answer, JSON_COMPACT));
    }
    json_decref(answer);
    free(w);
}
