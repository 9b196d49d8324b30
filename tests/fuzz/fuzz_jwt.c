/* fuzz_jwt.c — libFuzzer target for JWT access tokens (src/auth/jwt.c). The raw input is the
 * token: jwt_looks_like and jwt_parse must agree (a parsed token has a JWS's shape), a parsed
 * token must hold what jwt.h promises (objects, an allowed alg, a bounded kid, the signing input
 * as sent), and verification against a fixed key set (the seeds are signed for it,
 * fuzz_jwt_keys.h) and the claim checks must give a documented status. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_jwt_keys.h"
#include "jwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parsed once: the target checks jwt.c, not the cost of building keys. */
static struct jwks *fixed_keys(void)
{
    static struct jwks *keys;
    if (keys == NULL) {
        char err[128];
        keys = jwks_parse(FUZZ_JWKS, strlen(FUZZ_JWKS), err, sizeof err);
        CHECK(keys != NULL && jwks_count(keys) == 3);
    }
    return keys;
}

static void check_parsed(const struct jwt *t, const char *tok, size_t size)
{
    CHECK(json_is_object(t->header) && json_is_object(t->claims));
    CHECK(t->alg == JWT_ALG_RS256 || t->alg == JWT_ALG_PS256 || t->alg == JWT_ALG_ES256 ||
          t->alg == JWT_ALG_EDDSA);
    static const char *const refused[] = {"crit", "jku", "x5u", "jwk", "x5c"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        CHECK(json_object_get(t->header, refused[i]) == NULL);
    if (t->kid != NULL) {
        size_t n = strlen(t->kid);
        CHECK(n >= 1 && n <= JWT_KID_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK((unsigned char)t->kid[i] >= 0x20 && t->kid[i] != 0x7f);
    }
    /* The signing input is the token up to its last dot, byte for byte. */
    CHECK(t->signing_len < size && tok[t->signing_len] == '.');
    CHECK(memcmp(t->signing_input, tok, t->signing_len) == 0);
    CHECK(t->signing_input[t->signing_len] == '\0');
    CHECK(memchr(tok + t->signing_len + 1, '.', size - t->signing_len - 1) == NULL);
    CHECK(t->sig != NULL && t->sig_len > 0 && t->sig_len <= size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *tok = fuzz_dup(data, size); /* exact size: ASan sees a read past the token */
    bool looks = jwt_looks_like(tok, size);
    struct jwt t;
    enum jwt_status st = jwt_parse(tok, size, &t);
    CHECK(st >= JWT_OK && st <= JWT_BAD_AUDIENCE && jwt_status_text(st) != NULL);
    CHECK(st != JWT_OK || looks);
    CHECK(size <= JWT_MAX_LEN || (st == JWT_MALFORMED && !looks));
    if (st != JWT_OK) {
        CHECK(t.header == NULL && t.claims == NULL && t.sig == NULL && t.signing_input == NULL);
        free(tok);
        return 0;
    }
    check_parsed(&t, tok, size);
    enum jwt_status v = jwt_verify(&t, fixed_keys());
    CHECK(v == JWT_OK || v == JWT_UNKNOWN_KID || v == JWT_NO_KEY || v == JWT_BAD_SIGNATURE);
    CHECK(v != JWT_UNKNOWN_KID || (t.kid != NULL && !jwks_has_kid(fixed_keys(), t.kid)));
    CHECK(jwt_verify(&t, fixed_keys()) == v); /* no state carried between calls */
    const char *aud[] = {FUZZ_JWT_AUD};
    struct jwt_expect e = {FUZZ_JWT_ISS, aud, 1, FUZZ_JWT_NOW, 60};
    enum jwt_status c = jwt_check_claims(&t, &e);
    CHECK(c == JWT_OK || (c >= JWT_EXPIRED && c <= JWT_BAD_AUDIENCE));
    if (c == JWT_OK) {
        json_t *iss = json_object_get(t.claims, "iss");
        CHECK(json_is_string(iss) && strcmp(json_string_value(iss), FUZZ_JWT_ISS) == 0);
        CHECK(json_is_number(json_object_get(t.claims, "exp")));
    }
    jwt_cleanup(&t);
    CHECK(t.header == NULL && t.sig == NULL);
    free(tok);
    return 0;
}
