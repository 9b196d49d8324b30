/* sdnotify.h — the systemd notify protocol without libsystemd: each message is one datagram to
 * the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or "@name" for an abstract socket), as
 * sd_notify(3) describes. Without NOTIFY_SOCKET every call is a no-op, so the server runs the
 * same by hand and under systemd. The environment is left alone (children may need it). */
#ifndef HM_SDNOTIFY_H
#define HM_SDNOTIFY_H
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* Sends "KEY=VALUE\n..." lines, e.g. "READY=1\nSTATUS=listening". Returns true when a datagram
 * went out; false without NOTIFY_SOCKET or when sending failed (logged once). */
bool sdnotify(const char *state);
bool sdnotifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "RELOADING=1" with the MONOTONIC_USEC systemd wants alongside it. */
bool sdnotify_reloading(void);

/* How often to send WATCHDOG=1, in milliseconds: half of $WATCHDOG_USEC, when it is set and
 * $WATCHDOG_PID is unset or names this process; 0 when no watchdog is wanted. */
unsigned sdnotify_watchdog_ms(void);

/* Pure helpers, exposed for the unit tests. */
/* The socket address for a NOTIFY_SOCKET value; false for an empty, relative or too long one. */
bool sdnotify_address(const char *name, struct sockaddr_un *sa, socklen_t *len);
/* The watchdog interval for these WATCHDOG_USEC / WATCHDOG_PID values (either may be NULL). */
unsigned sdnotify_watchdog_interval(const char *usec, const char *pid, pid_t self);

#endif
