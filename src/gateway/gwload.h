/* gwload.h — reading the gateway file from disk: the one place with I/O around the pure parser.
 * The file may hold secrets (headers, env), so, like the agents registry, it must be mode 600
 * and a regular file (a FIFO or device is refused at once, never waited on). */
#ifndef HM_GWLOAD_H
#define HM_GWLOAD_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gwfile.h"

#define GW_FILE_MAX (1024 * 1024)

/* Reads and parses path; placeholders come from env (the env file's KEY=VALUE object, may be
 * NULL), then the process environment. On failure returns false with one line in err that
 * starts "gateway file PATH: " and names the upstream and key but never a value. */
bool gwload_file(const char *path, json_t *env, struct gwfile *out, char *err, size_t errlen);

/* Whether a tool of f is guarded approve (it then waits for an operator). */
bool gwload_any_approve(const struct gwfile *f);

/* The one lint of a parsed gateway file, for serve (start and reload), doctor and `gateway
 * check` alike, so none of them says OK for a file another refuses. Errors are what serve
 * refuses beyond the file's own syntax: approve guards whose approvals.timeout_s is at or
 * above the call timeout (call_timeout_ms, MCP_CALL_TIMEOUT_S; 0: none), since the engine
 * would end a waiting call first and it would look withdrawn; the line starts "gateway file
 * PATH: ". Warnings and notes name the upstream, never a value: approve guards answerable by
 * any process of this uid, an upstream with no include or exclude (default deny), a ${...}
 * placeholder in args (its value is on the child's command line), and gwfile_notes' lines.
 * Returns false when an error was emitted. */
enum gwlint_level { GWLINT_NOTE, GWLINT_WARN, GWLINT_ERROR };
typedef void gwlint_fn(enum gwlint_level level, const char *line, void *arg);
bool gwload_lint(const struct gwfile *f, const char *path, unsigned call_timeout_ms,
                 gwlint_fn *emit, void *arg);
/* gwload_lint's errors only: false with the first in err. */
bool gwload_serve_ok(const struct gwfile *f, const char *path, unsigned call_timeout_ms, char *err,
                     size_t errlen);
/* gwload_file, then gwload_serve_ok: out is empty on failure. */
bool gwload_for_serve(const char *path, json_t *env, unsigned call_timeout_ms, struct gwfile *out,
                      char *err, size_t errlen);

#endif
