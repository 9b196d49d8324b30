/* fuzz_dotenv.c — libFuzzer target for dotenv.h. The raw input (not NUL-terminated, so ASan
 * sees any read past its end) is parsed; an accepted file must give well-formed keys and string
 * values, and writing the result back out as KEY="..." lines must parse to the same object. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dotenv.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool key_ok(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

/* Renders o as KEY="value" lines with \\ \" \n \r escaped. */
static char *render(json_t *o, size_t *len)
{
    size_t cap = 64, n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) cap += strlen(k) + 2 * json_string_length(v) + 8;
    char *out = malloc(cap);
    if (out == NULL)
        abort();
    json_object_foreach(o, k, v)
    {
        n += (size_t)sprintf(out + n, "%s=\"", k);
        const char *s = json_string_value(v);
        for (size_t i = 0; i < json_string_length(v); i++) {
            char c = s[i];
            if (c == '\\' || c == '"') {
                out[n++] = '\\';
                out[n++] = c;
            } else if (c == '\n') {
                out[n++] = '\\';
                out[n++] = 'n';
            } else if (c == '\r') {
                out[n++] = '\\';
                out[n++] = 'r';
            } else {
                out[n++] = c;
            }
        }
        out[n++] = '"';
        out[n++] = '\n';
    }
    CHECK(n < cap);
    *len = n;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[96];
    memset(err, 'Z', sizeof err);
    json_t *o = dotenv_parse((const char *)data, size, err, sizeof err);
    if (o == NULL) {
        CHECK(memchr(err, '\0', sizeof err) != NULL);
        CHECK(strncmp(err, "line ", 5) == 0);
        return 0;
    }
    CHECK(json_is_object(o));
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        CHECK(key_ok(k));
        CHECK(json_is_string(v));
        CHECK(json_string_length(v) <= 64 * 1024);
        CHECK(memchr(json_string_value(v), '\0', json_string_length(v)) == NULL);
    }

    size_t rlen;
    char *text = render(o, &rlen);
    char err2[96];
    json_t *again = dotenv_parse(text, rlen, err2, sizeof err2);
    if (again == NULL)
        fprintf(stderr, "fuzz_dotenv: rendered file refused: %s\n", err2);
    CHECK(again != NULL);
    CHECK(json_equal(again, o));
    json_decref(again);
    free(text);
    json_decref(o);
    return 0;
}
