/* oidc_internal.h — the parts of oidc.h's module: issuers and their keys (oidc_keys.c),
 * introspection (oidc_introspect.c), tokens to principals and the cache (oidc.c). */
#ifndef HM_OIDC_INTERNAL_H
#define HM_OIDC_INTERNAL_H
#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "list.h"
#include "oidc.h"

struct httpc_req;
struct jwks;
struct strmap;

/* A request waiting on a fetch: on the list of what it waits for. */
struct oidc_wait {
    struct list link;
    oidc_ready_cb *ready;
    void *arg;
    size_t *count; /* its list's own count (an issuer's), or NULL */
};

enum issuer_state {
    ISSUER_IDLE,     /* nothing fetched yet, or the last attempt failed (retry_ms) */
    ISSUER_METADATA, /* fetching the discovery document */
    ISSUER_KEYS,     /* fetching the key set */
    ISSUER_READY,    /* keys in hand (maybe refreshing them: req set) */
};

struct issuer {
    struct oidc *o;
    char *url;
    char *jwks_uri; /* from the metadata */
    bool rfc8414;   /* the OpenID discovery URL failed: trying RFC 8414's */
    enum issuer_state state;
    struct jwks *keys;       /* NULL until the first set arrives */
    uint64_t keys_until_ms;  /* refresh after this (Cache-Control) */
    unsigned long max_age_s; /* the key set fetch under way: its Cache-Control max-age */
    uint64_t fetched_ms;     /* when the last key set fetch started, or ended */
    uint64_t retry_ms;       /* IDLE after a failure: not before this */
    unsigned failures;       /* in a row: the backoff */
    struct httpc_req *req;   /* the fetch under way, or NULL */
    struct list waiters;     /* struct oidc_wait */
    size_t nwaiters;         /* on it: one hanging provider must not take every wait */
};

struct oidc {
    struct loop *loop;
    struct httpc *http;
    struct issuer iss[OIDC_ISSUERS_MAX];
    size_t niss;
    char *aud[OIDC_AUDIENCES_MAX];
    size_t naud;
    char *principal_claim, *scopes_claim;
    char *introspection_url, *client_id, *client_secret;
    unsigned skew_s, refetch_ms;
    struct strmap *cache;  /* SHA-256 hex of a token -> struct oidc_cached */
    struct strmap *asking; /* introspections under way: token hash -> struct introspection */
    size_t nwaiting;
    unsigned long jwks_fetches;
};

/* What a token was found to be, remembered until `until` (seconds, wall clock). */
struct oidc_cached {
    json_t *claims;   /* NULL: refused (an inactive introspected token) */
    bool unavailable; /* with claims NULL: the introspection endpoint did not answer */
    time_t until;
};

/* oidc_keys.c */
void oidc_issuer_start(struct issuer *is);
void oidc_issuer_stop(struct issuer *is);
/* The issuer's keys for a check now, or NULL: then *v is OIDC_WAIT (w queued, ready later) or
 * OIDC_UNAVAILABLE. refetch: the cached set lacked the token's kid. */
struct jwks *oidc_issuer_keys(struct issuer *is, bool refetch, struct oidc_wait *w,
                              enum oidc_verdict *v);
/* Queues w on list (counted), or false when too many wait. */
bool oidc_wait_on(struct oidc *o, struct list *list, struct oidc_wait *w);
/* Runs and frees every wait of list (from a fetch's end). */
void oidc_wake(struct oidc *o, struct list *list);

/* oidc_introspect.c: an opaque token's claims (a new reference) or NULL with *v set. */
json_t *oidc_introspect(struct oidc *o, const char *token, const char *hash, struct oidc_wait *w,
                        enum oidc_verdict *v, const char **why);
void oidc_introspect_stop(struct oidc *o);

/* oidc.c */
/* Remembers what a token is (claims taken over; NULL: refused, or unavailable). */
void oidc_remember(struct oidc *o, const char *hash, json_t *claims, bool unavailable,
                   time_t until);
bool oidc_audience_ok(const struct oidc *o, json_t *aud);

#endif
