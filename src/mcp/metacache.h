/* metacache.h — request parsing that reuses the parsed params._meta of recent requests.
 *
 * A 2026-07-28 client sends the same _meta (protocol version, capabilities, client info: a few
 * hundred bytes) on every request, and jansson spends more on those bytes than on the rest of a
 * tools/list. The cache keeps the parsed _meta of the last few distinct ones, keyed by their
 * exact bytes; a request whose _meta matches gets that (shared, read-only) object and jansson
 * reads only the rest. The result is always equal (json_equal) to what jrpc_parse would give,
 * and its refusals are jrpc_parse's own; only the members' order may differ (the _meta, or a
 * params that held only it, comes last). Anything unusual takes jrpc_parse itself. Pure: no
 * I/O; fuzzed against jrpc_parse. The cache is shared by every caller: a hit is cheaper, so
 * a caller could time whether some other client sent exactly the same _meta (protocol
 * version, capabilities, client name: nothing secret). */
#ifndef HM_METACACHE_H
#define HM_METACACHE_H
#include "jrpc.h"

struct meta_cache;

struct meta_cache *metacache_new(void);
void metacache_free(struct meta_cache *c);
/* As jrpc_parse(p, n, why). The params._meta in the result may be shared with other requests'
 * results: read it, never change it. */
json_t *metacache_parse(struct meta_cache *c, const char *p, size_t n, struct jrpc_why *why);

#endif
