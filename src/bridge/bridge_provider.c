/* bridge_provider.c — the bridge behind the provider interface: set up on the app's engine
 * with its approval queue, then its reload, health and metrics. */
#include "bridge_provider.h"

#include <stdlib.h>

#include "mem.h"

struct bridge_provider {
    struct bridge *b;
    bridge_opts_fn *opts;
    void *opts_arg;
    bridge_keep_fn *keep;
    void *keep_arg;
};

struct bridge_provider *bridge_provider_new(bridge_opts_fn *opts, void *opts_arg,
                                            bridge_keep_fn *keep, void *keep_arg)
{
    struct bridge_provider *p = xcalloc(1, sizeof *p);
    p->opts = opts;
    p->opts_arg = opts_arg;
    p->keep = keep;
    p->keep_arg = keep_arg;
    return p;
}

void bridge_provider_free(struct bridge_provider *p)
{
    free(p);
}

static bool setup(void *self, const struct provider_host *h)
{
    struct bridge_provider *p = self;
    struct bridge_opts o = {0};
    p->opts(&o, p->opts_arg);
    o.replica_id = h->replica_id;
    p->b = p->keep ? bridge_new_kept(h->mcp, h->loop, &o, p->keep, p->keep_arg)
                   : bridge_new(h->mcp, h->loop, &o);
    if (p->b == NULL)
        return false;
    bridge_set_approvals(p->b, h->approvals); /* a run waiting for approval is queued */
    return true;
}

static const char *const *tools(void *self, bool all, size_t *n)
{
    struct bridge_provider *p = self;
    return all ? bridge_offered_names(p->b, n) : bridge_tool_names(p->b, n);
}

static const char *judged_as(void *self, const char *name)
{
    (void)self;
    return bridge_tool_judged_as(name);
}

static void reload(void *self)
{
    struct bridge_provider *p = self;
    if (p->b) {
        struct bridge_opts o = {0};
        p->opts(&o, p->opts_arg); /* the settings as the reload left them */
        bridge_reload(p->b, &o);
    }
}

static void health(void *self, char *out, size_t outlen)
{
    struct bridge_provider *p = self;
    if (p->b)
        bridge_health(p->b, out, outlen);
}

static void metrics(void *self, struct buf *out)
{
    struct bridge_provider *p = self;
    if (p->b)
        bridge_metrics(p->b, out);
}

static void teardown(void *self)
{
    struct bridge_provider *p = self;
    bridge_free(p->b);
    p->b = NULL;
}

const struct provider_ops bridge_provider_ops = {.name = "bridge",
                                                 .setup = setup,
                                                 .tools = tools,
                                                 .judged_as = judged_as,
                                                 .reload = reload,
                                                 .health = health,
                                                 .metrics = metrics,
                                                 .teardown = teardown};
