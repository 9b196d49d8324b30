/* configstore.c — STORE_URL and STORE_PASSWORD: where replicas share their state. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hex.h"
#include "mcp.h"
#include "mem.h"

#define STORE_URL_MAX 1024
#define STORE_PASSWORD_MAX 1024

/* A password inside the URL would travel into logs and error text with it: it has its own key
 * (or libpq's password file). "scheme://user:pass@" holds one, and so does a password (or
 * sslpassword) parameter, which libpq reads percent-decoded and in any case. */
static bool has_password(const char *url)
{
    const char *auth = strstr(url, "://") + 3;
    size_t n = strcspn(auth, "/?");
    const char *at = memchr(auth, '@', n);
    if (at && memchr(auth, ':', (size_t)(at - auth)))
        return true;
    char *plain = xstrdup(url), *o = plain;
    for (const char *p = url; *p; p++) {
        int hi, lo;
        if (*p == '%' && (hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0) {
            *o++ = (char)tolower(hi << 4 | lo);
            p += 2;
        } else {
            *o++ = (char)tolower((unsigned char)*p);
        }
    }
    *o = '\0';
    bool found = strstr(plain, "password=") != NULL;
    free(plain);
    return found;
}

bool configstore_url(struct config *c, json_t *env, const char *v, const char *path, char *err,
                     size_t errlen)
{
    const char *password = config_env_get(env, "STORE_PASSWORD");
    (void)path;
    if (v == NULL || *v == '\0') {
        if (password && *password) {
            snprintf(err, errlen, "STORE_PASSWORD is for STORE_URL; set it too, or remove it");
            return false;
        }
        return true;
    }
    if ((strncmp(v, "postgresql://", 13) != 0 && strncmp(v, "postgres://", 11) != 0) ||
        strlen(v) > STORE_URL_MAX || strpbrk(v, " \t\r\n")) {
        snprintf(err, errlen,
                 "STORE_URL must be a postgresql://USER@HOST[:PORT]/DATABASE URL (at most %d "
                 "characters)",
                 STORE_URL_MAX);
        return false;
    }
    if (has_password(v)) {
        snprintf(err, errlen,
                 "STORE_URL must not hold a password: put it in STORE_PASSWORD (this file, mode "
                 "600) or in libpq's password file (~/.pgpass, PGPASSFILE)");
        return false;
    }
    if (password && strlen(password) > STORE_PASSWORD_MAX) {
        snprintf(err, errlen, "STORE_PASSWORD must be at most %d characters", STORE_PASSWORD_MAX);
        return false;
    }
    c->store_url = xstrdup(v);
    c->store_password = password && *password ? xstrdup(password) : NULL;
    return true;
}

/* The prefix of this replica's session ids, which the proxy's map matches to route a session
 * home: a-z, 0-9 and '-' only, so it needs no escaping in a regular expression or a header. */
bool configstore_replica_name(struct config *c, json_t *env, const char *v, const char *path,
                              char *err, size_t errlen)
{
    (void)env, (void)path;
    if (v == NULL || *v == '\0')
        return true;
    size_t n = strlen(v);
    if (n > MCP_REPLICA_NAME_MAX || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != n) {
        snprintf(err, errlen, "REPLICA_NAME must be 1-%d of a-z, 0-9 and '-'",
                 MCP_REPLICA_NAME_MAX);
        return false;
    }
    c->replica_name = xstrdup(v);
    return true;
}
