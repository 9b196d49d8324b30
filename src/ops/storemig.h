/* storemig.h — `hermes-mcp store migrate --from-files`: the task directory's records
 * (request.json, run.json, result.json of each task) copied into the PostgreSQL store, their
 * text unchanged. Idempotent and resumable: a task already in the database is left alone, and
 * each batch is its own transaction, so an interrupted copy is finished by running it again.
 * Blocking: a command line's work, never the server's. */
#ifndef HM_STOREMIG_H
#define HM_STOREMIG_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "pgrt.h"

/* The three record files of a task, in the order of their columns. */
extern const char *const storemig_names[3];
/* Their caps, as the server reads them (tasks.h). */
extern const size_t storemig_caps[3];

/* Reads a regular file (never through a symbolic link) of at most max bytes into *text
 * (NUL-terminated, free()), its length and modification time. 0 when read; else -1 when it
 * does not exist, or 1 with a short reason in why ("unreadable", "too big"). */
int storemig_read(const char *path, size_t max, char **text, size_t *len, struct timespec *mtime,
                  const char **why);

/* Copies every task of dir into hm_task; prints a progress line a batch and a summary on
 * stdout, each task refused (and why) on stderr. Returns the exit code: 0 when every task is
 * in the database (refused ones aside: they are reported, the code is then 1). */
int storemig_run(PGconn *pg, const char *dir);

#endif
