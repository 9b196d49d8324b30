/* log.h — one line per event on stderr, with a level.
 * Under systemd (JOURNAL_STREAM set) lines carry a <N> priority prefix that journald understands.
 * A line that tests and operators rely on is a named event (log_event): its prose, for humans,
 * ends in " [event=NAME key=value ...]", the stable part a script matches instead of the wording.
 * The names are the table log_ev_at() lists (docs/reference/log-events.md is made from it).
 * Never pass a secret, a task text or a request body to these. Loop thread (or before it runs). */
#ifndef HM_LOG_H
#define HM_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level lvl);
/* Parses "error", "warn", "info" or "debug"; returns -1 for anything else. */
int log_level_parse(const char *s);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* The named events; log_ev_at(e) says what each means and which fields it carries. */
enum log_ev {
    EV_RELOAD_APPLIED,
    EV_RELOAD_REJECTED,
    EV_RELOAD_RESTART_NEEDED,
    EV_RELOAD_IGNORED,
    EV_AGENTS_RELOADED,
    EV_AGENT_ENV_REJECTED,
    EV_CLIENTS_FILE_REJECTED,
    EV_STOP_REQUESTED,
    EV_DRAIN_STARTED,
    EV_DRAIN_FORCED,
    EV_DRAIN_OVER,
    EV_LISTEN_EXPOSED,
    EV_RATE_LIMITED,
    EV_STREAM_DROPPED,
    EV_NAME_REFUSED,
    EV_CALL_TIMED_OUT,
    EV_CLIENT_AUTH_FAILED,
    EV_AGENT_KEY_REJECTED,
    EV_APPROVAL_DECISION_UNSENT,
    EV_RUN_CLAIMED_TWICE,
    EV_RESET_STARTED,
    EV_RETENTION_PRUNED,
    EV_UPSTREAM_READY,
    EV_UPSTREAM_DOWN,
    EV_UPSTREAM_RESTART_SCHEDULED,
    EV_UPSTREAM_START_FAILED,
    EV_UPSTREAM_SESSION_ENDED,
    EV_UPSTREAM_SMOKE_FAILED,
    EV_CHILD_KILLED,
    EV_UPSTREAM_STREAM_RESUMING,
    EV_UPSTREAM_NOTIFICATION_IGNORED,
    EV_HELD_CALL_EXPIRED,
    EV_CIRCUIT_OPEN,
    EV_CIRCUIT_CLOSED,
    EV_TOOL_WITHHELD,
    EV_PINS_REREAD,
    EV_PRINCIPAL_LIMITED,
    EV_TOOL_LIMITED,
    EV_OIDC_KEYS_LOADED,
    EV_OIDC_FETCH_FAILED,
    EV_COUNT
};

struct log_ev_info {
    const char *name;   /* the value of event=, [a-z_]+ */
    enum log_level lvl; /* the level it is logged at */
    const char *fields; /* its key=value fields, in order, e.g. "upstream tools" */
    const char *when;   /* one sentence for the reference page */
};
const struct log_ev_info *log_ev_at(enum log_ev e);

/* One field of an event: LF_S for a string (NULL logs as ""), LF_N for a number. */
struct log_field {
    const char *key;
    const char *str;
    long long num;
    bool is_num;
};
#define LF_S(k, v)                                                                                 \
    {                                                                                              \
        (k), (v), 0, false                                                                         \
    }
#define LF_N(k, n)                                                                                 \
    {                                                                                              \
        (k), NULL, (long long)(n), true                                                            \
    }
#define LOG_FIELDS(...) ((const struct log_field[]){__VA_ARGS__, {NULL, NULL, 0, false}})

/* Logs fmt's prose at the event's level (log_event_at: at lvl), then " [event=NAME k=v ...]" with
 * fields (NULL for none; a list made with LOG_FIELDS). A value with a space, a quote, '=', '[',
 * ']' or a control byte is written in double quotes with \" \\ \n \r \t and \xNN escapes. The
 * fields survive a prose cut short; fields too long for the line end in "truncated=KEY" (KEY's
 * value cut, the fields after it left out). Keys are at most 24 bytes of [a-z_]. */
void log_event(enum log_ev ev, const struct log_field *fields, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_event_at(enum log_level lvl, enum log_ev ev, const struct log_field *fields,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
