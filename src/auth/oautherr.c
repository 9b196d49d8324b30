/* oautherr.c — the OAuth error table (oautherr.h). */
#include "oautherr.h"

#include <stddef.h>

static const struct oauth_err_info table[OAUTH_ERR_COUNT] = {
    [OAUTH_INVALID_REQUEST] = {"invalid_request", "RFC 6749 5.2",
                               "a parameter is missing, repeated or malformed; a method an "
                               "endpoint does not take; registration switched off"},
    [OAUTH_INVALID_CLIENT] = {"invalid_client", "RFC 6749 5.2",
                              "/token or /revoke: the client is unknown (it registers again) or "
                              "its secret is missing or wrong (401)"},
    [OAUTH_INVALID_GRANT] = {"invalid_grant", "RFC 6749 5.2",
                             "the code or refresh token is unknown, expired, used before, "
                             "another client's, or its PKCE verifier does not match"},
    [OAUTH_UNSUPPORTED_GRANT_TYPE] = {"unsupported_grant_type", "RFC 6749 5.2",
                                      "grant_type is neither authorization_code nor "
                                      "refresh_token"},
    [OAUTH_UNSUPPORTED_RESPONSE_TYPE] = {"unsupported_response_type", "RFC 6749 4.1.2.1",
                                         "/authorize: response_type is not code"},
    [OAUTH_INVALID_SCOPE] = {"invalid_scope", "RFC 6749 4.1.2.1",
                             "/authorize: a hermes: scope that does not exist, a gateway: scope "
                             "naming no upstream, or a scope named twice"},
    [OAUTH_INVALID_TARGET] = {"invalid_target", "RFC 8707 2",
                              "the resource parameter names another server than this one's /mcp"},
    [OAUTH_ACCESS_DENIED] = {"access_denied", "RFC 6749 4.1.2.1",
                             "the owner pressed Deny on the consent page"},
    [OAUTH_INVALID_CLIENT_METADATA] = {"invalid_client_metadata", "RFC 7591 3.2.2",
                                       "/register: the registration is malformed or too large"},
    [OAUTH_INVALID_REDIRECT_URI] = {"invalid_redirect_uri", "RFC 7591 3.2.2",
                                    "/register: a redirect URI is not https, http on the "
                                    "loopback or an allowed app scheme"},
    [OAUTH_SERVER_ERROR] = {"server_error", "RFC 6749 5.2", "the random generator failed"},
    [OAUTH_TEMPORARILY_UNAVAILABLE] = {"temporarily_unavailable", "RFC 6749 4.1.2.1",
                                       "the token store or clients file cannot be written, the "
                                       "client table is full, or registrations are rate "
                                       "limited; try again later"},
    [OAUTH_INVALID_TOKEN] = {"invalid_token", "RFC 6750 3.1",
                             "WWW-Authenticate on /mcp: the bearer token is unknown, expired, "
                             "revoked or for another resource (401)"},
    [OAUTH_INSUFFICIENT_SCOPE] = {"insufficient_scope", "RFC 6750 3.1",
                                  "WWW-Authenticate on /mcp: the token lacks the scope the "
                                  "request needs (403)"},
};

const struct oauth_err_info *oauth_err_info(enum oauth_err e)
{
    return (unsigned)e < OAUTH_ERR_COUNT ? &table[e] : NULL;
}

const char *oauth_err_name(enum oauth_err e)
{
    const struct oauth_err_info *i = oauth_err_info(e);
    return i ? i->name : "server_error";
}
