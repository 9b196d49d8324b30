/* gwguard.c — the rug-pull guard on the built surface. At start every exposed
 * tool's definition is hashed and compared with its pin: a tool never pinned is pinned (trust on
 * first use: it is on the surface because the operator's include rules chose it at this start);
 * one that differs is withheld — left out of tools/list, its calls answered definition_changed,
 * /readyz 503 naming it — until the operator runs `hermes-mcp gateway accept` and sends SIGHUP.
 * A re-discovery after an upstream restart is checked the same way (discovery stays frozen: a
 * tool the upstream adds then is not exposed before the next start). What clients are served is
 * the definition registered at start, so a tool stays exposed only while its pin matches both
 * that served definition and the latest listing, and a tool the latest listing lacks is
 * withheld as missing. The status file records what was last seen and what is served, so
 * `gateway pins` can show the differences and `gateway accept` pins exactly what is served. A
 * tool withheld and a pin accepted are also told to the audit hook and counted for /metrics.
 * With STORE_URL the pins are the store's rows, shared by every replica (gwstore.h): first use
 * inserts if absent, and an accept reaches every replica without a SIGHUP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "gwcore.h"
#include "gwevent.h"
#include "gwexpose.h"
#include "gwpin.h"
#include "gwstore.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "metrics.h"
#include "upstream.h"

static json_t *pin_of(const struct gateway *g, const struct gw_tool *t)
{
    return json_object_get(json_object_get(g->pins, "pins"), t->exposed);
}

/* The pin of what t serves (new). */
static json_t *served_pin(const struct gw_tool *t)
{
    return json_pack("{s:s, s:s, s:s, s:O}", "upstream", t->up->cfg->name, "tool", t->name,
                     "sha256", t->served, "definition", t->served_def);
}

/* How an accept takes effect: on SIGHUP with the pins file, by itself with the store. */
static const char *apply_hint(const struct gateway *g)
{
    return g->store_url ? " (every replica applies it)" : " and SIGHUP";
}

/* Shared pins: a tool whose row is gone (removed by hand) waits, withheld, until the store
 * holds a pin for it again; this replica asks for its own (insert if absent). */
static void wait_for_pin(struct gateway *g, struct gw_tool *t)
{
    if (!t->withheld)
        log_warn("gateway: upstream %s, tool %s: the store holds no pin for it; withheld until "
                 "it does (pinning it as served now)",
                 t->up->cfg->name, t->exposed);
    json_t *pin = served_pin(t);
    gw_store_pin_absent(g->store, t->exposed, pin);
    json_decref(pin);
    t->withheld = true;
    mcp_set_tool_hidden(g->mcp, t->exposed, true);
}

/* The audit event and the counter for a withheld tool or an applied accept. */
static void tell(struct gateway *g, const struct gw_tool *t, enum gw_event_kind kind)
{
    char labels[80];
    metric_labels(labels, sizeof labels, "upstream", t->up->cfg->name, NULL);
    metric_add(kind == GW_EVENT_WITHHELD ? g->m_mismatches : g->m_accepted, labels, 1);
    gw_event(g, &(struct gw_event){.kind = kind,
                                   .upstream = t->up->cfg->name,
                                   .tool = t->exposed,
                                   .upstream_tool = t->name,
                                   .status = kind == GW_EVENT_WITHHELD ? "definition_changed"
                                                                       : "accepted"});
}

static void write_status(struct gateway *g)
{
    char err[300];
    json_t *tools = json_object();
    for (size_t i = 0; i < g->ntools; i++) {
        const struct gw_tool *t = &g->tools[i];
        json_t *pin = pin_of(g, t);
        json_t *e = json_pack("{s:s, s:s, s:s, s:s?, s:b, s:b, s:O, s:s, s:O}", "upstream",
                              t->up->cfg->name, "tool", t->name, "seen", t->seen, "pinned",
                              json_string_value(json_object_get(pin, "sha256")), "withheld",
                              t->withheld, "missing", t->missing, "definition", t->seen_def,
                              "served", t->served, "served_definition", t->served_def);
        if (t->withheld)
            json_object_set_new(
                e, "fields", gw_pin_fields_differ(json_object_get(pin, "definition"), t->seen_def));
        json_object_set_new(tools, t->exposed, e);
    }
    json_t *doc = json_pack("{s:o}", "tools", tools);
    /* Written with fsyncs on the loop: only when it says something new (an instance start or
     * a crash-looping upstream's re-listing usually does not). */
    if (g->status_written && json_equal(doc, g->status_written)) {
        json_decref(doc);
        return;
    }
    if (!gw_pins_write(g->status_path, doc, err, sizeof err)) {
        log_error("gateway: cannot write the pins status: %s", err);
        json_decref(doc);
        return;
    }
    json_decref(g->status_written);
    g->status_written = doc;
}

/* Compares one tool with its pin and shows or hides it; logs each change once. */
static void judge(struct gateway *g, struct gw_tool *t, bool *pins_changed)
{
    json_t *pin = pin_of(g, t);
    const char *pinned = json_string_value(json_object_get(pin, "sha256"));
    if (pinned == NULL && g->store) {
        wait_for_pin(g, t);
        return;
    }
    if (pinned == NULL) {
        json_object_set_new(json_object_get(g->pins, "pins"), t->exposed, served_pin(t));
        *pins_changed = true;
        pinned = t->served;
    }
    bool withheld = t->missing || strcmp(pinned, t->served) != 0 || strcmp(pinned, t->seen) != 0;
    if (withheld && !t->withheld && t->missing) {
        log_event(EV_TOOL_WITHHELD,
                  LOG_FIELDS(LF_S("upstream", t->up->cfg->name), LF_S("tool", t->exposed),
                             LF_S("why", "unlisted")),
                  "gateway: upstream %s, tool %s: no longer listed by the upstream; withheld "
                  "until it is listed again as pinned",
                  t->up->cfg->name, t->exposed);
        tell(g, t, GW_EVENT_WITHHELD);
    } else if (withheld && !t->withheld && strcmp(pinned, t->served) == 0) {
        /* What clients are served (from the start) is still the pinned one; the restarted
         * upstream lists another. accept pins only what is served, so it cannot help yet. */
        log_event(EV_TOOL_WITHHELD,
                  LOG_FIELDS(LF_S("upstream", t->up->cfg->name), LF_S("tool", t->exposed),
                             LF_S("why", "changed")),
                  "gateway: upstream %s, tool %s: its definition differs from the pinned one "
                  "(listed after the upstream restarted); withheld until the upstream lists the "
                  "pinned one again, or, to take the new one: restart the server, then "
                  "`hermes-mcp gateway accept %s`%s",
                  t->up->cfg->name, t->exposed, t->exposed, apply_hint(g));
        tell(g, t, GW_EVENT_WITHHELD);
    } else if (withheld && !t->withheld) {
        log_event(EV_TOOL_WITHHELD,
                  LOG_FIELDS(LF_S("upstream", t->up->cfg->name), LF_S("tool", t->exposed),
                             LF_S("why", "changed")),
                  "gateway: upstream %s, tool %s: its definition differs from the pinned one; "
                  "withheld until `hermes-mcp gateway accept %s`%s",
                  t->up->cfg->name, t->exposed, t->exposed, apply_hint(g));
        tell(g, t, GW_EVENT_WITHHELD);
    } else if (!withheld && t->withheld)
        log_info("gateway: upstream %s, tool %s matches its pin again: exposed", t->up->cfg->name,
                 t->exposed);
    t->withheld = withheld;
    mcp_set_tool_hidden(g->mcp, t->exposed, withheld || t->dropped);
}

static bool judge_all(struct gateway *g, const struct upstream *only)
{
    char err[300];
    bool pins_changed = false;
    for (size_t i = 0; i < g->ntools; i++)
        if (only == NULL || g->tools[i].up == only)
            judge(g, &g->tools[i], &pins_changed);
    write_status(g);
    if (pins_changed && !g->store_url && !gw_pins_write(g->pins_path, g->pins, err, sizeof err)) {
        log_error("gateway: cannot write the pins: %s", err);
        return false;
    }
    return true;
}

/* Shared pins: each exposed tool's is inserted if absent (the pins file's, kept from before the
 * store, else what is served now), then the store's are the ones in force. */
static bool pins_from_store(struct gateway *g, json_t *file)
{
    char err[600];
    json_t *seed = json_pack("{s:{}}", "pins"), *mine = json_object_get(seed, "pins");
    for (size_t i = 0; i < g->ntools; i++) {
        const struct gw_tool *t = &g->tools[i];
        json_t *p = json_object_get(json_object_get(file, "pins"), t->exposed);
        json_object_set_new(mine, t->exposed, p ? json_incref(p) : served_pin(t));
    }
    g->pins = gw_store_start(g, g->store_url, g->store_password, seed, err, sizeof err);
    json_decref(seed);
    if (g->pins == NULL) {
        log_error("gateway: pins: %s", err);
        return false;
    }
    log_info("gateway: pins shared through the store: %zu",
             json_object_size(json_object_get(g->pins, "pins")));
    return judge_all(g, NULL);
}

bool gw_pins_start(struct gateway *g)
{
    char err[300];
    bool exists;
    json_t *file = gw_pins_read(g->pins_path, &exists, err, sizeof err);
    if (file == NULL) {
        log_error("gateway: %s; fix or remove it (removing it pins every tool as it is now)", err);
        return false;
    }
    if (g->store_url) {
        bool ok = pins_from_store(g, file);
        json_decref(file);
        return ok;
    }
    g->pins = file;
    if (!exists)
        log_info("gateway: no pins yet: pinning the %zu exposed tools in %s", g->ntools,
                 g->pins_path);
    return judge_all(g, NULL);
}

void gw_pins_rediscovered(struct upstream *u)
{
    struct gateway *g = u->gw;
    size_t i;
    json_t *tool;
    if (g->pins == NULL)
        return; /* the first listing, before the surface exists */
    for (size_t k = 0; k < g->ntools; k++) {
        struct gw_tool *t = &g->tools[k];
        if (t->up != u)
            continue;
        t->missing = true;
        json_array_foreach(u->tools, i, tool)
        {
            if (strcmp(json_string_value(json_object_get(tool, "name")), t->name) == 0) {
                gw_pin_hash(tool, t->seen);
                json_decref(t->seen_def);
                t->seen_def = gw_pin_definition(tool);
                t->missing = false;
            }
        }
    }
    judge_all(g, u);
}

bool gw_pins_apply(struct gateway *g, json_t *pins)
{
    size_t moved = 0;
    /* A pin now held that differs from the one in force: the operator accepted it. */
    for (size_t i = 0; i < g->ntools; i++) {
        const struct gw_tool *t = &g->tools[i];
        const char *was = json_string_value(json_object_get(pin_of(g, t), "sha256"));
        const char *now = json_string_value(
            json_object_get(json_object_get(json_object_get(pins, "pins"), t->exposed), "sha256"));
        if (now && (was == NULL || strcmp(was, now) != 0)) {
            tell(g, t, GW_EVENT_ACCEPTED);
            moved++;
        }
    }
    json_decref(g->pins);
    g->pins = pins;
    if (g->store && moved)
        log_info("gateway: %zu pin%s accepted through the store", moved, moved == 1 ? "" : "s");
    return judge_all(g, NULL);
}

bool gateway_reload_pins(struct gateway *g)
{
    char err[300];
    bool exists;
    if (g->store) { /* the store's pins are applied as they change; read them again anyway */
        gw_store_reread(g->store);
        return true;
    }
    json_t *pins = gw_pins_read(g->pins_path, &exists, err, sizeof err);
    if (pins == NULL) {
        log_error("gateway: SIGHUP: %s; keeping the pins in force", err);
        return false;
    }
    log_event(EV_PINS_REREAD, LOG_FIELDS(LF_S("file", g->pins_path)),
              "gateway: SIGHUP: pins re-read from %s", g->pins_path);
    return gw_pins_apply(g, pins);
}
