/* apprshare.c — the approval queue shared through the store (apprshare.h). */
#include "apprshare.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approvals.h"
#include "buf.h"
#include "ctlsock.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "pgconn.h"

#define CHANNEL "hm_approval"
#define LIST_MAX "1000"
#define PURGE_MS 60000
/* The store stops taking decisions this long before the holder's own timeout: a decision it
 * accepts must find the call still waiting (the two clocks differ, the removal takes a trip). */
#define MARGIN_S "2"
#define STOP_WAIT_MS 1000
/* A request is listed and decided only while its holder's heartbeat is fresh: a replica that
 * died holding one cannot release it. */
#define HOLDER_ALIVE                                                                               \
    " AND holder IN (SELECT id FROM hm_replica WHERE seen_at > now() - interval '10 seconds')"

static const struct pgconn_stmt stmts[] = {
    {"appr_add",
     "INSERT INTO hm_approval (id, holder, principal, tool, summary, cut, arguments, created_at,"
     " expires_at) VALUES ($1, $2, $3, $4, $5, $6::bigint, $7, to_timestamp($8::bigint),"
     " to_timestamp($8::bigint) + make_interval(secs => greatest($9::int - " MARGIN_S ", 1)))"
     " ON CONFLICT (id) DO NOTHING"},
    /* After an outage: what this replica no longer holds (decided here meanwhile) goes. */
    {"appr_reconcile", "DELETE FROM hm_approval WHERE holder = $1 AND decision IS NULL"
                       " AND NOT (id = ANY ($2::text[]))"},
    {"appr_gone", "DELETE FROM hm_approval WHERE id = $1 AND holder = $2"},
    {"appr_decision",
     "SELECT decision, reason, decider FROM hm_approval WHERE id = $1 AND decision IS NOT NULL"},
    {"appr_list", "SELECT id, extract(epoch FROM created_at)::bigint, principal, tool, summary, cut"
                  " FROM hm_approval WHERE decision IS NULL AND expires_at > now()" HOLDER_ALIVE
                  " ORDER BY created_at, id LIMIT " LIST_MAX},
    {"appr_show",
     "SELECT id, extract(epoch FROM created_at)::bigint, principal, tool, arguments"
     " FROM hm_approval WHERE id = $1 AND decision IS NULL AND expires_at > now()" HOLDER_ALIVE},
    /* Only an undecided, unexpired request is decided, once; the notice goes out at commit. */
    {"appr_decide",
     "WITH d AS (UPDATE hm_approval SET decision = $2, reason = $3, decider = $4,"
     " decided_at = now() WHERE id = $1 AND decision IS NULL AND expires_at > now()" HOLDER_ALIVE
     " RETURNING id, holder) SELECT holder, pg_notify('" CHANNEL "', id) FROM d"},
    {"appr_purge", "DELETE FROM hm_approval WHERE expires_at < now() - interval '1 hour'"},
};

struct apprshare {
    struct loop *loop;
    struct pgconn *conn;
    struct approvals *q;
    struct ctlsock *ctl;
    char *holder;
    struct loop_timer *purge;
};

/* A forwarded control request waiting for the database. */
struct asked {
    struct apprshare *s;
    struct ctl_wait *w;
    struct ctl_request r;
};

/* What a logged statement was doing, for its failure's log line; passed as the callback's
 * argument (an index: callback arguments are not const). */
enum what { WHAT_SHARE, WHAT_REMOVE, WHAT_PURGE };
static const char *const what_text[] = {"sharing a request", "removing a request",
                                        "purging old requests"};
#define WHAT(w) ((void *)(uintptr_t)(w))

static void logged(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                   void *arg)
{
    (void)res;
    (void)n;
    if (st == PGCONN_FAILED)
        log_warn("store: approvals: %s failed: %s", what_text[(uintptr_t)arg],
                 error ? error : "unknown error");
}

/* ---- this server's requests, mirrored ---- */

static void share(struct apprshare *s, const struct approval_view *v)
{
    char cut[24], time[24], timeout[16];
    snprintf(cut, sizeof cut, "%zu", v->cut);
    snprintf(time, sizeof time, "%lld", v->time);
    snprintf(timeout, sizeof timeout, "%u", v->timeout_s);
    const char *params[9] = {v->id, s->holder,    v->principal, v->tool, v->summary,
                             cut,   v->arguments, time,         timeout};
    pgconn_send_one(s->conn, "appr_add", 9, params, logged, WHAT(WHAT_SHARE));
}

static void added(void *arg, const struct approval_view *v)
{
    struct apprshare *s = arg;
    if (pgconn_up(s->conn))
        share(s, v);
}

static void gone(void *arg, const char *id)
{
    struct apprshare *s = arg;
    const char *params[2] = {id, s->holder};
    if (pgconn_up(s->conn))
        pgconn_send_one(s->conn, "appr_gone", 2, params, logged, WHAT(WHAT_REMOVE));
}

static const struct approvals_observer observer = {.added = added, .gone = gone};

/* ---- decisions made elsewhere ---- */

struct lookup {
    struct apprshare *s;
    char id[APPROVALS_ID_HEX + 1];
};

static void decision_read(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                          void *arg)
{
    struct lookup *k = arg;
    (void)n;
    (void)error;
    if (st == PGCONN_OK && PQntuples(res[0]) == 1 && k->s->q && approvals_has(k->s->q, k->id)) {
        bool approve = strcmp(PQgetvalue(res[0], 0, 0), "approve") == 0;
        const char *reason = PQgetisnull(res[0], 0, 1) ? NULL : PQgetvalue(res[0], 0, 1);
        const char *decider = PQgetvalue(res[0], 0, 2);
        log_info("approval %s %s by %s (through the store)", k->id, approve ? "approved" : "denied",
                 decider);
        approvals_decide(k->s->q, k->id, approve, reason && *reason ? reason : NULL, decider);
    }
    free(k);
}

static void check_decision(struct apprshare *s, const char *id)
{
    if (s->q == NULL || !approvals_has(s->q, id))
        return; /* another replica's, or already gone */
    struct lookup *k = xcalloc(1, sizeof *k);
    k->s = s;
    snprintf(k->id, sizeof k->id, "%s", id);
    const char *params[1] = {k->id};
    pgconn_send_one(s->conn, "appr_decision", 1, params, decision_read, k);
}

static void on_notify(const char *channel, const char *payload, void *arg)
{
    if (strcmp(channel, CHANNEL) == 0)
        check_decision(arg, payload);
}

static void reshare_one(void *arg, const struct approval_view *v)
{
    struct apprshare *s = arg;
    share(s, v);
    check_decision(s, v->id);
}

/* "{id,id,...}" of the requests waiting here (ids are hex: nothing to quote). */
static void held_ids(void *arg, const struct approval_view *v)
{
    struct buf *b = arg;
    buf_appends(b, b->len > 1 ? "," : "");
    buf_appends(b, v->id);
}

/* Up again (or for the first time): what this replica holds is shared (again), what it
 * stopped holding while the store was away (decided here, timed out) leaves the store, and
 * any decision made meanwhile is read. */
static void on_state(bool up, const char *why, void *arg)
{
    struct apprshare *s = arg;
    (void)why;
    if (!up || s->q == NULL)
        return;
    struct buf ids;
    buf_init(&ids, 0);
    buf_appends(&ids, "{");
    approvals_each(s->q, held_ids, &ids);
    buf_appends(&ids, "}");
    char *text = buf_detach(&ids, NULL);
    const char *params[2] = {s->holder, text};
    pgconn_send_one(s->conn, "appr_reconcile", 2, params, logged, WHAT(WHAT_REMOVE));
    free(text);
    approvals_each(s->q, reshare_one, s);
}

static void purge(struct loop *l, void *arg)
{
    struct apprshare *s = arg;
    s->purge = loop_timer_add(l, PURGE_MS, purge, s);
    if (pgconn_up(s->conn))
        pgconn_send_one(s->conn, "appr_purge", 0, NULL, logged, WHAT(WHAT_PURGE));
}

/* ---- the control socket's requests, answered from the store ---- */

static json_t *error_answer(const char *code)
{
    return json_pack("{s:b, s:s}", "ok", 0, "error", code);
}

static json_t *row_json(const PGresult *r, int i, const char *last)
{
    json_t *o = json_pack("{s:s, s:I, s:s, s:s}", "id", PQgetvalue(r, i, 0), "time",
                          (json_int_t)atoll(PQgetvalue(r, i, 1)), "principal", PQgetvalue(r, i, 2),
                          "tool", PQgetvalue(r, i, 3));
    json_object_set_new(o, last, json_string(PQgetvalue(r, i, 4)));
    return o;
}

static void answered(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                     void *arg)
{
    struct asked *a = arg;
    json_t *ans;
    (void)n;
    bool deciding = a->r.op == CTL_APPROVE || a->r.op == CTL_DENY;
    if (st != PGCONN_OK) {
        log_warn("store: approvals: %s: %s", deciding ? "deciding" : "listing",
                 error ? error : "the database is away");
        /* Sent but unanswered: a decision may have been made. */
        ans =
            error_answer(deciding && st == PGCONN_TIMEOUT ? "store_unknown" : "store_unavailable");
    } else if (a->r.op == CTL_LIST) {
        /* This server's own requests are listed even when the store lacks them (its write
         * failed, or is still on its way). */
        json_t *pending = a->s->q ? approvals_list_json(a->s->q) : json_array();
        for (int i = 0; i < PQntuples(res[0]); i++) {
            if (a->s->q && approvals_has(a->s->q, PQgetvalue(res[0], i, 0)))
                continue;
            json_t *o = row_json(res[0], i, "summary");
            long long cut = atoll(PQgetvalue(res[0], i, 5));
            if (cut > 0)
                json_object_set_new(o, "cut", json_integer((json_int_t)cut));
            json_array_append_new(pending, o);
        }
        ans = json_pack("{s:b, s:o}", "ok", 1, "pending", pending);
    } else if (PQntuples(res[0]) != 1) {
        ans = error_answer("unknown_id");
    } else if (a->r.op == CTL_SHOW) {
        ans = json_pack("{s:b, s:o}", "ok", 1, "request", row_json(res[0], 0, "arguments"));
    } else {
        log_info("approval %s %s through the store (held by %s)", a->r.id,
                 a->r.op == CTL_APPROVE ? "approved" : "denied", PQgetvalue(res[0], 0, 0));
        ans = json_pack("{s:b, s:s}", "ok", 1, "id", a->r.id);
    }
    ctlsock_reply(a->w, ans);
    free(a);
}

static bool forward(void *arg, const struct ctl_request *r, const char *decider, struct ctl_wait *w)
{
    struct apprshare *s = arg;
    if (!pgconn_up(s->conn))
        return false; /* this server's own queue answers */
    if (r->op != CTL_LIST && approvals_has(s->q, r->id))
        return false; /* held here: decided here (the store hears of it as it leaves) */
    struct asked *a = xcalloc(1, sizeof *a);
    a->s = s;
    a->w = w;
    a->r = *r;
    if (r->op == CTL_LIST) {
        pgconn_send_one(s->conn, "appr_list", 0, NULL, answered, a);
    } else if (r->op == CTL_SHOW) {
        const char *params[1] = {a->r.id};
        pgconn_send_one(s->conn, "appr_show", 1, params, answered, a);
    } else {
        const char *params[4] = {a->r.id, r->op == CTL_APPROVE ? "approve" : "deny",
                                 a->r.reason[0] ? a->r.reason : NULL, decider};
        pgconn_send_one(s->conn, "appr_decide", 4, params, answered, a);
    }
    return true;
}

struct apprshare *apprshare_start(struct loop *l, const char *url, const char *password,
                                  const char *holder, struct approvals *q, struct ctlsock *ctl)
{
    if (url == NULL || holder == NULL || q == NULL)
        return NULL;
    struct apprshare *s = xcalloc(1, sizeof *s);
    s->loop = l;
    s->q = q;
    s->ctl = ctl;
    s->holder = xstrdup(holder);
    struct pgconn_opts o = {.loop = l,
                            .conninfo = url,
                            .password = password,
                            .stmts = stmts,
                            .nstmts = sizeof stmts / sizeof *stmts,
                            .on_notify = on_notify,
                            .on_state = on_state,
                            .arg = s};
    s->conn = pgconn_new(&o);
    if (s->conn == NULL) {
        free(s->holder);
        free(s);
        return NULL;
    }
    pgconn_listen(s->conn, CHANNEL);
    approvals_observe(q, &observer, s);
    ctlsock_set_forward(ctl, forward, s);
    s->purge = loop_timer_add(l, PURGE_MS, purge, s);
    return s;
}

void apprshare_stop(struct apprshare *s)
{
    if (s == NULL)
        return;
    approvals_observe(s->q, NULL, NULL);
    ctlsock_set_forward(s->ctl, NULL, NULL);
    s->q = NULL; /* decisions read from now on release nothing */
    loop_timer_cancel(s->purge);
    pgconn_settle(s->conn, STOP_WAIT_MS); /* the last removals, say */
    pgconn_free(s->conn); /* every request in flight is called back (forwarded ones answered) */
    free(s->holder);
    free(s);
}
