/* identity.c — the external identity providers (OIDC_ISSUER_URL) set up for the server, and
 * where clients find the protected resource metadata that names them. */
#include <stdlib.h>
#include <string.h>

#include "app_internal.h"
#include "authn.h"
#include "config.h"
#include "httpc.h"
#include "mem.h"
#include "oidc.h"

#define OIDC_FETCHES_PER_ORIGIN 4
#define CLOCK_SKEW_S 60

/* The words of a space-separated list, pointing into text (changed in place). */
static size_t split(char *text, const char **out, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *w = strtok_r(text, " ", &save); w && n < max; w = strtok_r(NULL, " ", &save))
        out[n++] = w;
    return n;
}

/* The resource the protected resource metadata names: our /mcp at OAUTH_ISSUER_URL, else the
 * first OIDC_AUDIENCE that is a URL; NULL when there is none (Entra ID with a client id alone:
 * clients are then configured by hand). */
char *app_resource_url(const struct config *cfg)
{
    if (cfg->oauth_issuer)
        return xasprintf("%s/mcp", cfg->oauth_issuer);
    if (cfg->oidc_audience == NULL)
        return NULL;
    char *copy = xstrdup(cfg->oidc_audience), *found = NULL;
    const char *aud[OIDC_AUDIENCES_MAX];
    size_t n = split(copy, aud, OIDC_AUDIENCES_MAX);
    for (size_t i = 0; i < n && !found; i++)
        if (strncmp(aud[i], "https://", 8) == 0 || strncmp(aud[i], "http://", 7) == 0)
            found = xstrdup(aud[i]);
    free(copy);
    return found;
}

/* RFC 9728 section 3: the well-known segment between the resource's host and its path. */
char *app_metadata_url(const char *resource)
{
    if (resource == NULL)
        return NULL;
    const char *host = strstr(resource, "://") + 3;
    const char *path = host + strcspn(host, "/");
    return xasprintf("%.*s/.well-known/oauth-protected-resource%s", (int)(path - resource),
                     resource, strcmp(path, "/") ? path : "");
}

/* Tests only: how often an unknown kid may refetch a key set (0: OIDC_REFETCH_MS). */
static unsigned test_refetch_ms(void)
{
    const char *ms = getenv("HERMES_TEST_OIDC_REFETCH_MS");
    unsigned long v = ms ? strtoul(ms, NULL, 10) : 0;
    return v > 600000 ? 600000 : (unsigned)v;
}

void app_start_oidc(struct app *a)
{
    const struct config *cfg = a->cfg;
    if (cfg->oidc_issuers == NULL)
        return;
    char *issuers = xstrdup(cfg->oidc_issuers), *audiences = xstrdup(cfg->oidc_audience);
    const char *iss[OIDC_ISSUERS_MAX], *aud[OIDC_AUDIENCES_MAX];
    struct oidc_opts oo = {.issuers = iss,
                           .nissuers = split(issuers, iss, OIDC_ISSUERS_MAX),
                           .audiences = aud,
                           .naudiences = split(audiences, aud, OIDC_AUDIENCES_MAX),
                           .principal_claim = cfg->oidc_principal_claim,
                           .scopes_claim = cfg->oidc_scopes_claim,
                           .introspection_url = cfg->oidc_introspection_url,
                           .client_id = cfg->oidc_client_id,
                           .client_secret = cfg->oidc_client_secret,
                           .skew_s = CLOCK_SKEW_S,
                           .refetch_ms = test_refetch_ms()};
    a->oidc_http = httpc_new(a->loop, OIDC_FETCHES_PER_ORIGIN);
    a->oidc = oidc_new(a->loop, a->oidc_http, &oo);
    authn_set_oidc(a->authn, a->oidc);
    free(issuers);
    free(audiences);
}

void app_stop_oidc(struct app *a)
{
    authn_set_oidc(a->authn, NULL);
    oidc_free(a->oidc);
    httpc_free(a->oidc_http);
    a->oidc = NULL;
    a->oidc_http = NULL;
}
