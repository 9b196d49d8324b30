/* list.h — the one intrusive doubly linked list, in the style of h2o's h2o_linklist_t and
 * Linux's list_head: a struct list member in each element, and an anchor (also a struct list)
 * in the owner, which points at itself when the list is empty. Unlink is O(1) from the element
 * alone, which is what the owners of live requests, fetches and buckets need. An element that
 * is in no list has NULL links (xcalloc leaves it so), and unlinking resets them. Header only;
 * no locking. */
#ifndef HM_LIST_H
#define HM_LIST_H
#include <stdbool.h>
#include <stddef.h>

struct list {
    struct list *next, *prev;
};

/* The element of type that holds the list member at node. */
#define list_entry(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

/* Every node of the list at anchor, first to last; the loop must not unlink the node. */
#define LIST_FOREACH(node, anchor)                                                                 \
    for (struct list *node = (anchor)->next; node != (anchor); node = node->next)
/* The same, and the body may unlink (or free) the node it is at. */
#define LIST_FOREACH_SAFE(node, anchor)                                                            \
    for (struct list *node = (anchor)->next, *node##_next = node->next; node != (anchor);          \
         node = node##_next, node##_next = node->next)

/* Makes an empty list of anchor. */
static inline void list_init(struct list *anchor)
{
    anchor->next = anchor->prev = anchor;
}

static inline bool list_empty(const struct list *anchor)
{
    return anchor->next == anchor;
}

/* Whether node is in a list (the anchor of an empty list also counts). */
static inline bool list_is_linked(const struct list *node)
{
    return node->next != NULL;
}

/* Inserts node before pos: at the end of the list when pos is its anchor. */
static inline void list_insert(struct list *pos, struct list *node)
{
    node->prev = pos->prev;
    node->next = pos;
    pos->prev->next = node;
    pos->prev = node;
}

static inline void list_push_front(struct list *anchor, struct list *node)
{
    list_insert(anchor->next, node);
}

static inline void list_push_back(struct list *anchor, struct list *node)
{
    list_insert(anchor, node);
}

/* Takes node out of its list; a node in none is left alone. */
static inline void list_unlink(struct list *node)
{
    if (node->next == NULL)
        return;
    node->next->prev = node->prev;
    node->prev->next = node->next;
    node->next = node->prev = NULL;
}

/* Moves every node of from to the end of to, in order; from is left empty. */
static inline void list_splice_back(struct list *to, struct list *from)
{
    if (list_empty(from))
        return;
    from->next->prev = to->prev;
    to->prev->next = from->next;
    from->prev->next = to;
    to->prev = from->prev;
    list_init(from);
}

/* The first or last node, or NULL when the list is empty. */
static inline struct list *list_first(const struct list *anchor)
{
    return anchor->next == anchor ? NULL : anchor->next;
}

static inline struct list *list_last(const struct list *anchor)
{
    return anchor->prev == anchor ? NULL : anchor->prev;
}

#endif
