/* replica.c — this server in the store's list of replicas (replica.h). */
#include "replica.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "hex.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "pgconn.h"
#include "version.h"

#define LEAVE_WAIT_MS 1000

static const struct pgconn_stmt stmts[] = {
    /* After a reconnect too: a row another replica's clean-up removed comes back. */
    {"replica_join", "INSERT INTO hm_replica (id, host, version) VALUES ($1, $2, $3)"
                     " ON CONFLICT (id) DO UPDATE SET seen_at = now()"},

    {"replica_leave", "DELETE FROM hm_replica WHERE id = $1"},
};

struct replica {
    struct loop *loop;
    struct pgconn *conn;
    struct loop_timer *beat;
    char id[REPLICA_ID_MAX];
    char host[64];
};

static void answered(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                     void *arg)
{
    (void)res;
    (void)n;
    (void)arg;
    if (st == PGCONN_FAILED) /* an unreachable database is pgconn's to report, once */
        log_warn("store: the replica's heartbeat failed: %s", error ? error : "unknown error");
}

static void beat(struct loop *l, void *arg)
{
    struct replica *r = arg;
    /* The upsert: a row removed under us (by hand, or a clean-up) comes back at once. */
    const char *params[3] = {r->id, r->host, HM_VERSION};
    r->beat = loop_timer_add(l, REPLICA_HEARTBEAT_MS, beat, r);
    if (pgconn_up(r->conn))
        pgconn_send_one(r->conn, "replica_join", 3, params, answered, NULL);
}

static void on_state(bool up, const char *why, void *arg)
{
    struct replica *r = arg;
    (void)why;
    if (!up)
        return;
    const char *params[3] = {r->id, r->host, HM_VERSION};
    pgconn_send_one(r->conn, "replica_join", 3, params, answered, NULL);
}

struct replica *replica_start(struct loop *l, const char *url, const char *password)
{
    if (url == NULL)
        return NULL;
    struct replica *r = xcalloc(1, sizeof *r);
    unsigned char rnd[6];
    char hex[13];
    r->loop = l;
    if (gethostname(r->host, sizeof r->host) != 0 || r->host[0] == '\0')
        snprintf(r->host, sizeof r->host, "unknown");
    r->host[sizeof r->host - 1] = '\0';
    if (!crypto_random_bytes(rnd, sizeof rnd)) { /* an id another start could repeat */
        log_error("store: no randomness for a replica id; not registering as a replica");
        free(r);
        return NULL;
    }
    hex_encode(rnd, sizeof rnd, hex);
    snprintf(r->id, sizeof r->id, "%.60s-%d-%s", r->host, (int)getpid(), hex);
    struct pgconn_opts o = {.loop = l,
                            .conninfo = url,
                            .password = password,
                            .stmts = stmts,
                            .nstmts = sizeof stmts / sizeof *stmts,
                            .on_state = on_state,
                            .arg = r};
    r->conn = pgconn_new(&o);
    r->beat = loop_timer_add(l, REPLICA_HEARTBEAT_MS, beat, r);
    log_info("store: this server is replica %s", r->id);
    return r;
}

void replica_stop(struct replica *r)
{
    if (r == NULL)
        return;
    loop_timer_cancel(r->beat);
    if (pgconn_up(r->conn)) {
        const char *params[1] = {r->id};
        pgconn_send_one(r->conn, "replica_leave", 1, params, answered, NULL);
        pgconn_settle(r->conn, LEAVE_WAIT_MS);
    }
    pgconn_free(r->conn);
    free(r);
}

const char *replica_id(const struct replica *r)
{
    return r ? r->id : NULL;
}

bool replica_store_up(const struct replica *r)
{
    return r == NULL || pgconn_up(r->conn);
}

unsigned replica_retry_in_ms(const struct replica *r)
{
    return r && !pgconn_up(r->conn) ? pgconn_retry_in_ms(r->conn) : 0;
}
