/* registry.c — the server's registries (tools, resources, templates, prompts): adding, finding,
 * listing (the listing kept as text until the registry changes) and the tools' hidden and
 * disabled flags. methods.c answers the methods that read them; mcp.c fills them. */
#include "registry.h"

#include <stdlib.h>
#include <string.h>

#include "listviews.h"
#include "mem.h"

void mcp_registry_changed(struct registry *reg)
{
    free(reg->listing_text);
    reg->listing_text = NULL;
    listviews_clear(&reg->views);
}

void mcp_registry_add(struct registry *reg, const char *name, json_t *listing, mcp_handler *h,
                      void *arg, const char *tpl)
{
    mcp_registry_changed(reg);
    reg->v = xrealloc(reg->v, (reg->n + 1) * sizeof *reg->v);
    reg->v[reg->n++] = (struct named){.name = xstrdup(name),
                                      .listing = listing,
                                      .handler = h,
                                      .arg = arg,
                                      .uri_template = tpl ? xstrdup(tpl) : NULL};
}

void mcp_registry_cleanup(struct registry *reg)
{
    for (size_t i = 0; i < reg->n; i++) {
        free(reg->v[i].name);
        free(reg->v[i].uri_template);
        free(reg->v[i].scope);
        json_decref(reg->v[i].listing);
        json_decref(reg->v[i].param_headers);
    }
    free(reg->v);
    mcp_registry_changed(reg);
    free(reg->list_head[0]);
    free(reg->list_head[1]);
}

json_t *mcp_registry_list(const struct registry *reg, const char *field)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < reg->n; i++)
        json_array_append(arr, reg->v[i].listing);
    return json_pack("{s:o}", field, arr);
}

const char *mcp_registry_text(struct registry *reg, size_t *len)
{
    if (reg->listing_text == NULL) {
        json_t *arr = json_array();
        for (size_t i = 0; i < reg->n; i++)
            json_array_append(arr, reg->v[i].listing);
        reg->listing_text = json_dumps(arr, JSON_COMPACT);
        json_decref(arr);
        if (reg->listing_text == NULL)
            return NULL;
        reg->listing_len = strlen(reg->listing_text);
    }
    *len = reg->listing_len;
    return reg->listing_text;
}

struct named *mcp_registry_find(const struct registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->n; i++)
        if (strcmp(reg->v[i].name, name) == 0)
            return &reg->v[i];
    return NULL;
}

/* Hidden (by its owner's configuration) and disabled (taken away by a reload) are separate
 * verdicts: giving a tool back must not list one its configuration hides. */
static void set_tool_flags(struct mcp_server *s, struct named *t, bool hidden, bool disabled)
{
    bool was_out = t->hidden || t->disabled, out = hidden || disabled;
    t->hidden = hidden;
    t->disabled = disabled;
    if (out && !was_out)
        s->tools_hidden++;
    else if (!out && was_out)
        s->tools_hidden--;
}

void mcp_set_tool_hidden(struct mcp_server *s, const char *name, bool hidden)
{
    struct named *t = mcp_registry_find(&s->tools, name);
    if (t)
        set_tool_flags(s, t, hidden, t->disabled);
}

void mcp_set_tool_input_schema(struct mcp_server *s, const char *name, json_t *schema)
{
    struct named *t = mcp_registry_find(&s->tools, name);
    if (t == NULL) {
        json_decref(schema);
        return;
    }
    json_object_set_new(t->listing, "inputSchema", schema);
    json_decref(t->param_headers); /* the headers checked follow the schema clients see */
    t->param_headers = mcp_param_headers(name, schema);
    mcp_registry_changed(&s->tools);
}

void mcp_set_tool_disabled(struct mcp_server *s, const char *name, bool disabled)
{
    struct named *t = mcp_registry_find(&s->tools, name);
    if (t)
        set_tool_flags(s, t, t->hidden, disabled);
}

bool mcp_tool_disabled(const struct mcp_server *s, const char *name)
{
    const struct named *t = mcp_registry_find(&s->tools, name);
    return t == NULL || t->disabled;
}
