/* authn.h — resource-server authentication: who a request's bearer token names. A token is
 * the owner's (MCP_AUTH_TOKEN) or a TOKENS_FILE role's (principals.c), else an OAuth access
 * token from the token store, accepted only when issued for this resource (RFC 8707
 * audience). Refusals carry RFC 6750 WWW-Authenticate challenges, with resource_metadata
 * (RFC 9728) when OAuth is on. Loop thread. */
#ifndef HM_AUTHN_H
#define HM_AUTHN_H
#include <jansson.h>
#include <stdbool.h>

#include "principal.h"
#include "scopes.h"

struct authn;
struct hreq;
struct oidc;
struct oidc_wait;
struct oauthpg;
struct oauthpg_wait;
struct principals;
struct tokenstore;

/* The scopes a client should ask for when it authorizes (the 401's scope=), and what one that
 * asks for none is granted (scopes.h). */
#define AUTHN_DEFAULT_SCOPES SCOPES_DEFAULT

struct authn_opts {
    bool required;             /* false: every request passes, with no principal */
    const char *issuer;        /* OAUTH_ISSUER_URL, or NULL; borrowed */
    struct tokenstore *tokens; /* with an issuer: the tokens issued; borrowed */
    const char *resource;      /* <issuer>/mcp: the audience an access token must name */
    const char *metadata_url;  /* the protected resource metadata's URL for challenges, or NULL */
    /* Before an identity provider's token that is not remembered costs a verification or a
     * fetch: false refuses the request (AUTHN_LIMITED), so that a client without a credential
     * cannot spend them faster than its address's rate allows. NULL admits all. */
    bool (*admit)(struct hreq *r, void *arg);
    void *admit_arg;
};

/* Takes over who (a reference). */
struct authn *authn_new(const struct authn_opts *o, struct principals *who);
/* SIGHUP: a new set of principals (taken over); requests in flight keep theirs. */
void authn_set_principals(struct authn *a, struct principals *who);
void authn_free(struct authn *a); /* NULL-safe */
/* External providers' tokens (OIDC_ISSUER_URL), set once the loop runs; NULL: none. */
void authn_set_oidc(struct authn *a, struct oidc *o);
/* With STORE_URL: tokens this replica has not seen are looked up in the store (oauthpg.h). */
void authn_set_store(struct authn *a, struct oauthpg *p);

enum authn_result {
    AUTHN_OK,
    AUTHN_NO_TOKEN,
    AUTHN_BAD_TOKEN,
    AUTHN_EXPIRED,
    AUTHN_WAIT,        /* r is held (hreq_hold) until its provider's keys are in: asked again */
    AUTHN_UNAVAILABLE, /* the provider's keys or introspection cannot be had now (503) */
    AUTHN_LIMITED,     /* admit refused a provider's new token (429) */
};

/* Who a request is: kept for as long as the request lives. */
struct authn_who {
    struct principals *set;               /* held while who is set (a TOKENS_FILE principal) */
    struct principal *grant;              /* or this, owned: an OAuth access token's principal */
    const struct principal *who;          /* NULL: no credential (or authentication is off) */
    char caller[PRINCIPAL_NAME_MAX + 24]; /* an OAuth grant's: its principal and authorization */
    char *client_id;                      /* an OAuth grant's client (whoami), or NULL */
    struct oidc *oidc;                    /* with wait: whom it waits on */
    struct oidc_wait *wait;               /* AUTHN_WAIT: the fetch r waits for, or NULL */
    struct oauthpg_wait *pgwait;          /* AUTHN_WAIT: the store's lookup r waits for */
    struct hreq *held;                    /* AUTHN_WAIT: the request to release */
    const char *why;                      /* a refused provider token: why (static text) */
};

/* Finds the principal r's bearer token names and fills w. AUTHN_OK also when authentication
 * is off: then there is no principal. AUTHN_WAIT: r has been held (hreq_hold) and will be
 * released, its headers judged again, once its provider's keys are in (or a hang-up cancels the
 * wait). */
enum authn_result authn_request(const struct authn *a, struct hreq *r, struct authn_who *w);
/* What tasks and sealed state are bound to: a TOKENS_FILE principal's name; for an OAuth
 * access token its client and authorization (family), so the client finds its tasks again
 * with its next refreshed token and another authorization of the same client does not. */
const char *authn_caller(const struct authn_who *w);
void authn_who_cleanup(struct authn_who *w);

/* The fixed scopes of the table in scopes.h, in its order: the scopes_supported of the
 * authorization server's and the protected resource's metadata. A new array. */
json_t *authn_scopes_supported(void);

/* A WWW-Authenticate Bearer challenge: error, scope and description when given. */
void authn_challenge(const struct authn *a, struct hreq *r, const char *error, const char *scope,
                     const char *description);
/* The 401 for a missing or wrong bearer token, challenge included. */
/* detail: why an identity provider's token was refused (authn_who's why, a static phrase such
 * as "unknown key id"), for the challenge's error_description; NULL for none. */
void authn_deny(const struct authn *a, struct hreq *r, enum authn_result why, const char *detail);
/* With OAuth a token in the query string is refused outright (400, the MCP authorization
 * spec: it would end up in logs and proxies' histories): true when r was answered so. */
bool authn_refuse_query_token(const struct authn *a, struct hreq *r);

#endif
