/* clientmeta.h — what the authorization server reads of a client's metadata, which any client
 * sends: a redirect URI (the rule is authserver_redirect_ok_in, declared in authserver.h) and a
 * dynamic registration body (RFC 7591). Kept apart from the server, pure (jansson and strings
 * only), so that a fuzz target can reach them (tests/fuzz/fuzz_clientmeta.c). Any thread. */
#ifndef HM_CLIENTMETA_H
#define HM_CLIENTMETA_H
#include <jansson.h>
#include <stdbool.h>

#include "oautherr.h"

#define CLIENTMETA_URI_MAX 512      /* a redirect URI, as any OAuth parameter here */
#define CLIENTMETA_REDIRECTS_MAX 10 /* redirect URIs of one client */
#define CLIENTMETA_NAME_MAX 200     /* bytes of a client_name */

/* A client's name is shown on the consent page (escaped) and kept: printable text of at most
 * CLIENTMETA_NAME_MAX bytes. */
bool clientmeta_name_ok(const char *name);

/* The rules a registration body and a client metadata document share, each the first it
 * breaks as a sentence (NULL: none): redirect_uris lists 1 to CLIENTMETA_REDIRECTS_MAX
 * entries; grant_types and response_types (absent: fine) stay within the code flow, and a
 * client_name, if any, passes clientmeta_name_ok. */
const char *clientmeta_redirects_problem(json_t *uris);
const char *clientmeta_flow_problem(json_t *doc);

/* Whether a redirect URI sent to /authorize is the one registered: the same string, or, for an
 * http://127.0.0.1, http://[::1] or http://localhost URI, the same but for the port (RFC 8252
 * 7.3: a native app's loopback listener takes whatever port is free, as VS Code's does when
 * 33418 is taken, and mcp-remote's when its localhost port is). */
bool clientmeta_redirect_matches(const char *registered, const char *requested);

/* How a client authenticates at /token and /revoke (RFC 7591 token_endpoint_auth_method): a
 * public client by its id alone (and PKCE), a confidential one with the secret it was issued,
 * in the body or in an HTTP Basic header. */
enum clientmeta_auth { CLIENTMETA_AUTH_NONE, CLIENTMETA_AUTH_POST, CLIENTMETA_AUTH_BASIC };

/* The RFC 7591 name of a method ("none", "client_secret_post", "client_secret_basic"). */
const char *clientmeta_auth_name(enum clientmeta_auth a);
/* The method named name; false when it is none of those three. */
bool clientmeta_auth_parse(const char *name, enum clientmeta_auth *out);

/* Whether doc (a parsed registration body; NULL when it was not JSON) is one this server
 * registers: token_endpoint_auth_method absent, "none", "client_secret_post" or
 * "client_secret_basic" (a confidential client, issued a secret), 1 to 10
 * redirect_uris each of which authserver_redirect_ok_in(uri, schemes) accepts, grant_types and
 * response_types among ours, a printable client_name if any. NULL when it is, with *auth the
 * method asked for; else the reason, and *code set to the RFC 7591 error
 * (OAUTH_INVALID_REDIRECT_URI; left as it is otherwise).
 * An absent token_endpoint_auth_method is none, a public client: a deliberate deviation from
 * RFC 7591 2, whose default is client_secret_basic. An MCP client that leaves it out is a
 * public client using PKCE (which MCP requires of every client) and reads no secret from the
 * answer, so a secret issued to it would only make its /token requests fail. */
const char *clientmeta_check_registration(json_t *doc, const char *schemes, enum oauth_err *code,
                                          enum clientmeta_auth *auth);

/* The host a redirect URI sends the code to, as the consent page and `oauth clients` show it:
 * what follows "://" up to the path, query or fragment; for an app scheme without "://", the
 * scheme. Into out (outlen bytes, cut to fit). */
void clientmeta_redirect_host(const char *uri, char *out, size_t outlen);

#endif
