/* gwexpose.h — the served surface: the exposed tools (struct gw_tool) registered from the
 * planned surface (gwsurface.h), their pins (gwguard.c), the resources and prompts registered
 * and forwarded (gwresources.c), and the probe's rows (gwprobe.c). */
#ifndef HM_GWEXPOSE_H
#define HM_GWEXPOSE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gateway.h"
#include "gwfile.h"

struct gateway;
struct gw_plan;
struct upstream;

/* An exposed tool: which upstream, which of its tools. */
struct gw_extra;

struct gw_tool {
    struct upstream *up;
    char *name;    /* the upstream's own name */
    char *exposed; /* prefix + name */
    char seen[65]; /* hash of the definition last listed (gwpin.h) */
    json_t *seen_def;
    /* What clients are shown and call: registered once at start, never replaced by a
     * re-discovery. A pin must match this as well as the latest listing. */
    char served[65];
    json_t *served_def;
    bool missing;        /* the latest listing (after a restart) no longer has it */
    bool withheld;       /* its pin differs from served or seen, or it is missing: hidden, calls
                          * get definition_changed */
    enum gw_guard guard; /* tools.guard (gwfile.h) */
    json_t *policy;      /* tools.args of this tool (a reference of ours), or NULL */
    json_t *schema;      /* the upstream's inputSchema as listed at start, before the policy */
    bool dropped;        /* a reload's narrower include left it out: hidden, new calls refused */
    unsigned calls_per_min, calls_in_flight; /* tools.limits (gwfile.h), 0: none */
};

/* gwguard.c: the pins applied to the surface */
/* After the surface is built: reads the pins (the file, or with a store its rows, gwstore.h),
 * pins what is new, withholds what changed. False (logged) when the pins cannot be read or
 * written. */
bool gw_pins_start(struct gateway *g);
/* An upstream listed again after a restart: its tools are checked against their pins. */
void gw_pins_rediscovered(struct upstream *u);
/* Pins read again (pins_take: {"pins": {...}}, from the store or the file): each that moved
 * counts as accepted, and every tool is judged again. False when the pins cannot be kept. */
bool gw_pins_apply(struct gateway *g, json_t *pins_take);

/* gateway.c: the warning of a tool whose policy leaves its schema unmatchable
 * (gw_policy_schema's uncallable), at start and on reload. */
void gateway_warn_uncallable(const struct gw_tool *t);

/* Registers the ready upstreams' resources and prompts as planned (gwsurface.h); false (logged,
 * naming both) on a collision or a bad name. */
bool gw_resources_expose(struct gateway *g, const struct gw_plan *p);
void gw_resources_free(struct gateway *g);
/* gwprobe.c: gateway_probe's rows of g's upstreams once started, by plan (gwsurface.h); how
 * many problems serve would refuse (or an upstream that did not start, a failed smoke call). */
size_t gw_probe_rows(const struct gateway *g, const struct gw_plan *plan, gw_probe_fn *fn,
                     void *arg);

#endif
