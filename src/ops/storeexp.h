/* storeexp.h — `hermes-mcp store export --to DIR`: every task of the PostgreSQL store written
 * back as files, the task directory's layout (DIR/<id>/request.json, run.json, result.json),
 * each atomically, so that a move back to files loses nothing. Blocking: a command line's work. */
#ifndef HM_STOREEXP_H
#define HM_STOREEXP_H

#include "pgrt.h"

/* Refuses a DIR holding anything but task directories, or the record files of a task the
 * database does not hold (nothing is written then). The agent's files in a task directory are
 * left alone and a record file is replaced by the database's text, so DIR may be the TASKS_DIR
 * the records came from; files already the database's are kept: a second export writes
 * nothing. Returns the exit code. */
int storeexp_run(PGconn *pg, const char *dir);

#endif
