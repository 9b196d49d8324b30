/* principal.h — who a bearer credential is and what it may do (least privilege).
 *
 * Every credential the server accepts is a named principal: MCP_AUTH_TOKEN is "owner" (every
 * scope, every agent); TOKENS_FILE adds one principal per role, each with the scopes it needs
 * and, optionally, the agents it may delegate to (so a Hermes role can be kept from reaching its
 * own agent) and an expiry. Only SHA-256 hashes of tokens are kept.
 *
 * Scopes: hermes:read (hermes_status, hermes_result, hermes_files, list_agents), hermes:task
 * (hermes_task, hermes_cancel), hermes:admin (hermes_reset), gateway:<upstream> (the tools the
 * gateway exposes from that upstream). A set of principals is immutable and reference counted: a
 * reload swaps in a new set while requests that started under the old one keep theirs. Loop thread.
 */
#ifndef HM_PRINCIPAL_H
#define HM_PRINCIPAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define PRINCIPAL_NAME_MAX 64
#define PRINCIPALS_MAX 256    /* entries in a tokens file */
#define PRINCIPAL_LIST_MAX 64 /* scopes or agents of one entry */
#define PRINCIPAL_OWNER "owner"
#define PRINCIPAL_PER_MIN_MAX 1000000 /* limits: calls_per_min at most */
#define PRINCIPAL_IN_FLIGHT_MAX 10000 /* limits: calls_in_flight at most */

struct principal {
    char name[PRINCIPAL_NAME_MAX + 1];
    unsigned char hash[32]; /* SHA-256 of the token */
    bool all;               /* the owner: every scope and every agent */
    char **scopes;          /* nscopes entries */
    size_t nscopes;
    char **agents; /* the agents: allowlist; NULL (nagents 0) when the entry has none */
    size_t nagents;
    time_t expires; /* 0: never */
    /* limits: of the entry: tools/call this principal may start a minute (a token bucket,
     * bursts up to it); over it a call gets the tool error busy. 0: no limit. */
    unsigned calls_per_min;
    unsigned calls_in_flight; /* tools/call of this principal running at once; 0: no limit */
};

struct claimmap;

struct principals {
    struct principal *v;
    size_t n;
    unsigned refs;
    struct claimmap *claims; /* the file's oidc: section (claimmap.h), or NULL */
};

/* True for a scope this server knows: hermes:read, hermes:task, hermes:admin, or
 * gateway:<name> with name 1-64 of [A-Za-z0-9._-] (not starting with . or -). */
bool principal_scope_known(const char *scope);
/* True for a principal or agent name: 1-64 of [A-Za-z0-9._-], starting with a letter or digit. */
bool principal_name_ok(const char *name);

/* The tokens file (YAML, see README "Principals"), parsed and validated without I/O; fuzzed.
 * Returns a set with refs 1 (the owner not included), or NULL with a one-line reason in err
 * that names the entry or line but never quotes a hash. */
struct principals *tokens_parse(const char *text, size_t len, char *err, size_t errlen);
/* A limits: mapping ({calls_per_min: N, calls_in_flight: M}, each optional, 0 for none) into
 * the two counts; who ("principal 'ci'") begins the reason in err. */
bool tokens_parse_limits(json_t *l, const char *who, unsigned *per_min, unsigned *in_flight,
                         char *err, size_t errlen);
/* "2027-01-31" or "2027-01-31T12:00:00Z" (UTC) into Unix seconds; false when malformed. */
bool tokens_parse_time(const char *text, time_t *out);

/* The set the server uses: the owner (owner_hash, NULL for none) then the tokens file's
 * principals (tokens_file NULL for none). The file must be a regular file of mode 600 (or
 * stricter) at most 1 MiB. NULL with a reason in err when it cannot be used. */
struct principals *principals_load(const unsigned char *owner_hash, const char *tokens_file,
                                   char *err, size_t errlen);
/* False with a reason in err when a rule of s's oidc: section names an issuer that issuers
 * (OIDC_ISSUER_URL's list, space-separated; NULL for none) does not hold. */
bool principals_check_issuers(const struct principals *s, const char *issuers, char *err,
                              size_t errlen);
struct principals *principals_ref(struct principals *s);
void principals_unref(struct principals *s); /* NULL-safe */

/* The principal whose token is `token`, or NULL. Every hash is compared, in constant time. */
const struct principal *principals_find(const struct principals *s, const char *token);
bool principal_expired(const struct principal *p, time_t now);
/* Whether p holds scope. A NULL scope (a tool that declared none) only the owner holds. */
bool principal_has_scope(const struct principal *p, const char *scope);
/* Whether p may delegate to the agent, or with agent NULL to every agent: the owner and
 * principals without an agents: list may use any agent. */
bool principal_agent_allowed(const struct principal *p, const char *agent);

/* The name of OAuth client client_id's principal, into out: "oauth:<client_id>" when that
 * fits in PRINCIPAL_NAME_MAX, else "oauth:<the id's first 37 characters>#<the first 20 hex
 * digits of its SHA-256>", so that clients whose ids differ only past the cut (client ID
 * metadata document URLs) never share a name, and with it their tasks. */
void principal_oauth_name(const char *client_id, char out[PRINCIPAL_NAME_MAX + 1]);

/* A principal for one OAuth access token (not part of any set): named name (cut to
 * PRINCIPAL_NAME_MAX; principal_oauth_name's names fit), holding the space-separated scopes, every
 * agent, its hash from token. Freed with principal_free. */
struct principal *principal_for_grant(const char *name, const char *scope, const char *token);
void principal_free(struct principal *p); /* NULL-safe */

#endif
