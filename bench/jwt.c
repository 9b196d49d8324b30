/* bench/jwt.c — what verifying a JWT access token costs with the key set already parsed (the
 * cached-key case of an OpenID provider's tokens): per alg, microseconds per token for
 * jwt_parse + jwt_verify + jwt_check_claims + jwt_cleanup, and each part alone; the median of
 * ROUNDS rounds. Keys are made and tokens signed at start, as a provider would. Prints a
 * Markdown table. Build and run: make bench-jwt (bench/RESULTS.md, "JWT verification"). */
#include <math.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "jwt.h"

#define ROUNDS 9
#define NOW 1800000000
#define ISS "https://idp.example"
/* The claims of a typical provider's access token, a few hundred bytes. */
#define CLAIMS                                                                                     \
    "{\"iss\":\"" ISS "\",\"aud\":[\"hermes\",\"account\"],\"sub\":\"5b0a1f7e-3c1d-4f2b-9a8e-"     \
    "0d6c2e4f8a1b\",\"azp\":\"ci-runner\",\"client_id\":\"ci-runner\",\"scope\":\"openid "         \
    "hermes:read hermes:task gateway:github\",\"exp\":1800000600,\"iat\":1800000000,\"nbf\":"      \
    "1800000000,\"jti\":\"c6a1e2d4-7b3f-4e8a-9c1d-2f5e6a7b8c9d\"}"

static void die(const char *what)
{
    fprintf(stderr, "bench-jwt: %s\n", what);
    exit(1);
}

/* This thread's CPU time: on a shared machine, time spent preempted is not the token's. */
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void b64_append(char *out, const void *p, size_t n)
{
    crypto_b64_encode(true, p, n, out + strlen(out));
}

static void bn_member(char *out, EVP_PKEY *pk, const char *name, const char *param, int pad)
{
    BIGNUM *bn = NULL;
    unsigned char buf[512];
    if (EVP_PKEY_get_bn_param(pk, param, &bn) != 1)
        die("no key parameter");
    int n = pad > 0 ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    BN_free(bn);
    sprintf(out + strlen(out), ",\"%s\":\"", name);
    b64_append(out, buf, (size_t)n);
    strcat(out, "\"");
}

/* {"keys":[<pk as a JWK, kid "k">]} into out. */
static void jwks_of(EVP_PKEY *pk, char *out)
{
    strcpy(out, "{\"keys\":[{\"kid\":\"k\"");
    if (EVP_PKEY_is_a(pk, "RSA")) {
        strcat(out, ",\"kty\":\"RSA\"");
        bn_member(out, pk, "n", OSSL_PKEY_PARAM_RSA_N, 0);
        bn_member(out, pk, "e", OSSL_PKEY_PARAM_RSA_E, 0);
    } else if (EVP_PKEY_is_a(pk, "EC")) {
        strcat(out, ",\"kty\":\"EC\",\"crv\":\"P-256\"");
        bn_member(out, pk, "x", OSSL_PKEY_PARAM_EC_PUB_X, 32);
        bn_member(out, pk, "y", OSSL_PKEY_PARAM_EC_PUB_Y, 32);
    } else {
        unsigned char raw[32];
        size_t len = sizeof raw;
        if (EVP_PKEY_get_raw_public_key(pk, raw, &len) != 1)
            die("no raw key");
        strcat(out, ",\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"");
        b64_append(out, raw, len);
        strcat(out, "\"");
    }
    strcat(out, "}]}");
}

/* A token of alg signed by pk into out. */
static void sign_token(EVP_PKEY *pk, const char *alg, char *out)
{
    char header[64];
    snprintf(header, sizeof header, "{\"alg\":\"%s\",\"kid\":\"k\",\"typ\":\"at+jwt\"}", alg);
    out[0] = '\0';
    b64_append(out, header, strlen(header));
    strcat(out, ".");
    b64_append(out, CLAIMS, strlen(CLAIMS));
    bool ed = strcmp(alg, "EdDSA") == 0, ps = strcmp(alg, "PS256") == 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pc = NULL;
    unsigned char sig[600];
    size_t n = sizeof sig;
    if (EVP_DigestSignInit(ctx, &pc, ed ? NULL : EVP_sha256(), NULL, pk) != 1 ||
        (ps && (EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) != 1 ||
                EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST) != 1)) ||
        EVP_DigestSign(ctx, sig, &n, (unsigned char *)out, strlen(out)) != 1)
        die("cannot sign");
    EVP_MD_CTX_free(ctx);
    if (strcmp(alg, "ES256") == 0) { /* DER to the JWS form r||s */
        const unsigned char *p = sig;
        ECDSA_SIG *s = d2i_ECDSA_SIG(NULL, &p, (long)n);
        BN_bn2binpad(ECDSA_SIG_get0_r(s), sig, 32);
        BN_bn2binpad(ECDSA_SIG_get0_s(s), sig + 32, 32);
        ECDSA_SIG_free(s);
        n = 64;
    }
    strcat(out, ".");
    b64_append(out, sig, n);
}

enum part { FULL, PARSE, VERIFY, CLAIMS_ONLY };

/* One round: iters operations of part; microseconds per operation. */
static double round_us(enum part part, const char *tok, const struct jwks *ks, int iters)
{
    const char *aud[] = {"hermes"};
    struct jwt_expect e = {ISS, aud, 1, NOW, 60};
    size_t len = strlen(tok);
    struct jwt held;
    if (jwt_parse(tok, len, &held) != JWT_OK)
        die("token does not parse");
    int bad = 0;
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
        struct jwt t;
        switch (part) {
        case FULL:
            bad |= jwt_parse(tok, len, &t) != JWT_OK || jwt_verify(&t, ks) != JWT_OK ||
                   jwt_check_claims(&t, &e) != JWT_OK;
            jwt_cleanup(&t);
            break;
        case PARSE:
            bad |= jwt_parse(tok, len, &t) != JWT_OK;
            jwt_cleanup(&t);
            break;
        case VERIFY:
            bad |= jwt_verify(&held, ks) != JWT_OK;
            break;
        case CLAIMS_ONLY:
            bad |= jwt_check_claims(&held, &e) != JWT_OK;
            break;
        }
    }
    double us = (now_us() - t0) / iters;
    jwt_cleanup(&held);
    if (bad)
        die("a token did not verify");
    return us;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median round, and in *best the fastest (the machine is shared: the gap is its noise). */
static double median_us(enum part part, const char *tok, const struct jwks *ks, int iters,
                        double *best)
{
    double r[ROUNDS];
    round_us(part, tok, ks, iters / 10 + 1); /* warm the caches */
    for (int i = 0; i < ROUNDS; i++)
        r[i] = round_us(part, tok, ks, iters);
    qsort(r, ROUNDS, sizeof r[0], cmp_double);
    if (best != NULL)
        *best = r[0];
    return r[ROUNDS / 2];
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0; /* bench-jwt 0.1: a quick run */
    static const struct {
        const char *alg, *type;
        int iters;
    } algs[] = {{"RS256", "RSA", 4000},
                {"PS256", "RSA", 4000},
                {"ES256", "EC", 2000},
                {"EdDSA", "ED25519", 2000}};
    EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    if (rsa == NULL || ec == NULL || ed == NULL)
        die("cannot make keys");
    double load[3] = {0};
    getloadavg(load, 3);
    printf("%s, RSA 2048, P-256, Ed25519; the key set parsed once (the cached key); CPU time "
           "of the thread, median of %d rounds; load average %.2f at the start\n\n",
           OpenSSL_version(OPENSSL_VERSION), ROUNDS, load[0]);
    printf(
        "| alg | parse + verify + claims, us/token | best round | verify alone | parse alone | "
        "claims alone | token bytes | under 20 us |\n|---|---:|---:|---:|---:|---:|---:|:---:|\n");
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        EVP_PKEY *pk = algs[i].type[0] == 'R'                             ? rsa
                       : algs[i].type[0] == 'E' && algs[i].type[1] == 'C' ? ec
                                                                          : ed;
        static char doc[4096], tok[4096];
        char err[128];
        jwks_of(pk, doc);
        struct jwks *ks = jwks_parse(doc, strlen(doc), err, sizeof err);
        if (ks == NULL || jwks_count(ks) != 1)
            die("key set refused");
        sign_token(pk, algs[i].alg, tok);
        int iters = (int)(algs[i].iters * scale) + 1;
        double best;
        double full = median_us(FULL, tok, ks, iters, &best);
        double verify = median_us(VERIFY, tok, ks, iters, NULL);
        double parse = median_us(PARSE, tok, ks, iters, NULL);
        double claims = median_us(CLAIMS_ONLY, tok, ks, iters * 10, NULL);
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %.2f | %zu | %s |\n", algs[i].alg, full, best,
               verify, parse, claims, strlen(tok), round(full * 10) / 10 < 20.0 ? "yes" : "**no**");
        jwks_unref(ks);
    }
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(ed);
    return 0;
}
