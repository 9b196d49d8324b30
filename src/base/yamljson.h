/* yamljson.h — a YAML settings document as JSON (every scalar a string). Pure; fuzzed through
 * the registry and gateway file targets. */
#ifndef HM_YAMLJSON_H
#define HM_YAMLJSON_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses text (len bytes, need not be NUL-terminated). On failure returns NULL with a one-line
 * reason in err ("line N: ..."; "WHAT is empty" for a document with no content). The reason may
 * quote the input: clean it (utf8_clean) before sending it anywhere. */
json_t *yamljson_parse(const char *text, size_t len, const char *what, char *err, size_t errlen);

/* As yamljson_parse; on success *plain (not NULL) is a document of the same shape whose scalars
 * are true where the YAML scalar was plain and untagged (`5`, `true`) and false where it was
 * quoted or tagged (`"5"`, `!!str 5`): the one thing YAML's type of a value depends on that the
 * strings lose. On failure *plain is NULL. */
json_t *yamljson_parse_marked(const char *text, size_t len, const char *what, char *err,
                              size_t errlen, json_t **plain);

/* What a plain scalar (yamljson_parse_marked's true) means in YAML 1.2's core schema: a new
 * boolean, null, integer or real; NULL when it is a string after all. *range is set when it is
 * a number JSON can carry only with a loss (an integer beyond +-(2^53 - 1), a float out of a
 * double's range). */
json_t *yamljson_plain_value(const char *s, bool *range);

#endif
