/* gwsurface.c — the planned surface (gwsurface.h): every exposure rule in one place. Tools,
 * prompts and URIs live in three name spaces of their own (a prompt may share a tool's name;
 * resources and templates share one of URIs), each claimed in file order, tools first within
 * an upstream. A template's key in the URI space is the template with each {name} blanked, so
 * two that match the same URIs (the engine's matcher sees only the literal parts) collide. */
#include "gwsurface.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "strmap.h"
#include "utf8.h"

#define SURFACE_STR_(x) #x
#define SURFACE_STR(x) SURFACE_STR_(x) /* GW_URI_MAX's digits in a fixed text */

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Why a template is not served, or NULL. The engine matches only simple {name} parts (one
 * path segment each): a template with RFC 6570 operators ({+path}, {/seg*}, {?q}) would be
 * listed but never match, so it is not exposed at all. */
static const char *template_unfit(const char *tpl)
{
    size_t n = strlen(tpl);
    if (n == 0 || n > GW_URI_MAX || !utf8_valid(tpl, n))
        return "empty, too long or not UTF-8";
    for (const char *p = strchr(tpl, '{'); p; p = strchr(p + 1, '{')) {
        size_t name = strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789_");
        if (name == 0 || name > 63 || p[1 + name] != '}')
            return "only {name} parts are served, not RFC 6570 operators";
    }
    return NULL;
}

/* "template " + the template with each {name} blanked to {}. */
static char *template_key(const char *tpl)
{
    char *key = xasprintf("template %s", tpl);
    char *out = key + strlen("template ");
    for (const char *in = tpl; *in; in++) {
        *out++ = *in;
        if (*in == '{') {
            const char *close = strchr(in, '}');
            if (close)
                in = close - 1; /* the loop's next step copies the '}' */
        }
    }
    *out = '\0';
    return key;
}

static struct gw_plan_item *add(struct gw_plan *p, size_t *cap, enum gw_plan_kind kind, size_t up,
                                json_t *def, const char *name)
{
    if (p->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        p->items = xrealloc(p->items, *cap * sizeof *p->items);
    }
    struct gw_plan_item *it = &p->items[p->n++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->up = up;
    it->def = def;
    it->name = name;
    utf8_shown(it->shown, sizeof it->shown, name);
    utf8_shown(it->shown_long, sizeof it->shown_long, name);
    return it;
}

static void set_exposed(struct gw_plan_item *it, char *exposed)
{
    it->exposed = exposed;
    utf8_shown(it->shown_exposed, sizeof it->shown_exposed, exposed);
}

/* A tool's or prompt's exposed name claimed in names (owner: what to call it), or refused. */
static void claim(struct strmap *names, struct gw_plan_item *it, char *owner)
{
    const char *holder = strmap_get(names, it->exposed);
    if (!gw_tool_name_ok(it->exposed)) {
        it->status = GW_PLAN_BAD_NAME;
    } else if (holder) {
        it->status = GW_PLAN_TAKEN;
        it->owner = xstrdup(holder);
    } else {
        strmap_put(names, it->exposed, owner);
        return;
    }
    free(owner);
}

static void plan_tools(struct gw_plan *p, size_t *cap, size_t k, const struct gw_upstream *cfg,
                       json_t *tools)
{
    size_t i;
    json_t *tool;
    json_array_foreach(tools, i, tool)
    {
        const char *name = str(tool, "name");
        struct gw_plan_item *it = add(p, cap, GW_PLAN_TOOL, k, tool, name);
        it->verdict = gw_tool_verdict(cfg, name, &it->rule);
        if (it->verdict != GW_INCLUDED) {
            it->status = GW_PLAN_LEFT_OUT;
            continue;
        }
        set_exposed(it, xasprintf("%s%s", cfg->prefix, name));
        claim(p->names, it, xasprintf("upstream %s, tool '%s'", cfg->name, it->shown));
    }
}

static void plan_resources(struct gw_plan *p, size_t *cap, size_t k, const struct gw_upstream *cfg,
                           json_t *resources, struct strmap *uris)
{
    size_t i;
    json_t *r;
    json_array_foreach(resources, i, r)
    {
        const char *uri = str(r, "uri");
        struct gw_plan_item *it = add(p, cap, GW_PLAN_RESOURCE, k, r, uri);
        set_exposed(it, xstrdup(uri));
        const char *owner = strmap_get(uris, uri);
        if (strlen(uri) == 0 || strlen(uri) > GW_URI_MAX || !utf8_valid(uri, strlen(uri))) {
            it->status = GW_PLAN_UNFIT;
            it->unfit = "empty, over " SURFACE_STR(GW_URI_MAX) " bytes or not UTF-8";
        } else if (owner) {
            it->status = GW_PLAN_TAKEN;
            it->owner = xstrdup(owner);
        } else {
            strmap_put(uris, uri, xasprintf("upstream %s", cfg->name));
        }
    }
}

static void plan_templates(struct gw_plan *p, size_t *cap, size_t k, const struct gw_upstream *cfg,
                           json_t *templates, struct strmap *uris)
{
    size_t i;
    json_t *t;
    json_array_foreach(templates, i, t)
    {
        const char *tpl = str(t, "uriTemplate");
        struct gw_plan_item *it = add(p, cap, GW_PLAN_TEMPLATE, k, t, tpl);
        set_exposed(it, xstrdup(tpl));
        char *key = template_key(tpl);
        const char *owner = strmap_get(uris, key);
        if ((it->unfit = template_unfit(tpl)) != NULL) {
            it->status = GW_PLAN_UNFIT;
        } else if (owner) {
            it->status = GW_PLAN_TAKEN;
            it->owner = xstrdup(owner);
        } else {
            strmap_put(uris, key, xasprintf("upstream %s's '%s'", cfg->name, it->shown_long));
        }
        free(key);
    }
}

static void plan_prompts(struct gw_plan *p, size_t *cap, size_t k, const struct gw_upstream *cfg,
                         json_t *prompts, struct strmap *names)
{
    size_t i;
    json_t *pr;
    json_array_foreach(prompts, i, pr)
    {
        const char *name = str(pr, "name");
        struct gw_plan_item *it = add(p, cap, GW_PLAN_PROMPT, k, pr, name);
        set_exposed(it, xasprintf("%s%s", cfg->prefix, name));
        claim(names, it, xasprintf("upstream %s, prompt '%s'", cfg->name, it->shown));
    }
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

void gw_plan_surface(const struct gw_plan_upstream *ups, size_t nup, const char *const *taken,
                     size_t ntaken, struct gw_plan *out)
{
    struct strmap *uris = strmap_new(), *prompts = strmap_new();
    size_t cap = 0;
    memset(out, 0, sizeof *out);
    out->names = strmap_new();
    for (size_t i = 0; i < ntaken; i++)
        strmap_put(out->names, taken[i], xasprintf("the bridge's own tool"));
    for (size_t k = 0; k < nup; k++) {
        const struct gw_plan_upstream *u = &ups[k];
        plan_tools(out, &cap, k, u->cfg, u->tools);
        if (u->cfg->resources) {
            plan_resources(out, &cap, k, u->cfg, u->resources, uris);
            plan_templates(out, &cap, k, u->cfg, u->templates, uris);
        }
        if (u->cfg->prompts)
            plan_prompts(out, &cap, k, u->cfg, u->prompts, prompts);
    }
    free_names(uris);
    free_names(prompts);
}

const char *gw_plan_tool_owner(const struct gw_plan *p, const char *exposed)
{
    return strmap_get(p->names, exposed);
}

bool gw_plan_refused(const struct gw_plan_item *it)
{
    return it->status == GW_PLAN_BAD_NAME || it->status == GW_PLAN_TAKEN;
}

void gw_plan_free(struct gw_plan *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->items[i].exposed);
        free(p->items[i].owner);
    }
    free(p->items);
    if (p->names)
        free_names(p->names);
    memset(p, 0, sizeof *p);
}
