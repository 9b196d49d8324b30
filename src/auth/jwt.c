/* jwt.c — JWS compact tokens and JSON Web Key Sets verified with libcrypto (jwt.h). */
#include "jwt.h"

#include <math.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonparse.h"
#include "mem.h"

#define RSA_MIN_BITS 2048
#define RSA_MAX_BYTES 1024 /* 8192 bits: a bigger modulus costs more than a token is worth */
#define RSA_E_MAX_BYTES 8
#define CURVE_BYTES 32 /* P-256 coordinates and Ed25519 public keys */
#define SIG64 64       /* ES256 r||s and Ed25519 signatures */
/* Times are clamped into +-2^62 s so that adding a skew (< 2^32) can never overflow. */
#define TIME_CAP ((long long)1 << 62)

enum jwk_kty { JWK_RSA, JWK_EC, JWK_OKP };

/* A key's verification contexts, made once when the set is parsed: making one per token costs
 * libcrypto's lookups a fifth of an RSA verification. A context must not be used by two threads
 * at once, hence the lock (uncontended on the event loop). */
struct jwk_verifier {
    pthread_mutex_t lock;
    EVP_PKEY_CTX *ctx[2]; /* RSA: RS256, PS256; EC: ES256 */
};

struct jwk {
    char *kid; /* NULL when the key has none */
    enum jwk_kty kty;
    int alg; /* the key's own enum jwt_alg, or -1 when it names none */
    EVP_PKEY *pkey;
    struct jwk_verifier *ver; /* NULL for Ed25519, verified in one shot */
};

struct jwks {
    atomic_uint refs;
    size_t n;
    EVP_MD *sha256_owned; /* fetched once per set, so a verification does not look it up */
    const EVP_MD *sha256;
    struct jwk v[JWKS_MAX_KEYS];
};

static const struct {
    const char *name;
    enum jwt_alg alg;
    enum jwk_kty kty;
} jwt_algs[] = {
    {"RS256", JWT_ALG_RS256, JWK_RSA},
    {"PS256", JWT_ALG_PS256, JWK_RSA},
    {"ES256", JWT_ALG_ES256, JWK_EC},
    {"EdDSA", JWT_ALG_EDDSA, JWK_OKP},
};

const char *jwt_status_text(enum jwt_status s)
{
    switch (s) {
    case JWT_OK:
        return "valid";
    case JWT_MALFORMED:
        return "malformed token";
    case JWT_ALG_REFUSED:
        return "algorithm refused";
    case JWT_HEADER_REFUSED:
        return "header refused";
    case JWT_UNKNOWN_KID:
        return "unknown key id";
    case JWT_NO_KEY:
        return "no key fits the token";
    case JWT_BAD_SIGNATURE:
        return "bad signature";
    case JWT_EXPIRED:
        return "expired";
    case JWT_NOT_YET_VALID:
        return "not yet valid";
    case JWT_ISSUED_IN_FUTURE:
        return "issued in the future";
    case JWT_BAD_ISSUER:
        return "wrong issuer";
    case JWT_BAD_AUDIENCE:
        return "wrong audience";
    }
    return "unknown status";
}

/* ---- base64url ---------------------------------------------------------------------------- */

/* Each base64url character's value plus one; 0 for any other byte. */
static const unsigned char b64url_table[256] = {
    ['A'] = 1,  ['B'] = 2,  ['C'] = 3,  ['D'] = 4,  ['E'] = 5,  ['F'] = 6,  ['G'] = 7,  ['H'] = 8,
    ['I'] = 9,  ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16,
    ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
    ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32,
    ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40,
    ['o'] = 41, ['p'] = 42, ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
    ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
    ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['-'] = 63, ['_'] = 64,
};

static int b64url_value(unsigned char c)
{
    return (int)b64url_table[c] - 1;
}

/* Strict base64url (RFC 7515 section 2): the URL-safe alphabet only, no padding or white space,
 * no length that leaves a lone character, and the unused low bits of the last character zero,
 * so that each byte string has exactly one accepted encoding. outsz is checked before writing. */
static bool b64url_decode(const char *in, size_t n, unsigned char *out, size_t outsz,
                          size_t *outlen)
{
    const unsigned char *u = (const unsigned char *)in;
    size_t rest = n % 4, o = 0, i = 0;
    if (rest == 1 || n / 4 * 3 + (rest ? rest - 1 : 0) > outsz)
        return false;
    for (; i + 4 <= n; i += 4) { /* four characters, three bytes */
        unsigned a = b64url_table[u[i]], b = b64url_table[u[i + 1]];
        unsigned c = b64url_table[u[i + 2]], d = b64url_table[u[i + 3]];
        if (!a || !b || !c || !d)
            return false;
        unsigned long v = (a - 1ul) << 18 | (b - 1ul) << 12 | (c - 1ul) << 6 | (d - 1ul);
        out[o++] = (unsigned char)(v >> 16);
        out[o++] = (unsigned char)(v >> 8);
        out[o++] = (unsigned char)v;
    }
    unsigned long v = 0;
    for (; i < n; i++) {
        unsigned a = b64url_table[u[i]];
        if (!a)
            return false;
        v = v << 6 | (a - 1ul);
    }
    if (rest == 2) { /* 12 bits: one byte and 4 unused bits */
        if (v & 0xf)
            return false;
        out[o++] = (unsigned char)(v >> 4);
    } else if (rest == 3) { /* 18 bits: two bytes and 2 unused bits */
        if (v & 0x3)
            return false;
        out[o++] = (unsigned char)(v >> 10);
        out[o++] = (unsigned char)(v >> 2);
    }
    *outlen = o;
    return true;
}

static size_t b64url_max(size_t n)
{
    return n / 4 * 3 + 2;
}

/* A part of a token decoded and parsed as a JSON object, or NULL. */
static json_t *b64url_json(const char *in, size_t n)
{
    unsigned char *buf = xmalloc(b64url_max(n) + 1);
    size_t len;
    json_t *j = NULL;
    if (b64url_decode(in, n, buf, b64url_max(n), &len))
        j = jsonparse((const char *)buf, len);
    free(buf);
    if (j != NULL && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* The string member name of o decoded into out (outsz bytes at most). */
static bool b64url_member(json_t *o, const char *name, unsigned char *out, size_t outsz,
                          size_t *outlen)
{
    json_t *s = json_object_get(o, name);
    return json_is_string(s) &&
           b64url_decode(json_string_value(s), json_string_length(s), out, outsz, outlen);
}

/* ---- the token's header ------------------------------------------------------------------- */

static bool alg_from_name(const char *name, enum jwt_alg *alg)
{
    for (size_t i = 0; i < sizeof jwt_algs / sizeof jwt_algs[0]; i++)
        if (strcmp(name, jwt_algs[i].name) == 0) {
            *alg = jwt_algs[i].alg;
            return true;
        }
    return false;
}

static enum jwk_kty alg_kty(enum jwt_alg alg)
{
    for (size_t i = 0; i < sizeof jwt_algs / sizeof jwt_algs[0]; i++)
        if (jwt_algs[i].alg == alg)
            return jwt_algs[i].kty;
    return JWK_RSA; /* not reached: alg comes from the table */
}

/* A kid is an opaque label: a non-empty string of bounded length without control characters
 * (it reaches logs). */
static bool kid_ok(json_t *k)
{
    if (!json_is_string(k))
        return false;
    const unsigned char *s = (const unsigned char *)json_string_value(k);
    size_t n = json_string_length(k);
    if (n == 0 || n > JWT_KID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static enum jwt_status header_check(json_t *h, enum jwt_alg *alg, const char **kid)
{
    /* Headers that would let a token name its own key or demand semantics we do not have. */
    static const char *const refused[] = {"crit", "jku", "x5u", "jwk", "x5c"};
    json_t *a = json_object_get(h, "alg");
    if (!json_is_string(a) || !alg_from_name(json_string_value(a), alg))
        return JWT_ALG_REFUSED;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (json_object_get(h, refused[i]) != NULL)
            return JWT_HEADER_REFUSED;
    json_t *k = json_object_get(h, "kid");
    if (k != NULL && !kid_ok(k))
        return JWT_HEADER_REFUSED;
    *kid = k != NULL ? json_string_value(k) : NULL;
    return JWT_OK;
}

/* ---- tokens ------------------------------------------------------------------------------- */

struct jwt_parts {
    const char *h, *p, *s;
    size_t hlen, plen, slen;
};

/* Three parts separated by two dots, the first two non-empty; the alphabet is checked when
 * each part is decoded. */
static bool jwt_split(const char *token, size_t len, struct jwt_parts *p)
{
    if (token == NULL || len == 0 || len > JWT_MAX_LEN)
        return false;
    const char *d1 = memchr(token, '.', len);
    if (d1 == NULL)
        return false;
    const char *end = token + len;
    const char *d2 = memchr(d1 + 1, '.', (size_t)(end - d1 - 1));
    if (d2 == NULL || memchr(d2 + 1, '.', (size_t)(end - d2 - 1)) != NULL)
        return false;
    p->h = token;
    p->hlen = (size_t)(d1 - token);
    p->p = d1 + 1;
    p->plen = (size_t)(d2 - d1 - 1);
    p->s = d2 + 1;
    p->slen = (size_t)(end - d2 - 1);
    return p->hlen > 0 && p->plen > 0;
}

bool jwt_looks_like(const char *token, size_t len)
{
    struct jwt_parts p;
    if (!jwt_split(token, len, &p) || p.slen == 0)
        return false;
    for (size_t i = 0; i < p.plen; i++)
        if (b64url_value((unsigned char)p.p[i]) < 0)
            return false;
    for (size_t i = 0; i < p.slen; i++)
        if (b64url_value((unsigned char)p.s[i]) < 0)
            return false;
    json_t *h = b64url_json(p.h, p.hlen);
    json_decref(h);
    return h != NULL;
}

enum jwt_status jwt_parse(const char *token, size_t len, struct jwt *t)
{
    struct jwt_parts p;
    memset(t, 0, sizeof *t);
    if (!jwt_split(token, len, &p))
        return JWT_MALFORMED;
    json_t *header = b64url_json(p.h, p.hlen);
    if (header == NULL)
        return JWT_MALFORMED;
    enum jwt_alg alg;
    const char *kid;
    enum jwt_status st = header_check(header, &alg, &kid);
    if (st != JWT_OK) {
        json_decref(header);
        return st;
    }
    /* After the header, so that an unsigned token (alg none, empty signature) is named so. */
    json_t *claims = p.slen > 0 ? b64url_json(p.p, p.plen) : NULL;
    unsigned char *sig = xmalloc(b64url_max(p.slen) + 1);
    size_t siglen = 0;
    if (claims == NULL || !b64url_decode(p.s, p.slen, sig, b64url_max(p.slen), &siglen)) {
        json_decref(header);
        json_decref(claims);
        free(sig);
        return JWT_MALFORMED;
    }
    t->header = header;
    t->claims = claims;
    t->alg = alg;
    t->kid = kid;
    t->signing_len = p.hlen + 1 + p.plen;
    t->signing_input = xstrndup(token, t->signing_len);
    t->sig = sig;
    t->sig_len = siglen;
    return JWT_OK;
}

void jwt_cleanup(struct jwt *t)
{
    if (t == NULL)
        return;
    json_decref(t->header);
    json_decref(t->claims);
    free(t->signing_input);
    free(t->sig);
    memset(t, 0, sizeof *t);
}

/* ---- keys --------------------------------------------------------------------------------- */

static bool rsa_padding(EVP_PKEY_CTX *pc, enum jwt_alg alg, const EVP_MD *md)
{
    if (alg == JWT_ALG_RS256)
        return EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PADDING) == 1;
    /* PS256 (RFC 7518 section 3.5): MGF1 with SHA-256, a salt exactly as long as the digest. */
    return EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) == 1 &&
           EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST) == 1 &&
           EVP_PKEY_CTX_set_rsa_mgf1_md(pc, md) == 1;
}

/* A context verifying alg's signatures over a SHA-256 digest with pk. */
static EVP_PKEY_CTX *verifier_for(EVP_PKEY *pk, enum jwt_alg alg, const EVP_MD *md)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
    if (c == NULL || EVP_PKEY_verify_init(c) != 1 ||
        (alg != JWT_ALG_ES256 && !rsa_padding(c, alg, md)) ||
        EVP_PKEY_CTX_set_signature_md(c, md) != 1) {
        EVP_PKEY_CTX_free(c);
        return NULL;
    }
    return c;
}

static void jwk_free(struct jwk *k)
{
    free(k->kid);
    EVP_PKEY_free(k->pkey);
    if (k->ver != NULL) {
        EVP_PKEY_CTX_free(k->ver->ctx[0]);
        EVP_PKEY_CTX_free(k->ver->ctx[1]);
        pthread_mutex_destroy(&k->ver->lock);
        free(k->ver);
    }
    memset(k, 0, sizeof *k);
}

/* The verification contexts of k's kind; false if libcrypto cannot make them. */
static bool jwk_prepare(struct jwk *k, const EVP_MD *md)
{
    if (k->kty == JWK_OKP)
        return true;
    k->ver = xcalloc(1, sizeof *k->ver);
    pthread_mutex_init(&k->ver->lock, NULL);
    bool rsa = k->kty == JWK_RSA;
    k->ver->ctx[0] = verifier_for(k->pkey, rsa ? JWT_ALG_RS256 : JWT_ALG_ES256, md);
    k->ver->ctx[1] = rsa ? verifier_for(k->pkey, JWT_ALG_PS256, md) : NULL;
    return k->ver->ctx[0] != NULL && (!rsa || k->ver->ctx[1] != NULL);
}

static EVP_PKEY *pkey_fromdata(const char *type, OSSL_PARAM *params)
{
    EVP_PKEY *pk = NULL;
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (c == NULL || EVP_PKEY_fromdata_init(c) != 1 ||
        EVP_PKEY_fromdata(c, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pk = NULL;
    EVP_PKEY_CTX_free(c);
    return pk;
}

/* Bits of a big-endian unsigned number, leading zero bytes allowed. */
static size_t be_bits(const unsigned char *p, size_t n)
{
    while (n > 0 && *p == 0) {
        p++;
        n--;
    }
    if (n == 0)
        return 0;
    size_t bits = (n - 1) * 8;
    for (unsigned c = *p; c != 0; c >>= 1)
        bits++;
    return bits;
}

static EVP_PKEY *jwk_rsa(json_t *v)
{
    unsigned char n[RSA_MAX_BYTES + 1], e[RSA_E_MAX_BYTES]; /* + a leading zero byte */
    size_t nlen, elen;
    if (!b64url_member(v, "n", n, sizeof n, &nlen) || !b64url_member(v, "e", e, sizeof e, &elen))
        return NULL;
    size_t nbits = be_bits(n, nlen), ebits = be_bits(e, elen);
    if (nbits < RSA_MIN_BITS || nbits > RSA_MAX_BYTES * 8 || ebits < 2 || !(e[elen - 1] & 1))
        return NULL;
    EVP_PKEY *pk = NULL;
    BIGNUM *bn = BN_bin2bn(n, (int)nlen, NULL), *be = BN_bin2bn(e, (int)elen, NULL);
    OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    if (bn != NULL && be != NULL && b != NULL &&
        OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, bn) == 1 &&
        OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, be) == 1 &&
        (params = OSSL_PARAM_BLD_to_param(b)) != NULL)
        pk = pkey_fromdata("RSA", params);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(b);
    BN_free(bn);
    BN_free(be);
    return pk;
}

static bool crv_is(json_t *v, const char *crv)
{
    json_t *c = json_object_get(v, "crv");
    return json_is_string(c) && strcmp(json_string_value(c), crv) == 0;
}

/* P-256 x and y of 32 bytes each, as the uncompressed point 04||x||y. */
static EVP_PKEY *jwk_ec(json_t *v)
{
    unsigned char pub[1 + 2 * CURVE_BYTES];
    size_t xl, yl;
    if (!crv_is(v, "P-256") || !b64url_member(v, "x", pub + 1, CURVE_BYTES, &xl) ||
        !b64url_member(v, "y", pub + 1 + CURVE_BYTES, CURVE_BYTES, &yl) || xl != CURVE_BYTES ||
        yl != CURVE_BYTES)
        return NULL;
    pub[0] = 0x04; /* POINT_CONVERSION_UNCOMPRESSED */
    char group[] = "prime256v1";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub),
        OSSL_PARAM_construct_end(),
    };
    return pkey_fromdata("EC", params); /* libcrypto refuses a point off the curve */
}

static EVP_PKEY *jwk_okp(json_t *v)
{
    unsigned char x[CURVE_BYTES];
    size_t xl;
    if (!crv_is(v, "Ed25519") || !b64url_member(v, "x", x, sizeof x, &xl) || xl != CURVE_BYTES)
        return NULL;
    return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, sizeof x);
}

/* A key meant for signatures: "use" absent or "sig", "key_ops" absent or holding "verify". */
static bool jwk_for_verify(json_t *v)
{
    json_t *use = json_object_get(v, "use");
    if (use != NULL && !(json_is_string(use) && strcmp(json_string_value(use), "sig") == 0))
        return false;
    json_t *ops = json_object_get(v, "key_ops");
    if (ops == NULL)
        return true;
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) if (json_is_string(op) &&
                                       strcmp(json_string_value(op), "verify") == 0) return true;
    return false;
}

/* One member of "keys" into k; false (nothing held) for a key we cannot use. */
static bool jwk_load(json_t *v, struct jwk *k, const EVP_MD *md)
{
    if (!json_is_object(v) || !jwk_for_verify(v))
        return false;
    json_t *kty = json_object_get(v, "kty"), *a = json_object_get(v, "alg");
    json_t *kid = json_object_get(v, "kid");
    enum jwt_alg alg = JWT_ALG_RS256;
    if (!json_is_string(kty) ||
        (a != NULL && !(json_is_string(a) && alg_from_name(json_string_value(a), &alg))))
        return false;
    if (kid != NULL && !kid_ok(kid))
        return false;
    const char *t = json_string_value(kty);
    if (strcmp(t, "RSA") == 0) {
        k->kty = JWK_RSA;
        k->pkey = jwk_rsa(v);
    } else if (strcmp(t, "EC") == 0) {
        k->kty = JWK_EC;
        k->pkey = jwk_ec(v);
    } else if (strcmp(t, "OKP") == 0) {
        k->kty = JWK_OKP;
        k->pkey = jwk_okp(v);
    } else {
        return false;
    }
    if (k->pkey != NULL && a != NULL && alg_kty(alg) != k->kty) {
        EVP_PKEY_free(k->pkey);
        k->pkey = NULL;
    }
    if (k->pkey == NULL)
        return false;
    k->alg = a != NULL ? (int)alg : -1;
    k->kid = kid != NULL ? xstrdup(json_string_value(kid)) : NULL;
    if (!jwk_prepare(k, md)) {
        jwk_free(k);
        return false;
    }
    return true;
}

static void say(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

struct jwks *jwks_parse(const char *json, size_t len, char *err, size_t errlen)
{
    if (json == NULL || len > JWKS_MAX_LEN) {
        say(err, errlen, "key set over %d bytes", JWKS_MAX_LEN);
        return NULL;
    }
    json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *keys = json_object_get(doc, "keys"); /* NULL-safe, and NULL for a non-object */
    if (!json_is_array(keys)) {
        say(err, errlen, doc == NULL ? "key set is not JSON" : "key set has no \"keys\" array");
        json_decref(doc);
        return NULL;
    }
    struct jwks *ks = xcalloc(1, sizeof *ks);
    atomic_init(&ks->refs, 1);
    ks->sha256_owned = EVP_MD_fetch(NULL, "SHA256", NULL);
    ks->sha256 = ks->sha256_owned != NULL ? ks->sha256_owned : EVP_sha256();
    size_t i;
    json_t *v;
    json_array_foreach(keys, i, v)
    {
        if (ks->n == JWKS_MAX_KEYS)
            break;
        if (jwk_load(v, &ks->v[ks->n], ks->sha256))
            ks->n++;
    }
    json_decref(doc);
    ERR_clear_error(); /* skipped keys leave libcrypto's reasons behind */
    return ks;
}

size_t jwks_count(const struct jwks *k)
{
    return k != NULL ? k->n : 0;
}

bool jwks_has_kid(const struct jwks *k, const char *kid)
{
    for (size_t i = 0; k != NULL && kid != NULL && i < k->n; i++)
        if (k->v[i].kid != NULL && strcmp(k->v[i].kid, kid) == 0)
            return true;
    return false;
}

struct jwks *jwks_ref(struct jwks *k)
{
    atomic_fetch_add(&k->refs, 1);
    return k;
}

void jwks_unref(struct jwks *k)
{
    if (k == NULL || atomic_fetch_sub(&k->refs, 1) != 1)
        return;
    for (size_t i = 0; i < k->n; i++)
        jwk_free(&k->v[i]);
    EVP_MD_free(k->sha256_owned);
    free(k);
}

/* ---- signatures --------------------------------------------------------------------------- */

/* A JWS ES256 signature is r||s of 32 bytes each; libcrypto wants a DER ECDSA-Sig-Value.
 * Returns the DER length written to der (72 bytes at most), or 0. */
static size_t es256_der(const unsigned char *rs, unsigned char der[80])
{
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(rs, CURVE_BYTES, NULL),
           *s = BN_bin2bn(rs + CURVE_BYTES, CURVE_BYTES, NULL);
    size_t n = 0;
    if (sig != NULL && r != NULL && s != NULL && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL; /* owned by sig now */
        if (i2d_ECDSA_SIG(sig, NULL) <= 80) {
            unsigned char *p = der;
            int len = i2d_ECDSA_SIG(sig, &p);
            n = len > 0 ? (size_t)len : 0;
        }
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return n;
}

static bool verify_with(const struct jwks *ks, const struct jwk *k, const struct jwt *t)
{
    const unsigned char *sig = t->sig;
    size_t siglen = t->sig_len;
    unsigned char der[80];
    switch (t->alg) {
    case JWT_ALG_RS256:
    case JWT_ALG_PS256:
        if (siglen != (size_t)EVP_PKEY_get_size(k->pkey)) /* no short or padded forms */
            return false;
        break;
    case JWT_ALG_ES256:
        if (siglen != SIG64 || (siglen = es256_der(t->sig, der)) == 0)
            return false;
        sig = der;
        break;
    case JWT_ALG_EDDSA:
        if (siglen != SIG64)
            return false;
        break;
    }
    bool ok;
    if (t->alg == JWT_ALG_EDDSA) { /* Ed25519 hashes the message itself, in one shot */
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        ok = ctx != NULL && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
             EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)t->signing_input,
                              t->signing_len) == 1;
        EVP_MD_CTX_free(ctx);
    } else {
        unsigned char dg[EVP_MAX_MD_SIZE];
        unsigned dglen = 0;
        ok = EVP_Digest(t->signing_input, t->signing_len, dg, &dglen, ks->sha256, NULL) == 1;
        if (ok) {
            pthread_mutex_lock(&k->ver->lock);
            ok = EVP_PKEY_verify(k->ver->ctx[t->alg == JWT_ALG_PS256], sig, siglen, dg, dglen) == 1;
            pthread_mutex_unlock(&k->ver->lock);
        }
    }
    if (!ok)
        ERR_clear_error(); /* a failed verification must not leave reasons for the next caller */
    return ok;
}

static bool key_fits(const struct jwk *k, enum jwt_alg alg)
{
    return k->kty == alg_kty(alg) && (k->alg < 0 || k->alg == (int)alg);
}

enum jwt_status jwt_verify(const struct jwt *t, const struct jwks *keys)
{
    if (t == NULL || t->sig == NULL || keys == NULL)
        return JWT_NO_KEY;
    bool named = false;
    unsigned tried = 0;
    for (size_t i = 0; i < keys->n; i++) {
        const struct jwk *k = &keys->v[i];
        if (t->kid != NULL) {
            if (k->kid == NULL || strcmp(k->kid, t->kid) != 0)
                continue;
            named = true;
        }
        if (!key_fits(k, t->alg))
            continue;
        /* A token without a kid is tried against a few keys, not every key of a large set:
         * each try is a signature check on the loop, paid by whoever sends such tokens. */
        if (t->kid == NULL && tried == JWT_KIDLESS_TRIES)
            break;
        tried++;
        if (verify_with(keys, k, t))
            return JWT_OK;
    }
    if (t->kid != NULL && !named)
        return JWT_UNKNOWN_KID;
    return tried ? JWT_BAD_SIGNATURE : JWT_NO_KEY;
}

/* ---- claims ------------------------------------------------------------------------------- */

static long long clamp_time(long long v)
{
    return v > TIME_CAP ? TIME_CAP : v < -TIME_CAP ? -TIME_CAP : v;
}

/* A NumericDate as whole seconds, rounded up (a fraction of a second past exp is past it). */
static bool claim_time(json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = clamp_time((long long)json_integer_value(v));
        return true;
    }
    if (!json_is_real(v))
        return false;
    double d = ceil(json_real_value(v));
    *out = d >= (double)TIME_CAP ? TIME_CAP : d <= -(double)TIME_CAP ? -TIME_CAP : (long long)d;
    return true;
}

static bool audience_ok(json_t *aud, const struct jwt_expect *e)
{
    if (json_is_string(aud)) {
        for (size_t i = 0; i < e->naudiences; i++)
            if (e->audiences[i] != NULL && strcmp(json_string_value(aud), e->audiences[i]) == 0)
                return true;
        return false;
    }
    if (!json_is_array(aud))
        return false;
    size_t i;
    json_t *a;
    bool named = false;
    json_array_foreach(aud, i, a)
    {
        if (!json_is_string(a)) /* an array of strings, or nothing we trust */
            return false;
        named = named || audience_ok(a, e);
    }
    return named;
}

enum jwt_status jwt_check_claims(const struct jwt *t, const struct jwt_expect *e)
{
    json_t *c = t->claims, *iss = json_object_get(c, "iss");
    if (e->issuer == NULL || !json_is_string(iss) || strcmp(json_string_value(iss), e->issuer))
        return JWT_BAD_ISSUER;
    if (!audience_ok(json_object_get(c, "aud"), e))
        return JWT_BAD_AUDIENCE;
    long long now = clamp_time((long long)e->now), skew = e->skew_s, v;
    if (!claim_time(json_object_get(c, "exp"), &v) || now >= v + skew)
        return JWT_EXPIRED;
    json_t *nbf = json_object_get(c, "nbf"), *iat = json_object_get(c, "iat");
    if (nbf != NULL && (!claim_time(nbf, &v) || v > now + skew))
        return JWT_NOT_YET_VALID;
    if (iat != NULL && (!claim_time(iat, &v) || v > now + skew))
        return JWT_ISSUED_IN_FUTURE;
    return JWT_OK;
}
