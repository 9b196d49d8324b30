/* httperr.h — the errors this server answers over plain HTTP, outside JSON-RPC and OAuth
 * (/health, /metrics, the protected resource metadata, unknown paths, a refused bearer
 * token): one table of status, machine name and message. Each body,
 * {"error": name, "message": text}, is built from its row when the program is compiled, and
 * the list in docs/reference/errors.md is made from the same rows (gendocs). */
#ifndef HM_HTTPERR_H
#define HM_HTTPERR_H

struct hreq;

/* X(id, status, name, message, when): when is what the documentation says of it. */
#define HTTPERR_TABLE(X)                                                                           \
    X(HTTPERR_QUERY_TOKEN, 400, "invalid_request",                                                 \
      "access tokens are not accepted in the query string; use the Authorization header",          \
      "with OAuth, a bearer token in the URL's query string")                                      \
    X(HTTPERR_NO_TOKEN, 401, "unauthorized", "missing or invalid bearer token",                    \
      "no bearer token, or one this server does not know")                                         \
    X(HTTPERR_TOKEN_EXPIRED, 401, "unauthorized", "the bearer token has expired",                  \
      "a bearer token past its expiry")                                                            \
    X(HTTPERR_METRICS_FORBIDDEN, 403, "forbidden",                                                 \
      "/metrics is for the owner's token (MCP_AUTH_TOKEN) and for tokens holding "                 \
      "hermes:admin (a TOKENS_FILE role, an OAuth token)",                                         \
      "/metrics for a credential without hermes:admin")                                            \
    X(HTTPERR_NOT_FOUND, 404, "not_found", "no such path; the MCP endpoint is /mcp",               \
      "a path this server does not serve")                                                         \
    X(HTTPERR_METHOD_NOT_ALLOWED, 405, "method_not_allowed", "use GET",                            \
      "an HTTP method the path does not take (with Allow)")                                        \
    X(HTTPERR_RATE_LIMITED, 429, "rate_limited",                                                   \
      "too many requests; retry after the Retry-After seconds",                                    \
      "over RATE_LIMIT_PER_MIN or RATE_LIMIT_AUTH_PER_MIN (with Retry-After)")                     \
    X(HTTPERR_INTERNAL, 500, "internal", "out of memory", "the server could not build the page")   \
    X(HTTPERR_AUTH_UNAVAILABLE, 503, "auth_unavailable",                                           \
      "the identity provider's keys or introspection could not be reached; retry after the "       \
      "Retry-After seconds",                                                                       \
      "an OIDC_ISSUER_URL token while its provider's metadata, key set or introspection endpoint " \
      "does not answer")

#define HTTPERR_ENUM(id, status, name, message, when) id,
enum httperr { HTTPERR_TABLE(HTTPERR_ENUM) HTTPERR_COUNT };
#undef HTTPERR_ENUM

struct httperr_info {
    unsigned status;
    const char *name;    /* the body's error */
    const char *message; /* the body's message */
    const char *when;    /* when this server sends it, for the documentation */
    const char *body;    /* {"error":name,"message":message} */
};

const struct httperr_info *httperr_info(enum httperr e); /* NULL past the table */
/* Answers r with e's status and body (application/json). */
void httperr_reply(struct hreq *r, enum httperr e);

#endif
