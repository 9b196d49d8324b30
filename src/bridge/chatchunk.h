/* chatchunk.h — the two fields the bridge reads from one streamed chat.completion.chunk
 * (choices[0].delta.content and whether choices[0].finish_reason is "error"), found by scanning
 * the JSON text instead of building a jansson tree: parsing every chunk was the largest cost of a
 * proxied hermes_task.
 *
 * Strict on purpose: it reads only plain, valid JSON it is sure about and says no to anything
 * else (an "error" member at the top, a key it needs given twice, numbers with exponents or more
 * than 15 characters, deep nesting, \u0000, invalid UTF-8, ...). On no, the caller parses the
 * chunk with jansson as before, so the result is the same either way. Pure. */
#ifndef HM_CHATCHUNK_H
#define HM_CHATCHUNK_H
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

struct chatchunk {
    bool has_content;  /* choices[0].delta.content is a string: decoded in the scratch buffer */
    bool finish_error; /* choices[0].finish_reason is the string "error" */
};

/* Reads p[0..n). Returns false when the caller must use the full parser. On true, *out is set
 * and scratch (emptied first) holds the decoded content, NUL-terminated, without NUL inside. */
bool chatchunk_scan(const char *p, size_t n, struct buf *scratch, struct chatchunk *out);

#endif
