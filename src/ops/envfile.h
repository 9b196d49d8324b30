/* envfile.h — atomic edits of a dotenv file (temp file, fsync, rename, mode 600). */
#ifndef HM_ENVFILE_H
#define HM_ENVFILE_H
#include <stdbool.h>
#include <stddef.h>

/* Sets KEY=value in path, keeping every other line; creates the file if missing (and the
 * missing levels of its folder, mode 700, like mkdir -p). The result is
 * mode 600 and replaces the old file in one rename. err never contains value. */
bool envfile_set(const char *path, const char *key, const char *value, char *err, size_t errlen);

#endif
