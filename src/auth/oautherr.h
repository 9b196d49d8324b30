/* oautherr.h — the OAuth error codes this server answers with: the `error` of a JSON error
 * (RFC 6749 5.2), of a redirect back to a client (4.1.2.1), of a registration (RFC 7591 3.2.2)
 * and of a WWW-Authenticate challenge (RFC 6750 3.1). One table gives each its wire name and
 * what it means here; docs/reference/errors.md is made from it. */
#ifndef HM_OAUTHERR_H
#define HM_OAUTHERR_H

enum oauth_err {
    OAUTH_INVALID_REQUEST,
    OAUTH_INVALID_CLIENT,
    OAUTH_INVALID_GRANT,
    OAUTH_UNSUPPORTED_GRANT_TYPE,
    OAUTH_UNSUPPORTED_RESPONSE_TYPE,
    OAUTH_INVALID_SCOPE,
    OAUTH_INVALID_TARGET,
    OAUTH_ACCESS_DENIED,
    OAUTH_INVALID_CLIENT_METADATA,
    OAUTH_INVALID_REDIRECT_URI,
    OAUTH_SERVER_ERROR,
    OAUTH_TEMPORARILY_UNAVAILABLE,
    OAUTH_INVALID_TOKEN,
    OAUTH_INSUFFICIENT_SCOPE,
    OAUTH_ERR_COUNT
};

struct oauth_err_info {
    const char *name;    /* on the wire */
    const char *rfc;     /* where it is defined */
    const char *meaning; /* when this server sends it */
};

const char *oauth_err_name(enum oauth_err e);
const struct oauth_err_info *oauth_err_info(enum oauth_err e); /* NULL past the table */

#endif
