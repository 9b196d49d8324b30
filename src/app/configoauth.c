/* configoauth.c — the OAUTH_* rows' hooks of the table (configtab.c): the issuer, a static
 * client, the redirect schemes of connector apps, the CIMD CA file and the refresh token's life. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "crypto.h"
#include "mem.h"

#define DAY (24ul * 3600)

bool configoauth_issuer(struct config *c, json_t *env, const char *issuer, const char *path,
                        char *err, size_t errlen)
{
    (void)env;
    if (issuer == NULL || *issuer == '\0')
        return true;
    if (!config_issuer_ok(issuer)) {
        snprintf(err, errlen,
                 "OAUTH_ISSUER_URL must be the server's public origin, https://HOST[:PORT] "
                 "(http only on loopback), without a path");
        return false;
    }
    size_t len = strlen(issuer);
    c->oauth_issuer = xstrndup(issuer, issuer[len - 1] == '/' ? len - 1 : len);
    const char *slash = path ? strrchr(path, '/') : NULL;
    c->oauth_store = slash ? xasprintf("%.*s/oauth-tokens.json", (int)(slash - path), path)
                           : xstrdup("oauth-tokens.json");
    return true;
}

/* A pre-registered confidential client: both keys or neither; the id is unreserved URL
 * characters (1-64), the secret at least 32 characters and kept only as its SHA-256, which
 * /token compares in constant time. */
bool configoauth_static_client(struct config *c, json_t *env, const char *id, const char *path,
                               char *err, size_t errlen)
{
    static const char unreserved[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    const char *secret = config_env_get(env, "OAUTH_CLIENT_SECRET");
    bool has_id = id && *id, has_secret = secret && *secret;
    (void)path;
    if (!has_id && !has_secret)
        return true;
    if (!has_id || !has_secret) {
        snprintf(err, errlen,
                 "OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET go together (a static "
                 "client); set both, or neither (run: hermes-mcp oauth mint-client)");
        return false;
    }
    size_t n = strlen(id);
    if (n > 64 || strspn(id, unreserved) != n) {
        snprintf(err, errlen, "OAUTH_CLIENT_ID must be 1-64 letters, digits, '-', '.', '_' or '~'");
        return false;
    }
    if (strlen(secret) < 32) {
        snprintf(err, errlen,
                 "OAUTH_CLIENT_SECRET must have at least 32 characters (run: "
                 "hermes-mcp oauth mint-client)");
        return false;
    }
    c->oauth_client_id = xstrdup(id);
    crypto_sha256(secret, strlen(secret), c->oauth_client_secret_hash);
    return true;
}

bool configoauth_same_static_client(const struct config *a, const struct config *b)
{
    bool same_id = (a->oauth_client_id == NULL && b->oauth_client_id == NULL) ||
                   (a->oauth_client_id && b->oauth_client_id &&
                    strcmp(a->oauth_client_id, b->oauth_client_id) == 0);
    return same_id && memcmp(a->oauth_client_secret_hash, b->oauth_client_secret_hash, 32) == 0;
}

/* URI schemes (RFC 3986 syntax, lower case) of connector apps. Never javascript:, data:,
 * vbscript: or file: (an open redirect into script or local files); http and https need no
 * listing and follow their own rules (http on loopback only). */
bool configoauth_redirect_schemes(struct config *c, json_t *env, const char *list, const char *path,
                                  char *err, size_t errlen)
{
    static const char *const never[] = {"javascript", "data",  "vbscript", "file",
                                        "http",       "https", "blob",     "about"};
    (void)env, (void)path;
    if (list == NULL) {
        c->oauth_redirect_schemes = xstrdup("claude,claudeai,cursor");
        return true;
    }
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        bool ok = n > 0 && n <= 32 && p[0] >= 'a' && p[0] <= 'z' &&
                  strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789+.-") >= n;
        for (size_t i = 0; ok && i < sizeof never / sizeof *never; i++)
            ok = !(strlen(never[i]) == n && strncmp(p, never[i], n) == 0);
        if (!ok) {
            snprintf(err, errlen,
                     "OAUTH_ALLOWED_REDIRECT_SCHEMES: '%.*s' is not a scheme a "
                     "redirect may use (lower-case app schemes, comma-separated; "
                     "never javascript, data, file; https is always allowed)",
                     (int)(n > 32 ? 32 : n), p);
            return false;
        }
        p += n;
        p += *p == ',';
    }
    c->oauth_redirect_schemes = xstrdup(list);
    return true;
}

bool configoauth_cimd_ca_file(struct config *c, json_t *env, const char *ca, const char *path,
                              char *err, size_t errlen)
{
    (void)env, (void)path;
    c->oauth_cimd_ca_file = ca && *ca ? xstrdup(ca) : NULL;
    if (c->oauth_cimd_ca_file && access(ca, R_OK) != 0) {
        /* Said now, not as "certificate not trusted" at some client's first /authorize. */
        snprintf(err, errlen, "OAUTH_CIMD_CA_FILE %s cannot be read: %s", ca, strerror(errno));
        return false;
    }
    return true;
}

/* A refresh token outlives the access token it renews. */
bool configoauth_refresh_ttl(struct config *c, json_t *env, const char *v, const char *path,
                             char *err, size_t errlen)
{
    (void)env, (void)path;
    c->oauth_refresh_ttl_s = 30 * DAY;
    if (!config_parse_uint(v, 366 * DAY, &c->oauth_refresh_ttl_s) || c->oauth_refresh_ttl_s < 60 ||
        c->oauth_refresh_ttl_s < c->oauth_access_ttl_s) {
        snprintf(err, errlen,
                 "OAUTH_ACCESS_TTL_S must be 1-86400 seconds and "
                 "OAUTH_REFRESH_TTL_S 60-31622400, not less than the access "
                 "token's");
        return false;
    }
    return true;
}
