/* gateway.c — start-up and the frozen surface. Every upstream is started at once and the loop
 * runs until each is listed, failed, or past its connect_timeout (before we listen, so no
 * client sees a half-built list). Then each listed tool is judged by its upstream's rules
 * (default deny) and an included one is registered as prefix + name. A name clients would
 * refuse, or two that collide (with each other or with the bridge's tools), stop the start
 * with both named: silently dropping one would hide a tool the operator asked for. An upstream
 * that could not start is logged and exposes nothing until the next start. */
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "child.h"
#include "gwcore.h"
#include "gwexpose.h"
#include "gwinstance.h"
#include "gwpin.h"
#include "gwpolicy.h"
#include "gwstore.h"
#include "gwsurface.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "metrics.h"
#include "relay.h"
#include "startctx.h"
#include "strmap.h"
#include "toolerr.h"
#include "upstream.h"
#include "utf8.h"

/* At exit, how long children get to end after SIGTERM before their groups are SIGKILLed. */
#define GW_EXIT_WAIT_MS 2000u

/* The call pipeline and the surface hear of upstream events through these. */
static const struct up_events events = {.progress = gw_call_progress,
                                        .request = gw_relay_request,
                                        .fail_waiting = gw_call_fail_waiting,
                                        .slot_free = gw_call_next,
                                        .relisted = gw_pins_rediscovered,
                                        .cleanup = gw_relay_cleanup};

static bool settled(const struct gateway *g)
{
    for (size_t i = 0; i < g->nup; i++)
        if (g->ups[i].state == UP_STARTING || g->ups[i].state == UP_LISTING)
            return false;
    return true;
}

static void start_all(struct gateway *g)
{
    char err[300];
    for (size_t i = 0; i < g->nup; i++) {
        struct upstream *u = &g->ups[i];
        if (!up_start(u, err, sizeof err)) {
            if (u->error == NULL)
                u->error = xstrdup(err);
            log_event(EV_UPSTREAM_START_FAILED, LOG_FIELDS(LF_S("upstream", u->cfg->name)),
                      "upstream %s could not start: %s", u->cfg->name, err);
            up_schedule_restart(u);
        }
    }
    /* SIGTERM meanwhile stops the wait: the server then ends without serving. */
    while (!settled(g) && !loop_stopping(g->loop))
        if (loop_once(g->loop, 200) < 0)
            break;
}

/* The input schema as the engine wants it: an object schema (a copy). */
static json_t *input_schema(json_t *tool)
{
    json_t *s = json_object_get(tool, "inputSchema");
    if (json_is_object(s))
        return json_deep_copy(s);
    return json_pack("{s:s}", "type", "object");
}

/* Tool errors must validate too: the upstream's output schema or our error shape. */
static json_t *output_schema(json_t *tool)
{
    json_t *s = json_object_get(tool, "outputSchema");
    return json_is_object(s) ? toolerr_output_schema(json_deep_copy(s)) : NULL;
}

static const char *str(json_t *tool, const char *key)
{
    return json_string_value(json_object_get(tool, key));
}

void gateway_warn_uncallable(const struct gw_tool *t)
{
    log_warn("gateway: %s: its tools.args drop or fix leaves an anyOf or oneOf of its input "
             "schema no branch a call can match (each requires a name the policy takes away): "
             "no call of it can pass; drop fewer names or leave the tool out",
             t->exposed);
}

static void register_tool(struct gateway *g, struct upstream *u, json_t *tool, const char *exposed)
{
    struct gw_tool *t = &g->tools[g->ntools++];
    t->up = u;
    t->name = xstrdup(str(tool, "name"));
    t->exposed = xstrdup(exposed);
    strmap_put(g->tool_index, t->exposed, t);
    gw_pin_hash(tool, t->seen);
    t->seen_def = gw_pin_definition(tool);
    memcpy(t->served, t->seen, sizeof t->served);
    t->served_def = json_incref(t->seen_def); /* never modified: replaced whole on re-listing */
    t->guard = gw_tool_guard(u->cfg, t->name);
    t->policy = json_incref(gw_tool_policy(u->cfg, t->name));
    if (gw_tool_limits(u->cfg, t->name, &t->calls_per_min, &t->calls_in_flight))
        g->nlimited++;
    t->schema = input_schema(tool);
    json_t *ann = json_object_get(tool, "annotations");
    char scope[128]; /* who may see and call it: the owner, and principals holding this */
    snprintf(scope, sizeof scope, SCOPE_GATEWAY_PREFIX "%s", u->cfg->name);
    bool uncallable = false;
    json_t *schema = gw_policy_schema(json_deep_copy(t->schema), t->guard, t->policy, &uncallable);
    if (uncallable)
        gateway_warn_uncallable(t);
    mcp_add_tool(g->mcp, &(struct mcp_tool_def){
                             .name = exposed,
                             .title = str(tool, "title"),
                             .description = str(tool, "description"),
                             .input_schema = schema,
                             .output_schema = output_schema(tool),
                             .annotations = json_is_object(ann) ? json_deep_copy(ann) : NULL,
                             .handler = gw_call_handler,
                             .arg = t,
                             .scope = scope});
}

/* A tools.args policy for a tool the upstream does not offer is a typo that protects nothing:
 * false (logged, naming upstream and tool). */
static bool policies_name_offered(const struct upstream *u)
{
    const char *name;
    json_t *policy, *tool;
    size_t i;
    json_object_foreach(u->cfg->policies, name, policy)
    {
        bool offered = false;
        json_array_foreach(u->tools, i, tool)
        {
            const char *n = str(tool, "name");
            offered |= n && strcmp(n, name) == 0;
        }
        if (!offered) {
            char t[100];
            utf8_shown(t, sizeof t, name);
            log_error("gateway: upstream %s: tools.args names tool '%s', which it does not offer; "
                      "fix the name",
                      u->cfg->name, t);
            return false;
        }
    }
    return true;
}

/* Registers the tools of listed upstream k as planned; false (logged) on a refused name. */
static bool expose(struct gateway *g, struct upstream *u, const struct gw_plan *p, size_t k)
{
    size_t i, count = 0;
    for (const struct gw_plan_item *it = p->items; it < p->items + p->n; it++) {
        if (it->up != k || it->kind != GW_PLAN_TOOL)
            continue;
        if (it->status == GW_PLAN_LEFT_OUT) {
            log_debug("upstream %s, tool '%s': %s%s%s", u->cfg->name, it->shown,
                      gw_verdict_name(it->verdict), it->rule ? " by " : "",
                      it->rule ? it->rule : "");
            continue;
        }
        if (it->status == GW_PLAN_BAD_NAME) {
            log_error("gateway: upstream %s, tool '%s': the exposed name '%s' is not allowed "
                      "(clients accept only ^[A-Za-z0-9_-]{1,64}$); exclude it or change the "
                      "prefix",
                      u->cfg->name, it->shown, it->shown_exposed);
            return false;
        }
        if (it->status == GW_PLAN_TAKEN) {
            log_error("gateway: upstream %s, tool '%s' would be exposed as '%s', which is taken "
                      "by %s; exclude one or change a prefix",
                      u->cfg->name, it->shown, it->shown_exposed, it->owner);
            return false;
        }
        register_tool(g, u, it->def, it->exposed);
        count++;
    }
    if (!policies_name_offered(u))
        return false;
    if (!u->cfg->include && !u->cfg->exclude)
        log_warn("upstream %s: no tools.include or tools.exclude: none of its %zu tools is "
                 "exposed (default deny)",
                 u->cfg->name, json_array_size(u->tools));
    else
        log_info("upstream %s: %zu of %zu tools exposed", u->cfg->name, count,
                 json_array_size(u->tools));
    json_t *unmatched = gw_include_unmatched(u->cfg, u->tools), *glob;
    json_array_foreach(unmatched, i, glob)
    {
        char shown[100];
        utf8_shown(shown, sizeof shown, json_string_value(glob));
        log_warn("upstream %s: tools.include '%s' matches none of its %zu tools (a typo, or a "
                 "tool it does not offer; gateway check --probe lists them)",
                 u->cfg->name, shown, json_array_size(u->tools));
    }
    json_decref(unmatched);
    return true;
}

/* The gateway's own startup_context tool (startctx.h); its name is fixed, so an upstream or
 * bridge tool already exposed under it stops the start like any other collision. */
static bool expose_startctx(struct gateway *g, const struct gw_plan *p)
{
    const char *owner = gw_plan_tool_owner(p, STARTCTX_TOOL);
    if (owner) {
        log_error("gateway: startup_context is configured, but the name '%s' is taken by %s",
                  STARTCTX_TOOL, owner);
        return false;
    }
    g->startctx = startctx_new(g->file->startup_files, g->file->startup_max_bytes, getenv("HOME"));
    startctx_register(g->startctx, g->mcp, SCOPE_GATEWAY_PREFIX STARTCTX_TOOL);
    log_info("gateway: startup_context exposes %zu configured files",
             json_array_size(g->file->startup_files));
    return true;
}

/* What the listed upstreams offer, for gw_plan_surface (nothing of one that is not ready). */
static void plan_input(const struct gateway *g, struct gw_plan_upstream *in)
{
    for (size_t i = 0; i < g->nup; i++) {
        const struct upstream *u = &g->ups[i];
        bool ready = u->state == UP_READY;
        in[i] = (struct gw_plan_upstream){.cfg = u->cfg};
        if (ready)
            in[i] = (struct gw_plan_upstream){.cfg = u->cfg,
                                              .tools = u->tools,
                                              .resources = u->resources,
                                              .templates = u->templates,
                                              .prompts = u->prompts};
    }
}

static bool build_surface(struct gateway *g, const char *const *taken, size_t ntaken)
{
    struct gw_plan_upstream *in = xcalloc(g->nup + 1, sizeof *in);
    struct gw_plan plan;
    size_t total = 0;
    bool ok = true;
    plan_input(g, in);
    gw_plan_surface(in, g->nup, taken, ntaken, &plan);
    free(in);
    for (size_t i = 0; i < g->nup; i++)
        total += json_array_size(g->ups[i].tools);
    g->tools = xcalloc(total + 1, sizeof *g->tools);
    strmap_free(g->tool_index);
    g->tool_index = strmap_new();
    for (size_t i = 0; i < g->nup && ok; i++) {
        g->ups[i].off_surface = g->ups[i].state != UP_READY;
        if (g->ups[i].state == UP_READY) {
            g->ups[i].listed_at_start = json_copy(g->ups[i].tools); /* up_start clears tools */
            ok = expose(g, &g->ups[i], &plan, i);
        }
    }
    if (ok && g->file->startup_files)
        ok = expose_startctx(g, &plan);
    if (ok) /* resources and prompts where the file asks for them (gwresources.c) */
        ok = gw_resources_expose(g, &plan);
    gw_plan_free(&plan);
    return ok;
}

static void metrics_new(struct gateway *g)
{
    static const double bounds[] = {0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10, 60, 300};
    g->m_calls = metric_new("hermes_mcp_gateway_calls_total",
                            "Proxied tool calls ended, by upstream and outcome (ok, a tool error "
                            "code, cancelled, or a JSON-RPC error code)",
                            METRIC_COUNTER, NULL, 0);
    g->m_errors =
        metric_new("hermes_mcp_gateway_call_errors_total",
                   "Proxied tool calls that did not end ok, by upstream", METRIC_COUNTER, NULL, 0);
    g->m_seconds = metric_new("hermes_mcp_gateway_call_duration_seconds",
                              "Time from a proxied call to its answer, by upstream",
                              METRIC_HISTOGRAM, bounds, sizeof bounds / sizeof *bounds);
    g->m_mismatches = metric_new("hermes_mcp_gateway_pin_mismatches_total",
                                 "Tools withheld because their definition differs from the pin, "
                                 "by upstream",
                                 METRIC_COUNTER, NULL, 0);
    g->m_accepted = metric_new("hermes_mcp_gateway_pins_accepted_total",
                               "Pins an operator accepted that the server applied, by upstream",
                               METRIC_COUNTER, NULL, 0);
}

void gateway_set_approvals(struct gateway *g, struct approvals *q)
{
    g->approvals = q;
}

/* Tests only (docs/guides/gateway.md): HERMES_TEST_GW_TIME_DIV, 2 to 100, divides the backoff
 * and the stable window, so a test sees a circuit open and close in seconds, not half a minute.
 * Read once, at start, and said loudly: against real upstreams it would restart them too fast.
 * Unset, or any other value: 1. */
static unsigned test_time_div(void)
{
    const char *v = getenv("HERMES_TEST_GW_TIME_DIV");
    if (v == NULL)
        return 1;
    unsigned long n = strtoul(v, NULL, 10);
    if (n < 2 || n > 100) {
        log_warn("gateway: HERMES_TEST_GW_TIME_DIV is set but not 2 to 100: ignored (it is for "
                 "tests only)");
        return 1;
    }
    log_warn("gateway: HERMES_TEST_GW_TIME_DIV=%lu: upstream restarts back off %lu times faster; "
             "this variable is for tests only, unset it",
             n, n);
    return (unsigned)n;
}

struct gateway *gateway_new(struct mcp_server *mcp, struct loop *l, const struct gwfile *f,
                            const char *gateway_file, const struct gateway_store *store,
                            const char *const *taken, size_t ntaken, gw_event_fn *on_event,
                            void *event_arg)
{
    struct gateway *g = xcalloc(1, sizeof *g);
    list_init(&g->waits);
    g->events = &events;
    g->on_event = on_event;
    g->event_arg = event_arg;
    metrics_new(g);
    g->mcp = mcp;
    g->loop = l;
    g->file = f;
    g->time_div = test_time_div();
    g->approvals_timeout_s = f->approvals_timeout_s;
    g->nup = f->nup;
    g->ups = xcalloc(f->nup + 1, sizeof *g->ups);
    for (size_t i = 0; i < f->nup; i++)
        g->ups[i] = (struct upstream){.gw = g,
                                      .cfg = &f->up[i],
                                      .loop = l,
                                      .seed = (unsigned)getpid() * 2654435761u + (unsigned)i};
    g->pins_path = gw_pins_path(gateway_file);
    g->status_path = gw_pins_status_path(gateway_file);
    if (store && store->url) {
        g->store_url = store->url;
        g->store_password = store->password;
        g->replica_id = store->replica_id;
    }
    char err[600];
    if (!gwi_pools_start(g, err, sizeof err)) {
        log_error("gateway: %s", err);
        gateway_free(g);
        return NULL;
    }
    start_all(g);
    if (!build_surface(g, taken, ntaken) || !gw_pins_start(g)) {
        gateway_free(g);
        return NULL;
    }
    gw_task_methods_start(g);
    return g;
}

void gateway_drain(struct gateway *g)
{
    if (g == NULL)
        return;
    g->draining = true;
    for (size_t i = 0; i < g->nup; i++)
        gw_call_fail_waiting(&g->ups[i]);
    gwi_pools_drain(g);
}

bool gateway_tool_limits(const struct gateway *g, const char *tool, unsigned *calls_per_min,
                         unsigned *calls_in_flight)
{
    *calls_per_min = *calls_in_flight = 0;
    if (g == NULL || g->nlimited == 0)
        return false;
    const struct gw_tool *t = strmap_get(g->tool_index, tool);
    if (t == NULL)
        return false;
    *calls_per_min = t->calls_per_min;
    *calls_in_flight = t->calls_in_flight;
    return t->calls_per_min || t->calls_in_flight;
}

void gateway_free(struct gateway *g)
{
    if (g == NULL)
        return;
    g->stopping = true;
    /* Calls were all answered or cancelled by the engine before this (mcp_free): nothing
     * waits and nothing pending belongs to a call. */
    gw_task_free_all(g); /* before the upstreams: a running task's request is forgotten */
    gw_store_free(g->store);
    gwi_pools_free(g);
    for (size_t i = 0; i < g->nup; i++)
        up_cleanup(&g->ups[i]);
    child_reap_all(GW_EXIT_WAIT_MS); /* none outlives us; the loop is not running any more */
    for (size_t i = 0; i < g->ntools; i++) {
        free(g->tools[i].name);
        free(g->tools[i].exposed);
        json_decref(g->tools[i].seen_def);
        json_decref(g->tools[i].served_def);
        json_decref(g->tools[i].policy);
        json_decref(g->tools[i].schema);
    }
    free(g->tools);
    strmap_free(g->tool_index);
    gw_resources_free(g);
    startctx_free(g->startctx);
    free(g->pins_path);
    free(g->status_path);
    json_decref(g->pins);
    json_decref(g->status_written);
    free(g->ups);
    json_decref(g->restart_needed);
    json_decref(g->bridge_out);
    metric_free(g->m_calls);
    metric_free(g->m_errors);
    metric_free(g->m_seconds);
    metric_free(g->m_mismatches);
    metric_free(g->m_accepted);
    free(g);
}

static bool smoke_pending(const struct gateway *g)
{
    for (size_t i = 0; i < g->nup; i++)
        if (g->ups[i].state == UP_READY && g->ups[i].smoke == GW_SMOKE_PENDING)
            return true;
    return false;
}

size_t gateway_probe(struct loop *l, const struct gwfile *f, gw_probe_fn *fn, void *arg)
{
    struct gateway *g = xcalloc(1, sizeof *g);
    list_init(&g->waits);
    g->events = &events;
    g->stopping = true; /* a probe starts each upstream once: no restarts */
    g->loop = l;
    g->file = f;
    g->nup = f->nup;
    g->ups = xcalloc(f->nup + 1, sizeof *g->ups);
    for (size_t i = 0; i < f->nup; i++)
        g->ups[i] = (struct upstream){.gw = g, .cfg = &f->up[i], .loop = l};
    start_all(g);
    while (smoke_pending(g) && !loop_stopping(l)) /* each within its upstream's timeout */
        if (loop_once(l, 200) < 0)
            break;
    struct gw_plan_upstream *in = xcalloc(g->nup + 1, sizeof *in);
    struct gw_plan plan;
    plan_input(g, in);
    gw_plan_surface(in, g->nup, NULL, 0, &plan);
    free(in);
    size_t bad = gw_probe_rows(g, &plan, fn, arg);
    gw_plan_free(&plan);
    gateway_free(g);
    return bad;
}

bool gateway_ready(const struct gateway *g, struct buf *out)
{
    bool ready = true;
    buf_appends(out, "{");
    for (size_t i = 0; i < g->nup; i++) {
        const struct upstream *u = &g->ups[i];
        json_t *o = json_pack("{s:s, s:b, s:I}", "state", gw_circuit_state_name(u), "required",
                              u->cfg->required, "restarts", (json_int_t)u->restarts);
        if (u->state != UP_READY && u->error)
            json_object_set_new(o, "error", json_string(u->error));
        else if (u->off_surface) /* up now, but clients were never shown its tools */
            json_object_set_new(o, "error",
                                json_string("it was down when the server started: "
                                            "its tools are served after a restart"));
        if (u->off_surface)
            json_object_set_new(o, "served", json_false());
        if (gw_circuit_retry_in_s(u))
            json_object_set_new(o, "retry_in_s", json_integer(gw_circuit_retry_in_s(u)));
        gw_smoke_describe(u, o);
        gwi_describe(u, o);
        ready = ready && !u->refused; /* required or not: expect_tools said otherwise */
        json_t *withheld = json_array();
        for (size_t k = 0; k < g->ntools; k++)
            if (g->tools[k].up == u && g->tools[k].withheld)
                json_array_append_new(withheld, json_string(g->tools[k].exposed));
        ready = ready && json_array_size(withheld) == 0; /* required or not: a rug pull */
        if (json_array_size(withheld))
            json_object_set_new(o, "withheld", withheld);
        else
            json_decref(withheld);
        char *text = json_dumps(o, JSON_COMPACT);
        buf_printf(out, "%s\"%s\":%s", i ? "," : "", u->cfg->name, text);
        free(text);
        json_decref(o);
        ready = ready && (!u->cfg->required ||
                          (u->state == UP_READY && gw_smoke_passed(u) && !u->off_surface));
    }
    buf_appends(out, "}");
    return ready;
}

static size_t withheld_count(const struct gateway *g, const struct upstream *u)
{
    size_t n = 0;
    for (size_t k = 0; k < g->ntools; k++)
        n += g->tools[k].up == u && g->tools[k].withheld;
    return n;
}

/* A family read live at scrape time: one sample per upstream. */
static void render_per_upstream(const struct gateway *g, struct buf *out, const char *name,
                                const char *help, const char *type,
                                double (*value)(const struct gateway *, const struct upstream *))
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (size_t i = 0; i < g->nup; i++)
        buf_printf(out, "%s{upstream=\"%s\"} %.17g\n", name, g->ups[i].cfg->name,
                   value(g, &g->ups[i]));
}

static double restarts_of(const struct gateway *g, const struct upstream *u)
{
    (void)g;
    return u->restarts;
}

static double withheld_of(const struct gateway *g, const struct upstream *u)
{
    return (double)withheld_count(g, u);
}

static double smoke_passed_of(const struct gateway *g, const struct upstream *u)
{
    (void)g;
    return gw_smoke_passed(u) && (u->cfg->smoke == NULL || u->state == UP_READY);
}

static double in_flight_of(const struct gateway *g, const struct upstream *u)
{
    (void)g;
    return (double)u->in_flight;
}

void gateway_metrics(const struct gateway *g, struct buf *out)
{
    static const char *const states[] = {"starting", "listing", "ready",    "restarting",
                                         "down",     "open",    "half_open"};
    if (g == NULL)
        return;
    /* Upstream names match ^[a-z0-9][a-z0-9_-]{0,31}$ (gwfile.c): nothing to escape. */
    buf_appends(out, "# HELP hermes_mcp_gateway_upstream_state Each upstream's state: 1 for "
                     "the one it is in\n# TYPE hermes_mcp_gateway_upstream_state gauge\n");
    for (size_t i = 0; i < g->nup; i++)
        for (size_t s = 0; s < sizeof states / sizeof *states; s++)
            buf_printf(out, "hermes_mcp_gateway_upstream_state{upstream=\"%s\",state=\"%s\"} %d\n",
                       g->ups[i].cfg->name, states[s],
                       strcmp(gw_circuit_state_name(&g->ups[i]), states[s]) == 0);
    render_per_upstream(g, out, "hermes_mcp_gateway_upstream_restarts_total",
                        "Restarts of each upstream since the server started", "counter",
                        restarts_of);
    render_per_upstream(g, out, "hermes_mcp_gateway_smoke_passed",
                        "1 when the upstream's smoke call passed after its last initialize (or "
                        "it has none), else 0",
                        "gauge", smoke_passed_of);
    render_per_upstream(g, out, "hermes_mcp_gateway_calls_in_flight",
                        "Proxied calls sent to each upstream and not answered", "gauge",
                        in_flight_of);
    render_per_upstream(g, out, "hermes_mcp_gateway_tools_withheld",
                        "Exposed tools withheld because their definition differs from the pin",
                        "gauge", withheld_of);
    gwi_metrics(g, out);
    metric_render(g->m_calls, out);
    metric_render(g->m_errors, out);
    metric_render(g->m_seconds, out);
    metric_render(g->m_mismatches, out);
    metric_render(g->m_accepted, out);
}
