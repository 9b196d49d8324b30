/* oidc.c — tokens of external identity providers to principals (oidc.h). */
#include "oidc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "claimmap.h"
#include "crypto.h"
#include "hex.h"
#include "jwt.h"
#include "mem.h"
#include "oidc_internal.h"
#include "principal.h"
#include "strmap.h"

#define CLAIM_VALUE_MAX (PRINCIPAL_NAME_MAX - (sizeof OIDC_PRINCIPAL_PREFIX - 1) - 1)
#define CLIENT_ID_MAX 256

struct oidc *oidc_new(struct loop *l, struct httpc *http, const struct oidc_opts *opt)
{
    struct oidc *o = xcalloc(1, sizeof *o);
    o->loop = l;
    o->http = http;
    o->principal_claim = xstrdup(opt->principal_claim ? opt->principal_claim : "sub");
    o->scopes_claim = xstrdup(opt->scopes_claim ? opt->scopes_claim : "scope");
    o->introspection_url = opt->introspection_url ? xstrdup(opt->introspection_url) : NULL;
    o->client_id = opt->client_id ? xstrdup(opt->client_id) : NULL;
    o->client_secret = opt->client_secret ? xstrdup(opt->client_secret) : NULL;
    o->skew_s = opt->skew_s;
    o->refetch_ms = opt->refetch_ms ? opt->refetch_ms : OIDC_REFETCH_MS;
    o->cache = strmap_new();
    o->asking = strmap_new();
    for (size_t i = 0; i < opt->naudiences && o->naud < OIDC_AUDIENCES_MAX; i++)
        o->aud[o->naud++] = xstrdup(opt->audiences[i]);
    for (size_t i = 0; i < opt->nissuers && o->niss < OIDC_ISSUERS_MAX; i++) {
        struct issuer *is = &o->iss[o->niss++];
        is->o = o;
        is->url = xstrdup(opt->issuers[i]);
        list_init(&is->waiters);
    }
    for (size_t i = 0; i < o->niss; i++)
        oidc_issuer_start(&o->iss[i]);
    return o;
}

static void drop_cached(const char *key, void *value, void *arg)
{
    struct oidc_cached *c = value;
    (void)key, (void)arg;
    json_decref(c->claims);
    free(c);
}

void oidc_free(struct oidc *o)
{
    if (o == NULL)
        return;
    for (size_t i = 0; i < o->niss; i++)
        oidc_issuer_stop(&o->iss[i]);
    oidc_introspect_stop(o);
    strmap_free(o->asking);
    strmap_each(o->cache, drop_cached, NULL);
    strmap_free(o->cache);
    for (size_t i = 0; i < o->naud; i++)
        free(o->aud[i]);
    free(o->principal_claim);
    free(o->scopes_claim);
    free(o->introspection_url);
    free(o->client_id);
    wipe_free(o->client_secret);
    free(o);
}

size_t oidc_issuer_count(const struct oidc *o)
{
    return o->niss;
}

const char *oidc_issuer_at(const struct oidc *o, size_t i)
{
    return i < o->niss ? o->iss[i].url : NULL;
}

unsigned long oidc_jwks_fetches(const struct oidc *o)
{
    return o->jwks_fetches;
}

bool oidc_audience_ok(const struct oidc *o, json_t *aud)
{
    json_t *item;
    size_t i;
    for (size_t k = 0; k < o->naud; k++) {
        if (json_is_string(aud) && strcmp(json_string_value(aud), o->aud[k]) == 0)
            return true;
        json_array_foreach(aud, i,
                           item) if (json_is_string(item) &&
                                     strcmp(json_string_value(item), o->aud[k]) == 0) return true;
    }
    return false;
}

static void drop_expired(const char *key, void *value, void *arg)
{
    struct oidc_cached *c = value;
    struct strmap *keep = arg;
    if (c->claims && c->until > time(NULL)) /* refusals go first: cheap to learn again */
        strmap_put(keep, key, c);
    else
        drop_cached(key, value, NULL);
}

void oidc_remember(struct oidc *o, const char *hash, json_t *claims, bool unavailable, time_t until)
{
    if (strmap_count(o->cache) >= OIDC_CACHE_MAX) {
        /* Full: keep the live verified tokens; if all are, start over (they verify again). */
        struct strmap *keep = strmap_new();
        strmap_each(o->cache, drop_expired, keep);
        strmap_free(o->cache);
        o->cache = keep;
        if (strmap_count(o->cache) >= OIDC_CACHE_MAX) {
            strmap_each(o->cache, drop_cached, NULL);
            strmap_free(o->cache);
            o->cache = strmap_new();
        }
    }
    struct oidc_cached *c = xcalloc(1, sizeof *c);
    c->claims = claims;
    c->unavailable = unavailable;
    c->until = until;
    struct oidc_cached *old = strmap_put(o->cache, hash, c);
    if (old)
        drop_cached(hash, old, NULL);
}

/* A verified token's exp as a time: any JSON number (jwt_check_claims required one in the
 * future), clamped so that a far one converts without overflow. */
static time_t exp_of(json_t *claims)
{
    double e = json_number_value(json_object_get(claims, "exp"));
    return e <= 0 ? 0 : e >= 1e11 ? (time_t)1e11 : (time_t)e;
}

/* The position of the issuer the claims name among ours (0 when they name none: an
 * introspection answer without iss is the first issuer's). */
static size_t issuer_index(const struct oidc *o, json_t *claims)
{
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    for (size_t i = 0; iss && i < o->niss; i++)
        if (strcmp(o->iss[i].url, iss) == 0)
            return i;
    return 0;
}

/* "oidc:<value>" (the first issuer's) or "oidc<N>:<value>" (the Nth's, so that two issuers'
 * users of the same sub stay apart): a value that is printable ASCII without '#' and fits, else
 * '#' and a digest of it. */
static void principal_name(const char *value, size_t n, size_t issuer,
                           char out[PRINCIPAL_NAME_MAX + 1])
{
    char prefix[8] = OIDC_PRINCIPAL_PREFIX;
    if (issuer > 0 && issuer < OIDC_ISSUERS_MAX) /* "oidc2:" to "oidc8:" */
        snprintf(prefix, sizeof prefix, "oidc%c:", (char)('1' + issuer));
    bool plain = n > 0 && n <= CLAIM_VALUE_MAX;
    for (size_t i = 0; plain && i < n; i++)
        plain = value[i] > 0x20 && value[i] < 0x7f && value[i] != '#';
    if (plain) {
        snprintf(out, PRINCIPAL_NAME_MAX + 1, "%s%.*s", prefix, (int)n, value);
        return;
    }
    unsigned char d[32];
    crypto_sha256(value, n, d);
    int len = snprintf(out, PRINCIPAL_NAME_MAX + 1, "%s#", prefix);
    hex_encode(d, 20, out + len);
}

/* The principal the claims name, or NULL (the principal claim is missing). */
static struct principal *principal_from(const struct oidc *o, json_t *claims,
                                        const struct claimmap *map, const char *token,
                                        char **client_id)
{
    json_t *who = json_object_get(claims, o->principal_claim);
    char num[32];
    const char *value = json_string_value(who);
    size_t n = value ? json_string_length(who) : 0; /* a NUL inside is digested, not cut */
    if (json_is_integer(who)) {
        n = (size_t)snprintf(num, sizeof num, "%lld", (long long)json_integer_value(who));
        value = num;
    }
    if (value == NULL || n == 0)
        return NULL;
    struct principal *p = xcalloc(1, sizeof *p);
    size_t issuer = issuer_index(o, claims);
    principal_name(value, n, issuer, p->name);
    crypto_sha256(token, strlen(token), p->hash);
    claimmap_apply(map, claims, o->iss[issuer].url, o->scopes_claim, p);
    p->expires = exp_of(claims);
    json_t *azp = json_object_get(claims, "azp");
    if (!json_is_string(azp))
        azp = json_object_get(claims, "client_id");
    /* whoami shows it: a plain string of reasonable length, else nothing. */
    *client_id = claimmap_text_ok(azp, CLIENT_ID_MAX) ? xstrdup(json_string_value(azp)) : NULL;
    return p;
}

static struct issuer *issuer_of(struct oidc *o, json_t *claims)
{
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    for (size_t i = 0; iss && i < o->niss; i++)
        if (strcmp(o->iss[i].url, iss) == 0)
            return &o->iss[i];
    return NULL;
}

/* An access token, not an ID token of the same provider (whose aud may be the very client id
 * Entra ID access tokens carry): typ at+jwt (RFC 9068), JWT or none, and none of the claims
 * only ID tokens have (OpenID Connect Core 2: nonce, at_hash, c_hash). */
static bool access_token(const struct jwt *t)
{
    const char *typ = json_string_value(json_object_get(t->header, "typ"));
    static const char *const ok[] = {"at+jwt", "application/at+jwt", "JWT"};
    bool typ_ok = json_object_get(t->header, "typ") == NULL;
    for (size_t i = 0; typ && i < sizeof ok / sizeof *ok; i++)
        typ_ok |= strcasecmp(typ, ok[i]) == 0;
    return typ_ok && !json_object_get(t->claims, "nonce") &&
           !json_object_get(t->claims, "at_hash") && !json_object_get(t->claims, "c_hash");
}

/* A JWT: verified against its issuer's keys, then its claims. Returns the claims (a new
 * reference) or NULL with *v and *why. */
static json_t *verify_jwt(struct oidc *o, const char *token, size_t len, struct oidc_wait *w,
                          enum oidc_verdict *v, const char **why)
{
    struct jwt t;
    enum jwt_status st = jwt_parse(token, len, &t);
    if (st != JWT_OK) {
        *v = OIDC_INVALID;
        *why = jwt_status_text(st);
        return NULL;
    }
    struct issuer *is = issuer_of(o, t.claims);
    json_t *claims = NULL;
    if (!access_token(&t)) {
        *v = OIDC_INVALID;
        *why = "an ID token, not an access token";
        goto out;
    }
    if (is == NULL) {
        *v = OIDC_INVALID;
        *why = "not issued by a configured issuer";
        goto out;
    }
    struct jwks *keys = oidc_issuer_keys(is, false, w, v);
    if (keys == NULL)
        goto out;
    st = jwt_verify(&t, keys);
    if (st == JWT_UNKNOWN_KID) {
        keys = oidc_issuer_keys(is, true, w, v); /* rotated? one refetch, rate-limited */
        if (keys == NULL)
            goto out;
        st = jwt_verify(&t, keys);
    }
    if (st == JWT_OK) {
        const struct jwt_expect e = {.issuer = is->url,
                                     .audiences = (const char *const *)o->aud,
                                     .naudiences = o->naud,
                                     .now = time(NULL),
                                     .skew_s = o->skew_s};
        st = jwt_check_claims(&t, &e);
    }
    if (st != JWT_OK) {
        *v = st == JWT_EXPIRED ? OIDC_EXPIRED : OIDC_INVALID;
        *why = jwt_status_text(st);
        goto out;
    }
    claims = json_incref(t.claims);
    *v = OIDC_OK;
out:
    jwt_cleanup(&t);
    return claims;
}

/* 64 hexadecimal digits: the shape of this server's own tokens (the owner's, a role's, our
 * authorization server's), one mistyped or revoked, never to be sent to a provider. */
static bool ours(const char *token, size_t len)
{
    return len == 64 && strspn(token, "0123456789abcdefABCDEF") == 64;
}

enum oidc_verdict oidc_check(struct oidc *o, const char *token, const struct claimmap *map,
                             struct principal **out, char **client_id, const char **why,
                             const struct oidc_hooks *h, struct oidc_wait **wait)
{
    oidc_ready_cb *ready = h->ready;
    void *arg = h->ready_arg;
    bool (*admit)(void *) = h->admit;
    void *admit_arg = h->admit_arg;
    unsigned char d[32];
    char hash[65];
    size_t len = strlen(token);
    *out = NULL;
    *client_id = NULL;
    *wait = NULL;
    *why = NULL;
    if (len > JWT_MAX_LEN) {
        *why = "the token is too long";
        return OIDC_INVALID;
    }
    crypto_sha256(token, len, d);
    hex_encode(d, 32, hash);
    time_t now = time(NULL);
    json_t *claims = NULL;
    enum oidc_verdict v = OIDC_OK;
    struct oidc_cached *c = strmap_get(o->cache, hash);
    if (c && c->until > now) {
        if (c->claims == NULL) {
            *why = c->unavailable ? "the introspection endpoint did not answer"
                                  : "the provider says the token is not active";
            return c->unavailable ? OIDC_UNAVAILABLE : OIDC_INVALID;
        }
        claims = json_incref(c->claims);
    } else {
        if (c && c->until <= now) {
            strmap_del(o->cache, hash);
            drop_cached(hash, c, NULL);
        }
        bool jwt = jwt_looks_like(token, len);
        if (!jwt && ours(token, len)) {
            *why = "not a token of an identity provider";
            return OIDC_INVALID;
        }
        if (admit && !admit(admit_arg)) {
            *why = "too many new tokens from this address";
            return OIDC_LIMITED;
        }
        struct oidc_wait *w = xcalloc(1, sizeof *w);
        w->ready = ready;
        w->arg = arg;
        if (jwt) {
            claims = verify_jwt(o, token, len, w, &v, why);
            if (claims)
                oidc_remember(o, hash, json_incref(claims), false, exp_of(claims));
        } else {
            claims = oidc_introspect(o, token, hash, w, &v, why);
        }
        if (v == OIDC_WAIT)
            *wait = w;
        else
            free(w);
        if (claims == NULL)
            return v;
    }
    *out = principal_from(o, claims, map, token, client_id);
    json_decref(claims);
    if (*out == NULL) {
        *why = "the token has no principal claim";
        return OIDC_INVALID;
    }
    return OIDC_OK;
}

void oidc_wait_cancel(struct oidc *o, struct oidc_wait *w)
{
    if (w == NULL)
        return;
    list_unlink(&w->link);
    o->nwaiting--;
    if (w->count)
        --*w->count;
    free(w);
}
