/* circuit.c — the circuit breaker of one upstream. Every failure (a
 * start or initialize that fails, a crash, a hang past connect_timeout, an HTTP upstream that
 * refuses or answers 5xx) ends in up_schedule_restart, which counts it and picks the backoff.
 * After GW_CIRCUIT_FAILURES of them in a row the upstream is open-circuit for that backoff
 * period: its calls fail fast with upstream_unavailable saying so and when it is tried again
 * (retry_after), and /readyz and /metrics show the state `open`. The scheduled start is the one
 * trial (half-open); reaching ready closes the circuit. The failure count is the backoff's, so
 * an upstream that fails again soon after closing (within GW_STABLE_MS) opens at once: it has
 * not yet shown it is stable. State is read live; nothing here runs on its own. */
#include <stdio.h>

#include "log.h"
#include "loop.h"
#include "upstream.h"

static bool tripped(const struct upstream *u)
{
    return u->failures >= GW_CIRCUIT_FAILURES;
}

const char *gw_circuit_state(const struct upstream *u)
{
    if (!tripped(u) || u->state == UP_READY)
        return NULL;
    if (u->state == UP_DOWN)
        return u->restart_timer ? "open" : NULL;
    return "half_open"; /* starting or listing: the trial */
}

void gw_circuit_failed(struct upstream *u, uint64_t delay_ms)
{
    u->retry_at = loop_now(u->loop) + delay_ms;
    if (!tripped(u))
        return;
    u->circuit_opened = true;
    log_event(EV_CIRCUIT_OPEN,
              LOG_FIELDS(LF_S("upstream", u->cfg->name), LF_N("failures", u->failures)),
              "upstream %s: circuit open after %u failures in a row; calls fail fast until the "
              "trial start in %llu ms",
              u->cfg->name, u->failures, (unsigned long long)delay_ms);
}

void gw_circuit_ready(struct upstream *u)
{
    if (!u->circuit_opened)
        return;
    u->circuit_opened = false;
    log_event(EV_CIRCUIT_CLOSED, LOG_FIELDS(LF_S("upstream", u->cfg->name)),
              "upstream %s: circuit closed (the trial start succeeded)", u->cfg->name);
}

unsigned gw_circuit_retry_in_s(const struct upstream *u)
{
    if (u->restart_timer == NULL)
        return 0;
    uint64_t now = loop_now(u->loop);
    uint64_t ms = u->retry_at > now ? u->retry_at - now : 0;
    return (unsigned)(ms / 1000 + 1);
}

const char *gw_circuit_state_name(const struct upstream *u)
{
    if (gw_circuit_state(u))
        return gw_circuit_state(u);
    switch (u->state) {
    case UP_STARTING:
        return "starting";
    case UP_LISTING:
        return "listing";
    case UP_READY:
        return "ready";
    default:
        return u->restart_timer ? "restarting" : "down";
    }
}
