/* fuzz_form.c — libFuzzer target for the urlencoded form and query decoder (src/auth/form.c),
 * which reads /token and consent bodies and /authorize query values from any client. The input
 * is a form body or a query string (the same syntax; the seeds hold both): each field the
 * endpoints read is looked up; a value found must be NUL-terminated within the buffer, free of
 * control characters, and the same when asked again;
 * a small buffer is never overrun. The input as one escaped value must decode the same way,
 * and as an Authorization header (client_secret_basic) gives parts that fit and hold no control
 * character, or nothing. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(const char *v, size_t outsz)
{
    size_t n = strnlen(v, outsz);
    CHECK(n < outsz);
    for (size_t i = 0; i < n; i++)
        CHECK((unsigned char)v[i] >= 0x20 && v[i] != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"grant_type",
                                        "code",
                                        "code_verifier",
                                        "client_id",
                                        "redirect_uri",
                                        "refresh_token",
                                        "csrf",
                                        "passphrase",
                                        "action",
                                        "resource",
                                        "response_type",
                                        "state",
                                        "code_challenge",
                                        "code_challenge_method",
                                        "scope",
                                        "client_secret",
                                        "token",
                                        "token_type_hint",
                                        ""};
    const char *text = (const char *)data;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char out[128], again[128];
        enum form_result r = form_get(text, size, names[i], out, sizeof out);
        CHECK(r == FORM_ABSENT || r == FORM_OK || r == FORM_BAD);
        check_value(out, sizeof out);
        CHECK(r == FORM_OK || out[0] == '\0');
        CHECK(form_get(text, size, names[i], again, sizeof again) == r);
        CHECK(strcmp(out, again) == 0);
        char *small = malloc(4);
        if (small == NULL)
            abort();
        r = form_get(text, size, names[i], small, 4);
        check_value(small, 4);
        free(small);
    }
    char *dec = malloc(size + 1);
    size_t n = 0;
    if (dec == NULL)
        abort();
    if (form_decode(text, size, dec, size + 1, &n)) {
        CHECK(n <= size && dec[n] == '\0' && strlen(dec) == n);
        check_value(dec, size + 1);
    }
    free(dec);
    char *header = malloc(size + 1), id[65], secret[129];
    if (header == NULL)
        abort();
    memcpy(header, data, size);
    header[size] = '\0';
    if (form_basic_auth(header, id, sizeof id, secret, sizeof secret)) {
        check_value(id, sizeof id);
        check_value(secret, sizeof secret);
    }
    free(header);
    return 0;
}
