/* weburl.h — the rule for the URLs the server names itself by or fetches from (its issuer, an
 * OpenID provider and the documents that provider points to): https to any host, http only to
 * a loopback host (tests, a provider on the same machine); printable ASCII only, no user info,
 * fragment, backslash or quote; a bracketed host only an IPv6 address; a port, when there is
 * one, in 1..65535. Pure. */
#ifndef HM_WEBURL_H
#define HM_WEBURL_H
#include <stdbool.h>
#include <stddef.h>

enum {
    WEBURL_ROOT_ONLY = 1, /* no path but "/" (an origin) */
    WEBURL_QUERY_OK = 2,  /* a query may follow the path (Entra's jwks_uri has one) */
};

/* "localhost", 127.0.0.0/8 or ::1 (without brackets). */
bool weburl_loopback_host(const char *host);
/* url follows the rule above; flags: WEBURL_*. */
bool weburl_ok(const char *url, unsigned flags);
bool weburl_is_https(const char *url);
/* A URL that a document fetched from `from` points to (an OpenID provider's jwks_uri): by the
 * rule above, https when from is, and on a loopback host only when from is on one too, so that
 * a remote document cannot send our next request to this machine. */
bool weburl_pointed_ok(const char *url, const char *from, unsigned flags);
/* The host of an http(s) URL (an IPv6 literal without its brackets) into host; false when
 * there is none or it does not fit hostsz. */
bool weburl_host(const char *url, char *host, size_t hostsz);

#endif
