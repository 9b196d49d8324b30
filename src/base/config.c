/* config.c — dotenv file → struct config, with validation. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "dotenv.h"
#include "log.h"
#include "mem.h"
#include "readfile.h"

#define ENV_FILE_MAX (1024 * 1024)

bool config_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (strcmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

bool config_token_ok(const char *token)
{
    size_t n = 0;
    for (; token[n]; n++)
        if (!isxdigit((unsigned char)token[n]))
            return false;
    return n == 64;
}

/* Seed 002's pre-registered confidential client: both keys or neither; the id is unreserved
 * URL characters (1-64), the secret at least 32 characters and kept only as its SHA-256, which
 * /token compares in constant time. */
static bool oauth_static_client(struct config *c, const char *id, const char *secret, char *err,
                                size_t errlen)
{
    static const char unreserved[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    bool has_id = id && *id, has_secret = secret && *secret;
    if (!has_id && !has_secret)
        return true;
    if (!has_id || !has_secret) {
        snprintf(err, errlen, "OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET go together (a static "
                              "client); set both, or neither (run: hermes-mcp oauth mint-client)");
        return false;
    }
    size_t n = strlen(id);
    if (n > 64 || strspn(id, unreserved) != n) {
        snprintf(err, errlen, "OAUTH_CLIENT_ID must be 1-64 letters, digits, '-', '.', '_' or '~'");
        return false;
    }
    if (strlen(secret) < 32) {
        snprintf(err, errlen, "OAUTH_CLIENT_SECRET must have at least 32 characters (run: "
                              "hermes-mcp oauth mint-client)");
        return false;
    }
    c->oauth_client_id = xstrdup(id);
    crypto_sha256(secret, strlen(secret), c->oauth_client_secret_hash);
    return true;
}

/* OAUTH_ALLOWED_REDIRECT_SCHEMES: URI schemes (RFC 3986 syntax, lower case) of connector apps.
 * Never javascript:, data:, vbscript: or file: (an open redirect into script or local files);
 * http and https need no listing and follow their own rules (http on loopback only). */
static bool oauth_schemes(struct config *c, const char *list, char *err, size_t errlen)
{
    static const char *const never[] = {"javascript", "data", "vbscript", "file", "http",
                                        "https", "blob", "about"};
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
            snprintf(err, errlen, "OAUTH_ALLOWED_REDIRECT_SCHEMES: '%.*s' is not a scheme a "
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

bool config_issuer_ok(const char *url)
{
    bool https = strncmp(url, "https://", 8) == 0;
    const char *p = url + (https ? 8 : 7);
    char host[256];
    size_t n;

    if (!https && strncmp(url, "http://", 7) != 0)
        return false;
    if (strpbrk(p, "@?#\\ \t\r\n"))
        return false;
    if (*p == '[') { /* an IPv6 literal */
        const char *close = strchr(p, ']');
        if (close == NULL || (size_t)(close - p - 1) >= sizeof host)
            return false;
        n = (size_t)(close - p - 1);
        memcpy(host, p + 1, n);
        p = close + 1;
    } else {
        n = strcspn(p, ":/");
        if (n == 0 || n >= sizeof host)
            return false;
        memcpy(host, p, n);
        p += n;
    }
    host[n] = '\0';
    if (*p == ':') {
        size_t digits = strspn(p + 1, "0123456789");
        if (digits == 0 || digits > 5 || atoi(p + 1) > 65535)
            return false;
        p += 1 + digits;
    }
    if (*p && strcmp(p, "/") != 0)
        return false; /* the MCP endpoint is /mcp at the root of this origin */
    return https || config_is_loopback(host);
}

static char *read_small_file(const char *path, size_t *len, struct stat *st, char *err,
                             size_t errlen)
{
    char what[PATH_MAX + 16];
    snprintf(what, sizeof what, "env file %s", path);
    return readfile_capped(path, what, ENV_FILE_MAX, st, len, err, errlen);
}

static const char *get(json_t *env, const char *key)
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

static bool parse_uint(const char *v, unsigned long max, unsigned *out)
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

static char *dup_or(const char *v, const char *dflt)
{
    return v ? xstrdup(v) : dflt ? xstrdup(dflt) : NULL;
}

json_t *config_read_env(const char *path, unsigned *mode, char *err, size_t errlen)
{
    struct stat st;
    size_t len = 0;
    char why[200];

    char *text = read_small_file(path, &len, &st, err, errlen);
    if (text == NULL)
        return NULL;
    json_t *env = dotenv_parse(text, len, why, sizeof why);
    if (env == NULL)
        snprintf(err, errlen, "env file %s: %s", path, why);
    memset(text, 0, len); /* it may hold the token */
    free(text);
    *mode = (unsigned)(st.st_mode & 07777);
    return env;
}

/* "$HOME/..." or "${HOME}/..." at the start of a path value becomes the user's home, as in
 * seed 000's env files (a shell would have expanded it there). Only HOME, only at the start, and
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
    return expand_home(&c->tokens_file, "TOKENS_FILE", err, errlen) &&
           expand_home(&c->hermes_env_path, "HERMES_ENV_PATH", err, errlen) &&
           expand_home(&c->tasks_dir, "TASKS_DIR", err, errlen) &&
           expand_home(&c->contract_path, "HERMES_CONTRACT_PATH", err, errlen) &&
           expand_home(&c->agents_file, "AGENTS_FILE", err, errlen) &&
           expand_home(&c->gateway_file, "GATEWAY_FILE", err, errlen) &&
           expand_home(&c->audit_path, "AUDIT_LOG_PATH", err, errlen);
}

bool config_load(struct config *c, const char *path, char *err, size_t errlen)
{
    json_t *env;
    unsigned mode = 0;

    memset(c, 0, sizeof *c);
    if (path == NULL) {
        env = json_object();
    } else {
        if ((env = config_read_env(path, &mode, err, errlen)) == NULL)
            return false;
        /* Seed 002's env file has no MCP_AUTH_TOKEN but a client secret and the agent's key
         * (HERMES_API_KEY, read by agentcfg.c). */
        static const char *const secrets[] = {"MCP_AUTH_TOKEN", "OAUTH_CLIENT_SECRET",
                                              "HERMES_API_KEY"};
        bool secret = false;
        for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
            secret = secret || get(env, secrets[i]);
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

bool config_from_env(struct config *c, json_t *env, const char *path, char *err, size_t errlen)
{
    bool ok = false;

    memset(c, 0, sizeof *c);
    c->port = 8765;
    c->max_conns = 16384;
    c->rate_per_min = 30;
    c->rate_auth_per_min = 600;
    c->drain_grace_s = 10;
    unsigned call_timeout_s = 1800, header_s = 15, body_s = 60;
    c->log_level = LOG_INFO;
    if (path)
        c->env_file = xstrdup(path);
    /* BIND_HOST: seed 002's name for MCP_HOST, so its env file works unchanged. */
    const char *mcp_host = get(env, "MCP_HOST"), *bind_host = get(env, "BIND_HOST");
    const char *host_key = mcp_host || !bind_host ? "MCP_HOST" : "BIND_HOST";
    if (mcp_host && bind_host && strcmp(mcp_host, bind_host) != 0) {
        snprintf(err, errlen, "MCP_HOST and BIND_HOST (its old name) differ; set one of them");
        goto out;
    }
    c->host = dup_or(mcp_host ? mcp_host : bind_host, "127.0.0.1");
    if (!parse_uint(get(env, "MCP_PORT"), 65535, &c->port)) {
        snprintf(err, errlen, "MCP_PORT must be a port number (0-65535)");
        goto out;
    }
    if (!parse_bool(get(env, "MCP_SESSIONS"), &c->sessions) ||
        !parse_bool(get(env, "MCP_ALLOW_NON_LOOPBACK"), &c->allow_remote)) {
        snprintf(err, errlen, "MCP_SESSIONS and MCP_ALLOW_NON_LOOPBACK take 1/0, true/false");
        goto out;
    }
    if (!parse_uint(get(env, "MCP_MAX_CONNECTIONS"), 1000000, &c->max_conns) || c->max_conns == 0) {
        snprintf(err, errlen, "MCP_MAX_CONNECTIONS must be a positive number");
        goto out;
    }
    if (!parse_uint(get(env, "MCP_CALL_TIMEOUT_S"), 7 * 24 * 3600, &call_timeout_s)) {
        snprintf(err, errlen, "MCP_CALL_TIMEOUT_S must be a number of seconds (0: no limit)");
        goto out;
    }
    c->call_timeout_ms = call_timeout_s * 1000u;
    if (!parse_uint(get(env, "MCP_DRAIN_GRACE_S"), 3600, &c->drain_grace_s)) {
        snprintf(err, errlen, "MCP_DRAIN_GRACE_S must be 0-3600 seconds (0: no grace period)");
        goto out;
    }
    if (!parse_uint(get(env, "MCP_HEADER_TIMEOUT_S"), 3600, &header_s) ||
        !parse_uint(get(env, "MCP_BODY_TIMEOUT_S"), 3600, &body_s) || header_s == 0 ||
        body_s == 0) {
        snprintf(err, errlen, "MCP_HEADER_TIMEOUT_S and MCP_BODY_TIMEOUT_S must be 1-3600 seconds");
        goto out;
    }
    c->header_timeout_ms = header_s * 1000u;
    c->body_timeout_ms = body_s * 1000u;
    if (!parse_uint(get(env, "RATE_LIMIT_PER_MIN"), 1000000, &c->rate_per_min)) {
        snprintf(err, errlen, "RATE_LIMIT_PER_MIN must be a number of requests (0: no limit)");
        goto out;
    }
    if (!parse_uint(get(env, "RATE_LIMIT_AUTH_PER_MIN"), 1000000, &c->rate_auth_per_min)) {
        snprintf(err, errlen,
                 "RATE_LIMIT_AUTH_PER_MIN must be a number of requests (0: no limit)");
        goto out;
    }
    const char *lvl = get(env, "LOG_LEVEL");
    if (lvl && (c->log_level = log_level_parse(lvl)) < 0) {
        snprintf(err, errlen, "LOG_LEVEL must be error, warn, info or debug");
        goto out;
    }
    if (!config_is_loopback(c->host) && !c->allow_remote) {
        snprintf(err, errlen,
                 "%s=%s is not a loopback address; keep the listener on 127.0.0.1 behind a "
                 "tunnel or proxy, or set MCP_ALLOW_NON_LOOPBACK=1",
                 host_key, c->host);
        goto out;
    }
    const char *token = get(env, "MCP_AUTH_TOKEN");
    if (token) {
        if (!config_token_ok(token)) {
            snprintf(err, errlen,
                     "MCP_AUTH_TOKEN must be 64 hexadecimal characters; run: hermes-mcp token gen "
                     "--env-file %s",
                     path);
            goto out;
        }
        crypto_sha256(token, 64, c->token_hash);
        c->owner_token = true;
    }
    c->public_hosts = dup_or(get(env, "MCP_PUBLIC_HOSTS"), NULL);
    const char *tokens = get(env, "TOKENS_FILE");
    c->tokens_file = tokens && *tokens ? xstrdup(tokens) : NULL; /* empty: none */
    const char *issuer = get(env, "OAUTH_ISSUER_URL");
    if (issuer && *issuer) {
        if (!config_issuer_ok(issuer)) {
            snprintf(err, errlen,
                     "OAUTH_ISSUER_URL must be the server's public origin, https://HOST[:PORT] "
                     "(http only on loopback), without a path");
            goto out;
        }
        size_t len = strlen(issuer);
        c->oauth_issuer = xstrndup(issuer, issuer[len - 1] == '/' ? len - 1 : len);
        const char *slash = path ? strrchr(path, '/') : NULL;
        c->oauth_store = slash ? xasprintf("%.*s/oauth-tokens.json", (int)(slash - path), path)
                               : xstrdup("oauth-tokens.json");
        const char *dcr = get(env, "OAUTH_DCR");
        c->oauth_dcr = dcr == NULL || strcmp(dcr, "0") != 0; /* on unless OAUTH_DCR=0 */
        const char *cimd = get(env, "OAUTH_CIMD");
        c->oauth_cimd = cimd == NULL || strcmp(cimd, "0") != 0; /* on unless OAUTH_CIMD=0 */
        const char *ca = get(env, "OAUTH_CIMD_CA_FILE");
        const char *hosts = get(env, "OAUTH_CIMD_ALLOW_HOSTS");
        c->oauth_cimd_ca_file = ca && *ca ? xstrdup(ca) : NULL;
        if (c->oauth_cimd_ca_file && access(ca, R_OK) != 0) {
            /* Said now, not as "certificate not trusted" at some client's first /authorize. */
            snprintf(err, errlen, "OAUTH_CIMD_CA_FILE %s cannot be read: %s", ca, strerror(errno));
            goto out;
        }
        c->oauth_cimd_allow_hosts = hosts && *hosts ? xstrdup(hosts) : NULL;
        c->oauth_access_ttl_s = 3600;
        c->oauth_refresh_ttl_s = 30 * 24 * 3600;
        if (!parse_uint(get(env, "OAUTH_ACCESS_TTL_S"), 86400, &c->oauth_access_ttl_s) ||
            c->oauth_access_ttl_s == 0 ||
            !parse_uint(get(env, "OAUTH_REFRESH_TTL_S"), 366 * 24 * 3600,
                        &c->oauth_refresh_ttl_s) ||
            c->oauth_refresh_ttl_s < 60 || c->oauth_refresh_ttl_s < c->oauth_access_ttl_s) {
            snprintf(err, errlen, "OAUTH_ACCESS_TTL_S must be 1-86400 seconds and "
                                  "OAUTH_REFRESH_TTL_S 60-31622400, not less than the access "
                                  "token's");
            goto out;
        }
        if (!oauth_static_client(c, get(env, "OAUTH_CLIENT_ID"), get(env, "OAUTH_CLIENT_SECRET"),
                                 err, errlen) ||
            !oauth_schemes(c, get(env, "OAUTH_ALLOWED_REDIRECT_SCHEMES"), err, errlen))
            goto out;
    }
    /* Some credential can be checked: the owner's token, a role's, or an OAuth access token.
     * serve refuses to start with none (a server nobody can authenticate to). */
    c->auth = c->owner_token || c->tokens_file || c->oauth_issuer;
    if (!parse_bool(get(env, "MCP_TOOL_ALIASES"), &c->tool_aliases)) {
        snprintf(err, errlen, "MCP_TOOL_ALIASES takes 1/0, true/false");
        goto out;
    }
    c->hermes_env_path = dup_or(get(env, "HERMES_ENV_PATH"), NULL);
    c->tasks_dir = dup_or(get(env, "TASKS_DIR"), NULL);
    if (c->tasks_dir == NULL && path) {
        const char *slash = strrchr(path, '/');
        c->tasks_dir = slash ? xasprintf("%.*s/tasks", (int)(slash - path), path)
                             : xstrdup("tasks");
    }
    c->tasks_retention_days = 30;
    if (!parse_uint(get(env, "TASKS_RETENTION_DAYS"), 100000, &c->tasks_retention_days)) {
        snprintf(err, errlen, "TASKS_RETENTION_DAYS must be a number of days (0: no limit)");
        goto out;
    }
    c->tasks_max = 10000;
    if (!parse_uint(get(env, "TASKS_MAX"), 100000000, &c->tasks_max)) {
        snprintf(err, errlen, "TASKS_MAX must be a number of tasks (0: no limit)");
        goto out;
    }
    c->contract_path = dup_or(get(env, "HERMES_CONTRACT_PATH"), NULL);
    unsigned agent_s = call_timeout_s > 10 ? call_timeout_s - 5 : call_timeout_s;
    if (!parse_uint(get(env, "HERMES_TIMEOUT_S"), 7 * 24 * 3600, &agent_s)) {
        snprintf(err, errlen, "HERMES_TIMEOUT_S must be a number of seconds (0: no limit)");
        goto out;
    }
    c->agent_timeout_ms = agent_s * 1000u;
    c->poll_ms = 1000;
    if (!parse_uint(get(env, "HERMES_POLL_MS"), 600000, &c->poll_ms) || c->poll_ms < 10) {
        snprintf(err, errlen, "HERMES_POLL_MS must be 10-600000 milliseconds");
        goto out;
    }
    c->agents_file = dup_or(get(env, "AGENTS_FILE"), NULL);
    c->gateway_file = dup_or(get(env, "GATEWAY_FILE"), NULL);
    c->trusted_proxies = dup_or(get(env, "TRUSTED_PROXIES"), NULL);
    c->audit_path = dup_or(get(env, "AUDIT_LOG_PATH"), NULL);
    if (c->audit_path == NULL && path) {
        const char *slash = strrchr(path, '/');
        c->audit_path = slash ? xasprintf("%.*s/audit.jsonl", (int)(slash - path), path)
                              : xstrdup("audit.jsonl");
    }
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

size_t config_restart_keys(const struct config *now, const struct config *fresh, char *out,
                           size_t outlen)
{
    const struct {
        const char *key;
        bool same;
    } keys[] = {
        {"MCP_HOST", same_text(now->host, fresh->host)},
        {"MCP_PORT", now->port == fresh->port},
        {"MCP_ALLOW_NON_LOOPBACK", now->allow_remote == fresh->allow_remote},
        {"MCP_SESSIONS", now->sessions == fresh->sessions},
        {"MCP_TOOL_ALIASES", now->tool_aliases == fresh->tool_aliases},
        {"HERMES_ENV_PATH", same_text(now->hermes_env_path, fresh->hermes_env_path)},
        {"TASKS_DIR", same_text(now->tasks_dir, fresh->tasks_dir)},
        {"HERMES_CONTRACT_PATH", same_text(now->contract_path, fresh->contract_path)},
        {"HERMES_POLL_MS", now->poll_ms == fresh->poll_ms},
        {"HERMES_TIMEOUT_S", now->agent_timeout_ms == fresh->agent_timeout_ms},
        {"AGENTS_FILE", same_text(now->agents_file, fresh->agents_file)},
        {"GATEWAY_FILE", same_text(now->gateway_file, fresh->gateway_file)},
        {"MCP_MAX_CONNECTIONS", now->max_conns == fresh->max_conns},
        {"MCP_CALL_TIMEOUT_S", now->call_timeout_ms == fresh->call_timeout_ms},
        {"MCP_HEADER_TIMEOUT_S", now->header_timeout_ms == fresh->header_timeout_ms},
        {"MCP_BODY_TIMEOUT_S", now->body_timeout_ms == fresh->body_timeout_ms},
        {"RATE_LIMIT_PER_MIN", now->rate_per_min == fresh->rate_per_min},
        {"RATE_LIMIT_AUTH_PER_MIN", now->rate_auth_per_min == fresh->rate_auth_per_min},
        {"TRUSTED_PROXIES", same_text(now->trusted_proxies, fresh->trusted_proxies)},
        {"AUDIT_LOG_PATH", same_text(now->audit_path, fresh->audit_path)},
        {"OAUTH_ISSUER_URL", same_text(now->oauth_issuer, fresh->oauth_issuer)},
        {"OAUTH_CLIENT_ID", same_text(now->oauth_client_id, fresh->oauth_client_id) &&
                                memcmp(now->oauth_client_secret_hash,
                                       fresh->oauth_client_secret_hash, 32) == 0},
        {"OAUTH_ALLOWED_REDIRECT_SCHEMES",
         same_text(now->oauth_redirect_schemes, fresh->oauth_redirect_schemes)},
        {"OAUTH_CIMD", now->oauth_cimd == fresh->oauth_cimd},
        {"OAUTH_CIMD_CA_FILE", same_text(now->oauth_cimd_ca_file, fresh->oauth_cimd_ca_file)},
        {"OAUTH_CIMD_ALLOW_HOSTS",
         same_text(now->oauth_cimd_allow_hosts, fresh->oauth_cimd_allow_hosts)},
        {"OAUTH_ACCESS_TTL_S", now->oauth_access_ttl_s == fresh->oauth_access_ttl_s},
        {"OAUTH_REFRESH_TTL_S", now->oauth_refresh_ttl_s == fresh->oauth_refresh_ttl_s},
    };
    size_t n = 0, len = 0;

    if (outlen)
        out[0] = '\0';
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        if (keys[i].same)
            continue;
        n++;
        if (outlen > len) {
            int w = snprintf(out + len, outlen - len, "%s%s", len ? ", " : "", keys[i].key);
            len = w < 0 ? outlen : len + (size_t)w;
        }
    }
    return n;
}

void config_cleanup(struct config *c)
{
    free(c->env_file);
    free(c->host);
    free(c->public_hosts);
    free(c->tokens_file);
    free(c->oauth_issuer);
    free(c->oauth_store);
    free(c->oauth_client_id);
    free(c->oauth_redirect_schemes);
    free(c->oauth_cimd_ca_file);
    free(c->oauth_cimd_allow_hosts);
    free(c->hermes_env_path);
    free(c->tasks_dir);
    free(c->contract_path);
    free(c->agents_file);
    free(c->gateway_file);
    free(c->trusted_proxies);
    free(c->audit_path);
    memset(c, 0, sizeof *c);
}
