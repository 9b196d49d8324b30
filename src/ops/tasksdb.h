/* tasksdb.h — `hermes-mcp tasks list` and `tasks prune` when the env file sets STORE_URL: the
 * same output read from (and removals made in) the database the replicas share, by the rule
 * the servers' retention uses (finished tasks only, oldest first). Blocking: a command line. */
#ifndef HM_TASKSDB_H
#define HM_TASKSDB_H
#include <stdbool.h>

struct config;

/* Exit code: 0, 1 (the database failed or is not at this binary's schema). */
int tasksdb_list(const struct config *c, bool as_json);
int tasksdb_prune(const struct config *c, bool dry_run);

#endif
