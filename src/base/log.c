/* log.c — leveled one-line logging to stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set on the loop thread (start, SIGHUP), read by the writer threads too. */
static _Atomic int current = LOG_INFO;

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

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    static const char *tags[] = {"error", "warn", "info", "debug"};
    static const int syslog_prio[] = {3, 4, 6, 7};
    char line[1024];
    va_list ap;

    if ((int)lvl > atomic_load_explicit(&current, memory_order_relaxed))
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* Keep one event on one line whatever the caller passed. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (getenv("JOURNAL_STREAM") != NULL)
        fprintf(stderr, "<%d>%s: %s\n", syslog_prio[lvl], tags[lvl], line);
    else
        fprintf(stderr, "hermes-mcp: %s: %s\n", tags[lvl], line);
}
