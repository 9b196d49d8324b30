/* doctor_oidc.c — `hermes-mcp doctor` on each identity provider of OIDC_ISSUER_URL: its
 * metadata found as serve finds it, and its key set usable (auth/oidc.h, auth/jwt.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "doctor_internal.h"
#include "jwt.h"
#include "mem.h"
#include "oidc.h"

/* The issuer's metadata document (a new reference), by discovery, else RFC 8414; NULL with a
 * line already printed. */
static json_t *metadata(struct doctor *d, const char *issuer)
{
    char why[200];
    struct doctor_resp r = {0};
    for (int rfc8414 = 0; rfc8414 < 2; rfc8414++) {
        char *url = oidc_discovery_url(issuer, rfc8414);
        doctor_probe_get(url, NULL, d->timeout_ms, &r);
        free(url);
        if (!r.answered || r.status != 404)
            break;
        buf_cleanup(&r.body);
    }
    json_t *doc = NULL;
    if (!r.answered) {
        doctor_net_reason(&r, d->timeout_ms, why, sizeof why);
        doctor_check(d, FAIL, "identity provider %s: its metadata: %s", issuer, why);
    } else if (r.status != 200) {
        doctor_check(d, FAIL,
                     "identity provider %s: its metadata answered HTTP %ld: is OIDC_ISSUER_URL "
                     "the issuer exactly as its tokens' iss says?",
                     issuer, r.status);
    } else {
        doc = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
        const char *iss = json_string_value(json_object_get(doc, "issuer"));
        if (iss == NULL || strcmp(iss, issuer) != 0) {
            doctor_check(d, FAIL,
                         "identity provider %s: its metadata names the issuer %.200s; set "
                         "OIDC_ISSUER_URL to exactly that",
                         issuer, iss ? iss : "(none)");
            json_decref(doc);
            doc = NULL;
        }
    }
    buf_cleanup(&r.body);
    return doc;
}

static void check_issuer(struct doctor *d, const char *issuer)
{
    char why[200];
    json_t *doc = metadata(d, issuer);
    if (doc == NULL)
        return;
    const char *jwks_uri = json_string_value(json_object_get(doc, "jwks_uri"));
    if (jwks_uri == NULL) {
        doctor_check(d, FAIL, "identity provider %s: its metadata has no jwks_uri", issuer);
        json_decref(doc);
        return;
    }
    struct doctor_resp r;
    doctor_probe_get(jwks_uri, NULL, d->timeout_ms, &r);
    if (!r.answered || r.status != 200) {
        if (!r.answered)
            doctor_net_reason(&r, d->timeout_ms, why, sizeof why);
        else
            snprintf(why, sizeof why, "HTTP %ld", r.status);
        doctor_check(d, FAIL, "identity provider %s: its key set %s: %s", issuer, jwks_uri, why);
    } else {
        struct jwks *keys = jwks_parse(r.body.data ? r.body.data : "", r.body.len, why, sizeof why);
        if (keys == NULL)
            doctor_check(d, FAIL, "identity provider %s: its key set: %s", issuer, why);
        else if (jwks_count(keys) == 0)
            doctor_check(d, FAIL,
                         "identity provider %s: no key of its key set can verify RS256, PS256, "
                         "ES256 or EdDSA tokens",
                         issuer);
        else
            doctor_check(d, OK, "identity provider %s: %zu usable signing key%s", issuer,
                         jwks_count(keys), jwks_count(keys) == 1 ? "" : "s");
        jwks_unref(keys);
    }
    buf_cleanup(&r.body);
    json_decref(doc);
}

void doctor_check_oidc(struct doctor *d, const struct config *cfg)
{
    if (cfg->oidc_issuers == NULL)
        return;
    if (!d->probe) {
        doctor_check(d, OK, "identity providers: %s (not fetched: --no-probe)", cfg->oidc_issuers);
        return;
    }
    char *list = xstrdup(cfg->oidc_issuers), *save = NULL;
    for (char *is = strtok_r(list, " ", &save); is; is = strtok_r(NULL, " ", &save))
        check_issuer(d, is);
    free(list);
}
