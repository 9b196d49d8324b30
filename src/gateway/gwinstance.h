/* gwinstance.h — per-root upstream instances (gateway file key `instances`, issue 15
 * behaviour 5): which project root a call belongs to. A tool's path argument (instances.by)
 * must be absolute and resolve inside one of the configured roots; the project root is the
 * root joined with the first path component below it (README "Gateway", "Per-root
 * instances"). These functions touch the file system only through realpath/stat. */
#ifndef HM_GWINSTANCE_H
#define HM_GWINSTANCE_H
#include <stdbool.h>
#include <stddef.h>

/* Whether canonical absolute `path` is canonical `root` or lies below it, compared component by
 * component: /srv/work2 is not inside /srv/work. */
bool gwi_inside(const char *root, const char *path);

/* Resolves a call's path argument (len bytes, may hold a NUL, need not be terminated) against
 * canonical roots and writes its project root into out (outlen bytes, PATH_MAX is enough).
 * Returns NULL when accepted, else a short reason that never contains the value. */
const char *gwi_project_root(const char *value, size_t len, const char *const *roots,
                             size_t nroots, char *out, size_t outlen);

/* At start: expands a leading "~" with home (NULL: refused), requires an absolute existing
 * directory and writes its canonical path into out. On failure err says why, naming the
 * root as written (it is the operator's text, not a secret). */
bool gwi_canonical_root(const char *root, const char *home, char *out, size_t outlen, char *err,
                        size_t errlen);

#endif
