/* readfile.h — the one way this program reads a whole settings or data file: open without
 * blocking, refuse anything but a regular file, check the size cap before allocating, read.
 * A FIFO, a device or a socket in place of a file is refused at once instead of stalling the
 * event loop (open() of a FIFO waits for a writer; read() of a device may never end). */
#ifndef HM_READFILE_H
#define HM_READFILE_H
#include <stddef.h>
#include <sys/stat.h>

/* Reads path (at most max bytes) into a new NUL-terminated buffer; *len gets its length and st
 * the file's status (for mode and mtime checks). On failure returns NULL with one line in err
 * that names the file as `what` ("the contract", or the path itself): "cannot open WHAT: ...",
 * "WHAT is not a regular file", "WHAT is larger than N KiB", "cannot read WHAT: ...". */
char *readfile_capped(const char *path, const char *what, size_t max, struct stat *st, size_t *len,
                      char *err, size_t errlen);

#endif
