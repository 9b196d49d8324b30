/* fuzz_jscan.c — libFuzzer target for jscan.h, the scan of an oversized upstream message's
 * visible ends. The input's first byte picks where head ends and tail starts; both are read
 * from exact-size heap copies (ASan catches any read past them). The id, when found, must be an
 * integer or a string of at most 64 bytes, and the same twice. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "jscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 65536)
        return 0;
    size_t cut = (size_t)data[0] * (size - 1) / 255;
    const uint8_t *body = data + 1;
    size_t n = size - 1;
    char *head = malloc(cut + 1), *tail = malloc(n - cut + 1);
    if (head == NULL || tail == NULL) {
        free(head);
        free(tail);
        return 0;
    }
    memcpy(head, body, cut);
    memcpy(tail, body + cut, n - cut);
    enum jscan_kind kind, again;
    json_t *id = jscan_oversized_id(head, cut, tail, n - cut, &kind);
    json_t *id2 = jscan_oversized_id(head, cut, tail, n - cut, &again);
    CHECK(kind == again && kind <= JSCAN_RESPONSE);
    CHECK((id == NULL) == (id2 == NULL));
    CHECK(id == NULL || json_equal(id, id2));
    CHECK(id == NULL || json_is_integer(id) ||
          (json_is_string(id) && json_string_length(id) <= 64));
    json_decref(id);
    json_decref(id2);
    free(head);
    free(tail);
    return 0;
}
