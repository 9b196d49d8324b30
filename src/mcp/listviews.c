/* listviews.c — filtered tool listings kept as text (listviews.h). */
#include "listviews.h"

#include <stdlib.h>
#include <string.h>

#include "mcp_internal.h"
#include "mem.h"

json_t *listviews_array(const struct registry *reg, const unsigned char *mask)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < reg->n; i++)
        if (mask[i / 8] & (1u << (i % 8)))
            json_array_append(arr, reg->v[i].listing);
    return arr;
}

static void drop(struct listview *v)
{
    free(v->mask);
    free(v->text);
    memset(v, 0, sizeof *v);
}

const char *listviews_text(struct listviews *views, const struct registry *reg,
                           const unsigned char *mask, size_t *len)
{
    size_t mask_len = (reg->n + 7) / 8;
    struct listview *slot = &views->v[0];
    views->clock++;
    for (size_t i = 0; i < LISTVIEWS_MAX; i++) {
        struct listview *v = &views->v[i];
        if (v->mask && v->mask_len == mask_len && memcmp(v->mask, mask, mask_len) == 0) {
            v->used = views->clock;
            *len = v->len;
            return v->text;
        }
        if (v->used < slot->used)
            slot = v; /* the least recently served (an empty slot's is 0) */
    }
    json_t *arr = listviews_array(reg, mask);
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    if (text == NULL)
        return NULL;
    drop(slot);
    slot->mask = xmalloc(mask_len ? mask_len : 1);
    memcpy(slot->mask, mask, mask_len);
    slot->mask_len = mask_len;
    slot->text = text;
    slot->len = strlen(text);
    slot->used = views->clock;
    *len = slot->len;
    return text;
}

void listviews_clear(struct listviews *views)
{
    for (size_t i = 0; i < LISTVIEWS_MAX; i++)
        drop(&views->v[i]);
}
