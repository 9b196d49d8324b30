/* taskscli.h — `hermes-mcp tasks list|prune`: the operator's view of TASKS_DIR and the same
 * retention rule the server applies (TASKS_RETENTION_DAYS, TASKS_MAX), run by hand. */
#ifndef HM_TASKSCLI_H
#define HM_TASKSCLI_H
#include <stddef.h>

extern const char tasks_usage[];

/* argv: the arguments after the word "tasks". Returns the exit code: 0 ok, 1 a task could not
 * be removed or TASKS_DIR could not be read, 2 usage or configuration error. */
int taskscli_main(int argc, char **argv);

/* An age in seconds as `tasks list` shows it: 45s, 3m05s, 2h10m, 4d03h (tasksdb.c too). */
void taskscli_age_text(long long seconds, char *out, size_t outlen);

#endif
