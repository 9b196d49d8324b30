/* toolargs.h — a tool's arguments described once, as a table, from which both the checks of a
 * call's arguments and the tool's JSON Schema (inputSchema) are made, so the two cannot drift
 * apart (the idea of GNU Taler's GNUNET_JSON_spec).
 *
 * A table is an array of struct toolarg ended by TOOLARG_END. Checking is strict: an unknown
 * field, a wrong type, a missing required field, a string longer than its cap, holding a NUL
 * or failing its syntax check, an array with too many items: each is refused with one line
 * naming the field. Pure: no I/O, no globals. */
#ifndef HM_TOOLARGS_H
#define HM_TOOLARGS_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum toolarg_type { TOOLARG_STRING = 1, TOOLARG_BOOL, TOOLARG_STRINGS /* array of strings */ };

struct toolarg {
    const char *name;
    enum toolarg_type type;
    bool required;
    bool nonempty;             /* strings: "" is refused (minLength 1) */
    size_t max_len;            /* strings, and each item of TOOLARG_STRINGS; 0: no cap */
    size_t max_items;          /* TOOLARG_STRINGS; 0: no cap */
    const char *const *one_of; /* strings: the allowed values, NULL-terminated (an enum) */
    const char *pattern;       /* strings: the JSON Schema pattern, for the schema only ... */
    bool (*syntax)(const char *s, size_t len); /* ... and the check that enforces it */
    const char *syntax_hint; /* the rule in words, for the error text ("must match ...") */
    const char *description; /* for the schema; may be NULL */
};
#define TOOLARG_END                                                                                \
    {                                                                                              \
        .name = NULL                                                                               \
    }

/* The object schema of the table: properties, required, additionalProperties false. */
json_t *toolargs_schema(const struct toolarg *spec);

/* Checks args (an object) against spec. On success returns true and sets out[i] to the value
 * of spec[i] (borrowed from args; NULL when absent or null). On failure returns false with one
 * line in err naming the field. out holds out_cap entries; a table with more is refused (a bug
 * in the table, never a write past out). */
bool toolargs_check(const struct toolarg *spec, json_t *args, json_t **out, size_t out_cap,
                    char *err, size_t errlen);

/* The string value of out[i], or NULL. */
const char *toolargs_str(json_t *const *out, size_t i);

#endif
