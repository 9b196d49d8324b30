/* weburl.h — the rule for the URLs the server names itself by or fetches from (its issuer, an
 * OpenID provider and the documents that provider points to): https to any host, http only to
 * a loopback host (tests, a provider on the same machine); no user info, fragment, white space
 * or quote; a port, when there is one, in 1..65535. Pure. */
#ifndef HM_WEBURL_H
#define HM_WEBURL_H
#include <stdbool.h>

enum {
    WEBURL_ROOT_ONLY = 1, /* no path but "/" (an origin) */
    WEBURL_QUERY_OK = 2,  /* a query may follow the path (Entra's jwks_uri has one) */
};

/* "localhost", 127.0.0.0/8 or ::1 (without brackets). */
bool weburl_loopback_host(const char *host);
/* url follows the rule above; flags: WEBURL_*. */
bool weburl_ok(const char *url, unsigned flags);
bool weburl_is_https(const char *url);

#endif
