/* Unit tests for jwt.c without keys: the token's shape (jwt_looks_like, jwt_parse's strict
 * base64url, JSON objects without duplicate members, the length cap) and each claim rule of
 * jwt_check_claims, at the edges of the clock skew. Signatures are in test_jwt.c. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "crypto.h"
#include "jwt.h"

#define NOW 1800000000LL
#define SKEW 60
#define ISS "https://idp.example"
#define HDR "{\"alg\":\"RS256\",\"kid\":\"k\"}"

static char *b64(const char *s)
{
    char *out = malloc(4 * ((strlen(s) + 2) / 3) + 1);
    assert_non_null(out);
    crypto_b64_encode(true, s, strlen(s), out);
    return out;
}

/* header.claims.c2ln: any signature; these tests stop before jwt_verify. */
static char *unsigned_token(const char *header, const char *claims)
{
    char *h = b64(header), *c = b64(claims), *out;
    assert_true(asprintf(&out, "%s.%s.c2ln", h, c) > 0);
    free(h);
    free(c);
    return out;
}

static enum jwt_status parse(const char *tok)
{
    struct jwt t;
    memset(&t, 0x5a, sizeof t);
    enum jwt_status st = jwt_parse(tok, strlen(tok), &t);
    if (st != JWT_OK) { /* nothing held, nothing to clean */
        assert_null(t.header);
        assert_null(t.claims);
        assert_null(t.sig);
        assert_null(t.signing_input);
    }
    jwt_cleanup(&t);
    return st;
}

/* jwt_check_claims of a token with these claims, against ISS, audience "hermes" (and "other"),
 * now NOW and SKEW. */
static enum jwt_status claims_status(const char *claims)
{
    char *tok = unsigned_token(HDR, claims);
    struct jwt t;
    assert_int_equal(jwt_parse(tok, strlen(tok), &t), JWT_OK);
    const char *aud[] = {"other", "hermes"};
    struct jwt_expect e = {ISS, aud, 2, (time_t)NOW, SKEW};
    enum jwt_status st = jwt_check_claims(&t, &e);
    jwt_cleanup(&t);
    free(tok);
    return st;
}

/* The usual claims with one member's JSON text replaced (value NULL: the member left out). */
static enum jwt_status with(const char *name, const char *value)
{
    static const char *const names[] = {"iss", "aud", "exp", "nbf", "iat"};
    char vals[5][64] = {"\"" ISS "\"", "\"hermes\""};
    snprintf(vals[2], sizeof vals[2], "%lld", NOW + 600);
    snprintf(vals[3], sizeof vals[3], "%lld", NOW - 10);
    snprintf(vals[4], sizeof vals[4], "%lld", NOW - 10);
    char claims[512] = "{\"sub\":\"alice\"";
    for (size_t i = 0; i < 5; i++) {
        const char *v = strcmp(names[i], name) == 0 ? value : vals[i];
        if (v != NULL)
            snprintf(claims + strlen(claims), sizeof claims - strlen(claims), ",\"%s\":%s",
                     names[i], v);
    }
    strcat(claims, "}");
    return claims_status(claims);
}

static enum jwt_status at(const char *name, long long v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", v);
    return with(name, s);
}

static void issuer(void **state)
{
    (void)state;
    assert_int_equal(with("sub", NULL), JWT_OK); /* the usual claims pass */
    assert_int_equal(with("iss", NULL), JWT_BAD_ISSUER);
    static const char *const bad[] = {"\"https://idp.example/\"",
                                      "\"https://IDP.example\"",
                                      "\"https://idp.exampl\"",
                                      "\"https://idp.example.evil\"",
                                      "\"\"",
                                      "1",
                                      "[\"" ISS "\"]",
                                      "null"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(with("iss", bad[i]), JWT_BAD_ISSUER);
    /* No expected issuer: nothing matches. */
    char *tok = unsigned_token(HDR, "{\"iss\":\"" ISS "\",\"aud\":\"hermes\",\"exp\":1900000000}");
    struct jwt t;
    assert_int_equal(jwt_parse(tok, strlen(tok), &t), JWT_OK);
    const char *aud[] = {"hermes"};
    struct jwt_expect e = {NULL, aud, 1, (time_t)NOW, SKEW};
    assert_int_equal(jwt_check_claims(&t, &e), JWT_BAD_ISSUER);
    e.issuer = ISS;
    assert_int_equal(jwt_check_claims(&t, &e), JWT_OK);
    e.naudiences = 0; /* no expected audience: nothing matches */
    assert_int_equal(jwt_check_claims(&t, &e), JWT_BAD_AUDIENCE);
    jwt_cleanup(&t);
    free(tok);
}

static void audience(void **state)
{
    (void)state;
    static const char *const good[] = {"\"hermes\"", "\"other\"", "[\"hermes\"]",
                                       "[\"x\",\"hermes\"]", "[\"other\",\"y\"]"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_int_equal(with("aud", good[i]), JWT_OK);
    assert_int_equal(with("aud", NULL), JWT_BAD_AUDIENCE);
    static const char *const bad[] = {"\"Hermes\"",     "\"hermes \"",
                                      "\"herm\"",       "[]",
                                      "[\"x\",\"y\"]",  "[[\"hermes\"]]",
                                      "[\"hermes\",1]", "[1,\"hermes\"]",
                                      "{\"hermes\":1}", "1",
                                      "null",           "\"\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(with("aud", bad[i]), JWT_BAD_AUDIENCE);
}

static void expiry(void **state)
{
    (void)state;
    assert_int_equal(with("exp", NULL), JWT_EXPIRED);
    static const char *const bad[] = {"\"1900000000\"", "null", "true", "[1900000000]", "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(with("exp", bad[i]), JWT_EXPIRED);
    /* Valid while now < exp + skew. */
    assert_int_equal(at("exp", NOW - SKEW + 1), JWT_OK);
    assert_int_equal(at("exp", NOW - SKEW), JWT_EXPIRED);
    assert_int_equal(at("exp", NOW - SKEW - 1), JWT_EXPIRED);
    assert_int_equal(at("exp", 0), JWT_EXPIRED);
    assert_int_equal(at("exp", -1), JWT_EXPIRED);
    assert_int_equal(at("exp", LLONG_MIN), JWT_EXPIRED);
    assert_int_equal(at("exp", LLONG_MAX), JWT_OK); /* no overflow adding the skew */
    /* Fractions: a part of a second past exp + skew is past it. */
    char s[48];
    snprintf(s, sizeof s, "%lld.5", NOW - SKEW);
    assert_int_equal(with("exp", s), JWT_OK);
    snprintf(s, sizeof s, "%lld.0", NOW - SKEW);
    assert_int_equal(with("exp", s), JWT_EXPIRED);
    snprintf(s, sizeof s, "%lld.999", NOW - SKEW - 1);
    assert_int_equal(with("exp", s), JWT_EXPIRED);
    assert_int_equal(with("exp", "1e300"), JWT_OK);
    assert_int_equal(with("exp", "-1e300"), JWT_EXPIRED);
    assert_int_equal(with("exp", "1.8e9"), JWT_OK);            /* NOW, inside the skew */
    assert_int_equal(with("exp", "1.7999999e9"), JWT_EXPIRED); /* NOW - 100 */
}

static void not_before_and_issued_at(void **state)
{
    (void)state;
    assert_int_equal(with("nbf", NULL), JWT_OK);
    assert_int_equal(with("iat", NULL), JWT_OK);
    /* Valid while nbf <= now + skew, and likewise iat. */
    assert_int_equal(at("nbf", NOW + SKEW), JWT_OK);
    assert_int_equal(at("nbf", NOW + SKEW + 1), JWT_NOT_YET_VALID);
    assert_int_equal(at("iat", NOW + SKEW), JWT_OK);
    assert_int_equal(at("iat", NOW + SKEW + 1), JWT_ISSUED_IN_FUTURE);
    assert_int_equal(at("nbf", LLONG_MIN), JWT_OK);
    assert_int_equal(at("iat", LLONG_MIN), JWT_OK);
    assert_int_equal(at("nbf", LLONG_MAX), JWT_NOT_YET_VALID);
    assert_int_equal(at("iat", LLONG_MAX), JWT_ISSUED_IN_FUTURE);
    assert_int_equal(with("nbf", "1e300"), JWT_NOT_YET_VALID);
    assert_int_equal(with("iat", "-1e300"), JWT_OK);
    char s[48];
    snprintf(s, sizeof s, "%lld.5", NOW + SKEW);
    assert_int_equal(with("nbf", s), JWT_NOT_YET_VALID);
    assert_int_equal(with("iat", s), JWT_ISSUED_IN_FUTURE);
    static const char *const bad[] = {"\"0\"", "null", "false", "[0]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(with("nbf", bad[i]), JWT_NOT_YET_VALID);
        assert_int_equal(with("iat", bad[i]), JWT_ISSUED_IN_FUTURE);
    }
}

static void skew_and_clock_extremes(void **state)
{
    (void)state;
    char *tok = unsigned_token(HDR, "{\"iss\":\"" ISS "\",\"aud\":\"hermes\",\"exp\":1000,"
                                    "\"nbf\":900}");
    struct jwt t;
    assert_int_equal(jwt_parse(tok, strlen(tok), &t), JWT_OK);
    const char *aud[] = {"hermes"};
    struct jwt_expect e = {ISS, aud, 1, 999, 0};
    assert_int_equal(jwt_check_claims(&t, &e), JWT_OK);
    e.now = 1000;
    assert_int_equal(jwt_check_claims(&t, &e), JWT_EXPIRED);
    e.skew_s = 1;
    assert_int_equal(jwt_check_claims(&t, &e), JWT_OK);
    e.skew_s = UINT_MAX;
    e.now = (time_t)LLONG_MAX;
    assert_int_equal(jwt_check_claims(&t, &e), JWT_EXPIRED);
    e.now = (time_t)LLONG_MIN;
    assert_int_equal(jwt_check_claims(&t, &e), JWT_NOT_YET_VALID);
    e.skew_s = 0;
    e.now = 899;
    assert_int_equal(jwt_check_claims(&t, &e), JWT_NOT_YET_VALID);
    jwt_cleanup(&t);
    free(tok);
}

static void shape(void **state)
{
    (void)state;
    char *ok = unsigned_token(HDR, "{}");
    assert_true(jwt_looks_like(ok, strlen(ok)));
    assert_int_equal(parse(ok), JWT_OK);
    assert_true(jwt_looks_like("e30.e30.c2ln", 12)); /* {}.{}.sig */
    assert_false(jwt_looks_like(ok, 0));
    assert_false(jwt_looks_like(NULL, 0));
    /* Opaque tokens and near misses. */
    static const char *const opaque[] = {
        "hm_4f9c1a7e2b8d3c6f0a5e9b1d7c3f8a2e",
        "2YotnFZFEjr1zCsicMWpAA",
        "e30.e30",
        "e30.e30.",
        ".e30.c2ln",
        "e30..c2ln",
        "e30.e30.c2ln.c2ln",
        "W10.e30.c2ln",    /* [] */
        "bnVsbA.e30.c2ln", /* null */
        "e30=.e30.c2ln",   /* padded */
        "e3 0.e30.c2ln",
        "e30.e30.c2l+", /* base64, not base64url */
        "e30.e+0.c2ln",
        "e31.e30.c2ln",                /* non-zero unused bits */
        "eyJhIjoxLCJhIjoyfQ.e30.c2ln", /* {"a":1,"a":2} */
        "Bearer e30.e30.c2ln",
    };
    for (size_t i = 0; i < sizeof opaque / sizeof *opaque; i++)
        assert_false(jwt_looks_like(opaque[i], strlen(opaque[i])));
    /* A NUL inside the given length is not part of any alphabet. */
    assert_false(jwt_looks_like("e30.e30.c2ln\0x", 14));
    assert_int_equal(parse("e30.e30"), JWT_MALFORMED);
    free(ok);
}

static void strict_decoding(void **state)
{
    (void)state;
    char *h = b64(HDR), *c = b64("{\"sub\":\"a\"}"), *tok;
    static const char *const sigs[] = {"c2ln", "c2lu", "c2k", "c2g", "AAAA"};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        assert_true(asprintf(&tok, "%s.%s.%s", h, c, sigs[i]) > 0);
        assert_int_equal(parse(tok), JWT_OK);
        free(tok);
    }
    static const char *const badsigs[] = {"c2ln=", "c2l",  "c2h",   "c",     "c2lnc",
                                          "c2l/",  "c2l+", "c2%6e", "c2\tn", ""};
    for (size_t i = 0; i < sizeof badsigs / sizeof *badsigs; i++) {
        assert_true(asprintf(&tok, "%s.%s.%s", h, c, badsigs[i]) > 0);
        assert_int_equal(parse(tok), JWT_MALFORMED);
        free(tok);
    }
    /* The header and the claims: JSON objects, no duplicate members, valid UTF-8. */
    static const char *const heads[] = {"[]",
                                        "\"RS256\"",
                                        "{\"alg\":\"RS256\"",
                                        "",
                                        "{\"alg\":\"RS256\",\"alg\":\"RS256\"}",
                                        "{\"alg\":\"RS256\",\"kid\":\"k\xff\"}",
                                        "{\"alg\":\"RS256\",\"kid\":\"a\\u0000b\"}"};
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
        char *t2 = unsigned_token(heads[i], "{}");
        assert_int_equal(parse(t2), JWT_MALFORMED);
        free(t2);
    }
    static const char *const bodies[] = {"[]", "1", "{\"exp\":1,\"exp\":2}",
                                         "{\"a\":", "{\"sub\":\"\xc3\x28\"}"};
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        char *t2 = unsigned_token(HDR, bodies[i]);
        assert_int_equal(parse(t2), JWT_MALFORMED);
        free(t2);
    }
    /* A refused alg is named as such even when the rest is broken. */
    assert_true(asprintf(&tok, "%s.%%%%%%.", "eyJhbGciOiJub25lIn0") > 0);
    assert_int_equal(parse(tok), JWT_ALG_REFUSED);
    free(tok);
    free(h);
    free(c);
}

static void length_cap(void **state)
{
    (void)state;
    /* A token of exactly JWT_MAX_LEN bytes parses; one byte more is refused unread. */
    char *h = b64(HDR);
    size_t fixed = strlen(h) + strlen(".") + strlen(".c2ln");
    size_t want = JWT_MAX_LEN - fixed; /* the claims' base64url length */
    size_t raw = want / 4 * 3;         /* encodes to want rounded down to a multiple of 4 */
    char *claims = malloc(raw + 1);
    memset(claims, 'x', raw);
    memcpy(claims, "{\"p\":\"", 6);
    memcpy(claims + raw - 2, "\"}", 2);
    claims[raw] = '\0';
    char *c = b64(claims), *tok;
    assert_true(asprintf(&tok, "%s.%s.c2ln", h, c) > 0);
    size_t len = strlen(tok);
    assert_true(len <= JWT_MAX_LEN && len > JWT_MAX_LEN - 4);
    struct jwt t;
    assert_int_equal(jwt_parse(tok, len, &t), JWT_OK);
    jwt_cleanup(&t);
    assert_true(jwt_looks_like(tok, len));
    /* Pad the signature to reach exactly the cap, then one past it. */
    char *full = malloc(JWT_MAX_LEN + 2);
    memcpy(full, tok, len);
    size_t n = len;
    while (n < JWT_MAX_LEN)
        full[n++] = 'A';
    if ((n - (len - 4)) % 4 == 1) /* a lone base64url character is malformed on its own */
        full[--n] = '\0';
    full[n] = '\0';
    assert_int_equal(jwt_parse(full, n, &t), JWT_OK);
    jwt_cleanup(&t);
    memset(full + len, 'A', JWT_MAX_LEN + 1 - len);
    full[JWT_MAX_LEN + 1] = '\0';
    assert_int_equal(parse(full), JWT_MALFORMED);
    assert_false(jwt_looks_like(full, JWT_MAX_LEN + 1));
    free(full);
    free(tok);
    free(c);
    free(claims);
    free(h);
}

static void status_texts(void **state)
{
    (void)state;
    const char *seen[JWT_BAD_AUDIENCE + 1];
    for (int s = JWT_OK; s <= JWT_BAD_AUDIENCE; s++) {
        seen[s] = jwt_status_text((enum jwt_status)s);
        assert_non_null(seen[s]);
        assert_true(seen[s][0] != '\0');
        for (int j = 0; j < s; j++)
            assert_string_not_equal(seen[s], seen[j]);
    }
    assert_string_equal(jwt_status_text(JWT_EXPIRED), "expired");
    assert_string_equal(jwt_status_text(JWT_UNKNOWN_KID), "unknown key id");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(issuer),
        cmocka_unit_test(audience),
        cmocka_unit_test(expiry),
        cmocka_unit_test(not_before_and_issued_at),
        cmocka_unit_test(skew_and_clock_extremes),
        cmocka_unit_test(shape),
        cmocka_unit_test(strict_decoding),
        cmocka_unit_test(length_cap),
        cmocka_unit_test(status_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
