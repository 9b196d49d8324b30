/* smoke.c — `hermes-mcp smoke`: a small synchronous MCP client (libcurl easy, jansson) that
 * checks a running server the way seed 000's smoke test did. The token never reaches the
 * output: every line goes through clean_text(), which blanks it wherever a server echoes it. */
#include "smoke.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "crypto.h"
#include "dotenv.h"
#include "exitcode.h"
#include "mem.h"
#include "readfile.h"
#include "sse.h"
#include "taskpath.h"
#include "toolerr.h"
#include "version.h"

#define ENV_FILE_MAX (1024 * 1024)
#define ANSWER_MAX (8 * 1024 * 1024) /* the largest answer we read (result.json is <= 200 KiB) */
#define BODY_LIMIT (256 * 1024)      /* the server's request body cap */
#define PROTOCOL_VERSION "2025-11-25"
#define TASK_TEXT "hermes-mcp smoke test: reply with one short sentence saying that you are up."

const char smoke_usage[] =
    "usage: hermes-mcp smoke --base URL [--id ID] [--env-file FILE | --token-file FILE]\n"
    "                        [--timeout S] [--cacert FILE]\n"
    "\n"
    "Checks a running hermes-mcp end to end, as an MCP client would: GET /health, 401 without\n"
    "a token, initialize, tools/list (the eight bridge tools), a sync hermes_task (one small\n"
    "task for your agent), hermes_result, hermes_files, rejection of \"../\" and absolute paths,\n"
    "and the 256 KiB body limit. One line per check (\"ok ...\" or \"FAIL ...; fix: ...\"),\n"
    "then a summary.\n"
    "\n"
    "  --base URL       the server's root URL, local or tunnelled: http://127.0.0.1:8765 or\n"
    "                   https://mcp.example.com (a trailing /mcp is accepted). Plain http is\n"
    "                   refused for non-loopback hosts: the token would cross the network\n"
    "                   in clear\n"
    "  --id ID          task id for the sync task (default smoke-YYYYMMDD-HHMMSS-RANDOM); the\n"
    "                   same id again gets the stored result back\n"
    "  --env-file FILE  where MCP_AUTH_TOKEN is read (default ./.env, must be mode 600); the\n"
    "                   token is never printed\n"
    "  --token-file FILE  the bearer token to use instead (mode 600, the token on its first\n"
    "                   line): for a server without MCP_AUTH_TOKEN, an OAuth access token or a\n"
    "                   TOKENS_FILE role's token. Or set HERMES_MCP_TOKEN in the environment.\n"
    "                   Never give a token on the command line\n"
    "  --timeout S      seconds allowed per request, default 120 (the sync task waits for the\n"
    "                   agent)\n"
    "  --cacert FILE    trust the CA certificates in FILE (PEM) for an https --base served with\n"
    "                   a private CA; public tunnel URLs need nothing\n"
    "\n"
    "Exit codes: 0 every check passed, 1 a check failed or the server cannot be reached,\n"
    "2 usage or configuration error.\n";

static const char *const expected_tools[] = {"hermes_task",  "hermes_status", "hermes_result",
                                             "hermes_files", "list_agents",   "hermes_cancel",
                                             "hermes_reset", "whoami"};
#define NTOOLS (sizeof expected_tools / sizeof *expected_tools)
/* Seed 002's names, listed with MCP_TOOL_ALIASES=1: ours, not counted as the gateway's. */
static const char *const alias_tools[] = {"hermes_ask", "hermes_check", NULL};

struct smoke {
    char base[1024]; /* scheme://host[:port][/prefix], no trailing slash */
    char mcp_url[1100];
    char health_url[1100];
    char id[129];
    const char *env_file;
    const char *token_file; /* --token-file, or NULL */
    char token_source[1100]; /* where the token came from, for the fix of a 401 */
    const char *cacert; /* --cacert, or NULL for the system's CA store */
    char *token;        /* secret: wiped and freed at the end */
    long timeout_s;
    CURL *curl;
    char version[32];  /* negotiated protocol version, after initialize */
    char server_name[80], server_version[40]; /* its serverInfo, cleaned, after initialize */
    char session[256]; /* Mcp-Session-Id, when the server issued one */
    json_int_t next_id;
    int passed, failed, skipped;
    char why[1024]; /* what went wrong in the last helper that returned false */
    char fix[512];  /* and what to do about it */
};

/* One HTTP exchange. For MCP answers the JSON-RPC response with want_id is picked out of either
 * a JSON body or an SSE stream; reading stops as soon as it arrived. */
struct reply {
    CURLcode rc;
    long status;
    char ctype[128];
    char www_auth[256];
    char session[256];
    struct buf body;
    bool started, is_sse, done, too_big;
    struct sse_decoder sse;
    json_int_t want_id;
    json_t *msg;
    char errbuf[CURL_ERROR_SIZE];
};

enum { H_AUTH = 1, H_MCP = 2 };

/* Copies server- or curl-provided text into out (at most outlen-1 bytes): the token, wherever
 * it appears, becomes "[redacted]" and control characters become '?'. The token is removed
 * before anything is cut, so no piece of it survives a truncation either. */
static void clean_text(const struct smoke *s, const char *in, size_t inlen, char *out,
                       size_t outlen)
{
    size_t tlen = s->token ? strlen(s->token) : 0, o = 0;
    for (size_t i = 0; i < inlen && o + 1 < outlen;) {
        if (tlen && inlen - i >= tlen && strncasecmp(in + i, s->token, tlen) == 0) {
            static const char mark[] = "[redacted]";
            for (size_t k = 0; k < sizeof mark - 1 && o + 1 < outlen; k++)
                out[o++] = mark[k];
            i += tlen;
            continue;
        }
        unsigned char c = (unsigned char)in[i++];
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[o] = '\0';
}

/* Server text (NULL: "(none)") cleaned and cut to outlen-1 bytes, in that order: a %.Ns of the
 * raw text could keep a piece of the token that clean_text() would no longer recognise. */
static const char *cut(const struct smoke *s, const char *in, char *out, size_t outlen)
{
    if (in == NULL)
        in = "(none)";
    clean_text(s, in, strlen(in), out, outlen);
    return out;
}

static void emit(struct smoke *s, const char *tag, const char *name, const char *fix,
                 const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static void emit(struct smoke *s, const char *tag, const char *name, const char *fix,
                 const char *fmt, va_list ap)
{
    char what[1200], line[2048], clean[2048];
    vsnprintf(what, sizeof what, fmt, ap);
    if (fix)
        snprintf(line, sizeof line, "%-4s %s: %s; fix: %s", tag, name, what, fix);
    else
        snprintf(line, sizeof line, "%-4s %s: %s", tag, name, what);
    clean_text(s, line, strlen(line), clean, sizeof clean);
    puts(clean);
    fflush(stdout);
}

static void pass(struct smoke *s, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pass(struct smoke *s, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(s, "ok", name, NULL, fmt, ap);
    va_end(ap);
    s->passed++;
}

/* Reports the failure described in s->why and s->fix. */
static void fail(struct smoke *s, const char *name)
{
    char line[2048], clean[2048];
    snprintf(line, sizeof line, "FAIL %s: %s; fix: %s", name, s->why, s->fix);
    clean_text(s, line, strlen(line), clean, sizeof clean);
    puts(clean);
    fflush(stdout);
    s->failed++;
}

static void skip(struct smoke *s, const char *name, const char *because)
{
    printf("skip %s: %s\n", name, because);
    fflush(stdout);
    s->skipped++;
}

static bool problem(struct smoke *s, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool problem(struct smoke *s, const char *fix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    snprintf(s->fix, sizeof s->fix, "%s", fix);
    return false;
}

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
    char *text = readfile_capped(s->token_file, s->token_file, BEARER_MAX + 2, &st, &len, err,
                                 errlen);
    if (text == NULL)
        return false;
    bool ok = false;
    text[strcspn(text, "\r\n")] = '\0';
    if (st.st_mode & 077)
        snprintf(err, errlen,
                 "--token-file %s is readable by others (mode %03o); run: chmod 600 %s",
                 s->token_file, (unsigned)(st.st_mode & 0777), s->token_file);
    else if (!bearer_ok(text))
        snprintf(err, errlen, "--token-file %s: its first line must be the token (1-%d visible "
                 "ASCII characters)", s->token_file, BEARER_MAX);
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
static bool read_token(struct smoke *s, char *err, size_t errlen)
{
    const char *env = getenv("HERMES_MCP_TOKEN");
    if (s->token_file)
        return read_token_file(s, err, errlen);
    if (env && *env) {
        if (!bearer_ok(env)) {
            snprintf(err, errlen, "HERMES_MCP_TOKEN must be the bearer token (1-%d visible ASCII "
                     "characters)", BEARER_MAX);
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
static bool parse_base(struct smoke *s, const char *url, char *err, size_t errlen)
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
    CURLU *u = curl_url();
    char *host = NULL;
    bool ok = false;
    if (curl_url_set(u, CURLUPART_URL, tmp, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host == NULL || !*host) {
        snprintf(err, errlen,
                 "--base '%.200s' is not a valid URL, for example "
                 "--base http://127.0.0.1:8765",
                 url);
        goto out;
    }
    char *q = NULL;
    if (curl_url_get(u, CURLUPART_QUERY, &q, 0) == CURLUE_OK && q) {
        curl_free(q);
        snprintf(err, errlen, "--base must not carry a query (?...); give the server's root URL");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &q, 0) == CURLUE_OK && q) {
        curl_free(q);
        snprintf(err, errlen, "--base must not carry a user name or password");
        goto out;
    }
    if (!https) {
        char h[300];
        size_t hl = strlen(host);
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']')
            snprintf(h, sizeof h, "%.*s", (int)(hl - 2), host + 1);
        else
            snprintf(h, sizeof h, "%s", host);
        if (!config_is_loopback(h)) {
            snprintf(err, errlen,
                     "refusing to send the token over plain http to %s; use the https:// URL of "
                     "your tunnel or proxy, or run smoke on the server's machine with "
                     "--base http://127.0.0.1:PORT",
                     host);
            goto out;
        }
    }
    snprintf(s->base, sizeof s->base, "%s", tmp);
    snprintf(s->mcp_url, sizeof s->mcp_url, "%s/mcp", tmp);
    snprintf(s->health_url, sizeof s->health_url, "%s/health", tmp);
    ok = true;
out:
    curl_free(host);
    curl_url_cleanup(u);
    return ok;
}

/* ---- HTTP ------------------------------------------------------------------------------- */

static void on_sse_event(const char *event, const char *data, size_t len, const char *id, void *arg)
{
    struct reply *r = arg;
    (void)event;
    (void)id;
    if (r->done || len == 0)
        return;
    json_t *m = json_loadb(data, len, 0, NULL);
    json_t *mid = json_object_get(m, "id");
    if (json_is_integer(mid) && json_integer_value(mid) == r->want_id &&
        (json_object_get(m, "result") || json_object_get(m, "error"))) {
        r->msg = m;
        r->done = true;
        return;
    }
    json_decref(m); /* a notification, a request to us, or not JSON: not what we wait for */
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct reply *r = arg;
    size_t len = size * n;
    if (r->done)
        return 0; /* we have our answer: stop reading */
    if (!r->started) {
        r->started = true;
        r->is_sse = strncasecmp(r->ctype, "text/event-stream", 17) == 0;
    }
    if (r->is_sse && r->want_id > 0) {
        if (!sse_feed(&r->sse, p, len, on_sse_event, r)) {
            r->too_big = true;
            return 0;
        }
        return r->done ? 0 : len;
    }
    if (!buf_append(&r->body, p, len)) {
        r->too_big = true;
        return 0;
    }
    return len;
}

static void header_value(const char *p, size_t len, size_t nlen, char *out, size_t outlen)
{
    const char *v = p + nlen + 1;
    size_t vlen = len - nlen - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    if (vlen < outlen)
        snprintf(out, outlen, "%.*s", (int)vlen, v);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct reply *r = arg;
    size_t len = size * n;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        /* A new response (after a 100 Continue, say): forget the previous one's headers. */
        r->ctype[0] = r->www_auth[0] = r->session[0] = '\0';
        return len;
    }
    const char *colon = memchr(p, ':', len);
    if (colon == NULL)
        return len;
    size_t nlen = (size_t)(colon - p);
    if (nlen == 12 && strncasecmp(p, "Content-Type", 12) == 0)
        header_value(p, len, nlen, r->ctype, sizeof r->ctype);
    else if (nlen == 16 && strncasecmp(p, "WWW-Authenticate", 16) == 0)
        header_value(p, len, nlen, r->www_auth, sizeof r->www_auth);
    else if (nlen == 14 && strncasecmp(p, "Mcp-Session-Id", 14) == 0) {
        header_value(p, len, nlen, r->session, sizeof r->session);
        for (const char *c = r->session; *c; c++)
            if (*c < 0x21 || *c > 0x7e) {
                r->session[0] = '\0'; /* not a valid session id: never echo it back */
                break;
            }
    }
    return len;
}

static void reply_cleanup(struct reply *r)
{
    buf_cleanup(&r->body);
    sse_cleanup(&r->sse);
    json_decref(r->msg);
    r->msg = NULL;
}

/* Frees a header list after wiping it: one of its strings carries the token. */
static void wipe_headers(struct curl_slist *h)
{
    for (struct curl_slist *i = h; i; i = i->next)
        explicit_bzero(i->data, strlen(i->data));
    curl_slist_free_all(h);
}

static void request(struct smoke *s, const char *method, const char *url, const char *body,
                    size_t len, int flags, json_int_t want_id, struct reply *r)
{
    struct curl_slist *h = NULL;
    char line[400];
    CURL *e = s->curl;

    memset(r, 0, sizeof *r);
    buf_init(&r->body, ANSWER_MAX);
    sse_init(&r->sse, ANSWER_MAX);
    r->want_id = want_id;
    curl_easy_reset(e); /* keeps the connection for the next request */
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "hermes-mcp-smoke/" HM_VERSION);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     s->timeout_s < 10 ? s->timeout_s * 1000 : 10000L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, s->timeout_s * 1000);
    if (s->cacert)
        curl_easy_setopt(e, CURLOPT_CAINFO, s->cacert);
    if (flags & H_AUTH) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", s->token);
        h = curl_slist_append(h, line);
        explicit_bzero(line, sizeof line);
    }
    if (flags & H_MCP) {
        h = curl_slist_append(h, "Accept: application/json, text/event-stream");
        h = curl_slist_append(h, "Content-Type: application/json");
        if (s->version[0]) {
            snprintf(line, sizeof line, "MCP-Protocol-Version: %s", s->version);
            h = curl_slist_append(h, line);
        }
        if (s->session[0]) {
            snprintf(line, sizeof line, "Mcp-Session-Id: %s", s->session);
            h = curl_slist_append(h, line);
        }
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (!strcmp(method, "POST")) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    r->rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->done && r->rc == CURLE_WRITE_ERROR)
        r->rc = CURLE_OK; /* we stopped reading because the answer was complete */
    /* A server may answer before it read the whole body (413): the status is what counts. */
    if (r->rc == CURLE_SEND_ERROR && r->status >= 400)
        r->rc = CURLE_OK;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    wipe_headers(h);
    if (r->rc == CURLE_OK && !r->is_sse && want_id > 0 && r->body.len > 0) {
        json_t *m = json_loadb(r->body.data, r->body.len, 0, NULL);
        json_t *mid = json_object_get(m, "id");
        if (json_is_integer(mid) && json_integer_value(mid) == want_id)
            r->msg = m;
        else
            json_decref(m);
    }
}

/* The transport problem of r as one line, or NULL when the exchange completed. */
static const char *transport_error(struct smoke *s, struct reply *r, char *out, size_t outlen)
{
    if (r->too_big) {
        snprintf(out, outlen, "the answer is larger than %d MiB", ANSWER_MAX / (1024 * 1024));
        return out;
    }
    if (r->rc == CURLE_OK)
        return NULL;
    const char *msg = r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->rc);
    clean_text(s, msg, strlen(msg), out, outlen);
    return out;
}

/* A short excerpt of an error answer: its "message" when it is JSON, else its first bytes. */
static void answer_excerpt(struct smoke *s, struct reply *r, char *out, size_t outlen)
{
    json_t *j = r->body.len ? json_loadb(r->body.data, r->body.len, 0, NULL) : NULL;
    json_t *m = json_object_get(j, "message");
    if (!json_is_string(m))
        m = json_object_get(json_object_get(j, "error"), "message");
    if (json_is_string(m))
        clean_text(s, json_string_value(m), json_string_length(m), out,
                   outlen < 160 ? outlen : 160);
    else if (r->body.len)
        clean_text(s, r->body.data, r->body.len, out, outlen < 120 ? outlen : 120);
    else
        snprintf(out, outlen, "empty body");
    json_decref(j);
}

/* What to do about an unexpected HTTP status on /mcp. */
static void status_fix(struct smoke *s, long status, char *out, size_t outlen)
{
    if (status == 401 && strcmp(s->token_source, s->env_file) != 0)
        snprintf(out, outlen,
                 "the token in %.200s is not one this server accepts (expired, revoked, or "
                 "another server's); give a current one",
                 s->token_source);
    else if (status == 401)
        snprintf(out, outlen,
                 "the token in %s is not the server's; point --env-file at the env file "
                 "'hermes-mcp serve' reads (after 'token gen' restart the server, or use "
                 "'token rotate')",
                 s->env_file);
    else if (status == 403)
        snprintf(out, outlen,
                 "the server refuses this Host or Origin; add the public host name "
                 "to MCP_PUBLIC_HOSTS in the server's env file");
    else if (status == 404)
        snprintf(out, outlen,
                 "nothing serves /mcp there; --base should be the server's root URL, "
                 "for example http://127.0.0.1:8765");
    else if (status == 429)
        snprintf(out, outlen,
                 "rate limited; wait a minute, or raise RATE_LIMIT_PER_MIN in the "
                 "server's env file");
    else if (status >= 500)
        snprintf(out, outlen,
                 "the server or a tunnel in front of it failed; check that "
                 "hermes-mcp is running and read its log");
    else
        snprintf(out, outlen, "the server refused the request; read its log");
}

/* Sends one JSON-RPC request and returns its "result" object (new reference), or NULL with
 * s->why and s->fix set. params is stolen. */
static json_t *rpc(struct smoke *s, const char *method, json_t *params)
{
    struct reply r;
    char terr[400], ex[200];
    json_int_t id = ++s->next_id;
    json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
    json_t *result = NULL;

    if (params)
        json_object_set_new(req, "params", params);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    request(s, "POST", s->mcp_url, body, strlen(body), H_AUTH | H_MCP, id, &r);
    free(body);
    if (transport_error(s, &r, terr, sizeof terr)) {
        if (r.rc == CURLE_OPERATION_TIMEDOUT)
            problem(s, "raise --timeout, or check the agent and the server's log",
                    "no answer within %ld s", s->timeout_s);
        else
            problem(s, "is hermes-mcp still running? check --base", "%s", terr);
        goto out;
    }
    if (r.status != 200) {
        answer_excerpt(s, &r, ex, sizeof ex);
        status_fix(s, r.status, s->fix, sizeof s->fix);
        snprintf(s->why, sizeof s->why, "HTTP %ld (%s)", r.status, ex);
        goto out;
    }
    if (r.msg == NULL) {
        char ct[61];
        problem(s, "check that --base points at hermes-mcp and not at another service",
                "no JSON-RPC response with id %lld in the answer (Content-Type '%s')",
                (long long)id, cut(s, r.ctype, ct, sizeof ct));
        goto out;
    }
    json_t *err = json_object_get(r.msg, "error");
    if (err) {
        json_t *m = json_object_get(err, "message");
        const char *msg = json_is_string(m) ? json_string_value(m) : "";
        clean_text(s, msg, strlen(msg), ex, sizeof ex);
        problem(s, "read the server's log; is --base a hermes-mcp of this version?",
                "JSON-RPC error %lld: %s",
                (long long)json_integer_value(json_object_get(err, "code")), ex);
        goto out;
    }
    result = json_object_get(r.msg, "result");
    if (!json_is_object(result)) {
        result = NULL;
        problem(s, "check that --base points at hermes-mcp", "the response has no result object");
        goto out;
    }
    json_incref(result);
    if (r.session[0] && !s->session[0])
        snprintf(s->session, sizeof s->session, "%s", r.session);
out:
    reply_cleanup(&r);
    return result;
}

/* Calls a tool. Returns its structured result (new reference; from the text content when the
 * server gave no structuredContent) and whether it is a tool error, or NULL with s->why. */
static json_t *call_tool(struct smoke *s, const char *name, json_t *args, bool *is_error)
{
    json_t *res = rpc(s, "tools/call", json_pack("{s:s, s:o}", "name", name, "arguments", args));
    if (res == NULL)
        return NULL;
    *is_error = json_is_true(json_object_get(res, "isError"));
    json_t *sc = json_object_get(res, "structuredContent");
    if (json_is_object(sc)) {
        json_incref(sc);
    } else {
        json_t *text = json_object_get(json_array_get(json_object_get(res, "content"), 0), "text");
        sc = json_is_string(text) ? json_loads(json_string_value(text), 0, NULL) : NULL;
        if (!json_is_object(sc)) {
            json_decref(sc);
            sc = NULL;
            problem(s, "check that --base points at hermes-mcp of this version",
                    "the %s result carries no JSON object", name);
        }
    }
    json_decref(res);
    return sc;
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The "error: message" of a tool error, cleaned, into s->why. */
static void tool_error_why(struct smoke *s, const char *prefix, json_t *sc)
{
    char msg[300], code[41];
    const char *m = str(sc, "message");
    clean_text(s, m ? m : "", m ? strlen(m) : 0, msg, sizeof msg);
    snprintf(s->why, sizeof s->why, "%stool error %s: %s", prefix,
             cut(s, str(sc, "error") ? str(sc, "error") : "(no code)", code, sizeof code), msg);
}

/* ---- the checks ------------------------------------------------------------------------- */

/* Returns false when the server cannot be reached at all (the run stops there). */
static bool check_health(struct smoke *s)
{
    struct reply r;
    char terr[400], ex[200];
    const char *name = "GET /health";

    request(s, "GET", s->health_url, NULL, 0, 0, 0, &r);
    if (r.rc != CURLE_OK && !r.too_big) {
        transport_error(s, &r, terr, sizeof terr);
        problem(s,
                r.rc == CURLE_PEER_FAILED_VERIFICATION
                    ? "the certificate is not trusted; use the tunnel's public https URL, or "
                      "--cacert FILE for a private CA"
                    : "is hermes-mcp running? check --base",
                "cannot reach %s (%s)", s->base, terr);
        fail(s, name);
        reply_cleanup(&r);
        return false;
    }
    json_t *j = r.body.len ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
    if (r.too_big)
        problem(s, "check that --base points at hermes-mcp", "the answer is too large");
    else if (r.status != 200) {
        answer_excerpt(s, &r, ex, sizeof ex);
        snprintf(s->why, sizeof s->why, "HTTP %ld (%s)", r.status, ex);
        if (r.status >= 500) /* typical of a tunnel whose server behind it is down */
            status_fix(s, r.status, s->fix, sizeof s->fix);
        else
            snprintf(s->fix, sizeof s->fix,
                     "check --base: it should be the server's root URL, "
                     "for example http://127.0.0.1:8765");
    } else if (!json_is_object(j) || !str(j, "status") || strcmp(str(j, "status"), "ok") != 0)
        problem(s, "check that --base points at hermes-mcp and read its log",
                "the answer is not JSON with \"status\": \"ok\"");
    else {
        char ver[64];
        const char *v = str(j, "version");
        clean_text(s, v ? v : "?", v ? strlen(v) : 1, ver, sizeof ver);
        pass(s, name, "200, status ok, version %s", ver);
        json_decref(j);
        reply_cleanup(&r);
        return true;
    }
    fail(s, name);
    json_decref(j);
    reply_cleanup(&r);
    return true;
}

static void check_no_auth(struct smoke *s)
{
    struct reply r;
    char terr[400];
    const char *name = "POST /mcp without a token";
    char body[300];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":"
             "\"hermes-mcp-smoke\",\"version\":\"%s\"}}}",
             PROTOCOL_VERSION, HM_VERSION);
    request(s, "POST", s->mcp_url, body, strlen(body), H_MCP, 0, &r);
    if (transport_error(s, &r, terr, sizeof terr))
        problem(s, "is hermes-mcp still running? check --base", "%s", terr);
    else if (r.status >= 200 && r.status < 300)
        problem(s,
                "set MCP_AUTH_TOKEN in the server's env file (hermes-mcp token gen) and restart "
                "it; do not expose it until then",
                "HTTP %ld: the server answers without a token", r.status);
    else if (r.status != 401)
        problem(s, "check --base; a proxy in front of the server may be answering",
                "HTTP %ld, expected 401", r.status);
    else if (strncasecmp(r.www_auth, "Bearer", 6) != 0)
        problem(s, "make sure nothing between you and hermes-mcp strips WWW-Authenticate",
                "401 without a 'WWW-Authenticate: Bearer' header");
    else {
        pass(s, name, "401, WWW-Authenticate: Bearer");
        reply_cleanup(&r);
        return;
    }
    fail(s, name);
    reply_cleanup(&r);
}

/* Returns false when no session could be opened (the later checks cannot run). */
static bool check_initialize(struct smoke *s)
{
    const char *name = "initialize";
    json_t *res = rpc(s, "initialize",
                      json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", PROTOCOL_VERSION,
                                "capabilities", "clientInfo", "name", "hermes-mcp-smoke", "version",
                                HM_VERSION));
    if (res == NULL) {
        fail(s, name);
        return false;
    }
    const char *pv = str(res, "protocolVersion");
    json_t *info = json_object_get(res, "serverInfo");
    const char *sname = str(info, "name"), *sver = str(info, "version");
    bool ok = false;
    if (pv == NULL || !*pv || strlen(pv) >= sizeof s->version)
        problem(s, "check that --base points at an MCP server (hermes-mcp)",
                "the result has no protocolVersion");
    else if (sname == NULL)
        problem(s, "check that --base points at an MCP server (hermes-mcp)",
                "the result has no serverInfo.name");
    else {
        snprintf(s->version, sizeof s->version, "%s", pv);
        ok = true;
    }
    if (ok) {
        /* The handshake ends with notifications/initialized, answered 202 with no body. */
        struct reply r;
        char terr[400];
        static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        request(s, "POST", s->mcp_url, note, strlen(note), H_AUTH | H_MCP, 0, &r);
        if (transport_error(s, &r, terr, sizeof terr))
            ok = problem(s, "is hermes-mcp still running? check --base", "%s", terr);
        else if (r.status < 200 || r.status >= 300)
            ok = problem(s, "read the server's log", "notifications/initialized got HTTP %ld",
                         r.status);
        reply_cleanup(&r);
    }
    if (ok) {
        char n[80], v[40];
        clean_text(s, sname, strlen(sname), n, sizeof n);
        clean_text(s, sver ? sver : "?", sver ? strlen(sver) : 1, v, sizeof v);
        snprintf(s->server_name, sizeof s->server_name, "%s", n);
        snprintf(s->server_version, sizeof s->server_version, "%s", v);
        pass(s, name, "protocol %s, server %s %s, %s", s->version, n, v,
             s->session[0] ? "session issued" : "stateless");
    } else {
        fail(s, name);
    }
    json_decref(res);
    return ok;
}

static void check_tools(struct smoke *s)
{
    const char *name = "tools/list";
    bool seen[NTOOLS] = {false};
    size_t nextra = 0;
    char *cursor = NULL;

    for (int page = 0; page < 20; page++) {
        json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
        free(cursor);
        cursor = NULL;
        json_t *res = rpc(s, "tools/list", params);
        if (res == NULL) {
            fail(s, name);
            return;
        }
        json_t *tools = json_object_get(res, "tools"), *t;
        size_t i;
        if (!json_is_array(tools)) {
            json_decref(res);
            problem(s, "check that --base points at hermes-mcp", "the result has no tools array");
            fail(s, name);
            return;
        }
        json_array_foreach(tools, i, t)
        {
            const char *tn = str(t, "name");
            bool known = false;
            for (size_t k = 0; tn && k < NTOOLS; k++)
                if (strcmp(tn, expected_tools[k]) == 0)
                    seen[k] = known = true;
            for (size_t k = 0; tn && alias_tools[k]; k++)
                known = known || strcmp(tn, alias_tools[k]) == 0;
            if (!known)
                nextra++;
        }
        const char *next = str(res, "nextCursor");
        if (next && *next)
            cursor = xstrdup(next);
        json_decref(res);
        if (cursor == NULL)
            break;
    }
    free(cursor);
    char missing[400] = "";
    for (size_t k = 0; k < NTOOLS; k++)
        if (!seen[k])
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
                     *missing ? ", " : "", expected_tools[k]);
    /* The bridge tools must all be there; anything else is the gateway's (GATEWAY_FILE), whose
     * names serve already keeps apart from ours. */
    if (!*missing && nextra == 0) {
        pass(s, name, "the %zu bridge tools", NTOOLS);
    } else if (!*missing) {
        pass(s, name, "the %zu bridge tools and %zu more (gateway)", NTOOLS, nextra);
    } else {
        snprintf(s->why, sizeof s->why, "missing %s (%zu other tool%s listed)", missing, nextra,
                 nextra == 1 ? "" : "s");
        if (strcmp(s->server_name, "hermes-mcp") != 0)
            snprintf(s->fix, sizeof s->fix,
                     "--base answers as '%s', not hermes-mcp; point --base at hermes-mcp serve",
                     s->server_name);
        else if (strcmp(s->server_version, HM_VERSION) != 0)
            snprintf(s->fix, sizeof s->fix,
                     "the server runs hermes-mcp %s and this smoke is %s; restart the server "
                     "with this build, or run that version's smoke",
                     s->server_version, HM_VERSION);
        else
            snprintf(s->fix, sizeof s->fix,
                     "hermes-mcp %s lists every bridge tool to the owner token; check that "
                     "--env-file is this server's and read its log",
                     HM_VERSION);
        fail(s, name);
    }
}

static const char *task_fix(const char *code)
{
    if (code == NULL)
        return "read the server's log";
    if (!strcmp(code, toolerr_name(TE_AGENT_UNAVAILABLE)) ||
        !strcmp(code, toolerr_name(TE_UNKNOWN_AGENT)))
        return "start the Hermes agent and check HERMES_ENV_PATH (API_SERVER_HOST, "
               "API_SERVER_PORT, API_SERVER_KEY) in the server's env file";
    if (!strcmp(code, toolerr_name(TE_DUPLICATE_ID)))
        return "this --id was used for another task; leave --id out for a fresh one";
    if (!strcmp(code, toolerr_name(TE_BUSY)))
        return "a task with this id is still running; wait and run smoke again";
    return "read the server's log and the agent's log";
}

/* Returns true when the task completed (the result and files checks depend on it). */
static bool check_task(struct smoke *s)
{
    const char *name = "hermes_task sync";
    bool is_error = false;
    json_t *sc = call_tool(
        s, "hermes_task",
        json_pack("{s:s, s:s, s:s}", "task", TASK_TEXT, "mode", "sync", "id", s->id), &is_error);
    bool ok = false;
    if (sc == NULL) {
        fail(s, name);
        return false;
    }
    const char *status = str(sc, "status"), *id = str(sc, "id");
    if (is_error) {
        tool_error_why(s, "", sc);
        snprintf(s->fix, sizeof s->fix, "%s", task_fix(str(sc, "error")));
    } else if (id == NULL || strcmp(id, s->id) != 0) {
        char got[131];
        problem(s, "upgrade hermes-mcp; the task id must come back unchanged",
                "the result is for id '%s', not '%s'", cut(s, id, got, sizeof got), s->id);
    } else if (status == NULL || strcmp(status, "completed") != 0) {
        char sum[300], st[41];
        const char *m = str(sc, "summary");
        clean_text(s, m ? m : "", m ? strlen(m) : 0, sum, sizeof sum);
        problem(s, "the agent did not complete the task; read the agent's log", "status %s: %s",
                cut(s, status, st, sizeof st), sum);
    } else {
        ok = true;
        pass(s, name, "task %s completed", s->id);
    }
    if (!ok)
        fail(s, name);
    json_decref(sc);
    return ok;
}

static void check_result(struct smoke *s)
{
    const char *name = "hermes_result";
    bool is_error = false;
    json_t *sc = call_tool(s, "hermes_result", json_pack("{s:s}", "id", s->id), &is_error);
    if (sc == NULL) {
        fail(s, name);
        return;
    }
    const char *id = str(sc, "id"), *status = str(sc, "status");
    if (is_error) {
        tool_error_why(s, "", sc);
        snprintf(s->fix, sizeof s->fix, "check TASKS_DIR in the server's env file is writable");
        fail(s, name);
    } else if (id == NULL || strcmp(id, s->id) != 0 || status == NULL ||
               strcmp(status, "completed") != 0) {
        char got[131], st[41];
        problem(s, "upgrade hermes-mcp; the stored result must be the task's",
                "got id '%s' status '%s', expected '%s' completed", cut(s, id, got, sizeof got),
                cut(s, status, st, sizeof st), s->id);
        fail(s, name);
    } else {
        pass(s, name, "the stored result of %s (completed)", s->id);
    }
    json_decref(sc);
}

static void check_files(struct smoke *s)
{
    const char *name = "hermes_files";
    bool is_error = false, has_result = false;
    json_t *sc = call_tool(s, "hermes_files", json_pack("{s:s}", "id", s->id), &is_error);
    if (sc == NULL) {
        fail(s, name);
        return;
    }
    json_t *entries = json_object_get(sc, "entries"), *e;
    size_t i;
    json_array_foreach(entries, i, e)
    {
        if (str(e, "path") && strcmp(str(e, "path"), "result.json") == 0)
            has_result = true;
    }
    if (is_error) {
        tool_error_why(s, "", sc);
        snprintf(s->fix, sizeof s->fix, "check TASKS_DIR in the server's env file is readable");
        fail(s, name);
    } else if (!json_is_array(entries) || !has_result) {
        problem(s, "upgrade hermes-mcp; the listing must show the task's files",
                "the listing has no entries array with result.json");
        fail(s, name);
    } else {
        pass(s, name, "%zu entries, result.json among them", json_array_size(entries));
    }
    json_decref(sc);
}

static void check_rejects(struct smoke *s, const char *name, const char *path)
{
    bool is_error = false;
    json_t *sc =
        call_tool(s, "hermes_files", json_pack("{s:s, s:s}", "id", s->id, "path", path), &is_error);
    if (sc == NULL) {
        fail(s, name);
        return;
    }
    const char *code = str(sc, "error");
    if (!is_error) {
        problem(s, "do not expose this server: upgrade hermes-mcp",
                "the path '%s' was accepted (isError false): files outside the task are "
                "readable",
                path);
        fail(s, name);
    } else if (code == NULL || strcmp(code, toolerr_name(TE_INVALID_ARGUMENTS)) != 0) {
        char got[41];
        problem(s, "upgrade hermes-mcp; paths must be checked before the file system is touched",
                "'%s' was refused with '%s', expected invalid_arguments", path,
                cut(s, code ? code : "(no code)", got, sizeof got));
        fail(s, name);
    } else {
        pass(s, name, "'%s' refused with invalid_arguments", path);
    }
    json_decref(sc);
}

static void check_body_limit(struct smoke *s)
{
    const char *name = "body limit";
    struct reply r;
    char terr[400];
    /* A valid ping whose padding takes it one byte past 256 KiB: harmless if accepted. */
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":999999,\"method\":\"ping\",\"params\":"
                               "{\"pad\":\"";
    static const char tail[] = "\"}}";
    size_t len = BODY_LIMIT + 1, pad = len - (sizeof head - 1) - (sizeof tail - 1);
    char *body = xmalloc(len + 1);
    memcpy(body, head, sizeof head - 1);
    memset(body + sizeof head - 1, 'a', pad);
    memcpy(body + sizeof head - 1 + pad, tail, sizeof tail);
    request(s, "POST", s->mcp_url, body, len, H_AUTH | H_MCP, 0, &r);
    free(body);
    if (transport_error(s, &r, terr, sizeof terr)) {
        problem(s, "is hermes-mcp still running? check --base", "%s", terr);
        fail(s, name);
    } else if (r.status != 413) {
        problem(s,
                r.status >= 200 && r.status < 300
                    ? "upgrade hermes-mcp; requests over 256 KiB must be refused"
                    : "check --base; a proxy in front of the server may be answering",
                "a %zu-byte body got HTTP %ld, expected 413", len, r.status);
        fail(s, name);
    } else {
        pass(s, name, "a %zu-byte body got 413", len);
    }
    reply_cleanup(&r);
}

/* Ends the session politely (MCP_SESSIONS=1); not a check. */
static void close_session(struct smoke *s)
{
    struct reply r;
    if (!s->session[0])
        return;
    request(s, "DELETE", s->mcp_url, NULL, 0, H_AUTH | H_MCP, 0, &r);
    reply_cleanup(&r);
}

/* ---- command line ----------------------------------------------------------------------- */

static bool parse_args(struct smoke *s, int argc, char **argv, const char **base, int *help)
{
    const char *id = NULL, *timeout = NULL;
    *help = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = !strcmp(a, "--base")       ? base
                           : !strcmp(a, "--id")       ? &id
                           : !strcmp(a, "--env-file") ? &s->env_file
                           : !strcmp(a, "--token-file") ? &s->token_file
                           : !strcmp(a, "--timeout")  ? &timeout
                           : !strcmp(a, "--cacert")   ? &s->cacert
                                                      : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return true;
        }
        if (dst && i + 1 < argc) {
            *dst = argv[++i];
            continue;
        }
        const char *eq = strchr(a, '=');
        if (eq && !strncmp(a, "--base=", 7))
            *base = eq + 1;
        else if (eq && !strncmp(a, "--id=", 5))
            id = eq + 1;
        else if (eq && !strncmp(a, "--env-file=", 11))
            s->env_file = eq + 1;
        else if (eq && !strncmp(a, "--token-file=", 13))
            s->token_file = eq + 1;
        else if (eq && !strncmp(a, "--timeout=", 10))
            timeout = eq + 1;
        else if (eq && !strncmp(a, "--cacert=", 9))
            s->cacert = eq + 1;
        else {
            fprintf(stderr, "hermes-mcp smoke: %s '%s'; see hermes-mcp smoke --help\n",
                    dst ? "missing value after" : "unknown argument", a);
            return false;
        }
    }
    if (*base == NULL) {
        fprintf(stderr, "hermes-mcp smoke: --base URL is required, for example "
                        "hermes-mcp smoke --base http://127.0.0.1:8765\n");
        return false;
    }
    if (s->cacert && access(s->cacert, R_OK) != 0) {
        fprintf(stderr, "hermes-mcp smoke: cannot read --cacert %s: %s\n", s->cacert,
                strerror(errno));
        return false;
    }
    if (timeout) {
        char *end;
        errno = 0;
        long t = strtol(timeout, &end, 10);
        if (errno || end == timeout || *end || t < 1 || t > 3600) {
            fprintf(stderr, "hermes-mcp smoke: --timeout takes 1-3600 seconds\n");
            return false;
        }
        s->timeout_s = t;
    }
    if (id) {
        if (!taskpath_id_ok(id, strlen(id))) {
            fprintf(stderr, "hermes-mcp smoke: --id must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}\n");
            return false;
        }
        snprintf(s->id, sizeof s->id, "%s", id);
    } else {
        char rnd[9];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        if (!crypto_random_hex(rnd, 4))
            snprintf(rnd, sizeof rnd, "%08lx", (unsigned long)getpid());
        strftime(s->id, sizeof s->id, "smoke-%Y%m%d-%H%M%S-", &tm);
        strncat(s->id, rnd, sizeof s->id - strlen(s->id) - 1);
    }
    return true;
}

int smoke_main(int argc, char **argv)
{
    struct smoke s = {.env_file = ".env", .timeout_s = 120};
    const char *base = NULL;
    char err[1024];
    int help;

    if (!parse_args(&s, argc, argv, &base, &help))
        return EXIT_USAGE;
    if (help) {
        fputs(smoke_usage, stdout);
        return 0;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "hermes-mcp smoke: libcurl failed to initialise\n");
        return EXIT_FAIL;
    }
    if (!parse_base(&s, base, err, sizeof err) || !read_token(&s, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp smoke: %s\n", err);
        curl_global_cleanup();
        return EXIT_USAGE;
    }
    s.curl = curl_easy_init();
    if (s.curl == NULL) {
        fprintf(stderr, "hermes-mcp smoke: libcurl failed to initialise\n");
        explicit_bzero(s.token, strlen(s.token));
        free(s.token);
        curl_global_cleanup();
        return EXIT_FAIL;
    }

    int rc = EXIT_FAIL;
    if (!check_health(&s))
        goto out; /* unreachable: that one line says it all */
    check_no_auth(&s);
    if (!check_initialize(&s)) {
        printf("smoke: stopped after initialize; %d passed, %d failed (%s)\n", s.passed, s.failed,
               s.base);
        goto out;
    }
    check_tools(&s);
    if (check_task(&s)) {
        check_result(&s);
        check_files(&s);
    } else {
        skip(&s, "hermes_result", "needs the completed sync task");
        skip(&s, "hermes_files", "needs the completed sync task");
    }
    check_rejects(&s, "traversal", "../../etc/passwd");
    check_rejects(&s, "absolute path", "/etc/passwd");
    check_body_limit(&s);
    close_session(&s);
    printf("smoke: %d passed, %d failed%s (%s, task id %s)\n", s.passed, s.failed + s.skipped,
           s.skipped ? " or skipped" : "", s.base, s.id);
    rc = s.failed || s.skipped ? EXIT_FAIL : 0;
out:
    fflush(stdout);
    curl_easy_cleanup(s.curl);
    curl_global_cleanup();
    if (s.token) {
        explicit_bzero(s.token, strlen(s.token));
        free(s.token);
    }
    return rc;
}
