/* gwsurface.h — the planned surface: what the listed upstreams would expose, as data. One
 * function applies every rule (the file's include and exclude, the names clients accept, URIs
 * and templates fit to serve, collisions with the bridge's tools and between upstreams), and
 * both `serve` (which registers what is exposed and refuses to start on a refusal) and
 * `gateway check --probe` (which prints a row per item) render the same plan. Pure: listings in,
 * a plan out; unit-tested. */
#ifndef HM_GWSURFACE_H
#define HM_GWSURFACE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gwfile.h"

#define GW_URI_MAX 2048 /* a longer resource URI (or template) is not exposed */

/* What one upstream listed; NULL lists when it is not ready (nothing of it is planned).
 * Resources and templates count only where cfg->resources is set, prompts where cfg->prompts. */
struct gw_plan_upstream {
    const struct gw_upstream *cfg;
    json_t *tools, *resources, *templates, *prompts; /* as listed (borrowed) */
};

enum gw_plan_kind { GW_PLAN_TOOL, GW_PLAN_RESOURCE, GW_PLAN_TEMPLATE, GW_PLAN_PROMPT };

enum gw_plan_status {
    GW_PLAN_EXPOSED,  /* served under exposed */
    GW_PLAN_LEFT_OUT, /* a tool the rules do not include (verdict, rule say why) */
    GW_PLAN_UNFIT,    /* a resource or template not served (unfit says why): not a refusal */
    GW_PLAN_BAD_NAME, /* refused: clients accept only ^[A-Za-z0-9_-]{1,64}$ */
    GW_PLAN_TAKEN,    /* refused: owner holds the same name (or matches the same URIs) */
};

/* One tool, resource, template or prompt of one upstream. Names are as listed (untrusted; the
 * shown ones are made printable for logs and rows). */
struct gw_plan_item {
    enum gw_plan_kind kind;
    size_t up;        /* index into the planned upstreams */
    json_t *def;      /* the listing's entry (borrowed) */
    const char *name; /* the upstream's own name, URI or template (borrowed) */
    char *exposed;    /* prefix + name (tools, prompts), the URI (resources), the
                         template; NULL for a tool left out */
    char shown[100];  /* name, printable (URIs and templates: up to 199 bytes in
                         shown_long) */
    char shown_long[200];
    char shown_exposed[100]; /* exposed, printable ("" when NULL) */
    enum gw_verdict verdict; /* tools */
    const char *rule;        /* tools: the deciding glob, or NULL */
    enum gw_plan_status status;
    const char *unfit; /* GW_PLAN_UNFIT: why (a fixed text) */
    char *owner;       /* GW_PLAN_TAKEN: who holds it ("upstream x, tool 'y'", ...) */
};

struct gw_plan {
    struct gw_plan_item *items; /* by upstream; within one: tools, resources, templates,
                                   prompts, each in listing order */
    size_t n;
    struct strmap *names; /* exposed tool name -> owner text (taken names too) */
};

/* Plans the surface of nup listed upstreams (file order); taken: the bridge's own tool names,
 * which no upstream tool may take. A refused item does not claim its name, so later items are
 * judged as serve would judge them had the refused one been left out. */
void gw_plan_surface(const struct gw_plan_upstream *ups, size_t nup, const char *const *taken,
                     size_t ntaken, struct gw_plan *out);
/* Who holds an exposed tool name in the plan (the bridge, an upstream's tool), or NULL. */
const char *gw_plan_tool_owner(const struct gw_plan *p, const char *exposed);
/* Whether an item is a refusal (serve does not start; probe counts it). */
bool gw_plan_refused(const struct gw_plan_item *it);
void gw_plan_free(struct gw_plan *p); /* NULL-safe */

#endif
