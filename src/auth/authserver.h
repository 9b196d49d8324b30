/* authserver.h — the OAuth 2.1 authorization server: RFC 8414 metadata, /register
 * (RFC 7591: public clients, and confidential ones issued a secret kept only as its hash; plus
 * the static confidential client of OAUTH_CLIENT_ID), /authorize (code
 * flow, PKCE S256 only, the owner's consent page behind the passphrase), /token
 * (authorization_code and refresh_token grants with rotation) and /revoke (RFC 7009; a refresh
 * token takes its family).
 * Tokens go to the token store (hashes only); registered clients to their own file (mode 600,
 * atomic); pending consents and codes are kept in memory. app.c routes the paths here; loop
 * thread only, but for the passphrase check (verifier.c). */
#ifndef HM_AUTHSERVER_H
#define HM_AUTHSERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct hreq;
struct loop;
struct oauthpg;
struct tokenstore;

#define AUTHSERVER_ACCESS_TTL 3600              /* seconds, unless opts say otherwise */
#define AUTHSERVER_REFRESH_TTL (30 * 24 * 3600) /* seconds, unless opts say otherwise */
#define AUTHSERVER_CODE_TTL 60                  /* seconds */
#define AUTHSERVER_CLIENTS_MAX 1000
#define AUTHSERVER_REGISTER_BODY_MAX (16 * 1024)

struct authserver_opts {
    const char *issuer;           /* https://host[:port], no trailing slash */
    const char *resource;         /* <issuer>/mcp, the audience of every token */
    const char *passphrase_path;  /* the owner's scrypt hash (hermes-mcp oauth passwd) */
    const char *service;          /* shown on the consent page */
    struct tokenstore *tokens;    /* not owned */
    bool dcr;                     /* /register on (OAUTH_DCR, default on) */
    const char *clients_path;     /* the registered clients (JSON, mode 600); NULL: memory only */
    const char *static_client_id; /* OAUTH_CLIENT_ID (the static confidential client), or NULL */
    const unsigned char *static_secret_hash; /* with it: SHA-256 of OAUTH_CLIENT_SECRET */
    const char *redirect_schemes;            /* app schemes, comma-separated; NULL: the default */
    bool cimd;                    /* client ID metadata documents (OAUTH_CIMD, default on) */
    const char *cimd_ca_file;     /* OAUTH_CIMD_CA_FILE: an extra CA to trust fetching them */
    const char *cimd_allow_hosts; /* OAUTH_CIMD_ALLOW_HOSTS: hosts that may be private */
    unsigned access_ttl_s;        /* OAUTH_ACCESS_TTL_S; 0: AUTHSERVER_ACCESS_TTL */
    unsigned refresh_ttl_s;       /* OAUTH_REFRESH_TTL_S; 0: AUTHSERVER_REFRESH_TTL */
    /* Whether name is an upstream of this server's, which a gateway:<name> scope at /authorize
     * may name (any other is invalid_scope); NULL: any well-formed name. */
    bool (*upstream_known)(void *arg, const char *name);
    void *upstream_arg;
};

/* NULL with a reason in err when the clients file cannot be used (readable by others, not
 * one this module wrote). */
struct authserver *authserver_new(const struct authserver_opts *o, char *err, size_t errlen);
void authserver_free(struct authserver *as); /* NULL-safe */
/* Once the loop exists: consent passphrases are then checked on a worker thread (verifier.h)
 * and the consent POST answered when the check is back, so scrypt never stalls the loop.
 * Without it (or if the thread cannot be set up) they are checked on the spot. The environment
 * variable HERMES_TEST_CONSENT_DELAY_MS (tests only) makes every check that much slower. */
void authserver_set_loop(struct authserver *as, struct loop *l);
/* With STORE_URL: clients, consents, codes and tokens in the store (oauthpg.h) rather than in
 * files and memory; the clients table and the token store (opened on NULL) become this
 * replica's caches. */
void authserver_set_store(struct authserver *as, struct oauthpg *p);
/* The clients file beside a file (the token store): its directory's oauth-clients.json.
 * Malloc'd. */
char *authserver_clients_path_beside(const char *file);
size_t authserver_client_count(const struct authserver *as);
/* A redirect URI a client may register: https to a host, http only to the loopback, or a
 * connector app's scheme (claude:, claudeai:, cursor:); never userinfo, a fragment,
 * javascript: or data:. */
bool authserver_redirect_ok(const char *uri);
#define AUTHSERVER_DEFAULT_SCHEMES "claude,claudeai,cursor"
/* The same with the app schemes given (comma-separated; NULL: the default), as
 * OAUTH_ALLOWED_REDIRECT_SCHEMES sets them. */
bool authserver_redirect_ok_in(const char *uri, const char *schemes);
/* The registered clients (not the static one), for `hermes-mcp oauth clients`: the i-th, or
 * false past the last; never a client's secret or its hash. The strings stay valid until the
 * next call into as. */
struct authserver_client_info {
    const char *id, *name;
    const char *const *redirects;
    size_t nredirects;
    time_t created; /* 0: not known (registered before it was kept) */
};
bool authserver_client_at(struct authserver *as, size_t i, struct authserver_client_info *out);
/* Removes a registered client from the clients file (under its lock; a running server sees it
 * at its next request). *found says whether it was there; false with a reason when the write
 * failed. Its tokens are the token store's business (tokenstore_revoke_matching). */
bool authserver_client_remove(struct authserver *as, const char *id, bool *found, char *err,
                              size_t errlen);
/* Adds a client document read from the store (`hermes-mcp oauth` with STORE_URL); false when
 * it is not one this server writes. */
bool authserver_client_add_doc(struct authserver *as, const char *doc);
/* Whether path is one of the authorization server's. */
bool authserver_owns(const char *path);
/* CORS for what browser-based MCP clients call from their own origin (the metadata, /register,
 * /token, /revoke; never /authorize): "Access-Control-Allow-Origin: *" on r's answer, and when r
 * is an OPTIONS preflight, answers it (204, methods, the headers the SDK sends) and returns
 * true. No credentials mode: nothing here rides on cookies. */
bool authserver_cors(struct hreq *r, const char *methods);
/* From the headers callback: answers what needs no body (metadata, the consent page, 405s);
 * for a POST it returns without answering, and authserver_request gets the body. So too for a
 * GET /authorize whose client_id is a metadata document URL not in the cache: then
 * authserver_request fetches it (cimd.h) and answers when it is in, the request suspended.
 * ip is the client's address (rate limits); now_ms a monotonic clock. */
void authserver_headers(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms);
void authserver_request(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms);

#endif
