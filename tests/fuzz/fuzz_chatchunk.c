/* fuzz_chatchunk.c — differential libFuzzer target for chatchunk.h: whenever the scanner accepts
 * an input, jansson (flags 0, what bridge.c falls back to) must load it too, with no "error"
 * member at the top, the same choices[0].delta.content and the same finish_reason == "error".
 * The input is one chunk, in an exact-size heap copy so ASan sees any read past it; byte 0
 * chooses the scratch buffer's cap (1 MiB as in bridge.c, or 16 bytes). */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatchunk.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t cap = data[0] & 1 ? 16 : 1024 * 1024;
    size_t n = size - 1;
    char *text = malloc(n ? n : 1);
    if (text == NULL)
        abort();
    memcpy(text, data + 1, n);

    struct buf scratch;
    struct chatchunk cc;
    buf_init(&scratch, cap);
    if (chatchunk_scan(text, n, &scratch, &cc)) {
        json_t *chunk = json_loadb(text, n, 0, NULL);
        CHECK(chunk != NULL);
        CHECK(json_object_get(chunk, "error") == NULL);
        json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
        json_t *content = json_object_get(json_object_get(choice, "delta"), "content");
        CHECK(cc.has_content == json_is_string(content));
        if (cc.has_content) {
            CHECK(scratch.data != NULL && scratch.len <= cap);
            CHECK(scratch.len == json_string_length(content));
            CHECK(memcmp(scratch.data, json_string_value(content), scratch.len) == 0);
            CHECK(strlen(scratch.data) == scratch.len);
        }
        const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
        CHECK(cc.finish_error == (finish != NULL && strcmp(finish, "error") == 0));
        json_decref(chunk);
    }
    buf_cleanup(&scratch);
    free(text);
    return 0;
}
