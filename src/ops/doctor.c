/* doctor.c — `hermes-mcp doctor`: the setup checked with the code serve itself uses (config.c,
 * agentfile.c, agentsyaml.c, contract.c), then every agent probed over HTTP (httpc's blocking
 * requests: this is a short-lived command, not the server loop).
 *
 * Messages are built from paths, key names and status codes, never from a secret's value. As a
 * second line of defence the lines are held until every secret has been read (the token, the
 * agents' keys) and each is scrubbed of them before it is printed. */
#include "doctor.h"
#include "doctor_internal.h"

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

#include "agentfile.h"
#include "authserver.h"
#include "buf.h"
#include "config.h"
#include "contract.h"
#include "ctlclient.h"
#include "dotenvfile.h"
#include "gwload.h"
#include "mem.h"
#include "oauthpgcli.h"
#include "oauthtokens.h"
#include "passphrase.h"
#include "principal.h"
#include "report.h"
#include "utf8.h"
#include "weburl.h"

#define SECRET_MIN 6 /* shorter values are not scrubbed: they would mangle ordinary words */

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

void doctor_secret(struct doctor *d, const char *s)
{
    report_secret(&d->rep, s);
}

void doctor_check(struct doctor *d, enum level level, const char *fmt, ...)
{
    va_list ap;
    char *text = NULL;

    /* Whole, not cut: a secret straddling a cut would keep its first part past the scrub
     * (print_lines cuts after scrubbing). */
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    d->counts[level]++;
    if (d->nlines < LINES_MAX)
        d->lines[d->nlines++] = (struct line){level, text ? text : xstrdup("(out of memory)")};
    else
        wipe_free(text);
}

static void print_lines(struct doctor *d)
{
    static const char *const tag[] = {"ok  ", "warn", "FAIL"};
    for (size_t i = 0; i < d->nlines; i++) {
        char out[2048];
        report_clean(&d->rep, d->lines[i].text, strlen(d->lines[i].text), out, sizeof out);
        utf8_clean(out); /* one line, whatever a path holds */
        printf("%s  %s\n", tag[d->lines[i].level], out);
        explicit_bzero(out, sizeof out);
        wipe_free(d->lines[i].text);
    }
    d->nlines = 0;
}

const char *doctor_get(json_t *env, const char *key)
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
        doctor_check(d, FAIL,
                     "env file %s not found: create it with: hermes-mcp token gen --env-file %s",
                     path, path);
        return json_object();
    }
    json_t *env = dotenvfile_read(path, &mode, err, sizeof err);
    if (env == NULL) {
        doctor_check(d, FAIL, "%s: fix the file", err);
        return json_object();
    }
    doctor_secret(d, doctor_get(env, "MCP_AUTH_TOKEN"));
    doctor_secret(d, doctor_get(env, "OAUTH_CLIENT_SECRET"));
    doctor_secret(d, doctor_get(env, "OIDC_CLIENT_SECRET"));
    doctor_secret(d, doctor_get(env, "OTEL_EXPORTER_OTLP_HEADERS"));
    if (mode & 077)
        doctor_check(d, FAIL, "env file %s is mode %03o, readable by others: run chmod 600 %s",
                     path, mode & 0777, path);
    else
        doctor_check(d, OK, "env file %s (mode %03o)", path, mode & 0777);
    return env;
}

static void check_token(struct doctor *d, json_t *env)
{
    const char *t = doctor_get(env, "MCP_AUTH_TOKEN");
    const char *issuer = doctor_get(env, "OAUTH_ISSUER_URL");
    const char *tokens = doctor_get(env, "TOKENS_FILE");
    if (t == NULL && issuer && *issuer)
        /* The Python server's setup: the consent passphrase is checked with the OAuth files
         * below. */
        doctor_check(d, OK,
                     "no MCP_AUTH_TOKEN: OAuth only (OAUTH_ISSUER_URL); no static owner token, "
                     "the owner allows clients with the consent passphrase");
    else if (t == NULL && tokens && *tokens)
        doctor_check(d, OK, "no MCP_AUTH_TOKEN: only the TOKENS_FILE principals can authenticate");
    else if (t == NULL)
        doctor_check(d, FAIL, "no MCP_AUTH_TOKEN in %s: run hermes-mcp token gen --env-file %s",
                     d->env_path, d->env_path);
    else if (!config_token_ok(t))
        doctor_check(d, FAIL,
                     "MCP_AUTH_TOKEN in %s is not 64 hexadecimal characters: run hermes-mcp token "
                     "gen --env-file %s",
                     d->env_path, d->env_path);
    else
        doctor_check(d, OK, "MCP_AUTH_TOKEN is set (64 hexadecimal characters)");
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
        cfg->owner_token = doctor_get(env, "MCP_AUTH_TOKEN") != NULL;
        cfg->auth = cfg->owner_token || cfg->tokens_file || cfg->oauth_issuer;
    }
    if (ok) {
        if (weburl_loopback_host(cfg->host))
            doctor_check(d, OK, "settings valid (serve listens on %s:%u)", cfg->host, cfg->port);
        else
            doctor_check(d, WARN,
                         "settings valid, but MCP_HOST=%s listens beyond loopback: anyone who can "
                         "reach it is one token away from your agent; prefer 127.0.0.1 behind a "
                         "tunnel",
                         cfg->host);
        return true;
    }
    doctor_check(d, FAIL, "settings in %s: %s", d->env_path, err);
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
        doctor_check(arg, FAIL, "%s", line);
    else
        doctor_check(arg, level == GWLINT_WARN ? WARN : OK, "gateway file: %s", line);
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
        doctor_check(d, FAIL, "%s: fix it (hermes-mcp gateway check shows the upstreams)", err);
        return;
    }
    size_t deny = 0;
    for (size_t i = 0; i < gw.nup; i++)
        deny += !gw.up[i].include && !gw.up[i].exclude;
    if (deny)
        doctor_check(d, WARN,
                     "gateway file %s: %zu upstream%s, %zu with no include/exclude (exposes "
                     "nothing: default deny)",
                     cfg->gateway_file, gw.nup, gw.nup == 1 ? "" : "s", deny);
    else
        doctor_check(d, OK, "gateway file %s: %zu upstream%s", cfg->gateway_file, gw.nup,
                     gw.nup == 1 ? "" : "s");
    gwload_lint(&gw, cfg->gateway_file, cfg->call_timeout_ms, gateway_lint, d);
    gwfile_cleanup(&gw);
    char *waiting = ctlclient_restart_needed(d->env_path);
    if (waiting)
        doctor_check(d, WARN,
                     "gateway file %s: the running server reloaded it but cannot apply all of it: "
                     "restart needed (%s)",
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
            doctor_check(d, FAIL, "TASKS_DIR %s is not a directory: point TASKS_DIR at a directory",
                         dir);
            return;
        }
        /* access() is not enough: root passes it, a read-only mount does not show. */
        char *probe = xasprintf("%s/.doctor-XXXXXX", dir);
        int fd = mkstemp(probe);
        if (fd < 0) {
            doctor_check(d, FAIL,
                         "TASKS_DIR %s is not writable (%s): give the user serve runs as write "
                         "access (chown/chmod u+rwx) or set TASKS_DIR",
                         dir, strerror(errno));
        } else {
            close(fd);
            unlink(probe);
            doctor_check(d, OK, "TASKS_DIR %s is writable", dir);
        }
        free(probe);
        return;
    }
    if (errno != ENOENT) {
        doctor_check(d, FAIL, "TASKS_DIR %s: %s: set TASKS_DIR to a directory serve can write", dir,
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
            doctor_check(d, FAIL, "TASKS_DIR %s cannot be created: %s: %s", dir, parent,
                         strerror(errno));
            return;
        }
    }
    if (!S_ISDIR(st.st_mode))
        doctor_check(d, FAIL,
                     "TASKS_DIR %s cannot be created: %s is not a directory: fix TASKS_DIR", dir,
                     parent);
    else if (access(parent, W_OK | X_OK) != 0)
        doctor_check(d, FAIL,
                     "TASKS_DIR %s cannot be created in %s (%s): fix the permissions or set "
                     "TASKS_DIR",
                     dir, parent, strerror(errno));
    else
        doctor_check(d, OK, "TASKS_DIR %s does not exist yet; serve creates it (mode 700)", dir);
}

static void check_contract(struct doctor *d, const struct config *cfg)
{
    const char *path = cfg->contract_path;
    static const char unset[] = "or unset HERMES_CONTRACT_PATH to use the built-in contract";
    struct stat st;
    char why[100];

    if (path == NULL) {
        doctor_check(d, OK, "contract: the built-in one (HERMES_CONTRACT_PATH is not set)");
        return;
    }
    /* O_NONBLOCK: a FIFO would otherwise block the open until a writer comes. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        doctor_check(d, FAIL, "contract file %s (HERMES_CONTRACT_PATH): %s: fix the path, %s", path,
                     strerror(errno), unset);
        return;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        doctor_check(d, FAIL,
                     "contract file %s is not a regular file: fix HERMES_CONTRACT_PATH, %s", path,
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
        doctor_check(d, FAIL, "contract file %s cannot be read (%s): fix it, %s", path,
                     strerror(read_errno), unset);
    else if (!contract_text_ok(text, n, why, sizeof why))
        doctor_check(d, FAIL,
                     "contract file %s: %s; serve would use the built-in one: fix the file, %s",
                     path, why, unset);
    else
        doctor_check(d, OK, "contract file %s (%zu bytes)", path, n);
    free(text);
}

/* TOKENS_FILE and, with OAUTH_ISSUER_URL, the OAuth token store: serve refuses to start on
 * either when it is unsafe or unclear, so doctor says so first. */
static void check_credentials_files(struct doctor *d, const struct config *cfg)
{
    char err[800];
    if (cfg->tokens_file) {
        struct principals *p = principals_load(NULL, cfg->tokens_file, err, sizeof err);
        if (p && !principals_check_issuers(p, cfg->oidc_issuers, err, sizeof err)) {
            principals_unref(p);
            p = NULL;
        }
        if (p == NULL) {
            doctor_check(d, FAIL, "%s", err);
        } else {
            doctor_check(d, OK, "TOKENS_FILE %s: %zu principal%s", cfg->tokens_file, p->n,
                         p->n == 1 ? "" : "s");
            principals_unref(p);
        }
    }
    if (cfg->oauth_issuer && cfg->store_url) {
        /* The OAuth state is the store's: the files beside the env file are not read. */
        size_t tokens = 0, clients = 0;
        bool pass = false;
        if (!oauthpgcli_summary(cfg->store_url, cfg->store_password, &tokens, &clients, &pass, err,
                                sizeof err))
            doctor_check(d, FAIL, "OAuth state in the store: %s", err);
        else
            doctor_check(d, pass ? OK : WARN,
                         "OAuth state in the store: %zu token%s, %zu client%s, %s", tokens,
                         tokens == 1 ? "" : "s", clients, clients == 1 ? "" : "s",
                         pass ? "a consent passphrase"
                              : "no consent passphrase (run: hermes-mcp oauth passwd)");
    } else if (cfg->oauth_issuer) {
        struct tokenstore *ts = tokenstore_open(cfg->oauth_store, err, sizeof err);
        if (ts == NULL) {
            doctor_check(d, FAIL, "%s", err);
        } else {
            doctor_check(d, OK, "OAuth token store %s: %zu token%s", cfg->oauth_store,
                         tokenstore_count(ts), tokenstore_count(ts) == 1 ? "" : "s");
            tokenstore_free(ts);
        }
        /* The owner's consent passphrase: without it no OAuth client can be allowed (a WARN:
         * bearer clients still work); a file serve would not read FAILs. */
        char line[PASSPHRASE_LINE_MAX], *pp = passphrase_path_beside(cfg->oauth_store);
        struct stat st;
        bool no_passphrase = lstat(pp, &st) != 0;
        if (no_passphrase && !cfg->owner_token && !cfg->tokens_file)
            doctor_check(d, FAIL,
                         "no OAuth consent passphrase (%s) and no MCP_AUTH_TOKEN: nobody "
                         "can sign in; run: hermes-mcp oauth passwd --env-file %s",
                         pp, d->env_path);
        else if (no_passphrase)
            doctor_check(d, WARN,
                         "no OAuth consent passphrase (%s): no OAuth client can be allowed; run: "
                         "hermes-mcp oauth passwd",
                         pp);
        else if (!passphrase_load(pp, line, err, sizeof err))
            doctor_check(d, FAIL, "%s", err);
        else
            doctor_check(d, OK, "OAuth consent passphrase %s (scrypt)", pp);
        explicit_bzero(line, sizeof line);
        /* The registered clients, read as serve reads them. */
        char *clients = authserver_clients_path_beside(cfg->oauth_store);
        struct authserver_opts ao = {.issuer = cfg->oauth_issuer,
                                     .resource = "",
                                     .passphrase_path = pp,
                                     .clients_path = clients,
                                     .redirect_schemes = cfg->oauth_redirect_schemes};
        struct authserver *as = authserver_new(&ao, err, sizeof err);
        if (as == NULL)
            doctor_check(d, FAIL, "%s", err);
        else if (lstat(clients, &st) == 0)
            doctor_check(d, OK, "OAuth clients file %s: %zu client%s", clients,
                         authserver_client_count(as), authserver_client_count(as) == 1 ? "" : "s");
        authserver_free(as);
        free(clients);
        free(pp);
    }
}

/* ---------- the port ---------- */

/* True when a hermes-mcp answers /health at hostport. */
static bool hermes_listening(const struct doctor *d, const char *hostport, char *version,
                             size_t vlen)
{
    struct doctor_resp r;
    char *url = xasprintf("http://%s/health", hostport);
    doctor_probe_get(url, NULL, d->timeout_ms < 3000 ? d->timeout_ms : 3000, &r);
    free(url);
    bool ours = false;
    if (r.answered && r.status == 200) {
        json_t *h = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
        const char *svc = doctor_get(h, "service");
        ours = svc && strcmp(svc, "hermes-mcp") == 0;
        snprintf(version, vlen, "%.40s", doctor_get(h, "version") ? doctor_get(h, "version") : "?");
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
        doctor_check(d, WARN, "port not checked: fix the settings first");
        return;
    }
    if (cfg->port == 0) {
        doctor_check(d, OK, "MCP_PORT=0: serve picks a free port when it starts");
        return;
    }
    snprintf(portstr, sizeof portstr, "%u", cfg->port);
    bool v6 = strchr(cfg->host, ':') != NULL;
    snprintf(hostport, sizeof hostport, "%s%s%s:%u", v6 ? "[" : "", cfg->host, v6 ? "]" : "",
             cfg->port);
    int rc = getaddrinfo(cfg->host, portstr, &hints, &res);
    if (rc != 0) {
        doctor_check(d, FAIL, "MCP_HOST %s does not resolve (%s): fix MCP_HOST in %s", cfg->host,
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
        doctor_check(d, OK, "port %s is free", hostport);
    else if (err == EADDRINUSE && hermes_listening(d, hostport, version, sizeof version))
        doctor_check(d, WARN,
                     "port %s: a hermes-mcp (version %s) is already listening there; fine if it is "
                     "this setup's server, else stop it or change MCP_PORT",
                     hostport, version);
    else if (err == EADDRINUSE)
        doctor_check(d, FAIL,
                     "port %s is in use by another program: stop it, or set MCP_PORT in %s",
                     hostport, d->env_path);
    else if (err == EACCES)
        doctor_check(d, FAIL, "cannot listen on %s: %s: use an MCP_PORT above 1023", hostport,
                     strerror(err));
    else if (err == EADDRNOTAVAIL)
        doctor_check(d, FAIL,
                     "cannot listen on %s: MCP_HOST is not an address of this machine: fix "
                     "MCP_HOST in %s",
                     hostport, d->env_path);
    else
        doctor_check(d, FAIL, "cannot listen on %s: %s", hostport, strerror(err));
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

    json_t *env = check_env_file(&d);
    check_token(&d, env);
    bool settings_ok = check_settings(&d, env, &cfg);
    check_gateway(&d, &cfg, env);
    json_decref(env);
    check_tasks_dir(&d, &cfg);
    check_contract(&d, &cfg);
    check_credentials_files(&d, &cfg);
    doctor_check_agents(&d, &cfg);
    doctor_check_oidc(&d, &cfg);
    check_port(&d, &cfg, settings_ok);

    print_lines(&d);
    printf("doctor: %u ok, %u warning%s, %u failed%s\n", d.counts[OK], d.counts[WARN],
           d.counts[WARN] == 1 ? "" : "s", d.counts[FAIL],
           d.probe ? "" : " (agents not probed: --no-probe)");
    config_cleanup(&cfg);
    report_cleanup(&d.rep);
    return d.counts[FAIL] ? 1 : 0;
}
