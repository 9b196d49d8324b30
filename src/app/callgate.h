/* callgate.h — the limits a tools/call must pass before it starts (the engine's call gate,
 * mcp_set_call_gate): a principal's own (TOKENS_FILE limits:) and a tool's own (the gateway's
 * tools.limits, counted over every caller of the tool), each calls a minute (token buckets) and
 * calls in flight (counters held by a ticket until the call ends). A refusal is never queued:
 * the caller is told how long to wait. Each refusal is counted in /metrics, and logged at most
 * once a minute per principal, tool and limit, with the number refused since the last line.
 * The limit label of a principal's is calls_per_min or calls_in_flight, of a tool's
 * tool_calls_per_min or tool_calls_in_flight.
 * Pure but for the log and the metrics (the caller passes the time); loop thread only. */
#ifndef HM_CALLGATE_H
#define HM_CALLGATE_H
#include <stdint.h>

struct callgate;
struct metric;

struct callgate_limits {
    unsigned calls_per_min;   /* 0: none */
    unsigned calls_in_flight; /* 0: none */
};

/* principal_limited: hermes_mcp_principal_limited_total{principal,limit} (the principal's
 * limits only); limited: hermes_mcp_limited_total{principal,tool,limit} (every refusal). Both
 * borrowed, either may be NULL. */
struct callgate *callgate_new(struct metric *principal_limited, struct metric *limited);
void callgate_free(struct callgate *g); /* NULL-safe; every ticket must have been released */

/* Whether principal (its name, its limits) may start tool (its limits) at now_ms: 0, and
 * *ticket set when a calls_in_flight counted the call (release it with callgate_release when
 * the call ends), else the seconds to wait (a slot that frees when a call ends: 1). */
unsigned callgate_enter(struct callgate *g, const char *principal, struct callgate_limits who,
                        const char *tool, struct callgate_limits per_tool, uint64_t now_ms,
                        void **ticket);
void callgate_release(struct callgate *g, void *ticket);

#endif
