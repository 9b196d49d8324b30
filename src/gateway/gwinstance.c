/* gwinstance.c — the containment check behind per-root instances. A caller chooses an
 * upstream process (and so the directory it works in) by a path argument, so that path is
 * hostile input: it is capped and checked for NUL before anything is resolved, resolved with
 * realpath so "..", symlinks and trailing slashes cannot escape, and compared with the
 * canonical roots component by component. The project root is the root plus the first
 * component below it, which is how seed 001's graph tool keys its sessions: one per checkout
 * under a work or source root. */
#include "gwinstance.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool gwi_inside(const char *root, const char *path)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(root, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Root joined with the first component of path below it (path is inside root). */
static const char *first_below(const char *root, const char *path, char *out, size_t outlen)
{
    size_t n = strlen(root);
    const char *rest = path + n;
    while (*rest == '/')
        rest++;
    size_t comp = strcspn(rest, "/");
    size_t len = comp ? (size_t)(rest - path) + comp : n;
    if (len >= outlen)
        return "is too long";
    memcpy(out, path, len);
    out[len] = '\0';
    return NULL;
}

const char *gwi_project_root(const char *value, size_t len, const char *const *roots,
                             size_t nroots, char *out, size_t outlen)
{
    char canon[PATH_MAX];
    if (len >= PATH_MAX)
        return "is too long";
    if (memchr(value, '\0', len))
        return "contains a NUL byte";
    if (len == 0 || value[0] != '/')
        return "must be an absolute path";
    char copy[PATH_MAX];
    memcpy(copy, value, len);
    copy[len] = '\0';
    if (!realpath(copy, canon))
        return errno == ENOENT ? "does not exist" : "cannot be resolved";
    for (size_t i = 0; i < nroots; i++)
        if (gwi_inside(roots[i], canon))
            return first_below(roots[i], canon, out, outlen);
    return "is not inside an allowed root";
}

bool gwi_canonical_root(const char *root, const char *home, char *out, size_t outlen, char *err,
                        size_t errlen)
{
    char path[PATH_MAX], canon[PATH_MAX];
    struct stat st;
    int n;
    if (root[0] == '~' && (root[1] == '\0' || root[1] == '/')) {
        if (home == NULL || home[0] != '/') {
            snprintf(err, errlen, "root '%.200s' starts with ~ but HOME is not an absolute path",
                     root);
            return false;
        }
        n = snprintf(path, sizeof path, "%s%s", home, root + 1);
    } else {
        n = snprintf(path, sizeof path, "%s", root);
    }
    if (n < 0 || (size_t)n >= sizeof path) {
        snprintf(err, errlen, "root '%.200s' is too long", root);
        return false;
    }
    if (path[0] != '/') {
        snprintf(err, errlen, "root '%.200s' must be an absolute path (or start with ~)", root);
        return false;
    }
    if (!realpath(path, canon) || stat(canon, &st) != 0) {
        snprintf(err, errlen, "root '%.200s' does not exist or cannot be resolved", root);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "root '%.200s' is not a directory", root);
        return false;
    }
    if (strlen(canon) >= outlen) {
        snprintf(err, errlen, "root '%.200s' is too long", root);
        return false;
    }
    strcpy(out, canon);
    return true;
}
