/* timefmt.h — the one writer of UTC ISO-8601 timestamps ("2026-12-07T08:41:58Z", and with
 * milliseconds "2026-12-07T08:41:58.123Z") for task files, audit lines and the CLIs, so every
 * output spells time the same way. Pure; any thread. */
#ifndef HM_TIMEFMT_H
#define HM_TIMEFMT_H
#include <time.h>

/* Room for either form, a NUL included, for any year gmtime_r can represent. */
#define TIMEFMT_SIZE 40

/* t as "YYYY-MM-DDTHH:MM:SSZ" into out; returns out. An empty string if t has no calendar
 * date (gmtime_r fails). */
char *timefmt_iso(time_t t, char out[TIMEFMT_SIZE]);
/* ts as "YYYY-MM-DDTHH:MM:SS.mmmZ" (milliseconds truncated) into out; returns out. */
char *timefmt_iso_ms(const struct timespec *ts, char out[TIMEFMT_SIZE]);

#endif
