/* authn.c — bearer tokens to principals, and the challenges of a refusal (authn.h). */
#include "authn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "crypto.h"
#include "hdr.h"
#include "hex.h"
#include "httpd.h"
#include "httperr.h"
#include "mem.h"
#include "oautherr.h"
#include "oauthpg.h"
#include "oauthtokens.h"
#include "oidc.h"

struct authn {
    struct authn_opts o;
    struct oidc *oidc;     /* external providers (authn_set_oidc), or NULL */
    struct oauthpg *store; /* the tokens of every replica (authn_set_store), or NULL */
    struct principals *who;
};

struct authn *authn_new(const struct authn_opts *o, struct principals *who)
{
    struct authn *a = xcalloc(1, sizeof *a);
    a->o = *o;
    a->who = who;
    return a;
}

void authn_set_principals(struct authn *a, struct principals *who)
{
    principals_unref(a->who);
    a->who = who;
}

void authn_set_oidc(struct authn *a, struct oidc *o)
{
    a->oidc = o;
}

void authn_set_store(struct authn *a, struct oauthpg *p)
{
    a->store = p;
}

void authn_free(struct authn *a)
{
    if (a == NULL)
        return;
    principals_unref(a->who);
    free(a);
}

void authn_who_cleanup(struct authn_who *w)
{
    if (w->wait)
        oidc_wait_cancel(w->oidc, w->wait);
    oauthpg_wait_cancel(w->pgwait);
    principals_unref(w->set);
    principal_free(w->grant);
    free(w->client_id);
    memset(w, 0, sizeof *w);
}

/* RFC 6750; with OAUTH_ISSUER_URL also resource_metadata, where clients find our protected
 * resource metadata (RFC 9728; the MCP authorization spec's discovery). */
void authn_challenge(const struct authn *a, struct hreq *r, const char *error, const char *scope,
                     const char *description)
{
    struct buf v;
    buf_init(&v, 0);
    buf_printf(&v, "Bearer realm=\"hermes-mcp\"");
    if (error)
        buf_printf(&v, ", error=\"%s\"", error);
    if (scope)
        buf_printf(&v, ", scope=\"%s\"", scope);
    if (a->o.metadata_url)
        buf_printf(&v, ", resource_metadata=\"%s\"", a->o.metadata_url);
    if (description)
        buf_printf(&v, ", error_description=\"%s\"", description);
    hreq_add_header(r, "WWW-Authenticate", v.data);
    buf_cleanup(&v);
}

static enum authn_result store_lookup(const struct authn *a, struct hreq *r, const char *token,
                                      struct authn_who *w);

/* An access token from the OAuth token store: known, live, and issued for this resource (RFC
 * 8707 audience: a token meant for another server is refused, not passed on). Its principal is
 * "oauth:<client id>" (shortened with a digest when too long) with the scopes granted. With a
 * store, a token this replica does not know yet is looked up there (AUTHN_WAIT). */
static enum authn_result oauth_authenticate(const struct authn *a, struct hreq *r,
                                            const char *token, struct authn_who *w)
{
    if (a->o.tokens == NULL)
        return AUTHN_BAD_TOKEN;
    const struct token_grant *g = tokenstore_find(a->o.tokens, token, time(NULL));
    if (g == NULL && a->store)
        return store_lookup(a, r, token, w);
    if (g == NULL || g->kind != TOKEN_ACCESS || strcmp(g->resource, a->o.resource) != 0)
        return AUTHN_BAD_TOKEN;
    char name[PRINCIPAL_NAME_MAX + 1];
    principal_oauth_name(g->client_id, name);
    w->grant = principal_for_grant(name, g->scope, token);
    w->grant->expires = g->expires; /* told by whoami; the store already refused expired ones */
    w->who = w->grant;
    free(w->client_id);
    w->client_id = xstrdup(g->client_id);
    /* Tasks and sealed state belong to one authorization (its refreshed tokens included), not
     * to every authorization of the same client: the family names it, by a digest. */
    if (g->family) {
        static const char label[] = "hermes-mcp family v1";
        unsigned char d[32];
        crypto_hmac_sha256(label, sizeof label - 1, g->family, strlen(g->family), d);
        int len = snprintf(w->caller, sizeof w->caller, "%s/", name);
        hex_encode(d, 8, w->caller + len);
    }
    return AUTHN_OK;
}

/* The provider's keys are in (or will not come): the held request is judged again. */
static void on_ready(void *arg)
{
    struct authn_who *w = arg;
    struct hreq *r = w->held;
    w->wait = NULL;
    w->held = NULL;
    hreq_on_abort(r, NULL, NULL);
    hreq_release(r);
}

static void on_held_abort(struct hreq *r, void *arg)
{
    struct authn_who *w = arg;
    (void)r;
    oidc_wait_cancel(w->oidc, w->wait);
    w->wait = NULL;
    w->held = NULL;
}

struct admission {
    const struct authn *a;
    struct hreq *r;
};

/* The store's answer is in (the cache holds the token if it exists): judged again. */
static void on_store_ready(void *arg)
{
    struct authn_who *w = arg;
    struct hreq *r = w->held;
    w->pgwait = NULL;
    w->held = NULL;
    hreq_on_abort(r, NULL, NULL);
    hreq_release(r);
}

static void on_store_abort(struct hreq *r, void *arg)
{
    struct authn_who *w = arg;
    (void)r;
    oauthpg_wait_cancel(w->pgwait);
    w->pgwait = NULL;
    w->held = NULL;
}

static enum authn_result store_lookup(const struct authn *a, struct hreq *r, const char *token,
                                      struct authn_who *w)
{
    /* A lookup costs the database a query: within the address's unauthenticated rate. */
    if (a->o.admit && !a->o.admit(r, a->o.admit_arg))
        return AUTHN_LIMITED;
    switch (oauthpg_token_fetch(a->store, token, on_store_ready, w, &w->pgwait)) {
    case OAUTHPG_WAIT:
        w->held = r;
        hreq_hold(r);
        hreq_on_abort(r, on_store_abort, w);
        return AUTHN_WAIT;
    case OAUTHPG_DOWN:
        return AUTHN_UNAVAILABLE;
    case OAUTHPG_ABSENT:
        break;
    }
    return AUTHN_BAD_TOKEN;
}

static bool admit(void *arg)
{
    const struct admission *ad = arg;
    return ad->a->o.admit == NULL || ad->a->o.admit(ad->r, ad->a->o.admit_arg);
}

/* A token of an external identity provider (oidc.h). */
static enum authn_result oidc_authenticate(const struct authn *a, struct hreq *r, const char *token,
                                           struct authn_who *w)
{
    static const enum authn_result by_verdict[] = {
        [OIDC_OK] = AUTHN_OK,
        [OIDC_WAIT] = AUTHN_WAIT,
        [OIDC_INVALID] = AUTHN_BAD_TOKEN,
        [OIDC_EXPIRED] = AUTHN_EXPIRED,
        [OIDC_UNAVAILABLE] = AUTHN_UNAVAILABLE,
        [OIDC_LIMITED] = AUTHN_LIMITED,
    };
    struct principal *p;
    char *client_id;
    struct admission ad = {a, r};
    const struct oidc_hooks h = {
        .ready = on_ready, .ready_arg = w, .admit = admit, .admit_arg = &ad};
    enum oidc_verdict v = oidc_check(a->oidc, token, a->who ? a->who->claims : NULL, &p, &client_id,
                                     &w->why, &h, &w->wait);
    if (v == OIDC_WAIT) {
        w->oidc = a->oidc;
        w->held = r;
        hreq_hold(r);
        hreq_on_abort(r, on_held_abort, w);
    } else if (v == OIDC_OK) {
        w->grant = p;
        w->who = p;
        w->client_id = client_id;
    }
    return by_verdict[v];
}

enum authn_result authn_request(const struct authn *a, struct hreq *r, struct authn_who *w)
{
    authn_who_cleanup(w); /* asked again after a wait: start afresh */
    if (!a->o.required)
        return AUTHN_OK;
    const char *h = hdr_bearer(hreq_header(r, "Authorization"));
    if (h == NULL)
        return AUTHN_NO_TOKEN;
    const struct principal *p = principals_find(a->who, h);
    if (p == NULL && a->oidc) {
        enum authn_result res = oauth_authenticate(a, r, h, w);
        return res == AUTHN_BAD_TOKEN ? oidc_authenticate(a, r, h, w) : res;
    }
    if (p == NULL)
        return oauth_authenticate(a, r, h, w);
    if (principal_expired(p, time(NULL)))
        return AUTHN_EXPIRED;
    w->set = principals_ref(a->who);
    w->who = p;
    return AUTHN_OK;
}

const char *authn_caller(const struct authn_who *w)
{
    if (w->caller[0])
        return w->caller;
    return w->who ? w->who->name : NULL;
}

json_t *authn_scopes_supported(void)
{
    json_t *list = json_array();
    for (size_t i = 0; scope_at(i); i++)
        if (scope_at(i)->prefix == NULL)
            json_array_append_new(list, json_string(scope_at(i)->name));
    return list;
}

void authn_deny(const struct authn *a, struct hreq *r, enum authn_result why, const char *detail)
{
    /* With OAuth, the scopes to ask for: what a client authorizing from this 401 needs. */
    const char *scope = a->o.metadata_url ? AUTHN_DEFAULT_SCOPES : NULL;
    if (why == AUTHN_UNAVAILABLE) {
        hreq_add_header(r, "Retry-After", "5");
        httperr_reply(r, HTTPERR_AUTH_UNAVAILABLE);
        return;
    }
    if (why == AUTHN_EXPIRED) {
        authn_challenge(a, r, oauth_err_name(OAUTH_INVALID_TOKEN), scope, "the token has expired");
        httperr_reply(r, HTTPERR_TOKEN_EXPIRED);
        return;
    }
    authn_challenge(a, r, why == AUTHN_BAD_TOKEN ? oauth_err_name(OAUTH_INVALID_TOKEN) : NULL,
                    scope, why == AUTHN_BAD_TOKEN ? detail : NULL);
    httperr_reply(r, HTTPERR_NO_TOKEN);
}

bool authn_refuse_query_token(const struct authn *a, struct hreq *r)
{
    if ((a->o.issuer == NULL && a->oidc == NULL) || hreq_query(r, "access_token") == NULL)
        return false;
    authn_challenge(a, r, oauth_err_name(OAUTH_INVALID_REQUEST), NULL,
                    "send the token in the Authorization header, never in the URL");
    httperr_reply(r, HTTPERR_QUERY_TOKEN);
    return true;
}
