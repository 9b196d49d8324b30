/* storefile.h — one OAuth store file (the tokens, the clients) shared by the running server and
 * the `hermes-mcp oauth clients|tokens` commands. Each process holds the file's content in memory
 * and rewrites it whole (atomicfile.h). So that neither loses the other's change, a writer holds
 * an exclusive lock on a sidecar file, "<path>.lock", from reading the file to writing it back;
 * and so that a revocation from the command line takes effect in a running server without a
 * restart or a signal, the server notices that the file was replaced (its identity: device,
 * inode, size, modification time) and reads it again. */
#ifndef HM_STOREFILE_H
#define HM_STOREFILE_H
#include <stdbool.h>
#include <sys/stat.h>

struct storefile_id {
    bool exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

/* Blocks until this process holds the lock of path's store; returns the descriptor to give to
 * storefile_unlock, or -1 when the lock file cannot be opened (the caller goes on unlocked: the
 * write that follows reports the real problem, which is the directory). */
int storefile_lock(const char *path);
void storefile_unlock(int fd); /* -1 is a no-op */
/* The identity of the file st describes (st NULL: no file). */
void storefile_id_of(const struct stat *st, struct storefile_id *id);
/* Records path's identity now (after this process wrote it). */
void storefile_note(const char *path, struct storefile_id *id);
/* Whether path is no longer the file id describes: another process replaced or removed it. */
bool storefile_changed(const char *path, const struct storefile_id *id);

#endif
