/* pgconn.h — one PostgreSQL connection driven by the event loop through libpq's asynchronous
 * API in pipeline mode. Requests go out back to back without waiting for each other's
 * answers; each comes back to its callback on the loop thread, in the order sent. A request is
 * one or more prepared statements that run as one transaction (one Sync): a batch of writes is
 * made durable by one commit.
 *
 * The connection is made again after any failure, with a backoff (100 ms doubling to 5 s);
 * while it is down a request fails at once with PGCONN_DOWN (the caller answers 503 with
 * Retry-After), and at most queue_max requests are ever in flight (PGCONN_BUSY beyond), so a
 * slow database costs the calls that need it and no memory without bound. A request not
 * answered within timeout_ms counts as a dead connection: every request in flight fails with
 * PGCONN_TIMEOUT and the connection is made again. Channels given to pgconn_listen are
 * listened to again after each reconnect; their notifications come to on_notify.
 *
 * Statements are prepared on every new connection, from the table given at creation; values
 * always travel as bound parameters, never inside SQL text. Loop thread only. */
#ifndef HM_PGCONN_H
#define HM_PGCONN_H
#include "pgrt.h"
#include <stdbool.h>
#include <stddef.h>

struct loop;
struct pgconn;

enum pgconn_status {
    PGCONN_OK,
    PGCONN_FAILED,  /* a statement failed (the transaction rolled back): see error, res */
    PGCONN_DOWN,    /* no connection now: nothing was sent */
    PGCONN_BUSY,    /* queue_max requests already in flight: nothing was sent */
    PGCONN_TIMEOUT, /* sent, but the connection died or stalled: it may or may not have run */
};

struct pgconn_stmt {
    const char *name; /* unique among the table's */
    const char *sql;  /* with $1..$n for the parameters */
};

/* One statement of a request: params in text format (NULL for SQL NULL), copied at once. */
struct pgconn_query {
    const char *stmt;
    int nparams;
    const char *const *params;
};

/* res[0..n): each statement's result (NULL for a statement that did not run), owned by pgconn
 * and cleared after the callback returns; error: the first failure's message, one line, or
 * NULL. The callback may send more requests, and may call pgconn_free. */
typedef void pgconn_done_cb(enum pgconn_status st, PGresult *const *res, size_t n,
                            const char *error, void *arg);
typedef void pgconn_notify_cb(const char *channel, const char *payload, void *arg);
/* The connection came up (up, statements prepared) or went down (why: one line). */
typedef void pgconn_state_cb(bool up, const char *why, void *arg);

struct pgconn_opts {
    struct loop *loop;
    const char *conninfo; /* a postgresql:// URL or key=value pairs (no password here) */
    const char *password; /* or NULL: libpq's own sources (PGPASSFILE, a service file) */
    const struct pgconn_stmt *stmts;
    size_t nstmts;
    unsigned queue_max;  /* requests in flight at most (default 4096) */
    unsigned timeout_ms; /* an answer within this (default 10000) */
    pgconn_notify_cb *on_notify;
    pgconn_state_cb *on_state;
    void *arg;
};

/* Loads libpq (pgrt.h) and starts connecting (never blocks); NULL if the options are unusable
 * or libpq cannot be loaded (logged). */
struct pgconn *pgconn_new(const struct pgconn_opts *o);
void pgconn_free(struct pgconn *c); /* NULL-safe; requests in flight fail with PGCONN_DOWN */
bool pgconn_up(const struct pgconn *c);
/* True when no request waits for its answer or its callback. */
bool pgconn_idle(const struct pgconn *c);
/* Sends n statements as one transaction; cb always runs exactly once, later (never inside
 * this call, nor any other request's), also for PGCONN_DOWN and PGCONN_BUSY; PGCONN_FAILED
 * without a result when libpq refuses the request itself (too many parameters). */
void pgconn_send(struct pgconn *c, const struct pgconn_query *q, size_t n, pgconn_done_cb *cb,
                 void *arg);
#define PGCONN_CHANNEL_MAX 63 /* PostgreSQL's identifier length */
/* pgconn_send of one statement. */
void pgconn_send_one(struct pgconn *c, const char *stmt, int nparams, const char *const *params,
                     pgconn_done_cb *cb, void *arg);
/* Runs the loop (at most max_ms) until every request sent has been answered, or the connection
 * is down: for a stop, so that its last writes reach the database. Never on the loop's own
 * callbacks. */
void pgconn_settle(struct pgconn *c, unsigned max_ms);
/* LISTEN channel (a plain identifier, at most PGCONN_CHANNEL_MAX bytes) now and after every
 * reconnect. */
void pgconn_listen(struct pgconn *c, const char *channel);
/* Milliseconds until the next connection attempt while down (for Retry-After), else 0. */
unsigned pgconn_retry_in_ms(const struct pgconn *c);

#endif
