/* taskspg.c — task records in PostgreSQL (taskspg.h). Every value travels as a bound
 * parameter of a prepared statement; the SQL below is fixed text. */
#include "taskspg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "pgconn.h"
#include "strmap.h"

#define BATCH_MAX 128              /* writes in one transaction */
#define CACHE_TASKS_MAX 4096       /* tasks kept loaded */
#define CACHE_BYTES_MAX (32 << 20) /* ... and their documents' bytes */
#define TAKEOVER_MS 2000           /* how often the runs of gone replicas are looked for */
#define TAKEOVER_MAX "64"          /* runs taken in one look */
#define FOLLOWED_MAX "4096"        /* runs hermes_reset reads back in one go */
#define FREE_WAIT_MS 3000
#define PRUNE_BATCH "500" /* rows one retention statement removes */
#define CHANNEL "hm_task" /* NOTIFY of a task's end; its payload is the task id */

/* A replica whose heartbeat (every 2 s) is older than this is gone: its runs are taken over.
 * With TAKEOVER_MS, a run is followed again within 10 s of its follower's death. */
#define GONE_AFTER "6 seconds"
#define GONE_AFTER_MS 6000
/* After an outage of the whole database every replica's heartbeat looks old at first: a run is
 * taken over only once this replica's connection has been up long enough for every live one to
 * be back (its own reconnection waits at most RECONNECT_MAX_MS, pgconn's backoff), to have
 * beaten again (every HEARTBEAT_MS) and to have been judged on that beat (GONE_AFTER_MS), as the
 * gateway's tasks wait before judging their holders. Else a follower that kept its run's result
 * through the outage would lose the run to a taker, who finds the agent forgot it. */
#define HEARTBEAT_MS 2000
#define RECONNECT_MAX_MS 5000
#define SETTLED_MS (GONE_AFTER_MS + HEARTBEAT_MS + RECONNECT_MAX_MS)

/* A load: the documents, and whether another replica that is alive created the task (a retry
 * of it here must not start it a second time). */
#define LOAD_COLUMNS                                                                               \
    "id, request, run, result, created_by IS NOT NULL AND created_by <> $2 AND created_by IN"      \
    " (SELECT id FROM hm_replica WHERE seen_at > now() - interval '" GONE_AFTER "')"

static const struct pgconn_stmt stmts[] = {
    {"w0", "INSERT INTO hm_task (id, request, created_by) VALUES ($1, $2, $3)"
           " ON CONFLICT (id) DO UPDATE SET request = EXCLUDED.request,"
           " created_by = EXCLUDED.created_by, version = hm_task.version + 1"},
    {"w1", "INSERT INTO hm_task (id, run, run_id, follower) VALUES ($1, $2, $3, $4)"
           " ON CONFLICT (id) DO UPDATE SET run = EXCLUDED.run, run_id = EXCLUDED.run_id,"
           " follower = EXCLUDED.follower, version = hm_task.version + 1"},
    /* The first result wins: a second follower's (a takeover while the first was only slow)
     * or a status call's is dropped, and the row returned only when this one was kept; then
     * every replica hears of the end at commit (a listener may watch the task anywhere). */
    {"w2", "WITH w AS (INSERT INTO hm_task (id, result, finished_at) VALUES ($1, $2, now())"
           " ON CONFLICT (id) DO UPDATE SET result = EXCLUDED.result, finished_at = now(),"
           " follower = NULL, version = hm_task.version + 1 WHERE hm_task.result IS NULL"
           " RETURNING id) SELECT id, pg_notify('" CHANNEL "', id) FROM w"},
    {"r0", "UPDATE hm_task SET request = NULL, version = version + 1 WHERE id = $1"},
    {"r1", "UPDATE hm_task SET run = NULL, run_id = NULL, follower = NULL,"
           " version = version + 1 WHERE id = $1"},
    {"r2", "UPDATE hm_task SET result = NULL, finished_at = NULL, version = version + 1"
           " WHERE id = $1"},
    {"rm", "DELETE FROM hm_task WHERE id = $1 AND request IS NULL AND run IS NULL"
           " AND result IS NULL"},
    {"load_id", "SELECT " LOAD_COLUMNS " FROM hm_task WHERE id = $1"},
    {"load_run", "SELECT " LOAD_COLUMNS " FROM hm_task WHERE run_id = $1"
                 " ORDER BY created_at LIMIT 1"},
    /* Retention: finished tasks only (a result), oldest first, a batch at a time. */
    {"prune_age", "DELETE FROM hm_task WHERE id IN (SELECT id FROM hm_task"
                  " WHERE result IS NOT NULL AND finished_at < now() - $1::int * interval '1 day'"
                  " ORDER BY finished_at LIMIT " PRUNE_BATCH ")"},
    {"prune_max", "DELETE FROM hm_task WHERE id IN (SELECT id FROM hm_task"
                  " WHERE result IS NOT NULL ORDER BY finished_at DESC, id DESC"
                  " OFFSET $1::int LIMIT " PRUNE_BATCH ")"},
    /* The rows are locked by the UPDATE (SKIP LOCKED: two replicas looking at once take
     * different runs, never one run twice). */
    {"takeover", "UPDATE hm_task SET follower = $1, version = version + 1 WHERE id IN ("
                 " SELECT id FROM hm_task WHERE run IS NOT NULL AND result IS NULL"
                 " AND follower IS DISTINCT FROM $1 AND (follower IS NULL OR follower NOT IN ("
                 "  SELECT id FROM hm_replica WHERE seen_at > now() - interval '" GONE_AFTER "'))"
                 " ORDER BY created_at LIMIT " TAKEOVER_MAX " FOR UPDATE SKIP LOCKED)"
                 " RETURNING id, request, run, result"},
    /* Which of the watched tasks ended (a reconnection's catch-up), a chunk at a time. */
    {"ended_of", "SELECT " LOAD_COLUMNS " FROM hm_task WHERE id = ANY($1::text[])"
                 " AND result IS NOT NULL"},
    /* The runs this replica follows that have no result yet (hermes_reset). */
    {"followed", "SELECT id, request, run, result FROM hm_task WHERE follower = $1"
                 " AND run IS NOT NULL AND result IS NULL ORDER BY created_at LIMIT " FOLLOWED_MAX},
};

struct wop {
    struct list link;
    struct taskspg *p;
    char id[129];
    int doc;
    bool remove;
    char *text;
    char *run_id;
    tasks_done_cb *done;
    void *arg;
    size_t qidx; /* its statement's index in the batch sent */
};

/* A task as last loaded or written here. */
struct snap {
    struct list lru; /* least recently used first */
    char id[129];
    char *doc[3];
    size_t bytes;
    bool elsewhere; /* created by another replica that is alive, as last loaded */
};

struct taskspg {
    struct loop *loop;
    struct pgconn *conn;
    char *replica_id;
    taskspg_takeover_cb *on_takeover;
    void *arg;
    taskspg_ended_cb *on_ended; /* taskspg_on_ended */
    void *ended_arg;
    uint64_t up_at;       /* loop ms when the connection came up after being down */
    bool was_down;        /* the connection has failed: heartbeats may have stopped meanwhile */
    bool settling;        /* up after being down, for less than SETTLED_MS so far */
    enum taskspg_how how; /* in a write's callback: taskspg_how */
    struct list queue;    /* writes not sent yet */
    struct list inflight; /* the batch sent */
    struct list alone;    /* writes of a failed batch, sent one by one */
    bool sending;
    struct strmap *cache; /* id -> snap */
    struct list lru;
    size_t cache_bytes;
    struct loop_timer *takeover;
    bool taking;
    bool closing; /* taskspg_free: nothing more is sent */
    bool pruning; /* a retention pass is under way */
    bool quiet;   /* taskspg_quiesce: no takeovers, loads answered unavailable */
    /* A pass asked for while the database was away: made when it comes back. */
    bool prune_wanted;
    unsigned prune_days, prune_max;
};

int taskspg_doc(const char *name)
{
    static const char *const names[3] = {"request.json", "run.json", "result.json"};
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* ---------- the cache ---------- */

static void snap_drop(struct taskspg *p, struct snap *s)
{
    strmap_del(p->cache, s->id);
    list_unlink(&s->lru);
    p->cache_bytes -= s->bytes;
    for (int i = 0; i < 3; i++)
        free(s->doc[i]);
    free(s);
}

static void snap_set(struct taskspg *p, struct snap *s, int doc, const char *text)
{
    size_t was = s->doc[doc] ? strlen(s->doc[doc]) : 0, now = text ? strlen(text) : 0;
    free(s->doc[doc]);
    s->doc[doc] = text ? xstrdup(text) : NULL;
    s->bytes = s->bytes - was + now;
    p->cache_bytes = p->cache_bytes - was + now;
}

static struct snap *snap_get(struct taskspg *p, const char *id, bool make)
{
    struct snap *s = strmap_get(p->cache, id);
    if (s) {
        list_unlink(&s->lru); /* the most recently used now */
        list_push_back(&p->lru, &s->lru);
        return s;
    }
    if (!make)
        return NULL;
    s = xcalloc(1, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    strmap_put(p->cache, s->id, s);
    list_push_back(&p->lru, &s->lru);
    return s;
}

/* Evicts the least recently used until the cache is within bounds (keep stays). */
static void cache_trim(struct taskspg *p, struct snap *keep)
{
    while (!list_empty(&p->lru) &&
           (strmap_count(p->cache) > CACHE_TASKS_MAX || p->cache_bytes > CACHE_BYTES_MAX)) {
        struct snap *s = list_entry(p->lru.next, struct snap, lru);
        if (s == keep)
            break;
        snap_drop(p, s);
    }
}

/* What a committed write changes in the cache: a task loaded here stays current; a new task
 * (its request written first) becomes known; a document of a task not loaded is not guessed. */
static void cache_written(struct taskspg *p, const struct wop *w)
{
    struct snap *s = snap_get(p, w->id, !w->remove && w->doc == 0);
    if (s == NULL)
        return;
    snap_set(p, s, w->doc, w->remove ? NULL : w->text);
    if (s->doc[0] == NULL && s->doc[1] == NULL && s->doc[2] == NULL)
        snap_drop(p, s);
    else
        cache_trim(p, s);
}

/* ---------- writes ---------- */

static void send_batch(struct taskspg *p);

static void wop_free(struct wop *w)
{
    free(w->text);
    free(w->run_id);
    free(w);
}

/* A request cut by the connection's death (PGCONN_TIMEOUT) may or may not have run: every
 * write here is safe to repeat, so it counts as the database being away, tried again later. */
static enum tasks_rc rc_of(enum pgconn_status st)
{
    return st == PGCONN_OK                                                  ? TASKS_OK
           : st == PGCONN_DOWN || st == PGCONN_BUSY || st == PGCONN_TIMEOUT ? TASKS_UNAVAILABLE
                                                                            : TASKS_IO;
}

/* A committed result that another result had come before: what this replica holds of the task
 * is stale, and is read again at the next load. */
static bool result_lost(const struct wop *w, PGresult *r)
{
    return !w->remove && w->doc == 2 && r && PQresultStatus(r) == PGRES_TUPLES_OK &&
           PQntuples(r) == 0;
}

static void wop_finish(struct taskspg *p, struct wop *w, enum pgconn_status st, PGresult *r)
{
    enum tasks_rc rc = rc_of(st);
    list_unlink(&w->link);
    p->how = st == PGCONN_TIMEOUT                  ? TASKSPG_TIMED_OUT
             : rc == TASKS_OK && result_lost(w, r) ? TASKSPG_LOST
                                                   : TASKSPG_PLAIN;
    if (p->how == TASKSPG_LOST) {
        struct snap *s = snap_get(p, w->id, false);
        if (s)
            snap_drop(p, s);
        log_info("task %s: a result was stored before this one; it stays", w->id);
    } else if (rc == TASKS_OK) {
        cache_written(p, w);
    }
    if (w->done)
        w->done(rc, w->arg);
    p->how = TASKSPG_PLAIN;
    wop_free(w);
}

enum taskspg_how taskspg_how(const struct taskspg *p)
{
    return p->how;
}

/* The statements of one write: its own, and for a removal the row's removal if it emptied. */
static size_t wop_queries(struct taskspg *p, struct wop *w, struct pgconn_query *q,
                          const char **params)
{
    static const char *const wname[3] = {"w0", "w1", "w2"}, *const rname[3] = {"r0", "r1", "r2"};
    params[0] = w->id;
    if (w->remove) {
        q[0] = (struct pgconn_query){rname[w->doc], 1, params};
        q[1] = (struct pgconn_query){"rm", 1, params};
        return 2;
    }
    params[1] = w->text;
    params[2] = w->run_id;
    params[3] = p->replica_id;
    /* w0: id, text, creator; w1: id, text, run id, follower; w2: id, text. */
    static const int nparams[3] = {3, 4, 2};
    if (w->doc == 0)
        params[2] = p->replica_id;
    q[0] = (struct pgconn_query){wname[w->doc], nparams[w->doc], params};
    return 1;
}

/* A write sent alone is answered. */
static void one_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                     void *arg)
{
    struct wop *w = arg;
    if (st == PGCONN_FAILED)
        log_error("store: task %s: a write failed: %s", w->id, error ? error : "unknown error");
    wop_finish(w->p, w, st, n ? res[0] : NULL);
}

/* A batch failed on a statement: each of its writes is tried alone, so that one write the
 * database refuses fails only itself. */
static void send_alone(struct taskspg *p, struct wop *w)
{
    struct pgconn_query q[2];
    const char *params[4];
    size_t n = wop_queries(p, w, q, params);
    list_push_back(&p->alone, &w->link);
    pgconn_send(p->conn, q, n, one_done, w);
}

static void batch_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                       void *arg)
{
    struct taskspg *p = arg;
    struct list done;
    if (st == PGCONN_FAILED)
        log_warn("store: a batch of task writes failed (%s); writing each alone",
                 error ? error : "unknown error");
    /* Taken off first: a write a callback queues now waits for the next batch. */
    list_init(&done);
    list_splice_back(&done, &p->inflight);
    LIST_FOREACH_SAFE(node, &done)
    {
        struct wop *w = list_entry(node, struct wop, link);
        if (st == PGCONN_FAILED && !p->closing) {
            list_unlink(&w->link);
            send_alone(p, w);
        } else {
            wop_finish(p, w, st, w->qidx < n ? res[w->qidx] : NULL);
        }
    }
    p->sending = false;
    send_batch(p);
}

static void send_batch(struct taskspg *p)
{
    if (p->sending || p->closing || list_empty(&p->queue))
        return;
    struct pgconn_query q[BATCH_MAX * 2];
    const char *params[BATCH_MAX][4];
    size_t nq = 0, nw = 0;
    while (!list_empty(&p->queue) && nw < BATCH_MAX) {
        struct wop *w = list_entry(p->queue.next, struct wop, link);
        list_unlink(&w->link);
        list_push_back(&p->inflight, &w->link);
        w->qidx = nq;
        nq += wop_queries(p, w, q + nq, params[nw++]);
    }
    p->sending = true;
    pgconn_send(p->conn, q, nq, batch_done, p);
}

static void queue_op(struct taskspg *p, struct wop *w)
{
    list_push_back(&p->queue, &w->link);
    send_batch(p);
}

void taskspg_write(struct taskspg *p, const char *id, int doc, const char *text, const char *run_id,
                   tasks_done_cb *done, void *arg)
{
    struct wop *w = xcalloc(1, sizeof *w);
    w->p = p;
    snprintf(w->id, sizeof w->id, "%s", id);
    w->doc = doc;
    w->text = xstrdup(text);
    w->run_id = run_id ? xstrdup(run_id) : NULL;
    w->done = done;
    w->arg = arg;
    queue_op(p, w);
}

void taskspg_remove(struct taskspg *p, const char *id, int doc, tasks_done_cb *done, void *arg)
{
    struct wop *w = xcalloc(1, sizeof *w);
    w->p = p;
    snprintf(w->id, sizeof w->id, "%s", id);
    w->doc = doc;
    w->remove = true;
    w->done = done;
    w->arg = arg;
    queue_op(p, w);
}

/* ---------- loads and reads ---------- */

/* Row i of r (id, request, run, result, ...) into the cache, as the database has it now. */
static struct snap *snap_fill(struct taskspg *p, PGresult *r, int i)
{
    struct snap *s = snap_get(p, PQgetvalue(r, i, 0), true);
    for (int d = 0; d < 3; d++)
        snap_set(p, s, d, PQgetisnull(r, i, d + 1) ? NULL : PQgetvalue(r, i, d + 1));
    s->elsewhere = false;
    cache_trim(p, s);
    return s;
}

struct load {
    struct taskspg *p;
    taskspg_loaded_cb *cb;
    void *arg;
    char id[129]; /* asked by id: a task gone from the database leaves the cache too */
};

static void load_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                      void *arg)
{
    struct load *ld = arg;
    struct taskspg *p = ld->p;
    PGresult *r = n ? res[0] : NULL;
    if (p->quiet) { /* the bridge is going: nothing is kept, the caller hears it is away */
        ld->cb(TASKS_UNAVAILABLE, NULL, ld->arg);
        free(ld);
        return;
    }
    if (st != PGCONN_OK || r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
        if (st == PGCONN_FAILED)
            log_error("store: reading a task failed: %s", error ? error : "unknown error");
        ld->cb(st == PGCONN_OK || st == PGCONN_FAILED ? TASKS_IO : rc_of(st), NULL, ld->arg);
        free(ld);
        return;
    }
    if (PQntuples(r) == 0) {
        struct snap *s = ld->id[0] ? snap_get(p, ld->id, false) : NULL;
        if (s)
            snap_drop(p, s);
        ld->cb(TASKS_NOT_FOUND, NULL, ld->arg);
        free(ld);
        return;
    }
    struct snap *s = snap_fill(p, r, 0);
    s->elsewhere = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
    ld->cb(TASKS_OK, s->id, ld->arg);
    free(ld);
}

void taskspg_load(struct taskspg *p, const char *id, const char *run_id, taskspg_loaded_cb *cb,
                  void *arg)
{
    struct load *ld = xcalloc(1, sizeof *ld);
    ld->p = p;
    ld->cb = cb;
    ld->arg = arg;
    if (id)
        snprintf(ld->id, sizeof ld->id, "%s", id);
    const char *params[2] = {id ? id : run_id, p->replica_id};
    pgconn_send_one(p->conn, id ? "load_id" : "load_run", 2, params, load_done, ld);
}

enum tasks_rc taskspg_read(struct taskspg *p, const char *id, int doc, const char **text)
{
    struct snap *s = snap_get(p, id, false);
    if (s == NULL || s->doc[doc] == NULL)
        return TASKS_NOT_FOUND;
    *text = s->doc[doc];
    return TASKS_OK;
}

bool taskspg_elsewhere(struct taskspg *p, const char *id)
{
    struct snap *s = snap_get(p, id, false);
    return s && s->elsewhere;
}

void taskspg_quiesce(struct taskspg *p)
{
    p->quiet = true;
    loop_timer_cancel(p->takeover);
    p->takeover = NULL;
}

bool taskspg_exists(struct taskspg *p, const char *id)
{
    return snap_get(p, id, false) != NULL;
}

unsigned taskspg_retry_in_ms(const struct taskspg *p)
{
    return pgconn_up(p->conn) ? 0 : pgconn_retry_in_ms(p->conn);
}

unsigned taskspg_retry_after_s(const struct taskspg *p)
{
    if (pgconn_up(p->conn))
        return 0;
    return (pgconn_retry_in_ms(p->conn) + 999) / 1000 + 1;
}

/* ---------- retention ---------- */

struct prune {
    struct taskspg *p;
    unsigned days, max;
    long removed;
};

static void prune_step(struct prune *pr);

static void prune_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                       void *arg)
{
    struct prune *pr = arg;
    long gone = 0;
    for (size_t i = 0; st == PGCONN_OK && i < n; i++)
        if (res[i])
            gone += atol(PQcmdTuples(res[i]));
    pr->removed += gone;
    if (st == PGCONN_FAILED)
        log_error("store: retention failed: %s", error ? error : "unknown error");
    if (st == PGCONN_OK && gone > 0 && !pr->p->closing) {
        prune_step(pr); /* a full batch: there may be more */
        return;
    }
    if (pr->removed > 0)
        log_info("store: retention removed %ld finished task(s)", pr->removed);
    if (st == PGCONN_DOWN || st == PGCONN_BUSY || st == PGCONN_TIMEOUT) {
        pr->p->prune_wanted = true; /* again once the connection is back */
        pr->p->prune_days = pr->days;
        pr->p->prune_max = pr->max;
    }
    pr->p->pruning = false;
    free(pr);
}

static void prune_step(struct prune *pr)
{
    char days[16], max[16];
    snprintf(days, sizeof days, "%u", pr->days);
    snprintf(max, sizeof max, "%u", pr->max);
    const char *pd[1] = {days}, *pm[1] = {max};
    struct pgconn_query q[2];
    size_t n = 0;
    if (pr->days)
        q[n++] = (struct pgconn_query){"prune_age", 1, pd};
    if (pr->max)
        q[n++] = (struct pgconn_query){"prune_max", 1, pm};
    pgconn_send(pr->p->conn, q, n, prune_done, pr);
}

void taskspg_prune(struct taskspg *p, unsigned days, unsigned max)
{
    if ((days == 0 && max == 0) || p->pruning)
        return;
    if (!pgconn_up(p->conn)) {
        p->prune_wanted = true;
        p->prune_days = days;
        p->prune_max = max;
        return;
    }
    p->prune_wanted = false;
    struct prune *pr = xcalloc(1, sizeof *pr);
    pr->p = p;
    pr->days = days;
    pr->max = max;
    p->pruning = true;
    prune_step(pr);
}

/* ---------- takeover ---------- */

static void takeover_look(struct loop *l, void *arg);

static void takeover_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                          void *arg)
{
    struct taskspg *p = arg;
    PGresult *r = n ? res[0] : NULL;
    p->taking = false;
    if (st == PGCONN_FAILED)
        log_warn("store: looking for runs to take over failed: %s",
                 error ? error : "unknown error");
    if (st != PGCONN_OK || r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK)
        return;
    for (int i = 0; i < PQntuples(r) && !p->quiet; i++) {
        /* What the follow reads (whose it is, for an approval) is here from now on. */
        struct snap *s = snap_fill(p, r, i);
        log_info("task %s: its follower is gone; this replica follows its run now", s->id);
        p->on_takeover(s->id, s->doc[1] ? s->doc[1] : "{}", p->arg);
    }
}

static void takeover_look(struct loop *l, void *arg)
{
    struct taskspg *p = arg;
    p->takeover = loop_timer_add(l, TAKEOVER_MS, takeover_look, p);
    if (p->settling && loop_now(p->loop) - p->up_at >= SETTLED_MS)
        p->settling = false;
    if (p->taking || p->quiet || !pgconn_up(p->conn) || p->settling)
        return;
    const char *params[1] = {p->replica_id};
    p->taking = true;
    pgconn_send_one(p->conn, "takeover", 1, params, takeover_done, p);
}

/* ---------- what hermes_reset re-reads ---------- */

size_t taskspg_forget(struct taskspg *p, bool (*keep)(const char *id, void *arg), void *arg)
{
    size_t gone = 0;
    LIST_FOREACH_SAFE(node, &p->lru)
    {
        struct snap *s = list_entry(node, struct snap, lru);
        if (!keep(s->id, arg)) {
            snap_drop(p, s);
            gone++;
        }
    }
    return gone;
}

struct followed {
    struct taskspg *p;
    taskspg_takeover_cb *each;
    taskspg_followed_done_cb *done;
    void *arg;
};

static void followed_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                          void *arg)
{
    struct followed *f = arg;
    struct taskspg *p = f->p;
    PGresult *r = n ? res[0] : NULL;
    size_t found = 0;
    if (st == PGCONN_FAILED)
        log_warn("store: reading the runs this replica follows failed: %s",
                 error ? error : "unknown error");
    bool ok = st == PGCONN_OK && r && PQresultStatus(r) == PGRES_TUPLES_OK && !p->quiet;
    for (int i = 0; ok && i < PQntuples(r); i++, found++) {
        struct snap *s = snap_fill(p, r, i);
        f->each(s->id, s->doc[1] ? s->doc[1] : "{}", f->arg);
    }
    f->done(ok                                       ? TASKS_OK
            : st == PGCONN_FAILED || st == PGCONN_OK ? TASKS_IO
                                                     : rc_of(st),
            found, f->arg);
    free(f);
}

void taskspg_followed(struct taskspg *p, taskspg_takeover_cb *each, taskspg_followed_done_cb *done,
                      void *arg)
{
    struct followed *f = xcalloc(1, sizeof *f);
    *f = (struct followed){p, each, done, arg};
    const char *params[1] = {p->replica_id};
    pgconn_send_one(p->conn, "followed", 1, params, followed_done, f);
}

/* ---------- ends announced ---------- */

void taskspg_on_ended(struct taskspg *p, taskspg_ended_cb *cb, void *arg)
{
    p->on_ended = cb;
    p->ended_arg = arg;
}

static void on_notify(const char *channel, const char *payload, void *arg)
{
    struct taskspg *p = arg;
    if (strcmp(channel, CHANNEL) == 0 && p->on_ended && !p->quiet && payload &&
        strlen(payload) < sizeof((struct snap *)0)->id)
        p->on_ended(payload, p->ended_arg);
}

struct ended_of {
    struct taskspg *p;
    taskspg_loaded_cb *cb;
    void *arg;
};

static void ended_of_done(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                          void *arg)
{
    struct ended_of *e = arg;
    struct taskspg *p = e->p;
    PGresult *r = n ? res[0] : NULL;
    if (st == PGCONN_FAILED)
        log_warn("store: reading which watched tasks ended failed: %s",
                 error ? error : "unknown error");
    if (p->quiet || st != PGCONN_OK || r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
        e->cb(p->quiet || st != PGCONN_FAILED ? TASKS_UNAVAILABLE : TASKS_IO, NULL, e->arg);
        free(e);
        return;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        struct snap *s = snap_fill(p, r, i);
        s->elsewhere = strcmp(PQgetvalue(r, i, 4), "t") == 0;
        e->cb(TASKS_OK, s->id, e->arg);
    }
    e->cb(TASKS_OK, NULL, e->arg);
    free(e);
}

void taskspg_ended_among(struct taskspg *p, const char *const *ids, size_t n, taskspg_loaded_cb *cb,
                         void *arg)
{
    /* A text[] literal: each id quoted, its quotes and backslashes escaped. */
    struct buf a;
    buf_init(&a, 0);
    buf_appends(&a, "{");
    for (size_t i = 0; i < n; i++) {
        buf_appends(&a, i ? ",\"" : "\"");
        for (const char *c = ids[i]; *c; c++) {
            if (*c == '"' || *c == '\\')
                buf_appends(&a, "\\");
            buf_append(&a, c, 1);
        }
        buf_appends(&a, "\"");
    }
    buf_appends(&a, "}");
    struct ended_of *e = xcalloc(1, sizeof *e);
    *e = (struct ended_of){p, cb, arg};
    const char *params[2] = {a.data, p->replica_id};
    pgconn_send_one(p->conn, "ended_of", 2, params, ended_of_done, e); /* params copied */
    buf_cleanup(&a);
}

/* ---------- open, free ---------- */

static void on_state(bool up, const char *why, void *arg)
{
    struct taskspg *p = arg;
    (void)why;
    if (!up) {
        p->was_down = true;
        return;
    }
    /* A first connection at the start, the database there all along, judges at once. */
    p->up_at = loop_now(p->loop);
    p->settling = p->was_down;
    if (p->prune_wanted)
        taskspg_prune(p, p->prune_days, p->prune_max);
    /* Connected (again, or at last): an end announced before was not heard here. */
    if (p->on_ended && !p->quiet)
        p->on_ended(NULL, p->ended_arg);
}

struct taskspg *taskspg_open(const struct taskspg_opts *o)
{
    struct taskspg *p = xcalloc(1, sizeof *p);
    p->loop = o->loop;
    p->replica_id = xstrdup(o->replica_id);
    p->on_takeover = o->on_takeover;
    p->arg = o->arg;
    list_init(&p->queue);
    list_init(&p->inflight);
    list_init(&p->alone);
    list_init(&p->lru);
    p->cache = strmap_new();
    struct pgconn_opts po = {.loop = o->loop,
                             .conninfo = o->url,
                             .password = o->password,
                             .stmts = stmts,
                             .nstmts = sizeof stmts / sizeof *stmts,
                             .on_state = on_state,
                             .on_notify = on_notify,
                             .arg = p};
    p->conn = pgconn_new(&po);
    if (p->conn == NULL) {
        taskspg_free(p);
        return NULL;
    }
    pgconn_listen(p->conn, CHANNEL);
    p->takeover = loop_timer_add(o->loop, TAKEOVER_MS, takeover_look, p);
    return p;
}

void taskspg_free(struct taskspg *p)
{
    if (p == NULL)
        return;
    loop_timer_cancel(p->takeover);
    if (p->conn && !pgconn_idle(p->conn))
        pgconn_settle(p->conn, FREE_WAIT_MS);
    p->closing = true;
    pgconn_free(p->conn); /* what is still in flight fails: its callbacks run */
    /* Writes never sent: their waiters hear it. */
    LIST_FOREACH_SAFE(node, &p->queue)
    {
        wop_finish(p, list_entry(node, struct wop, link), PGCONN_DOWN, NULL);
    }
    while (!list_empty(&p->lru))
        snap_drop(p, list_entry(p->lru.next, struct snap, lru));
    strmap_free(p->cache);
    free(p->replica_id);
    free(p);
}
