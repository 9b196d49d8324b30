/* gwprobe.c — `gateway check --probe`'s rows: each started upstream (its protocol, its smoke
 * call), then its tools, resources, templates and prompts as the planned surface judges them
 * (gwsurface.h), the rules serve applies; an upstream that did not start is one row. */
#include <stdio.h>
#include <stdlib.h>

#include "gwcore.h"
#include "gwexpose.h"
#include "gwsurface.h"
#include "mem.h"
#include "upstream.h"
#include "utf8.h"

/* The row of an upstream that started: its protocol, what it offers, its smoke call. */
static void probe_upstream(const struct upstream *u, gw_probe_fn *fn, void *arg)
{
    /* by enum gw_smoke; still pending only when the wait was cut short (SIGTERM) */
    static const char *const smoke[] = {NULL, "failed", "passed", "failed"};
    fn(&(struct gw_probe_row){.kind = GW_PROBE_UPSTREAM,
                              .upstream = u->cfg->name,
                              .protocol = u->protocol,
                              .smoke = u->cfg->smoke ? smoke[u->smoke] : NULL,
                              .smoke_tool = json_string_value(json_object_get(
                                  json_array_get(u->cfg->smoke, u->smoke_at), "tool")),
                              .error = u->smoke == GW_SMOKE_FAILED ? u->smoke_error : NULL,
                              .resources =
                                  u->cfg->resources ? (int)json_array_size(u->resources) : -1,
                              .prompts = u->cfg->prompts ? (int)json_array_size(u->prompts) : -1},
       arg);
}

/* Why serve would refuse or skip the item, as the probe prints it ("" when it is exposed). */
static void problem_of(const struct gw_plan_item *it, char *out, size_t size)
{
    out[0] = '\0';
    if (it->status == GW_PLAN_UNFIT)
        snprintf(out, size, "not exposed: %s", it->unfit);
    else if (it->status == GW_PLAN_BAD_NAME)
        snprintf(out, size, "refused: clients accept only ^[A-Za-z0-9_-]{1,64}$");
    else if (it->status == GW_PLAN_TAKEN && it->kind == GW_PLAN_RESOURCE)
        snprintf(out, size, "refused: %s offers it too", it->owner);
    else if (it->status == GW_PLAN_TAKEN && it->kind == GW_PLAN_TEMPLATE)
        snprintf(out, size, "refused: matches the same URIs as %s", it->owner);
    else if (it->status == GW_PLAN_TAKEN)
        snprintf(out, size, "refused: taken by %s", it->owner);
}

static void probe_item(const struct upstream *u, const struct gw_plan_item *it, gw_probe_fn *fn,
                       void *arg)
{
    char problem[300], row[200];
    problem_of(it, problem, sizeof problem);
    const char *p = problem[0] ? problem : NULL;
    switch (it->kind) {
    case GW_PLAN_TOOL:
        fn(&(struct gw_probe_row){.kind = GW_PROBE_TOOL,
                                  .upstream = u->cfg->name,
                                  .tool = it->shown,
                                  .exposed = it->exposed ? it->shown_exposed : NULL,
                                  .verdict = gw_verdict_name(it->verdict),
                                  .rule = it->rule,
                                  .problem = p},
           arg);
        break;
    case GW_PLAN_RESOURCE:
        fn(&(struct gw_probe_row){.kind = GW_PROBE_RESOURCE,
                                  .upstream = u->cfg->name,
                                  .tool = it->shown_long,
                                  .exposed = it->status == GW_PLAN_UNFIT ? NULL : it->shown_long,
                                  .problem = p},
           arg);
        break;
    case GW_PLAN_TEMPLATE: { /* a resource row, "template " + the template */
        char *text = xasprintf("template %s", it->name);
        utf8_shown(row, sizeof row, text);
        free(text);
        fn(&(struct gw_probe_row){.kind = GW_PROBE_RESOURCE,
                                  .upstream = u->cfg->name,
                                  .tool = row,
                                  .exposed = p ? NULL : row,
                                  .problem = p},
           arg);
        break;
    }
    case GW_PLAN_PROMPT:
        fn(&(struct gw_probe_row){.kind = GW_PROBE_PROMPT,
                                  .upstream = u->cfg->name,
                                  .tool = it->shown,
                                  .exposed = it->shown_exposed,
                                  .problem = p},
           arg);
        break;
    }
}

size_t gw_probe_rows(const struct gateway *g, const struct gw_plan *plan, gw_probe_fn *fn,
                     void *arg)
{
    size_t bad = 0;
    for (size_t i = 0; i < g->nup; i++) {
        const struct upstream *u = &g->ups[i];
        if (u->state != UP_READY) {
            fn(&(struct gw_probe_row){.kind = GW_PROBE_FAILED,
                                      .upstream = u->cfg->name,
                                      .error = u->error ? u->error : "did not start"},
               arg);
            bad++;
            continue;
        }
        probe_upstream(u, fn, arg);
        bad += !gw_smoke_passed(u);
        for (const struct gw_plan_item *it = plan->items; it < plan->items + plan->n; it++)
            if (it->up == i) {
                probe_item(u, it, fn, arg);
                bad += gw_plan_refused(it);
            }
    }
    return bad;
}
