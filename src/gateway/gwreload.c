/* gwreload.c — SIGHUP: the gateway file read again. Discovery is frozen and
 * the upstreams' processes are the ones started with the server, so a reload applies only what
 * needs neither: the guards, the argument policies, an include or exclude (or bridge_tools)
 * that leaves listed tools out, an upstream turned to enabled: false (its tools left out; its
 * process runs until a restart), tools.limits, the approvals timeout and startup_context's
 * files; each applies to the calls that start after it (a call in flight already holds the
 * arguments its policy admitted, and a call waiting for an operator keeps its own timer, unless its
 * tool is left out: it is denied then). What would need a new process or a new listing (an upstream
 * added or removed; its command, args, env, url, headers, prefix and the other settings of its
 * process; an include or bridge_tools that would show a tool clients were never shown;
 * startup_context where there was none) is not applied: one warn line names each, and the control
 * socket's status lists them (doctor, `gateway check`) until a restart. The comparison is always
 * with the file the server started with, so reverting a change and reloading again clears its line.
 * A file that cannot apply as a whole (a policy naming a tool its upstream does not offer) changes
 * nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approvals.h"
#include "gwcore.h"
#include "gwexpose.h"
#include "gwpolicy.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "relay.h"
#include "startctx.h"
#include "upstream.h"
#include "utf8.h"

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static bool same_json(json_t *a, json_t *b)
{
    return (a == NULL && b == NULL) || (a && b && json_equal(a, b));
}

static const struct gw_upstream *upstream_in(const struct gwfile *f, const char *name)
{
    for (size_t i = 0; i < f->nup; i++)
        if (strcmp(f->up[i].name, name) == 0)
            return &f->up[i];
    return NULL;
}

/* Whether f has upstream name with enabled: false (gwfile.off). */
static bool disabled_in(const struct gwfile *f, const char *name)
{
    for (size_t i = 0; i < f->noff; i++)
        if (strcmp(f->off[i].name, name) == 0)
            return true;
    return false;
}

static void needs_restart(json_t *list, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void needs_restart(json_t *list, const char *fmt, ...)
{
    char text[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(list, json_string(text));
}

/* The settings of an upstream's process and listing: a change to any needs a restart. */
static void process_changes(const struct gw_upstream *was, const struct gw_upstream *now,
                            json_t *list)
{
    const struct {
        const char *field;
        bool same;
    } fields[] = {
        {"transport", was->kind == now->kind},
        {"command", same_str(was->command, now->command)},
        {"args", same_json(was->args, now->args)},
        {"env", same_json(was->env, now->env)},
        {"cwd", same_str(was->cwd, now->cwd)},
        {"url", same_str(was->url, now->url)},
        {"headers", same_json(was->headers, now->headers)},
        {"prefix", same_str(was->prefix, now->prefix)},
        {"required", was->required == now->required},
        {"timeout_s", was->timeout_s == now->timeout_s},
        {"connect_timeout_s", was->connect_timeout_s == now->connect_timeout_s},
        {"max_in_flight", was->max_in_flight == now->max_in_flight},
        {"tools.resources", was->resources == now->resources},
        {"tools.prompts", was->prompts == now->prompts},
        {"smoke", same_json(was->smoke, now->smoke)},
        {"instances", same_str(was->instance_by, now->instance_by) &&
                          same_json(was->instance_roots, now->instance_roots) &&
                          was->instance_max == now->instance_max &&
                          was->instance_idle_s == now->instance_idle_s},
        {"expect_tools", same_json(was->expect_tools, now->expect_tools)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (!fields[i].same)
            needs_restart(list, "upstream %s: %s changed", was->name, fields[i].field);
}

/* An include or exclude that would expose a listed tool the running server does not: clients
 * were never shown it (nor was it pinned), so only a restart can. */
static void wider_rules(const struct upstream *u, const struct gw_upstream *now, json_t *list)
{
    const struct gw_upstream *was = u->cfg;
    const char *rule;
    size_t i;
    json_t *tool;
    if (same_json(was->include, now->include) && same_json(was->exclude, now->exclude))
        return;
    if (u->off_surface || u->listed_at_start == NULL) {
        needs_restart(list,
                      "upstream %s: tools.include or tools.exclude changed (it was not "
                      "listed when the server started)",
                      was->name);
        return;
    }
    json_array_foreach(u->listed_at_start, i, tool)
    {
        const char *name = json_string_value(json_object_get(tool, "name"));
        if (name && gw_tool_verdict(now, name, &rule) == GW_INCLUDED &&
            gw_tool_verdict(was, name, &rule) != GW_INCLUDED) {
            char t[100];
            utf8_shown(t, sizeof t, name);
            needs_restart(list,
                          "upstream %s: tools.include or tools.exclude widened (it would "
                          "expose %s)",
                          was->name, t);
            return;
        }
    }
}

/* Everything f asks for that this reload cannot apply, as lines for the log and the status. */
static json_t *unapplied(const struct gateway *g, const struct gwfile *f, const char *const *bridge,
                         const char *const *judged_as, size_t nbridge)
{
    json_t *list = json_array();
    for (size_t i = 0; i < f->nup; i++)
        if (!upstream_in(g->file, f->up[i].name))
            needs_restart(list,
                          disabled_in(g->file, f->up[i].name) ? "upstream %s was enabled"
                                                              : "upstream %s is new",
                          f->up[i].name);
    for (size_t i = 0; i < g->nup; i++) {
        const struct gw_upstream *now = upstream_in(f, g->ups[i].cfg->name);
        if (now == NULL) {
            needs_restart(list,
                          disabled_in(f, g->ups[i].cfg->name)
                              ? "upstream %s was disabled (enabled: false)"
                              : "upstream %s was removed",
                          g->ups[i].cfg->name);
            continue;
        }
        process_changes(g->ups[i].cfg, now, list);
        wider_rules(&g->ups[i], now, list);
    }
    for (size_t i = 0; i < nbridge; i++) /* registered only at start, when kept */
        if (gw_bridge_tool_kept(f, judged_as[i]) && !gw_bridge_tool_kept(g->file, judged_as[i]))
            needs_restart(list, "bridge_tools widened (it would expose %s)", bridge[i]);
    if (g->startctx == NULL && f->startup_files)
        needs_restart(list, "startup_context is new");
    return list;
}

/* As at start (gateway.c): a tools.args policy naming a tool its upstream does not offer is a
 * typo that protects nothing; the reload is refused whole. What it offers is what it listed at
 * start: an upstream restarting now has listed nothing yet. */
static bool policies_offered(const struct gateway *g, const struct gwfile *f, char *err,
                             size_t errlen)
{
    for (size_t i = 0; i < g->nup; i++) {
        const struct upstream *u = &g->ups[i];
        const struct gw_upstream *now = upstream_in(f, u->cfg->name);
        const char *name;
        json_t *policy;
        if (now == NULL || u->listed_at_start == NULL)
            continue;
        json_object_foreach(now->policies, name, policy)
        {
            bool offered = false;
            size_t k;
            json_t *tool;
            json_array_foreach(u->listed_at_start, k, tool)
            {
                const char *n = json_string_value(json_object_get(tool, "name"));
                offered |= n && strcmp(n, name) == 0;
            }
            if (!offered) {
                char t[100];
                utf8_shown(t, sizeof t, name);
                snprintf(err, errlen,
                         "upstream %s: tools.args names tool '%s', which it does "
                         "not offer; fix the name",
                         u->cfg->name, t);
                return false;
            }
        }
    }
    return true;
}

/* Only the warnings: the infos (a disabled upstream) were said at start. */
static void log_note(bool warn, const char *line, void *arg)
{
    (void)arg;
    if (warn)
        log_warn("gateway: %s", line);
}

/* What start says of a file (main.c, gateway.c), said of the reloaded one: include beside
 * exclude, an include glob that matches none of the tools its upstream listed at start. */
static void file_notes(const struct gateway *g, const struct gwfile *f)
{
    gwfile_notes(f, log_note, NULL);
    for (size_t i = 0; i < g->nup; i++) {
        const struct upstream *u = &g->ups[i];
        const struct gw_upstream *now = upstream_in(f, u->cfg->name);
        if (now == NULL || u->listed_at_start == NULL)
            continue;
        size_t k, n = json_array_size(u->listed_at_start);
        json_t *unmatched = gw_include_unmatched(now, u->listed_at_start), *glob;
        json_array_foreach(unmatched, k, glob)
        {
            char shown[100];
            utf8_shown(shown, sizeof shown, json_string_value(glob));
            log_warn("gateway: upstream %s: tools.include '%s' matches none of its %zu tools (a "
                     "typo, or a tool it does not offer; gateway check --probe lists them)",
                     now->name, shown, n);
        }
        json_decref(unmatched);
    }
}

/* One tool under f's rules (its upstream still in f): guard, policy, and whether it stays. */
static bool apply_tool(struct gateway *g, struct gw_tool *t, const struct gw_upstream *now)
{
    const char *rule;
    enum gw_guard guard = gw_tool_guard(now, t->name);
    json_t *policy = gw_tool_policy(now, t->name);
    bool dropped = gw_tool_verdict(now, t->name, &rule) != GW_INCLUDED;
    unsigned per_min, in_flight;
    gw_tool_limits(now, t->name, &per_min, &in_flight);
    bool limits = per_min != t->calls_per_min || in_flight != t->calls_in_flight;
    bool changed =
        guard != t->guard || dropped != t->dropped || !same_json(policy, t->policy) || limits;
    /* Loosening applies too (the operator's file says so), but each says so at warn. */
    json_t *looser = gw_policy_loosened(t->guard, t->policy, guard, policy), *line;
    size_t i;
    json_array_foreach(looser, i, line)
        log_warn("gateway: reload: %s: %s", t->exposed, json_string_value(line));
    json_decref(looser);
    if (dropped && !t->dropped)
        log_info("gateway: reload: %s is no longer exposed: its new calls are refused", t->exposed);
    else if (!dropped && t->dropped)
        log_warn("gateway: reload: %s is exposed again", t->exposed);
    if (guard != t->guard || !same_json(policy, t->policy)) { /* as clients see it from now on */
        bool uncallable = false;
        json_t *schema = gw_policy_schema(json_deep_copy(t->schema), guard, policy, &uncallable);
        if (uncallable)
            gateway_warn_uncallable(t);
        mcp_set_tool_input_schema(g->mcp, t->exposed, schema);
    }
    t->guard = guard;
    json_t *old = t->policy;         /* a call in flight holds none: its arguments were admitted */
    t->policy = json_incref(policy); /* before the decref: policy may be old itself */
    json_decref(old);
    t->dropped = dropped;
    if (limits) /* calls in flight go on counting (the call gate's): a lower one waits for them */
        log_info("gateway: reload: %s: calls_per_min %u, calls_in_flight %u (0: none) from now on",
                 t->exposed, per_min, in_flight);
    t->calls_per_min = per_min;
    t->calls_in_flight = in_flight;
    mcp_set_tool_hidden(g->mcp, t->exposed, t->withheld || t->dropped);
    return changed;
}

/* A tool of an upstream the file turns to enabled: false: taken away now (restricting applies
 * at once), its guard and policy left as they were; its process runs until a restart. */
static bool disable_tool(struct gateway *g, struct gw_tool *t)
{
    if (t->dropped)
        return false;
    log_info("gateway: reload: %s is no longer exposed: its new calls are refused (upstream %s "
             "is disabled)",
             t->exposed, t->up->cfg->name);
    t->dropped = true;
    mcp_set_tool_hidden(g->mcp, t->exposed, true);
    return true;
}

/* bridge_tools narrowed: a tool of ours kept at start and left out now is taken away (and
 * given back when a later reload keeps it again). An alias is judged as the tool it stands
 * for (judged_as), so that it never reaches a tool taken away. */
static void apply_bridge(struct gateway *g, const struct gwfile *f, const char *const *bridge,
                         const char *const *judged_as, size_t nbridge)
{
    for (size_t i = 0; i < nbridge; i++) {
        if (!gw_bridge_tool_kept(g->file, judged_as[i]))
            continue; /* never registered */
        bool kept = gw_bridge_tool_kept(f, judged_as[i]);
        if (kept == (json_object_get(g->bridge_out, bridge[i]) == NULL))
            continue; /* as it is */
        if (kept)
            log_warn("gateway: reload: bridge tool %s is exposed again", bridge[i]);
        else
            log_info("gateway: reload: bridge tool %s is no longer exposed (bridge_tools leaves "
                     "it out)",
                     bridge[i]);
        if (kept)
            json_object_del(g->bridge_out, bridge[i]);
        else
            json_object_set_new(g->bridge_out, bridge[i], json_true());
        mcp_set_tool_disabled(g->mcp, bridge[i], !kept);
    }
}

bool gateway_reload_file(struct gateway *g, struct gwfile *f, const char *path,
                         const char *const *bridge, const char *const *judged_as, size_t nbridge)
{
    if (judged_as == NULL)
        judged_as = bridge;
    char err[400];
    if (!policies_offered(g, f, err, sizeof err)) {
        log_event(EV_RELOAD_REJECTED, LOG_FIELDS(LF_S("config", "gateway")),
                  "gateway: reload failed, keeping the running gateway configuration: gateway "
                  "file %s: %s",
                  path, err);
        gwfile_cleanup(f);
        free(f);
        return false;
    }
    file_notes(g, f);
    json_t *list = unapplied(g, f, bridge, judged_as, nbridge);
    size_t i;
    json_t *line;
    json_array_foreach(list, i, line)
        log_event(EV_RELOAD_RESTART_NEEDED,
                  LOG_FIELDS(LF_S("config", "gateway"), LF_S("keys", json_string_value(line))),
                  "gateway: reload: %s; restart to apply", json_string_value(line));
    size_t changed = 0;
    for (size_t k = 0; k < g->ntools; k++) {
        const char *up = g->tools[k].up->cfg->name;
        const struct gw_upstream *now = upstream_in(f, up);
        if (now)
            changed += apply_tool(g, &g->tools[k], now);
        else if (disabled_in(f, up)) /* removed: not applied, as any change of its process */
            changed += disable_tool(g, &g->tools[k]);
    }
    g->nlimited = 0;
    for (size_t k = 0; k < g->ntools; k++)
        g->nlimited += g->tools[k].calls_per_min || g->tools[k].calls_in_flight;
    gw_approval_deny_dropped(g); /* never sent, even if approved later */
    if (g->bridge_out == NULL)
        g->bridge_out = json_object();
    apply_bridge(g, f, bridge, judged_as, nbridge);
    if (g->approvals_timeout_s != f->approvals_timeout_s) {
        g->approvals_timeout_s = f->approvals_timeout_s;
        approvals_set_timeout(g->approvals, f->approvals_timeout_s);
        log_info("gateway: reload: approvals wait %u s from now on", f->approvals_timeout_s);
    }
    if (g->startctx) /* none configured any more: the tool stays, with no file to read */
        startctx_replace(g->startctx, f->startup_files, f->startup_max_bytes, getenv("HOME"));
    log_event(EV_RELOAD_APPLIED, LOG_FIELDS(LF_S("config", "gateway"), LF_S("file", path)),
              "gateway: reloaded %s: guards, argument policies and tools rules of %zu tool%s "
              "changed, in force for the calls that start from now on",
              path, changed, changed == 1 ? "" : "s");
    json_decref(g->restart_needed);
    g->restart_needed = list;
    /* The tools' policies are references of their own: the file they came from can go. */
    gwfile_cleanup(f);
    free(f);
    return true;
}

json_t *gateway_restart_needed(const struct gateway *g)
{
    return g && g->restart_needed ? json_copy(g->restart_needed) : json_array();
}
