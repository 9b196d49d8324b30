/* uplist.c — discovery, after the handshake: tools/list, then resources/list,
 * resources/templates/list and prompts/list where the file asks for them, each following
 * nextCursor within GW_LIST_PAGES pages; then the upstream is ready. What is listed is kept on
 * the upstream (tools, resources, templates, prompts) for the surface (gwsurface.h) and, after
 * a restart, for the pins check. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwcore.h"
#include "gwinstance.h"
#include "log.h"
#include "loop.h"
#include "upstream.h"

#define GW_EXTRAS_MAX 1024 /* resources (or prompts) of one upstream at most */

/* Listed in this order; the kind rides in a request's arg. */
enum extra_kind { EXTRA_RESOURCES, EXTRA_TEMPLATES, EXTRA_PROMPTS };

static void on_list(struct upstream *u, json_t *result, json_t *error, void *arg);
static void request_tools(struct upstream *u, const char *cursor);
static void up_listed(struct upstream *u);

static const char *list_method(enum extra_kind k)
{
    return k == EXTRA_RESOURCES   ? "resources/list"
           : k == EXTRA_TEMPLATES ? "resources/templates/list"
                                  : "prompts/list";
}

static void request_list(struct upstream *u, enum extra_kind k, const char *cursor)
{
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
    /* the kind rides in arg: 1 + kind, never a pointer */
    if (!up_request(u, list_method(k), params, on_list, (void *)(uintptr_t)(1 + k), NULL, NULL))
        up_down(u, "cannot send resources/list, resources/templates/list or prompts/list");
}

/* The next list after kind k's (or the upstream is listed). */
static void list_after(struct upstream *u, int k)
{
    u->extra_pages = 0;
    if (k < EXTRA_RESOURCES && u->cfg->resources)
        request_list(u, EXTRA_RESOURCES, NULL);
    else if (k < EXTRA_TEMPLATES && u->cfg->resources)
        request_list(u, EXTRA_TEMPLATES, NULL);
    else if (k < EXTRA_PROMPTS && u->cfg->prompts)
        request_list(u, EXTRA_PROMPTS, NULL);
    else
        up_listed(u);
}

static void list_extras(struct upstream *u)
{
    list_after(u, -1);
}

static void on_list(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    enum extra_kind k = (enum extra_kind)((uintptr_t)arg - 1);
    static const char *const keys[] = {"uri", "uriTemplate", "name"};
    static const char *const arrays[] = {"resources", "resourceTemplates", "prompts"};
    json_t *into = k == EXTRA_RESOURCES   ? u->resources
                   : k == EXTRA_TEMPLATES ? u->templates
                                          : u->prompts,
           *item;
    const char *key = keys[k];
    size_t i;
    if (u->state != UP_LISTING)
        return;
    if (result == NULL && error == NULL) {
        up_down(u, "gone while listing resources, templates or prompts");
        return;
    }
    if (result == NULL) { /* it offers none (no such capability): nothing to expose */
        log_warn("upstream %s: %s refused; none exposed", u->cfg->name, list_method(k));
        list_after(u, (int)k);
        return;
    }
    json_array_foreach(json_object_get(result, arrays[k]), i, item)
    {
        if (json_array_size(into) >= GW_EXTRAS_MAX)
            break;
        if (json_is_object(item) && json_is_string(json_object_get(item, key)))
            json_array_append(into, item);
    }
    const char *next = json_string_value(json_object_get(result, "nextCursor"));
    if (next && *next && json_array_size(into) < GW_EXTRAS_MAX &&
        ++u->extra_pages < GW_LIST_PAGES) {
        request_list(u, k, next);
        return;
    }
    list_after(u, (int)k);
}

static void on_tools(struct upstream *u, json_t *result, json_t *error, void *arg);

static void request_tools(struct upstream *u, const char *cursor)
{
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
    if (!up_request(u, "tools/list", params, on_tools, NULL, NULL, NULL))
        up_down(u, "cannot send tools/list");
}

static void on_tools(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    size_t i;
    json_t *t;
    (void)arg;
    if (u->state != UP_LISTING)
        return;
    if (result == NULL) {
        up_down(u, error ? "tools/list failed" : "gone during tools/list");
        return;
    }
    json_array_foreach(json_object_get(result, "tools"), i, t)
    {
        if (json_array_size(u->tools) >= GW_TOOLS_MAX)
            break;
        if (json_is_object(t) && json_is_string(json_object_get(t, "name")))
            json_array_append(u->tools, t);
    }
    const char *next = json_string_value(json_object_get(result, "nextCursor"));
    if (next && *next && json_array_size(u->tools) < GW_TOOLS_MAX && ++u->pages < GW_LIST_PAGES) {
        request_tools(u, next);
        return;
    }
    list_extras(u);
}

/* Tools (and what the file asks for besides) are in: the upstream is ready. */
static void up_listed(struct upstream *u)
{
    if (!gwi_check_listed(u))
        return; /* refused: down for good, the reason in u->error */
    loop_timer_cancel(u->connect_timer);
    u->connect_timer = NULL;
    u->state = UP_READY;
    u->ready_since = loop_now(u->loop);
    log_event(EV_UPSTREAM_READY,
              LOG_FIELDS(LF_S("upstream", u->cfg->name), LF_N("tools", json_array_size(u->tools))),
              "upstream %s: ready, %zu tools", u->cfg->name, json_array_size(u->tools));
    gw_circuit_ready(u);
    u->gw->events->relisted(u);
    gw_smoke_start(u);
    gwi_ready(u);
}

void up_list(struct upstream *u)
{
    u->state = UP_LISTING;
    request_tools(u, NULL);
}
