/* fuzz_jsonparse.c — libFuzzer target for jsonparse.h, differential: for every input,
 * jsonparse must give what jansson's json_loadb(JSON_REJECT_DUPLICATES) gives, a value equal to
 * jansson's (same types, same members) or NULL where jansson fails. One difference is meant:
 * jansson drops a NUL byte that ends a number or a literal ("[1\0]" loads), jsonparse refuses
 * every NUL outside a string's escapes; with a NUL in the input, what jsonparse accepts jansson
 * must accept alike. The text is read from an
 * exact-size heap copy without a terminating NUL, so ASan catches any read past it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "jsonparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *text = malloc(size ? size : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    json_t *ours = jsonparse(text, size);
    json_t *theirs = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
    if (memchr(text, '\0', size) == NULL)
        CHECK((ours == NULL) == (theirs == NULL));
    if (ours != NULL)
        CHECK(json_equal(ours, theirs));
    json_decref(ours);
    json_decref(theirs);
    free(text);
    return 0;
}
