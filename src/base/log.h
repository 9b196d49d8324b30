/* log.h — one line per event on stderr, with a level.
 * Under systemd (JOURNAL_STREAM set) lines carry a <N> priority prefix that journald understands.
 * Never pass a secret, a task text or a request body to these. Loop thread (or before it runs). */
#ifndef HM_LOG_H
#define HM_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level lvl);
/* Parses "error", "warn", "info" or "debug"; returns -1 for anything else. */
int log_level_parse(const char *s);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
