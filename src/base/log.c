/* log.c — leveled one-line logging to stderr, and the named events (log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set on the loop thread (start, SIGHUP), read by the writer threads too. */
static _Atomic int current = LOG_INFO;

#define EVENT_MARK " [event="

/* The one list of event names: log_event() logs only these, gendocs prints them. */
static const struct log_ev_info events[EV_COUNT] = {
    [EV_RELOAD_APPLIED] = {"reload_applied", LOG_INFO, "config file",
                           "A SIGHUP reload took effect: `config` is `env` (the env file, "
                           "`file`) or `gateway` (the gateway file)."},
    [EV_RELOAD_REJECTED] = {"reload_rejected", LOG_WARN, "config",
                            "A reload was refused; the server runs on with the settings it had. "
                            "The prose says why."},
    [EV_RELOAD_RESTART_NEEDED] = {"reload_restart_needed", LOG_WARN, "config keys",
                                  "A reload changed settings that only a restart applies. "
                                  "`config=env`: one event, `keys` lists the env keys "
                                  "(comma-separated). `config=gateway`: one event per change "
                                  "of the gateway file, `keys` says which part and how (e.g. "
                                  "`upstream fake: args changed`)."},
    [EV_RELOAD_IGNORED] = {"reload_ignored", LOG_INFO, "",
                           "A SIGHUP came while the server drains: nothing is reloaded."},
    [EV_AGENTS_RELOADED] = {"agents_reloaded", LOG_INFO, "",
                            "The bridge took the agent settings of a reload."},
    [EV_AGENT_ENV_REJECTED] = {"agent_env_rejected", LOG_WARN, "file",
                               "HERMES_ENV_PATH (`file`) could not be used at a reload; the agent "
                               "keeps the settings in use."},
    [EV_CLIENTS_FILE_REJECTED] = {"clients_file_rejected", LOG_WARN, "",
                                  "The OAuth clients file changed but could not be used; the "
                                  "clients read before stay. The prose says why."},
    [EV_STOP_REQUESTED] =
        {"stop_requested", LOG_INFO, "signal",
         "SIGTERM or SIGINT (`signal` is `TERM` or `INT`): the server stops taking "
         "work and drains."},
    [EV_DRAIN_STARTED] = {"drain_started", LOG_INFO, "calls grace_s",
                          "The drain waits up to `grace_s` seconds for `calls` calls in flight."},
    [EV_DRAIN_FORCED] = {"drain_forced", LOG_INFO, "signal",
                         "A second SIGTERM or SIGINT ends the drain at once."},
    [EV_DRAIN_OVER] = {"drain_over", LOG_INFO, "ms finished calls cut_off",
                       "The drain ended: `finished` of `calls` calls finished, `cut_off` were "
                       "cut off."},
    [EV_LISTEN_EXPOSED] = {"listen_exposed", LOG_WARN, "addr",
                           "The server listens beyond loopback, on `addr`."},
    [EV_RATE_LIMITED] = {"rate_limited", LOG_WARN, "who limit per_min",
                         "A client or credential (`who`) went over the rate limit `limit` "
                         "(`per_min` requests a minute); logged once a minute each."},
    [EV_STREAM_DROPPED] = {"stream_dropped", LOG_WARN, "peer",
                           "A client that does not read its event stream was disconnected."},
    [EV_NAME_REFUSED] = {"name_refused", LOG_WARN, "header value",
                         "A request was refused (403) for its `Host` or `Origin` (`header`): "
                         "`value` is not this server's name nor in MCP_PUBLIC_HOSTS."},
    [EV_CALL_TIMED_OUT] = {"call_timed_out", LOG_INFO, "method ms",
                           "A request (`method`) reached MCP_CALL_TIMEOUT_S (`ms`) and was "
                           "answered with a timeout error."},
    [EV_CLIENT_AUTH_FAILED] = {"client_auth_failed", LOG_WARN, "endpoint client",
                               "An OAuth client failed to authenticate at `endpoint`; `client` "
                               "is its id when printable."},
    [EV_AGENT_KEY_REJECTED] = {"agent_key_rejected", LOG_ERROR, "agent",
                               "An agent answered 401 to the bridge: its API key is wrong."},
    [EV_APPROVAL_DECISION_UNSENT] = {"approval_decision_unsent", LOG_WARN, "task run",
                                     "The operator's decision on an agent's approval was not "
                                     "sent: the run no longer waits for it, or could not be "
                                     "read."},
    [EV_RUN_CLAIMED_TWICE] = {"run_claimed_twice", LOG_WARN, "run task other",
                              "Two tasks report the same agent run; by run id only `task` is "
                              "reached."},
    [EV_RESET_STARTED] = {"reset_started", LOG_INFO, "entries",
                          "hermes_reset began: it checks `entries` run index entries, then the "
                          "task directory."},
    [EV_RETENTION_PRUNED] = {"retention_pruned", LOG_INFO, "pruned ms kept failed",
                             "A retention pass pruned `pruned` finished tasks, kept `kept` in "
                             "flight, and failed on `failed`."},
    [EV_UPSTREAM_READY] = {"upstream_ready", LOG_INFO, "upstream tools",
                           "An upstream MCP server answered its tool list: its tools are served."},
    [EV_UPSTREAM_DOWN] = {"upstream_down", LOG_ERROR, "upstream",
                          "An upstream stopped serving; the prose says why."},
    [EV_UPSTREAM_RESTART_SCHEDULED] = {"upstream_restart_scheduled", LOG_INFO, "upstream delay_ms",
                                       "The next start of an upstream that is down, in "
                                       "`delay_ms` (backoff)."},
    [EV_UPSTREAM_START_FAILED] = {"upstream_start_failed", LOG_ERROR, "upstream",
                                  "An upstream could not be started; another try is scheduled."},
    [EV_UPSTREAM_SESSION_ENDED] = {"upstream_session_ended", LOG_INFO, "upstream",
                                   "The session with an HTTP upstream was ended (DELETE) at stop "
                                   "or reload."},
    [EV_UPSTREAM_SMOKE_FAILED] = {"upstream_smoke_failed", LOG_ERROR, "upstream tool",
                                  "The smoke call (`tool`) of an upstream failed: it is not ready "
                                  "until a restart passes it."},
    [EV_CHILD_KILLED] = {"child_killed", LOG_WARN, "child why after_ms",
                         "A child process (`child`, e.g. `upstream NAME`) did not end after "
                         "SIGTERM and was killed: `why` is `grace` (after `after_ms`) or "
                         "`hurried` (the server was asked to stop again)."},
    [EV_UPSTREAM_STREAM_RESUMING] = {"upstream_stream_resuming", LOG_INFO,
                                     "upstream request delay_ms",
                                     "An HTTP upstream's answer stream to `request` ended early; "
                                     "it is resumed in `delay_ms` (later resumes of the same call "
                                     "at debug)."},
    [EV_UPSTREAM_NOTIFICATION_IGNORED] = {"upstream_notification_ignored", LOG_INFO,
                                          "upstream method",
                                          "An upstream's list_changed notification was ignored: "
                                          "its discovery is frozen until a restart."},
    [EV_HELD_CALL_EXPIRED] = {"held_call_expired", LOG_INFO, "upstream tool why",
                              "A call held for the client's answer (elicitation, sampling) was "
                              "cancelled upstream: `why` is `not_resumed` (the client did not "
                              "come back in time) or `timeout` (the upstream's timeout)."},
    [EV_CIRCUIT_OPEN] = {"circuit_open", LOG_WARN, "upstream failures",
                         "An upstream failed `failures` times in a row: its calls fail fast "
                         "until a trial start succeeds."},
    [EV_CIRCUIT_CLOSED] = {"circuit_closed", LOG_INFO, "upstream",
                           "A trial start succeeded: the upstream's calls are routed again."},
    [EV_TOOL_WITHHELD] = {"tool_withheld", LOG_ERROR, "upstream tool why",
                          "A pinned tool is withheld: `why` is `changed` (its definition differs "
                          "from the pinned one) or `unlisted` (the upstream no longer lists it)."},
    [EV_PINS_REREAD] = {"pins_reread", LOG_INFO, "file",
                        "A SIGHUP re-read the gateway's pins file, the last step of a gateway "
                        "reload (tools accepted with `hermes-mcp gateway accept` take effect)."},
    [EV_PRINCIPAL_LIMITED] =
        {"principal_limited", LOG_WARN, "principal tool limit value refused",
         "A principal went over a limit of its `limits:` in the tokens file "
         "(`limit` calls_per_min or calls_in_flight, `value` its setting) calling `tool`: its "
         "tool calls get `busy` with `retry_after`. At most once a minute per principal, tool "
         "and limit; `refused` counts the calls refused since the last line."},
    [EV_TOOL_LIMITED] =
        {"tool_limited", LOG_WARN, "principal tool limit value refused",
         "A gateway tool went over a limit of its upstream's `tools.limits` (`limit` "
         "tool_calls_per_min or tool_calls_in_flight, `value` its setting), counted over every "
         "caller: the call of `principal` gets `busy` with `retry_after`. At most once a minute "
         "per principal, tool and limit; `refused` counts the calls refused since the last "
         "line."},
    [EV_OIDC_KEYS_LOADED] = {"oidc_keys_loaded", LOG_INFO, "issuer keys",
                             "An identity provider's key set (OIDC_ISSUER_URL) was fetched: "
                             "`keys` usable keys; at start, on expiry and on an unknown kid."},
    [EV_OIDC_FETCH_FAILED] = {"oidc_fetch_failed", LOG_WARN, "issuer what reason",
                              "An identity provider's `metadata` or `keys` could not be fetched "
                              "or used; its tokens wait or get 503 until a retry succeeds (keys "
                              "already held stay in use)."},
};

const struct log_ev_info *log_ev_at(enum log_ev e)
{
    return (unsigned)e < EV_COUNT ? &events[e] : NULL;
}

void log_set_level(enum log_level lvl)
{
    atomic_store_explicit(&current, (int)lvl, memory_order_relaxed);
}

int log_level_parse(const char *s)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static bool enabled(enum log_level lvl)
{
    return (int)lvl <= atomic_load_explicit(&current, memory_order_relaxed);
}

/* Writes line (prose, then the event's fields in tail, "" for none) as one line. The prose is
 * made one line and never holds "[event=", so the first mark on a line is the event's. */
static void emit(enum log_level lvl, char *line, const char *tail)
{
    static const char *tags[] = {"error", "warn", "info", "debug"};
    static const int syslog_prio[] = {3, 4, 6, 7};

    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    /* Also at the start: after the "LEVEL: " prefix it would read as " [event=". */
    for (char *p = line; (p = strstr(p, EVENT_MARK + 1)) != NULL;)
        *p = '(';
    if (getenv("JOURNAL_STREAM") != NULL)
        fprintf(stderr, "<%d>%s: %s%s\n", syslog_prio[lvl], tags[lvl], line, tail);
    else
        fprintf(stderr, "hermes-mcp: %s: %s%s\n", tags[lvl], line, tail);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (!enabled(lvl))
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(lvl, line, "");
}

/* The fields' part of a line: room for the largest event's fields; the prose gives way first. */
#define TAIL_CAP 768
/* A cut field list ends in " truncated=KEY]": the room it needs is kept free. */
#define CUT_MARK " truncated="
#define KEY_MAX 24
#define TAIL_END (TAIL_CAP - (sizeof CUT_MARK - 1) - KEY_MAX - 2)

static bool is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

static bool needs_quotes(const char *s)
{
    if (*s == '\0' || strpbrk(s, " \"\\=[]") != NULL)
        return true;
    for (; *s; s++)
        if (is_ctl((unsigned char)*s))
            return true;
    return false;
}

/* Writes how byte c reads inside quotes into esc; returns its length. */
static size_t escaped(unsigned char c, char esc[5])
{
    static const char hex[] = "0123456789abcdef";
    const char *named = c == '"'    ? "\\\""
                        : c == '\\' ? "\\\\"
                        : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t"
                                    : NULL;
    if (named) {
        memcpy(esc, named, 3);
        return 2;
    }
    if (is_ctl(c)) {
        esc[0] = '\\';
        esc[1] = 'x';
        esc[2] = hex[c >> 4];
        esc[3] = hex[c & 15];
        return 4;
    }
    esc[0] = (char)c;
    return 1;
}

/* Appends " key=value" to out (at *n, never past end): the value in double quotes, escaped, when
 * it would not read back as one token. A value without room is cut, its quotes kept balanced; a
 * number is never cut. Returns false, after writing what fits or nothing, when it was cut. */
static bool put_field(char *out, size_t end, size_t *n, const char *key, const char *s, bool is_num)
{
    size_t start = *n, klen = strlen(key);
    bool quote = needs_quotes(s);
    size_t at = start + 2 + klen, value_at;

    if (at + (quote ? 2 : 0) >= end)
        return false;
    out[start] = ' ';
    memcpy(out + start + 1, key, klen);
    out[at - 1] = '=';
    if (quote)
        out[at++] = '"';
    value_at = at;
    for (; *s; s++) {
        char esc[5];
        size_t e = quote ? escaped((unsigned char)*s, esc) : 1;
        if (at + e + (quote ? 1 : 0) > end)
            break;
        memcpy(out + at, quote ? esc : s, e);
        at += e;
    }
    if (*s != '\0' && (is_num || at == value_at))
        return false; /* nothing worth keeping: the field is left out */
    if (quote)
        out[at++] = '"';
    *n = at;
    return *s == '\0';
}

static void vlog_event(enum log_level lvl, enum log_ev ev, const struct log_field *fields,
                       const char *fmt, va_list ap)
{
    const struct log_ev_info *info = log_ev_at(ev);
    char line[1024], tail[TAIL_CAP];
    size_t n;

    if (info == NULL || !enabled(lvl))
        return;
    n = (size_t)snprintf(tail, sizeof tail, "%s%s", EVENT_MARK, info->name);
    for (const struct log_field *f = fields; f && f->key; f++) {
        char num[24];
        if (f->is_num)
            snprintf(num, sizeof num, "%lld", f->num);
        if (!put_field(tail, TAIL_END, &n, f->key,
                       f->is_num ? num
                       : f->str  ? f->str
                                 : "",
                       f->is_num)) {
            n += (size_t)snprintf(tail + n, sizeof tail - n, "%s%.*s", CUT_MARK, KEY_MAX, f->key);
            break;
        }
    }
    tail[n++] = ']';
    tail[n] = '\0';
    /* The prose gives way to the fields when the line is too long. */
    vsnprintf(line, sizeof line - n, fmt, ap);
    emit(lvl, line, tail);
}

void log_event(enum log_ev ev, const struct log_field *fields, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog_event(log_ev_at(ev) ? log_ev_at(ev)->lvl : LOG_ERROR, ev, fields, fmt, ap);
    va_end(ap);
}

void log_event_at(enum log_level lvl, enum log_ev ev, const struct log_field *fields,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog_event(lvl, ev, fields, fmt, ap);
    va_end(ap);
}
