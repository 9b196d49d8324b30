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
#include "gw_internal.h"
#include "gwpin.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "toolerr.h"
#include "utf8.h"

/* Untrusted text (an upstream's tool name) made fit for one log line. */
static void shown(char *out, size_t outlen, const char *s)
{
    snprintf(out, outlen, "%s", s);
    utf8_clean(out);
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

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
            log_error("upstream %s could not start: %s", u->cfg->name, err);
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

/* Checks one included tool's exposed name; records it in names (name -> owner text). */
static bool claim_name(struct strmap *names, const struct upstream *u, const char *tool,
                       const char *exposed)
{
    char t[100], e[100];
    shown(t, sizeof t, tool);
    shown(e, sizeof e, exposed);
    if (!gw_tool_name_ok(exposed)) {
        log_error("gateway: upstream %s, tool '%s': the exposed name '%s' is not allowed "
                  "(clients accept only ^[A-Za-z0-9_-]{1,64}$); exclude it or change the prefix",
                  u->cfg->name, t, e);
        return false;
    }
    const char *owner = strmap_get(names, exposed);
    if (owner) {
        log_error("gateway: upstream %s, tool '%s' would be exposed as '%s', which is taken by "
                  "%s; exclude one or change a prefix",
                  u->cfg->name, t, e, owner);
        return false;
    }
    strmap_put(names, exposed, xasprintf("upstream %s, tool '%s'", u->cfg->name, t));
    return true;
}

static void register_tool(struct gateway *g, struct upstream *u, json_t *tool,
                          const char *exposed)
{
    struct gw_tool *t = &g->tools[g->ntools++];
    t->up = u;
    t->name = xstrdup(str(tool, "name"));
    t->exposed = xstrdup(exposed);
    gw_pin_hash(tool, t->seen);
    t->seen_def = gw_pin_definition(tool);
    json_t *ann = json_object_get(tool, "annotations");
    mcp_add_tool(g->mcp, &(struct mcp_tool_def){
        .name = exposed, .title = str(tool, "title"), .description = str(tool, "description"),
        .input_schema = input_schema(tool), .output_schema = output_schema(tool),
        .annotations = json_is_object(ann) ? json_deep_copy(ann) : NULL,
        .handler = gw_tool_handler, .arg = t});
}

/* Judges and registers the tools of one listed upstream; false on a refused name. */
static bool expose(struct gateway *g, struct upstream *u, struct strmap *names)
{
    size_t i, count = 0;
    json_t *tool;
    json_array_foreach(u->tools, i, tool) {
        const char *name = str(tool, "name"), *rule;
        char t[100];
        enum gw_verdict v = gw_tool_verdict(u->cfg, name, &rule);
        shown(t, sizeof t, name);
        if (v != GW_INCLUDED) {
            log_debug("upstream %s, tool '%s': %s%s%s", u->cfg->name, t, gw_verdict_name(v),
                      rule ? " by " : "", rule ? rule : "");
            continue;
        }
        char *exposed = xasprintf("%s%s", u->cfg->prefix, name);
        bool ok = claim_name(names, u, name, exposed);
        if (ok) {
            register_tool(g, u, tool, exposed);
            count++;
        }
        free(exposed);
        if (!ok)
            return false;
    }
    if (!u->cfg->include && !u->cfg->exclude)
        log_warn("upstream %s: no tools.include or tools.exclude: none of its %zu tools is "
                 "exposed (default deny)",
                 u->cfg->name, json_array_size(u->tools));
    else
        log_info("upstream %s: %zu of %zu tools exposed", u->cfg->name, count,
                 json_array_size(u->tools));
    return true;
}

static void free_names(struct strmap *names)
{
    size_t n;
    void **v = strmap_values(names, &n);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    strmap_free(names);
}

static bool build_surface(struct gateway *g, const char *const *taken, size_t ntaken)
{
    struct strmap *names = strmap_new();
    size_t total = 0;
    bool ok = true;
    for (size_t i = 0; i < ntaken; i++)
        strmap_put(names, taken[i], xasprintf("the bridge's own tool"));
    for (size_t i = 0; i < g->nup; i++)
        total += json_array_size(g->ups[i].tools);
    g->tools = xcalloc(total + 1, sizeof *g->tools);
    for (size_t i = 0; i < g->nup && ok; i++)
        if (g->ups[i].state == UP_READY)
            ok = expose(g, &g->ups[i], names);
    free_names(names);
    return ok;
}

struct gateway *gateway_new(struct mcp_server *mcp, struct loop *l, const struct gwfile *f,
                            const char *gateway_file, const char *const *taken, size_t ntaken)
{
    struct gateway *g = xcalloc(1, sizeof *g);
    g->mcp = mcp;
    g->loop = l;
    g->file = f;
    g->nup = f->nup;
    g->ups = xcalloc(f->nup + 1, sizeof *g->ups);
    for (size_t i = 0; i < f->nup; i++)
        g->ups[i] = (struct upstream){.gw = g, .cfg = &f->up[i], .loop = l,
                                      .seed = (unsigned)getpid() * 2654435761u + (unsigned)i};
    g->pins_path = gw_pins_path(gateway_file);
    g->status_path = gw_pins_status_path(gateway_file);
    start_all(g);
    if (!build_surface(g, taken, ntaken) || !gw_pins_start(g)) {
        gateway_free(g);
        return NULL;
    }
    return g;
}

void gateway_free(struct gateway *g)
{
    if (g == NULL)
        return;
    g->stopping = true;
    /* Calls were all answered or cancelled by the engine before this (mcp_free): nothing
     * waits and nothing pending belongs to a call. */
    for (size_t i = 0; i < g->nup; i++)
        up_cleanup(&g->ups[i]);
    for (size_t i = 0; i < g->ntools; i++) {
        free(g->tools[i].name);
        free(g->tools[i].exposed);
        json_decref(g->tools[i].seen_def);
    }
    free(g->tools);
    free(g->pins_path);
    free(g->status_path);
    json_decref(g->pins);
    free(g->ups);
    free(g);
}

static const char *state_name(const struct upstream *u)
{
    switch (u->state) {
    case UP_STARTING: return "starting";
    case UP_LISTING: return "listing";
    case UP_READY: return "ready";
    default: return u->restart_timer ? "restarting" : "down";
    }
}

bool gateway_ready(const struct gateway *g, struct buf *out)
{
    bool ready = true;
    buf_appends(out, "{");
    for (size_t i = 0; i < g->nup; i++) {
        const struct upstream *u = &g->ups[i];
        json_t *o = json_pack("{s:s, s:b, s:I}", "state", state_name(u), "required",
                              u->cfg->required, "restarts", (json_int_t)u->restarts);
        if (u->state != UP_READY && u->error)
            json_object_set_new(o, "error", json_string(u->error));
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
        ready = ready && (!u->cfg->required || u->state == UP_READY);
    }
    buf_appends(out, "}");
    return ready;
}
