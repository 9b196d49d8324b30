/* listviews.h — tools/list for a caller who sees only some of the tools (its scopes, tools a
 * configuration hides): the listing of each set of visible tools is kept as text, a few sets at
 * a time, so every role's tools/list is served as cheaply as the full one rather than built and
 * serialised anew per request. A set is a bit mask over the registry's tools, in order. Loop
 * thread. */
#ifndef HM_LISTVIEWS_H
#define HM_LISTVIEWS_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define LISTVIEWS_MAX 8 /* sets kept; the least recently used one makes room */

struct registry;

struct listview {
    unsigned char *mask; /* NULL: an empty slot */
    size_t mask_len;
    char *text; /* the visible tools' listings as a compact JSON array */
    size_t len;
    uint64_t used; /* when last served, on the views' own clock */
};

struct listviews {
    struct listview v[LISTVIEWS_MAX];
    uint64_t clock;
};

/* The JSON array of reg's tools whose bit is set in mask ((reg->n + 7) / 8 bytes): a new
 * reference. */
json_t *listviews_array(const struct registry *reg, const unsigned char *mask);
/* The same as text, kept in views (NULL when it cannot be serialised); *len its length. */
const char *listviews_text(struct listviews *views, const struct registry *reg,
                           const unsigned char *mask, size_t *len);
/* Drops every kept set: the registry's tools or their listings changed. */
void listviews_clear(struct listviews *views);

#endif
