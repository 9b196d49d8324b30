/* pgconn.c — a PostgreSQL connection on the event loop, in libpq's pipeline mode (pgconn.h).
 *
 * States: IDLE (down, a retry timer set) -> CONNECTING (PQconnectPoll driven by the socket's
 * readiness) -> PREPARING (the statements and LISTENs sent as one internal request) -> READY.
 * Requests are sent the moment they are made (libpq copies the parameters into its output
 * buffer) and wait in `sent`, in order, for their results: each statement yields a result and
 * then NULL from PQgetResult, and the request ends with the PGRES_PIPELINE_SYNC of its Sync. */
#include "pgconn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "list.h"
#include "log.h"
#include "loop.h"
#include "mem.h"

#define QUEUE_MAX_DEFAULT 4096
#define TIMEOUT_MS_DEFAULT 10000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define ERROR_MAX 300

enum conn_state { C_IDLE, C_CONNECTING, C_PREPARING, C_READY };

struct pgreq {
    struct list link;
    size_t n, cur; /* statements; the one whose result comes next */
    bool have;     /* res[cur] came, its NULL not yet */
    bool internal; /* the statements' preparation or a LISTEN: not counted in nsent */
    PGresult **res;
    char *error;
    enum pgconn_status st;
    pgconn_done_cb *cb;
    void *arg;
    uint64_t sent_ms;
};

struct pgconn {
    struct loop *loop;
    char *conninfo, *password;
    const struct pgconn_stmt *stmts;
    size_t nstmts;
    unsigned queue_max, timeout_ms;
    pgconn_notify_cb *on_notify;
    pgconn_state_cb *on_state;
    void *arg;

    enum conn_state state;
    PGconn *pg;
    int fd;
    struct loop_watch *watch;
    uint32_t events;
    struct list sent;   /* requests sent, oldest first */
    size_t nsent;       /* of them, the caller's (not the internal ones) */
    struct list failed; /* refused at once: called back from `later` */
    struct loop_timer *later, *retry, *deadline;
    unsigned backoff_ms;
    uint64_t retry_at;
    char **channels;
    size_t nchannels, nlistened; /* listened: sent with the last preparation */
    struct loop_timer *dropping; /* a failure found inside pgconn_send, handled from the loop */
    enum pgconn_status drop_st;
    char *drop_why;
    bool told_down; /* on_state(false) said so since the last up */
    int depth;      /* callbacks running: pgconn_free waits for them to return */
    bool freeing;
};

static void connect_start(struct loop *l, void *arg);
static void on_io(struct loop *l, int fd, uint32_t events, void *arg);

/* Every way in (a loop callback, a call of the interface) is bracketed by enter and leave:
 * a callback of ours that calls pgconn_free only marks it, and the outermost leave frees. */
static void enter(struct pgconn *c)
{
    c->depth++;
}

static void leave(struct pgconn *c)
{
    if (--c->depth == 0 && c->freeing)
        pgconn_free(c);
}

/* The message libpq gives, one line, capped. */
static char *one_line(const char *msg)
{
    if (msg == NULL)
        msg = "unknown error";
    char *s = xstrndup(msg, strnlen(msg, ERROR_MAX)); /* xstrndup copies n bytes */
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    for (size_t n = strlen(s); n > 0 && s[n - 1] == ' ';)
        s[--n] = '\0';
    return s;
}

static void req_free(struct pgreq *q)
{
    for (size_t i = 0; i < q->n; i++)
        PQclear(q->res[i]);
    free(q->res);
    free(q->error);
    free(q);
}

/* Calls q's callback and frees it; false when the connection is being freed meanwhile. */
static bool req_finish(struct pgconn *c, struct pgreq *q)
{
    c->depth++;
    if (q->cb)
        q->cb(q->st, q->res, q->n, q->error, q->arg);
    c->depth--;
    req_free(q);
    return !c->freeing;
}

static void watch_set(struct pgconn *c, uint32_t events)
{
    int fd = c->pg ? PQsocket(c->pg) : -1;
    if (c->watch && (fd != c->fd || fd < 0)) {
        loop_watch_del(c->watch);
        c->watch = NULL;
    }
    c->fd = fd;
    if (fd < 0)
        return;
    if (c->watch == NULL) {
        c->watch = loop_watch_add(c->loop, fd, events, on_io, c);
        c->events = events;
    } else if (events != c->events) {
        loop_watch_mod(c->watch, events);
        c->events = events;
    }
}

static void deadline_fire(struct loop *l, void *arg);

/* The timer for the oldest request sent (or the connection attempt under way). */
static void deadline_arm(struct pgconn *c, uint64_t since_ms)
{
    loop_timer_cancel(c->deadline);
    c->deadline = NULL;
    if (since_ms == 0)
        return;
    uint64_t now = loop_now(c->loop), at = since_ms + c->timeout_ms;
    c->deadline = loop_timer_add(c->loop, at > now ? at - now : 0, deadline_fire, c);
}

static void deadline_rearm(struct pgconn *c)
{
    if (c->state == C_CONNECTING)
        return; /* its own deadline runs */
    struct pgreq *q =
        list_empty(&c->sent) ? NULL : list_entry(list_first(&c->sent), struct pgreq, link);
    deadline_arm(c, q ? q->sent_ms : 0);
}

/* Down: every request sent fails (st), the connection closes, a retry is set. */
static void drop(struct pgconn *c, enum pgconn_status st, const char *why)
{
    char *reason = one_line(why);
    loop_watch_del(c->watch);
    c->watch = NULL;
    c->fd = -1;
    if (c->pg)
        PQfinish(c->pg);
    c->pg = NULL;
    c->state = C_IDLE;
    deadline_arm(c, 0);
    c->retry_at = loop_now(c->loop) + c->backoff_ms;
    loop_timer_cancel(c->retry);
    c->retry = loop_timer_add(c->loop, c->backoff_ms, connect_start, c);
    c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
    c->depth++;
    if (!c->told_down)
        log_warn("store: PostgreSQL connection down: %s", reason);
    while (!list_empty(&c->sent) && !c->freeing) {
        struct pgreq *q = list_entry(list_first(&c->sent), struct pgreq, link);
        list_unlink(&q->link);
        c->nsent -= !q->internal;
        q->st = st;
        if (q->error == NULL)
            q->error = xstrdup(reason);
        req_finish(c, q);
    }
    if (!c->freeing && !c->told_down && c->on_state)
        c->on_state(false, reason, c->arg);
    c->told_down = true;
    c->depth--;
    free(reason);
}

static void deadline_fire(struct loop *l, void *arg)
{
    struct pgconn *c = arg;
    (void)l;
    c->deadline = NULL;
    enter(c);
    drop(c, PGCONN_TIMEOUT,
         c->state == C_CONNECTING ? "connecting took too long" : "no answer in time");
    leave(c);
}

static void drop_fire(struct loop *l, void *arg)
{
    struct pgconn *c = arg;
    (void)l;
    c->dropping = NULL;
    enter(c);
    char *why = c->drop_why;
    c->drop_why = NULL;
    if (c->state != C_IDLE)
        drop(c, c->drop_st, why);
    free(why);
    leave(c);
}

/* A dead connection found inside pgconn_send or pgconn_listen: dropped from the loop, so that
 * no callback runs inside the caller's call. */
static void drop_later(struct pgconn *c, enum pgconn_status st, const char *why)
{
    if (c->dropping)
        return;
    c->drop_st = st;
    c->drop_why = one_line(why);
    c->dropping = loop_timer_add(c->loop, 0, drop_fire, c);
}

/* Sends what libpq buffered, watching for writability while some is left; a dead link is
 * dropped from the loop (drop_later), so this is safe inside pgconn_send too. */
static void flush_out(struct pgconn *c)
{
    int r = PQflush(c->pg);
    if (r < 0)
        drop_later(c, PGCONN_TIMEOUT, PQerrorMessage(c->pg));
    else
        watch_set(c, EPOLLIN | (r == 1 ? EPOLLOUT : 0));
}

/* Sends q's statements and its Sync; false (with q->error) if libpq refuses. */
static bool send_req(struct pgconn *c, struct pgreq *q, const struct pgconn_query *qs)
{
    for (size_t i = 0; i < q->n; i++)
        if (!PQsendQueryPrepared(c->pg, qs[i].stmt, qs[i].nparams, qs[i].params, NULL, NULL, 0)) {
            q->error = one_line(PQerrorMessage(c->pg));
            return false;
        }
    if (!PQpipelineSync(c->pg)) {
        q->error = one_line(PQerrorMessage(c->pg));
        return false;
    }
    q->sent_ms = loop_now(c->loop);
    list_push_back(&c->sent, &q->link);
    if (list_first(&c->sent) == &q->link)
        deadline_rearm(c);
    return true;
}

static struct pgreq *req_new(size_t n, pgconn_done_cb *cb, void *arg)
{
    struct pgreq *q = xcalloc(1, sizeof *q);
    q->n = n;
    q->res = xcalloc(n ? n : 1, sizeof *q->res);
    q->cb = cb;
    q->arg = arg;
    return q;
}

/* ---------- results ---------- */

/* A statement's result: the first failure names the request's error. */
/* A failed statement's reason for our log: its SQLSTATE and primary message only. The DETAIL
 * and CONTEXT lines can quote the row's values (a key that already exists), which may be a
 * client's text or a secret's digest. */
static char *statement_error(const PGresult *r)
{
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    const char *primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    if (primary == NULL)
        return one_line(PQresultErrorMessage(r));
    char *text = xasprintf("%s (SQLSTATE %s)", primary, state ? state : "?");
    char *line = one_line(text);
    free(text);
    return line;
}

static void take_result(struct pgreq *q, PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    if (q->have) { /* a second result for one statement (not ours to send): keep the first */
        PQclear(r);
        return;
    }
    q->res[q->cur] = r;
    q->have = true;
    if (s == PGRES_FATAL_ERROR || s == PGRES_NONFATAL_ERROR || s == PGRES_BAD_RESPONSE) {
        q->st = PGCONN_FAILED;
        if (q->error == NULL)
            q->error = statement_error(r);
    } else if (s == PGRES_PIPELINE_ABORTED) {
        q->st = PGCONN_FAILED;
        if (q->error == NULL)
            q->error = xstrdup("an earlier statement of the transaction failed");
    }
}

/* Reads every result that has arrived; false when the connection went away meanwhile. */
static bool drain(struct pgconn *c)
{
    int nulls = 0;
    while (c->pg && !list_empty(&c->sent) && !PQisBusy(c->pg)) {
        struct pgreq *q = list_entry(list_first(&c->sent), struct pgreq, link);
        PGresult *r = PQgetResult(c->pg);
        if (r == NULL) {
            if (q->cur < q->n && q->have) {
                q->cur++;
                q->have = false;
                nulls = 0;
            } else if (++nulls > 1) {
                break; /* nothing more until the next read */
            }
            continue;
        }
        nulls = 0;
        if (PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
            if (q->cur < q->n)
                take_result(q, r);
            else
                PQclear(r);
            continue;
        }
        PQclear(r);
        list_unlink(&q->link);
        c->nsent -= !q->internal;
        deadline_rearm(c);
        if (!req_finish(c, q) || c->pg == NULL)
            return false;
    }
    return c->pg != NULL;
}

static void notifications(struct pgconn *c)
{
    PGnotify *n;
    while (c->pg && !c->freeing && (n = PQnotifies(c->pg)) != NULL) {
        c->depth++;
        if (c->on_notify)
            c->on_notify(n->relname, n->extra ? n->extra : "", c->arg);
        c->depth--;
        PQfreemem(n);
    }
}

/* ---------- connecting ---------- */

static bool send_listen(struct pgconn *c, const char *channel, pgconn_done_cb *cb, void *arg,
                        struct pgreq **out);
static void listen_failed(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                          void *arg);

static void prepared(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                     void *arg)
{
    struct pgconn *c = arg;
    (void)res;
    (void)n;
    if (st != PGCONN_OK) {
        /* drop() calls back the requests sent after this one; this one is already off the
         * list. A statement that does not prepare is a schema the server does not know. */
        char why[ERROR_MAX + 40];
        snprintf(why, sizeof why, "preparing statements: %s", error ? error : "failed");
        if (!c->freeing && c->state == C_PREPARING) /* not when drop() itself fails it */
            drop(c, PGCONN_DOWN, why);
        return;
    }
    c->state = C_READY;
    /* A channel added while the preparation was under way: listened to now. */
    for (size_t i = c->nlistened; i < c->nchannels; i++)
        if (!send_listen(c, c->channels[i], listen_failed, NULL, NULL))
            break;
    c->nlistened = c->nchannels;
    c->backoff_ms = BACKOFF_MIN_MS;
    c->retry_at = 0;
    c->told_down = false;
    log_info("store: PostgreSQL connection up");
    if (c->on_state)
        c->on_state(true, NULL, c->arg);
}

static void listen_failed(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                          void *arg)
{
    (void)res;
    (void)n;
    (void)arg;
    if (st != PGCONN_OK && st != PGCONN_DOWN)
        log_warn("store: LISTEN failed: %s", error ? error : "unknown error");
}

/* "LISTEN <channel>" as a statement libpq can pipeline (extended protocol, no parameters). */
static bool send_listen(struct pgconn *c, const char *channel, pgconn_done_cb *cb, void *arg,
                        struct pgreq **out)
{
    char *id = PQescapeIdentifier(c->pg, channel, strlen(channel));
    if (id == NULL)
        return false;
    char sql[300];
    snprintf(sql, sizeof sql, "LISTEN %s", id);
    PQfreemem(id);
    if (!PQsendQueryParams(c->pg, sql, 0, NULL, NULL, NULL, NULL, 0))
        return false;
    if (out == NULL) { /* one LISTEN alone: its own request */
        struct pgreq *q = req_new(1, cb, arg);
        q->internal = true;
        if (!PQpipelineSync(c->pg)) {
            req_free(q);
            return false;
        }
        q->sent_ms = loop_now(c->loop);
        list_push_back(&c->sent, &q->link);
        if (list_first(&c->sent) == &q->link)
            deadline_rearm(c);
    }
    return true;
}

/* Connected: pipeline mode, then every statement prepared and every channel listened to, as
 * one internal request whose end makes the connection READY. */
static void connected(struct pgconn *c)
{
    if (PQsetnonblocking(c->pg, 1) != 0 || PQenterPipelineMode(c->pg) != 1) {
        drop(c, PGCONN_DOWN, PQerrorMessage(c->pg));
        return;
    }
    c->state = C_PREPARING;
    struct pgreq *q = req_new(c->nstmts + c->nchannels, prepared, c);
    q->internal = true;
    bool ok = true;
    for (size_t i = 0; ok && i < c->nstmts; i++)
        ok = PQsendPrepare(c->pg, c->stmts[i].name, c->stmts[i].sql, 0, NULL) == 1;
    for (size_t i = 0; ok && i < c->nchannels; i++)
        ok = send_listen(c, c->channels[i], NULL, NULL, &q);
    c->nlistened = c->nchannels;
    ok = ok && PQpipelineSync(c->pg) == 1;
    if (!ok) {
        req_free(q);
        drop(c, PGCONN_DOWN, PQerrorMessage(c->pg));
        return;
    }
    q->sent_ms = loop_now(c->loop);
    list_push_back(&c->sent, &q->link);
    deadline_rearm(c);
    flush_out(c);
}

/* While connecting libpq may close its socket and open another (another host of the URL, an
 * address family, a retry without SSL), often under the same number, which epoll forgot with
 * the old one: the watch is made anew after every step. */
static void watch_renew(struct pgconn *c, uint32_t events)
{
    loop_watch_del(c->watch);
    c->watch = NULL;
    watch_set(c, events);
}

static void connect_poll(struct pgconn *c)
{
    switch (PQconnectPoll(c->pg)) {
    case PGRES_POLLING_READING:
        watch_renew(c, EPOLLIN);
        break;
    case PGRES_POLLING_WRITING:
        watch_renew(c, EPOLLOUT);
        break;
    case PGRES_POLLING_OK:
        deadline_arm(c, 0);
        connected(c);
        break;
    default:
        drop(c, PGCONN_DOWN, PQerrorMessage(c->pg));
        break;
    }
}

/* The server's notices (a WARNING as it shuts down, say): to our log, not libpq's stderr. */
static void notice(void *arg, const char *message)
{
    char *line = one_line(message);
    (void)arg;
    log_info("store: PostgreSQL says: %s", line);
    free(line);
}

static void connect_begin(struct pgconn *c)
{
    /* Our defaults first, so the URL's own settings (expanded from dbname) win; TCP keepalives
     * find a dead link while nothing is asked of it (a LISTEN connection's silence). */
    const char *keys[] = {"application_name",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "dbname",
                          "client_encoding",
                          "password",
                          NULL};
    const char *vals[] = {"hermes-mcp", "10", "5", "3", c->conninfo, "UTF8", c->password, NULL};
    if (c->password == NULL) /* libpq's own sources: keep the key out */
        keys[6] = NULL;
    c->pg = PQconnectStartParams(keys, vals, 1);
    if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD) {
        drop(c, PGCONN_DOWN, c->pg ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    PQsetNoticeProcessor(c->pg, notice, c);
    c->state = C_CONNECTING;
    deadline_arm(c, loop_now(c->loop));
    watch_set(c, EPOLLOUT); /* as if PQconnectPoll had said PGRES_POLLING_WRITING */
}

static void connect_start(struct loop *l, void *arg)
{
    struct pgconn *c = arg;
    (void)l;
    c->retry = NULL;
    enter(c);
    connect_begin(c);
    leave(c);
}

/* ---------- the socket ---------- */

static void on_io(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct pgconn *c = arg;
    (void)l;
    (void)fd;
    enter(c);
    if (c->state == C_CONNECTING) {
        connect_poll(c);
    } else {
        if ((events & EPOLLOUT) && c->pg)
            flush_out(c);
        if (c->pg && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) {
            if (!PQconsumeInput(c->pg))
                drop(c, PGCONN_TIMEOUT, PQerrorMessage(c->pg));
            else if (drain(c))
                notifications(c);
        }
    }
    leave(c);
}

/* ---------- the interface ---------- */

static void later_fire(struct loop *l, void *arg)
{
    struct pgconn *c = arg;
    (void)l;
    c->later = NULL;
    enter(c);
    /* Those refused so far: one refused again by its own callback waits for the next turn. */
    struct list now;
    list_init(&now);
    list_splice_back(&now, &c->failed);
    while (!list_empty(&now)) {
        struct pgreq *q = list_entry(list_first(&now), struct pgreq, link);
        list_unlink(&q->link);
        if (c->freeing)
            list_push_back(&c->failed, &q->link); /* pgconn_free calls it back */
        else
            req_finish(c, q);
    }
    leave(c);
}

static void refuse(struct pgconn *c, struct pgreq *q, enum pgconn_status st, const char *why)
{
    q->st = st;
    if (q->error == NULL)
        q->error = xstrdup(why);
    list_push_back(&c->failed, &q->link);
    if (c->later == NULL)
        c->later = loop_timer_add(c->loop, 0, later_fire, c);
}

struct pgconn *pgconn_new(const struct pgconn_opts *o)
{
    char why[300];
    if (o->loop == NULL || o->conninfo == NULL)
        return NULL;
    if (!pgrt_load(why, sizeof why)) {
        log_error("store: %s", why);
        return NULL;
    }
    struct pgconn *c = xcalloc(1, sizeof *c);
    c->loop = o->loop;
    c->conninfo = xstrdup(o->conninfo);
    c->password = o->password ? xstrdup(o->password) : NULL;
    c->stmts = o->stmts;
    c->nstmts = o->nstmts;
    c->queue_max = o->queue_max ? o->queue_max : QUEUE_MAX_DEFAULT;
    c->timeout_ms = o->timeout_ms ? o->timeout_ms : TIMEOUT_MS_DEFAULT;
    c->on_notify = o->on_notify;
    c->on_state = o->on_state;
    c->arg = o->arg;
    c->fd = -1;
    c->backoff_ms = BACKOFF_MIN_MS;
    list_init(&c->sent);
    list_init(&c->failed);
    c->retry = loop_timer_add(c->loop, 0, connect_start, c);
    return c;
}

bool pgconn_up(const struct pgconn *c)
{
    return c && c->state == C_READY;
}

bool pgconn_idle(const struct pgconn *c)
{
    return c == NULL || (list_empty(&c->sent) && list_empty(&c->failed));
}

unsigned pgconn_retry_in_ms(const struct pgconn *c)
{
    if (c == NULL || c->state != C_IDLE || c->retry_at == 0)
        return 0;
    uint64_t now = loop_now(c->loop);
    return c->retry_at > now ? (unsigned)(c->retry_at - now) : 0;
}

void pgconn_send(struct pgconn *c, const struct pgconn_query *qs, size_t n, pgconn_done_cb *cb,
                 void *arg)
{
    struct pgreq *q = req_new(n, cb, arg);
    if (c->state != C_READY || c->freeing) {
        refuse(c, q, PGCONN_DOWN, "the database is not connected");
        return;
    }
    if (c->nsent >= c->queue_max) {
        refuse(c, q, PGCONN_BUSY, "too many database requests in flight");
        return;
    }
    if (send_req(c, q, qs)) {
        c->nsent++;
        flush_out(c);
    } else {
        /* libpq refused this request (too many parameters, say) or the link is gone: this one
         * fails, and the connection is made again from the loop, as part of the request may
         * be in the pipeline without its Sync. */
        char *why = xstrdup(q->error ? q->error : "the request could not be sent");
        refuse(c, q, PGCONN_FAILED, why);
        drop_later(c, PGCONN_TIMEOUT, why);
        free(why);
    }
}

void pgconn_send_one(struct pgconn *c, const char *stmt, int nparams, const char *const *params,
                     pgconn_done_cb *cb, void *arg)
{
    struct pgconn_query q = {stmt, nparams, params};
    pgconn_send(c, &q, 1, cb, arg);
}

void pgconn_settle(struct pgconn *c, unsigned max_ms)
{
    if (c == NULL)
        return;
    uint64_t until = loop_now(c->loop) + max_ms;
    while (pgconn_up(c) && !pgconn_idle(c) && loop_now(c->loop) < until)
        loop_once(c->loop, 50);
}

void pgconn_listen(struct pgconn *c, const char *channel)
{
    if (strlen(channel) > PGCONN_CHANNEL_MAX) {
        log_error("BUG: store: channel name over %d bytes: %.40s...", PGCONN_CHANNEL_MAX, channel);
        return;
    }
    for (size_t i = 0; i < c->nchannels; i++)
        if (strcmp(c->channels[i], channel) == 0)
            return;
    c->channels = xrealloc(c->channels, (c->nchannels + 1) * sizeof *c->channels);
    c->channels[c->nchannels++] = xstrdup(channel);
    if (c->state == C_READY && !c->freeing) {
        if (send_listen(c, channel, listen_failed, NULL, NULL))
            flush_out(c);
        else
            drop_later(c, PGCONN_TIMEOUT, PQerrorMessage(c->pg));
        c->nlistened = c->nchannels;
    }
}

void pgconn_free(struct pgconn *c)
{
    if (c == NULL)
        return;
    c->freeing = true;
    if (c->depth > 0)
        return; /* the callback's caller frees it when the callback returns */
    /* Every request still here is called back once, DOWN; one made meanwhile (by such a
     * callback) is refused and called back in turn. */
    c->depth++;
    c->state = C_IDLE;
    while (!list_empty(&c->failed) || !list_empty(&c->sent)) {
        bool sent = list_empty(&c->failed);
        struct pgreq *q = list_entry(list_first(sent ? &c->sent : &c->failed), struct pgreq, link);
        list_unlink(&q->link);
        if (sent) {
            q->st = PGCONN_DOWN;
            if (q->error == NULL)
                q->error = xstrdup("the store is shutting down");
            if (q->internal) /* nothing to tell */
                q->cb = NULL;
        }
        req_finish(c, q);
    }
    loop_timer_cancel(c->later);
    loop_timer_cancel(c->dropping);
    free(c->drop_why);
    loop_timer_cancel(c->retry);
    loop_timer_cancel(c->deadline);
    loop_watch_del(c->watch);
    if (c->pg)
        PQfinish(c->pg);
    for (size_t i = 0; i < c->nchannels; i++)
        free(c->channels[i]);
    free(c->channels);
    if (c->password)
        explicit_bzero(c->password, strlen(c->password));
    free(c->password);
    free(c->conninfo);
    free(c);
}
