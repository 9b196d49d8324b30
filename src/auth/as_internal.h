/* as_internal.h — what the authorization server's files (authserver.c, as_*.c) share: its
 * limits, its state and the calls one endpoint's file makes into another's. Nothing outside
 * src/auth/as_*.c and authserver.c includes it; the rest of the program uses authserver.h. */
#ifndef HM_AS_INTERNAL_H
#define HM_AS_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "authn.h" /* AUTHN_DEFAULT_SCOPES */
#include "authserver.h"
#include "clientmeta.h"
#include "oautherr.h"
#include "storefile.h"

struct buf;
struct hreq;
struct json_t;

#define PARAM_MAX CLIENTMETA_URI_MAX /* any one parameter: client id, redirect URI, state... */
#define REDIRECTS_MAX CLIENTMETA_REDIRECTS_MAX /* redirect URIs of one client */
#define CLIENT_NAME_MAX CLIENTMETA_NAME_MAX
#define CONSENTS_MAX 256     /* consent pages shown and not yet answered */
#define CONSENT_TTL 600      /* seconds the owner has to answer one */
#define CONSENTS_PER_ADDR 16 /* open consent pages one address (an IPv6 /64) may hold */
#define CODES_MAX 256
#define CONSENT_FAILS_MAX 5     /* wrong passphrases from one address in a minute */
#define CONSENT_FAILS_GLOBAL 30 /* wrong passphrases from all addresses in a minute */
#define VERIFIER_KEEP_FREE 4    /* queue places only an address with no failure or check may take */
#define FAIL_TABLE 1024         /* addresses whose failures are remembered */
#define REGISTER_PER_MIN 10     /* registrations a minute from one address */

struct client {
    char id[65]; /* registered: 32 hex; the static client (OAUTH_CLIENT_ID): up to 64 */
    char *name;
    char *redirects[REDIRECTS_MAX];
    size_t nredirects;
    time_t created;            /* Unix seconds; 0 when registered before this was kept */
    enum clientmeta_auth auth; /* as registered: none, or a secret (either method is taken) */
    char secret_hash[65];      /* a confidential one's: tokenstore_hash of its secret */
};

struct consent { /* a consent page shown: what its POST will approve */
    char csrf[65];
    char client_id[PARAM_MAX + 1];         /* a registered id, or a metadata document's URL */
    char client_name[CLIENT_NAME_MAX + 1]; /* a metadata document's (it may leave the cache) */
    char client_host[256];                 /* and where it is published */
    char redirect_uri[PARAM_MAX + 1], state[PARAM_MAX + 1], challenge[PARAM_MAX + 1];
    char scope[PARAM_MAX + 1];
    bool redirect_sent; /* redirect_uri was in the request: /token must repeat it (RFC 6749 §4.1.3)
                         */
    char addr[48];      /* who asked (ratelimit_key): the per-address cap */
    time_t expires;     /* 0: free slot */
};

struct code {
    unsigned char hash[32];
    char client_id[PARAM_MAX + 1];
    char redirect_uri[PARAM_MAX + 1], challenge[PARAM_MAX + 1], scope[PARAM_MAX + 1];
    char family[33];    /* the tokens it gave, once exchanged: a replay revokes them */
    bool redirect_sent; /* as in struct consent */
    bool used;
    time_t expires; /* 0: free slot */
};

struct failures { /* wrong passphrases from one address (an IPv6 /64) in the current minute */
    char key[48];
    unsigned count;
    uint64_t since_ms;
};

struct authserver {
    char *issuer, *resource, *passphrase_path, *service, *clients_path;
    struct tokenstore *tokens;
    bool dcr;
    unsigned access_ttl_s, refresh_ttl_s; /* the tokens' lives */
    struct client *clients;
    size_t nclients;
    struct storefile_id clients_seen; /* the clients file as last read or written here */
    struct consent consents[CONSENTS_MAX];
    struct code codes[CODES_MAX];
    struct failures fails[FAIL_TABLE];
    struct failures all_fails; /* every address's, for CONSENT_FAILS_GLOBAL */
    struct ratelimit *rl_register;
    struct loop *loop;
    struct verifier *verifier;   /* the passphrase's scrypt, off the loop (authserver_set_loop) */
    struct checking *checking;   /* consent POSTs waiting for it */
    char *schemes;               /* app schemes a redirect URI may use (comma-separated) */
    struct client static_client; /* OAUTH_CLIENT_ID, when set (static_client.id non-empty) */
    unsigned char static_secret_hash[32];
    bool cimd_on; /* OAUTH_CIMD: client ID metadata documents */
    char *cimd_ca_file, *cimd_allow_hosts;
    struct cimd *cimd;      /* their fetcher and cache, once the loop exists */
    struct lookup *lookups; /* GET /authorize requests waiting for a document */
    struct oauthpg *pg;     /* with STORE_URL: the state of every replica (authserver_set_store) */
    struct hreq *client_asked; /* the request whose client the store was just asked for */
    bool (*upstream_known)(void *arg, const char *name); /* authserver_opts' */
    void *upstream_arg;
};

/* A GET /authorize waiting for its client's metadata document. */
struct lookup {
    struct lookup *next;
    struct authserver *as;
    struct hreq *r;
    struct cimd_fetch *fetch;
    char addr[48]; /* the asking address (ratelimit_key), for its consent */
};

/* A consent POST whose passphrase is being checked: what is needed to answer it afterwards. */
struct checking {
    struct checking *next;
    struct authserver *as;
    struct hreq *r;                 /* NULL once the client went away */
    char ip[64], key[48], csrf[80]; /* csrf as as_authorize_post read it (64 hex) */
};

/* as_reply.c */
void as_reply_json(struct hreq *r, unsigned status, struct json_t *doc); /* takes doc */
void as_oauth_error(struct hreq *r, unsigned status, enum oauth_err e, const char *why);
void as_html_escape(struct buf *b, const char *s);
void as_page_start(struct buf *b, const char *title);
void as_reply_page(struct hreq *r, unsigned status, struct buf *b); /* and cleans b up */
void as_error_page(struct hreq *r, unsigned status, const char *title, const char *text);
void as_redirect_back(struct authserver *as, struct hreq *r, const char *redirect_uri,
                      const char *state, const char *k1, const char *v1, const char *k2,
                      const char *v2);
/* The redirect back with error e (and why as its error_description, if not NULL). */
void as_redirect_error(struct authserver *as, struct hreq *r, const char *redirect_uri,
                       const char *state, enum oauth_err e, const char *why);

/* as_clients.c */
struct client *as_find_client(struct authserver *as, const char *id);
bool as_save_clients(struct authserver *as, char *err, size_t errlen);
bool as_load_clients(struct authserver *as, char *err, size_t errlen);
void as_clients_sync(struct authserver *as);
void as_client_clear(struct client *c);                /* frees what c holds, not c */
struct json_t *as_client_json(const struct client *c); /* as the file keeps one */
/* Adds one client document (as_client_json's) to the table; false when refused. */
bool as_client_add_json(struct authserver *as, struct json_t *o);
void as_client_forget(struct authserver *as, const char *id); /* NULL: every one */
void as_free_clients(struct client *clients, size_t n);

/* as_register.c, as_authorize.c, as_consent.c, as_token.c: the endpoints */
void as_register(struct authserver *as, struct hreq *r, const char *ip);
void as_authorize_get(struct authserver *as, struct hreq *r, const char *ip);
void as_authorize_fetch(struct authserver *as, struct hreq *r, const char *ip);
void as_authorize_post(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms);
struct consent *as_find_consent(struct authserver *as, const char *csrf, time_t now);
void as_consent_page(struct authserver *as, struct hreq *r, const struct consent *c,
                     const char *problem);
void as_token_endpoint(struct authserver *as, struct hreq *r);
bool as_verifier_matches(const char *verifier, const char *challenge);

/* as_tokenpg.c, as_clientpg.c, as_consentpg.c: the same with STORE_URL (oauthpg.h) */
void as_store_unavailable(struct authserver *as, struct hreq *r); /* 503 JSON, Retry-After */
void as_store_page(struct authserver *as, struct hreq *r);        /* the same as a page */
void as_pg_grant_code(struct authserver *as, struct hreq *r, const char *code, const char *uri,
                      const char *verifier, const char *resource, const char *client_id);
void as_pg_grant_refresh(struct authserver *as, struct hreq *r, const char *token,
                         const char *client_id);
void as_pg_revoke(struct authserver *as, struct hreq *r, const char *token, const char *client_id);
/* Whether client id is in the table; when not and the store may have it, asks the store and
 * returns false: again(as, r) runs once the answer is in (r held until then). */
bool as_pg_client_ready(struct authserver *as, struct hreq *r, const char *id, const char *ip,
                        void (*again)(struct authserver *as, struct hreq *r, const char *ip));
/* Stores the client just put at the end of the table, then answers out (taken) with 201; the
 * client leaves the table again when refused. */
/* GET /authorize: stores c (a new consent), then shows its page. */
void as_pg_consent_show(struct authserver *as, struct hreq *r, const struct consent *c);
/* POST /authorize: the counts, the passphrase and the CSRF token spent, then the check. */
void as_pg_consent_post(struct authserver *as, struct hreq *r, const char *ip, const char *csrf,
                        bool deny, uint64_t now_ms);
void as_pg_count_refund(struct authserver *as, const char *ip);
void as_pg_consent_drop(struct authserver *as, const char *csrf);
/* The consent approved: the code stored, then the redirect back with it. */
void as_pg_code_issue(struct authserver *as, struct hreq *r, struct consent *c, time_t now);
/* as_consent.c: a consent POST counted as a check running from ip's address while the store
 * answers it. */
struct checking *as_checking_hold(struct authserver *as, const char *ip);
void as_checking_release(struct authserver *as, struct checking *k); /* NULL: nothing */
/* Checks the passphrase r's body carries against line (NULL: none set) for the consent of csrf
 * in the table, then answers. */
void as_consent_verify(struct authserver *as, struct hreq *r, const char *ip, const char *csrf,
                       const char *line, uint64_t now_ms);
void as_pg_register(struct authserver *as, struct hreq *r, const char *ip, struct json_t *out);
void as_revoke_endpoint(struct authserver *as, struct hreq *r);

#endif
