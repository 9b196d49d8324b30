/* jscan.h — what the visible ends of an oversized JSON-RPC message tell, without parsing it
 * (jscan.c). Pure; unit-tested and fuzzed. */
#ifndef HM_JSCAN_H
#define HM_JSCAN_H
#include <jansson.h>
#include <stddef.h>

/* A request carries the upstream's own id space: its id must never be taken for one of ours. */
enum jscan_kind {
    JSCAN_UNKNOWN,
    JSCAN_REQUEST,  /* a top-level "method" or "params" was seen first */
    JSCAN_RESPONSE, /* a top-level "result" or "error" was seen first */
};

/* The id of a message of which only head (its first head_len bytes) and tail (its last
 * tail_len bytes) were kept: a top-level "id" among the head's members, else the id right
 * before the final brace of the tail (where the MCP SDKs put it). A new integer or string (of
 * at most 64 bytes), or NULL when neither end shows one; *kind gets what the head tells. */
json_t *jscan_oversized_id(const char *head, size_t head_len, const char *tail, size_t tail_len,
                           enum jscan_kind *kind);

#endif
