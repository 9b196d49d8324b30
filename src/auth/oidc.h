/* oidc.h — access tokens from external OpenID Connect / OAuth providers (OIDC_ISSUER_URL).
 *
 * Each issuer's metadata is found by OpenID Connect discovery (else RFC 8414), its key set
 * (jwks_uri) fetched and cached per Cache-Control; a JWT access token is verified here
 * (jwt.h) against its issuer's keys, an opaque one asked of the introspection endpoint (RFC
 * 7662, OIDC_INTROSPECTION_URL). Fetches run on the loop through httpc and never block it: a
 * request whose token needs one waits (OIDC_WAIT) and is told when to ask again. A token with a
 * kid the cached set lacks refetches the set, at most once per refetch interval per issuer.
 * Verified tokens and introspection answers are remembered (by the token's SHA-256) until
 * their exp at most, so a client's next request costs a hash. Loop thread. */
#ifndef HM_OIDC_H
#define HM_OIDC_H
#include <stdbool.h>
#include <stddef.h>

struct claimmap;
struct httpc;
struct loop;
struct oidc;
struct oidc_wait;
struct principal;

#define OIDC_ISSUERS_MAX 8
#define OIDC_AUDIENCES_MAX 8
#define OIDC_FETCH_MS 5000    /* a metadata, key set or introspection fetch, at most */
#define OIDC_REFETCH_MS 10000 /* an unknown kid refetches the key set at most this often */
#define OIDC_CACHE_MAX 4096   /* tokens remembered */
#define OIDC_WAITERS_MAX 1024 /* requests waiting on fetches, over all issuers */
#define OIDC_PRINCIPAL_PREFIX "oidc:"

struct oidc_opts {
    const char *const *issuers; /* exactly as tokens' iss names them; copied */
    size_t nissuers;
    const char *const *audiences; /* a token's aud must name one; copied */
    size_t naudiences;
    const char *principal_claim;           /* "sub" */
    const char *scopes_claim;              /* "scope" */
    const char *introspection_url;         /* or NULL: opaque tokens are refused */
    const char *client_id, *client_secret; /* for introspection (HTTP Basic) */
    unsigned skew_s;                       /* leeway for exp, nbf, iat */
    unsigned refetch_ms;                   /* 0: OIDC_REFETCH_MS */
};

/* Starts fetching every issuer's metadata and keys (on the loop, in the background). */
struct oidc *oidc_new(struct loop *l, struct httpc *http, const struct oidc_opts *o);
void oidc_free(struct oidc *o); /* NULL-safe; waiters are dropped without a call */

enum oidc_verdict {
    OIDC_OK,          /* *out is the token's principal */
    OIDC_WAIT,        /* a fetch it needs is under way: ready(arg) runs later, then ask again */
    OIDC_INVALID,     /* not a token of a configured issuer for us: *why says what */
    OIDC_EXPIRED,     /* was one, and has expired */
    OIDC_UNAVAILABLE, /* the provider did not answer (or too many wait): try again later */
    OIDC_LIMITED,     /* admit refused the work a new token needs */
};
typedef void oidc_ready_cb(void *arg);

struct oidc_hooks {
    oidc_ready_cb *ready; /* after OIDC_WAIT: ask again */
    void *ready_arg;
    bool (*admit)(void *arg); /* before a token not remembered costs a verification or a
                                 fetch: false refuses it (OIDC_LIMITED); NULL admits all */
    void *admit_arg;
};

/* Who token is. OIDC_OK: *out is a new principal named "oidc:<principal claim>" for the first
 * issuer, "oidcN:<claim>" for the Nth (for a value that is not printable ASCII, holds '#' or is
 * too long, '#' and a digest of it), holding the
 * scopes the token carries mapped by map (may be NULL), the agents and limits of map's rules,
 * and exp as its expiry; *client_id the token's azp or client_id claim, or NULL (both the
 * caller's to free). OIDC_WAIT: *wait is the wait, until h->ready runs (from the loop, never
 * inside this call) or oidc_wait_cancel. *why (a static phrase, for logs and
 * error_description) on refusals. A token of 64 hexadecimal digits (this server's own shape) is
 * refused without asking any provider. */
enum oidc_verdict oidc_check(struct oidc *o, const char *token, const struct claimmap *map,
                             struct principal **out, char **client_id, const char **why,
                             const struct oidc_hooks *h, struct oidc_wait **wait);
void oidc_wait_cancel(struct oidc *o, struct oidc_wait *w); /* NULL-safe; ready never runs */

/* Where issuer's metadata is: OpenID Connect Discovery 1.0 section 4.1 (appended to the issuer,
 * a trailing '/' of it dropped), or with rfc8414 RFC 8414 section 3 (between host and path). */
char *oidc_discovery_url(const char *issuer, bool rfc8414);

size_t oidc_issuer_count(const struct oidc *o);
const char *oidc_issuer_at(const struct oidc *o, size_t i);
/* Key set fetches so far, all issuers. */
unsigned long oidc_jwks_fetches(const struct oidc *o);

#endif
