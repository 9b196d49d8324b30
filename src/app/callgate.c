/* callgate.c — a principal's and a tool's limits on tools/call (callgate.h). The calls a
 * minute are token buckets (ratelimit.h), one table for principals and one for tools, each key
 * at its own rate; the calls in flight are counters, one per principal or tool with a call
 * running, freed when the last ends; a call that takes both slots holds one ticket for both.
 * The log throttle keeps one entry per (principal, tool, limit) refused within the last
 * minute: a bounded table, swept of the entries whose minute has passed when it is full. */
#include "callgate.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mem.h"
#include "metrics.h"
#include "ratelimit.h"
#include "strmap.h"

#define RATE_KEYS_MAX 10000 /* buckets of each table (least recently used evicted) */
#define LOG_KEYS_MAX 10000  /* (principal, tool, limit) entries of the log throttle */
#define MINUTE_MS 60000
#define KEY_MAX 240

/* The calls running now under one calls_in_flight (a principal's or a tool's). */
struct running {
    unsigned n;
    char key[]; /* whole, however long: a cut key would be looked up in vain */
};

struct ticket {
    struct running *who, *tool; /* either may be NULL */
};

/* The refusals of one principal, tool and limit since its last log line. */
struct refusals {
    uint64_t logged_ms;
    unsigned n, value;
    bool of_tool; /* a tool's limit (tool_limited), else the principal's (principal_limited) */
    const char *limit;
    char principal[72], tool[72], key[KEY_MAX];
};

struct callgate {
    struct ratelimit *who_rate, *tool_rate;
    struct strmap *who_running, *tool_running, *logs;
    struct metric *principal_limited, *limited;
};

struct callgate *callgate_new(struct metric *principal_limited, struct metric *limited)
{
    struct callgate *g = xcalloc(1, sizeof *g);
    g->who_rate = ratelimit_new(1, RATE_KEYS_MAX); /* each key at its own rate */
    g->tool_rate = ratelimit_new(1, RATE_KEYS_MAX);
    g->who_running = strmap_new();
    g->tool_running = strmap_new();
    g->logs = strmap_new();
    g->principal_limited = principal_limited;
    g->limited = limited;
    return g;
}

static void free_value(const char *key, void *value, void *arg)
{
    (void)key, (void)arg;
    free(value);
}

void callgate_free(struct callgate *g)
{
    if (g == NULL)
        return;
    ratelimit_free(g->who_rate);
    ratelimit_free(g->tool_rate);
    struct strmap *maps[] = {g->who_running, g->tool_running, g->logs};
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) {
        strmap_each(maps[i], free_value, NULL);
        strmap_free(maps[i]);
    }
    free(g);
}

static void log_line(const struct refusals *r)
{
    const struct log_field *f =
        LOG_FIELDS(LF_S("principal", r->principal), LF_S("tool", r->tool), LF_S("limit", r->limit),
                   LF_N("value", r->value), LF_N("refused", r->n));
    if (r->of_tool)
        log_event(EV_TOOL_LIMITED, f,
                  "tool %s is over its limit of %s %u: %u call%s of principal %s refused busy "
                  "since the last line",
                  r->tool, r->limit, r->value, r->n, r->n == 1 ? "" : "s", r->principal);
    else
        log_event(EV_PRINCIPAL_LIMITED, f,
                  "principal %s is over its limit of %s %u: %u call%s of %s refused busy since "
                  "the last line",
                  r->principal, r->limit, r->value, r->n, r->n == 1 ? "" : "s", r->tool);
}

/* The table full: the entries whose minute has passed are logged (when they refused since
 * their line) and go. */
static void sweep(struct callgate *g, uint64_t now)
{
    size_t n;
    void **all = strmap_values(g->logs, &n);
    for (size_t i = 0; i < n; i++) {
        struct refusals *r = all[i];
        if (now - r->logged_ms < MINUTE_MS)
            continue;
        if (r->n)
            log_line(r);
        strmap_del(g->logs, r->key);
        free(r);
    }
    free(all);
}

/* One refusal: counted, and logged when its (principal, tool, limit) had no line this minute. */
static void refused(struct callgate *g, const char *principal, const char *tool, bool of_tool,
                    const char *limit, unsigned value, uint64_t now)
{
    char labels[400], key[KEY_MAX];
    if (!of_tool && g->principal_limited &&
        metric_labels(labels, sizeof labels, "principal", principal, "limit", limit, NULL))
        metric_add(g->principal_limited, labels, 1);
    if (g->limited && metric_labels(labels, sizeof labels, "principal", principal, "tool", tool,
                                    "limit", limit, NULL))
        metric_add(g->limited, labels, 1);

    snprintf(key, sizeof key, "%.64s\n%.64s\n%s", principal, tool, limit);
    struct refusals *r = strmap_get(g->logs, key);
    if (r == NULL && strmap_count(g->logs) >= LOG_KEYS_MAX)
        sweep(g, now);
    bool keep = r != NULL || strmap_count(g->logs) < LOG_KEYS_MAX;
    struct refusals one = {.of_tool = of_tool, .limit = limit, .n = 0};
    if (r == NULL) {
        r = keep ? xcalloc(1, sizeof *r) : &one;
        *r = one;
        snprintf(r->principal, sizeof r->principal, "%.64s", principal);
        snprintf(r->tool, sizeof r->tool, "%.64s", tool);
        snprintf(r->key, sizeof r->key, "%s", key);
        r->logged_ms = now - MINUTE_MS; /* due now */
        if (keep)
            strmap_put(g->logs, r->key, r);
    }
    r->n++;
    r->value = value;
    if (now - r->logged_ms >= MINUTE_MS) {
        log_line(r);
        r->logged_ms = now;
        r->n = 0;
    }
}

/* The counter of key in m, made when absent. */
static struct running *running_of(struct strmap *m, const char *key)
{
    struct running *run = strmap_get(m, key);
    if (run == NULL) {
        size_t len = strlen(key);
        run = xcalloc(1, sizeof *run + len + 1);
        memcpy(run->key, key, len + 1);
        strmap_put(m, run->key, run);
    }
    return run;
}

static bool full(struct strmap *m, const char *key, unsigned max)
{
    const struct running *run = max ? strmap_get(m, key) : NULL;
    return run && run->n >= max;
}

unsigned callgate_enter(struct callgate *g, const char *principal, struct callgate_limits who,
                        const char *tool, struct callgate_limits per_tool, uint64_t now_ms,
                        void **ticket)
{
    unsigned wait;
    *ticket = NULL;
    /* The slots first: they cost nothing to look at, while a minute's token once taken is
     * spent. A slot frees when a call ends, which cannot be foretold: 1 s. */
    if (full(g->who_running, principal, who.calls_in_flight)) {
        refused(g, principal, tool, false, "calls_in_flight", who.calls_in_flight, now_ms);
        return 1;
    }
    if (full(g->tool_running, tool, per_tool.calls_in_flight)) {
        refused(g, principal, tool, true, "tool_calls_in_flight", per_tool.calls_in_flight, now_ms);
        return 1;
    }
    if (who.calls_per_min &&
        (wait = ratelimit_consume_rate(g->who_rate, principal, who.calls_per_min, now_ms, NULL))) {
        refused(g, principal, tool, false, "calls_per_min", who.calls_per_min, now_ms);
        return wait;
    }
    if (per_tool.calls_per_min &&
        (wait = ratelimit_consume_rate(g->tool_rate, tool, per_tool.calls_per_min, now_ms, NULL))) {
        /* The caller's own minute is not spent on a call the tool refused. */
        if (who.calls_per_min)
            ratelimit_refund(g->who_rate, principal, who.calls_per_min);
        refused(g, principal, tool, true, "tool_calls_per_min", per_tool.calls_per_min, now_ms);
        return wait;
    }
    if (who.calls_in_flight || per_tool.calls_in_flight) {
        struct ticket *t = xcalloc(1, sizeof *t);
        if (who.calls_in_flight)
            (t->who = running_of(g->who_running, principal))->n++;
        if (per_tool.calls_in_flight)
            (t->tool = running_of(g->tool_running, tool))->n++;
        *ticket = t;
    }
    return 0;
}

static void leave(struct strmap *m, struct running *run)
{
    if (run && --run->n == 0) {
        strmap_del(m, run->key);
        free(run);
    }
}

void callgate_release(struct callgate *g, void *ticket)
{
    struct ticket *t = ticket;
    leave(g->who_running, t->who);
    leave(g->tool_running, t->tool);
    free(t);
}
