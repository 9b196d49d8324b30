/* atomicfile.h — replace a file atomically: a temp file beside it, fsync, rename, fsync of the
 * directory. A crash at any moment leaves the old file or the new one, never a torn one. */
#ifndef HM_ATOMICFILE_H
#define HM_ATOMICFILE_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes data to path with the given mode. On failure returns false with a reason in err
 * (which never contains the data). */
bool atomicfile_write(const char *path, const void *data, size_t len, mode_t mode, char *err,
                      size_t errlen);
/* write(2) until all n bytes are out (EINTR retried); false on any error or a zero write. */
bool atomicfile_write_all(int fd, const char *p, size_t n);
/* fsync of a directory, so that a rename or a new entry in it is durable. */
int atomicfile_sync_dir(const char *dir);
/* mkdir -p for the folder of a secret file: creates each missing level of dir with mode
 * (existing ones are left as they are), never through a symbolic link and never inside a folder
 * another user owns or (without the sticky bit) can write to; then refuses dir itself unless
 * it belongs to the effective uid and is not writable by group or others. On failure returns
 * false with the folder and the reason (and what to do) in err. */
bool atomicfile_mkdirs(const char *dir, mode_t mode, char *err, size_t errlen);

#endif
