/* serve.c — hermes-mcp serve: settings checked before anything starts, then the providers
 * (bridge, gateway) built and driven by app_run(). */
#include "serve.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "app.h"
#include "bridge_provider.h"
#include "child.h"
#include "cliargs.h"
#include "config.h"
#include "gw_provider.h"
#include "log.h"
#include "storeschema.h"
#include "weburl.h"

const char serve_usage[] =
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

/* The bridge's settings from the server's (bridge_opts_fn): strings borrowed from cfg, which
 * a reload updates in place before the providers hear of it. */
static void bridge_settings(struct bridge_opts *o, void *arg)
{
    const struct config *c = arg;
    *o = (struct bridge_opts){.env_file = c->env_file,
                              .hermes_env_path = c->hermes_env_path,
                              .agents_file = c->agents_file,
                              .tasks_dir = c->tasks_dir,
                              .contract_path = c->contract_path,
                              .poll_ms = c->poll_ms,
                              .agent_timeout_ms = c->agent_timeout_ms,
                              .tasks_retention_days = c->tasks_retention_days,
                              .tasks_max = c->tasks_max,
                              .tool_aliases = c->tool_aliases,
                              .store_url = c->store_url,
                              .store_password = c->store_password};
}

/* STORE_URL's database must be reachable and at this binary's schema before anything starts:
 * a replica on another schema would read and write what it does not understand. Blocking, as
 * the event loop is not running yet. */
static int store_check(const struct config *cfg, const char *file)
{
    char err[600];
    PGconn *pg = storeschema_connect(cfg->store_url, cfg->store_password, err, sizeof err);
    int v = pg ? storeschema_version(pg, err, sizeof err) : -1;
    if (pg) /* without libpq loaded there is no PQfinish to call */
        PQfinish(pg);
    if (v < 0) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return EXIT_FAIL;
    }
    if (v == STORESCHEMA_VERSION)
        return EXIT_OK;
    if (v == 0)
        fprintf(stderr,
                "hermes-mcp: STORE_URL's database has no hermes-mcp schema yet: run hermes-mcp "
                "store init --env-file %s\n",
                file);
    else if (v < STORESCHEMA_VERSION)
        fprintf(stderr,
                "hermes-mcp: STORE_URL's schema is at version %d, this hermes-mcp needs %d: run "
                "hermes-mcp store init --env-file %s\n",
                v, STORESCHEMA_VERSION, file);
    else
        fprintf(stderr,
                "hermes-mcp: STORE_URL's schema is at version %d, newer than this hermes-mcp's "
                "(%d): upgrade hermes-mcp\n",
                v, STORESCHEMA_VERSION);
    return EXIT_USAGE;
}

int serve_main(int argc, char **argv)
{
    struct config cfg;
    char err[512];
    int bad;

    if (cliargs_want_help(argc, argv)) {
        fputs(serve_usage, stdout);
        return 0;
    }
    const char *file = cliargs_env_file(argc, argv, serve_usage, &bad);
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
    if (cfg.store_url) {
        int src = store_check(&cfg, file);
        if (src != EXIT_OK) {
            config_cleanup(&cfg);
            return src;
        }
    }
    struct gw_provider *gw = gw_provider_load(cfg.gateway_file, file, cfg.call_timeout_ms);
    if (gw == NULL) {
        config_cleanup(&cfg);
        return EXIT_USAGE;
    }
    gw_provider_set_store(gw, cfg.store_url, cfg.store_password);
    if (cfg.allow_remote && !weburl_loopback_host(cfg.host))
        log_event(EV_LISTEN_EXPOSED, LOG_FIELDS(LF_S("addr", cfg.host)),
                  "LISTENING BEYOND LOOPBACK on %s: anyone who can reach it is one token away "
                  "from your agent",
                  cfg.host);
    /* The bridge first: the gateway's names must not collide with its tools, and the gateway
     * file's bridge_tools decides which of them it registers. */
    struct bridge_provider *bridge =
        bridge_provider_new(bridge_settings, &cfg, gw_provider_keeps, gw);
    const struct provider providers[] = {{&bridge_provider_ops, bridge}, {&gw_provider_ops, gw}};
    struct app_opts o = {.cfg = &cfg,
                         .service = "hermes-mcp",
                         .providers = providers,
                         .nproviders = sizeof providers / sizeof *providers,
                         .approvals_timeout_s = gw_provider_approvals_timeout_s(gw),
                         .owned_child = child_owns};
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0)
        child_set_fd_limit(&nofile); /* app_run raises it; upstreams get it back */
    int rc = app_run(&o);
    bridge_provider_free(bridge);
    gw_provider_free(gw);
    config_cleanup(&cfg);
    return rc;
}
