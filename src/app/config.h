/* config.h — the server's settings, read from a dotenv file (docs/reference/env.md).
 * Secrets come only from that file, which must then be mode 600; argv never carries one. */
#ifndef HM_CONFIG_H
#define HM_CONFIG_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "otelcfg.h"

struct config {
    char *env_file;     /* path it was read from, or NULL for defaults */
    char *host;         /* MCP_HOST, default 127.0.0.1 */
    unsigned port;      /* MCP_PORT, default 8765; 0 picks a free port */
    bool allow_remote;  /* MCP_ALLOW_NON_LOOPBACK=1: listen beyond loopback */
    bool sessions;      /* MCP_SESSIONS=1: issue Mcp-Session-Id */
    char *public_hosts; /* MCP_PUBLIC_HOSTS: extra Host/Origin names, comma-separated */
    bool auth;          /* authentication is on: MCP_AUTH_TOKEN, TOKENS_FILE or
                           OAUTH_ISSUER_URL is set (off only without an env file) */
    bool owner_token;   /* MCP_AUTH_TOKEN is set: the owner's static bearer token; without it
                           (OAuth only) the owner allows OAuth clients with
                           the consent passphrase and uses the CLI */
    unsigned char token_hash[32]; /* SHA-256 of MCP_AUTH_TOKEN; the token itself is not kept */
    char *tokens_file;            /* TOKENS_FILE: more principals (YAML, mode 600), or NULL */
    char *oauth_issuer;    /* OAUTH_ISSUER_URL without a trailing '/': the server's public origin
                              (https, or http on loopback); NULL: no OAuth, bearer tokens only */
    char *oauth_store;     /* with oauth_issuer: the OAuth token store, oauth-tokens.json beside
                              the env file (hashes only, mode 600) */
    bool oauth_dcr;        /* OAUTH_DCR: dynamic client registration (default on; 0 turns it off) */
    char *oauth_client_id; /* OAUTH_CLIENT_ID: a static confidential client, or NULL */
    unsigned char oauth_client_secret_hash[32]; /* SHA-256 of OAUTH_CLIENT_SECRET (>= 32
                                                   characters); the secret is not kept */
    char *oauth_redirect_schemes; /* OAUTH_ALLOWED_REDIRECT_SCHEMES: app schemes a redirect URI
                                     may use besides https and http on loopback, comma-separated
                                     (default claude,claudeai,cursor) */
    bool oauth_cimd; /* OAUTH_CIMD: client ID metadata documents (default on; 0 turns off) */
    char *oauth_cimd_ca_file;     /* OAUTH_CIMD_CA_FILE: an extra CA (PEM) trusted when fetching
                                     them (private deployments), or NULL */
    char *oauth_cimd_allow_hosts; /* OAUTH_CIMD_ALLOW_HOSTS: hosts whose documents may be on
                                     private addresses, comma-separated, or NULL */
    unsigned oauth_access_ttl_s;  /* OAUTH_ACCESS_TTL_S: an access token's life (default 1 h) */
    unsigned oauth_refresh_ttl_s; /* OAUTH_REFRESH_TTL_S: a refresh token's (default 30 d) */
    bool tool_aliases; /* MCP_TOOL_ALIASES=1: the older names hermes_ask and hermes_check are listed
                          in tools/list (they are callable either way) */
    char *hermes_env_path;         /* HERMES_ENV_PATH */
    char *tasks_dir;               /* TASKS_DIR, default tasks/ beside the env file */
    unsigned tasks_retention_days; /* TASKS_RETENTION_DAYS: finished tasks older than this are
                                      pruned, default 30; 0: no age limit */
    unsigned tasks_max;            /* TASKS_MAX: finished tasks kept at most, oldest pruned first,
                                      default 10000; 0: no count limit */
    char *contract_path;           /* HERMES_CONTRACT_PATH, may be NULL (built-in contract) */
    unsigned poll_ms; /* HERMES_POLL_MS: how often a followed run is polled, default 1000 */
    unsigned agent_timeout_ms;    /* HERMES_TIMEOUT_S: a sync task's deadline at the agent; default
                                     5 s under MCP_CALL_TIMEOUT_S; 0: none */
    char *agents_file;            /* AGENTS_FILE */
    char *gateway_file;           /* GATEWAY_FILE: upstream MCP servers (src/gateway), NULL: none */
    unsigned max_conns;           /* MCP_MAX_CONNECTIONS, default 16384 */
    unsigned call_timeout_ms;     /* MCP_CALL_TIMEOUT_S (seconds), default 1800; 0: none */
    unsigned drain_grace_s;       /* MCP_DRAIN_GRACE_S: on SIGTERM, how long calls in flight may
                                     still finish, default 10; 0: answer them 503 at once */
    unsigned header_timeout_ms;   /* MCP_HEADER_TIMEOUT_S, default 15: slowloris defence */
    unsigned body_timeout_ms;     /* MCP_BODY_TIMEOUT_S, default 60 */
    unsigned rate_per_min;        /* RATE_LIMIT_PER_MIN, default 30: per client IP, for requests
                                     without a valid credential; 0: off */
    unsigned rate_auth_per_min;   /* RATE_LIMIT_AUTH_PER_MIN, default 600: per credential; 0: off */
    char *trusted_proxies;        /* TRUSTED_PROXIES: comma-separated addresses whose
                                     X-Forwarded-For is believed */
    char *audit_path;             /* AUDIT_LOG_PATH, default audit.jsonl beside the env file */
    char *oidc_issuers;           /* OIDC_ISSUER_URL: external identity providers, space-separated,
                                     or NULL */
    char *oidc_audience;          /* OIDC_AUDIENCE: what their tokens' aud must name, space-sep. */
    char *oidc_principal_claim;   /* OIDC_PRINCIPAL_CLAIM, default sub */
    char *oidc_scopes_claim;      /* OIDC_SCOPES_CLAIM, default scope */
    char *oidc_introspection_url; /* OIDC_INTROSPECTION_URL: opaque tokens, or NULL */
    char *oidc_client_id, *oidc_client_secret; /* the client that introspects (the secret is
                                                  kept: it is sent) */
    char *store_url;      /* STORE_URL: a postgresql:// URL without a password, or NULL (files) */
    char *store_password; /* STORE_PASSWORD, or NULL: libpq's password or service file */
    char *replica_name;   /* REPLICA_NAME: [a-z0-9-]{1,12}, the session ids' prefix, or NULL */
    unsigned replicas;    /* REPLICAS, default 1: each limit is divided by it */
    int log_level;        /* LOG_LEVEL: error|warn|info|debug */
    struct otel_config otel; /* the OTEL_* keys: tracing (url NULL: off) */
};

/* The table of environment keys (configtab.c): one row per key drives config_from_env,
 * config_restart_keys and the generated .env.example, docs/reference/env.md and
 * hermes-mcp.env(5). Rows are read in order; a row's parse hook, when set, replaces the parsing
 * its type implies and sets its own default. */
enum config_type {
    CONFIG_BOOL,   /* 1/0, true/false, yes/no, on/off; empty is 0 */
    CONFIG_FLAG,   /* on unless the value is exactly 0 */
    CONFIG_UINT,   /* a decimal number in [min, max], stored times scale */
    CONFIG_TEXT,   /* a string, kept as written */
    CONFIG_PATH,   /* a file or directory name */
    CONFIG_SECRET, /* never printed, never in an error */
    CONFIG_ENUM,   /* one of the words its help names */
};
#define CONFIG_RELOAD 0x1u     /* a SIGHUP applies a change (else it waits for a restart) */
#define CONFIG_OAUTH 0x2u      /* read only when OAUTH_ISSUER_URL is set */
#define CONFIG_EMPTY_NONE 0x4u /* an empty value means unset */
#define CONFIG_HOME 0x8u       /* a leading $HOME or ${HOME} becomes the user's home */
#define CONFIG_BY_OTHER 0x10u  /* read by another row's hook (an old name, one of a pair) */
#define CONFIG_NO_FIELD ((size_t)-1)

enum config_section {
    CONFIG_SEC_AUTH,
    CONFIG_SEC_OAUTH,
    CONFIG_SEC_OIDC,
    CONFIG_SEC_LISTENER,
    CONFIG_SEC_LIMITS,
    CONFIG_SEC_FILES,
    CONFIG_SEC_AGENTS,
    CONFIG_SEC_STORE,
    CONFIG_SEC_TRACING,
    CONFIG_SEC_COUNT
};

struct config_key {
    const char *key;
    enum config_type type;
    enum config_section section;
    unsigned flags;
    size_t field;                 /* offsetof(struct config, ...), or CONFIG_NO_FIELD */
    unsigned long dflt, min, max; /* CONFIG_UINT and CONFIG_BOOL */
    unsigned scale;               /* CONFIG_UINT: stored value per unit (seconds kept as ms) */
    const char *unit;             /* CONFIG_UINT: what a unit is, for the reference */
    const char *beside;           /* unset: this name beside the env file */
    const char *example;          /* the value .env.example shows; NULL: dflt or empty */
    const char *dflt_text;        /* the default as the reference states it; NULL: dflt */
    const char *summary;          /* what the key does: .env.example's comment */
    const char *help;             /* more for the reference, after the summary, or NULL */
    const char *err;              /* the one-line reason when the value is refused */
    bool (*parse)(struct config *c, json_t *env, const char *value, const char *path, char *err,
                  size_t errlen);
    bool (*same)(const struct config *a, const struct config *b); /* NULL: by field and type */
};
extern const struct config_key config_keys[];
extern const size_t config_nkeys;
extern const char *const config_section_titles[CONFIG_SEC_COUNT];

/* The OAUTH_* rows' hooks (configoauth.c). */
bool configoauth_issuer(struct config *c, json_t *env, const char *issuer, const char *path,
                        char *err, size_t errlen);
bool configoauth_static_client(struct config *c, json_t *env, const char *id, const char *path,
                               char *err, size_t errlen);
bool configoauth_same_static_client(const struct config *a, const struct config *b);
bool configoauth_redirect_schemes(struct config *c, json_t *env, const char *list, const char *path,
                                  char *err, size_t errlen);
bool configoauth_cimd_ca_file(struct config *c, json_t *env, const char *ca, const char *path,
                              char *err, size_t errlen);
bool configoauth_refresh_ttl(struct config *c, json_t *env, const char *v, const char *path,
                             char *err, size_t errlen);

/* The OIDC_* rows' hooks (configoidc.c). */
bool configoidc_issuers(struct config *c, json_t *env, const char *v, const char *path, char *err,
                        size_t errlen);
bool configoidc_claims(struct config *c, json_t *env, const char *v, const char *path, char *err,
                       size_t errlen);
bool configoidc_introspection(struct config *c, json_t *env, const char *v, const char *path,
                              char *err, size_t errlen);

/* STORE_URL and STORE_PASSWORD (configstore.c). */
bool configstore_url(struct config *c, json_t *env, const char *v, const char *path, char *err,
                     size_t errlen);
/* REPLICA_NAME (configstore.c). */
bool configstore_replica_name(struct config *c, json_t *env, const char *v, const char *path,
                              char *err, size_t errlen);

/* For the table's hooks: the value as the key's type reads it (NULL value: *out unchanged). */
bool config_parse_uint(const char *v, unsigned long max, unsigned *out);

/* Reads path (NULL: defaults only). On failure returns false with a one-line reason in err
 * that names the key or line but never a secret value. */
bool config_load(struct config *c, const char *path, char *err, size_t errlen);
/* The second half of config_load, for doctor (the first is dotenvfile_read): validates the
 * settings of env into c as config_load does (path, which may be NULL, names the file and
 * places the defaults beside it), without the file-mode rule. */
bool config_from_env(struct config *c, json_t *env, const char *path, char *err, size_t errlen);
/* env[key] when it is a string, else NULL (for the key table's parse hooks). */
const char *config_env_get(json_t *env, const char *key);
void config_cleanup(struct config *c);
/* The keys whose value differs between now and fresh but only take effect at a restart
 * (everything but the token, LOG_LEVEL, MCP_DRAIN_GRACE_S and MCP_PUBLIC_HOSTS); writes their
 * names, comma-separated, to out and returns how many. */
size_t config_restart_keys(const struct config *now, const struct config *fresh, char *out,
                           size_t outlen);
/* True for an OAUTH_ISSUER_URL: https://HOST[:PORT], or http:// with a loopback HOST; no path
 * (but a final '/'), query, fragment or user info. */
bool config_issuer_ok(const char *url);
/* True for exactly 64 hexadecimal characters. */
bool config_token_ok(const char *token);

#endif
