/* smoke_config.c — where smoke points and the token it sends: --base parsed into the /mcp and
 * /health URLs, the bearer from --token-file, HERMES_MCP_TOKEN or the env file (never argv),
 * each file checked as serve checks its own (mode 600, capped). */
#include "smoke_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dotenv.h"
#include "httpc.h"
#include "mem.h"
#include "readfile.h"
#include "weburl.h"

#define ENV_FILE_MAX (1024 * 1024)

/* ---- configuration ---------------------------------------------------------------------- */

#define BEARER_MAX 4096

/* A bearer token as an HTTP header carries it: 1 to BEARER_MAX visible ASCII characters. */
static bool bearer_ok(const char *t)
{
    size_t n = strlen(t);
    for (size_t i = 0; i < n; i++)
        if (t[i] < 0x21 || t[i] > 0x7e)
            return false;
    return n > 0 && n <= BEARER_MAX;
}

/* --token-file: a regular file of mode 600 (or stricter), the token on its first line. */
static bool read_token_file(struct smoke *s, char *err, size_t errlen)
{
    struct stat st;
    size_t len;
    char *text =
        readfile_capped(s->token_file, s->token_file, BEARER_MAX + 2, &st, &len, err, errlen);
    if (text == NULL)
        return false;
    bool ok = false;
    text[strcspn(text, "\r\n")] = '\0';
    if (st.st_mode & 077)
        snprintf(err, errlen,
                 "--token-file %s is readable by others (mode %03o); run: chmod 600 %s",
                 s->token_file, (unsigned)(st.st_mode & 0777), s->token_file);
    else if (!bearer_ok(text))
        snprintf(err, errlen,
                 "--token-file %s: its first line must be the token (1-%d visible "
                 "ASCII characters)",
                 s->token_file, BEARER_MAX);
    else
        ok = true;
    if (ok) {
        s->token = xstrdup(text);
        snprintf(s->token_source, sizeof s->token_source, "--token-file %s", s->token_file);
    }
    explicit_bzero(text, len);
    free(text);
    return ok;
}

static bool read_env_token(struct smoke *s, char *err, size_t errlen);

/* The bearer smoke sends: --token-file, else HERMES_MCP_TOKEN, else the env file's
 * MCP_AUTH_TOKEN. Never from argv: the command line is visible to every local user. */
bool smoke_read_token(struct smoke *s, char *err, size_t errlen)
{
    const char *env = getenv("HERMES_MCP_TOKEN");
    if (s->token_file)
        return read_token_file(s, err, errlen);
    if (env && *env) {
        if (!bearer_ok(env)) {
            snprintf(err, errlen,
                     "HERMES_MCP_TOKEN must be the bearer token (1-%d visible ASCII "
                     "characters)",
                     BEARER_MAX);
            return false;
        }
        s->token = xstrdup(env);
        snprintf(s->token_source, sizeof s->token_source, "HERMES_MCP_TOKEN");
        return true;
    }
    snprintf(s->token_source, sizeof s->token_source, "%s", s->env_file);
    return read_env_token(s, err, errlen);
}

/* Reads MCP_AUTH_TOKEN from the env file with the server's own rules: a regular file of at most
 * 1 MiB, mode 600 when it holds a secret, a 64-hex-character token. */
static bool read_env_token(struct smoke *s, char *err, size_t errlen)
{
    const char *path = s->env_file;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    char *text = NULL, why[200];
    json_t *env = NULL;
    bool ok = false;

    if (fd < 0) {
        if (errno == ENOENT)
            snprintf(err, errlen,
                     "env file %s not found; point --env-file at the file 'hermes-mcp serve' "
                     "reads",
                     path);
        else
            snprintf(err, errlen, "cannot open env file %s: %s", path, strerror(errno));
        return false;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "env file %s is not a regular file", path);
        goto out;
    }
    if (st.st_size > ENV_FILE_MAX) {
        snprintf(err, errlen, "env file %s is larger than 1 MiB", path);
        goto out;
    }
    text = xmalloc((size_t)st.st_size + 1);
    ssize_t n = read(fd, text, (size_t)st.st_size);
    if (n < 0) {
        snprintf(err, errlen, "cannot read env file %s: %s", path, strerror(errno));
        goto out;
    }
    text[n] = '\0';
    env = dotenv_parse(text, (size_t)n, why, sizeof why);
    if (env == NULL) {
        snprintf(err, errlen, "env file %s: %s", path, why);
        goto out;
    }
    json_t *tv = json_object_get(env, "MCP_AUTH_TOKEN");
    if (!json_is_string(tv) || json_string_length(tv) == 0) {
        /* An OAuth-only or TOKENS_FILE-only server has none, on purpose: adding one with
         * token gen would add an owner token that setup chose not to have. */
        snprintf(err, errlen,
                 "no MCP_AUTH_TOKEN in %s: smoke needs a bearer token; give the token of a "
                 "principal (an OAuth access token, a TOKENS_FILE role's) in HERMES_MCP_TOKEN or "
                 "with --token-file FILE (mode 600), or point --env-file at the server's env "
                 "file if it has MCP_AUTH_TOKEN",
                 path);
        goto out;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen,
                 "env file %s holds a secret but is readable by others (mode %03o); run: "
                 "chmod 600 %s",
                 path, (unsigned)(st.st_mode & 0777), path);
        goto out;
    }
    if (!config_token_ok(json_string_value(tv))) {
        snprintf(err, errlen,
                 "MCP_AUTH_TOKEN in %s must be 64 hexadecimal characters; run: hermes-mcp token "
                 "gen --env-file %s",
                 path, path);
        goto out;
    }
    s->token = xstrdup(json_string_value(tv));
    ok = true;
out:
    if (text) {
        explicit_bzero(text, (size_t)st.st_size + 1);
        free(text);
    }
    json_decref(env);
    close(fd);
    return ok;
}

/* Accepts http(s)://host[:port][/prefix][/mcp][/]; refuses plain http beyond loopback. */
bool smoke_parse_base(struct smoke *s, const char *url, char *err, size_t errlen)
{
    char tmp[1024];
    if (strlen(url) >= sizeof tmp - 16) {
        snprintf(err, errlen, "--base is too long");
        return false;
    }
    snprintf(tmp, sizeof tmp, "%s", url);
    size_t n = strlen(tmp);
    while (n > 0 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    if (n >= 4 && strcmp(tmp + n - 4, "/mcp") == 0)
        tmp[n -= 4] = '\0';
    while (n > 0 && tmp[n - 1] == '/')
        tmp[--n] = '\0';

    bool https = strncasecmp(tmp, "https://", 8) == 0;
    if (!https && strncasecmp(tmp, "http://", 7) != 0) {
        snprintf(err, errlen,
                 "--base must start with http:// or https://, for example "
                 "--base http://127.0.0.1:8765");
        return false;
    }
    struct httpc_url u;
    if (!httpc_url_parse(tmp, &u)) {
        if (u.unusable) {
            snprintf(err, errlen, "%s", httpc_setup_error());
            return false;
        }
        snprintf(err, errlen,
                 "--base '%.200s' is not a valid URL, for example "
                 "--base http://127.0.0.1:8765",
                 url);
        return false;
    }
    if (u.has_query) {
        snprintf(err, errlen, "--base must not carry a query (?...); give the server's root URL");
        return false;
    }
    if (u.has_user) {
        snprintf(err, errlen, "--base must not carry a user name or password");
        return false;
    }
    const char *host = u.host;
    if (!https) {
        char h[300];
        size_t hl = strlen(host);
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']')
            snprintf(h, sizeof h, "%.*s", (int)(hl - 2), host + 1);
        else
            snprintf(h, sizeof h, "%.*s", (int)(sizeof h - 1), host);
        if (!weburl_loopback_host(h)) {
            snprintf(err, errlen,
                     "refusing to send the token over plain http to %s; use the https:// URL of "
                     "your tunnel or proxy, or run smoke on the server's machine with "
                     "--base http://127.0.0.1:PORT",
                     host);
            return false;
        }
    }
    snprintf(s->base, sizeof s->base, "%s", tmp);
    snprintf(s->mcp_url, sizeof s->mcp_url, "%s/mcp", tmp);
    snprintf(s->health_url, sizeof s->health_url, "%s/health", tmp);
    return true;
}
