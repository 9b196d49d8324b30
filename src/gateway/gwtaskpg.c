/* gwtaskpg.c — the gateway's MCP tasks shared through the store (gwtaskpg.h). Every value
 * travels as a bound parameter of a prepared statement; the SQL below is fixed text. */
#include "gwtaskpg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "pgconn.h"
#include "scopes.h"
#include "timefmt.h"

#define CHANNEL_END "hm_gwtask"           /* payload: the id of a task that ended */
#define CHANNEL_CANCEL "hm_gwtask_cancel" /* payload: the id of a task to cancel */
#define PURGE_EVERY 30                    /* beats: ended rows are purged once a minute */
#define KEEP_MS "3600000"                 /* an ended task is kept an hour (as in memory) */
#define STOP_WAIT_MS 1000
#define ID_MAX 160      /* longer than any id of ours */
#define POLL_MS 2000u   /* a person decides in seconds: no need to poll a task faster */
#define LOST_MAX "1100" /* rows read at a reconnect: more than a replica's tasks (1024) */
/* pgconn's longest wait before it connects again: how long a live holder may stay away after
 * the database came back. */
#define PEER_BACKOFF_MS 5000
/* After our own connection came up (the first time, or after the database was away), every
 * row may look silent: a live holder needs its backoff to come back, then a beat to touch its
 * rows, and only then may a silence of the limit count. */
#define GRACE_MS (PEER_BACKOFF_MS + GWTASKPG_BEAT_MS + GWTASKPG_GONE_MS)

/* A working row its holder has not touched within $2 ms: the holder is gone. */
#define SILENT "status = 'working' AND seen_at < now() - $2::bigint * interval '1 ms'"
#define ENDED_GONE                                                                                 \
    "UPDATE hm_gwtask SET status = 'failed', message = $3, result = $4, updated_at = now(),"       \
    " ended_at = now()"

static const struct pgconn_stmt stmts[] = {
    /* Only the holder writes, and never over an ended row (a holder cut off long enough to
     * count as gone finds its tasks ended by another replica): a row returned is a row
     * written (a compare-and-set). The end is notified at commit. */
    {"gwt_put",
     "WITH w AS (INSERT INTO hm_gwtask AS t (id, owner, holder, upstream, status, message,"
     " result, ttl_ms, created_at, updated_at, ended_at) VALUES ($1, $2, $3, $4, $5::text, $6,"
     " $7, $8::bigint, to_timestamp($9::bigint), to_timestamp($10::bigint),"
     " CASE WHEN $5::text = 'working' THEN NULL ELSE now() END)"
     " ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, message = EXCLUDED.message,"
     " result = EXCLUDED.result, updated_at = EXCLUDED.updated_at, ended_at = EXCLUDED.ended_at,"
     " seen_at = now() WHERE t.holder = EXCLUDED.holder AND t.status = 'working'"
     " RETURNING t.id, t.status)"
     " SELECT id, CASE WHEN status <> 'working' THEN pg_notify('" CHANNEL_END "', id) END"
     " IS NULL FROM w"},
    /* The holder's beat, on the connection that writes its tasks. */
    {"gwt_seen", "UPDATE hm_gwtask SET seen_at = now() WHERE holder = $1 AND status = 'working'"},
    {"gwt_gone_one", "WITH f AS (" ENDED_GONE " WHERE id = $1 AND " SILENT " RETURNING id)"
                     " SELECT pg_notify('" CHANNEL_END "', id) FROM f"},
    {"gwt_gone_all", "WITH f AS (" ENDED_GONE " WHERE id IN (SELECT id FROM hm_gwtask"
                     " WHERE holder <> $1 AND " SILENT
                     " LIMIT 500 FOR UPDATE SKIP LOCKED) AND status = 'working' RETURNING id)"
                     " SELECT pg_notify('" CHANNEL_END "', id) FROM f"},
    {"gwt_status", "SELECT status, message FROM hm_gwtask WHERE id = $1"},
    /* Tasks of this holder that other replicas ended as its (heard of at a reconnect). */
    {"gwt_lost", "SELECT id FROM hm_gwtask WHERE holder = $1 AND status = 'failed'"
                 " AND message = $2 LIMIT " LOST_MAX},
    {"gwt_get", "SELECT owner, upstream, status, message, result, ttl_ms,"
                " extract(epoch FROM created_at)::bigint, extract(epoch FROM updated_at)::bigint"
                " FROM hm_gwtask WHERE id = $1"},
    {"gwt_cancel", "WITH c AS (UPDATE hm_gwtask SET cancel_requested = true"
                   " WHERE id = $1 AND status = 'working' RETURNING id)"
                   " SELECT pg_notify('" CHANNEL_CANCEL "', id) FROM c"},
    {"gwt_asked", "SELECT id FROM hm_gwtask WHERE holder = $1 AND status = 'working'"
                  " AND cancel_requested"},
    {"gwt_purge", "DELETE FROM hm_gwtask WHERE ended_at < now() - $1::bigint * interval '1 ms'"},
};

struct gwtaskpg {
    struct gateway *g;
    struct gw_tasks *all;
    struct pgconn *conn;
    struct loop_timer *sweep;
    unsigned sweeps;
    bool closing;   /* gwtaskpg_stop: nothing more reaches the engine or the callers */
    uint64_t up_at; /* loop ms when the connection last came up */
    char gone_ms[24];
    char *gone_err; /* the error object of a task ended with its holder, as JSON */
};

/* A write with its caller's callback. */
struct put {
    struct gwtaskpg *p;
    gwtaskpg_done_cb *done;
    void *arg;
    unsigned seq;
    char id[ID_MAX];
};

/* A request about a task held elsewhere (c: NULL once the call went away). */
struct ask {
    struct gwtaskpg *p;
    struct mcp_call *c;
    enum gwtaskpg_op op;
    char id[ID_MAX];
};

/* What a statement was doing, for its failure's log line. */
enum what { W_PUT, W_READ, W_CANCEL, W_ENDED, W_ASKED, W_GONE, W_PURGE, W_SEEN, W_LOST };
static const char *const what_text[] = {"writing a task",
                                        "reading a task",
                                        "asking for a cancel",
                                        "reading an ended task",
                                        "reading the cancels asked",
                                        "ending the tasks of gone replicas",
                                        "purging ended tasks",
                                        "touching the tasks held here",
                                        "reading the tasks ended as this replica's"};

static void warn(enum pgconn_status st, const char *error, enum what w)
{
    if (st == PGCONN_FAILED)
        log_warn("store: gateway tasks: %s failed: %s", what_text[w],
                 error ? error : "unknown error");
}

/* The callback of a statement nobody waits for (arg: its enum what). */
static void logged(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                   void *arg)
{
    (void)res;
    (void)n;
    warn(st, error, (enum what)(uintptr_t)arg);
}

/* ---------- the holder's writes ---------- */

json_t *gwtaskpg_view_json(const struct gw_task_view *v)
{
    char created[TIMEFMT_SIZE], updated[TIMEFMT_SIZE];
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "taskId", v->id, "status", v->status,
                          "createdAt", timefmt_iso(v->created, created), "lastUpdatedAt",
                          timefmt_iso(v->updated, updated), "pollIntervalMs", (json_int_t)POLL_MS,
                          "ttlMs", (json_int_t)v->ttl_ms);
    if (v->message)
        json_object_set_new(o, "statusMessage", json_string(v->message));
    if (v->outcome && strcmp(v->status, "completed") == 0) {
        json_t *result = json_copy(v->outcome); /* shallow: only resultType is added */
        json_object_set_new(result, "resultType", json_string("complete"));
        json_object_set_new(o, "result", result);
    } else if (v->outcome && strcmp(v->status, "failed") == 0) {
        json_object_set(o, "error", v->outcome);
    }
    return o;
}

/* Whether gwt_status's row (r) is one another replica ended as its holder's. */
static bool ended_elsewhere(const PGresult *r)
{
    return PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "working") != 0 &&
           !PQgetisnull(r, 0, 1) && strcmp(PQgetvalue(r, 0, 1), GWTASKPG_GONE_MESSAGE) == 0;
}

static void put_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                     void *arg)
{
    struct put *w = arg;
    enum gwtaskpg_put_result r = GWTASKPG_LOST;
    warn(st, error, W_PUT);
    if (w->p->closing)
        r = GWTASKPG_CLOSED;
    else if (st == PGCONN_OK && n == 2) /* refused: ended by another replica, or by us before */
        r = PQntuples(res[0]) == 1 || !ended_elsewhere(res[1]) ? GWTASKPG_WRITTEN : GWTASKPG_ENDED;
    if (w->done)
        w->done(r, w->arg);
    if (r != GWTASKPG_CLOSED)
        gw_task_written(w->p->all, w->id, w->seq, r);
    free(w);
}

void gwtaskpg_put(struct gwtaskpg *p, const char *owner, const char *upstream,
                  const struct gw_task_view *v, unsigned seq, gwtaskpg_done_cb *done, void *arg)
{
    char ttl[24], created[24], updated[24];
    char *outcome = v->outcome ? json_dumps(v->outcome, JSON_COMPACT) : NULL;
    snprintf(ttl, sizeof ttl, "%lld", v->ttl_ms);
    snprintf(created, sizeof created, "%lld", (long long)v->created);
    snprintf(updated, sizeof updated, "%lld", (long long)v->updated);
    const char *params[10] = {v->id,   owner, p->g->replica_id, upstream, v->status, v->message,
                              outcome, ttl,   created,          updated};
    struct put *w = xcalloc(1, sizeof *w);
    w->p = p;
    w->done = done;
    w->arg = arg;
    w->seq = seq;
    snprintf(w->id, sizeof w->id, "%s", v->id);
    const char *check[1] = {w->id};
    const struct pgconn_query q[2] = {{"gwt_put", 10, params}, {"gwt_status", 1, check}};
    pgconn_send(p->conn, q, 2, put_done, w); /* params copied */
    free(outcome);
}

void gwtaskpg_put_stopped(struct gwtaskpg *p, const char *owner, const char *upstream,
                          const struct gw_task_view *v)
{
    const char *why = "the server holding this task stopped before it ended; call the tool again";
    json_t *error = json_pack("{s:i, s:s}", "code", JRPC_INTERNAL_ERROR, "message", why);
    struct gw_task_view ended = *v;
    ended.status = "failed";
    ended.message = why;
    ended.outcome = error;
    ended.updated = time(NULL);
    gwtaskpg_put(p, owner, upstream, &ended, 0, NULL, NULL);
    json_decref(error);
}

/* Whether the holders' beats can be judged: the connection has been up long enough for every
 * live holder to have touched its rows again since (GRACE_MS). */
static bool judging(const struct gwtaskpg *p)
{
    return pgconn_up(p->conn) && loop_now(p->g->loop) - p->up_at >= GRACE_MS;
}

/* ---------- requests about a task held elsewhere ---------- */

static void ask_cancelled(struct mcp_call *c, void *arg)
{
    struct ask *a = arg;
    (void)c;
    a->c = NULL;
}

void gwtaskpg_unavailable(const struct gwtaskpg *p, struct mcp_call *c)
{
    mcp_call_unavailable(c, gwtaskpg_retry_after_s(p),
                         "Temporarily unavailable: the database that shares the gateway's tasks "
                         "between replicas cannot be reached; try again later");
}

/* The task of the row (gwt_get's columns) as tasks/get answers it (new reference). */
static json_t *row_json(const char *id, const PGresult *r)
{
    json_t *outcome =
        PQgetisnull(r, 0, 4) ? NULL : json_loads(PQgetvalue(r, 0, 4), JSON_DECODE_ANY, NULL);
    struct gw_task_view v = {.id = id,
                             .status = PQgetvalue(r, 0, 2),
                             .message = PQgetisnull(r, 0, 3) ? NULL : PQgetvalue(r, 0, 3),
                             .outcome = outcome,
                             .ttl_ms = atoll(PQgetvalue(r, 0, 5)),
                             .created = (time_t)atoll(PQgetvalue(r, 0, 6)),
                             .updated = (time_t)atoll(PQgetvalue(r, 0, 7))};
    json_t *o = gwtaskpg_view_json(&v);
    json_decref(outcome);
    return o;
}

static void cancel_asked(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                         void *arg)
{
    struct ask *a = arg;
    (void)res;
    (void)n;
    warn(st, error, W_CANCEL);
    if (a->c)
        mcp_call_on_cancel(a->c, NULL, NULL); /* a is freed here, answered or not */
    if (a->c && !a->p->closing) {
        if (st == PGCONN_OK)
            mcp_call_result_take(a->c, json_object()); /* an ended task: the same answer */
        else
            gwtaskpg_unavailable(a->p, a->c);
        a->c = NULL;
    }
    free(a);
}

/* The row read (a task of a gone holder ended first): answered as the holder answers. */
static void row_read(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                     void *arg)
{
    struct ask *a = arg;
    warn(st, error, W_READ);
    if (a->c)
        mcp_call_on_cancel(a->c, NULL, NULL); /* a is freed here, answered or not */
    if (a->c == NULL || a->p->closing) {
        free(a);
        return;
    }
    struct mcp_call *c = a->c;
    const PGresult *r = st == PGCONN_OK && n > 0 ? res[n - 1] : NULL;
    /* Another caller's is answered in the same words as none; the owner token and hermes:admin
     * reach every caller's (as on the holder). */
    bool found = r && PQntuples(r) == 1 &&
                 (strcmp(PQgetvalue(r, 0, 0), mcp_call_caller(c)) == 0 || mcp_call_sees_all(c));
    char scope[160];
    if (found)
        snprintf(scope, sizeof scope, SCOPE_GATEWAY_PREFIX "%s", PQgetvalue(r, 0, 1));
    if (r == NULL) {
        gwtaskpg_unavailable(a->p, a->c);
    } else if (!found) {
        mcp_call_task_not_found(c);
    } else if (!mcp_call_allowed(c, scope)) {
        mcp_call_task_forbidden(c);
    } else if (a->op == GWTASKPG_GET) {
        mcp_call_result_take(c, row_json(a->id, r));
    } else if (a->op == GWTASKPG_CANCEL && strcmp(PQgetvalue(r, 0, 2), "working") == 0) {
        /* The holder hears of it and cancels as a local tasks/cancel does. */
        mcp_call_on_cancel(c, ask_cancelled, a);
        const char *params[1] = {a->id};
        pgconn_send_one(a->p->conn, "gwt_cancel", 1, params, cancel_asked, a);
        return;
    } else {
        mcp_call_result_take(c, json_object()); /* update: acknowledged; cancel: ended */
    }
    a->c = NULL;
    free(a);
}

void gwtaskpg_ask(struct gwtaskpg *p, struct mcp_call *c, const char *id, enum gwtaskpg_op op)
{
    struct ask *a = xcalloc(1, sizeof *a);
    if (strlen(id) >= ID_MAX) {
        free(a);
        mcp_call_task_not_found(c);
        return;
    }
    a->p = p;
    a->c = c;
    a->op = op;
    snprintf(a->id, sizeof a->id, "%s", id);
    mcp_call_on_cancel(c, ask_cancelled, a);
    const char *gone[4] = {a->id, p->gone_ms, GWTASKPG_GONE_MESSAGE, p->gone_err};
    const char *get[1] = {a->id};
    const struct pgconn_query q[2] = {{"gwt_gone_one", 4, gone}, {"gwt_get", 1, get}};
    bool judged = judging(p); /* a task of a gone holder ends first */
    pgconn_send(p->conn, judged ? q : q + 1, judged ? 2 : 1, row_read, a);
}

/* ---------- what other replicas tell ---------- */

/* A task held elsewhere ended: the streams here that watch it hear it. */
static void end_read(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                     void *arg)
{
    struct ask *a = arg;
    warn(st, error, W_ENDED);
    if (st == PGCONN_OK && n == 1 && PQntuples(res[0]) == 1 && !a->p->closing) {
        json_t *o = row_json(a->id, res[0]);
        mcp_task_notify(a->p->g->mcp, PQgetvalue(res[0], 0, 0), o);
        json_decref(o);
    }
    free(a);
}

/* A task held here ended in the store: by another replica, the holder counted as gone? */
static void held_end_read(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                          void *arg)
{
    struct ask *a = arg;
    warn(st, error, W_ENDED);
    if (st == PGCONN_OK && n == 1 && ended_elsewhere(res[0]) && !a->p->closing)
        gw_task_lost(a->p->all, a->id);
    free(a);
}

static void on_notify(const char *channel, const char *payload, void *arg)
{
    struct gwtaskpg *p = arg;
    if (p->closing || strlen(payload) >= ID_MAX)
        return;
    if (strcmp(channel, CHANNEL_CANCEL) == 0) {
        gw_task_cancel_held(p->all, payload); /* nothing when not held here */
    } else if (strcmp(channel, CHANNEL_END) == 0 && gw_task_open(p->all, payload)) {
        struct ask *a = xcalloc(1, sizeof *a); /* not our own end: we are still working */
        a->p = p;
        snprintf(a->id, sizeof a->id, "%s", payload);
        const char *params[1] = {a->id};
        pgconn_send_one(p->conn, "gwt_status", 1, params, held_end_read, a);
    } else if (strcmp(channel, CHANNEL_END) == 0 && !gw_task_held(p->all, payload) &&
               mcp_task_watched(p->g->mcp, payload)) {
        struct ask *a = xcalloc(1, sizeof *a);
        a->p = p;
        snprintf(a->id, sizeof a->id, "%s", payload);
        const char *params[1] = {a->id};
        pgconn_send_one(p->conn, "gwt_get", 1, params, end_read, a);
    }
}

/* Cancels asked while the connection was down (their notices lost). */
static void asked_read(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                       void *arg)
{
    struct gwtaskpg *p = arg;
    warn(st, error, W_ASKED);
    if (st != PGCONN_OK || n != 1 || p->closing)
        return;
    for (int i = 0; i < PQntuples(res[0]); i++)
        gw_task_cancel_held(p->all, PQgetvalue(res[0], i, 0));
}

/* Tasks held here that other replicas ended while we were away (their notices lost). */
static void lost_read(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                      void *arg)
{
    struct gwtaskpg *p = arg;
    warn(st, error, W_LOST);
    if (st != PGCONN_OK || n != 1 || p->closing)
        return;
    for (int i = 0; i < PQntuples(res[0]); i++)
        gw_task_lost(p->all, PQgetvalue(res[0], i, 0)); /* nothing when ended here already */
}

/* The holder's beat: its working rows touched, its writes that were lost written again. */
static void beat(struct gwtaskpg *p)
{
    const char *me[1] = {p->g->replica_id};
    pgconn_send_one(p->conn, "gwt_seen", 1, me, logged, (void *)(uintptr_t)W_SEEN);
    gw_task_share_dirty(p->all);
}

/* Up again (or for the first time): the rows touched and the writes lost while the database
 * was away written again; what other replicas did meanwhile (the ends of tasks held here, the
 * cancels asked) is read. */
static void on_state(bool up, const char *why, void *arg)
{
    struct gwtaskpg *p = arg;
    (void)why;
    if (!up || p->closing)
        return;
    p->up_at = loop_now(p->g->loop);
    beat(p);
    const char *params[1] = {p->g->replica_id};
    pgconn_send_one(p->conn, "gwt_asked", 1, params, asked_read, p);
    const char *lost[2] = {p->g->replica_id, GWTASKPG_GONE_MESSAGE};
    pgconn_send_one(p->conn, "gwt_lost", 2, lost, lost_read, p);
}

static void sweep(struct loop *l, void *arg)
{
    struct gwtaskpg *p = arg;
    p->sweep = loop_timer_add(l, GWTASKPG_BEAT_MS, sweep, p);
    if (!pgconn_up(p->conn))
        return;
    beat(p);
    if (!judging(p))
        return;
    const char *gone[4] = {p->g->replica_id, p->gone_ms, GWTASKPG_GONE_MESSAGE, p->gone_err};
    pgconn_send_one(p->conn, "gwt_gone_all", 4, gone, logged, (void *)(uintptr_t)W_GONE);
    if (++p->sweeps % PURGE_EVERY == 0) {
        const char *keep[1] = {KEEP_MS};
        pgconn_send_one(p->conn, "gwt_purge", 1, keep, logged, (void *)(uintptr_t)W_PURGE);
    }
}

/* ---------- life ---------- */

struct gwtaskpg *gwtaskpg_start(struct gateway *g, struct gw_tasks *all)
{
    if (g->store_url == NULL || g->replica_id == NULL)
        return NULL;
    struct gwtaskpg *p = xcalloc(1, sizeof *p);
    p->g = g;
    p->all = all;
    snprintf(p->gone_ms, sizeof p->gone_ms, "%u", (unsigned)GWTASKPG_GONE_MS);
    json_t *err =
        json_pack("{s:i, s:s}", "code", JRPC_INTERNAL_ERROR, "message", GWTASKPG_GONE_MESSAGE);
    p->gone_err = json_dumps(err, JSON_COMPACT);
    json_decref(err);
    struct pgconn_opts o = {.loop = g->loop,
                            .conninfo = g->store_url,
                            .password = g->store_password,
                            .stmts = stmts,
                            .nstmts = sizeof stmts / sizeof *stmts,
                            .on_notify = on_notify,
                            .on_state = on_state,
                            .arg = p};
    p->conn = pgconn_new(&o);
    if (p->conn == NULL) {
        free(p->gone_err);
        free(p);
        return NULL;
    }
    pgconn_listen(p->conn, CHANNEL_END);
    pgconn_listen(p->conn, CHANNEL_CANCEL);
    p->sweep = loop_timer_add(g->loop, GWTASKPG_BEAT_MS, sweep, p);
    return p;
}

void gwtaskpg_stop(struct gwtaskpg *p)
{
    if (p == NULL)
        return;
    p->closing = true;
    loop_timer_cancel(p->sweep);
    pgconn_settle(p->conn, STOP_WAIT_MS); /* the last writes (tasks ended by the stop) */
    pgconn_free(p->conn);                 /* every request in flight is called back */
    free(p->gone_err);
    free(p);
}

bool gwtaskpg_up(const struct gwtaskpg *p)
{
    return pgconn_up(p->conn);
}

unsigned gwtaskpg_retry_after_s(const struct gwtaskpg *p)
{
    return (pgconn_retry_in_ms(p->conn) + 999) / 1000 + 1;
}
