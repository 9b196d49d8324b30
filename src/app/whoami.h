/* whoami.h — what the whoami tool answers about the principal of a request: its name, kind,
 * scopes, agents and expiry; never its token nor the token's hash. */
#ifndef HM_WHOAMI_H
#define HM_WHOAMI_H
#include <jansson.h>

#include "principal.h"

enum whoami_kind {
    WHOAMI_OWNER, /* MCP_AUTH_TOKEN */
    WHOAMI_TOKEN, /* a TOKENS_FILE role */
    WHOAMI_OAUTH, /* an OAuth client's access token */
    WHOAMI_OIDC,  /* an external identity provider's token (OIDC_ISSUER_URL) */
};

/* {principal, kind, scopes, agents, expires_at, client_id?} for p (a new object). "*" in
 * scopes or agents: every one (the owner; a role without an agents: list). client_id: the
 * OAuth client's, or NULL. */
json_t *whoami_describe(const struct principal *p, enum whoami_kind kind, const char *client_id);

#endif
