/* configoidc.c — the OIDC_* keys of the table (configtab.c): external identity providers whose
 * access tokens the server accepts (auth/oidc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "oidc.h"
#include "weburl.h"

/* An issuer or endpoint URL: https, or http to a loopback host (tests, a provider beside us);
 * a path is allowed (issuers have them), a query, a fragment or credentials are not. */
static bool provider_url_ok(const char *url)
{
    return weburl_ok(url, 0);
}

/* A list of 1..max words separated by spaces or commas, each checked by ok, kept
 * space-separated in *out. */
static bool word_list(const char *v, size_t max, bool (*ok)(const char *), char **out)
{
    size_t count = 0;
    char *copy = xstrdup(v), *save = NULL;
    char *kept = xcalloc(1, strlen(v) + 1);
    for (char *w = strtok_r(copy, ", \t", &save); w; w = strtok_r(NULL, ", \t", &save)) {
        if (++count > max || (ok && !ok(w))) {
            free(copy);
            free(kept);
            return false;
        }
        if (count > 1)
            strcat(kept, " ");
        strcat(kept, w);
    }
    free(copy);
    if (count == 0) {
        free(kept);
        return false;
    }
    *out = kept;
    return true;
}

bool configoidc_issuers(struct config *c, json_t *env, const char *v, const char *path, char *err,
                        size_t errlen)
{
    (void)path;
    if (v == NULL || *v == '\0')
        return true;
    if (!word_list(v, OIDC_ISSUERS_MAX, provider_url_ok, &c->oidc_issuers)) {
        snprintf(err, errlen,
                 "OIDC_ISSUER_URL must list 1-%d issuers (https://HOST[:PORT][/PATH], http only "
                 "on loopback), separated by spaces or commas",
                 OIDC_ISSUERS_MAX);
        return false;
    }
    const char *aud = config_env_get(env, "OIDC_AUDIENCE");
    if (aud == NULL || !word_list(aud, OIDC_AUDIENCES_MAX, NULL, &c->oidc_audience)) {
        snprintf(err, errlen,
                 "OIDC_ISSUER_URL needs OIDC_AUDIENCE: the audience (1-%d, separated by spaces or "
                 "commas) a provider's token must name to be accepted here, e.g. this server's "
                 "https://HOST/mcp, or for Entra ID the application's client id",
                 OIDC_AUDIENCES_MAX);
        return false;
    }
    return true;
}

static bool claim_name_ok(const char *v)
{
    size_t n = strlen(v);
    return n > 0 && n <= 64 &&
           strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_-.:/") == n;
}

bool configoidc_claims(struct config *c, json_t *env, const char *v, const char *path, char *err,
                       size_t errlen)
{
    const char *scopes = config_env_get(env, "OIDC_SCOPES_CLAIM");
    (void)path;
    if ((v && *v && !claim_name_ok(v)) ||
        (scopes && *scopes && !word_list(scopes, 4, claim_name_ok, &c->oidc_scopes_claim))) {
        snprintf(err, errlen,
                 "OIDC_PRINCIPAL_CLAIM must be a claim name and OIDC_SCOPES_CLAIM 1-4 of them "
                 "(1-64 letters, digits, '_', '-', '.', ':' or '/' each)");
        return false;
    }
    c->oidc_principal_claim = xstrdup(v && *v ? v : "sub");
    if (c->oidc_scopes_claim == NULL)
        c->oidc_scopes_claim = xstrdup("scope");
    return true;
}

bool configoidc_introspection(struct config *c, json_t *env, const char *v, const char *path,
                              char *err, size_t errlen)
{
    const char *id = config_env_get(env, "OIDC_CLIENT_ID");
    const char *secret = config_env_get(env, "OIDC_CLIENT_SECRET");
    (void)path;
    if (v == NULL || *v == '\0') {
        if ((id && *id) || (secret && *secret)) {
            snprintf(err, errlen,
                     "OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are for OIDC_INTROSPECTION_URL; set "
                     "it too, or remove them");
            return false;
        }
        return true;
    }
    if (!provider_url_ok(v) || !c->oidc_issuers) {
        snprintf(err, errlen,
                 "OIDC_INTROSPECTION_URL must be the provider's introspection endpoint (https, "
                 "http only on loopback), with OIDC_ISSUER_URL set");
        return false;
    }
    if (!id || !*id || !secret || !*secret || strlen(id) > 256 || strlen(secret) > 1024) {
        snprintf(err, errlen,
                 "OIDC_INTROSPECTION_URL needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET: the client "
                 "this server introspects tokens as (at most 256 and 1024 characters)");
        return false;
    }
    c->oidc_introspection_url = xstrdup(v);
    c->oidc_client_id = xstrdup(id);
    c->oidc_client_secret = xstrdup(secret);
    return true;
}
