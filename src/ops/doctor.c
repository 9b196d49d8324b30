/* doctor.c — `hermes-mcp doctor`: the setup checked with the code serve itself uses (config.c,
 * agentcfg.c, registry.c, contract.c), then every agent probed over HTTP (libcurl's easy API:
 * this is a short-lived command, not the server loop).
 *
 * Messages are built from paths, key names and status codes, never from a secret's value. As a
 * second line of defence the lines are held until every secret has been read (the token, the
 * agents' keys) and each is scrubbed of them before it is printed. */
#include "doctor.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentcfg.h"
#include "buf.h"
#include "config.h"
#include "contract.h"
#include "ctlclient.h"
#include "gwload.h"
#include "authserver.h"
#include "mem.h"
#include "passphrase.h"
#include "principal.h"
#include "report.h"
#include "tokenstore.h"
#include "utf8.h"

#define PROBE_BODY_MAX (256 * 1024)
#define SECRET_MIN 6 /* shorter values are not scrubbed: they would mangle ordinary words */
#define LINES_MAX 256

const char doctor_usage[] =
    "usage: hermes-mcp doctor [--env-file FILE] [--no-probe] [--timeout SECONDS]\n"
    "\n"
    "Checks a setup the way 'serve' would use it and prints one line per check: ok, warn, or\n"
    "FAIL with the fix. It checks the env file (exists, mode 600, settings valid), the token's\n"
    "form, TOKENS_FILE, the OAuth token store, clients file and consent passphrase (parse,\n"
    "mode 600; no passphrase: warn), TASKS_DIR (writable), the\n"
    "contract file (HERMES_CONTRACT_PATH), the agents registry\n"
    "(AGENTS_FILE or ~/.hermes/agents.yaml: parses, mode 600, base URLs allowed), the agent env\n"
    "file (HERMES_ENV_PATH), each agent's key (key_file, key_env or API_SERVER_KEY), that\n"
    "MCP_HOST:MCP_PORT is free, the gateway file (GATEWAY_FILE, offline; and whether the server\n"
    "running with FILE reloaded it and needs a restart to apply it), and probes each\n"
    "agent's /health and, with its key, /v1/models. It never prints a secret.\n"
    "\n"
    "  --env-file FILE   the env file serve would read (default ./.env)\n"
    "  --no-probe        do not contact the agents\n"
    "  --timeout SECONDS how long each probe may take (1-300, default 5)\n"
    "\n"
    "Exit codes: 0 nothing failed (warnings allowed), 1 a check failed, 2 usage error.\n";

enum level { OK, WARN, FAIL };

struct line {
    enum level level;
    char *text;
};

struct doctor {
    const char *env_path;
    bool probe;
    long timeout_ms;
    unsigned counts[3];
    struct line lines[LINES_MAX];
    size_t nlines;
    struct report rep; /* the token, API_SERVER_KEY, the registry agents' keys */
};

/* An agent as serve would use it, and where its key comes from (for the fix). */
struct agent_check {
    const char *name;
    const char *url;
    char *key;
    char key_fix[PATH_MAX + 200]; /* what to check when the agent rejects the key */
    char net_fix[PATH_MAX + 200]; /* what to do when it cannot be reached */
};

static void secret_add(struct doctor *d, const char *s)
{
    report_secret(&d->rep, s);
}

static void check(struct doctor *d, enum level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void check(struct doctor *d, enum level level, const char *fmt, ...)
{
    va_list ap;
    char text[2048];

    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    d->counts[level]++;
    if (d->nlines < LINES_MAX)
        d->lines[d->nlines++] = (struct line){level, xstrdup(text)};
}

static void print_lines(struct doctor *d)
{
    static const char *const tag[] = {"ok  ", "warn", "FAIL"};
    for (size_t i = 0; i < d->nlines; i++) {
        char *out = report_scrub(&d->rep, d->lines[i].text, strlen(d->lines[i].text));
        utf8_clean(out); /* one line, whatever a path holds */
        printf("%s  %s\n", tag[d->lines[i].level], out);
        wipe_free(out);
        wipe_free(d->lines[i].text);
    }
    d->nlines = 0;
}

static const char *get(json_t *env, const char *key)
{
    return json_string_value(json_object_get(env, key));
}

/* ---------- the env file, the token, the settings ---------- */

/* Returns the file's settings (an empty object when it cannot be used). */
static json_t *check_env_file(struct doctor *d)
{
    const char *path = d->env_path;
    struct stat st;
    char err[PATH_MAX + 200];
    unsigned mode = 0;

    if (stat(path, &st) < 0 && errno == ENOENT) {
        check(d, FAIL, "env file %s not found: create it with: hermes-mcp token gen --env-file %s",
              path, path);
        return json_object();
    }
    json_t *env = config_read_env(path, &mode, err, sizeof err);
    if (env == NULL) {
        check(d, FAIL, "%s: fix the file", err);
        return json_object();
    }
    secret_add(d, get(env, "MCP_AUTH_TOKEN"));
    secret_add(d, get(env, "OAUTH_CLIENT_SECRET"));
    if (mode & 077)
        check(d, FAIL, "env file %s is mode %03o, readable by others: run chmod 600 %s", path,
              mode & 0777, path);
    else
        check(d, OK, "env file %s (mode %03o)", path, mode & 0777);
    return env;
}

static void check_token(struct doctor *d, json_t *env)
{
    const char *t = get(env, "MCP_AUTH_TOKEN");
    const char *issuer = get(env, "OAUTH_ISSUER_URL"), *tokens = get(env, "TOKENS_FILE");
    if (t == NULL && issuer && *issuer)
        /* Seed 002's setup: the consent passphrase is checked with the OAuth files below. */
        check(d, OK, "no MCP_AUTH_TOKEN: OAuth only (OAUTH_ISSUER_URL); no static owner token, "
                     "the owner allows clients with the consent passphrase");
    else if (t == NULL && tokens && *tokens)
        check(d, OK, "no MCP_AUTH_TOKEN: only the TOKENS_FILE principals can authenticate");
    else if (t == NULL)
        check(d, FAIL, "no MCP_AUTH_TOKEN in %s: run hermes-mcp token gen --env-file %s",
              d->env_path, d->env_path);
    else if (!config_token_ok(t))
        check(d, FAIL,
              "MCP_AUTH_TOKEN in %s is not 64 hexadecimal characters: run hermes-mcp token gen "
              "--env-file %s",
              d->env_path, d->env_path);
    else
        check(d, OK, "MCP_AUTH_TOKEN is set (64 hexadecimal characters)");
}

/* Fills cfg as serve would. When a setting is invalid, cfg still names the files to check. */
static bool check_settings(struct doctor *d, json_t *env, struct config *cfg)
{
    char err[PATH_MAX + 200];
    json_t *copy = json_copy(env);

    json_object_del(copy, "MCP_AUTH_TOKEN"); /* it has its own line */
    bool ok = config_from_env(cfg, copy, d->env_path, err, sizeof err);
    json_decref(copy);
    if (ok) { /* whatever its value: as config_from_env would have set both */
        cfg->owner_token = get(env, "MCP_AUTH_TOKEN") != NULL;
        cfg->auth = cfg->owner_token || cfg->tokens_file || cfg->oauth_issuer;
    }
    if (ok) {
        if (config_is_loopback(cfg->host))
            check(d, OK, "settings valid (serve listens on %s:%u)", cfg->host, cfg->port);
        else
            check(d, WARN,
                  "settings valid, but MCP_HOST=%s listens beyond loopback: anyone who can "
                  "reach it is one token away from your agent; prefer 127.0.0.1 behind a tunnel",
                  cfg->host);
        return true;
    }
    check(d, FAIL, "settings in %s: %s", d->env_path, err);
    static const char *const paths[] = {"HERMES_ENV_PATH", "TASKS_DIR", "HERMES_CONTRACT_PATH",
                                        "AGENTS_FILE"};
    json_t *only = json_object();
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        if (json_object_get(env, paths[i]))
            json_object_set(only, paths[i], json_object_get(env, paths[i]));
    if (!config_from_env(cfg, only, d->env_path, err, sizeof err))
        memset(cfg, 0, sizeof *cfg); /* not reached: paths are never invalid */
    json_decref(only);
    return false;
}

static void gateway_lint(enum gwlint_level level, const char *line, void *arg)
{
    if (level == GWLINT_ERROR)
        check(arg, FAIL, "%s", line);
    else
        check(arg, level == GWLINT_WARN ? WARN : OK, "gateway file: %s", line);
}

/* The gateway file, offline: what `gateway check` validates (starting upstreams is not ours),
 * with serve's own lint (gwload_lint), so doctor fails where serve would refuse. */
static void check_gateway(struct doctor *d, const struct config *cfg, json_t *env)
{
    struct gwfile gw;
    char err[1024];
    if (cfg->gateway_file == NULL)
        return;
    if (!gwload_file(cfg->gateway_file, env, &gw, err, sizeof err)) {
        check(d, FAIL, "%s: fix it (hermes-mcp gateway check shows the upstreams)", err);
        return;
    }
    size_t deny = 0;
    for (size_t i = 0; i < gw.nup; i++)
        deny += !gw.up[i].include && !gw.up[i].exclude;
    if (deny)
        check(d, WARN, "gateway file %s: %zu upstream%s, %zu with no include/exclude (exposes "
                       "nothing: default deny)",
              cfg->gateway_file, gw.nup, gw.nup == 1 ? "" : "s", deny);
    else
        check(d, OK, "gateway file %s: %zu upstream%s", cfg->gateway_file, gw.nup,
              gw.nup == 1 ? "" : "s");
    gwload_lint(&gw, cfg->gateway_file, cfg->call_timeout_ms, gateway_lint, d);
    gwfile_cleanup(&gw);
    char *waiting = ctlclient_restart_needed(d->env_path);
    if (waiting)
        check(d, WARN, "gateway file %s: the running server reloaded it but cannot apply all of "
                       "it: restart needed (%s)",
              cfg->gateway_file, waiting);
    free(waiting);
}

/* ---------- files: TASKS_DIR, the contract ---------- */

static void check_tasks_dir(struct doctor *d, const struct config *cfg)
{
    const char *dir = cfg->tasks_dir ? cfg->tasks_dir : "tasks";
    struct stat st;

    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            check(d, FAIL, "TASKS_DIR %s is not a directory: point TASKS_DIR at a directory", dir);
            return;
        }
        /* access() is not enough: root passes it, a read-only mount does not show. */
        char *probe = xasprintf("%s/.doctor-XXXXXX", dir);
        int fd = mkstemp(probe);
        if (fd < 0) {
            check(d, FAIL,
                  "TASKS_DIR %s is not writable (%s): give the user serve runs as write access "
                  "(chown/chmod u+rwx) or set TASKS_DIR",
                  dir, strerror(errno));
        } else {
            close(fd);
            unlink(probe);
            check(d, OK, "TASKS_DIR %s is writable", dir);
        }
        free(probe);
        return;
    }
    if (errno != ENOENT) {
        check(d, FAIL, "TASKS_DIR %s: %s: set TASKS_DIR to a directory serve can write", dir,
              strerror(errno));
        return;
    }
    /* serve creates it (mode 700); the nearest existing ancestor must allow that. */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    for (;;) {
        char *slash = strrchr(parent, '/');
        while (slash && slash > parent && slash[1] == '\0') { /* trailing slashes */
            *slash = '\0';
            slash = strrchr(parent, '/');
        }
        if (slash == NULL)
            snprintf(parent, sizeof parent, ".");
        else if (slash == parent)
            parent[1] = '\0';
        else
            *slash = '\0';
        if (stat(parent, &st) == 0)
            break;
        if (errno != ENOENT || strcmp(parent, ".") == 0 || strcmp(parent, "/") == 0) {
            check(d, FAIL, "TASKS_DIR %s cannot be created: %s: %s", dir, parent, strerror(errno));
            return;
        }
    }
    if (!S_ISDIR(st.st_mode))
        check(d, FAIL, "TASKS_DIR %s cannot be created: %s is not a directory: fix TASKS_DIR", dir,
              parent);
    else if (access(parent, W_OK | X_OK) != 0)
        check(d, FAIL,
              "TASKS_DIR %s cannot be created in %s (%s): fix the permissions or set TASKS_DIR",
              dir, parent, strerror(errno));
    else
        check(d, OK, "TASKS_DIR %s does not exist yet; serve creates it (mode 700)", dir);
}

static void check_contract(struct doctor *d, const struct config *cfg)
{
    const char *path = cfg->contract_path;
    static const char unset[] = "or unset HERMES_CONTRACT_PATH to use the built-in contract";
    struct stat st;
    char why[100];

    if (path == NULL) {
        check(d, OK, "contract: the built-in one (HERMES_CONTRACT_PATH is not set)");
        return;
    }
    /* O_NONBLOCK: a FIFO would otherwise block the open until a writer comes. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        check(d, FAIL, "contract file %s (HERMES_CONTRACT_PATH): %s: fix the path, %s", path,
              strerror(errno), unset);
        return;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        check(d, FAIL, "contract file %s is not a regular file: fix HERMES_CONTRACT_PATH, %s", path,
              unset);
        close(fd);
        return;
    }
    /* One byte past the cap is enough to know it is too big. */
    size_t cap = CONTRACT_FILE_MAX + 1, n = 0;
    char *text = xmalloc(cap);
    int read_errno = 0;
    while (n < cap) {
        ssize_t r = read(fd, text + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            read_errno = errno;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (read_errno)
        check(d, FAIL, "contract file %s cannot be read (%s): fix it, %s", path,
              strerror(read_errno), unset);
    else if (!contract_text_ok(text, n, why, sizeof why))
        check(d, FAIL, "contract file %s: %s; serve would use the built-in one: fix the file, %s",
              path, why, unset);
    else
        check(d, OK, "contract file %s (%zu bytes)", path, n);
    free(text);
}

/* TOKENS_FILE and, with OAUTH_ISSUER_URL, the OAuth token store: serve refuses to start on
 * either when it is unsafe or unclear, so doctor says so first. */
static void check_credentials_files(struct doctor *d, const struct config *cfg)
{
    char err[800];
    if (cfg->tokens_file) {
        struct principals *p = principals_load(NULL, cfg->tokens_file, err, sizeof err);
        if (p == NULL) {
            check(d, FAIL, "%s", err);
        } else {
            check(d, OK, "TOKENS_FILE %s: %zu principal%s", cfg->tokens_file, p->n,
                  p->n == 1 ? "" : "s");
            principals_unref(p);
        }
    }
    if (cfg->oauth_issuer) {
        struct tokenstore *ts = tokenstore_open(cfg->oauth_store, err, sizeof err);
        if (ts == NULL) {
            check(d, FAIL, "%s", err);
        } else {
            check(d, OK, "OAuth token store %s: %zu token%s", cfg->oauth_store,
                  tokenstore_count(ts), tokenstore_count(ts) == 1 ? "" : "s");
            tokenstore_free(ts);
        }
        /* The owner's consent passphrase: without it no OAuth client can be allowed (a WARN:
         * bearer clients still work); a file serve would not read FAILs. */
        char line[PASSPHRASE_LINE_MAX], *pp = passphrase_path_beside(cfg->oauth_store);
        struct stat st;
        bool no_passphrase = lstat(pp, &st) != 0;
        if (no_passphrase && !cfg->owner_token && !cfg->tokens_file)
            check(d, FAIL, "no OAuth consent passphrase (%s) and no MCP_AUTH_TOKEN: nobody "
                           "can sign in; run: hermes-mcp oauth passwd --env-file %s",
                  pp, d->env_path);
        else if (no_passphrase)
            check(d, WARN, "no OAuth consent passphrase (%s): no OAuth client can be allowed; "
                           "run: hermes-mcp oauth passwd", pp);
        else if (!passphrase_load(pp, line, err, sizeof err))
            check(d, FAIL, "%s", err);
        else
            check(d, OK, "OAuth consent passphrase %s (scrypt)", pp);
        explicit_bzero(line, sizeof line);
        /* The registered clients, read as serve reads them. */
        char *clients = authserver_clients_path_beside(cfg->oauth_store);
        struct authserver_opts ao = {.issuer = cfg->oauth_issuer, .resource = "",
                                     .passphrase_path = pp, .clients_path = clients,
                                     .redirect_schemes = cfg->oauth_redirect_schemes};
        struct authserver *as = authserver_new(&ao, err, sizeof err);
        if (as == NULL)
            check(d, FAIL, "%s", err);
        else if (lstat(clients, &st) == 0)
            check(d, OK, "OAuth clients file %s: %zu client%s", clients,
                  authserver_client_count(as), authserver_client_count(as) == 1 ? "" : "s");
        authserver_free(as);
        free(clients);
        free(pp);
    }
}

/* ---------- the agents registry and the agent env file ---------- */

static json_t *check_registry(struct doctor *d, const struct config *cfg, const char *path)
{
    struct stat st;
    char err[400];

    if (stat(path, &st) < 0) {
        if (errno == ENOENT && cfg->agents_file == NULL)
            check(d, OK,
                  "no agents registry (%s does not exist): serve uses one default agent "
                  "from HERMES_ENV_PATH",
                  path);
        else if (errno == ENOENT)
            check(d, WARN,
                  "agents registry %s (AGENTS_FILE) does not exist: serve uses one default "
                  "agent from HERMES_ENV_PATH until it does",
                  path);
        else
            check(d, FAIL, "agents registry %s: %s: fix AGENTS_FILE in %s", path, strerror(errno),
                  d->env_path);
        return NULL;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 077)) {
        check(d, FAIL, "agents registry %s is mode %03o and serve refuses it: run chmod 600 %s",
              path, (unsigned)(st.st_mode & 0777), path);
        return NULL;
    }
    json_t *reg = agentcfg_registry_read(path, err, sizeof err);
    if (reg == NULL) {
        check(d, FAIL,
              "agents registry %s: %s; serve refuses it and uses the default agent: fix the file",
              path, err);
        return NULL;
    }
    size_t n = json_array_size(json_object_get(reg, "agents"));
    check(d, OK, "agents registry %s: %zu agent%s, default %s", path, n, n == 1 ? "" : "s",
          get(reg, "default"));
    return reg;
}

static void check_agent_env(struct doctor *d, const struct config *cfg, bool registry)
{
    const char *path = cfg->hermes_env_path;
    char err[PATH_MAX + 200];
    struct stat st;

    if (path == NULL) {
        if (registry)
            check(d, OK, "HERMES_ENV_PATH is not set (the agents come from the registry)");
        else
            check(d, WARN,
                  "HERMES_ENV_PATH is not set: the default agent is http://127.0.0.1:8642 with "
                  "no key; set HERMES_ENV_PATH in %s to the Hermes Agent's .env",
                  d->env_path);
        return;
    }
    json_t *env = agentcfg_dotenv_read(path, err, sizeof err);
    if (env == NULL) {
        check(d, FAIL, "agent env file (HERMES_ENV_PATH): %s: fix HERMES_ENV_PATH in %s", err,
              d->env_path);
        return;
    }
    const char *key = get(env, "API_SERVER_KEY");
    secret_add(d, key);
    if (registry)
        check(d, OK, "agent env file %s (not used while the registry is)", path);
    else if (key == NULL || !*key)
        check(d, WARN, "agent env file %s has no API_SERVER_KEY: the default agent has no key",
              path);
    else if (stat(path, &st) == 0 && (st.st_mode & 077))
        check(d, WARN, "agent env file %s is mode %03o and holds API_SERVER_KEY: run chmod 600 %s",
              path, (unsigned)(st.st_mode & 0777), path);
    else
        check(d, OK, "agent env file %s (API_SERVER_KEY set)", path);
    json_decref(env);
}

/* ---------- probes ---------- */

struct resp {
    CURLcode rc;
    long status;
    long os_errno;
    struct buf body;
};

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
    buf_append(arg, p, size * n); /* past the cap the rest is dropped */
    return size * n;
}

static void probe_get(const char *url, const char *key, long timeout_ms, struct resp *r)
{
    struct curl_slist *h = NULL;
    CURL *e = curl_easy_init();

    *r = (struct resp){.rc = CURLE_FAILED_INIT};
    buf_init(&r->body, PROBE_BODY_MAX);
    if (e == NULL)
        return;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (key) {
        char *auth = xasprintf("Authorization: Bearer %s", key);
        h = curl_slist_append(h, auth);
        wipe_free(auth);
    }
    h = curl_slist_append(h, "Accept: application/json");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    r->rc = curl_easy_perform(e);
    if (r->rc == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &r->os_errno);
    curl_easy_cleanup(e);
    for (struct curl_slist *s = h; s; s = s->next)
        memset(s->data, 0, strlen(s->data)); /* the key */
    curl_slist_free_all(h);
}

/* Why a request got no HTTP answer, in a few words. */
static void net_reason(const struct resp *r, long timeout_ms, char *out, size_t outlen)
{
    if (r->rc == CURLE_OPERATION_TIMEDOUT)
        snprintf(out, outlen, "no answer within %ld s", timeout_ms / 1000);
    else if (r->rc == CURLE_COULDNT_RESOLVE_HOST)
        snprintf(out, outlen, "its host name does not resolve");
    else if (r->os_errno == ECONNREFUSED)
        snprintf(out, outlen, "connection refused");
    else if (r->os_errno)
        snprintf(out, outlen, "%s", strerror((int)r->os_errno));
    else
        snprintf(out, outlen, "%s", curl_easy_strerror(r->rc));
}

static void probe_agent(struct doctor *d, const struct agent_check *a)
{
    struct resp r;
    char why[200];

    char *url = agentcfg_url(a->url, "/health");
    probe_get(url, NULL, d->timeout_ms, &r);
    free(url);
    buf_cleanup(&r.body);
    if (r.rc != CURLE_OK) {
        net_reason(&r, d->timeout_ms, why, sizeof why);
        check(d, FAIL, "agent %s at %s: %s: %s", a->name, a->url, why, a->net_fix);
        return;
    }
    if (r.status != 200) {
        check(d, FAIL,
              "agent %s at %s: /health answered HTTP %ld: is this the Hermes Agent's API "
              "server (API_SERVER_PORT)?",
              a->name, a->url, r.status);
        return;
    }
    if (a->key == NULL) {
        check(d, WARN, "agent %s at %s: /health ok; /v1/models not tried without a key", a->name,
              a->url);
        return;
    }
    url = agentcfg_url(a->url, "/v1/models");
    probe_get(url, a->key, d->timeout_ms, &r);
    free(url);
    if (r.rc != CURLE_OK) {
        net_reason(&r, d->timeout_ms, why, sizeof why);
        check(d, FAIL, "agent %s at %s: /v1/models: %s: %s", a->name, a->url, why, a->net_fix);
    } else if (r.status == 401 || r.status == 403) {
        check(d, FAIL, "agent %s at %s rejected the key (HTTP %ld on /v1/models): %s", a->name,
              a->url, r.status, a->key_fix);
    } else if (r.status != 200) {
        check(d, FAIL,
              "agent %s at %s: /v1/models answered HTTP %ld: is this the Hermes Agent's API "
              "server?",
              a->name, a->url, r.status);
    } else {
        json_t *models = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
        size_t n = json_array_size(json_object_get(models, "data"));
        json_decref(models);
        check(d, OK, "agent %s at %s: /health ok, /v1/models ok with its key (%zu model%s)",
              a->name, a->url, n, n == 1 ? "" : "s");
    }
    buf_cleanup(&r.body);
}

/* ---------- the agents and their keys ---------- */

static void check_registry_agent(struct doctor *d, json_t *o, const char *reg_path,
                                 json_t **env_cache)
{
    struct agent_check a = {.name = get(o, "name"), .url = get(o, "base_url")};
    const char *key_env = get(o, "key_env"), *key_file = get(o, "key_file");
    char why[200];

    snprintf(a.net_fix, sizeof a.net_fix, "start the agent or fix its base_url in %s", reg_path);
    if (key_env) {
        bool from_process = false;
        a.key = agentcfg_key_env(key_env, d->env_path, env_cache, &from_process);
        snprintf(a.key_fix, sizeof a.key_fix, "check %s against the agent's API_SERVER_KEY",
                 key_env);
        if (a.key == NULL)
            check(d, FAIL,
                  "agent %s: key_env %s is not set, neither in this environment nor in %s: add "
                  "%s=<the agent's API_SERVER_KEY> to %s",
                  a.name, key_env, d->env_path, key_env, d->env_path);
        else if (from_process)
            check(d, OK,
                  "agent %s: key from $%s in this shell's environment (serve needs it in its "
                  "own, or in %s)",
                  a.name, key_env, d->env_path);
        else
            check(d, OK, "agent %s: key from %s in %s", a.name, key_env, d->env_path);
    } else if (key_file) {
        a.key = agentcfg_key_file(key_file, why, sizeof why);
        snprintf(a.key_fix, sizeof a.key_fix,
                 "check key_file %s against the agent's "
                 "API_SERVER_KEY",
                 key_file);
        if (a.key == NULL)
            check(d, FAIL, "agent %s: key_file %s %s%s%s", a.name, key_file, why,
                  strchr(why, ';') ? "" : ": fix key_file in ", strchr(why, ';') ? "" : reg_path);
        else
            check(d, OK, "agent %s: key from key_file %s", a.name, key_file);
    } else {
        check(d, FAIL, "agent %s has no key: add key_file or key_env to its entry in %s", a.name,
              reg_path);
    }
    secret_add(d, a.key);
    if (d->probe)
        probe_agent(d, &a);
    wipe_free(a.key);
}

static void check_default_agent(struct doctor *d, const struct config *cfg)
{
    struct agent_check a = {.name = AGENTCFG_DEFAULT_NAME};
    char *url = NULL, err[PATH_MAX + 200];
    const char *path = cfg->hermes_env_path;

    json_t *env = path ? agentcfg_dotenv_read(path, err, sizeof err) : NULL;
    bool readable = path == NULL || env != NULL;
    agentcfg_default_agent(env, &url, &a.key);
    json_decref(env);
    char *seed_key = agentcfg_hermes_api_key(cfg->env_file); /* as the server takes it */
    if (seed_key) {
        wipe_free(a.key);
        a.key = seed_key;
    }
    a.url = url;
    if (path) {
        snprintf(a.key_fix, sizeof a.key_fix,
                 "check API_SERVER_KEY in %s (the agent reads it when it starts)", path);
        snprintf(a.net_fix, sizeof a.net_fix,
                 "start the Hermes Agent's API server or fix API_SERVER_HOST/API_SERVER_PORT "
                 "in %s",
                 path);
    } else {
        snprintf(a.key_fix, sizeof a.key_fix, "set HERMES_ENV_PATH in %s", d->env_path);
        snprintf(a.net_fix, sizeof a.net_fix,
                 "start the Hermes Agent's API server, or set HERMES_ENV_PATH in %s", d->env_path);
    }
    if (seed_key)
        snprintf(a.key_fix, sizeof a.key_fix,
                 "check HERMES_API_KEY in %s against the agent's API_SERVER_KEY", d->env_path);
    if (seed_key)
        check(d, OK, "agent %s (default): key from HERMES_API_KEY in %s", a.name, d->env_path);
    else if (a.key)
        check(d, OK, "agent %s (default): key from API_SERVER_KEY in %s", a.name, path);
    else if (path == NULL)
        check(d, FAIL,
              "agent %s (default): no key: set HERMES_ENV_PATH in %s to the Hermes Agent's .env "
              "(it holds API_SERVER_KEY)",
              a.name, d->env_path);
    else if (!readable)
        check(d, FAIL,
              "agent %s (default): no key, the agent env file cannot be read: fix "
              "HERMES_ENV_PATH in %s",
              a.name, d->env_path);
    else
        check(d, FAIL, "agent %s (default): no API_SERVER_KEY in %s: add the agent's API key",
              a.name, path);
    secret_add(d, a.key);
    if (d->probe)
        probe_agent(d, &a);
    wipe_free(a.key);
    free(url);
}

/* ---------- the port ---------- */

/* True when a hermes-mcp answers /health at hostport. */
static bool hermes_listening(const struct doctor *d, const char *hostport, char *version,
                             size_t vlen)
{
    struct resp r;
    char *url = xasprintf("http://%s/health", hostport);
    probe_get(url, NULL, d->timeout_ms < 3000 ? d->timeout_ms : 3000, &r);
    free(url);
    bool ours = false;
    if (r.rc == CURLE_OK && r.status == 200) {
        json_t *h = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
        const char *svc = get(h, "service");
        ours = svc && strcmp(svc, "hermes-mcp") == 0;
        snprintf(version, vlen, "%.40s", get(h, "version") ? get(h, "version") : "?");
        json_decref(h);
    }
    buf_cleanup(&r.body);
    return ours;
}

static void check_port(struct doctor *d, const struct config *cfg, bool settings_ok)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[16], hostport[300], version[48];
    int err = 0, one = 1;
    bool bound = false;

    if (!settings_ok) {
        check(d, WARN, "port not checked: fix the settings first");
        return;
    }
    if (cfg->port == 0) {
        check(d, OK, "MCP_PORT=0: serve picks a free port when it starts");
        return;
    }
    snprintf(portstr, sizeof portstr, "%u", cfg->port);
    bool v6 = strchr(cfg->host, ':') != NULL;
    snprintf(hostport, sizeof hostport, "%s%s%s:%u", v6 ? "[" : "", cfg->host, v6 ? "]" : "",
             cfg->port);
    int rc = getaddrinfo(cfg->host, portstr, &hints, &res);
    if (rc != 0) {
        check(d, FAIL, "MCP_HOST %s does not resolve (%s): fix MCP_HOST in %s", cfg->host,
              gai_strerror(rc), d->env_path);
        return;
    }
    /* As httpd.c opens its listener. */
    for (struct addrinfo *ai = res; ai && !bound; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        bound = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1) == 0;
        if (!bound)
            err = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (bound)
        check(d, OK, "port %s is free", hostport);
    else if (err == EADDRINUSE && hermes_listening(d, hostport, version, sizeof version))
        check(d, WARN,
              "port %s: a hermes-mcp (version %s) is already listening there; fine if it is "
              "this setup's server, else stop it or change MCP_PORT",
              hostport, version);
    else if (err == EADDRINUSE)
        check(d, FAIL, "port %s is in use by another program: stop it, or set MCP_PORT in %s",
              hostport, d->env_path);
    else if (err == EACCES)
        check(d, FAIL, "cannot listen on %s: %s: use an MCP_PORT above 1023", hostport,
              strerror(err));
    else if (err == EADDRNOTAVAIL)
        check(d, FAIL,
              "cannot listen on %s: MCP_HOST is not an address of this machine: fix "
              "MCP_HOST in %s",
              hostport, d->env_path);
    else
        check(d, FAIL, "cannot listen on %s: %s", hostport, strerror(err));
}

/* ---------- command line ---------- */

static bool parse_args(struct doctor *d, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--no-probe")) {
            d->probe = false;
            continue;
        }
        if ((!strcmp(a, "--env-file") || !strcmp(a, "--timeout")) && i + 1 < argc)
            v = argv[++i];
        else if (!strncmp(a, "--env-file=", 11) || !strncmp(a, "--timeout=", 10))
            v = strchr(a, '=') + 1;
        if (v && !strncmp(a, "--env-file", 10)) {
            d->env_path = v;
        } else if (v) {
            char *end;
            long s = strtol(v, &end, 10);
            if (end == v || *end || s < 1 || s > 300) {
                fprintf(stderr, "hermes-mcp: --timeout takes 1-300 seconds, not '%s'\n", v);
                return false;
            }
            d->timeout_ms = s * 1000;
        } else {
            fprintf(stderr, "hermes-mcp: unknown argument '%s'\n%s", a, doctor_usage);
            return false;
        }
    }
    return true;
}

int doctor_main(int argc, char **argv)
{
    struct doctor d = {.env_path = ".env", .probe = true, .timeout_ms = 5000};
    report_init(&d.rep, "[secret]", SECRET_MIN);
    struct config cfg;

    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(doctor_usage, stdout);
            return 0;
        }
    if (!parse_args(&d, argc, argv))
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);

    json_t *env = check_env_file(&d);
    check_token(&d, env);
    bool settings_ok = check_settings(&d, env, &cfg);
    check_gateway(&d, &cfg, env);
    json_decref(env);
    check_tasks_dir(&d, &cfg);
    check_contract(&d, &cfg);
    check_credentials_files(&d, &cfg);
    char *reg_path = agentcfg_registry_path(cfg.agents_file);
    json_t *reg = check_registry(&d, &cfg, reg_path);
    check_agent_env(&d, &cfg, reg != NULL);
    if (reg) {
        json_t *env_cache = NULL, *o;
        size_t i;
        json_array_foreach(json_object_get(reg, "agents"), i, o)
            check_registry_agent(&d, o, reg_path, &env_cache);
        json_decref(env_cache);
    } else {
        check_default_agent(&d, &cfg);
    }
    check_port(&d, &cfg, settings_ok);

    print_lines(&d);
    printf("doctor: %u ok, %u warning%s, %u failed%s\n", d.counts[OK], d.counts[WARN],
           d.counts[WARN] == 1 ? "" : "s", d.counts[FAIL],
           d.probe ? "" : " (agents not probed: --no-probe)");
    json_decref(reg);
    free(reg_path);
    config_cleanup(&cfg);
    report_cleanup(&d.rep);
    curl_global_cleanup();
    return d.counts[FAIL] ? 1 : 0;
}
