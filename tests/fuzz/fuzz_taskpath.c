/* fuzz_taskpath.c — libFuzzer target for taskpath.h. The raw input (not NUL-terminated, so ASan
 * sees any read past its end) is tried as a task id, a session name and a relative path. Ids and
 * names are compared with the patterns the header documents; a path must be accepted exactly
 * when the header says, and an accepted path must normalize to a safe spelling (no ".." or "."
 * component, no leading "/", no "//", no backslash, NUL, '%' or control character) made of the
 * input's own components, which read back gives itself. The output buffer is an exact-size heap
 * block, bridge.c's size and a small one taken from the input, so ASan sees any overrun. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "taskpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NORM_LEN 1100 /* bridge.c: char norm[1100] */

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* [A-Za-z0-9][A-Za-z0-9._-]{0,127} */
static bool want_id(const char *s, size_t n)
{
    if (n < 1 || n > 128 || !alnum(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!alnum(s[i]) && (s[i] == '\0' || !strchr("._-", s[i])))
            return false;
    return true;
}

/* ^[a-z0-9][a-z0-9._-]{0,63}$ */
static bool want_session(const char *s, size_t n)
{
    if (n < 1 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool lower = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!lower && (i == 0 || c == '\0' || !strchr("._-", c)))
            return false;
    }
    return true;
}

/* What the header promises: the accepted paths, and their normal form (the non-empty, non-"."
 * components joined by "/"), written to norm (at least len + 1 bytes). */
static bool want_rel(const char *p, size_t len, char *norm)
{
    if (len > 1024 || (len > 0 && p[0] == '/'))
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\0' || c == '\\' || c == '%' || c < 0x20 || c == 0x7f)
            return false;
    }
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && p[j] != '/')
            j++;
        size_t n = j - i;
        if (n == 2 && p[i] == '.' && p[i + 1] == '.')
            return false;
        if (n > 0 && !(n == 1 && p[i] == '.')) {
            if (o > 0)
                norm[o++] = '/';
            memcpy(norm + o, p + i, n);
            o += n;
        }
        i = j + 1;
    }
    norm[o] = '\0';
    return true;
}

/* The safety properties of a normalized path, checked on their own. */
static void check_safe(const char *out, size_t olen)
{
    CHECK(olen <= 1024);
    CHECK(memchr(out, '\\', olen) == NULL);
    CHECK(memchr(out, '%', olen) == NULL);
    for (size_t i = 0; i < olen; i++)
        CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7f); /* no NUL or control */
    if (olen == 0)
        return;
    CHECK(out[0] != '/' && out[olen - 1] != '/');
    CHECK(strstr(out, "//") == NULL);
    for (size_t i = 0; i < olen;) {
        size_t j = i;
        while (j < olen && out[j] != '/')
            j++;
        size_t n = j - i;
        CHECK(n > 0);
        CHECK(!(n == 1 && out[i] == '.'));
        CHECK(!(n == 2 && out[i] == '.' && out[i + 1] == '.'));
        i = j + 1;
    }
}

/* taskpath_rel_ok into an exact-size heap buffer of outlen bytes; returns the output (to be
 * freed) when accepted, NULL when refused. */
static char *rel(const char *p, size_t len, size_t outlen, bool *ok)
{
    char *out = malloc(outlen);
    if (out == NULL)
        abort();
    memset(out, 'Z', outlen);
    const char *why = "unset";
    *ok = taskpath_rel_ok(p, len, out, outlen, &why);
    if (*ok) {
        CHECK(memchr(out, '\0', outlen) != NULL);
        return out;
    }
    CHECK(why != NULL && why[0] != '\0'); /* bridge.c prints it */
    CHECK(strcmp(why, "unset") != 0);
    free(out);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;

    CHECK(taskpath_id_ok(p, size) == want_id(p, size));
    CHECK(taskpath_session_ok(p, size) == want_session(p, size));

    char *want = malloc(size + 1);
    if (want == NULL)
        abort();
    bool expect = want_rel(p, size, want);
    bool ok;
    char *out = rel(p, size, NORM_LEN, &ok);
    CHECK(ok == expect);
    if (ok) {
        size_t olen = strlen(out);
        check_safe(out, olen);
        CHECK(strcmp(out, want) == 0);

        /* Idempotent: the normal form is accepted and normalizes to itself. */
        bool ok2;
        char *again = rel(out, olen, NORM_LEN, &ok2);
        CHECK(ok2);
        CHECK(strcmp(again, out) == 0);
        free(again);

        /* Room for the output, its NUL and one byte more is always enough. */
        char *fit = rel(p, size, olen + 2, &ok2);
        CHECK(ok2 && strcmp(fit, out) == 0);
        free(fit);
        free(out);
    }

    /* A small buffer (1-64 bytes, from the input): never overrun; when it is accepted it is the
     * same normal form. */
    size_t small = size ? (size_t)(data[size - 1] & 63) + 1 : 1;
    char *s = rel(p, size, small, &ok);
    if (ok) {
        CHECK(expect);
        CHECK(strcmp(s, want) == 0);
        free(s);
    }
    free(want);
    return 0;
}
