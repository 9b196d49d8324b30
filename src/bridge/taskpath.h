/* taskpath.h — names inside the task directory: task ids, session names, and the relative
 * paths hermes_files accepts. Pure (no I/O); fuzzed. The I/O side (realpath containment,
 * symlinks) is in tasks.c. */
#ifndef HM_TASKPATH_H
#define HM_TASKPATH_H
#include <stdbool.h>
#include <stddef.h>

/* [A-Za-z0-9][A-Za-z0-9._-]{0,127} */
bool taskpath_id_ok(const char *id, size_t len);
/* ^[a-z0-9][a-z0-9._-]{0,63}$ */
bool taskpath_session_ok(const char *s, size_t len);
/* A relative path inside a task: non-empty components of [A-Za-z0-9._ -]-ish printable bytes,
 * no "." or ".." component, no leading "/", no backslash, no NUL, no '%' (no encoded
 * spellings), no control characters, at most 1024 bytes. "" and "." mean the task itself.
 * On success writes the normalized path (components joined by "/", "" for the top) to out.
 * On failure writes a short reason to why. */
bool taskpath_rel_ok(const char *p, size_t len, char *out, size_t outlen, const char **why);

#endif
