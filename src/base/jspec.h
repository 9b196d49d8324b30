/* jspec.h — the shape of a settings document (JSON, or YAML made JSON by yamljson, where every
 * scalar is a string) as tables, one per level (mapping), walked by one validator: a key the
 * level's table does not name is refused (a typo must not pass silently); each key of the table
 * is checked, in table order, for its type and bounds, written into the caller's struct at its
 * offset, or given its default when absent; a handler says what a type cannot; a key may be a
 * nested level, or a mapping of free names whose values are each a level or a handler's.
 *
 * One error, the first found, is one line "<scope>key <path>: <why>": the scope names the part
 * of the document (e.g. "upstream NAME, "), the path the key (nested keys joined with '.', names
 * from the document cut to 40 bytes and cleaned), the why is the table's words. Pure: no I/O,
 * no globals. */
#ifndef HM_JSPEC_H
#define HM_JSPEC_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum jspec_type {
    JSPEC_ANY = 1, /* any value, the handler's to check; json_t * at .at */
    JSPEC_BOOL,    /* "true" or "false" (a YAML scalar); bool at .at, .dflt when absent */
    JSPEC_UINT,    /* decimal digits, .lo to .hi; unsigned at .at, .dflt when absent */
    JSPEC_STRING,  /* a string, non-empty with .nonempty; const char * at .at */
    JSPEC_STRINGS, /* a list of .min_items to .max_items non-empty strings; json_t * at .at */
    JSPEC_OBJECT,  /* a mapping walked with .level (same out); json_t * at .at */
    JSPEC_MAP,     /* a mapping of at most .max_items free names, each value walked with .level
                      or checked by .each; json_t * at .at */
};

#define JSPEC_NOWHERE ((size_t)-1) /* .at: the value is stored nowhere */

struct jspec_walk;
struct jspec_level;

/* A handler: NULL when v is fine, else the why (reported at the key's path), or JSPEC_FAILED
 * when it reported the error itself (jspec_fail). parent is the level's mapping, out the
 * caller's struct. It may change v's value in the document. */
typedef const char *jspec_check_fn(struct jspec_walk *w, json_t *parent, json_t *v, void *out);
extern const char jspec_failed[];
#define JSPEC_FAILED jspec_failed

struct jspec_key {
    const char *name;
    enum jspec_type type;
    const char *why; /* the error when the value is wrong (or absent and required) */
    bool required;
    bool nonempty;                   /* JSPEC_STRING: "" is wrong */
    unsigned lo, hi, dflt;           /* JSPEC_UINT: bounds and default; JSPEC_BOOL: dflt (0 or 1) */
    size_t min_items, max_items;     /* JSPEC_STRINGS; JSPEC_MAP: max_items (0: no cap) */
    size_t at;                       /* offsetof the field in out, or JSPEC_NOWHERE */
    const struct jspec_level *level; /* JSPEC_OBJECT, and JSPEC_MAP's values */
    jspec_check_fn *each;  /* JSPEC_MAP: each value, at path.NAME, when there is no .level */
    jspec_check_fn *check; /* after the type's checks and the store; may be NULL */
    /* When present but out says the key does not belong (e.g. a setting of another kind of
     * entry): refused with .not_here, before any other check. */
    bool (*belongs)(const void *out);
    const char *not_here;
    /* When absent: a new value, put into the document and stored as if given (unchecked). */
    json_t *(*absent)(const void *out);
    bool defaults_when_absent; /* JSPEC_OBJECT absent: its keys' defaults are stored all the same */
};
#define JSPEC_END                                                                                  \
    {                                                                                              \
        .name = NULL                                                                               \
    }

struct jspec_level {
    const struct jspec_key *keys; /* ended by JSPEC_END */
    const char *not_object;       /* why when the value is no mapping */
    const char *self;             /* the path of that error when the level's own path is empty */
    const char *unknown;          /* why for a key the table does not name ... */
    bool unknown_here;            /* ... reported at the level's path, else at the key's */
    bool doc_order;               /* keys checked in the document's order, not the table's
                                     (absent keys then get no defaults) */
    jspec_check_fn *first;        /* a check of the whole mapping before its keys; may be NULL */
};

struct jspec_walk {
    char *err;
    size_t errlen;
    const char *scope; /* before "key ...": "" or e.g. "upstream NAME, " */
    char path[200];
};

/* Walks doc (a value of level's shape) into out; false with one line in w->err. w->path is the
 * level's own path ("" for the document). */
bool jspec_walk(struct jspec_walk *w, const struct jspec_level *level, json_t *doc, void *out);
/* Reports why at the current path, followed by ".sub" (sub cut to 40 bytes) when sub is not
 * NULL; returns false. */
bool jspec_fail(struct jspec_walk *w, const char *sub, const char *why);
/* The helpers of the types, for handlers: a YAML boolean or a bounded whole number (NULL: dflt),
 * and a list of at most max non-empty strings. */
bool jspec_bool(json_t *v, bool dflt, bool *out);
bool jspec_uint(json_t *v, unsigned dflt, unsigned lo, unsigned hi, unsigned *out);
bool jspec_strings_ok(json_t *a, size_t max);

#endif
