/* as_clientpg.c — registered clients with STORE_URL: the table is this replica's cache of
 * hm_oauth_client. A registration is a row (inserted while the address's count of this minute
 * and the table's size allow it: the limits hold across replicas); a client the cache lacks
 * (registered through another replica) is read from the store before the request is judged; a
 * client revoked anywhere (`hermes-mcp oauth clients revoke`) leaves every cache at once (the
 * store's notification), and a reconnect empties it. */
#include "as_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clientdoc.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "oauthpg.h"
#include "ratelimit.h"

void as_store_page(struct authserver *as, struct hreq *r)
{
    char retry[16];
    snprintf(retry, sizeof retry, "%u", oauthpg_retry_s(as->pg));
    hreq_add_header(r, "Retry-After", retry);
    as_error_page(r, 503, "Unavailable",
                  "The server cannot reach its store just now; try again in a moment.");
}

/* ---- a client another replica registered ---- */

struct asking {
    struct authserver *as;
    void (*again)(struct authserver *as, struct hreq *r, const char *ip);
    char ip[64];
};

static void client_read(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                        void *arg)
{
    struct asking *k = arg;
    struct authserver *as = k->as;
    (void)n;
    if (st == PGCONN_OK && PQntuples(res[0]) == 1) {
        json_t *o = json_loads(PQgetvalue(res[0], 0, 0), JSON_REJECT_DUPLICATES, NULL);
        if (as->nclients >= AUTHSERVER_CLIENTS_MAX)
            as_client_forget(as, NULL);
        if (o && !as_find_client(as, json_string_value(json_object_get(o, "client_id"))) &&
            !as_client_add_json(as, o))
            log_warn("oauth: a stored client's document is not one this server takes");
        json_decref(o);
    }
    if (r && st != PGCONN_OK) {
        if (strcmp(hreq_method(r), "POST") == 0)
            as_store_unavailable(as, r);
        else
            as_store_page(as, r);
    } else if (r) {
        as->client_asked = r; /* asked: absent now means unknown */
        k->again(as, r, k->ip);
        as->client_asked = NULL;
    }
    free(k);
}

static bool registered_id(const char *id)
{
    return strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}

bool as_pg_client_ready(struct authserver *as, struct hreq *r, const char *id, const char *ip,
                        void (*again)(struct authserver *as, struct hreq *r, const char *ip))
{
    if (as->pg == NULL || as->client_asked == r || !registered_id(id) || as_find_client(as, id))
        return true;
    struct asking *k = xcalloc(1, sizeof *k);
    k->as = as;
    k->again = again;
    snprintf(k->ip, sizeof k->ip, "%s", ip ? ip : "");
    const char *params[1] = {id};
    struct pgconn_query q[1] = {{"client_get", 1, params}};
    oauthpg_call(as->pg, r, q, 1, client_read, k);
    return false;
}

/* ---- /register ---- */

struct registering {
    struct authserver *as;
    char id[65];
    json_t *out;
};

#define STR_(x) #x
#define STR(x) STR_(x)

static void registered(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                       void *arg)
{
    struct registering *g = arg;
    struct authserver *as = g->as;
    bool stored = st == PGCONN_OK && n == 3 && PQntuples(res[2]) == 1;
    long long count =
        st == PGCONN_OK && n == 3 && PQntuples(res[1]) == 1 ? atoll(PQgetvalue(res[1], 0, 0)) : 0;
    if (!stored) /* refused or unknown: not a client of this replica's cache either */
        as_client_forget(as, g->id);
    if (r == NULL) {
        /* The client went away: a client stored stays, as with files. */
    } else if (st != PGCONN_OK) {
        as_store_unavailable(as, r);
    } else if (count > REGISTER_PER_MIN) {
        hreq_add_header(r, "Retry-After", "60");
        as_oauth_error(r, 429, OAUTH_TEMPORARILY_UNAVAILABLE,
                       "too many registrations; wait a minute");
    } else if (!stored) {
        as_oauth_error(r, 400, OAUTH_TEMPORARILY_UNAVAILABLE,
                       "the server holds as many clients as it takes");
    } else {
        log_info("oauth: registered client %s", g->id);
        as_reply_json(r, 201, g->out);
        g->out = NULL;
    }
    json_decref(g->out);
    free(g);
}

void as_pg_register(struct authserver *as, struct hreq *r, const char *ip, json_t *out)
{
    const struct client *c = &as->clients[as->nclients - 1];
    struct registering *g = xcalloc(1, sizeof *g);
    char addr[48], key[80], window[24];
    g->as = as;
    g->out = out;
    snprintf(g->id, sizeof g->id, "%s", c->id);
    ratelimit_key(ip, addr, sizeof addr);
    snprintf(key, sizeof key, "register:%s", addr);
    snprintf(window, sizeof window, "%lld", (long long)(time(NULL) / 60));
    json_t *o = as_client_json(c);
    char *doc = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    const char *count[2] = {key, window};
    const char *put[5] = {g->id, doc ? doc : "", key, STR(REGISTER_PER_MIN),
                          STR(AUTHSERVER_CLIENTS_MAX)};
    const char *lock[1] = {OAUTHPG_LOCK_CLIENTS};
    struct pgconn_query q[3] = {
        {"caps_lock", 1, lock}, {"count_add", 2, count}, {"client_put", 5, put}};
    oauthpg_call(as->pg, r, q, 3, registered, g);
    free(doc);
}
