/* config.c — dotenv file → struct config, with validation. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "dotenvfile.h"
#include "log.h"
#include "mem.h"
#include "weburl.h"

bool config_token_ok(const char *token)
{
    size_t n = 0;
    for (; token[n]; n++)
        if (!isxdigit((unsigned char)token[n]))
            return false;
    return n == 64;
}

bool config_issuer_ok(const char *url)
{
    return weburl_ok(url, WEBURL_ROOT_ONLY); /* the MCP endpoint is /mcp at its root */
}

const char *config_env_get(json_t *env, const char *key)
{
    json_t *v = json_object_get(env, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool parse_bool(const char *v, bool *out)
{
    if (v == NULL)
        return true;
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
        *out = true;
    else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
             !strcasecmp(v, "off") || !*v)
        *out = false;
    else
        return false;
    return true;
}

bool config_parse_uint(const char *v, unsigned long max, unsigned *out)
{
    char *end;
    if (v == NULL)
        return true;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || end == v || *end || n > max || *v == '-')
        return false;
    *out = (unsigned)n;
    return true;
}

/* "$HOME/..." or "${HOME}/..." at the start of a path value becomes the user's home, as in
 * env files written for a shell (which would have expanded it). Only HOME, only at the start, and
 * only for the path-valued keys (see expand_home_in_paths); "~" stays literal. */
static bool expand_home(char **value, const char *key, char *err, size_t errlen)
{
    const char *v = *value;
    size_t n;

    if (v == NULL)
        return true;
    if (strncmp(v, "${HOME}", 7) == 0 && (v[7] == '\0' || v[7] == '/'))
        n = 7; /* "${HOME}x" stays literal, like "$HOMEx" */
    else if (strncmp(v, "$HOME", 5) == 0 && (v[5] == '\0' || v[5] == '/'))
        n = 5;
    else
        return true;
    const char *home = getenv("HOME");
    if (home == NULL || home[0] != '/') {
        snprintf(err, errlen,
                 "%s starts with $HOME, but HOME is not set to an absolute path; set HOME or "
                 "write the path out",
                 key);
        return false;
    }
    char *full = xasprintf("%s%s", home, v + n);
    free(*value);
    *value = full;
    return true;
}

static bool expand_home_in_paths(struct config *c, char *err, size_t errlen)
{
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        if ((k->flags & CONFIG_HOME) &&
            !expand_home((char **)((char *)c + k->field), k->key, err, errlen))
            return false;
    }
    return true;
}

bool config_load(struct config *c, const char *path, char *err, size_t errlen)
{
    json_t *env;
    unsigned mode = 0;

    memset(c, 0, sizeof *c);
    if (path == NULL) {
        env = json_object();
    } else {
        if ((env = dotenvfile_read(path, &mode, err, errlen)) == NULL)
            return false;
        /* An OAuth-only env file has no MCP_AUTH_TOKEN but may hold a client secret and the agent's
         * key (HERMES_API_KEY, read by agentfile.c). */
        static const char *const secrets[] = {
            "MCP_AUTH_TOKEN",     "OAUTH_CLIENT_SECRET",        "HERMES_API_KEY",
            "OIDC_CLIENT_SECRET", "OTEL_EXPORTER_OTLP_HEADERS", "STORE_PASSWORD"};
        bool secret = false;
        for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
            secret = secret || config_env_get(env, secrets[i]);
        if (secret && (mode & 077)) {
            snprintf(err, errlen,
                     "env file %s holds a secret but is readable by others (mode %03o); run: "
                     "chmod 600 %s",
                     path, mode & 0777, path);
            json_decref(env);
            return false;
        }
    }
    bool ok = config_from_env(c, env, path, err, errlen);
    json_decref(env);
    return ok;
}

/* One row's value into c, as its type reads it: the default when unset, the row's error when
 * refused. */
static bool read_key(struct config *c, const struct config_key *k, const char *v, const char *path,
                     char *err, size_t errlen)
{
    char *field = (char *)c + k->field;
    unsigned n = (unsigned)k->dflt;

    if (v && !*v && (k->flags & CONFIG_EMPTY_NONE))
        v = NULL;
    switch (k->type) {
    case CONFIG_BOOL:
        if (parse_bool(v, (bool *)field))
            return true;
        break;
    case CONFIG_FLAG:
        *(bool *)field = v == NULL || strcmp(v, "0") != 0;
        return true;
    case CONFIG_UINT:
        if (config_parse_uint(v, k->max, &n) && n >= k->min) {
            *(unsigned *)field = n * k->scale;
            return true;
        }
        break;
    default:
        if (v)
            *(char **)field = xstrdup(v);
        else if (k->beside && path) {
            const char *slash = strrchr(path, '/');
            *(char **)field = slash ? xasprintf("%.*s/%s", (int)(slash - path), path, k->beside)
                                    : xstrdup(k->beside);
        }
        return true;
    }
    snprintf(err, errlen, "%s", k->err);
    return false;
}

bool config_from_env(struct config *c, json_t *env, const char *path, char *err, size_t errlen)
{
    bool ok = false;

    memset(c, 0, sizeof *c);
    if (path)
        c->env_file = xstrdup(path);
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        const char *v = config_env_get(env, k->key);
        if ((k->flags & CONFIG_BY_OTHER) || ((k->flags & CONFIG_OAUTH) && !c->oauth_issuer))
            continue;
        if (k->parse ? !k->parse(c, env, v, path, err, errlen)
                     : !read_key(c, k, v, path, err, errlen))
            goto out;
    }
    if (!weburl_loopback_host(c->host) && !c->allow_remote) {
        const char *host_key = config_env_get(env, "MCP_HOST") || !config_env_get(env, "BIND_HOST")
                                   ? "MCP_HOST"
                                   : "BIND_HOST";
        snprintf(err, errlen,
                 "%s=%s is not a loopback address; keep the listener on 127.0.0.1 behind a "
                 "tunnel or proxy, or set MCP_ALLOW_NON_LOOPBACK=1",
                 host_key, c->host);
        goto out;
    }
    /* Some credential can be checked: the owner's token, a role's, or an OAuth access token.
     * serve refuses to start with none (a server nobody can authenticate to). */
    c->auth = c->owner_token || c->tokens_file || c->oauth_issuer || c->oidc_issuers;
    if (!expand_home_in_paths(c, err, errlen))
        goto out;
    ok = true;
out:
    if (!ok)
        config_cleanup(c);
    return ok;
}

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* A row's setting in two configurations is the same, by its field's type. */
static bool same_setting(const struct config_key *k, const struct config *a, const struct config *b)
{
    const char *fa = (const char *)a + k->field, *fb = (const char *)b + k->field;
    if (k->same)
        return k->same(a, b);
    switch (k->type) {
    case CONFIG_BOOL:
    case CONFIG_FLAG:
        return *(const bool *)fa == *(const bool *)fb;
    case CONFIG_UINT:
        return *(const unsigned *)fa == *(const unsigned *)fb;
    case CONFIG_ENUM:
        return *(const int *)fa == *(const int *)fb;
    case CONFIG_SECRET:
        return memcmp(fa, fb, 32) == 0;
    default:
        return same_text(*(char *const *)fa, *(char *const *)fb);
    }
}

size_t config_restart_keys(const struct config *now, const struct config *fresh, char *out,
                           size_t outlen)
{
    size_t n = 0, len = 0;

    if (outlen)
        out[0] = '\0';
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        if ((k->flags & (CONFIG_RELOAD | CONFIG_BY_OTHER)) || same_setting(k, now, fresh))
            continue;
        n++;
        if (outlen > len) {
            int w = snprintf(out + len, outlen - len, "%s%s", len ? ", " : "", k->key);
            len = w < 0 ? outlen : len + (size_t)w;
        }
    }
    return n;
}

void config_cleanup(struct config *c)
{
    /* Every text or path row owns its string: a key added to the table is freed with no
     * second list to keep. The two strings no row names are derived (the file itself, and
     * the token store beside it). The tracing settings first: OTEL_EXPORTER_OTLP_ENDPOINT's row
     * names their URL, which this leaves NULL. */
    otel_config_cleanup(&c->otel);
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        if ((k->type == CONFIG_TEXT || k->type == CONFIG_PATH) && k->field != CONFIG_NO_FIELD)
            free(*(char **)((char *)c + k->field));
    }
    free(c->env_file);
    free(c->oauth_store);
    wipe_free(c->oidc_client_secret); /* read by OIDC_INTROSPECTION_URL's hook, no row's field */
    wipe_free(c->store_password);     /* read by STORE_URL's hook */
    memset(c, 0, sizeof *c);
}
