/* cimd.h — fetching client ID metadata documents for /authorize, on the event loop (libcurl
 * multi, no thread of ours), and keeping them a while. A fetch is https only, capped in size
 * (CLIENTDOC_BYTES_MAX, checked as the bytes arrive) and time, follows no redirect, goes through
 * no proxy, and connects to no private, loopback or link-local address (checked on the address
 * curl is about to connect to, so a DNS answer that changes between lookups cannot slip one
 * in) unless the host is one the operator named (OAUTH_CIMD_ALLOW_HOSTS). Documents that pass
 * clientdoc_parse are cached for what their Cache-Control allows, at most an hour, in a table
 * of CIMD_CACHE_MAX entries. Loop thread only. */
#ifndef HM_CIMD_H
#define HM_CIMD_H
#include <stdbool.h>
#include <stddef.h>

#include "clientdoc.h"

struct loop;
struct sockaddr;
struct cimd;
struct cimd_fetch;

#define CIMD_CACHE_MAX 64
#define CIMD_FETCHES_MAX 16  /* at once; more get "busy" */
#define CIMD_TIMEOUT_MS 5000 /* a whole fetch: connect, TLS, headers and body */

struct cimd_opts {
    const char *ca_file;     /* an extra CA bundle (PEM) to trust, or NULL: the system's */
    const char *allow_hosts; /* comma-separated host names that may resolve to private
                                addresses (OAUTH_CIMD_ALLOW_HOSTS), or NULL */
    const char *schemes;     /* app redirect schemes (OAUTH_ALLOWED_REDIRECT_SCHEMES) */
    clientdoc_redirect_rule *rule;
    unsigned timeout_ms; /* 0: CIMD_TIMEOUT_MS */
};

/* doc is NULL on failure, with error a sentence for the owner's page; valid during the call. */
typedef void cimd_cb(void *arg, const struct clientdoc *doc, const char *error);

struct cimd *cimd_new(struct loop *l, const struct cimd_opts *o);
void cimd_free(struct cimd *c); /* NULL-safe; cancels fetches still running (no callback) */
/* The cached document of url while it is fresh, or NULL. */
const struct clientdoc *cimd_cached(struct cimd *c, const char *url);
/* Fetches url, checks it, caches it, then calls cb (never from inside this call). NULL with
 * a reason in err when it cannot start (a URL that is not a valid client_id, too many at
 * once). */
struct cimd_fetch *cimd_fetch(struct cimd *c, const char *url, cimd_cb *cb, void *arg, char *err,
                              size_t errlen);
/* Whether CIMD_FETCHES_MAX fetches are running, so cimd_fetch would refuse another. */
bool cimd_busy(const struct cimd *c);
/* The callback is not called; NULL-safe. Not from inside that fetch's callback. */
void cimd_cancel(struct cimd_fetch *f);
/* Whether a connection to sa is to a public address: not loopback, private (RFC 1918, ULA),
 * link-local, CGNAT, unspecified, multicast or reserved, IPv4-mapped ones included. */
bool cimd_addr_public(const struct sockaddr *sa);
/* Whether host is in the comma-separated list (case-insensitive, exact). */
bool cimd_host_listed(const char *host, const char *list);

#endif
