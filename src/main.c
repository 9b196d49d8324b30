/* main.c — command line: serve, doctor, smoke, tasks, gateway, token, oauth, version, help. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <termios.h>
#include <unistd.h>

#include "app.h"
#include "audit.h"
#include "bridge.h"
#include "buf.h"
#include "child.h"
#include "config.h"
#include "crypto.h"
#include "doctor.h"
#include "envfile.h"
#include "gateway.h"
#include "gwcheck.h"
#include "gwload.h"
#include "log.h"
#include "mem.h"
#include "oauthcli.h"
#include "passphrase.h"
#include "smoke.h"
#include "taskscli.h"
#include "approvalscli.h"
#include "tokengen.h"
#include "version.h"

#define EXIT_USAGE 2

static const char usage[] =
    "usage: hermes-mcp <command> [options]\n"
    "\n"
    "commands:\n"
    "  serve [--env-file FILE]      run the MCP server (Streamable HTTP on /mcp)\n"
    "  oauth passwd [--env-file FILE]\n"
    "                               set the owner's OAuth consent passphrase (read from stdin)\n"
    "  oauth mint-client            print a new static OAuth client id and secret, once\n"
    "  oauth clients|tokens [revoke ...] [--env-file FILE]\n"
    "                               list or revoke OAuth clients and tokens (help oauth)\n"
    "  doctor [--env-file FILE] [--no-probe] [--timeout S]\n"
    "                               check the setup and the agents, one line per check\n"
    "  token gen [--env-file FILE]  create or replace MCP_AUTH_TOKEN in FILE (mode 600);\n"
    "                               prints the file's path, never the token\n"
    "  token rotate [--env-file FILE]\n"
    "                               the same, then tells servers using FILE to reload\n"
    "  token gen --name N --scopes S [--agents A] [--expires DATE]\n"
    "                               a token for one role of TOKENS_FILE (help token)\n"
    "  smoke --base URL [--id ID] [--env-file FILE]\n"
    "                               check a running server end to end (see help smoke)\n"
    "  tasks list|prune [--env-file FILE] [--json|--dry-run]\n"
    "                               list the task directories, prune finished ones (help tasks)\n"
    "  gateway check [--probe] [--env-file FILE]\n"
    "                               validate GATEWAY_FILE, print the upstreams; --probe starts\n"
    "                               them and prints the exposed names (help gateway)\n"
    "  approvals [--json] | approve ID | deny ID [--reason TEXT]   [--env-file FILE]\n"
    "                               list or answer the calls waiting for an operator\n"
    "                               (help approvals)\n"
    "  version                      print the version\n"
    "  help [COMMAND]               show help\n"
    "\n"
    "FILE defaults to ./.env. Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration\n"
    "error. See README.md for the configuration keys.\n";

static const char serve_usage[] =
    "usage: hermes-mcp serve [--env-file FILE]\n"
    "\n"
    "Runs the MCP server on MCP_HOST:MCP_PORT (default 127.0.0.1:8765) and prints\n"
    "\"listening on http://HOST:PORT/mcp\" once ready. Settings and the bearer token come from\n"
    "FILE (dotenv, mode 600, default ./.env). SIGHUP reloads FILE. SIGTERM drains: new\n"
    "connections are refused, calls in flight get up to MCP_DRAIN_GRACE_S seconds (default 10)\n"
    "to finish, the rest are answered 503, then it exits 0; a second SIGTERM ends the wait.\n"
    "Under systemd (Type=notify) it reports readiness, reloads and stops on $NOTIFY_SOCKET,\n"
    "feeds the watchdog, and serves on a socket passed by socket activation (LISTEN_FDS).\n"
    "Exit codes: 0 stopped, 1 runtime failure, 2 configuration error.\n";

static const char token_usage[] =
    "usage: hermes-mcp token gen|rotate [--env-file FILE]\n"
    "\n"
    "gen     writes a new random MCP_AUTH_TOKEN (64 hex characters from 32 random bytes) into\n"
    "        FILE, atomically and with mode 600, keeping the other lines. Prints the path,\n"
    "        never the token.\n"
    "rotate  does the same, then sends SIGHUP to every running 'hermes-mcp serve' that uses\n"
    "        FILE: new requests need the new token, requests in flight finish, nothing restarts.\n"
    "Exit codes: 0 written, 1 the file could not be written, 2 usage error.\n"
    "\n"
    "gen --name N --scopes S [--agents A] [--expires DATE]\n"
    "        a token for a role of TOKENS_FILE instead: hermes-mcp token gen --name N --help.\n";

static const char oauth_usage[] =
    "usage: hermes-mcp oauth passwd [--env-file FILE]\n"
    "       hermes-mcp oauth mint-client\n"
    "       hermes-mcp oauth clients|tokens [revoke ...] [--env-file FILE] (oauth clients --help)\n"
    "\n"
    "mint-client  prints a new OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET (256 random bits) to\n"
    "        stdout, once, for the env file: a pre-registered confidential client (seed 002)\n"
    "        for connectors where one pastes a client id and secret. Nothing is written or\n"
    "        logged; the server keeps only the secret's hash.\n"
    "\n"
    "passwd  sets the owner's consent passphrase: what the owner types on the /authorize page to\n"
    "        allow an OAuth client (OAUTH_ISSUER_URL). Read from the terminal (twice, not echoed)\n"
    "        or, when stdin is not a terminal, its first line; never from the command line. At\n"
    "        least 12 characters. Stored as an scrypt hash in oauth-passphrase beside FILE\n"
    "        (atomically, mode 600); a running server uses the new one at the next consent.\n"
    "Exit codes: 0 written, 1 not written, 2 usage error.\n"
    "\n"
    "clients, tokens  list the OAuth clients and the tokens issued, or revoke them; a running\n"
    "        server refuses a revoked token from its next request on. Details:\n"
    "        hermes-mcp oauth clients --help.\n";

static const char version_usage[] =
    "usage: hermes-mcp version\n"
    "\n"
    "Prints \"hermes-mcp VERSION\". Exit codes: 0 always, 2 usage error.\n";

static int want_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

/* Parses [--env-file FILE]; returns the file or NULL after printing an error. */
static const char *env_file_arg(int argc, char **argv, const char *help, int *bad)
{
    const char *file = NULL;
    *bad = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--env-file") && i + 1 < argc)
            file = argv[++i];
        else if (!strncmp(argv[i], "--env-file=", 11))
            file = argv[i] + 11;
        else {
            fprintf(stderr, "hermes-mcp: unknown argument '%s'\n%s", argv[i], help);
            *bad = 1;
            return NULL;
        }
    }
    return file ? file : ".env";
}

static struct bridge *the_bridge;
static struct gwfile the_gwfile; /* GATEWAY_FILE, read before serving; empty without one */

static void log_gateway_lint(enum gwlint_level level, const char *line, void *arg)
{
    (void)arg;
    if (level == GWLINT_ERROR)
        fprintf(stderr, "hermes-mcp: %s\n", line);
    else if (level == GWLINT_WARN)
        log_warn("gateway: %s", line);
    else
        log_info("gateway: %s", line);
}

/* GATEWAY_FILE: read and validated before anything starts, so a bad file (an unresolved
 * ${VAR}, a bad name, mode 644) stops serve with one line naming file, upstream and key. */
static bool load_gateway_file(const struct config *cfg, const char *env_file)
{
    char err[1024];
    unsigned mode;
    if (cfg->gateway_file == NULL)
        return true;
    json_t *env = config_read_env(env_file, &mode, err, sizeof err);
    bool ok = env && gwload_file(cfg->gateway_file, env, &the_gwfile, err, sizeof err);
    json_decref(env);
    if (!ok) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return false;
    }
    if (!gwload_lint(&the_gwfile, cfg->gateway_file, cfg->call_timeout_ms, log_gateway_lint,
                     NULL)) {
        gwfile_cleanup(&the_gwfile);
        return false;
    }
    return true;
}

static struct gateway *the_gateway;

static struct audit *the_audit; /* the server's audit log (app_opts.audit), or NULL */

static void take_audit(void *cfg, struct audit *audit)
{
    (void)cfg;
    the_audit = audit;
}

/* The gateway's events as audit lines: its principal is the one the engine bound the call to
 * ("p:NAME"); a token digest is not a name and is left out. */
static void audit_gateway_event(const struct gw_event *e, void *arg)
{
    static const char *const names[] = {[GW_EVENT_CALL] = "gateway_call",
                                        [GW_EVENT_WITHHELD] = "gateway_withheld",
                                        [GW_EVENT_ACCEPTED] = "gateway_accepted",
                                        [GW_EVENT_APPROVAL] = "approval"};
    (void)arg;
    const char *principal =
        e->caller && strncmp(e->caller, "p:", 2) == 0 ? e->caller + 2 : NULL;
    audit_log_event(the_audit,
                    &(struct audit_event){.event = names[e->kind], .principal = principal,
                                          .upstream = e->upstream, .tool = e->tool,
                                          .upstream_tool = e->upstream_tool, .status = e->status,
                                          .decided_by = e->decided_by,
                                          .duration_ms = e->kind == GW_EVENT_CALL
                                                             ? (double)e->duration_us / 1000.0
                                                             : -1});
}

static struct approvals *the_approvals; /* the operator's queue (app_opts.approvals) */

static void take_approvals(void *cfg, struct approvals *q)
{
    (void)cfg;
    the_approvals = q;
}

static bool keep_bridge_tool(const char *tool, void *arg)
{
    (void)arg;
    return gw_bridge_tool_kept(&the_gwfile, tool); /* an alias comes as its tool */
}

/* The bridge first, then the gateway's upstreams, whose names must not collide with its. */
static bool setup_tools(struct mcp_server *mcp, struct loop *l, void *cfg)
{
    size_t n;
    the_bridge = bridge_new_kept(mcp, l, cfg, keep_bridge_tool, NULL);
    if (the_bridge == NULL)
        return false;
    bridge_set_approvals(the_bridge, the_approvals); /* a run waiting for approval is queued */
    if (the_gwfile.doc == NULL)
        return true;
    const char *const *taken = bridge_tool_names(the_bridge, &n);
    the_gateway = gateway_new(mcp, l, &the_gwfile,
                              ((const struct config *)cfg)->gateway_file, taken, n,
                              audit_gateway_event, NULL);
    if (the_gateway)
        gateway_set_approvals(the_gateway, the_approvals);
    return the_gateway != NULL;
}

/* SIGHUP: GATEWAY_FILE again, read and checked as at start (gateway_reload_file applies what
 * it can); a file serve would refuse keeps the running configuration, said in one line. */
static void reload_gateway_file(const struct config *cfg)
{
    char err[1024];
    unsigned mode;
    struct gwfile *f = xcalloc(1, sizeof *f);
    json_t *env = config_read_env(cfg->env_file, &mode, err, sizeof err);
    bool ok = env && gwload_for_serve(cfg->gateway_file, env, cfg->call_timeout_ms, f, err,
                                      sizeof err);
    json_decref(env);
    if (!ok) {
        log_warn("gateway: reload failed, keeping the running gateway configuration: %s", err);
        free(f);
        return;
    }
    size_t n; /* every tool the bridge has, kept or not: bridge_tools is judged on all again */
    const char *const *offered = bridge_offered_names(the_bridge, &n);
    const char **judged = xcalloc(n ? n : 1, sizeof *judged);
    for (size_t i = 0; i < n; i++)
        judged[i] = bridge_tool_judged_as(offered[i]);
    gateway_reload_file(the_gateway, f, cfg->gateway_file, offered, judged, n);
    free(judged);
}

static void reload_tools(void *cfg)
{
    if (the_bridge)
        bridge_reload(the_bridge);
    if (the_gateway) {
        reload_gateway_file(cfg);
        gateway_reload_pins(the_gateway); /* after `hermes-mcp gateway accept` */
    }
}

/* The gateway:<upstream> scopes an OAuth client may ask for: the upstreams of GATEWAY_FILE as
 * read at start, disabled ones too (a new one needs a restart, as its tools do). */
static bool upstream_known(void *cfg, const char *name)
{
    (void)cfg;
    for (size_t i = 0; i < the_gwfile.nup; i++)
        if (strcmp(the_gwfile.up[i].name, name) == 0)
            return true;
    for (size_t i = 0; i < the_gwfile.noff; i++)
        if (strcmp(the_gwfile.off[i].name, name) == 0)
            return true;
    return false;
}

/* The control socket's status (doctor, gateway check): what waits for a restart. */
static json_t *status_tools(void *cfg)
{
    (void)cfg;
    return json_pack("{s:o}", "gateway_restart_needed", gateway_restart_needed(the_gateway));
}

static void health_tools(void *cfg, char *out, size_t outlen)
{
    (void)cfg;
    if (the_bridge)
        bridge_health(the_bridge, out, outlen);
}

static void metrics_tools(void *cfg, struct buf *out)
{
    (void)cfg;
    if (the_bridge)
        bridge_metrics(the_bridge, out);
    gateway_metrics(the_gateway, out);
}

static bool ready_tools(void *cfg, struct buf *out)
{
    (void)cfg;
    if (the_gateway)
        return gateway_ready(the_gateway, out);
    buf_appends(out, "{}");
    return true;
}

static void drain_tools(void *cfg)
{
    (void)cfg;
    gateway_drain(the_gateway);
}

static size_t draining_tools(void *cfg)
{
    (void)cfg;
    return gateway_tasks_running(the_gateway);
}

static void teardown_tools(void *cfg)
{
    (void)cfg;
    gateway_free(the_gateway);
    the_gateway = NULL;
    bridge_free(the_bridge);
    the_bridge = NULL;
    the_audit = NULL; /* freed by the app after this */
    the_approvals = NULL;
}

static int cmd_serve(int argc, char **argv)
{
    struct config cfg;
    char err[512];
    int bad;

    if (want_help(argc, argv)) {
        fputs(serve_usage, stdout);
        return 0;
    }
    const char *file = env_file_arg(argc, argv, serve_usage, &bad);
    if (bad)
        return EXIT_USAGE;
    if (access(file, F_OK) != 0) {
        fprintf(stderr,
                "hermes-mcp: env file %s not found; create one with: hermes-mcp token gen "
                "--env-file %s\n",
                file, file);
        return EXIT_USAGE;
    }
    if (!config_load(&cfg, file, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return EXIT_USAGE;
    }
    if (!cfg.auth) { /* no credential could ever be checked: never serve without one */
        fprintf(stderr,
                "hermes-mcp: no MCP_AUTH_TOKEN, TOKENS_FILE or OAUTH_ISSUER_URL in %s, so no "
                "client could authenticate; create a token with: hermes-mcp token gen "
                "--env-file %s (or set OAUTH_ISSUER_URL, then: hermes-mcp oauth passwd "
                "--env-file %s)\n",
                file, file, file);
        config_cleanup(&cfg);
        return EXIT_USAGE;
    }
    if (!load_gateway_file(&cfg, file)) {
        config_cleanup(&cfg);
        return EXIT_USAGE;
    }
    if (cfg.allow_remote && !config_is_loopback(cfg.host))
        log_warn("LISTENING BEYOND LOOPBACK on %s: anyone who can reach it is one token away "
                 "from your agent",
                 cfg.host);
    struct app_opts o = {.cfg = &cfg, .service = "hermes-mcp", .setup = setup_tools,
                         .setup_arg = &cfg, .reload = reload_tools, .drain = drain_tools,
                         .draining_work = draining_tools, .teardown = teardown_tools,
                         .health = health_tools, .metrics = metrics_tools,
                         .ready = ready_tools, .audit = take_audit, .approvals = take_approvals,
                         .status = status_tools,
                         .approvals_timeout_s = the_gwfile.approvals_timeout_s,
                         .owned_child = child_owns, .upstream_known = upstream_known};
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0)
        child_set_fd_limit(&nofile); /* app_run raises it; upstreams get it back */
    int rc = app_run(&o);
    gwfile_cleanup(&the_gwfile);
    config_cleanup(&cfg);
    return rc;
}

/* True when /proc/<pid> is "hermes-mcp serve" reading env_real (resolved in its own cwd). */
static bool serves_env_file(const char *pid, const char *env_real)
{
    char path[300], cmd[4096], cwd[PATH_MAX], file[PATH_MAX * 2], real[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, cmd, sizeof cmd - 1);
    close(fd);
    if (n <= 0)
        return false;
    cmd[n] = '\0';
    const char *args[32];
    int argc = 0;
    for (char *p = cmd; p < cmd + n && argc < 32; p += strlen(p) + 1)
        args[argc++] = p;
    /* "hermes-mcp serve", possibly behind a wrapper (valgrind, env, nice...). */
    int at = -1;
    for (int i = 0; i + 1 < argc && at < 0; i++) {
        const char *base = strrchr(args[i], '/');
        base = base ? base + 1 : args[i];
        if (strcmp(base, "hermes-mcp") == 0 && strcmp(args[i + 1], "serve") == 0)
            at = i;
    }
    if (at < 0)
        return false;
    const char *env = ".env";
    for (int i = at + 2; i < argc; i++) {
        if (!strcmp(args[i], "--env-file") && i + 1 < argc)
            env = args[i + 1];
        else if (!strncmp(args[i], "--env-file=", 11))
            env = args[i] + 11;
    }
    snprintf(path, sizeof path, "/proc/%s/cwd", pid);
    ssize_t c = readlink(path, cwd, sizeof cwd - 1);
    if (c < 0)
        return false;
    cwd[c] = '\0';
    if (env[0] == '/')
        snprintf(file, sizeof file, "%s", env);
    else
        snprintf(file, sizeof file, "%s/%s", cwd, env);
    return realpath(file, real) != NULL && strcmp(real, env_real) == 0;
}

/* Sends SIGHUP to the servers using env_file; returns how many. */
static int signal_servers(const char *env_file)
{
    char real[PATH_MAX];
    int count = 0;
    DIR *d;
    struct dirent *e;

    if (realpath(env_file, real) == NULL || (d = opendir("/proc")) == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || !serves_env_file(e->d_name, real))
            continue;
        if (kill((pid_t)atol(e->d_name), SIGHUP) == 0)
            count++;
    }
    closedir(d);
    return count;
}

static int cmd_token(int argc, char **argv)
{
    char token[65], err[512];
    int bad;

    if (argc > 1 && strcmp(argv[0], "gen") == 0 && strcmp(argv[1], "--name") == 0) {
        if (want_help(argc, argv)) {
            fputs(tokengen_usage, stdout);
            return 0;
        }
        return tokengen_main(argc - 1, argv + 1);
    }
    if (argc < 1 || want_help(argc, argv)) {
        fputs(token_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? EXIT_USAGE : 0;
    }
    bool rotate = strcmp(argv[0], "rotate") == 0;
    if (strcmp(argv[0], "gen") != 0 && !rotate) {
        fprintf(stderr, "hermes-mcp: unknown token command '%s'\n%s", argv[0], token_usage);
        return EXIT_USAGE;
    }
    const char *file = env_file_arg(argc - 1, argv + 1, token_usage, &bad);
    if (bad)
        return EXIT_USAGE;
    if (!crypto_random_hex(token, 32)) {
        fprintf(stderr, "hermes-mcp: the random generator failed\n");
        return 1;
    }
    bool ok = envfile_set(file, "MCP_AUTH_TOKEN", token, err, sizeof err);
    memset(token, 0, sizeof token);
    if (!ok) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return 1;
    }
    printf("MCP_AUTH_TOKEN written to %s (mode 600)\n", file);
    if (rotate) {
        int n = signal_servers(file);
        printf("told %d running server%s to reload\n", n, n == 1 ? "" : "s");
    }
    return 0;
}

/* One line from stdin, without echo when it is a terminal. False at end of input or when
 * longer than PASSPHRASE_MAX. */
static bool read_secret(const char *prompt, char *out, size_t outsz)
{
    struct termios old, quiet;
    bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
        fputs(prompt, stderr);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    bool ok = fgets(out, (int)outsz, stdin) != NULL;
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    size_t n = ok ? strlen(out) : 0;
    if (ok && (n == 0 || out[n - 1] != '\n') && !feof(stdin))
        ok = false; /* longer than the buffer */
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    return ok;
}

/* hermes-mcp oauth mint-client: to stdout only, so the secret goes where the owner sends it. */
static int mint_client(void)
{
    char id[33], secret[65];
    if (!crypto_random_hex(id, 16) || !crypto_random_hex(secret, 32)) {
        fprintf(stderr, "hermes-mcp: the random generator failed\n");
        return 1;
    }
    printf("OAUTH_CLIENT_ID=%s\nOAUTH_CLIENT_SECRET=%s\n", id, secret);
    fflush(stdout);
    explicit_bzero(secret, sizeof secret);
    if (isatty(STDOUT_FILENO))
        fprintf(stderr, "Add both lines to the env file; the secret is shown only this once.\n");
    return 0;
}

static int cmd_oauth(int argc, char **argv)
{
    char pass[PASSPHRASE_MAX + 2], again[PASSPHRASE_MAX + 2], line[PASSPHRASE_LINE_MAX];
    char err[512];
    int bad;
    if (argc >= 1 && (!strcmp(argv[0], "clients") || !strcmp(argv[0], "tokens")))
        return oauthcli_main(argc, argv);
    if (argc < 1 || want_help(argc, argv)) {
        fputs(oauth_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? EXIT_USAGE : 0;
    }
    if (strcmp(argv[0], "mint-client") == 0)
        return mint_client();
    if (strcmp(argv[0], "passwd") != 0) {
        fprintf(stderr, "hermes-mcp: unknown oauth command '%s'\n%s", argv[0], oauth_usage);
        return EXIT_USAGE;
    }
    const char *file = env_file_arg(argc - 1, argv + 1, oauth_usage, &bad);
    if (bad)
        return EXIT_USAGE;
    bool tty = isatty(STDIN_FILENO);
    int rc = 1;
    if (!read_secret("New consent passphrase: ", pass, sizeof pass)) {
        fprintf(stderr, "hermes-mcp: no passphrase read (at most %d bytes)\n", PASSPHRASE_MAX);
    } else if (strlen(pass) < PASSPHRASE_MIN) {
        fprintf(stderr, "hermes-mcp: the passphrase must have at least %d characters\n",
                PASSPHRASE_MIN);
    } else if (tty && (!read_secret("Again: ", again, sizeof again) || strcmp(pass, again))) {
        fprintf(stderr, "hermes-mcp: the two passphrases differ; nothing written\n");
    } else if (!passphrase_hash(pass, strlen(pass), line)) {
        fprintf(stderr, "hermes-mcp: hashing the passphrase failed\n");
    } else {
        char *path = passphrase_path_beside(file);
        if (passphrase_save(path, line, err, sizeof err)) {
            printf("consent passphrase written to %s (scrypt, mode 600)\n", path);
            rc = 0;
        } else {
            fprintf(stderr, "hermes-mcp: %s\n", err);
        }
        free(path);
    }
    explicit_bzero(pass, sizeof pass);
    explicit_bzero(again, sizeof again);
    return rc;
}

/* Started with fds 0-2 closed (`<&- >&- 2>&-`), the first files we open would take those
 * numbers: our log would then write into a socket, a pipe to an upstream or the audit file.
 * /dev/null holds them instead. */
static void hold_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
            return;
}

int main(int argc, char **argv)
{
    hold_std_fds();
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "serve"))
        return cmd_serve(argc - 2, argv + 2);
    if (!strcmp(cmd, "token"))
        return cmd_token(argc - 2, argv + 2);
    if (!strcmp(cmd, "oauth"))
        return cmd_oauth(argc - 2, argv + 2);
    if (!strcmp(cmd, "doctor"))
        return doctor_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "smoke"))
        return smoke_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "tasks"))
        return taskscli_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "gateway"))
        return gwcheck_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "approvals") || !strcmp(cmd, "approve") || !strcmp(cmd, "deny"))
        return approvalscli_main(cmd, argc - 2, argv + 2);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        if (want_help(argc - 2, argv + 2)) {
            fputs(version_usage, stdout);
            return 0;
        }
        if (argc > 2) {
            fprintf(stderr, "hermes-mcp: unknown argument '%s'\n%s", argv[2], version_usage);
            return EXIT_USAGE;
        }
        printf("hermes-mcp %s\n", HM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc > 2 && !strcmp(argv[2], "serve"))
            fputs(serve_usage, stdout);
        else if (argc > 2 && !strcmp(argv[2], "token"))
            fputs(token_usage, stdout);
        else if (argc > 2 && !strcmp(argv[2], "oauth"))
            fputs(oauth_usage, stdout);
        else if (argc > 2 && !strcmp(argv[2], "doctor"))
            fputs(doctor_usage, stdout);
        else if (argc > 2 && !strcmp(argv[2], "smoke"))
            fputs(smoke_usage, stdout);
        else if (argc > 2 && !strcmp(argv[2], "tasks"))
            fputs(tasks_usage, stdout);
        else if (argc > 2 && !strcmp(argv[2], "gateway"))
            fputs(gateway_usage, stdout);
        else if (argc > 2 && (!strcmp(argv[2], "approvals") || !strcmp(argv[2], "approve") ||
                              !strcmp(argv[2], "deny")))
            fputs(approvals_usage, stdout);
        else if (argc > 2 && !strcmp(argv[2], "version"))
            fputs(version_usage, stdout);
        else if (argc > 2) {
            fprintf(stderr, "hermes-mcp: no command '%s'\n%s", argv[2], usage);
            return EXIT_USAGE;
        } else
            fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "hermes-mcp: unknown command '%s'\n%s", cmd, usage);
    return EXIT_USAGE;
}
