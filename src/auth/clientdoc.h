/* clientdoc.h — client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, the
 * MCP 2025-11-25 authorization spec): a client_id that is an https URL names a JSON document
 * the client publishes there. This is the pure part, apart from any fetching so it can be
 * fuzzed (tests/fuzz/fuzz_clientdoc.c): which URLs may be such a client_id, what a document must
 * hold to be used, and how long its HTTP caching headers let us keep it. */
#ifndef HM_CLIENTDOC_H
#define HM_CLIENTDOC_H
#include <stdbool.h>
#include <stddef.h>

#include "clientmeta.h"

#define CLIENTDOC_URL_MAX CLIENTMETA_URI_MAX /* a client_id URL, as any OAuth parameter here */
#define CLIENTDOC_BYTES_MAX 5120 /* a document: larger ones are refused while arriving */
#define CLIENTDOC_REDIRECTS_MAX CLIENTMETA_REDIRECTS_MAX
#define CLIENTDOC_TTL_DEFAULT 300 /* seconds a document is kept without caching headers */
#define CLIENTDOC_TTL_MAX 3600    /* and at most, whatever they say */

/* What the consent page and /authorize need of a document that passed. */
struct clientdoc {
    char *name;     /* client_name, or the URL's host when it has none */
    char host[256]; /* the URL's host[:port]: where the description is published */
    char *redirects[CLIENTDOC_REDIRECTS_MAX];
    size_t nredirects;
};

/* The redirect URI rule of the server (authserver_redirect_ok_in), given so this file needs
 * nothing else. */
typedef bool clientdoc_redirect_rule(const char *uri, const char *schemes);

/* Whether s looks meant as a metadata document URL (it starts with "https://" or "http://");
 * such a client_id is never a registered one. */
bool clientdoc_is_url(const char *s);
/* Whether url may be a client_id (the draft, section 3): https, a host, a path other than "/",
 * no "." or ".." segment, no userinfo, no fragment, no whitespace or control character, at most
 * CLIENTDOC_URL_MAX bytes. On false, why says which rule failed. */
bool clientdoc_url_ok(const char *url, const char **why);
/* The URL's host (without brackets for IPv6) into out; false when it has none or it does not
 * fit. */
bool clientdoc_url_host(const char *url, char *out, size_t outlen);

/* Reads the document fetched from url (len bytes, not NUL-terminated): a JSON object whose
 * client_id is url exactly, with 1 to 10 redirect_uris that pass rule, no client_secret, a
 * token_endpoint_auth_method of none (or absent), grant_types and response_types within the
 * code flow, a printable client_name if any. On false, err holds a sentence for the page. */
bool clientdoc_parse(const char *url, const char *text, size_t len, clientdoc_redirect_rule *rule,
                     const char *schemes, struct clientdoc *out, char *err, size_t errlen);
void clientdoc_clear(struct clientdoc *d); /* frees what parse filled; leaves it zeroed */

/* Seconds a response with this Cache-Control header (NULL: none) may be kept: no-store or
 * no-cache 0, max-age=N capped at CLIENTDOC_TTL_MAX, otherwise CLIENTDOC_TTL_DEFAULT. */
unsigned clientdoc_ttl(const char *cache_control);

#endif
