/* configtab.c — every environment key the server reads, one row each, in the order they are
 * read and documented. config.c walks the table; build/<flavour>/gendocs prints .env.example,
 * docs/reference/env.md and hermes-mcp.env(5) from it, so the three cannot drift. */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "log.h"
#include "mem.h"

#define F(m) offsetof(struct config, m)
#define DAY (24ul * 3600)

const char *const config_section_titles[CONFIG_SEC_COUNT] = {
    [CONFIG_SEC_AUTH] = "authentication",
    [CONFIG_SEC_OAUTH] = "OAuth (with OAUTH_ISSUER_URL)",
    [CONFIG_SEC_OIDC] = "external identity provider (OIDC_ISSUER_URL)",
    [CONFIG_SEC_LISTENER] = "listener",
    [CONFIG_SEC_LIMITS] = "limits and timeouts",
    [CONFIG_SEC_FILES] = "files (defaults: beside this file)",
    [CONFIG_SEC_AGENTS] = "agents",
    [CONFIG_SEC_STORE] = "store (STORE_URL: PostgreSQL for replicas)",
    [CONFIG_SEC_TRACING] = "tracing (OpenTelemetry)",
};

static bool parse_token(struct config *c, json_t *env, const char *token, const char *path,
                        char *err, size_t errlen)
{
    (void)env;
    if (token == NULL)
        return true;
    if (!config_token_ok(token)) {
        snprintf(err, errlen,
                 "MCP_AUTH_TOKEN must be 64 hexadecimal characters; run: hermes-mcp token gen "
                 "--env-file %s",
                 path);
        return false;
    }
    crypto_sha256(token, 64, c->token_hash);
    c->owner_token = true;
    return true;
}

/* MCP_HOST, or BIND_HOST, its older name, so an env file written for it works unchanged. */
static bool parse_host(struct config *c, json_t *env, const char *mcp_host, const char *path,
                       char *err, size_t errlen)
{
    const char *bind_host = config_env_get(env, "BIND_HOST");
    (void)path;
    if (mcp_host && bind_host && strcmp(mcp_host, bind_host) != 0) {
        snprintf(err, errlen, "MCP_HOST and BIND_HOST (its old name) differ; set one of them");
        return false;
    }
    c->host = xstrdup(mcp_host ? mcp_host : bind_host ? bind_host : "127.0.0.1");
    return true;
}

static bool parse_log_level(struct config *c, json_t *env, const char *lvl, const char *path,
                            char *err, size_t errlen)
{
    (void)env, (void)path;
    c->log_level = LOG_INFO;
    if (lvl && (c->log_level = log_level_parse(lvl)) < 0) {
        snprintf(err, errlen, "LOG_LEVEL must be error, warn, info or debug");
        return false;
    }
    return true;
}

/* A sync task's deadline at the agent ends a little before the client's call does. */
static bool parse_agent_timeout(struct config *c, json_t *env, const char *v, const char *path,
                                char *err, size_t errlen)
{
    unsigned call_s = c->call_timeout_ms / 1000u;
    unsigned agent_s = call_s > 10 ? call_s - 5 : call_s;
    (void)env, (void)path;
    if (!config_parse_uint(v, 7 * DAY, &agent_s)) {
        snprintf(err, errlen, "HERMES_TIMEOUT_S must be a number of seconds (0: no limit)");
        return false;
    }
    c->agent_timeout_ms = agent_s * 1000u;
    return true;
}

static const char *otel_env(const char *key, void *env)
{
    return config_env_get(env, key);
}

/* Every OTEL_* key at once (the rows after this one are read here): otelcfg.c knows them. */
static bool parse_otel(struct config *c, json_t *env, const char *v, const char *path, char *err,
                       size_t errlen)
{
    (void)v, (void)path;
    return otel_config_parse(&c->otel, otel_env, env, err, errlen);
}

static bool same_otel(const struct config *a, const struct config *b)
{
    return otel_config_same(&a->otel, &b->otel);
}

static const char bool_err_listener[] =
    "MCP_SESSIONS and MCP_ALLOW_NON_LOOPBACK take 1/0, true/false";
static const char ttl_err[] = "OAUTH_ACCESS_TTL_S must be 1-86400 seconds and "
                              "OAUTH_REFRESH_TTL_S 60-31622400, not less than the access token's";
static const char timeout_err[] =
    "MCP_HEADER_TIMEOUT_S and MCP_BODY_TIMEOUT_S must be 1-3600 seconds";

const struct config_key config_keys[] = {
    /* authentication */
    {.key = "MCP_AUTH_TOKEN",
     .type = CONFIG_SECRET,
     .section = CONFIG_SEC_AUTH,
     .flags = CONFIG_RELOAD,
     .field = F(token_hash),
     .example = "",
     .dflt_text = "none",
     .parse = parse_token,
     .help = "Its principal is owner: every tool, every agent. Without it there is no static owner "
             "token: the owner allows OAuth clients with the consent passphrase and uses the CLI "
             "(hermes-mcp tasks, approve, oauth ...); /metrics is then read with a token holding "
             "hermes:admin.",
     .summary =
         "The owner's bearer token, 64 hexadecimal characters. Leave it to `hermes-mcp token "
         "gen`; never paste one here. Without it (OAuth only) OAUTH_ISSUER_URL or "
         "TOKENS_FILE must be set."},
    {.key = "TOKENS_FILE",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_AUTH,
     .flags = CONFIG_RELOAD | CONFIG_EMPTY_NONE | CONFIG_HOME,
     .field = F(tokens_file),
     .dflt_text = "none",
     .help = "Re-read on SIGHUP.",
     .summary = "More bearer tokens, one per role, each with the least scopes it needs (YAML, mode "
                "600, hashes only), e.g. $HOME/.config/hermes-mcp/tokens.yaml. Make a token with: "
                "hermes-mcp token gen --name N --scopes S. Empty: MCP_AUTH_TOKEN alone."},
    {.key = "OAUTH_ISSUER_URL",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_AUTH,
     .field = F(oauth_issuer),
     .dflt_text = "none (no OAuth)",
     .parse = configoauth_issuer,
     .help = "Turns on the OAuth resource-server answers and the authorization server.",
     .summary =
         "The server's public origin (https://HOST[:PORT]; http only on loopback), for OAuth "
         "clients: 401s then name the protected resource metadata served at "
         "/.well-known/oauth-protected-resource, and the server is its own authorization "
         "server (/authorize, /token, /register); set the owner's consent passphrase with: "
         "hermes-mcp oauth passwd."},
    /* OAuth */
    {.key = "OAUTH_DCR",
     .type = CONFIG_FLAG,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH,
     .field = F(oauth_dcr),
     .dflt = 1,
     .summary = "Dynamic client registration (/register); 0 turns it off."},
    {.key = "OAUTH_CLIENT_ID",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH,
     .field = F(oauth_client_id),
     .dflt_text = "none",
     .parse = configoauth_static_client,
     .same = configoauth_same_static_client,
     .summary = "A static confidential client (a claude.ai or Claude Desktop connector's client id "
                "and secret): both or neither; the id 1-64 letters, digits, '-', '.', '_' or '~'. "
                "Make a pair with: hermes-mcp oauth mint-client. Empty: no static client."},
    {.key = "OAUTH_CLIENT_SECRET",
     .type = CONFIG_SECRET,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH | CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt_text = "none",
     .summary = "The static client's secret, at least 32 characters; only its SHA-256 is kept. A "
                "change takes effect at a restart, as OAUTH_CLIENT_ID's does."},
    {.key = "OAUTH_ALLOWED_REDIRECT_SCHEMES",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH,
     .field = F(oauth_redirect_schemes),
     .example = "claude,claudeai,cursor",
     .dflt_text = "claude,claudeai,cursor",
     .parse = configoauth_redirect_schemes,
     .summary = "Redirect URI schemes a client may use besides https (and http on loopback), "
                "lower case, comma-separated; never javascript, data or file."},
    {.key = "OAUTH_CIMD",
     .type = CONFIG_FLAG,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH,
     .field = F(oauth_cimd),
     .dflt = 1,
     .summary = "Client ID metadata documents (a client_id that is an https URL, fetched with a 5 "
                "KiB cap, a 5 s timeout, no redirects and never from a private address); 0 turns "
                "them off."},
    {.key = "OAUTH_CIMD_CA_FILE",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH | CONFIG_EMPTY_NONE,
     .field = F(oauth_cimd_ca_file),
     .dflt_text = "none",
     .parse = configoauth_cimd_ca_file,
     .summary = "Private deployments only: an extra CA file (PEM) trusted when fetching those "
                "documents; it must be readable at start."},
    {.key = "OAUTH_CIMD_ALLOW_HOSTS",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH | CONFIG_EMPTY_NONE,
     .field = F(oauth_cimd_allow_hosts),
     .dflt_text = "none",
     .summary = "Private deployments only: host names (comma-separated) whose documents may be "
                "served from private or loopback addresses."},
    {.key = "OAUTH_ACCESS_TTL_S",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH,
     .field = F(oauth_access_ttl_s),
     .dflt = 3600,
     .min = 1,
     .max = DAY,
     .scale = 1,
     .unit = "seconds",
     .err = ttl_err,
     .summary = "The lifetime of an access token."},
    {.key = "OAUTH_REFRESH_TTL_S",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_OAUTH,
     .flags = CONFIG_OAUTH,
     .field = F(oauth_refresh_ttl_s),
     .dflt = 30 * DAY,
     .min = 60,
     .max = 366 * DAY,
     .scale = 1,
     .unit = "seconds",
     .err = ttl_err,
     .parse = configoauth_refresh_ttl,
     .summary = "The lifetime of a refresh token (30 days by default), not less than an access "
                "token's."},
    /* external identity provider */
    {.key = "OIDC_ISSUER_URL",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OIDC,
     .field = F(oidc_issuers),
     .example = "",
     .dflt_text = "none",
     .parse = configoidc_issuers,
     .help = "Works beside MCP_AUTH_TOKEN, TOKENS_FILE and OAUTH_ISSUER_URL; the protected "
             "resource metadata lists every accepted issuer. Each issuer's metadata is found by "
             "OpenID Connect discovery (else RFC 8414) and its key set cached per Cache-Control. "
             "See docs/guides/identity-providers.md.",
     .summary = "The issuers (https; http only on loopback) of an identity provider (Okta, Entra "
                "ID, Keycloak, Auth0, Google...) whose JWT access tokens are accepted, exactly as "
                "their tokens' iss says, separated by spaces; at most 8. The principal is "
                "oidc:<OIDC_PRINCIPAL_CLAIM>."},
    {.key = "OIDC_AUDIENCE",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OIDC,
     .flags = CONFIG_BY_OTHER,
     .field = F(oidc_audience),
     .dflt_text = "none (required with OIDC_ISSUER_URL)",
     .summary = "What a token's aud must name to be accepted here: this server's URL "
                "(https://HOST/mcp), or for Entra ID v2 tokens the application's client id; "
                "several separated by spaces. The first that is a URL is the resource the "
                "protected resource metadata names."},
    {.key = "OIDC_PRINCIPAL_CLAIM",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OIDC,
     .field = F(oidc_principal_claim),
     .example = "sub",
     .dflt_text = "sub",
     .parse = configoidc_claims,
     .summary = "The claim that names the principal: sub for users; azp or client_id for machine "
                "clients (client credentials)."},
    {.key = "OIDC_SCOPES_CLAIM",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OIDC,
     .flags = CONFIG_BY_OTHER,
     .field = F(oidc_scopes_claim),
     .example = "scope",
     .dflt_text = "scope",
     .summary = "The claims that carry the token's scopes (1-4, separated by spaces): each a "
                "space-separated string (scope, Entra's scp) or an array (roles). Names that are "
                "not ours are mapped by the tokens file's oidc: scopes table (Entra app roles, "
                "say)."},
    {.key = "OIDC_INTROSPECTION_URL",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OIDC,
     .field = F(oidc_introspection_url),
     .dflt_text = "none (opaque tokens refused)",
     .parse = configoidc_introspection,
     .summary = "The provider's token introspection endpoint (RFC 7662), for opaque access "
                "tokens; answers are cached until the token's exp at most. Needs OIDC_CLIENT_ID "
                "and OIDC_CLIENT_SECRET."},
    {.key = "OIDC_CLIENT_ID",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_OIDC,
     .flags = CONFIG_BY_OTHER,
     .field = F(oidc_client_id),
     .dflt_text = "none",
     .summary = "The client this server introspects tokens as (HTTP Basic)."},
    {.key = "OIDC_CLIENT_SECRET",
     .type = CONFIG_SECRET,
     .section = CONFIG_SEC_OIDC,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt_text = "none",
     .summary = "Its secret (the env file must then be mode 600)."},
    /* listener */
    {.key = "MCP_HOST",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_LISTENER,
     .field = F(host),
     .example = "127.0.0.1",
     .dflt_text = "127.0.0.1",
     .parse = parse_host,
     .summary = "Listen address; anything but loopback also needs MCP_ALLOW_NON_LOOPBACK=1."},
    {.key = "BIND_HOST",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_LISTENER,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .example = "127.0.0.1",
     .dflt_text = "127.0.0.1",
     .summary = "The older name of MCP_HOST (the same setting; the two may not differ)."},
    {.key = "MCP_ALLOW_NON_LOOPBACK",
     .type = CONFIG_BOOL,
     .section = CONFIG_SEC_LISTENER,
     .field = F(allow_remote),
     .err = bool_err_listener,
     .summary = "1: MCP_HOST may be an address beyond loopback."},
    {.key = "MCP_PORT",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LISTENER,
     .field = F(port),
     .dflt = 8765,
     .min = 0,
     .max = 65535,
     .scale = 1,
     .unit = "port",
     .err = "MCP_PORT must be a port number (0-65535)",
     .summary = "Listen port; 0 picks a free one."},
    {.key = "MCP_TOOL_ALIASES",
     .type = CONFIG_BOOL,
     .section = CONFIG_SEC_LISTENER,
     .field = F(tool_aliases),
     .err = "MCP_TOOL_ALIASES takes 1/0, true/false",
     .summary = "1: tools/list also shows the older tool names hermes_ask and hermes_check "
                "(callable either way)."},
    {.key = "MCP_SESSIONS",
     .type = CONFIG_BOOL,
     .section = CONFIG_SEC_LISTENER,
     .field = F(sessions),
     .err = bool_err_listener,
     .summary = "1: Mcp-Session-Id on initialize, GET /mcp (SSE) and DELETE /mcp."},
    {.key = "MCP_PUBLIC_HOSTS",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_LISTENER,
     .flags = CONFIG_RELOAD,
     .field = F(public_hosts),
     .dflt_text = "none",
     .summary = "Host names a tunnel or proxy uses, comma-separated; a leading dot allows every "
                "name under it (e.g. .trycloudflare.com for quick tunnels)."},
    {.key = "TRUSTED_PROXIES",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_LISTENER,
     .field = F(trusted_proxies),
     .dflt_text = "none",
     .summary = "Proxies whose X-Forwarded-For names the client (behind a tunnel: 127.0.0.1,::1)."},
    {.key = "MCP_MAX_CONNECTIONS",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LISTENER,
     .field = F(max_conns),
     .dflt = 16384,
     .min = 1,
     .max = 1000000,
     .scale = 1,
     .unit = "connections",
     .err = "MCP_MAX_CONNECTIONS must be a positive number",
     .summary = "Simultaneous HTTP connections."},
    /* limits and timeouts */
    {.key = "RATE_LIMIT_PER_MIN",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LIMITS,
     .field = F(rate_per_min),
     .dflt = 30,
     .max = 1000000,
     .scale = 1,
     .unit = "requests",
     .err = "RATE_LIMIT_PER_MIN must be a number of requests (0: no limit)",
     .help = "Per client IP (IPv6: per /64), for requests without a valid token (none, a wrong "
             "one, unknown paths): what stops guessing and floods; bursts up to the same; over it: "
             "429 with Retry-After; /health is exempt.",
     .summary = "Requests a minute per client address without a valid token; 0: off."},
    {.key = "RATE_LIMIT_AUTH_PER_MIN",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LIMITS,
     .field = F(rate_auth_per_min),
     .dflt = 600,
     .max = 1000000,
     .scale = 1,
     .unit = "requests",
     .err = "RATE_LIMIT_AUTH_PER_MIN must be a number of requests (0: no "
            "limit)",
     .help = "Per credential and client address; behind a tunnel or proxy not listed in "
             "TRUSTED_PROXIES every client is 127.0.0.1, so it is per credential there. The first "
             "429 of a client or credential in each minute is logged (warn), naming the address or "
             "the credential's hash prefix, never the token.",
     .summary = "Requests a minute per credential with a valid token; 0: off."},
    {.key = "MCP_HEADER_TIMEOUT_S",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LIMITS,
     .field = F(header_timeout_ms),
     .dflt = 15,
     .min = 1,
     .max = 3600,
     .scale = 1000,
     .unit = "seconds",
     .err = timeout_err,
     .summary = "How long a client may take to send a request's headers (a slow-sender defence)."},
    {.key = "MCP_BODY_TIMEOUT_S",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LIMITS,
     .field = F(body_timeout_ms),
     .dflt = 60,
     .min = 1,
     .max = 3600,
     .scale = 1000,
     .unit = "seconds",
     .err = timeout_err,
     .summary = "How long a client may take to send a request's body."},
    {.key = "MCP_CALL_TIMEOUT_S",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LIMITS,
     .field = F(call_timeout_ms),
     .dflt = 1800,
     .max = 7 * DAY,
     .scale = 1000,
     .unit = "seconds",
     .err = "MCP_CALL_TIMEOUT_S must be a number of seconds (0: no limit)",
     .help = "The call is answered with error -32001.",
     .summary = "A call still running after this is stopped (-32001); 0: no limit."},
    {.key = "MCP_DRAIN_GRACE_S",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_LIMITS,
     .flags = CONFIG_RELOAD,
     .field = F(drain_grace_s),
     .dflt = 10,
     .max = 3600,
     .scale = 1,
     .unit = "seconds",
     .err = "MCP_DRAIN_GRACE_S must be 0-3600 seconds (0: no grace period)",
     .help = "Calls still running then are answered 503 (or get error -32000 on their SSE stream).",
     .summary = "On SIGTERM, how long calls in flight may still finish; 0: they are answered 503 "
                "at once."},
    {.key = "LOG_LEVEL",
     .type = CONFIG_ENUM,
     .section = CONFIG_SEC_LIMITS,
     .flags = CONFIG_RELOAD,
     .field = F(log_level),
     .example = "info",
     .dflt_text = "info",
     .parse = parse_log_level,
     .help = "Logs go to stderr, one line per event.",
     .summary = "error, warn, info or debug."},
    /* files */
    {.key = "TASKS_DIR",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_FILES,
     .flags = CONFIG_HOME,
     .field = F(tasks_dir),
     .beside = "tasks",
     .example = "$HOME/.local/share/hermes-mcp/tasks",
     .dflt_text = "tasks beside the env file",
     .help = "One directory per task id: request.json, run.json, result.json and the agent's files "
             "(mode 700/600, written atomically).",
     .summary = "Where tasks are kept, one file each."},
    {.key = "TASKS_RETENTION_DAYS",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_FILES,
     .flags = CONFIG_RELOAD,
     .field = F(tasks_retention_days),
     .dflt = 30,
     .max = 100000,
     .scale = 1,
     .unit = "days",
     .err = "TASKS_RETENTION_DAYS must be a number of days (0: no limit)",
     .summary = "Finished tasks older than this many days are pruned (at start, on SIGHUP and "
                "hourly); 0: off."},
    {.key = "TASKS_MAX",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_FILES,
     .flags = CONFIG_RELOAD,
     .field = F(tasks_max),
     .dflt = 10000,
     .max = 100000000,
     .scale = 1,
     .unit = "tasks",
     .err = "TASKS_MAX must be a number of tasks (0: no limit)",
     .summary = "Finished tasks kept at most, the oldest pruned first; 0: off."},
    {.key = "AUDIT_LOG_PATH",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_FILES,
     .flags = CONFIG_HOME,
     .field = F(audit_path),
     .beside = "audit.jsonl",
     .example = "$HOME/.local/share/hermes-mcp/audit.jsonl",
     .dflt_text = "audit.jsonl beside the env file",
     .help = "Mode 600, rotated at 5 MiB (3 generations kept).",
     .summary = "The audit log, one JSON line per call."},
    /* agents */
    {.key = "HERMES_ENV_PATH",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_AGENTS,
     .flags = CONFIG_HOME,
     .field = F(hermes_env_path),
     .example = "$HOME/.hermes/.env",
     .dflt_text = "none",
     .help = "API_SERVER_HOST defaults to 127.0.0.1 and API_SERVER_PORT to 8642; the default agent "
             "when there is no registry; re-read on SIGHUP.",
     .summary = "The local agent's env file (API_SERVER_KEY, API_SERVER_HOST, API_SERVER_PORT)."},
    {.key = "AGENTS_FILE",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_AGENTS,
     .flags = CONFIG_HOME,
     .field = F(agents_file),
     .example = "$HOME/.hermes/agents.yaml",
     .dflt_text = "$HOME/.hermes/agents.yaml",
     .help = "Hot-reloaded.",
     .summary = "The agents registry (contrib/agents.example.yaml shows its form)."},
    {.key = "GATEWAY_FILE",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_AGENTS,
     .flags = CONFIG_HOME,
     .field = F(gateway_file),
     .example = "$HOME/.hermes/gateway.yaml",
     .dflt_text = "none",
     .help = "Without it the server is the bridge alone.",
     .summary = "Upstream MCP servers served through /mcp, see hermes-mcp-gateway.yaml(5); YAML, "
                "mode 600."},
    {.key = "HERMES_CONTRACT_PATH",
     .type = CONFIG_PATH,
     .section = CONFIG_SEC_AGENTS,
     .flags = CONFIG_HOME,
     .field = F(contract_path),
     .example = "$HOME/.hermes/contract.md",
     .dflt_text = "built in",
     .help = "Re-read when it changes.",
     .summary = "Markdown sent as system instructions with every task."},
    {.key = "HERMES_TIMEOUT_S",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_AGENTS,
     .field = F(agent_timeout_ms),
     .dflt = 1795,
     .max = 7 * DAY,
     .scale = 1000,
     .unit = "seconds",
     .dflt_text = "MCP_CALL_TIMEOUT_S - 5",
     .parse = parse_agent_timeout,
     .help = "Then the call ends with upstream_timeout.",
     .summary = "How long a sync task may take at the agent; 0: no limit."},
    {.key = "HERMES_POLL_MS",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_AGENTS,
     .field = F(poll_ms),
     .dflt = 1000,
     .min = 10,
     .max = 600000,
     .scale = 1,
     .unit = "milliseconds",
     .err = "HERMES_POLL_MS must be 10-600000 milliseconds",
     .help = "A followed run is finished at the agent address and key it started with, even if a "
             "reload removes the agent or changes its key.",
     .summary = "How often an async run is polled."},
    /* store */
    {.key = "STORE_URL",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_STORE,
     .field = F(store_url),
     .dflt_text = "none (the files of TASKS_DIR and beside this file)",
     .example = "",
     .parse = configstore_url,
     .help = "postgresql://USER@HOST[:PORT]/DATABASE[?PARAMS] as libpq reads it, without a "
             "password (STORE_PASSWORD, or libpq's ~/.pgpass or service file). Create or "
             "upgrade the schema first with hermes-mcp store init; the server refuses to start "
             "on a schema it does not know. This version registers each server as a replica "
             "there (hermes-mcp store status lists them); its durable state stays in its files.",
     .summary = "The PostgreSQL database several replicas share."},
    {.key = "STORE_PASSWORD",
     .type = CONFIG_SECRET,
     .section = CONFIG_SEC_STORE,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt_text = "none",
     .summary = "The database user's password (the env file must then be mode 600)."},
    {.key = "REPLICA_NAME",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_STORE,
     .field = F(replica_name),
     .dflt_text = "none (session ids are 64 hexadecimal digits)",
     .example = "",
     .parse = configstore_replica_name,
     .help = "1-12 of a-z, 0-9 and '-', different on each replica. With MCP_SESSIONS=1 each "
             "Mcp-Session-Id is NAME.<64 hex digits>, so a proxy can send every request of a "
             "session to the replica that made it (docs/guides/replicas.md has the nginx map).",
     .summary = "This replica's name: the prefix of its session ids."},
    {.key = "REPLICAS",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_STORE,
     .field = F(replicas),
     .dflt = 1,
     .min = 1,
     .max = 64,
     .scale = 1,
     .unit = "replicas",
     .err = "REPLICAS must be 1-64 (how many replicas share the load)",
     .help = "Each replica counts its own requests, so behind a round-robin proxy it enforces "
             "each limit divided by REPLICAS (rounded down, at least 1): RATE_LIMIT_PER_MIN, "
             "RATE_LIMIT_AUTH_PER_MIN, and the calls a minute and in flight of principals, roles "
             "and gateway tools. Set the same limits and REPLICAS on every replica; the limits "
             "then hold for the whole deployment.",
     .summary = "How many replicas share the load behind the proxy."},
    /* tracing (OpenTelemetry) */
    {.key = "OTEL_EXPORTER_OTLP_ENDPOINT",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_TRACING,
     .field = F(otel.url),
     .dflt_text = "none (no tracing)",
     .parse = parse_otel,
     .same = same_otel,
     .help = "Unset, tracing is off and costs nothing. Spans follow the OpenTelemetry semantic "
             "conventions for MCP: one per request, with children for upstream calls and agent "
             "runs; W3C traceparent and tracestate are taken from the request's headers and "
             "params._meta and passed on.",
     .summary = "The OTLP/HTTP collector's base URL (http or https): traces go to its "
                "/v1/traces."},
    {.key = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt_text = "none",
     .summary =
         "The traces URL as is (no /v1/traces added); wins over OTEL_EXPORTER_OTLP_ENDPOINT."},
    {.key = "OTEL_EXPORTER_OTLP_HEADERS",
     .type = CONFIG_SECRET,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .example = "",
     .dflt_text = "none",
     .help = "It may hold an API key: the file must then be mode 600, and the value is never "
             "logged.",
     .summary = "Headers sent with every export, name=value pairs separated by commas, "
                "percent-encoded (e.g. x-api-key=KEY)."},
    {.key = "OTEL_EXPORTER_OTLP_PROTOCOL",
     .type = CONFIG_ENUM,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .example = "http/protobuf",
     .dflt_text = "http/protobuf",
     .summary = "http/protobuf or http/json (grpc is not supported)."},
    {.key = "OTEL_EXPORTER_OTLP_TIMEOUT",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt = 10000,
     .min = 1,
     .max = 600000,
     .scale = 1,
     .unit = "milliseconds",
     .err = "OTEL_EXPORTER_OTLP_TIMEOUT must be 1-600000 milliseconds",
     .summary = "How long one export may take; a failed export is counted and its spans dropped, "
                "never retried."},
    {.key = "OTEL_SERVICE_NAME",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .example = "hermes-mcp",
     .dflt_text = "hermes-mcp",
     .summary = "The service.name of the spans; unset, a service.name in "
                "OTEL_RESOURCE_ATTRIBUTES, else hermes-mcp."},
    {.key = "OTEL_RESOURCE_ATTRIBUTES",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt_text = "none",
     .summary = "More resource attributes, key=value pairs separated by commas (percent-encoded), "
                "e.g. deployment.environment.name=prod."},
    {.key = "OTEL_SPAN_PRINCIPAL",
     .type = CONFIG_ENUM,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .example = "digest",
     .dflt_text = "digest",
     .help = "A principal such as oidc:<sub> may be personal data: the default names it by a "
             "stable digest, so a principal's spans still group. The digest is not keyed: it "
             "hides a name from a casual reader of the traces, but anyone who can guess a name "
             "(owner, an e-mail address) can compute its digest and recognise it (a "
             "pseudonym, not anonymity); set off where that matters.",
     .summary = "What a request's span says of its principal (hermes.principal): digest "
                "(sha256: and 16 hex digits of the name), plain (the name) or off."},
    {.key = "OTEL_TRACES_SAMPLER",
     .type = CONFIG_ENUM,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .example = "parentbased_always_on",
     .dflt_text = "parentbased_always_on",
     .summary = "always_on, always_off, traceidratio, parentbased_always_on, "
                "parentbased_always_off or parentbased_traceidratio (parentbased: a caller's "
                "sampled flag decides)."},
    {.key = "OTEL_TRACES_SAMPLER_ARG",
     .type = CONFIG_TEXT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt_text = "1",
     .summary = "The traceidratio samplers' ratio, 0 to 1."},
    {.key = "OTEL_BSP_MAX_QUEUE_SIZE",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt = 2048,
     .min = 1,
     .max = 65536,
     .scale = 1,
     .unit = "spans",
     .err = "OTEL_BSP_MAX_QUEUE_SIZE must be 1-65536 spans",
     .summary = "Spans waiting for export at most (about 2 KiB each while queued); more are "
                "dropped and counted (hermes_mcp_otel_spans_dropped_total), so a slow collector "
                "never stalls a request."},
    {.key = "OTEL_BSP_SCHEDULE_DELAY",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt = 5000,
     .max = 600000,
     .scale = 1,
     .unit = "milliseconds",
     .err = "OTEL_BSP_SCHEDULE_DELAY must be 0-600000 milliseconds",
     .summary = "How long spans gather into a batch before an export."},
    {.key = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
     .type = CONFIG_UINT,
     .section = CONFIG_SEC_TRACING,
     .flags = CONFIG_BY_OTHER,
     .field = CONFIG_NO_FIELD,
     .dflt = 512,
     .min = 1,
     .max = 65536,
     .scale = 1,
     .unit = "spans",
     .err = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be 1-65536 spans",
     .summary = "Spans in one export at most."},
};
const size_t config_nkeys = sizeof config_keys / sizeof *config_keys;
