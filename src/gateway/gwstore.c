/* gwstore.c — pins and input-round nonces shared through PostgreSQL (gwstore.h). */
#include "gwstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"
#include "gwexpose.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "pgconn.h"
#include "storeschema.h"
#include "strmap.h"
#include "upstream.h"

/* A pin's document is one tool's definition and hashes: far below this; the whole set is read
 * at once, so it is capped too (a row beyond either is refused, not truncated). */
#define PIN_DOC_MAX (1024u * 1024u)
#define PIN_DOC_MAX_TEXT "1048576" /* the same, in SQL */
#define PINS_MAX "100000"
#define PURGE_MS 60000
/* Pins inserted are capped as the file store's are: an upstream pins at most the tools it may
 * list (GW_TOOLS_MAX), and all pins together hold at most what a pins file may (16 MiB);
 * beyond, the tool is not pinned and stays withheld. Counted in the inserting transaction
 * after PIN_LOCK, so two replicas pinning at once cannot both take the last place. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define PINS_PER_UPSTREAM STR(GW_TOOLS_MAX)
#define PINS_BYTES_MAX "16777216"
#define PIN_KEY "1752198705"
#define PIN_LOCK "SELECT pg_advisory_xact_lock(" PIN_KEY ")"
/* The serving path never waits for the lock inside its shared connection: it tries, and the
 * statement that counts (run after, so its snapshot sees the pins committed before the lock
 * was got) says 'busy' unless this transaction holds it; the pin is then asked for later. */
#define PIN_TRYLOCK "SELECT pg_try_advisory_xact_lock(" PIN_KEY ")"
#define PIN_HELD                                                                                   \
    "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"        \
    " AND classid = 0 AND objid = " PIN_KEY " AND objsubid = 1 AND granted)"
#define LATER_MS 1000 /* the lock was busy: asked for again */
#define FULL_MAX 4096 /* names remembered as refused for the caps */

/* Every pin, each within PIN_DOC_MAX and all within PINS_BYTES_MAX (what the writers keep
 * them to), measured in the database: a row beyond comes back NULL, never fetched whole. */
#define SQL_PINS_ALL                                                                               \
    "SELECT exposed, CASE WHEN octet_length(doc) <= " PIN_DOC_MAX_TEXT                             \
    " AND upto <= " PINS_BYTES_MAX                                                                 \
    " THEN doc END FROM (SELECT exposed, doc, sum(octet_length(doc))"                              \
    " OVER (ORDER BY exposed) AS upto FROM hm_pin) p ORDER BY exposed LIMIT " PINS_MAX
/* First use: only when absent and within the caps (counted only then, under the lock); the
 * row says 'pinned' (every replica is told, and reads it back), 'full', or 'busy' (the lock
 * is not this transaction's); none when a pin was there. */
#define SQL_PIN_ABSENT                                                                             \
    "WITH c AS (SELECT CASE WHEN NOT " PIN_HELD " THEN 'busy'"                                     \
    " WHEN EXISTS (SELECT 1 FROM hm_pin WHERE exposed = $1) THEN 'there'"                          \
    " WHEN (SELECT count(*) FROM hm_pin WHERE doc::json->>'upstream' = $3) >= " PINS_PER_UPSTREAM  \
    " OR (SELECT coalesce(sum(octet_length(doc)), 0) FROM hm_pin) + octet_length($2) "             \
    "> " PINS_BYTES_MAX " THEN 'full' ELSE 'room' END AS s),"                                      \
    " ins AS (INSERT INTO hm_pin (exposed, doc) SELECT $1, $2 FROM c WHERE s = 'room'"             \
    " ON CONFLICT (exposed) DO NOTHING RETURNING exposed)"                                         \
    " SELECT pg_notify('" GW_STORE_CHANNEL "', exposed), 'pinned' FROM ins"                        \
    " UNION ALL SELECT NULL, s FROM c WHERE s IN ('full', 'busy')"
/* An accept (after PIN_LOCK): the row replaced only while its pin is still the one the operator
 * was shown (compare-and-set) and all pins still fit in PINS_BYTES_MAX; every replica told at
 * commit. A row back: 'pinned', or 'full'; none: the pin moved (or is gone). */
#define SQL_PIN_ACCEPT                                                                             \
    "WITH c AS (SELECT (SELECT coalesce(sum(octet_length(doc)), 0) FROM hm_pin"                    \
    " WHERE exposed <> $1) + octet_length($2) <= " PINS_BYTES_MAX " AS room),"                     \
    " up AS (UPDATE hm_pin SET doc = $2, version = version + 1"                                    \
    " WHERE exposed = $1 AND doc::json->>'sha256' = $3 AND (SELECT room FROM c)"                   \
    " RETURNING exposed)"                                                                          \
    " SELECT pg_notify('" GW_STORE_CHANNEL "', exposed), 'pinned' FROM up"                         \
    " UNION ALL SELECT NULL, 'full' FROM c WHERE NOT room"
/* An unpin: the row removed, every replica told at commit. */
#define SQL_PIN_REMOVE                                                                             \
    "WITH gone AS (DELETE FROM hm_pin WHERE exposed = $1 RETURNING exposed)"                       \
    " SELECT pg_notify('" GW_STORE_CHANNEL "', exposed) FROM gone"

static const struct pgconn_stmt stmts[] = {
    {"pin_all", SQL_PINS_ALL},
    {"pin_trylock", PIN_TRYLOCK},
    {"pin_absent", SQL_PIN_ABSENT},
    /* A claim is the insert of the bare nonce: its primary key lets exactly one claim have the
     * row back, at any isolation level and from any version of the server; none back (or an
     * error): claimed before, or the store cannot say. $1 nonce, $2 ttl ms. */
    {"nonce_use", "INSERT INTO hm_nonce (nonce, expires_at)"
                  " VALUES ($1, now() + $2::bigint * interval '1 millisecond')"
                  " ON CONFLICT (nonce) DO NOTHING RETURNING nonce"},
    {"nonce_back", "DELETE FROM hm_nonce WHERE nonce = $1"},
    {"nonce_purge", "DELETE FROM hm_nonce WHERE expires_at < now() - interval '1 minute'"},
};

struct gw_store {
    struct gateway *g;
    struct pgconn *conn;
    struct loop_timer *purge;
    struct loop_timer *later; /* the pins' lock was busy: read and ask again */
    bool reading, again;      /* a read of the pins under way; another asked for meanwhile */
    /* Exposed names refused for the caps (said once): FULL_WAITING, not asked for again until
     * room may have been made (a notification, a reconnect), then FULL_SAID. */
    struct strmap *full;
};

/* The values of s->full (the names are the keys; nothing to free). */
#define FULL_WAITING ((void *)(uintptr_t)1)
#define FULL_SAID ((void *)(uintptr_t)2)

struct gw_store_claim {
    gw_store_claimed_fn *cb; /* NULL once cancelled */
    void *arg;
};

/* ---- the pins as documents ---- */

/* Adds row (exposed, doc text) to pins; false with err when the text is not a pin. */
static bool add_row(json_t *pins, const char *exposed, const char *text, char *err, size_t errlen)
{
    size_t len = strlen(text);
    json_t *doc = len <= PIN_DOC_MAX ? json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "sha256"))) {
        snprintf(err, errlen,
                 "the store's pin of %.128s is not a pin (over %u bytes, or no sha256)", exposed,
                 PIN_DOC_MAX);
        json_decref(doc);
        return false;
    }
    json_object_set_new(json_object_get(pins, "pins"), exposed, doc);
    return true;
}

/* {"pins": {...}} of a pin_all result, or NULL with err. */
static json_t *pins_of(const PGresult *r, char *err, size_t errlen)
{
    json_t *pins = json_pack("{s:{}}", "pins");
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetisnull(r, i, 1)) {
            snprintf(err, errlen,
                     "the store's pin of %.128s is over %u bytes, or the pins up to it over %s "
                     "bytes in all: not read",
                     PQgetvalue(r, i, 0), PIN_DOC_MAX, PINS_BYTES_MAX);
            json_decref(pins);
            return NULL;
        }
        if (!add_row(pins, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), err, errlen)) {
            json_decref(pins);
            return NULL;
        }
    }
    return pins;
}

/* One line of a statement's failure (libpq's messages end in a newline). */
static void pg_err(const char *what, PGconn *pg, const PGresult *r, char *err, size_t errlen)
{
    const char *m = r ? PQresultErrorMessage(r) : NULL;
    if (m == NULL || *m == '\0')
        m = PQerrorMessage(pg);
    snprintf(err, errlen, "%s: %.*s", what, (int)strcspn(m, "\n"), m);
}

json_t *gw_store_pins_read(PGconn *pg, char *err, size_t errlen)
{
    PGresult *r = PQexec(pg, SQL_PINS_ALL);
    json_t *pins = NULL;
    if (PQresultStatus(r) == PGRES_TUPLES_OK)
        pins = pins_of(r, err, errlen);
    else
        pg_err("reading the pins from the store", pg, r, err, errlen);
    PQclear(r);
    return pins;
}

/* The pin's document text within PIN_DOC_MAX (new), or NULL with err. */
static char *pin_text(const char *exposed, json_t *pin, char *err, size_t errlen)
{
    char *doc = json_dumps(pin, JSON_COMPACT | JSON_SORT_KEYS);
    if (doc == NULL || strlen(doc) > PIN_DOC_MAX) {
        snprintf(err, errlen, "the pin of %.128s cannot be written (over %u bytes)", exposed,
                 PIN_DOC_MAX);
        free(doc);
        return NULL;
    }
    return doc;
}

static const char *upstream_of(json_t *pin)
{
    const char *u = json_string_value(json_object_get(pin, "upstream"));
    return u ? u : "";
}

/* One statement of a blocking transaction whose result only needs to be a success. */
static bool exec_ok(PGconn *pg, const char *sql, const char *what, char *err, size_t errlen)
{
    PGresult *r = PQexec(pg, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        pg_err(what, pg, r, err, errlen);
    PQclear(r);
    return ok;
}

/* Blocking, in a transaction that took PIN_LOCK: pin inserted if absent and within the caps.
 * 1 pinned, 0 a pin was there, 2 refused for the caps, -1 with err. */
static int pin_absent_locked(PGconn *pg, const char *exposed, json_t *pin, char *err, size_t errlen)
{
    char *doc = pin_text(exposed, pin, err, errlen);
    if (doc == NULL)
        return -1;
    const char *params[3] = {exposed, doc, upstream_of(pin)};
    PGresult *r = PQexecParams(pg, SQL_PIN_ABSENT, 3, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_err("writing a pin to the store", pg, r, err, errlen);
        rc = -1;
    } else if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "busy") == 0) {
        snprintf(err, errlen, "writing a pin to the store: the pins' lock is not held");
        rc = -1;
    } else if (PQntuples(r) == 1)
        rc = strcmp(PQgetvalue(r, 0, 1), "full") == 0 ? 2 : 1;
    PQclear(r);
    free(doc);
    return rc;
}

/* The store's pin of exposed now: 1 with its sha256 in now (or "" when it has none) and
 * whether it is doc exactly (*same: an accept sent twice), -1 on failure. */
static int pin_now(PGconn *pg, const char *exposed, const char *doc, bool *same, char *now,
                   size_t nowlen, char *err, size_t errlen)
{
    const char *params[2] = {exposed, doc};
    PGresult *r = PQexecParams(pg,
                               "SELECT left(doc::json->>'sha256', 64), doc = $2 FROM hm_pin"
                               " WHERE exposed = $1",
                               2, NULL, params, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 1 : -1;
    if (rc < 0)
        pg_err("reading a pin from the store", pg, r, err, errlen);
    bool there = rc == 1 && PQntuples(r) == 1;
    snprintf(now, nowlen, "%s", there ? PQgetvalue(r, 0, 0) : "");
    *same = there && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    PQclear(r);
    return rc;
}

static void full_err(const char *exposed, json_t *pin, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "the store holds as many pins as it may (%s of upstream %.128s, or %s bytes in "
             "all): %.128s cannot be pinned; make room with `hermes-mcp gateway unpin NAME`",
             PINS_PER_UPSTREAM, upstream_of(pin), PINS_BYTES_MAX, exposed);
}

int gw_store_pin_accept(PGconn *pg, const char *exposed, json_t *pin, const char *expect, char *now,
                        size_t nowlen, char *err, size_t errlen)
{
    char *doc = pin_text(exposed, pin, err, errlen);
    if (doc == NULL)
        return -1;
    int rc = exec_ok(pg, PIN_LOCK, "taking the pins' lock", err, errlen) ? 0 : -1;
    if (rc == 0 && expect == NULL) { /* none was pinned: pinned now only if there is still none */
        rc = pin_absent_locked(pg, exposed, pin, err, errlen);
    } else if (rc == 0) {
        const char *params[3] = {exposed, doc, expect};
        PGresult *r = PQexecParams(pg, SQL_PIN_ACCEPT, 3, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            pg_err("writing a pin to the store", pg, r, err, errlen);
            rc = -1;
        } else if (PQntuples(r) == 1)
            rc = strcmp(PQgetvalue(r, 0, 1), "full") == 0 ? 2 : 1;
        PQclear(r);
    }
    if (rc == 2) {
        full_err(exposed, pin, err, errlen);
        rc = -1;
    }
    if (rc == 0) { /* the pin moved: unless to exactly this one (the same accept again) */
        bool same = false;
        rc = pin_now(pg, exposed, doc, &same, now, nowlen, err, errlen);
        if (rc == 1 && !same)
            rc = 0;
    }
    free(doc);
    return rc;
}

int gw_store_pin_remove(PGconn *pg, const char *exposed, char *err, size_t errlen)
{
    const char *params[1] = {exposed};
    PGresult *r = PQexecParams(pg, SQL_PIN_REMOVE, 1, NULL, params, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) == 1 : -1;
    if (rc < 0)
        pg_err("removing a pin from the store", pg, r, err, errlen);
    PQclear(r);
    return rc;
}

/* ---- the running gateway's connection ---- */

static void pins_read(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                      void *arg)
{
    struct gw_store *s = arg;
    char err[300];
    (void)n;
    s->reading = false;
    if (st != PGCONN_OK) {
        /* Down: the reconnect reads them again. */
        if (st == PGCONN_FAILED)
            log_warn("gateway: reading the pins from the store: %s",
                     error ? error : "unknown error");
        return;
    }
    json_t *pins = pins_of(res[0], err, sizeof err);
    if (pins == NULL)
        log_error("gateway: %s; keeping the pins in force", err);
    else
        gw_pins_apply(s->g, pins);
    if (s->again) {
        s->again = false;
        gw_store_reread(s);
    }
}

/* Notifications come in bursts (an accept of every tool): one read at a time, one more after
 * it when any came meanwhile. */
void gw_store_reread(struct gw_store *s)
{
    if (s->reading) {
        s->again = true;
        return;
    }
    if (!pgconn_up(s->conn))
        return; /* read again when it comes up */
    s->reading = true;
    pgconn_send_one(s->conn, "pin_all", 0, NULL, pins_read, s);
}

static void may_ask(const char *key, void *value, void *arg)
{
    (void)value;
    strmap_put(arg, key, FULL_SAID);
}

/* A pin removed or accepted (any notification), or one perhaps missed: the tools refused for
 * the caps are asked for again at the next read (still said only once). */
static void room_maybe(struct gw_store *s)
{
    if (s->full)
        strmap_each(s->full, may_ask, s->full);
}

static void on_notify(const char *channel, const char *payload, void *arg)
{
    (void)payload;
    if (strcmp(channel, GW_STORE_CHANNEL) == 0) {
        room_maybe(arg);
        gw_store_reread(arg);
    }
}

static void on_state(bool up, const char *why, void *arg)
{
    struct gw_store *s = arg;
    (void)why;
    if (up) { /* a notification may have been missed while down */
        room_maybe(s);
        gw_store_reread(s);
    }
}

/* What a logged statement was doing, for its failure's line; passed as the callback's argument
 * (an index: callback arguments are not const). */
enum what { WHAT_PURGE, WHAT_GIVE_BACK };
static const char *const what_text[] = {"purging old nonces", "giving back an input round"};
#define WHAT(w) ((void *)(uintptr_t)(w))

static void logged(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                   void *arg)
{
    (void)res;
    (void)n;
    if (st != PGCONN_OK)
        log_warn("gateway: %s in the store failed: %s", what_text[(uintptr_t)arg],
                 error ? error : "the database is away");
}

static void purge(struct loop *l, void *arg)
{
    struct gw_store *s = arg;
    s->purge = loop_timer_add(l, PURGE_MS, purge, s);
    if (pgconn_up(s->conn))
        pgconn_send_one(s->conn, "nonce_purge", 0, NULL, logged, WHAT(WHAT_PURGE));
}

json_t *gw_store_start(struct gateway *g, const char *url, const char *password, json_t *seed,
                       char *err, size_t errlen)
{
    PGconn *pg = storeschema_connect(url, password, err, errlen);
    if (pg == NULL)
        return NULL;
    const char *name;
    json_t *pin, *pins = NULL;
    /* One transaction, one lock: pins beyond the caps are left out (those tools wait, withheld,
     * and say why once they are judged). */
    bool ok = exec_ok(pg, "BEGIN", "pinning the tools", err, errlen) &&
              exec_ok(pg, PIN_LOCK, "taking the pins' lock", err, errlen);
    json_object_foreach(json_object_get(seed, "pins"), name, pin)
    {
        if (!ok || !(ok = pin_absent_locked(pg, name, pin, err, errlen) >= 0))
            break;
    }
    if (ok && exec_ok(pg, "COMMIT", "pinning the tools", err, errlen))
        pins = gw_store_pins_read(pg, err, errlen);
    PQfinish(pg);
    if (pins == NULL)
        return NULL;
    struct gw_store *s = xcalloc(1, sizeof *s);
    s->g = g;
    struct pgconn_opts o = {.loop = g->loop,
                            .conninfo = url,
                            .password = password,
                            .stmts = stmts,
                            .nstmts = sizeof stmts / sizeof *stmts,
                            .on_notify = on_notify,
                            .on_state = on_state,
                            .arg = s};
    s->conn = pgconn_new(&o);
    if (s->conn == NULL) {
        snprintf(err, errlen, "cannot open the store's connection for the pins");
        free(s);
        json_decref(pins);
        return NULL;
    }
    pgconn_listen(s->conn, GW_STORE_CHANNEL);
    s->purge = loop_timer_add(g->loop, PURGE_MS, purge, s);
    g->store = s;
    return pins;
}

void gw_store_free(struct gw_store *s)
{
    if (s == NULL)
        return;
    loop_timer_cancel(s->purge);
    loop_timer_cancel(s->later);
    pgconn_free(s->conn); /* requests in flight are called back, DOWN */
    strmap_free(s->full); /* its values are marks, not pointers */
    free(s);
}

/* A pin asked for while serving: refused for the caps, said once per tool. */
struct pin_ask {
    struct gw_store *s;
    char *exposed, *upstream;
};

static void ask_later(struct loop *l, void *arg)
{
    struct gw_store *s = arg;
    (void)l;
    s->later = NULL;
    gw_store_reread(s); /* judging the pins again asks for the missing ones */
}

static void pin_absent_done(enum pgconn_status st, PGresult *const *res, size_t n,
                            const char *error, void *arg)
{
    struct pin_ask *a = arg;
    struct gw_store *s = a->s;
    const char *how = st == PGCONN_OK && n == 2 && res[1] && PQntuples(res[1]) == 1
                          ? PQgetvalue(res[1], 0, 1)
                          : NULL;
    if (st != PGCONN_OK)
        log_warn("gateway: pinning a tool in the store failed: %s",
                 error ? error : "the database is away");
    else if (how && strcmp(how, "busy") == 0) { /* another replica or an accept holds the lock */
        if (s->later == NULL && s->conn)
            s->later = loop_timer_add(s->g->loop, LATER_MS, ask_later, s);
    } else if (how && strcmp(how, "full") == 0) {
        if (s->full == NULL)
            s->full = strmap_new();
        void *was = strmap_get(s->full, a->exposed);
        if (was == NULL && strmap_count(s->full) < FULL_MAX)
            log_warn("gateway: upstream %s, tool %s: not pinned: the store holds as many pins as "
                     "it may (%s of one upstream, %s bytes in all); withheld until room is made "
                     "(hermes-mcp gateway unpin NAME, for tools no longer served)",
                     a->upstream, a->exposed, PINS_PER_UPSTREAM, PINS_BYTES_MAX);
        if (was || strmap_count(s->full) < FULL_MAX)
            strmap_put(s->full, a->exposed, FULL_WAITING);
    } else if (s->full) /* pinned, or pinned meanwhile: forgotten */
        strmap_del(s->full, a->exposed);
    free(a->exposed);
    free(a->upstream);
    free(a);
}

void gw_store_pin_absent(struct gw_store *s, const char *exposed, json_t *pin)
{
    char err[200];
    if (s->full && strmap_get(s->full, exposed) == FULL_WAITING)
        return; /* refused for the caps: asked for again once room may have been made */
    if (s->later)
        return; /* the lock was busy: the next read asks */
    char *doc = pin_text(exposed, pin, err, sizeof err);
    if (doc == NULL)
        return;
    struct pin_ask *a = xcalloc(1, sizeof *a);
    *a = (struct pin_ask){
        .s = s, .exposed = xstrdup(exposed), .upstream = xstrdup(upstream_of(pin))};
    const char *params[3] = {exposed, doc, a->upstream};
    const struct pgconn_query q[2] = {{"pin_trylock", 0, NULL}, {"pin_absent", 3, params}};
    pgconn_send(s->conn, q, 2, pin_absent_done, a);
    free(doc);
}

/* ---- nonces ---- */

static void claimed(enum pgconn_status st, PGresult *const *res, size_t n, const char *error,
                    void *arg)
{
    struct gw_store_claim *c = arg;
    if (st != PGCONN_OK && st != PGCONN_DOWN)
        log_warn("gateway: claiming an input round in the store: %s", error ? error : "no answer");
    bool got = st == PGCONN_OK && n == 1 && res[0] && PQntuples(res[0]) == 1;
    if (c->cb)
        c->cb(c->arg, st != PGCONN_OK ? GW_CLAIM_UNAVAILABLE
                      : got           ? GW_CLAIM_FIRST
                                      : GW_CLAIM_TAKEN);
    free(c);
}

struct gw_store_claim *gw_store_nonce_claim(struct gw_store *s, const char *nonce, unsigned ttl_ms,
                                            gw_store_claimed_fn *cb, void *arg)
{
    char ttl[16];
    struct gw_store_claim *c = xcalloc(1, sizeof *c);
    c->cb = cb;
    c->arg = arg;
    snprintf(ttl, sizeof ttl, "%u", ttl_ms);
    const char *params[2] = {nonce, ttl};
    pgconn_send_one(s->conn, "nonce_use", 2, params, claimed, c);
    return c;
}

void gw_store_claim_cancel(struct gw_store_claim *c)
{
    if (c)
        c->cb = NULL;
}

void gw_store_nonce_give_back(struct gw_store *s, const char *nonce)
{
    const char *params[1] = {nonce};
    if (pgconn_up(s->conn))
        pgconn_send_one(s->conn, "nonce_back", 1, params, logged, WHAT(WHAT_GIVE_BACK));
}
