/* oauthpg.h — with STORE_URL, the OAuth state of the authorization server (clients, consents
 * shown, codes, tokens and their families, the wrong-passphrase and registration counters) is
 * in PostgreSQL, so that any replica serves any step of a client's authorization.
 *
 * One pgconn per server, on the loop: every statement is prepared here (oauthpg.c), every value
 * a bound parameter. What a request needs is asked and the request answered from the callback;
 * nothing waits on the loop. Lookups of a presented access token stay a hash probe in the
 * token cache (a tokenstore in memory); a token the cache lacks (issued by another replica) is
 * looked up once, the request held meanwhile, and an absent one remembered briefly. Every
 * deletion of a token or a client is announced on the channel hm_oauth ("t:<sha256>",
 * "c:<client id>"), to which each replica listens: a revocation anywhere drops the entry from
 * every replica's cache at once. After a reconnect (notifications may have been missed) the
 * caches are dropped whole. Loop thread only. */
#ifndef HM_OAUTHPG_H
#define HM_OAUTHPG_H
#include <stdbool.h>
#include <stddef.h>

#include "pgconn.h"

struct hreq;
struct loop;
struct oauthpg;
struct oauthpg_wait;
struct tokenstore;

#define OAUTHPG_CHANNEL "hm_oauth"
/* caps_lock's keys: the statements that count rows before inserting, one at a time. */
#define OAUTHPG_LOCK_CLIENTS "1"
#define OAUTHPG_LOCK_CONSENTS "2"
#define OAUTHPG_ABSENT_MS 2000 /* how long a token found nowhere is not asked for again */

/* cache: the token cache (tokenstore_open(NULL)), borrowed. NULL when libpq cannot be loaded. */
struct oauthpg *oauthpg_new(struct loop *l, const char *url, const char *password,
                            struct tokenstore *cache);
/* Lets the last writes land (at most a second), then closes; NULL-safe. */
void oauthpg_free(struct oauthpg *p);
/* fn(arg, id) when client id was removed elsewhere; id NULL: every client may have changed (a
 * reconnect). */
void oauthpg_on_clients(struct oauthpg *p, void (*fn)(void *arg, const char *id), void *arg);
struct tokenstore *oauthpg_cache(struct oauthpg *p);
/* Drops from the cache the tokens a deleting statement returned (their hashes first): this
 * replica need not wait for its own notification. */
void oauthpg_drop_rows(struct oauthpg *p, const PGresult *res);
/* Seconds a client should wait before trying again while the database is away (>= 1). */
unsigned oauthpg_retry_s(const struct oauthpg *p);

/* A token the cache lacks. OAUTHPG_WAIT: a lookup went out; ready(arg) runs once it is
 * answered (the cache then holds the token if the database does), unless cancelled. */
enum oauthpg_find { OAUTHPG_ABSENT, OAUTHPG_WAIT, OAUTHPG_DOWN };
enum oauthpg_find oauthpg_token_fetch(struct oauthpg *p, const char *token, void (*ready)(void *),
                                      void *arg, struct oauthpg_wait **w);
void oauthpg_wait_cancel(struct oauthpg_wait *w); /* NULL-safe; ready never runs */

/* One request for an HTTP request r: the statements as one transaction; cb runs once, later,
 * with r, or with r NULL when the client went away meanwhile (then only arg is to be freed).
 * Uses r's abort hook while it waits. */
typedef void oauthpg_cb(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n,
                        void *arg);
void oauthpg_call(struct oauthpg *p, struct hreq *r, const struct pgconn_query *q, size_t n,
                  oauthpg_cb *cb, void *arg);
/* The same without an HTTP request (cb may be NULL: failures are logged). */
void oauthpg_send(struct oauthpg *p, const struct pgconn_query *q, size_t n, pgconn_done_cb *cb,
                  void *arg);

#endif
