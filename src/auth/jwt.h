/* jwt.h — JWT access tokens (RFC 7519, RFC 9068) signed as JWS compact serialization (RFC
 * 7515) and the JSON Web Key Sets (RFC 7517) that verify them, with libcrypto. Pure: no I/O,
 * no clock of its own (the caller passes now); fuzzed (tests/fuzz/fuzz_jwt.c, fuzz_jwks.c).
 *
 * Only what an access token from an OpenID provider needs is accepted: alg RS256, PS256,
 * ES256 or EdDSA (Ed25519), from our allowlist, whatever the key or the token claims. Refused:
 * alg none, HS* (a public key used as an HMAC secret), unknown algs, a crit header, and the
 * jku, x5u, jwk and x5c headers (a token must not name its own key); a kid is matched as an
 * opaque string against the set's kids, never used as a path or URL. */
#ifndef HM_JWT_H
#define HM_JWT_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define JWT_MAX_LEN 16384   /* a compact token, bytes: longer is refused before decoding */
#define JWKS_MAX_LEN 262144 /* a key set document, bytes */
#define JWKS_MAX_KEYS 64    /* keys kept from one set; the rest are ignored */
#define JWT_KID_MAX 256     /* a kid, bytes */
#define JWT_KIDLESS_TRIES 3 /* keys a token without a kid is tried against, at most */

enum jwt_alg { JWT_ALG_RS256, JWT_ALG_PS256, JWT_ALG_ES256, JWT_ALG_EDDSA };

enum jwt_status {
    JWT_OK,
    JWT_MALFORMED,        /* not three base64url parts of JSON objects, or over JWT_MAX_LEN */
    JWT_ALG_REFUSED,      /* alg missing, none, HS*, or not in the allowlist */
    JWT_HEADER_REFUSED,   /* crit, jku, x5u, jwk or x5c header; a kid not a string, empty, too
                           * long or holding a control character */
    JWT_UNKNOWN_KID,      /* no key of the set has this kid (the caller may refresh the set) */
    JWT_NO_KEY,           /* no key of the set fits alg (among those with the kid, if any) */
    JWT_BAD_SIGNATURE,    /* the key fits but the signature does not verify */
    JWT_EXPIRED,          /* exp missing, not a number, or past (with the skew) */
    JWT_NOT_YET_VALID,    /* nbf in the future (with the skew) */
    JWT_ISSUED_IN_FUTURE, /* iat in the future (with the skew) */
    JWT_BAD_ISSUER,       /* iss missing or not the expected issuer (exact match) */
    JWT_BAD_AUDIENCE,     /* aud missing or naming none of the expected audiences */
};
/* A short lower-case phrase ("expired", "unknown key id"): for logs and error_description;
 * it never quotes the token. */
const char *jwt_status_text(enum jwt_status s);

/* A key set: immutable once parsed, reference counted so a refresh can replace it while a
 * verification under way keeps the old one. */
struct jwks;
/* Parses a JWKS document ({"keys": [...]}). Keys that cannot verify one of our algs (kty oct,
 * use "enc", an unknown kty or crv, a key alg outside the allowlist, RSA under 2048 bits, a
 * malformed member) are skipped, not errors; a set may end up empty. NULL with a one-line reason
 * in err only when the document itself is unusable (too long, not JSON, no "keys" array). */
struct jwks *jwks_parse(const char *json, size_t len, char *err, size_t errlen);
size_t jwks_count(const struct jwks *k);
bool jwks_has_kid(const struct jwks *k, const char *kid);
struct jwks *jwks_ref(struct jwks *k);
void jwks_unref(struct jwks *k); /* NULL-safe */

/* A token split and decoded. The signature is not checked yet. */
struct jwt {
    json_t *header;      /* owned */
    json_t *claims;      /* owned */
    enum jwt_alg alg;    /* from the header, checked against the allowlist */
    const char *kid;     /* the header's kid, or NULL; borrowed from header */
    char *signing_input; /* "<header>.<payload>" as sent, owned */
    size_t signing_len;
    unsigned char *sig; /* the decoded signature, owned */
    size_t sig_len;
};

/* True when token has the shape of a JWS (three non-empty base64url parts, the first decoding
 * to a JSON object): an opaque token does not, and goes to introspection instead. Cheap. */
bool jwt_looks_like(const char *token, size_t len);
/* Splits and decodes token (len bytes) into t, and checks its header. On any status but
 * JWT_OK t holds nothing to clean up. */
enum jwt_status jwt_parse(const char *token, size_t len, struct jwt *t);
/* Verifies t's signature with the key of keys that has t's kid (and fits t's alg: RSA for
 * RS256/PS256, EC P-256 for ES256 as raw r||s of 64 bytes, OKP Ed25519 for EdDSA; a key's own
 * alg, when it has one, must be t's). Without a kid, the first JWT_KIDLESS_TRIES keys fitting
 * the alg are tried. */
enum jwt_status jwt_verify(const struct jwt *t, const struct jwks *keys);

struct jwt_expect {
    const char *issuer;           /* iss must equal it */
    const char *const *audiences; /* aud (a string or an array) must name one of these */
    size_t naudiences;
    time_t now;
    unsigned skew_s; /* leeway for exp, nbf and iat */
};
/* Checks iss, aud, exp (required), nbf and iat (when present). */
enum jwt_status jwt_check_claims(const struct jwt *t, const struct jwt_expect *e);
void jwt_cleanup(struct jwt *t); /* frees what t holds; t may be zeroed or cleaned already */

#endif
