/* retention.c — the pruning rule of retention.h. Pure: no file system, no clock, so that the
 * selection (terminal only, in flight never, oldest first) is tested on its own and the same
 * rule serves the server's hourly prune and `hermes-mcp tasks prune`. */
#include "retention.h"

#include <stdlib.h>
#include <string.h>

static bool removable(const struct retention_task *t)
{
    return t->terminal && !t->in_flight;
}

/* Removable tasks first, each group oldest first, ties by id for a stable, testable order. */
static int by_removable_then_age(const void *a, const void *b)
{
    const struct retention_task *x = a, *y = b;
    if (removable(x) != removable(y))
        return removable(x) ? -1 : 1;
    if (x->finished != y->finished)
        return x->finished < y->finished ? -1 : 1;
    return strcmp(x->id, y->id);
}

size_t retention_select(struct retention_task *tasks, size_t n, time_t now, unsigned days,
                        unsigned max)
{
    size_t candidates = 0, go = 0;

    if (n == 0)
        return 0;
    qsort(tasks, n, sizeof *tasks, by_removable_then_age);
    while (candidates < n && removable(&tasks[candidates]))
        candidates++;
    if (max > 0 && candidates > max)
        go = candidates - max; /* the oldest beyond the newest max */
    if (days > 0) {
        time_t cutoff = now - (time_t)days * 86400;
        while (go < candidates && tasks[go].finished < cutoff)
            go++;
    }
    return go;
}
