/* fuzz_jwks.c — libFuzzer target for JSON Web Key Sets (jwks_parse in src/auth/jwt.c). The raw
 * input is the document: a refusal gives a one-line reason, a set keeps at most JWKS_MAX_KEYS
 * keys and the same text gives the same set, and tokens of each alg (fuzz_jwt_keys.h) verify
 * against it with a documented status (JWT_OK with the set they were signed for) and no reason
 * left in libcrypto's error queue. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>
#include <openssl/err.h>

#include "fuzz_check.h"
#include "fuzz_jwt_keys.h"
#include "jwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(const char *err, size_t len)
{
    CHECK(memchr(err, '\0', len) != NULL && err[0] != '\0');
    CHECK(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
    json_t *s = json_string(err);
    CHECK(s != NULL && "jwks_parse: err is not valid UTF-8");
    json_decref(s);
}

static void verify_tokens(const struct jwks *ks, bool theirs)
{
    for (size_t i = 0; i < sizeof fuzz_jwt_tokens / sizeof *fuzz_jwt_tokens; i++) {
        struct jwt t;
        const char *tok = fuzz_jwt_tokens[i];
        CHECK(jwt_parse(tok, strlen(tok), &t) == JWT_OK);
        enum jwt_status v = jwt_verify(&t, ks);
        CHECK(v == JWT_OK || v == JWT_UNKNOWN_KID || v == JWT_NO_KEY || v == JWT_BAD_SIGNATURE);
        CHECK(v != JWT_UNKNOWN_KID || !jwks_has_kid(ks, t.kid));
        CHECK(!theirs || v == JWT_OK); /* the set they were signed for */
        CHECK(ERR_peek_error() == 0);
        jwt_cleanup(&t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *doc = fuzz_dup(data, size);
    char err[200];
    memset(err, 'Z', sizeof err);
    struct jwks *ks = jwks_parse(doc, size, err, sizeof err);
    CHECK(ERR_peek_error() == 0);
    if (ks == NULL) {
        check_refusal(err, sizeof err);
        free(doc);
        return 0;
    }
    size_t n = jwks_count(ks);
    CHECK(n <= JWKS_MAX_KEYS);
    struct jwks *again = jwks_parse(doc, size, NULL, 0);
    CHECK(again != NULL && jwks_count(again) == n);
    jwks_unref(again);
    CHECK(jwks_ref(ks) == ks);
    jwks_unref(ks); /* still held once */
    verify_tokens(ks, size == strlen(FUZZ_JWKS) && memcmp(doc, FUZZ_JWKS, size) == 0);
    CHECK(!jwks_has_kid(ks, NULL));
    jwks_unref(ks);
    free(doc);
    return 0;
}
