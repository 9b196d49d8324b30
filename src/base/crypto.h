/* crypto.h — the few primitives we need from libcrypto. Any thread. */
#ifndef HM_CRYPTO_H
#define HM_CRYPTO_H
#include <stdbool.h>
#include <stddef.h>

/* Writes 2*nbytes lowercase hex characters of cryptographically random data plus a NUL into
 * out (size >= 2*nbytes+1). Returns false if the random generator failed. */
bool crypto_random_hex(char *out, size_t nbytes);
/* SHA-256 of p[0..n) into out[32]. */
void crypto_sha256(const void *p, size_t n, unsigned char out[32]);
/* Constant-time equality of two n-byte buffers. */
bool crypto_equal(const void *a, const void *b, size_t n);

/* n random bytes from the kernel. */
bool crypto_random_bytes(void *out, size_t n);
/* HMAC-SHA-256 of p[0..n) under key[0..klen) into out[32]. */
void crypto_hmac_sha256(const void *key, size_t klen, const void *p, size_t n,
                        unsigned char out[32]);
/* Base64 of p[0..n) into out (room for 4*((n+2)/3)+1), NUL-terminated; url: the URL-safe
 * alphabet without padding. Returns the length written. */
size_t crypto_b64_encode(bool url, const void *p, size_t n, char *out);
/* Decodes in[0..n) into out[0..outsz); false for bad characters, white space, bad padding, or
 * an outsz too small for n characters. */
bool crypto_b64_decode(bool url, const char *in, size_t n, unsigned char *out, size_t outsz,
                       size_t *outlen);

#endif
