/* Unit tests for jwt.c's signatures and key sets: keys generated here (RSA 2048, P-256,
 * Ed25519), published as JWKs, tokens signed here; every allowed alg verifies and every refusal
 * of jwt.h's contract (algs, headers, kids, key fitness, signature forms) is exercised. The
 * claim rules and the token's shape are in test_jwt_claims.c. */
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
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
#define ISS "https://idp.example"
#define CLAIMS "{\"iss\":\"" ISS "\",\"aud\":\"hermes\",\"sub\":\"alice\",\"exp\":1800000600}"

static EVP_PKEY *rsa, *rsa_other, *rsa_small, *ec, *ec_other, *ed, *ed_other;

/* ---- helpers: keys as JWKs, tokens signed ------------------------------------------------- */

static char *b64(const void *p, size_t n)
{
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    assert_non_null(out);
    crypto_b64_encode(true, p, n, out);
    return out;
}

static char *bn_b64(EVP_PKEY *pk, const char *param, int pad)
{
    BIGNUM *bn = NULL;
    unsigned char buf[1024];
    assert_int_equal(EVP_PKEY_get_bn_param(pk, param, &bn), 1);
    int n = pad > 0 ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    BN_free(bn);
    assert_true(n > 0);
    return b64(buf, (size_t)n);
}

/* pk as a JWK object with kid (NULL: none) and extra members (",\"alg\":\"RS256\"" or ""). */
static char *jwk(EVP_PKEY *pk, const char *kid, const char *extra)
{
    char kidm[400] = "", *out = NULL;
    if (kid != NULL)
        snprintf(kidm, sizeof kidm, ",\"kid\":\"%s\"", kid);
    if (EVP_PKEY_is_a(pk, "RSA")) {
        char *n = bn_b64(pk, OSSL_PKEY_PARAM_RSA_N, 0), *e = bn_b64(pk, OSSL_PKEY_PARAM_RSA_E, 0);
        assert_true(asprintf(&out, "{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\"%s%s}", n, e, kidm,
                             extra) > 0);
        free(n);
        free(e);
    } else if (EVP_PKEY_is_a(pk, "EC")) {
        char *x = bn_b64(pk, OSSL_PKEY_PARAM_EC_PUB_X, 32);
        char *y = bn_b64(pk, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
        assert_true(asprintf(&out,
                             "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\"%s%s}", x,
                             y, kidm, extra) > 0);
        free(x);
        free(y);
    } else {
        unsigned char raw[32];
        size_t len = sizeof raw;
        assert_int_equal(EVP_PKEY_get_raw_public_key(pk, raw, &len), 1);
        char *x = b64(raw, len);
        assert_true(asprintf(&out, "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"%s\"%s%s}", x,
                             kidm, extra) > 0);
        free(x);
    }
    return out;
}

/* {"keys":[a, b, ...]} from JWK strings, which it frees; NULL ends the list. */
static struct jwks *set_of(const char *first, ...)
{
    char *doc = strdup("{\"keys\":["), *tmp;
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k != NULL; k = va_arg(ap, const char *)) {
        assert_true(asprintf(&tmp, "%s%s%s", doc, k == first ? "" : ",", k) > 0);
        free(doc);
        free((void *)(uintptr_t)k);
        doc = tmp;
    }
    va_end(ap);
    assert_true(asprintf(&tmp, "%s]}", doc) > 0);
    free(doc);
    char err[128] = "";
    struct jwks *ks = jwks_parse(tmp, strlen(tmp), err, sizeof err);
    free(tmp);
    assert_non_null(ks);
    return ks;
}

/* The signature of in by pk, as `how` says: an alg name, or a deliberate variant of one. */
static size_t sign(EVP_PKEY *pk, const char *how, const char *in, unsigned char *out)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pc = NULL;
    bool eddsa = strcmp(how, "EdDSA") == 0;
    assert_int_equal(EVP_DigestSignInit(ctx, &pc, eddsa ? NULL : EVP_sha256(), NULL, pk), 1);
    if (strncmp(how, "PS256", 5) == 0) {
        assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING), 1);
        int salt = strcmp(how, "PS256-salt20") == 0 ? 20 : RSA_PSS_SALTLEN_DIGEST;
        assert_int_equal(EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, salt), 1);
    }
    unsigned char der[1024];
    size_t n = sizeof der;
    assert_int_equal(EVP_DigestSign(ctx, der, &n, (const unsigned char *)in, strlen(in)), 1);
    EVP_MD_CTX_free(ctx);
    if (strcmp(how, "ES256") == 0) { /* DER to the JWS form r||s */
        const unsigned char *p = der;
        ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &p, (long)n);
        assert_non_null(s);
        BN_bn2binpad(ECDSA_SIG_get0_r(s), out, 32);
        BN_bn2binpad(ECDSA_SIG_get0_s(s), out + 32, 32);
        ECDSA_SIG_free(s);
        return 64;
    }
    memcpy(out, der, n); /* RS256, PS256, EdDSA, and ES256-der: as libcrypto gives it */
    return n;
}

/* A compact token: header and claims JSON as given, signed by pk as `how` says. */
static char *token(const char *header, const char *claims, EVP_PKEY *pk, const char *how)
{
    char *h = b64(header, strlen(header)), *c = b64(claims, strlen(claims)), *in, *out;
    assert_true(asprintf(&in, "%s.%s", h, c) > 0);
    unsigned char sig[1024];
    size_t n = sign(pk, how, in, sig);
    char *s = b64(sig, n);
    assert_true(asprintf(&out, "%s.%s", in, s) > 0);
    free(h);
    free(c);
    free(in);
    free(s);
    return out;
}

static char *header(const char *alg, const char *kid)
{
    char *out;
    if (kid != NULL)
        assert_true(asprintf(&out, "{\"alg\":\"%s\",\"kid\":\"%s\",\"typ\":\"at+jwt\"}", alg, kid) >
                    0);
    else
        assert_true(asprintf(&out, "{\"alg\":\"%s\",\"typ\":\"at+jwt\"}", alg) > 0);
    return out;
}

/* A token with the usual header and claims. */
static char *signed_by(EVP_PKEY *pk, const char *alg, const char *kid, const char *how)
{
    char *h = header(alg, kid), *t = token(h, CLAIMS, pk, how);
    free(h);
    return t;
}

/* parse, then verify against ks: the first status that is not JWT_OK, or JWT_OK. */
static enum jwt_status check(const char *tok, const struct jwks *ks)
{
    struct jwt t;
    enum jwt_status st = jwt_parse(tok, strlen(tok), &t);
    if (st != JWT_OK)
        return st;
    st = jwt_verify(&t, ks);
    jwt_cleanup(&t);
    assert_int_equal(ERR_peek_error(), 0); /* no reasons left behind for the next caller */
    return st;
}

static enum jwt_status check_free(char *tok, const struct jwks *ks)
{
    enum jwt_status st = check(tok, ks);
    free(tok);
    return st;
}

/* The usual set: one key of each kind, kids r1, e1, d1, no alg members. */
static struct jwks *usual(void)
{
    return set_of(jwk(rsa, "r1", ""), jwk(ec, "e1", ""), jwk(ed, "d1", ""), NULL);
}

static int setup(void **state)
{
    (void)state;
    rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa_other = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa_small = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ec_other = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    ed_other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    return rsa && rsa_other && rsa_small && ec && ec_other && ed && ed_other ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    EVP_PKEY *all[] = {rsa, rsa_other, rsa_small, ec, ec_other, ed, ed_other};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        EVP_PKEY_free(all[i]);
    return 0;
}

/* ---- tests -------------------------------------------------------------------------------- */

static void every_alg_verifies(void **state)
{
    (void)state;
    struct jwks *ks = usual();
    assert_int_equal(jwks_count(ks), 3);
    assert_true(jwks_has_kid(ks, "r1") && jwks_has_kid(ks, "e1") && jwks_has_kid(ks, "d1"));
    assert_false(jwks_has_kid(ks, "r2"));
    static const struct {
        const char *alg, *kid;
        enum jwt_alg want;
    } cases[] = {{"RS256", "r1", JWT_ALG_RS256},
                 {"PS256", "r1", JWT_ALG_PS256},
                 {"ES256", "e1", JWT_ALG_ES256},
                 {"EdDSA", "d1", JWT_ALG_EDDSA}};
    EVP_PKEY *keys[] = {rsa, rsa, ec, ed};
    for (size_t i = 0; i < 4; i++) {
        char *tok = signed_by(keys[i], cases[i].alg, cases[i].kid, cases[i].alg);
        struct jwt t;
        assert_int_equal(jwt_parse(tok, strlen(tok), &t), JWT_OK);
        assert_int_equal(t.alg, cases[i].want);
        assert_string_equal(t.kid, cases[i].kid);
        assert_int_equal(jwt_verify(&t, ks), JWT_OK);
        const char *aud[] = {"hermes"};
        struct jwt_expect e = {ISS, aud, 1, (time_t)NOW, 30};
        assert_int_equal(jwt_check_claims(&t, &e), JWT_OK);
        assert_string_equal(json_string_value(json_object_get(t.claims, "sub")), "alice");
        jwt_cleanup(&t);
        jwt_cleanup(&t); /* cleaned twice is harmless */
        free(tok);
    }
    struct jwks *again = jwks_ref(ks);
    assert_ptr_equal(again, ks);
    jwks_unref(ks);
    assert_int_equal(jwks_count(again), 3); /* still held */
    jwks_unref(again);
    jwks_unref(NULL);
}

static void pss_and_pkcs1_are_not_interchangeable(void **state)
{
    (void)state;
    struct jwks *ks = usual();
    /* Signed with one padding, labelled with the other. */
    assert_int_equal(check_free(signed_by(rsa, "PS256", "r1", "RS256"), ks), JWT_BAD_SIGNATURE);
    assert_int_equal(check_free(signed_by(rsa, "RS256", "r1", "PS256"), ks), JWT_BAD_SIGNATURE);
    /* PSS with a salt shorter than the digest: RFC 7518 says the salt is the digest's length. */
    assert_int_equal(check_free(signed_by(rsa, "PS256", "r1", "PS256-salt20"), ks),
                     JWT_BAD_SIGNATURE);
    jwks_unref(ks);
}

static void wrong_key_or_tampered_token(void **state)
{
    (void)state;
    struct jwks *ks = usual();
    assert_int_equal(check_free(signed_by(rsa_other, "RS256", "r1", "RS256"), ks),
                     JWT_BAD_SIGNATURE);
    assert_int_equal(check_free(signed_by(rsa_other, "PS256", "r1", "PS256"), ks),
                     JWT_BAD_SIGNATURE);
    assert_int_equal(check_free(signed_by(ec_other, "ES256", "e1", "ES256"), ks),
                     JWT_BAD_SIGNATURE);
    assert_int_equal(check_free(signed_by(ed_other, "EdDSA", "d1", "EdDSA"), ks),
                     JWT_BAD_SIGNATURE);
    /* A signature of the RSA key labelled as the EC key's: the kid's key does not fit RS256. */
    assert_int_equal(check_free(signed_by(rsa, "RS256", "e1", "RS256"), ks), JWT_NO_KEY);

    /* The claims changed after signing (sub alice -> mallory), the signature kept. */
    static const char *const algs[] = {"RS256", "PS256", "ES256", "EdDSA"};
    static const char *const kids[] = {"r1", "r1", "e1", "d1"};
    EVP_PKEY *keys[] = {rsa, rsa, ec, ed};
    const char *evil = "{\"iss\":\"" ISS "\",\"aud\":\"hermes\",\"sub\":\"mallory\","
                       "\"exp\":1800000600}";
    for (size_t i = 0; i < 4; i++) {
        char *good = signed_by(keys[i], algs[i], kids[i], algs[i]);
        assert_int_equal(check(good, ks), JWT_OK);
        char *h = header(algs[i], kids[i]), *bad = token(h, evil, keys[i], algs[i]);
        char *dot1 = strchr(good, '.'), *dot2 = strrchr(good, '.');
        char *bdot1 = strchr(bad, '.'), *bdot2 = strrchr(bad, '.'), *mixed;
        assert_true(asprintf(&mixed, "%.*s%.*s%s", (int)(dot1 - good), good, (int)(bdot2 - bdot1),
                             bdot1, dot2) > 0);
        assert_int_equal(check(mixed, ks), JWT_BAD_SIGNATURE);
        free(mixed);
        /* One signature bit flipped. */
        size_t last = strlen(good) - 3;
        good[last] = good[last] == 'A' ? 'B' : 'A';
        assert_int_equal(check(good, ks), JWT_BAD_SIGNATURE);
        free(h);
        free(bad);
        free(good);
    }
    jwks_unref(ks);
}

/* tok with its signature decoded, cut or extended by delta bytes (zeros, or a leading zero with
 * lead) and encoded again: a well-formed token whose signature has the wrong length. */
static char *resized(const char *tok, int delta, bool lead)
{
    const char *dot = strrchr(tok, '.');
    unsigned char sig[1100] = {0};
    size_t n;
    assert_true(crypto_b64_decode(true, dot + 1, strlen(dot + 1), sig + 1, sizeof sig - 1, &n));
    char *s = lead ? b64(sig, n + 1) : b64(sig + 1, (size_t)((int)n + delta)), *out;
    assert_true(asprintf(&out, "%.*s%s", (int)(dot + 1 - tok), tok, s) > 0);
    free(s);
    return out;
}

static void signature_length_is_exact(void **state)
{
    (void)state;
    struct jwks *ks = usual();
    static const char *const algs[] = {"RS256", "PS256", "ES256", "EdDSA"};
    static const char *const kids[] = {"r1", "r1", "e1", "d1"};
    EVP_PKEY *keys[] = {rsa, rsa, ec, ed};
    for (size_t i = 0; i < 4; i++) {
        char *tok = signed_by(keys[i], algs[i], kids[i], algs[i]);
        char *same = resized(tok, 0, false);
        assert_int_equal(check(same, ks), JWT_OK); /* the helper itself changes nothing */
        for (int d = -3; d <= 3; d++) {
            if (d == 0)
                continue;
            char *other = resized(tok, d, false);
            assert_int_equal(check(other, ks), JWT_BAD_SIGNATURE);
            free(other);
        }
        /* With a leading zero byte: for RSA, as long as the modulus plus one. */
        char *lead = resized(tok, 1, true);
        assert_int_equal(check(lead, ks), JWT_BAD_SIGNATURE);
        free(lead);
        free(same);
        free(tok);
    }
    /* ES256 with libcrypto's DER form instead of the JWS r||s. */
    assert_int_equal(check_free(signed_by(ec, "ES256", "e1", "ES256-der"), ks), JWT_BAD_SIGNATURE);
    jwks_unref(ks);
}

static void refused_algs(void **state)
{
    (void)state;
    struct jwks *ks = usual();
    /* alg none, with no signature and with one. */
    static const char *const nones[] = {
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.",      /* {"alg":"none"} */
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.c2ln",  /* with a signature */
        "eyJhbGciOiJOb25lIn0.eyJzdWIiOiJhbGljZSJ9.",      /* {"alg":"None"} */
        "eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiJhbGljZSJ9.c2ln",   /* no alg */
        "eyJhbGciOjI1Nn0.eyJzdWIiOiJhbGljZSJ9.c2ln",      /* {"alg":256} */
        "eyJhbGciOiJyczI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln", /* {"alg":"rs256"} */
    };
    for (size_t i = 0; i < sizeof nones / sizeof *nones; i++)
        assert_int_equal(check(nones[i], ks), JWT_ALG_REFUSED);

    /* HS256 with the RSA key's public bytes as the HMAC secret, as an attacker who read the
     * JWKS would sign: the PEM, and the modulus. */
    BIO *mem = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_PUBKEY(mem, rsa), 1);
    char *pem;
    long pemlen = BIO_get_mem_data(mem, &pem);
    char *h = header("HS256", "r1"), *hb = b64(h, strlen(h)), *cb = b64(CLAIMS, strlen(CLAIMS));
    char *in, *tok;
    assert_true(asprintf(&in, "%s.%s", hb, cb) > 0);
    unsigned char mac[32];
    unsigned maclen = 0;
    HMAC(EVP_sha256(), pem, (int)pemlen, (const unsigned char *)in, strlen(in), mac, &maclen);
    char *m = b64(mac, maclen);
    assert_true(asprintf(&tok, "%s.%s", in, m) > 0);
    assert_int_equal(check(tok, ks), JWT_ALG_REFUSED);
    BIO_free(mem);
    free(m);
    free(tok);
    free(in);
    free(hb);
    free(cb);
    free(h);

    /* Real signatures of algs outside the allowlist (same key types, other digests). */
    static const char *const others[] = {"RS512", "RS384",  "PS512",   "ES384",  "ES512",
                                         "HS512", "ES256K", "Ed25519", "EdDSA ", ""};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        EVP_PKEY *k = others[i][0] == 'E' ? ec : rsa;
        const char *how = k == ec ? "ES256" : "RS256";
        assert_int_equal(check_free(signed_by(k, others[i], "r1", how), ks), JWT_ALG_REFUSED);
    }
    jwks_unref(ks);
}

static void refused_headers(void **state)
{
    (void)state;
    struct jwks *ks = usual();
    static const char *const extra[] = {
        "\"crit\":[\"exp\"]",
        "\"crit\":[]",
        "\"jku\":\"https://evil.example/jwks\"",
        "\"x5u\":\"https://evil.example/cert\"",
        "\"jwk\":{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}",
        "\"x5c\":[\"MIIB\"]",
        "\"kid\":\"\"",
        "\"kid\":17",
        "\"kid\":[\"r1\"]",
        "\"kid\":null",
        "\"kid\":\"r\\u00011\"",
        "\"kid\":\"r1\\n\"",
    };
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) {
        char *h;
        assert_true(asprintf(&h, "{\"alg\":\"EdDSA\",%s%s}", extra[i],
                             strstr(extra[i], "kid") ? "" : ",\"kid\":\"d1\"") > 0);
        char *tok = token(h, CLAIMS, ed, "EdDSA");
        assert_int_equal(check(tok, ks), JWT_HEADER_REFUSED);
        free(tok);
        free(h);
    }
    /* A kid of JWT_KID_MAX bytes is a kid; one more byte is refused. */
    char kid[JWT_KID_MAX + 2];
    memset(kid, 'k', sizeof kid);
    kid[JWT_KID_MAX] = '\0';
    assert_int_equal(check_free(signed_by(ed, "EdDSA", kid, "EdDSA"), ks), JWT_UNKNOWN_KID);
    kid[JWT_KID_MAX] = 'k';
    kid[JWT_KID_MAX + 1] = '\0';
    assert_int_equal(check_free(signed_by(ed, "EdDSA", kid, "EdDSA"), ks), JWT_HEADER_REFUSED);
    jwks_unref(ks);
}

static void kids(void **state)
{
    (void)state;
    struct jwks *ks = usual();
    static const char *const unknown[] = {
        "r2",     "R1",    "r1 ", "../../../etc/passwd", "r1/../r1", "https://evil.example/key",
        "%72%31", "d1\\\\"};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        assert_int_equal(check_free(signed_by(ed, "EdDSA", unknown[i], "EdDSA"), ks),
                         JWT_UNKNOWN_KID);
    /* A kid, and a set whose keys have none: the token's kid names nothing. */
    struct jwks *nokids = set_of(jwk(ed, NULL, ""), NULL);
    assert_int_equal(check_free(signed_by(ed, "EdDSA", "d1", "EdDSA"), nokids), JWT_UNKNOWN_KID);
    jwks_unref(nokids);
    /* Two keys with one kid (a provider's slip): the one that fits the alg is used. */
    struct jwks *twins = set_of(jwk(rsa, "k", ""), jwk(ed, "k", ""), NULL);
    assert_int_equal(check_free(signed_by(ed, "EdDSA", "k", "EdDSA"), twins), JWT_OK);
    assert_int_equal(check_free(signed_by(rsa, "RS256", "k", "RS256"), twins), JWT_OK);
    assert_int_equal(check_free(signed_by(ec, "ES256", "k", "ES256"), twins), JWT_NO_KEY);
    jwks_unref(twins);
    jwks_unref(ks);
}

static void no_kid(void **state)
{
    (void)state;
    /* One fitting key among others. */
    struct jwks *one = set_of(jwk(ec, "e1", ""), jwk(rsa, "r1", ""), NULL);
    assert_int_equal(check_free(signed_by(rsa, "RS256", NULL, "RS256"), one), JWT_OK);
    assert_int_equal(check_free(signed_by(ec, "ES256", NULL, "ES256"), one), JWT_OK);
    assert_int_equal(check_free(signed_by(rsa_other, "RS256", NULL, "RS256"), one),
                     JWT_BAD_SIGNATURE);
    assert_int_equal(check_free(signed_by(ed, "EdDSA", NULL, "EdDSA"), one), JWT_NO_KEY);
    jwks_unref(one);
    /* Two fitting keys: each is tried, in either order. */
    struct jwks *two = set_of(jwk(rsa_other, "a", ""), jwk(rsa, "b", ""), NULL);
    assert_int_equal(check_free(signed_by(rsa, "PS256", NULL, "PS256"), two), JWT_OK);
    assert_int_equal(check_free(signed_by(rsa_other, "RS256", NULL, "RS256"), two), JWT_OK);
    assert_int_equal(check_free(signed_by(rsa_small, "RS256", NULL, "RS256"), two),
                     JWT_BAD_SIGNATURE);
    jwks_unref(two);
    struct jwks *empty = set_of(NULL);
    assert_int_equal(jwks_count(empty), 0);
    assert_int_equal(check_free(signed_by(rsa, "RS256", NULL, "RS256"), empty), JWT_NO_KEY);
    assert_int_equal(check_free(signed_by(rsa, "RS256", "r1", "RS256"), empty), JWT_UNKNOWN_KID);
    jwks_unref(empty);
}

static void key_alg_must_match(void **state)
{
    (void)state;
    struct jwks *ks = set_of(jwk(rsa, "ps", ",\"alg\":\"PS256\""),
                             jwk(rsa, "rs", ",\"alg\":\"RS256\",\"use\":\"sig\""), NULL);
    assert_int_equal(jwks_count(ks), 2);
    assert_int_equal(check_free(signed_by(rsa, "PS256", "ps", "PS256"), ks), JWT_OK);
    assert_int_equal(check_free(signed_by(rsa, "RS256", "ps", "RS256"), ks), JWT_NO_KEY);
    assert_int_equal(check_free(signed_by(rsa, "RS256", "rs", "RS256"), ks), JWT_OK);
    assert_int_equal(check_free(signed_by(rsa, "PS256", "rs", "PS256"), ks), JWT_NO_KEY);
    /* Without a kid only the key whose alg fits is tried. */
    assert_int_equal(check_free(signed_by(rsa, "RS256", NULL, "RS256"), ks), JWT_OK);
    jwks_unref(ks);
    /* A key alg that contradicts its kty, or is outside the allowlist: skipped. */
    struct jwks *odd =
        set_of(jwk(rsa, "a", ",\"alg\":\"ES256\""), jwk(ec, "b", ",\"alg\":\"RS256\""),
               jwk(rsa, "c", ",\"alg\":\"RS512\""), jwk(ed, "d", ",\"alg\":\"none\""),
               jwk(rsa, "e", ",\"alg\":7"), jwk(ed, "f", ",\"alg\":\"EdDSA\""), NULL);
    assert_int_equal(jwks_count(odd), 1);
    assert_true(jwks_has_kid(odd, "f"));
    jwks_unref(odd);
}

/* How many keys jwks_parse keeps of {"keys":[k]} (k freed); -1 when it refuses the document. */
static int kept(char *k)
{
    char *doc, err[128];
    assert_true(asprintf(&doc, "{\"keys\":[%s]}", k) > 0);
    struct jwks *ks = jwks_parse(doc, strlen(doc), err, sizeof err);
    int n = ks != NULL ? (int)jwks_count(ks) : -1;
    jwks_unref(ks);
    free(doc);
    free(k);
    assert_int_equal(ERR_peek_error(), 0);
    return n;
}

/* pk's JWK with member `name`'s value replaced by `value` (a JSON text). */
static char *jwk_with(EVP_PKEY *pk, const char *name, const char *value)
{
    char *k = jwk(pk, "x", ""), *out, key[32];
    snprintf(key, sizeof key, "\"%s\":", name);
    char *at = strstr(k, key);
    assert_non_null(at);
    char *v = at + strlen(key), *end = v + 1;
    end = strchr(end, '"') + 1; /* the old value is a string */
    assert_true(asprintf(&out, "%.*s%s%s", (int)(v - k), k, value, end) > 0);
    free(k);
    return out;
}

static void unusable_keys_are_skipped(void **state)
{
    (void)state;
    assert_int_equal(kept(jwk(rsa, "a", "")), 1);
    assert_int_equal(kept(jwk(rsa, "a", ",\"use\":\"sig\",\"key_ops\":[\"verify\"]")), 1);
    assert_int_equal(kept(jwk(ed, "a", ",\"key_ops\":[\"sign\",\"verify\"]")), 1);
    assert_int_equal(kept(jwk(rsa, "a", ",\"use\":\"enc\"")), 0);
    assert_int_equal(kept(jwk(rsa, "a", ",\"use\":1")), 0);
    assert_int_equal(kept(jwk(ec, "a", ",\"key_ops\":[\"encrypt\"]")), 0);
    assert_int_equal(kept(jwk(ec, "a", ",\"key_ops\":\"verify\"")), 0);
    assert_int_equal(kept(jwk(rsa_small, "a", "")), 0); /* 1024 bits */
    assert_int_equal(kept(jwk(rsa, "\\u0007", "")), 0);
    assert_int_equal(kept(jwk(rsa, "", "")), 0);
    assert_int_equal(kept(strdup("{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"kid\":\"hs\"}")), 0);
    assert_int_equal(kept(strdup("{\"kty\":\"XYZ\",\"kid\":\"xyz\"}")), 0);
    assert_int_equal(kept(strdup("{\"kid\":\"none\"}")), 0);
    assert_int_equal(kept(strdup("\"not a key\"")), 0);
    assert_int_equal(kept(strdup("{\"kty\":\"OKP\",\"crv\":\"Ed448\",\"x\":\"AAAA\"}")), 0);
    /* Members of the wrong shape or size. */
    assert_int_equal(kept(jwk_with(ec, "crv", "\"P-384\"")), 0);
    assert_int_equal(kept(jwk_with(ed, "crv", "\"X25519\"")), 0);
    assert_int_equal(kept(jwk_with(ec, "x", "\"AAAA\"")), 0);
    assert_int_equal(kept(jwk_with(ec, "y", "7")), 0);
    /* 33 bytes: a coordinate with a leading zero byte is not P-256's fixed 32. */
    assert_int_equal(kept(jwk_with(ec, "x", "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"")),
                     0);
    /* A point that is not on the curve: x and y both 1. */
    assert_int_equal(kept(strdup("{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":"
                                 "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\","
                                 "\"y\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\"}")),
                     0);
    assert_int_equal(kept(jwk_with(ed, "x", "\"AAAA\"")), 0);
    assert_int_equal(kept(jwk_with(rsa, "e", "\"AQ\"")), 0);   /* e = 1 */
    assert_int_equal(kept(jwk_with(rsa, "e", "\"AQAA\"")), 0); /* e even */
    assert_int_equal(kept(jwk_with(rsa, "e", "\"\"")), 0);
    assert_int_equal(kept(jwk_with(rsa, "e", "\"AQAB\"")), 1);
    assert_int_equal(kept(jwk_with(rsa, "e", "\"AQAB=\"")), 0); /* padded */
    assert_int_equal(kept(jwk_with(rsa, "e", "\"AQ+B\"")), 0);  /* base64, not base64url */
    assert_int_equal(kept(jwk_with(rsa, "n", "\"AQAB\"")), 0);
}

static void key_set_documents(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "[]",
        "{}",
        "{\"keys\":{}}",
        "{\"keys\":null}",
        "not json",
        "{\"keys\":[]",
        "{\"keys\":[],\"keys\":[]}",                      /* duplicate member */
        "{\"keys\":[{\"kty\":\"OKP\",\"kty\":\"OKP\"}]}", /* duplicate member in a key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[80];
        memset(err, 'Z', sizeof err);
        assert_null(jwks_parse(bad[i], strlen(bad[i]), err, sizeof err));
        assert_non_null(memchr(err, '\0', sizeof err));
        assert_true(err[0] != '\0' && strchr(err, '\n') == NULL);
    }
    assert_null(jwks_parse("[]", 2, NULL, 0)); /* no err buffer: no crash */
    struct jwks *ks = jwks_parse("{\"keys\":[]}", 11, NULL, 0);
    assert_non_null(ks);
    assert_int_equal(jwks_count(ks), 0);
    jwks_unref(ks);
    /* Too long, even as white space around a valid set. */
    size_t len = JWKS_MAX_LEN + 1;
    char *doc = malloc(len);
    memset(doc, ' ', len);
    memcpy(doc, "{\"keys\":[]}", 11);
    char err[80];
    assert_null(jwks_parse(doc, len, err, sizeof err));
    assert_non_null(ks = jwks_parse(doc, len - 1, err, sizeof err));
    jwks_unref(ks);
    free(doc);
    /* Only JWKS_MAX_KEYS keys are kept. */
    char *ed_key = jwk(ed, NULL, ""), *many = strdup("{\"keys\":["), *tmp;
    for (int i = 0; i < JWKS_MAX_KEYS + 6; i++) {
        assert_true(asprintf(&tmp, "%s%s{\"kid\":\"k%d\",%s", many, i ? "," : "", i, ed_key + 1) >
                    0);
        free(many);
        many = tmp;
    }
    assert_true(asprintf(&tmp, "%s]}", many) > 0);
    ks = jwks_parse(tmp, strlen(tmp), err, sizeof err);
    assert_non_null(ks);
    assert_int_equal(jwks_count(ks), JWKS_MAX_KEYS);
    assert_true(jwks_has_kid(ks, "k63"));
    assert_false(jwks_has_kid(ks, "k64"));
    assert_false(jwks_has_kid(ks, NULL));
    jwks_unref(ks);
    free(tmp);
    free(many);
    free(ed_key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_alg_verifies),
        cmocka_unit_test(pss_and_pkcs1_are_not_interchangeable),
        cmocka_unit_test(wrong_key_or_tampered_token),
        cmocka_unit_test(signature_length_is_exact),
        cmocka_unit_test(refused_algs),
        cmocka_unit_test(refused_headers),
        cmocka_unit_test(kids),
        cmocka_unit_test(no_kid),
        cmocka_unit_test(key_alg_must_match),
        cmocka_unit_test(unusable_keys_are_skipped),
        cmocka_unit_test(key_set_documents),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
