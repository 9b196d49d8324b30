/* hdr.h — parsers for the HTTP header values we act on. Pure: no I/O, no globals; fuzzed. */
#ifndef HM_HDR_H
#define HM_HDR_H
#include <stdbool.h>
#include <stddef.h>

/* True if a comma-separated list (Accept, Connection...) holds token, case-insensitively,
 * ignoring parameters (";q=0.9"). */
bool hdr_list_has(const char *value, const char *token);
/* True if a Content-Type value is media_type, with or without parameters. */
bool hdr_media_type_is(const char *value, const char *media_type);
/* Splits "host[:port]" or "[v6]:port". host points into s; port is -1 when absent. Returns
 * false for anything malformed (empty host, bad or out-of-range port, junk after "]"). */
bool hdr_split_hostport(const char *s, const char **host, size_t *hlen, long *port);
/* Splits an Origin ("scheme://host[:port]") the same way; false for "null" and anything else
 * that is not an http(s) origin. */
bool hdr_split_origin(const char *s, const char **host, size_t *hlen, long *port);
/* Returns the credentials of "Bearer <token>" (scheme case-insensitive), or NULL. */
const char *hdr_bearer(const char *value);

#endif
