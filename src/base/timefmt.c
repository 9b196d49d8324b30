/* timefmt.c — UTC ISO-8601 timestamps over gmtime_r and strftime. */
#include "timefmt.h"

#include <stdio.h>

char *timefmt_iso(time_t t, char out[TIMEFMT_SIZE])
{
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || strftime(out, TIMEFMT_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0';
    return out;
}

char *timefmt_iso_ms(const struct timespec *ts, char out[TIMEFMT_SIZE])
{
    struct tm tm;
    char sec[TIMEFMT_SIZE - 6]; /* room for ".mmmZ" after it */
    if (gmtime_r(&ts->tv_sec, &tm) == NULL ||
        strftime(sec, sizeof sec, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        out[0] = '\0';
    else
        snprintf(out, TIMEFMT_SIZE, "%s.%03uZ", sec, (unsigned)(ts->tv_nsec / 1000000) % 1000u);
    return out;
}
