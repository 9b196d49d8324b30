/* fuzz_gwsecret.c — libFuzzer target for gwsecret.h, the detector behind reject_secrets. The
 * input is read from an exact-size heap copy (ASan catches any read past len); the verdict must
 * be the same twice, its kind one of our fixed texts (never a pointer into the input), and a
 * known API key appended after a space must always be found: no input can hide a key behind it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gwsecret.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY " sk-ABCDEFGHIJ0123456789abcd"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *copy = malloc(size + sizeof KEY);
    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    const char *kind = NULL, *again = NULL;
    bool found = gw_secret_like(copy, size, &kind);
    CHECK(found == gw_secret_like(copy, size, &again) && kind == again);
    CHECK(found == (kind != NULL));
    CHECK(kind == NULL || kind < copy || kind >= copy + size);
    memcpy(copy + size, KEY, sizeof KEY - 1);
    CHECK(gw_secret_like(copy, size + sizeof KEY - 1, &kind) && kind != NULL);
    free(copy);
    return 0;
}
