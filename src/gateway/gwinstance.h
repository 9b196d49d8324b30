/* gwinstance.h — per-root upstream instances (gateway file key `instances`): which project
 * root a call belongs to. A tool's path argument (instances.by) must be absolute and resolve
 * inside one of the configured roots; the project root is the root joined with the first path
 * component below it (README "Gateway", "Per-root instances"). These functions touch the file
 * system only through realpath/stat. */
#ifndef HM_GWINSTANCE_H
#define HM_GWINSTANCE_H
#include <stdbool.h>
#include <stddef.h>

/* Whether canonical absolute `path` is canonical `root` or lies below it, compared component by
 * component: /srv/work2 is not inside /srv/work. */
bool gwi_inside(const char *root, const char *path);

/* Resolves a call's path argument (len bytes, may hold a NUL, need not be terminated) against
 * canonical roots and writes its project root into out (outlen bytes, PATH_MAX is enough) and,
 * when resolved is not NULL, the resolved path itself (PATH_MAX bytes): what the upstream is
 * sent, so it never resolves the path again (a symlink swapped since) to somewhere else. Before
 * anything is resolved, the path with its "." and ".." folded by text must lie inside one of
 * near (NULL: the roots): a path elsewhere never reaches realpath, which can hang on a dead
 * mount. Returns NULL when accepted, else a short reason that never contains the value. */
const char *gwi_project_root(const char *value, size_t len, const char *const *roots, size_t nroots,
                             const char *const *near, size_t nnear, char *out, size_t outlen,
                             char *resolved);

/* At start: expands a leading "~" with home (NULL: refused), requires an absolute existing
 * directory and writes its canonical path into out; given (PATH_MAX bytes, may be NULL) gets the
 * path as expanded, before resolving. On failure err says why, naming the root as written (it is
 * the operator's text, not a secret). */
bool gwi_canonical_root(const char *root, const char *home, char *out, size_t outlen, char *given,
                        char *err, size_t errlen);

/* ---------- the running pool (gw_internal.h's struct upstream) ---------- */
#include <jansson.h>
struct buf;
struct gateway;
struct upstream;

/* gateway_new: resolves the roots of each upstream with instances (HOME for "~") and makes its
 * empty pool. False with err naming the upstream and root when one is not a directory. */
bool gwi_pools_start(struct gateway *g, char *err, size_t errlen);
void gwi_pools_free(struct gateway *g);  /* stops every instance */
void gwi_pools_drain(struct gateway *g); /* answers the calls waiting at every instance */

/* gw_call_handler: the instance a call on the discovery upstream main goes to, started when
 * new (its calls wait until it is listed). NULL when the call is refused: *busy tells busy
 * (every instance has calls and max are running) from invalid_arguments; msg says why. The
 * path must start with a root (as configured or resolved) before it is resolved at all; once
 * accepted, args (the call's own copy) carries the resolved path in its place. */
struct upstream *gwi_route(struct upstream *main, json_t *args, bool *busy, char *msg,
                           size_t msglen);
/* Whether an upstream is an instance still starting, whose calls wait rather than fail. */
bool gwi_starting(const struct upstream *u);

/* up_listed: checks expect_tools (every upstream) and, for an instance, that each exposed
 * tool's definition is the discovery instance's. False after refusing it (up_down, no
 * restarts, the reason in u->error). */
bool gwi_check_listed(struct upstream *u);
/* up_listed: an instance is ready: its waiting calls go. */
void gwi_ready(struct upstream *u);

/* /readyz: adds "instances": {count, max, roots: {ROOT: state}} for a discovery upstream. */
void gwi_describe(const struct upstream *main, json_t *o);
/* /metrics: hermes_mcp_gateway_instances{upstream,state} and the evictions counter. */
void gwi_metrics(const struct gateway *g, struct buf *out);

#endif
