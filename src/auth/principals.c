/* principals.c — the set of principals the server checks bearer tokens against: the owner from
 * MCP_AUTH_TOKEN plus the tokens file, and the checks a request's principal goes through
 * (expiry, scope, agent). Token lookup hashes the presented token once and compares it with
 * every principal's hash in constant time, so neither the token's length nor which entry
 * matched shows in the time taken. */
#include "principal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "claimmap.h"
#include "crypto.h"
#include "hex.h"
#include "mem.h"
#include "readfile.h"
#include "utf8.h"

#define TOKENS_FILE_MAX (1024 * 1024)

static struct principals *read_tokens_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t len = 0;
    char why[400];

    char *text = readfile_capped(path, path, TOKENS_FILE_MAX, &st, &len, why, sizeof why);
    if (text == NULL) {
        snprintf(err, errlen, "TOKENS_FILE: %s", why);
        return NULL;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen,
                 "TOKENS_FILE %s is readable or writable by others (mode %03o); run: chmod 600 %s",
                 path, (unsigned)(st.st_mode & 0777), path);
        free(text);
        return NULL;
    }
    struct principals *s = tokens_parse(text, len, why, sizeof why);
    free(text);
    if (s == NULL)
        snprintf(err, errlen, "TOKENS_FILE %s: %s", path, why);
    return s;
}

struct principals *principals_load(const unsigned char *owner_hash, const char *tokens_file,
                                   char *err, size_t errlen)
{
    struct principals *file = NULL;

    if (tokens_file && (file = read_tokens_file(tokens_file, err, errlen)) == NULL)
        return NULL;
    struct principals *s = xcalloc(1, sizeof *s);
    size_t nfile = file ? file->n : 0;
    s->refs = 1;
    s->v = xcalloc(nfile + 1, sizeof *s->v);
    if (owner_hash) {
        struct principal *o = &s->v[s->n++];
        snprintf(o->name, sizeof o->name, "%s", PRINCIPAL_OWNER);
        memcpy(o->hash, owner_hash, sizeof o->hash);
        o->all = true;
    }
    for (size_t i = 0; i < nfile; i++) {
        if (owner_hash && memcmp(file->v[i].hash, owner_hash, 32) == 0) {
            snprintf(err, errlen, "TOKENS_FILE %s: principal '%s' has MCP_AUTH_TOKEN's token",
                     tokens_file, file->v[i].name);
            principals_unref(file);
            principals_unref(s);
            return NULL;
        }
        s->v[s->n++] = file->v[i]; /* moved: the file's set lets go of its lists below */
        memset(&file->v[i], 0, sizeof file->v[i]);
    }
    if (file) { /* the oidc: section moves too */
        s->claims = file->claims;
        file->claims = NULL;
    }
    principals_unref(file);
    return s;
}

const struct principal *principals_find(const struct principals *s, const char *token)
{
    unsigned char digest[32];
    const struct principal *found = NULL;

    if (s == NULL || token == NULL)
        return NULL;
    /* Hash first so the comparison takes the same time whatever the length. */
    crypto_sha256(token, strlen(token), digest);
    for (size_t i = 0; i < s->n; i++) {
        bool match = crypto_equal(digest, s->v[i].hash, sizeof digest);
        /* No early exit: every entry is compared whichever matches. */
        if (match && found == NULL)
            found = &s->v[i];
    }
    return found;
}

bool principals_check_issuers(const struct principals *s, const char *issuers, char *err,
                              size_t errlen)
{
    const char *bad = s ? claimmap_unknown_issuer(s->claims, issuers) : NULL;
    if (bad) {
        char shown[300];
        utf8_shown(shown, sizeof shown, bad);
        snprintf(err, errlen,
                 "TOKENS_FILE: an oidc rule names the issuer %s, which OIDC_ISSUER_URL does not "
                 "list (this server's issuers are read at start): the rule would never apply",
                 shown);
    }
    return bad == NULL;
}

bool principal_expired(const struct principal *p, time_t now)
{
    return p->expires != 0 && now >= p->expires;
}

bool principal_has_scope(const struct principal *p, const char *scope)
{
    if (p->all)
        return true;
    if (scope == NULL)
        return false;
    for (size_t i = 0; i < p->nscopes; i++)
        if (strcmp(p->scopes[i], scope) == 0)
            return true;
    return false;
}

bool principal_agent_allowed(const struct principal *p, const char *agent)
{
    if (p->all || p->agents == NULL)
        return true;
    if (agent == NULL)
        return false;
    for (size_t i = 0; i < p->nagents; i++)
        if (strcmp(p->agents[i], agent) == 0)
            return true;
    return false;
}

void principal_oauth_name(const char *client_id, char out[PRINCIPAL_NAME_MAX + 1])
{
    enum { PREFIX = 6, KEEP = 37, DIGEST_HEX = 20 }; /* "oauth:" + 37 + "#" + 20 = 64 */
    size_t n = strlen(client_id);
    if (PREFIX + n <= PRINCIPAL_NAME_MAX) {
        snprintf(out, PRINCIPAL_NAME_MAX + 1, "oauth:%s", client_id);
        return;
    }
    unsigned char d[32];
    crypto_sha256(client_id, n, d);
    int len = snprintf(out, PRINCIPAL_NAME_MAX + 1, "oauth:%.*s#", KEEP, client_id);
    hex_encode(d, DIGEST_HEX / 2, out + len);
}

struct principal *principal_for_grant(const char *name, const char *scope, const char *token)
{
    struct principal *p = xcalloc(1, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    crypto_sha256(token, strlen(token), p->hash);
    p->scopes = xcalloc(PRINCIPAL_LIST_MAX, sizeof *p->scopes);
    for (const char *s = scope + strspn(scope, " "); *s && p->nscopes < PRINCIPAL_LIST_MAX;
         s += strspn(s, " ")) {
        size_t n = strcspn(s, " ");
        p->scopes[p->nscopes++] = xstrndup(s, n);
        s += n;
    }
    return p;
}

void principal_free(struct principal *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->nscopes; i++)
        free(p->scopes[i]);
    free(p->scopes);
    for (size_t i = 0; i < p->nagents; i++)
        free(p->agents[i]);
    free(p->agents);
    free(p);
}
