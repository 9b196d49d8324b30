/* tasks.h — the durable task directory: TASKS_DIR/<id>/{request,run,result}.json plus the
 * agent's artifacts. Every write is atomic (temp file, fsync, rename, fsync of the directory):
 * a crash leaves the old file or the new one, never a torn one. Reads are capped.
 * Loop thread (plain blocking file I/O on small files). */
#ifndef HM_TASKS_H
#define HM_TASKS_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TASKS_FILE_MAX (200 * 1024) /* result.json and file reads */
#define TASKS_LIST_MAX 500          /* entries in one listing */

struct tasks;

enum tasks_rc { TASKS_OK = 0, TASKS_NOT_FOUND, TASKS_TOO_BIG, TASKS_INVALID, TASKS_IO };

/* Creates dir (mode 700) if needed. NULL with a reason in err on failure. */
struct tasks *tasks_open(const char *dir, char *err, size_t errlen);
void tasks_free(struct tasks *t);
const char *tasks_dir(const struct tasks *t);

/* Writes json as TASKS_DIR/<id>/<name> atomically (mode 600), creating the task directory. */
enum tasks_rc tasks_write(struct tasks *t, const char *id, const char *name, json_t *json);
/* Reads TASKS_DIR/<id>/<name> (at most max bytes) into *out (new reference). */
enum tasks_rc tasks_read(struct tasks *t, const char *id, const char *name, size_t max,
                         json_t **out);
bool tasks_exists(struct tasks *t, const char *id);
/* Deletes TASKS_DIR/<id>/<name> if present, and the task directory if that emptied it. */
void tasks_remove(struct tasks *t, const char *id, const char *name);

/* hermes_files: a listing of the task directory (or a sub-directory), or one UTF-8 text file.
 * rel is already validated by taskpath_rel_ok. On failure returns a code and a client-safe
 * message in why. */
enum tasks_rc tasks_files(struct tasks *t, const char *id, const char *rel, json_t **out,
                          char *why, size_t whylen);

/* Calls fn for every task directory name (ids only). */
void tasks_each(struct tasks *t, void (*fn)(const char *id, void *arg), void *arg);

#endif
